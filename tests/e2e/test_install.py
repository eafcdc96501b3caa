"""Installing sonde as a Python tool: `pip install .` offline into a virtual
environment (pyenv's 3.12 and Debian's python3), then `sonde run` and
`python -m sonde run` with the venv activated profile a program that
imports a package only the venv holds, and `pip uninstall` removes it all;
`make install DESTDIR=... PREFIX=...` for packagers. Runs once (VERSIONS): it
checks the packaging, not an interpreter.

To stay well under a minute, the two pip installs share one build
directory (the backend's build-dir setting), seeded with the test build's
interpreter-independent objects: each install compiles its interpreter's
extension module and runs the whole backend (make, wheel, install)."""
import glob
import json
import os
import shutil
import subprocess

from support import Skip, check, lines_by_no, line_total, marked_lines, outside_env

VERSIONS = "once: the packaging (it installs for pyenv's 3.12 and Debian's python3 itself)"
NOT_WITH_CC = "it builds sonde with make's default compiler itself (checked by the gcc run)"
NO_SANITIZER = "it builds and installs sonde without sanitizers"

APP = '''
import json, sys, time
import sonde_venv_only


def work():
    total, end = 0, time.perf_counter() + 1.0
    while time.perf_counter() < end:
        total += sum(sonde_venv_only.square(i) for i in range(50))  # @hot
    return total


work()
print(json.dumps({"prefix": sys.prefix, "module": sonde_venv_only.__file__}))
'''


def _pyenv_312():
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    found = sorted(glob.glob(os.path.join(root, "versions", "3.12.*", "bin", "python")))
    if not found:
        raise Skip("no pyenv CPython 3.12 (%s/versions/3.12.*)" % root)
    return found[-1]


def _debian_python3():
    if not os.access("/usr/bin/python3", os.X_OK):
        raise Skip("no Debian /usr/bin/python3")
    return "/usr/bin/python3"


def _call(argv, env, cwd, timeout=180):
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)
    check(proc.returncode == 0, "%s failed (exit %d):\n%s%s" % (" ".join(argv), proc.returncode,
                                                             proc.stdout[-1500:], proc.stderr[-3000:]))
    return proc


_SHARED_MADE = set()  # the shared builds made by this run


def _shared_build(env):
    """The build directory both installs use: the test build's objects that
    no interpreter's headers went into (the command, the core, the shim)
    and its compiler stamp, copied with their times. Made afresh once per
    run and test build: one kept from an earlier run held objects of an
    older tree (a struct that changed since), which pip's make then linked
    with new ones."""
    build = env.build.rstrip(os.sep) + "-install"
    if build not in _SHARED_MADE:
        shutil.rmtree(build, ignore_errors=True)
        os.makedirs(build)
        shutil.copy2(os.path.join(env.build, "compiler"), build)
        shutil.copytree(os.path.join(env.build, "obj", "src"), os.path.join(build, "obj", "src"))
        _SHARED_MADE.add(build)
    return build


