#!/bin/sh
# run.sh — regenerates src/pyread/pyoffsets_gen.h from the headers of every
# CPython minor version in src/pyread/pyversions.h (SONDE_PY_MINOR_MIN to
# SONDE_PY_MINOR_MAX, read by tools/pyversions.sh): a pyenv build (/root/.pyenv/versions/3.X.Y, the
# newest micro) where there is one, else Debian unstable's -dev headers in
# the chroot of tools/chroot.sh (CHROOT, default /var/cache/sonde/sid-chroot;
# /usr/include/python3.X there), compiled and run inside it. It checks that
# Debian's /usr/bin/python3 (headers in /usr/include/python3.11) and the
# chroot's 3.13 give the same layouts as the pyenv builds.
#
#   tools/gen_offsets/run.sh [OUTPUT]      (default src/pyread/pyoffsets_gen.h)
#
# For each interpreter it compiles gen_offsets.c with -DPy_BUILD_CORE and
# the interpreter's include and include/internal directories, after making
# two includes from the version's own opcode headers (see gen_offsets.c).
# Fails when the headers name a call-like opcode that call_opcodes.txt
# neither lists nor excludes. Every table records the micro version of the
# headers it came from. Running the chroot needs root (tools/chroot.sh).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$root/src/pyread/pyoffsets_gen.h}
pyenv=${PYENV_VERSIONS:-/root/.pyenv/versions}
debian_inc=${DEBIAN_PY311_INCLUDE:-/usr/include/python3.11}
chroot_dir=${CHROOT:-/var/cache/sonde/sid-chroot}
minor_min=$("$root/tools/pyversions.sh" min) && minor_max=$("$root/tools/pyversions.sh" max) || exit 1
cc=${CC:-gcc}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# gen INCLUDE_DIR TAG [CHROOT]: writes $work/TAG.h; with CHROOT, the
# include dir is inside it and the generator is compiled and run there
gen() {
    inc=$1
    tag=$2
    in_chroot=${3:-}
    mkdir -p "$work/$tag"
    cat "$in_chroot$inc/opcode.h" "$in_chroot$inc/opcode_ids.h" 2>/dev/null |
        sed -n 's/^#define[ 	][ 	]*\([A-Z][A-Z0-9_]*\)[ 	][ 	]*[0-9][0-9]*.*$/\1/p' |
        sort -u >"$work/$tag/names"
    listed=$(grep -v '^[#!]' "$here/call_opcodes.txt" | grep . || true)
    excluded=$(sed -n 's/^!//p' "$here/call_opcodes.txt")
    for name in $(grep -E '^(CALL|PRECALL|INSTRUMENTED_CALL)' "$work/$tag/names"); do
        if ! printf '%s\n' $listed $excluded | grep -qx "$name"; then
            echo "run.sh: $tag defines $name: add it to call_opcodes.txt (or '!$name')" >&2
            exit 1
        fi
    done
    : >"$work/$tag/calls.inc"
    for name in $listed; do
        if grep -qx "$name" "$work/$tag/names"; then
            printf '#ifdef %s\n    CALL_OP(%s);\n#endif\n' "$name" "$name" >>"$work/$tag/calls.inc"
        fi
    done
    : >"$work/$tag/instrumented.inc"
    for name in $(sed -n 's/^INSTRUMENTED_//p' "$work/$tag/names"); do
        if grep -qx "$name" "$work/$tag/names"; then
            printf '#if defined(INSTRUMENTED_%s) && defined(%s)\n    INSTRUMENTED_OP(INSTRUMENTED_%s, %s);\n#endif\n' \
                "$name" "$name" "$name" "$name" >>"$work/$tag/instrumented.inc"
        fi
    done
    defs=""
    if grep -q 'bytes_per_entry' "$in_chroot$inc/cpython/code.h" "$in_chroot$inc/internal/pycore_instruments.h" 2>/dev/null; then
        defs=-DSONDE_LINE_DATA_PER_ENTRY
    fi
    compile="$cc -std=gnu11 -O0 -w -DPy_BUILD_CORE $defs -I$work/$tag -I$inc -I$inc/internal \
        -o $work/$tag/gen $here/gen_offsets.c && $work/$tag/gen >$work/$tag.h"
    if [ -n "$in_chroot" ]; then
        SONDE_CHROOT=$in_chroot "$root/tools/chroot.sh" run "$compile"
    else
        sh -c "$compile"
    fi
}

