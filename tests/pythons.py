"""Which CPython interpreters the tests run against.

The supported range comes from the one version table, src/pyread/pyversions.h
(SONDE_PY_MINOR_MIN / SONDE_PY_MINOR_MAX), which the C code reads too, through
its one reader for scripts, tools/pyversions.sh.
Interpreters are, in order of precedence:
  - PYTHONS="..." (environment; the same variable the build uses): paths or
    names on PATH, separated by spaces; only those are used;
  - otherwise every interpreter found: pyenv's versions (PYENV_ROOT, default
    ~/.pyenv), python3.N on PATH for each supported N, and /usr/bin/python3.
An interpreter named by path with `--python PATH` is used even when the
search did not find it. Each is (name, path, version tuple); the name is the
version, with "-system" for one outside pyenv ("3.11.2-system").
"""
import functools
import glob
import os
import shutil
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _tool(*argv):
    """The words a tools/ script prints (it fails loudly: check=True)."""
    return subprocess.run([os.path.join(ROOT, "tools", argv[0])] + list(argv[1:]),
                          capture_output=True, text=True, check=True).stdout.split()


@functools.lru_cache(maxsize=None)
def supported_range():
    """((3, min), (3, max)) from src/pyread/pyversions.h."""
    oldest, newest = _tool("pyversions.sh", "oldest")[0], _tool("pyversions.sh", "newest")[0]
    return tuple(map(int, oldest.split("."))), tuple(map(int, newest.split(".")))


@functools.lru_cache(maxsize=None)
def chroot_versions():
    """("3.13", "3.14", "3.15"): Debian unstable's interpreters in the chroot
    of tools/chroot.sh (3.13 up to the newest supported)."""
    return tuple(_tool("chroot.sh", "pythons"))


# The interpreters that run the version-independent tests (tests/run.py's
# tier "tiers") and the accuracy tests' repeated and loaded runs
# (support.loaded_runs_here), as the summary names them.
TIER_TEXT = "the oldest supported, Debian's /usr/bin/python3 and the newest supported"


def is_tier(version, path):
    """Whether the interpreter of this version tuple at this path is one of
    the three that run what is tested on three only: the oldest supported
    minor version (3.8), Debian's /usr/bin/python3 (named by that path: in
    the chroot the interpreters are named /usr/bin/python3.N) and the newest
    supported (src/pyread/pyversions.h; in CI Debian unstable's, in the
    chroot)."""
    lo, hi = supported_range()
    minor = tuple(version[:2])
    return minor <= lo or minor >= hi or path == "/usr/bin/python3"


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


def one_per_minor(interps):
    """The whole matrix's interpreters (make test): one per minor version,
    the system's where it has one (Debian's /usr/bin/python3, libpython
    inside a stripped executable, the build users meet), a pyenv build of
    the same minor version left out: pyenv's other versions test the shared
    libpython, and .ci/run's sanitizer step runs the left-out one's whole
    suite (tests/run.py --python picks it). Returns (kept, left out)."""
    system_minors = {v[:2] for n, _, v in interps if n.endswith("-system")}
    kept = [i for i in interps if i[0].endswith("-system") or i[2][:2] not in system_minors]
    return kept, [i for i in interps if i not in kept]
