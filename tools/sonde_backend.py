"""sonde_backend: the PEP 517 build backend of `pip install .` (pyproject.toml).

Packaging glue only, with no dependency (requires = []): nothing is
downloaded, so `pip install --no-index --no-build-isolation .` works
offline. build_wheel runs the Makefile's `package` target for the
interpreter doing the install (`make PYTHON=<its sys.executable> PYTHONS=
BUILD=<a temporary directory>`) and packs the wheel by hand with zipfile:

  sonde/                      the package as built in <BUILD>/lib/sonde: this
                              interpreter's extension module, the allocator
                              shim, _boot/, viewer/, the Python files
  sonde-<v>.data/scripts/sonde
                              the command (<BUILD>/bin/sonde, the C program),
                              which pip installs as <prefix>/bin/sonde; it
                              finds the package in <prefix>/lib/python3.N/
                              site-packages/sonde (src/cli/main.c), and
                              `python -m sonde` finds it (src/ext/module.c)
  sonde-<v>.dist-info/        METADATA, WHEEL, RECORD, entry_points.txt (the
                              pytest plugin, when sonde/pytest_plugin.py exists)

The config setting build-dir (`pip install -C build-dir=PATH .`, pip 23.1+;
`--config-settings build-dir=PATH` in older pips) builds in PATH and keeps
it, so that a second install, for another interpreter too, compiles only
what it lacks. build_sdist packs the source tree (without build/ and .git).
"""
import base64
import hashlib
import io
import os
import re
import shutil
import stat
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile

NAME = "sonde"
SUMMARY = "A profiler for Python, written in C: time per line, split into Python, native and system"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the source tree's top-level entries an sdist leaves out
SDIST_SKIP = {".git", "build", "dist", "node_modules", "__pycache__"}


def _version():
    """SONDE_VERSION of src/core/common.h: the one version of the C code."""
    with open(os.path.join(ROOT, "src", "core", "common.h"), encoding="utf-8") as f:
        found = re.search(r'#define SONDE_VERSION "([^"]+)"', f.read())
    if not found:
        raise RuntimeError("sonde_backend: no SONDE_VERSION in src/core/common.h")
    return found.group(1)


def _oldest_python():
    """"3.8": the oldest CPython sonde supports (src/pyread/pyversions.h,
    through its reader for scripts, tools/pyversions.sh)."""
    return subprocess.run([os.path.join(ROOT, "tools", "pyversions.sh"), "oldest"],
                          capture_output=True, text=True, check=True).stdout.strip()


def _tag():
    """The wheel's tag for this interpreter: cp312-cp312-linux_x86_64 (the
    extension module, the shim and the command are this machine's code)."""
    impl = "cp%d%d" % sys.version_info[:2]
    soabi = sysconfig.get_config_var("SOABI") or ""  # cpython-312-x86_64-linux-gnu, 313t, 311d
    abi = "cp" + soabi.split("-")[1] if soabi.startswith("cpython-") else impl
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return "%s-%s-%s" % (impl, abi, plat)


def _has_pytest_plugin():
    return os.path.exists(os.path.join(ROOT, "sonde", "pytest_plugin.py"))


def _metadata_files():
    """The dist-info's files but RECORD: {name: bytes}."""
    version = _version()
    metadata = ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\n"
                "Requires-Python: >=%s\n" % (NAME, version, SUMMARY, _oldest_python()))
    wheel = ("Wheel-Version: 1.0\nGenerator: sonde_backend %s\nRoot-Is-Purelib: false\nTag: %s\n"
             % (version, _tag()))
    files = {"METADATA": metadata.encode(), "WHEEL": wheel.encode()}
    if _has_pytest_plugin():
        files["entry_points.txt"] = b"[pytest11]\nsonde = sonde.pytest_plugin\n"
    return files


def _dist_info():
    return "%s-%s.dist-info" % (NAME, _version())


def _make(build):
    """Builds the package for this interpreter into build; raises on failure
    (make's own output, on the terminal, says why)."""
    jobs = "-j%d" % max(1, min(os.cpu_count() or 1, 8))
    # the interpreter's own file (a venv's bin/python links to it): the
    # module is the same for each of its venvs, and a kept build-dir then
    # serves them all without compiling again
    python = os.path.realpath(sys.executable)
    argv = ["make", "--no-print-directory", jobs, "PYTHON=" + python, "PYTHONS=",
            "BUILD=" + build, "package"]
    # pip shows this output with -v, or when the build fails
    print("sonde_backend: " + " ".join(argv), file=sys.stderr)
    proc = subprocess.run(argv, cwd=ROOT, stdout=sys.stderr)
    if proc.returncode != 0:
        raise RuntimeError("sonde_backend: '%s' failed (exit %d)" % (" ".join(argv), proc.returncode))