versions=""
minor=$minor_min
while [ "$minor" -le "$minor_max" ]; do
    dir=$(ls -d "$pyenv"/3.$minor.* 2>/dev/null | sort -V | tail -n 1)
    if [ -n "$dir" ]; then
        gen "$dir/include/python3.$minor" "3_$minor"
    elif [ -f "$chroot_dir/usr/include/python3.$minor/Python.h" ]; then
        gen "/usr/include/python3.$minor" "3_$minor" "$chroot_dir"
    else
        echo "run.sh: no CPython 3.$minor under $pyenv nor in $chroot_dir" >&2
        exit 1
    fi
    versions="$versions $minor"
    minor=$((minor + 1))
done
strip_micro() { grep -v -e '^/\* CPython' -e 'generated_micro' "$1"; }

debian_note="Debian's $debian_inc was not available to compare."
if [ -f "$debian_inc/Python.h" ]; then
    gen "$debian_inc" debian_3_11
    strip_micro "$work/3_11.h" >"$work/a"
    strip_micro "$work/debian_3_11.h" >"$work/b"
    if cmp -s "$work/a" "$work/b"; then
        debian_version=$(sed -n 's|^/\* CPython \([^,]*\),.*|\1|p' "$work/debian_3_11.h")
        debian_note="Checked: Debian's /usr/bin/python3 ($debian_version, headers in
 * $debian_inc) gives a 3.11 table identical to the one below."
    else
        echo "run.sh: Debian's 3.11 layout differs from pyenv's:" >&2
        diff "$work/a" "$work/b" >&2 || true
        exit 1
    fi
fi

chroot_note=""
if [ -f "$chroot_dir/usr/include/python3.13/Python.h" ] && [ -n "$(ls -d "$pyenv"/3.13.* 2>/dev/null)" ]; then
    gen /usr/include/python3.13 chroot_3_13 "$chroot_dir"
    # The line-instrumentation data changed format within 3.13 (entries of
    # bytes_per_entry bytes, CPython gh-127953, backported to a 3.13 micro):
    # code.c recognises both at run time, so those lines may differ.
    line_data='\.line_data_'
    strip_micro "$work/3_13.h" | grep -v "$line_data" >"$work/a"
    strip_micro "$work/chroot_3_13.h" | grep -v "$line_data" >"$work/b"
    if ! cmp -s "$work/a" "$work/b"; then
        echo "run.sh: Debian unstable's 3.13 layout differs from pyenv's:" >&2
        diff "$work/a" "$work/b" >&2 || true
        exit 1
    fi
    chroot_version=$(sed -n 's|^/\* CPython \([^,]*\),.*|\1|p' "$work/chroot_3_13.h")
    chroot_note="
 * Checked: Debian unstable's $chroot_version (the chroot of tools/chroot.sh)
 * gives a 3.13 table identical to the one below, except the format of
 * its line-instrumentation data (CPython gh-127953, backported within 3.13:
 * entries of bytes_per_entry bytes), which src/pyread/code.c recognises at
 * run time."
fi

{
    echo "/* clang-format off */"
    echo "/* pyoffsets_gen.h — GENERATED by tools/gen_offsets/run.sh; do not edit."
    echo " *"
    echo " * One struct sonde_pyoffsets per CPython minor version, each printed by"
    echo " * tools/gen_offsets/gen_offsets.c compiled against that interpreter's own"
    echo " * headers. Included only by pyoffsets.c."
    echo " *"
    echo " * $debian_note$chroot_note"
    echo " */"
    echo
    for minor in $versions; do
        cat "$work/3_$minor.h"
    done
} >"$out.tmp"
mv "$out.tmp" "$out"
echo "run.sh: wrote $out (3.x for x in:$versions)" >&2
