"""The host's sonde reads Debian unstable's CPython running in the chroot of
tools/chroot.sh, each of its versions (3.13 to the newest supported:
pythons.chroot_versions) (issue 11, item 5): `dump` names the thread's
functions and `attach` records stacks with them. The target's files are
opened through /proc/PID/root or, for a chroot in our own mount namespace,
under the paths /proc/PID/maps gives. Host side only (VERSIONS): the command is
the host's build whatever the interpreter under test.

Issue #32: the worker's share of the recording goes through
tests/accuracy.py: the truth by construction (the worker is all the target
runs), n the folded samples, a named systematic allowance, and the Wilson
interval at the suite's corrected confidence, after checking that the
samples can catch the defect the check was written for."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from attach_support import parse_folded  # noqa: E402
from support import Skip, check, outside_env  # noqa: E402
import pythons  # noqa: E402
import accuracy  # noqa: E402
from accuracy import need_samples, samples_to_catch, share_at_least  # noqa: E402

VERSIONS = ("once: the host's command reads the chroot's interpreters, whatever the interpreter "
            "under test")

# Systematic allowance (percentage points) of the worker's share, all the
# target runs by construction: the first or last tick of the recording (the
# Timer thread that printed "ready" on its way out), as test_attach.py's
# ATTACH_ALLOWANCE
ATTACH_ALLOWANCE = 3.0
# The defect the check was written for: the chroot's frames misread (names
# not found through /proc/PID/root, the leaf charged to its caller): a
# quarter of the samples at least.
FRAME_DEFECT = 25.0

TARGET = r"""
import os, sys, threading
def chroot_leaf_worker():
    x = 0
    while True:
        x += 1
def chroot_outer_worker():
    chroot_leaf_worker()
threading.Timer(0.3, lambda: print("ready %d" % os.getpid(), flush=True)).start()
chroot_outer_worker()
"""


def _chroot(env):
    tool = os.path.join(env.root, "tools", "chroot.sh")
    if os.geteuid() != 0:
        raise Skip("needs root for the chroot")
    proc = subprocess.run([tool, "ensure"], capture_output=True, text=True, env=outside_env())
    if proc.returncode != 0:
        raise Skip("no chroot: " + proc.stderr.strip()[-200:])
    return tool


def _in_chroot(env, tool, version):
    """Starts the target under python<version> in the chroot; returns
    (Popen, host pid of the interpreter)."""
    script = env.write("chroot_target_%s.py" % version, TARGET)  # under /tmp, bound inside
    proc = subprocess.Popen([tool, "run", "exec python%s %s" % (version, script)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=outside_env())
    line = proc.stdout.readline()
    check(line.startswith("ready "), "target did not start: %r %s" % (line, proc.stderr.read()
                                                                        if proc.poll() is not None
                                                                        else ""))
    return proc, int(line.split()[1])


def test_dump_and_attach_chroot_pythons(env):
    tool = _chroot(env)
    notes = []
    for version in pythons.chroot_versions():
        proc, pid = _in_chroot(env, tool, version)
        try:
            dump = env.run_sonde(["dump", str(pid)])
            check(dump.returncode == 0, "dump %s: exit %d: %s" % (version, dump.returncode,
                                                                  dump.stderr[-500:]))
            check("chroot_leaf_worker" in dump.stdout and "chroot_outer_worker" in dump.stdout,
                  "dump %s lacks the target's functions:\n%s" % (version, dump.stdout[-1500:]))
            out = os.path.join(env.tmp, "chroot-%s.folded" % version)
            att = env.run_sonde(["attach", str(pid), "--duration", "1", "-o", out])
            check(att.returncode == 0, "attach %s: exit %d: %s" % (version, att.returncode,
                                                                   att.stderr[-500:]))
            with open(out) as f:
                stacks = parse_folded(f.read())
            total = sum(n for _, n in stacks)
            leaf = sum(n for frames, n in stacks
                       if any("chroot_outer_worker" in f for f in frames)
                       and "chroot_leaf_worker" in frames[-1])
            what = "attach %s: chroot_leaf_worker under chroot_outer_worker" % version
            need_samples(what, total, samples_to_catch(1 - FRAME_DEFECT / 100.0, 1.0,
                                                       ATTACH_ALLOWANCE / 100.0))
            notes.append(accuracy.check(share_at_least(
                what, 100.0 * leaf / total, total, 100, ATTACH_ALLOWANCE)))
        finally:
            proc.kill()
            subprocess.run(["pkill", "-f", "chroot_target_%s.py" % version], env=outside_env())
            proc.wait()
            time.sleep(0.1)
    return ", ".join(notes)
