"""`sonde record` ends like its command (issue #14, item 5): a command that
dies by a signal makes sonde die by the same signal (as `sonde run`, which
becomes the interpreter); a SIGINT sent to the process group reaches the
command once, as it would without sonde; and the closing line says
"written" only of a report that was. Every figure is compared with the
same program under plain python. The behaviour is the command's, not the
interpreter's, so these run once (VERSIONS)."""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from support import check  # noqa: E402

VERSIONS = "once: how record ends is the command's behaviour, not the interpreter's"

# Runs a moment (so that record reads it), then ends by the signal named
# in argv[1], sent to itself.
SELF_KILL = """\
import os, signal, sys, time
end = time.perf_counter() + 0.2
while time.perf_counter() < end:
    pass
os.kill(os.getpid(), getattr(signal, sys.argv[1]))
time.sleep(5)
"""

# "count": counts the SIGINTs it gets in 0.5 s; "traceback": dies of the
# first, with Python's own traceback. Prints "ready PID" first.
INTERRUPTED = """\
import os, signal, sys, time
if sys.argv[1] == "count":
    got = []
    signal.signal(signal.SIGINT, lambda *a: got.append(1))
    print("ready", os.getpid(), flush=True)
    end = time.perf_counter() + 0.5
    while time.perf_counter() < end:
        time.sleep(0.01)
    print("signals", len(got), flush=True)
else:
    print("ready", os.getpid(), flush=True)
    time.sleep(30)
"""


def _not_sonde(text):
    return "".join(line for line in text.splitlines(True) if not line.startswith("sonde: "))


def test_dies_by_the_same_signal(env):
    script = env.write("self_kill.py", SELF_KILL)
    out = os.path.join(env.tmp, "kill.json")
    seen = []
    # under tests/run.py --sanitize, ASan's handler would turn the
    # program's own SIGSEGV into a report: the program keeps its signal
    kw = {"env": {"ASAN_OPTIONS": os.environ["ASAN_OPTIONS"] + ":handle_segv=0"}} \
        if env.sanitize else {}
    for name in ("SIGTERM", "SIGKILL", "SIGSEGV"):
        plain = env.run_python([script, name], timeout=60, **kw)
        check(plain.returncode == -getattr(signal, name),
              "plain python ended with %d on %s" % (plain.returncode, name))
        record = env.run_sonde(["record", "-o", out, "--", env.python, script, name], timeout=60,
                               **kw)
        check(record.returncode == plain.returncode,
              "record ended with %d, python with %d (%s); stderr:\n%s"
              % (record.returncode, plain.returncode, name, record.stderr[-2000:]))
        check("written to" in record.stderr and os.path.exists(out),
              "record of a program killed by %s wrote no report: %s" % (name, record.stderr))
        os.unlink(out)
        run = env.run_sonde(["run", "--json", "-o", out, script, name], timeout=60, **kw)
        check(run.returncode == plain.returncode,
              "run ended with %d, python with %d (%s)" % (run.returncode, plain.returncode, name))
        seen.append("%s %d" % (name, record.returncode))
    return ", ".join(seen)


def _interrupt_group(argv, cwd):
    """Starts argv in a session of its own, sends SIGINT to its whole
    process group once the program is blocked in time.sleep (or, counting,
    once it is ready), and returns (exit status, stdout, stderr)."""
    # SIGINT as a terminal's session has it (a background job of a shell,
    # such as a CI runner, starts with SIGINT ignored, which python keeps).
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=cwd, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        ready = proc.stdout.readline().split()
        check(len(ready) == 2 and ready[0] == "ready", "not ready: %r" % ready)
        deadline = time.time() + 20
        # Asleep (state S): the program is in time.sleep, its last step.
        while time.time() < deadline:
            with open("/proc/%s/stat" % ready[1]) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "S":
                    break
            time.sleep(0.005)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, "ready\n" + out, err


def test_group_sigint_reaches_the_command_once(env):
    script = env.write("interrupted.py", INTERRUPTED)
    out = os.path.join(env.tmp, "int.json")
    record = [env.sonde, "record", "-o", out, "--"]
    for mode in ("count", "traceback"):
        plain = _interrupt_group([env.python, script, mode], env.tmp)
        recorded = _interrupt_group(record + [env.python, script, mode], env.tmp)
        check(recorded[0] == plain[0], "%s: record ended with %d, python with %d; stderr:\n%s"
              % (mode, recorded[0], plain[0], recorded[2]))
        check(recorded[1] == plain[1], "%s: output %r under record, %r alone"
              % (mode, recorded[1], plain[1]))
        check(_not_sonde(recorded[2]) == plain[2],
              "%s: stderr under record:\n%s\nalone:\n%s" % (mode, recorded[2], plain[2]))
        check(plain[2].count("KeyboardInterrupt") == (mode == "traceback"),
              "%s: python's stderr %r" % (mode, plain[2]))
    return "one SIGINT, same traceback, exit %d" % plain[0]


def test_closing_line_only_after_the_write(env):
    """The output directory disappears while the command runs: record says
    it cannot write the report, never that it was written."""
    outdir = os.path.join(env.tmp, "out")
    script = env.write("remove_dir.py", """\
        import shutil, sys, time
        time.sleep(0.3)
        shutil.rmtree(sys.argv[1])
    """)
    for gone in (False, True):
        os.makedirs(outdir, exist_ok=True)
        out = os.path.join(outdir, "p.json")
        args = [env.python, script, outdir if gone else os.path.join(env.tmp, "elsewhere")]
        os.makedirs(os.path.join(env.tmp, "elsewhere"), exist_ok=True)
        proc = env.run_sonde(["record", "-o", out, "--"] + args, timeout=60)
        if not gone:
            check(proc.returncode == 0 and os.path.exists(out) and "json written to" in proc.stderr,
                  "a writable output: exit %d, stderr %s" % (proc.returncode, proc.stderr))
            continue
        check(proc.returncode == 1, "exit %d after a failed write" % proc.returncode)
        check("written" not in proc.stderr and "cannot write" in proc.stderr,
              "messages after a failed write:\n%s" % proc.stderr)
    return "failed write: %r" % [l for l in proc.stderr.splitlines() if "cannot" in l]
