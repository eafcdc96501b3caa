#!/usr/bin/env bash
# tools/chroot.sh — Debian unstable's CPython, from 3.13 to the newest that
# sonde supports (src/pyread/pyversions.h), for the tests, in a chroot (they
# need a newer C library than Debian 12 has).
#
#   tools/chroot.sh ensure     create it once (debootstrap, ~90 s, ~800 MB),
#                              then only check it; idempotent
#   tools/chroot.sh mount      mount /proc and bind /dev (idempotent)
#   tools/chroot.sh umount     undo mount
#   tools/chroot.sh run CMD    run `sh -c CMD` inside, with this source tree
#                              bound at the same path (so paths match)
#   tools/chroot.sh path       print the directory
#   tools/chroot.sh pythons    print the versions it holds ("3.13 3.14 3.15")
#
# The directory is SONDE_CHROOT or /var/cache/sonde/sid-chroot, outside the
# build tree, so that a machine builds it once. The mirror is the one apt
# already uses here. Needs root and the archive; without them `ensure`
# exits 1 with one line saying why (the tests then run without it).
set -u
DIR=${SONDE_CHROOT:-/var/cache/sonde/sid-chroot}
# 3.13 (Debian unstable's micro, beside pyenv's 3.13.0 here) up to the newest
# supported: a version added to pyversions.h is added here (a chroot made
# before, which lacks the newest, is made again by the next `ensure`)
PYS=$("$(dirname "$0")/pyversions.sh" from 13) || exit 1
NEWEST=$("$(dirname "$0")/pyversions.sh" newest) || exit 1
# a marker written last: a half-made chroot is never taken for a whole one
STAMP=$DIR/.sonde-ready-v3

die() { echo "sonde chroot: $*" >&2; exit 1; }

mirror() {
    local m
    m=$(grep -hoE '^URIs:[[:space:]]*[^[:space:]]+' /etc/apt/sources.list.d/*.sources 2>/dev/null \
        | awk '{print $2}' | grep -v -- '-security' | head -n 1)
    [ -n "$m" ] || m=$(grep -hoE '^deb[[:space:]]+[^[:space:]]+' /etc/apt/sources.list 2>/dev/null \
        | awk '{print $2}' | grep -v -- '-security' | head -n 1)
    echo "${m:-http://deb.debian.org/debian}"
}

TREE=$(cd "$(dirname "$0")/.." && pwd)

do_mount() {
    mountpoint -q "$DIR/proc" || mount -t proc proc "$DIR/proc" || return 1
    mountpoint -q "$DIR/dev" || mount --bind /dev "$DIR/dev" || return 1
    # the terminal tests open ptys: devpts is a mount of its own
    mountpoint -q "$DIR/dev/pts" || mount --bind /dev/pts "$DIR/dev/pts" || return 1
}

# binds this source tree (and /tmp, where tests keep their files) at the
# same paths inside
bind_tree() {
    # /tmp first: a tree under /tmp is then mounted on top of it
    mountpoint -q "$DIR/tmp" || mount --bind /tmp "$DIR/tmp" || return 1
    mkdir -p "$DIR$TREE" || return 1
    mountpoint -q "$DIR$TREE" || mount --bind "$TREE" "$DIR$TREE" || return 1
}

# every mount inside the chroot, innermost first (other trees' too: a run
# cut short leaves its binds behind, and a tree under /tmp sits on /tmp's)
do_umount() {
    awk -v d="$DIR/" 'index($2, d) == 1 {print $2}' /proc/self/mounts | sort -r |
        while read -r m; do umount "$m" 2>/dev/null || umount -l "$m"; done
    return 0
}

ensure() {
    [ -f "$STAMP" ] && [ -x "$DIR/usr/bin/python$NEWEST" ] && return 0
    [ "$(id -u)" = 0 ] || die "not created: needs root (debootstrap, chroot)"
    command -v debootstrap >/dev/null 2>&1 || {
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null 2>&1 \
            || { apt-get update -qq >/dev/null 2>&1 && \
                 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null 2>&1; } \
            || die "not created: cannot install debootstrap"
    }
    local pkgs="gcc,make,libc6-dev,libcjson-dev,zlib1g-dev,libcurl4-openssl-dev,libncurses-dev,tmux,ca-certificates" v
    for v in $PYS; do pkgs="$pkgs,python$v,python$v-dev"; done
    if [ ! -x "$DIR/usr/bin/python$NEWEST" ]; then
        rm -rf "$DIR"
        mkdir -p "$(dirname "$DIR")"
        echo "sonde chroot: creating $DIR from $(mirror) (once; about 90 s)" >&2
        debootstrap --variant=minbase --include="$pkgs" sid "$DIR.tmp" "$(mirror)" \
            >"$(dirname "$DIR")/debootstrap.log" 2>&1 \
            || { rm -rf "$DIR.tmp"; die "not created: debootstrap failed (see $(dirname "$DIR")/debootstrap.log)"; }
        mv "$DIR.tmp" "$DIR"
    fi
    do_mount || die "cannot mount /proc and /dev in $DIR"
    # what the build needs (a chroot made by an older version of this
    # script lacks the libraries added since: zlib, libcurl, ncurses), go,
    # which reads the tests' pprof files, and tmux, the live view's
    # terminal in tests/e2e/test_live.py
    chroot "$DIR" sh -c 'export DEBIAN_FRONTEND=noninteractive;
        apt-get -o Acquire::Check-Valid-Until=false update -qq >/dev/null 2>&1;
        apt-get -o Acquire::Check-Valid-Until=false install -y -qq zlib1g-dev libcurl4-openssl-dev \
            libncurses-dev tmux golang-go >/dev/null 2>&1' \
        || { do_umount; die "not ready: cannot install zlib1g-dev, libcurl4-openssl-dev, libncurses-dev, tmux, golang-go"; }
    # numpy and pytest where Debian builds them for these interpreters
    chroot "$DIR" sh -c 'export DEBIAN_FRONTEND=noninteractive;
        apt-get -o Acquire::Check-Valid-Until=false install -y -qq python3-numpy python3-pytest >/dev/null 2>&1' \
        || echo "sonde chroot: numpy/pytest not installed (tests that need them are skipped there)" >&2
    do_umount
    touch "$STAMP"
}

case "${1:-}" in
    ensure) ensure ;;
    mount) [ -f "$STAMP" ] || die "no chroot at $DIR (run: tools/chroot.sh ensure)"; do_mount ;;
    umount) do_umount ;;
    path) echo "$DIR" ;;
    pythons) echo "$PYS" ;;
    run)
        shift
        [ -f "$STAMP" ] || die "no chroot at $DIR (run: tools/chroot.sh ensure)"
        do_mount && bind_tree || die "cannot mount /proc, /dev and $TREE in $DIR"
        chroot "$DIR" sh -c "cd '$TREE' && $*"
        ;;
    *) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