def _venv(env, python):
    """A venv of python (with pip) holding the module sonde_venv_only;
    returns (venv, its site-packages, the environment of a shell where it
    is activated)."""
    venv = os.path.join(env.tmp, "venv")
    made = subprocess.run([python, "-m", "venv", venv], capture_output=True, text=True,
                          env=outside_env(), timeout=120)
    if made.returncode != 0 and "ensurepip" in made.stdout + made.stderr:
        raise Skip("%s has no venv module with pip (Debian: apt-get install python3-venv): %s"
                   % (python, (made.stdout + made.stderr).strip()[-300:]))
    check(made.returncode == 0, "python -m venv failed: %s" % made.stderr[-2000:])
    shell = outside_env()
    for name in ("SONDE_PYTHON", "PYTHONPATH", "PYTHONHOME", "NO_COLOR", "PIP_INDEX_URL"):
        shell.pop(name, None)
    shell["PATH"] = os.path.join(venv, "bin") + os.pathsep + shell.get("PATH", "")
    shell["VIRTUAL_ENV"] = venv
    site = _call(["python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                 shell, env.tmp).stdout.strip()
    check(os.path.realpath(site).startswith(os.path.realpath(venv) + os.sep),
          "the activated python's site-packages is %s, not the venv's" % site)
    with open(os.path.join(site, "sonde_venv_only.py"), "w") as f:
        f.write("def square(x):\n    return x * x\n")
    return venv, site, shell


def _check_profile(env, argv, shell, venv, app, out):
    """Runs argv (a `sonde run --json -o out app`), checks exit 0, that the
    program saw the venv, and that the profile's hottest line of app is
    the marked one."""
    proc = _call(argv, shell, env.tmp)
    said = proc.stdout.strip().splitlines()
    check(said and said[-1].startswith("{"),
          "%s: the program printed %r; stderr: %s" % (argv[:2], said[-3:], proc.stderr[-2000:]))
    seen = json.loads(said[-1])
    check(os.path.realpath(seen["prefix"]) == os.path.realpath(venv),
          "%s: the program's sys.prefix is %s, not the venv %s" % (argv[:2], seen["prefix"], venv))
    check(os.path.realpath(seen["module"]).startswith(os.path.realpath(venv) + os.sep),
          "%s: sonde_venv_only came from %s" % (argv[:2], seen["module"]))
    with open(out, encoding="utf-8") as f:
        prof = json.load(f)
    check(app in prof["files"], "%s: no lines of %s in the profile (%d samples); stderr: %s"
          % (argv[:2], app, prof.get("n_samples", 0), [list(prof["files"]), prof.get("program"), prof.get("unattributed_percent"), prof.get("processes")]))
    lines = lines_by_no(prof, app)
    hot = marked_lines(app)["hot"]
    best = max(lines.values(), key=line_total)
    check(best["lineno"] == hot,
          "%s: the hottest line of app.py is %d (%.1f%%), not line %d: %s"
          % (argv[:2], best["lineno"], line_total(best), hot, sorted(lines)))


def _pip_install_and_use(env, python):
    venv, site, shell = _venv(env, python)
    build = _shared_build(env)
    _call(["python", "-m", "pip", "install", "--no-index", "--no-build-isolation",
           "--config-settings", "build-dir=" + build, env.root], shell, env.tmp, timeout=300)
    command = os.path.join(venv, "bin", "sonde")
    check(shutil.which("sonde", path=shell["PATH"]) == command,
          "the activated shell's sonde is %s, not %s" % (shutil.which("sonde", path=shell["PATH"]),
                                                      command))
    pkg = os.path.join(site, "sonde")
    modules = glob.glob(os.path.join(pkg, "_sonde.*.so"))
    check(len(modules) == 1, "the installed package holds %d extension modules: %s"
          % (len(modules), modules))
    # the pytest plugin's entry point, when the tree has the plugin
    entry_points = _call(["python", "-c", "from importlib.metadata import distribution; "
                          "print(distribution('sonde').read_text('entry_points.txt') or '')"],
                         shell, env.tmp).stdout
    has_plugin = os.path.exists(os.path.join(env.root, "sonde", "pytest_plugin.py"))
    check(("[pytest11]" in entry_points and "sonde = sonde.pytest_plugin" in entry_points)
          == has_plugin, "plugin in the tree: %s; entry points: %r" % (has_plugin, entry_points))
    app = env.write("app.py", APP)
    out = os.path.join(env.tmp, "profile.json")
    _check_profile(env, ["sonde", "run", "--json", "-o", out, app], shell, venv, app, out)
    os.unlink(out)
    _check_profile(env, ["python", "-m", "sonde", "run", "--json", "-o", out, app], shell, venv,
                   app, out)
    # not activated: venv/bin/sonde runs its own venv's python, as every
    # console script of a venv does (python3 on PATH is another one)
    os.unlink(out)
    outside = dict(shell)
    outside.pop("VIRTUAL_ENV")
    outside["PATH"] = os.pathsep.join(p for p in shell["PATH"].split(os.pathsep)
                                      if p != os.path.join(venv, "bin"))
    _check_profile(env, [command, "run", "--json", "-o", out, app], outside, venv, app, out)
    _call(["python", "-m", "pip", "uninstall", "-y", "sonde"], shell, env.tmp)
    left = [p for p in (command, pkg) if os.path.lexists(p)]
    left += glob.glob(os.path.join(site, "sonde-*.dist-info"))
    check(not left, "pip uninstall left %s" % left)


def test_pip_install_pyenv_312(env):
    _pip_install_and_use(env, _pyenv_312())


def test_pip_install_debian_python3(env):
    _pip_install_and_use(env, _debian_python3())


def test_make_install(env):
    """`make install DESTDIR=D PREFIX=/usr/local` (from the test build, up
    to date: nothing compiled) puts the command in D/usr/local/bin and the
    package in D/usr/local/lib/sonde/sonde, where the command finds it;
    `make uninstall` removes both."""
    dest = os.path.join(env.tmp, "dest")
    make = ["make", "--no-print-directory", "-s", "BUILD=" + env.build, "PYTHON=" + env.python,
            "PYTHONS=", "PREFIX=/usr/local", "DESTDIR=" + dest]
    _call(make + ["install"], outside_env(), env.root)
    command = os.path.join(dest, "usr", "local", "bin", "sonde")
    pkg = os.path.join(dest, "usr", "local", "lib", "sonde", "sonde")
    for path in (command, os.path.join(pkg, "_boot", "sitecustomize.py"),
                 os.path.join(pkg, "libsonde_shim.so"), os.path.join(pkg, "viewer", "sonde.js")):
        check(os.path.exists(path), "make install did not install %s" % path)
    app = env.write("app.py", APP.replace("import sonde_venv_only", "import app_helper as sonde_venv_only"))
    env.write("app_helper.py", "def square(x):\n    return x * x\n")
    out = os.path.join(env.tmp, "installed.json")
    proc = env.run([command, "run", "--json", "-o", out, app])
    check(proc.returncode == 0 and os.path.exists(out),
          "the installed sonde failed (exit %d): %s" % (proc.returncode, proc.stderr[-2000:]))
    with open(out, encoding="utf-8") as f:
        lines = lines_by_no(json.load(f), app)
    best = max(lines.values(), key=line_total)
    check(best["lineno"] == marked_lines(app)["hot"], "the hottest line is %d" % best["lineno"])
    # python -m sonde with the installed package on the path
    os.unlink(out)
    proc = env.run_python(["-m", "sonde", "run", "--json", "-o", out, app],
                          env={"PYTHONPATH": os.path.dirname(pkg)})
    check(proc.returncode == 0 and os.path.exists(out),
          "python -m sonde (installed) failed (exit %d): %s" % (proc.returncode, proc.stderr[-2000:]))
    _call(make + ["uninstall"], outside_env(), env.root)
    left = [p for p in (command, pkg) if os.path.lexists(p)]
    check(not left, "make uninstall left %s" % left)
