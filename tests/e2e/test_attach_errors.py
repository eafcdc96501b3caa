"""Errors of sonde attach / record / dump: each is one clear line and a
non-zero exit (issue #4, item 5). The messages do not depend on the
interpreter, so these run once (VERSIONS); a target that exits mid-recording
and Ctrl-C are tested per interpreter in test_attach.py."""
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pythons  # noqa: E402
from attach_support import Target, program  # noqa: E402
from support import Skip, check, outside_env  # noqa: E402

VERSIONS = "once: the command's error messages do not depend on the interpreter"


def _one_error_line(proc, *needles):
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    check(proc.returncode != 0, "exit 0; stderr %r" % proc.stderr)
    check(len(lines) == 1 and lines[0].startswith("sonde: "), "not one error line: %r" % lines)
    for needle in needles:
        check(needle in lines[0], "%r not in %r" % (needle, lines[0]))
    return lines[0]


def _dead_pid():
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid  # reaped: no such process (unless reused within microseconds)


def test_no_such_process(env):
    pid = _dead_pid()
    for cmd in ("attach", "dump"):
        line = _one_error_line(env.run_sonde([cmd, str(pid)]), "pid %d" % pid, "no such process")
    return line


def test_not_a_python_process(env):
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        time.sleep(0.1)
        line = _one_error_line(env.run_sonde(["attach", str(sleeper.pid), "-d", "1"]),
                               "pid %d" % sleeper.pid, "(sleep)", "not a Python process")
        _one_error_line(env.run_sonde(["dump", str(sleeper.pid)]), "not a Python process")
    finally:
        sleeper.kill()
        sleeper.wait()
    proc = env.run_sonde(["record", "-o", os.path.join(env.tmp, "x.svg"), "--", "sleep", "0.3"])
    _one_error_line(proc, "never ran a Python interpreter", "--subprocesses")
    return line


FAKE_PYTHON = r"""
#include <unistd.h>
/* Looks like CPython 3.N to a reader: _PyRuntime and Py_Version. */
unsigned long Py_Version = VERSION_HEX;
char _PyRuntime[1 << 16];
int main(void) { for (;;) pause(); }
"""


def _fake_python(env, minor):
    """A process that looks like CPython 3.minor.0 (without _Py_DebugOffsets)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise Skip("no C compiler to build a fake interpreter")
    src = env.write("fake%d.c" % minor, FAKE_PYTHON.replace("VERSION_HEX", hex(0x030000f0 | minor << 16)))
    exe = os.path.join(env.tmp, "python3.%d" % minor)
    build = subprocess.run([cc, "-O0", "-o", exe, src], capture_output=True, text=True,
                           env=outside_env())
    check(build.returncode == 0, build.stderr)
    return subprocess.Popen([exe])


def test_unsupported_version(env):
    # one past the table's range: the version and the range, in one line
    lo, hi = pythons.supported_range()
    fake = _fake_python(env, hi[1] + 1)
    try:
        time.sleep(0.1)
        line = _one_error_line(env.run_sonde(["attach", str(fake.pid)]), "Python 3.%d.0" % (hi[1] + 1),
                               "does not support", pythons.range_text())
        _one_error_line(env.run_sonde(["dump", str(fake.pid)]), "Python 3.%d.0" % (hi[1] + 1))
    finally:
        fake.kill()
        fake.wait()
    # a supported 3.13+ whose runtime lacks _Py_DebugOffsets: refused, never misread
    fake = _fake_python(env, hi[1])
    try:
        time.sleep(0.1)
        _one_error_line(env.run_sonde(["dump", str(fake.pid)]), "Python 3.%d.0" % hi[1],
                        "memory layout sonde does not recognise", pythons.range_text())
    finally:
        fake.kill()
        fake.wait()
    return line


def test_permission_denied(env):
    if os.geteuid() != 0:
        raise Skip("needs root, to attach as another user")
    setpriv = shutil.which("setpriv")
    if not setpriv:
        raise Skip("no setpriv")
    with Target(env, program("blocked.py")) as target:
        proc = subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                               env.sonde, "attach", str(target.pid), "-d", "0.3"],
                              capture_output=True, text=True, cwd="/", timeout=60)
        dump = subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                               env.sonde, "dump", str(target.pid)],
                              capture_output=True, text=True, cwd="/", timeout=60)
    line = _one_error_line(proc, "pid %d" % target.pid, "permission denied", "ptrace",
                           "same user", "CAP_SYS_PTRACE")
    _one_error_line(dump, "permission denied")
    return line


def test_usage_errors(env):
    _one_error_line(env.run_sonde(["attach"]), "needs the id of a process")
    _one_error_line(env.run_sonde(["attach", "abc"]), "not a process id")
    _one_error_line(env.run_sonde(["attach", "1", "--rate", "0"]), "--rate")
    _one_error_line(env.run_sonde(["attach", "1", "--format", "png"]), "unknown format")
    _one_error_line(env.run_sonde(["attach", "1", "-o", "out.prof"]), "cannot tell the format")
    _one_error_line(env.run_sonde(["record", "-o", "x.svg"]), "needs a command")
    proc = env.run_sonde(["record", "--", "no-such-command-sonde"])
    check(proc.returncode == 127, "exit %d for a missing command" % proc.returncode)
    _one_error_line(proc, "cannot run")