def _package_files(build):
    """(archive name, path) of the package's files in <build>/lib/sonde:
    this interpreter's extension module only, no make stamps or caches."""
    pkg = os.path.join(build, "lib", NAME)
    own_module = "_sonde" + sysconfig.get_config_var("EXT_SUFFIX")
    found = []
    for parent, dirs, names in os.walk(pkg):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            if name.startswith(".") or name.endswith(".pyc"):
                continue
            if name.startswith("_sonde.") and name.endswith(".so") and name != own_module:
                continue  # another interpreter's module, from a shared build-dir
            path = os.path.join(parent, name)
            found.append((NAME + "/" + os.path.relpath(path, pkg).replace(os.sep, "/"), path))
    if not any(arc == NAME + "/" + own_module for arc, _ in found):
        raise RuntimeError("sonde_backend: the build made no %s in %s" % (own_module, pkg))
    return found


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d\n" % (arcname, digest, len(data))


def _zip_add(whl, arcname, data, executable):
    info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
    info.external_attr = (stat.S_IFREG | (0o755 if executable else 0o644)) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    whl.writestr(info, data)


def _pack_wheel(build, wheel_directory):
    """Writes the wheel from build's files into wheel_directory; returns its
    file name."""
    version = _version()
    name = "%s-%s-%s.whl" % (NAME, version, _tag())
    dist_info = _dist_info()
    entries = [(arc, path) for arc, path in _package_files(build)]
    entries.append(("%s-%s.data/scripts/sonde" % (NAME, version), os.path.join(build, "bin", "sonde")))
    record = []
    tmp = os.path.join(wheel_directory, name + ".part")
    with zipfile.ZipFile(tmp, "w") as whl:
        for arcname, path in entries:
            with open(path, "rb") as f:
                data = f.read()
            _zip_add(whl, arcname, data, os.access(path, os.X_OK))
            record.append(_record_line(arcname, data))
        for meta, data in _metadata_files().items():
            arcname = dist_info + "/" + meta
            _zip_add(whl, arcname, data, False)
            record.append(_record_line(arcname, data))
        record.append(dist_info + "/RECORD,,\n")
        _zip_add(whl, dist_info + "/RECORD", "".join(record).encode(), False)
    os.replace(tmp, os.path.join(wheel_directory, name))
    return name


# ---- the PEP 517 hooks ----------------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    """The dist-info directory without RECORD (no build needed)."""
    dist_info = _dist_info()
    os.makedirs(os.path.join(metadata_directory, dist_info), exist_ok=True)
    for meta, data in _metadata_files().items():
        with open(os.path.join(metadata_directory, dist_info, meta), "wb") as f:
            f.write(data)
    return dist_info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    kept = (config_settings or {}).get("build-dir")
    build = os.path.abspath(kept) if kept else tempfile.mkdtemp(prefix="sonde-wheel-")
    try:
        _make(build)
        return _pack_wheel(build, wheel_directory)
    finally:
        if not kept:
            shutil.rmtree(build, ignore_errors=True)


def build_sdist(sdist_directory, config_settings=None):
    """sonde-<v>.tar.gz: the source tree (no build outputs) and PKG-INFO."""
    base = "%s-%s" % (NAME, _version())
    name = base + ".tar.gz"

    def skip(info):
        parts = info.name.split("/")
        if len(parts) > 1 and (parts[1] in SDIST_SKIP or parts[-1] == "__pycache__"
                               or parts[-1].endswith(".pyc")):
            return None
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info

    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for entry in sorted(os.listdir(ROOT)):
            if entry not in SDIST_SKIP:
                tar.add(os.path.join(ROOT, entry), base + "/" + entry, filter=skip)
        pkg_info = _metadata_files()["METADATA"]
        info = tarfile.TarInfo(base + "/PKG-INFO")
        info.size = len(pkg_info)
        info.mode = 0o644
        tar.addfile(info, io.BytesIO(pkg_info))
    return name
