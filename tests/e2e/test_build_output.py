"""Quiet builds: `make` prints one line per step ("CC src/x.c") unless V=1
(every command in full) and nothing with -s; `make demo` builds only what
the demo needs and names the HTML report on its last line; one build holds
a module for each of several interpreters. Runs once (VERSIONS): it checks the
Makefile, not an interpreter."""
import json
import os
import subprocess

import pythons
from support import Skip, check, outside_env

VERSIONS = "once: it checks the Makefile, not an interpreter"
NOT_WITH_CC = "it checks the Makefile with make's default compiler (the gcc run does)"


def _make(env, build, *args):
    proc = subprocess.run(["make", "--no-print-directory", "BUILD=" + build, "PYTHON=" + env.python]
                          + list(args), capture_output=True, text=True, cwd=env.root, timeout=300,
                          env=outside_env())
    check(proc.returncode == 0, "make %s failed: %s" % (" ".join(args), proc.stderr[-2000:]))
    return proc


def test_one_line_per_step(env):
    build = os.path.join(env.tmp, "build")
    obj = os.path.join(build, "obj", "src", "core", "pathrule.o")
    quiet = _make(env, build, obj)
    check(quiet.stdout.splitlines() == ["CC   src/core/pathrule.c"] and not quiet.stderr,
          "quiet make printed: %r %r" % (quiet.stdout, quiet.stderr))
    os.unlink(obj)
    verbose = _make(env, build, obj, "V=1")
    lines = verbose.stdout.splitlines()
    check(len(lines) == 1 and "-c src/core/pathrule.c" in lines[0] and "-o " + obj in lines[0],
          "make V=1 did not show the command: %r" % verbose.stdout)
    os.unlink(obj)
    silent = _make(env, build, obj, "-s")
    check(silent.stdout == "" and os.path.exists(obj), "make -s printed: %r" % silent.stdout)


def test_demo_builds_what_it_needs(env):
    # a dry run lists the commands the demo would run (its sub-make's too)
    build = os.path.join(env.tmp, "demo-build")
    dry = _make(env, build, "-n", "demo").stdout
    for needed in ("bin/sonde", "_sonde", "sitecustomize.py", "run examples/demo.py",
                   "run --html -o %s/demo.html" % build):
        check(needed in dry, "make demo would not do %r:\n%s" % (needed, dry[-3000:]))
    for unneeded in ("tests/unit/", "libsonde_shim", "fake_nvml", "pyread_dump"):
        check(unneeded not in dry, "make demo would build %r" % unneeded)
    last = [line for line in dry.splitlines() if line.strip()][-1]
    check("demo.html" in last and last.startswith("echo"), "the last step is not the line naming "
          "the page: %r" % last)


def _sysconfig(python, name):
    return subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_%s)" % name],
                          capture_output=True, text=True, timeout=60).stdout.strip()


def test_one_build_for_several_interpreters(env):
    """`make PYTHONS="a b"` puts both interpreters' modules in one package
    beside one command, which then profiles a program under either; a build
    for one PYTHON builds no other module."""
    ours = _sysconfig(env.python, 'config_var("EXT_SUFFIX")')
    other = None
    for path in pythons._candidates():
        suffix = _sysconfig(path, 'config_var("EXT_SUFFIX")')
        include = _sysconfig(path, 'paths()["include"]')
        if suffix and suffix != ours and os.path.exists(os.path.join(include, "Python.h")):
            other = path
            break
    if not other:
        raise Skip("no second interpreter with its C headers here")
    build = os.path.join(env.tmp, "multi")
    _make(env, build, "-s", "-j2", "PYTHONS=%s %s" % (env.python, other), "demo-deps",
          "other-exts")
    modules = sorted(n for n in os.listdir(os.path.join(build, "lib", "sonde"))
                     if n.startswith("_sonde."))
    want = sorted("_sonde" + _sysconfig(p, 'config_var("EXT_SUFFIX")') for p in (env.python, other))
    check(all(w in modules for w in want), "modules %s, expected %s" % (modules, want))
    code = "import sys; print(sys.version_info[:2]); s = sum(i * i for i in range(2000000))"
    for python in (env.python, other):
        out = os.path.join(env.tmp, "multi.json")
        proc = subprocess.run([os.path.join(build, "bin", "sonde"), "run", "--python", python,
                               "--json", "-o", out, "-c", code], capture_output=True, text=True,
                              timeout=120, env=outside_env())
        check(proc.returncode == 0, "%s: exit %d: %s" % (python, proc.returncode, proc.stderr[-2000:]))
        with open(out, encoding="utf-8") as f:
            prof = json.load(f)
        check(any(f["lines"] for f in prof["files"].values()), "%s: no line profiled" % python)
    # PYTHON given: that interpreter's module only, no search
    dry = _make(env, os.path.join(env.tmp, "single"), "-n", "all").stdout
    cache_tag = subprocess.run([env.python, "-c", "import sys; print(sys.implementation.cache_tag)"],
                               capture_output=True, text=True, timeout=60).stdout.strip()
    check("tools/pythons.sh" not in dry
          and "cpython" not in dry.replace(ours[1:-3], "").replace(cache_tag + ".pyc", ""),
          "make PYTHON=... all would look for other interpreters:\n" + dry[-3000:])
