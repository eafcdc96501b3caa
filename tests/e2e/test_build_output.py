"""Quiet builds: `make` prints one line per step ("CC src/x.c") unless V=1
(every command in full) and nothing with -s; `make demo` builds only what
the demo needs and names the HTML report on its last line. Runs once
(ONCE): it checks the Makefile, not an interpreter."""
import os
import subprocess

from support import check, outside_env

ONCE = True


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
