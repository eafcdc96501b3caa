"""Which CPython interpreters the tests run against.

The supported range comes from the one version table, src/pyread/pyversions.h
(SONDE_PY_MINOR_MIN / SONDE_PY_MINOR_MAX), which the C code reads too.
Interpreters are, in order of precedence:
  - PYTHONS="..." (environment; the same variable the build uses): paths or
    names on PATH, separated by spaces; only those are used;
  - otherwise every interpreter found: pyenv's versions (PYENV_ROOT, default
    ~/.pyenv), python3.N on PATH for each supported N, and /usr/bin/python3.
An interpreter named by path with `--python PATH` is used even when the
search did not find it. Each is (name, path, version tuple); the name is the
version, with "-system" for one outside pyenv ("3.11.2-system").
"""
import glob
import os
import re
import shutil
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VERSIONS_H = os.path.join(ROOT, "src", "pyread", "pyversions.h")


def supported_range():
    """((3, min), (3, max)) from src/pyread/pyversions.h."""
    with open(VERSIONS_H) as f:
        text = f.read()
    major = int(re.search(r"^#define SONDE_PY_MAJOR (\d+)$", text, re.M).group(1))
    lo = int(re.search(r"^#define SONDE_PY_MINOR_MIN (\d+)$", text, re.M).group(1))
    hi = int(re.search(r"^#define SONDE_PY_MINOR_MAX (\d+)$", text, re.M).group(1))
    return (major, lo), (major, hi)


def range_text():
    """"3.8 to 3.15", as the messages print it."""
    lo, hi = supported_range()
    return "%d.%d to %d.%d" % (lo + hi)


def _version(path):
    """(version tuple, real path of the interpreter binary) or (None, None)."""
    code = "import os, sys; print('%d.%d.%d' % sys.version_info[:3]); print(os.path.realpath(sys.executable))"
    try:
        out = subprocess.run([path, "-c", code], capture_output=True, text=True,
                             timeout=30).stdout.split("\n")
        return tuple(int(x) for x in out[0].strip().split(".")), out[1].strip()
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return None, None


def _pyenv_root():
    return os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")


def _candidates():
    env = os.environ.get("PYTHONS", "").split()
    if env:
        return [shutil.which(p) or p for p in env]
    lo, hi = supported_range()
    found = sorted(glob.glob(os.path.join(_pyenv_root(), "versions", "3.*", "bin", "python")))
    for minor in range(lo[1], hi[1] + 1):
        path = shutil.which("python%d.%d" % (lo[0], minor))
        if path:
            found.append(path)
    if os.path.exists("/usr/bin/python3"):
        found.append("/usr/bin/python3")
    return found


def describe(path):
    """(name, path, version, real binary) for the interpreter at path, or None."""
    parts, exe = _version(path)
    if not parts:
        return None
    name = "%d.%d.%d" % parts[:3]
    pyenv = os.path.realpath(os.path.join(_pyenv_root(), "versions"))
    if not exe.startswith(pyenv + os.sep):
        name += "-system"
    return name, path, parts, exe


def find_interpreters(extra_paths=()):
    """Supported interpreters, oldest first, each once (by real path and
    version); extra_paths are added to what the search finds."""
    lo, hi = supported_range()
    found, seen = [], set()
    for path in list(_candidates()) + [p for p in extra_paths]:
        if not os.path.isfile(path) or not os.access(path, os.X_OK):
            continue
        info = describe(path)
        if not info or not lo <= info[2][:2] <= hi:
            continue
        if info[3] in seen:  # a link or a pyenv shim to one already found
            continue
        seen.add(info[3])
        found.append(info[:3])
    names = [f[0] for f in found]
    # two interpreters of one version outside pyenv: tell them apart by path
    found = [(n if names.count(n) == 1 else "%s-%s" % (n, p.strip("/").replace("/", "_")), p, v)
             for n, p, v in found]
    found.sort(key=lambda f: (f[2], f[0]))
    return found
