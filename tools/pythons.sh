#!/bin/sh
# tools/pythons.sh — the interpreters `make` builds sonde's extension for.
#
#   tools/pythons.sh [NAME_OR_PATH...]
#
# Prints one interpreter path per line: each of the arguments, or when there
# are none every CPython found on this machine the way tests/pythons.py
# finds them (python3 on PATH first, then python3.N on PATH for each
# supported N, pyenv's versions under PYENV_ROOT or ~/.pyenv, and
# /usr/bin/python3.N), keeping those that run, are within the supported
# range (src/pyread/pyversions.h) and have their C headers (Python.h; on
# Debian the python3.N-dev package). One per extension-module suffix
# (cpython-311-x86_64-linux-gnu): two 3.11 builds share one module name, so
# the first found serves both. Nothing printed is not an error; names that
# do not run are skipped silently (the Makefile reports the primary one).
cd "$(dirname "$0")/.." || exit 1
min=$(tools/pyversions.sh min) && max=$(tools/pyversions.sh max) || exit 1

candidates() {
    if [ $# -gt 0 ]; then
        for p in "$@"; do echo "$p"; done
        return
    fi
    command -v python3
    m=$min
    while [ "$m" -le "$max" ]; do
        command -v "python3.$m"
        m=$((m + 1))
    done
    for p in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.*/bin/python /usr/bin/python3.*; do
        [ -x "$p" ] && echo "$p"
    done
}

# For each: "suffix minor path" when usable.
probe='import os, sys, sysconfig
inc = sysconfig.get_paths()["include"]
ok = os.path.exists(os.path.join(inc, "Python.h")) and sys.implementation.name == "cpython"
print(sysconfig.get_config_var("EXT_SUFFIX") if ok else "-", sys.version_info[1])'
seen=" "
candidates "$@" | while read -r p; do
    case "$p" in *-config) continue ;; esac
    out=$("$p" -c "$probe" 2>/dev/null) || continue
    suffix=${out% *}
    minor=${out##* }
    [ "$suffix" = "-" ] && continue
    [ "$minor" -ge "$min" ] && [ "$minor" -le "$max" ] || continue
    case "$seen" in *" $suffix "*) continue ;; esac
    seen="$seen$suffix "
    echo "$p"
done
