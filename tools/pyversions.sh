#!/bin/sh
# tools/pyversions.sh — the supported CPython range, read from the one table
# of versions, src/pyread/pyversions.h (SONDE_PY_MAJOR, SONDE_PY_MINOR_MIN,
# SONDE_PY_MINOR_MAX), for everything that is not C: the shell tools, the
# Makefile, tests/pythons.py (and through it tests/run.py and the tests) and
# the PEP 517 backend. C code includes the header itself.
#
#   tools/pyversions.sh min       8           the oldest minor version
#   tools/pyversions.sh max       15          the newest minor version
#   tools/pyversions.sh oldest    3.8
#   tools/pyversions.sh newest    3.15
#   tools/pyversions.sh minors    8 9 ... 15  every supported minor version
#   tools/pyversions.sh from N    3.N ... 3.15 (N within the range or below)
#
# Exits 1 with one line on standard error when the header lacks those lines.
h="$(cd "$(dirname "$0")/.." && pwd)/src/pyread/pyversions.h"
field() { sed -n "s/^#define SONDE_PY_$1 \\([0-9][0-9]*\\)\$/\\1/p" "$h"; }
major=$(field MAJOR)
min=$(field MINOR_MIN)
max=$(field MINOR_MAX)
if [ -z "$major" ] || [ -z "$min" ] || [ -z "$max" ]; then
    echo "tools/pyversions.sh: no SONDE_PY_MAJOR/MINOR_MIN/MINOR_MAX line in $h" >&2
    exit 1
fi
# the minor versions from $1 to max, each printed by $2 (a printf format)
seq_minors() {
    m=$1 out=""
    while [ "$m" -le "$max" ]; do
        out="$out${out:+ }$(printf "$2" "$m")"
        m=$((m + 1))
    done
    echo "$out"
}
case "${1:-}" in
    min) echo "$min" ;;
    max) echo "$max" ;;
    oldest) echo "$major.$min" ;;
    newest) echo "$major.$max" ;;
    minors) seq_minors "$min" "%d" ;;
    from)
        case "${2:-}" in '' | *[!0-9]*) echo "tools/pyversions.sh: from N: N a minor version" >&2; exit 2 ;; esac
        seq_minors "$2" "$major.%d" ;;
    *) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
