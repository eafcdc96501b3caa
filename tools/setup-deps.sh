#!/usr/bin/env bash
# Installs the Debian packages sonde needs to build (and, with --test, to
# run its whole test suite), if they are missing. Called by `make demo` and
# `make test` so that both work on a fresh Debian 12 machine; a no-op when
# everything is there. Without root or apt-get it says what to install.
set -u
want=()
[ -f /usr/include/cjson/cJSON.h ] || want+=(libcjson-dev)
# the command gzips pprof output with zlib
[ -f /usr/include/zlib.h ] || want+=(zlib1g-dev)
# --upload (src/fleet/): libcurl's header; the command loads the library at run time
[ -n "$(ls /usr/include/curl/curl.h /usr/include/*/curl/curl.h 2>/dev/null)" ] ||
    want+=(libcurl4-openssl-dev)
# the live view (sonde top, run --live) draws with ncurses
[ -f /usr/include/curses.h ] || want+=(libncurses-dev)
command -v cc >/dev/null 2>&1 || want+=(build-essential)
if [ "${1:-}" = "--test" ]; then
    if [ -x /usr/bin/python3 ]; then
        v=$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
        [ -f "/usr/include/python$v/Python.h" ] || want+=(python3-dev)
        /usr/bin/python3 -c 'import numpy' 2>/dev/null || want+=(python3-numpy)
        # python3 -m venv (tests/e2e/test_install.py)
        /usr/bin/python3 -c 'import ensurepip, venv' 2>/dev/null || want+=(python3-venv)
        /usr/bin/python3 -c 'import pytest' 2>/dev/null || want+=(python3-pytest)
        # tests/e2e/test_jupyter.py: %%sonde in IPython and in a notebook
        /usr/bin/python3 -c 'import IPython' 2>/dev/null || want+=(python3-ipython)
        /usr/bin/python3 -c 'import ipykernel' 2>/dev/null || want+=(python3-ipykernel)
        [ -x /usr/bin/jupyter-nbconvert ] || want+=(jupyter-nbconvert)
    fi
    [ -x /usr/bin/chromium ] || want+=(chromium)
    # tests/e2e/test_live.py drives the live view in a terminal
    command -v tmux >/dev/null 2>&1 || want+=(tmux)
    # tests/e2e/test_pprof.py reads every pprof file with `go tool pprof`
    command -v go >/dev/null 2>&1 || want+=(golang-go)
fi
[ ${#want[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "sonde: installing ${want[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq "${want[@]}" >/dev/null && exit 0
    echo "sonde: could not install ${want[*]}" >&2
    exit 1
fi
echo "sonde: missing Debian packages: ${want[*]} (sudo apt-get install ${want[*]})" >&2
exit 1
