"""`sonde attach --inject PID` (PEP 768, CPython 3.14+): sonde's own
profiler is loaded into a running process, profiles it as `sonde run`
does, hands the profile back and stops; the process runs on as before.
Before 3.14, and where injection is refused (remote debugging turned off,
no thread that runs Python code within --inject-wait), one line says why
and the process is sampled from outside instead.

The target is a server shape: its main thread waits in C code (an Event),
a worker thread takes turns between a pure-Python line and a line in one
long C call (sorted()). Truth: each line is all of its kind by
construction; bounds from tests/accuracy.py at the sample counts the
report gives (the test runs longer when they fall short).
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import accuracy  # noqa: E402
from accuracy import need_samples, samples_to_catch, share_at_least  # noqa: E402
from attach_support import Target, load_json, sonde_ok  # noqa: E402
from support import Skip, check, marked_lines  # noqa: E402

VERSIONS = ("all: PEP 768 is each interpreter's own (3.14+ inject; older ones refuse, "
            "saying so, and are sampled from outside)")

# A line that is all of one kind read at least 100 - KIND_ALLOWANCE percent
# so: the ticks at the edges of the other line's spans.
KIND_ALLOWANCE = 3.0
# the defect to catch: a line read 25 points off its kind (the outside
# rule's GIL-releasing miss, a sampler that never runs injected)
KIND_DEFECT = 25.0

SERVER = '''\
import random
import sys
import threading
import time

DATA = [random.random() for _ in range(300000)]


def pure(n):
    x = 0
    for i in range(n):
        x += i * i % 7  # @pure
    return x


def native():
    return sorted(DATA)  # @native


def work():
    while True:
        pure(1000000)
        native()


mode = sys.argv[1]
if mode == "worker":
    threading.Thread(target=work, daemon=True).start()
    print("ready", flush=True)
    threading.Event().wait()
elif mode == "ends":
    print("ready", flush=True)
    end = time.time() + float(sys.argv[2])
    while time.time() < end:
        pure(100000)
elif mode == "sleeping":
    print("ready", flush=True)
    time.sleep(1000)
else:
    print("ready", flush=True)
    work()
'''


def _injects(env):
    return tuple(env.version[:2]) >= (3, 14)


def _attach(env, pid, options, out):
    return env.run_sonde(["attach", "--inject", str(pid), "--json", "-o", out] + list(options))


def _lines(prof, script):
    check(script in prof["files"], "no lines of %s in %r" % (script, sorted(prof["files"])))
    return {l["lineno"]: l for l in prof["files"][script]["lines"]}


def _share(line, key):
    total = line["n_cpu_percent_python"] + line["n_cpu_percent_c"] + line["n_sys_percent"]
    return 100 * line[key] / total if total else 0.0


def _task_count(pid):
    return len(os.listdir("/proc/%d/task" % pid))


def test_inject_worker_thread_split(env):
    """A server whose main thread waits in C: the profiler is loaded through
    the worker thread, the pure line reads Python, the sorted() line
    native, and once it is gone the target has its threads of before and
    runs on."""
    script = env.write("server.py", SERVER)
    marks = marked_lines(script)
    out = os.path.join(env.tmp, "inject.json")
    with Target(env, script, ["worker"]) as target:
        threads_before = _task_count(target.pid)
        if not _injects(env):
            proc = _attach(env, target.pid, ["-d", "0.5"], out)
            sonde_ok(proc, "attach --inject (refused)")
            check("--inject needs 3.14 or newer" in proc.stderr
                  and "sampling it from outside instead" in proc.stderr,
                  "no refusal line:\n%s" % proc.stderr)
            check(os.path.exists(out), "no report from the fallback")
            return "refused on %d.%d, sampled from outside" % tuple(env.version[:2])
        for seconds in (1.5, 4.0):
            proc = _attach(env, target.pid, ["-d", str(seconds)], out)
            sonde_ok(proc, "attach --inject")
            check("from inside" in proc.stderr and "outside" not in proc.stderr,
                  "not profiled from inside:\n%s" % proc.stderr)
            prof = load_json(out)
            lines = _lines(prof, script)
            pure, native = lines.get(marks["pure"]), lines.get(marks["native"])
            check(pure and native, "lines %r missing in %r" % (marks, sorted(lines)))
            needed = samples_to_catch(1 - KIND_DEFECT / 100.0, 1.0, KIND_ALLOWANCE / 100.0)
            if min(pure["n_samples"], native["n_samples"]) >= needed:
                break
        for name, line, key in (("pure", pure, "n_cpu_percent_python"),
                                ("native", native, "n_cpu_percent_c")):
            need_samples("%s line" % name, line["n_samples"], needed)
        notes = [accuracy.check(share_at_least("pure line Python", _share(pure, "n_cpu_percent_python"),
                                               pure["n_samples"], 100, KIND_ALLOWANCE)),
                 accuracy.check(share_at_least("sorted() line native",
                                               _share(native, "n_cpu_percent_c"),
                                               native["n_samples"], 100, KIND_ALLOWANCE))]
        # gone: the sampler thread ended with the session
        deadline = time.time() + 2
        while _task_count(target.pid) != threads_before and time.time() < deadline:
            time.sleep(0.05)
        check(_task_count(target.pid) == threads_before,
              "threads after detach %d, before %d" % (_task_count(target.pid), threads_before))
        check(target.proc.poll() is None, "the target ended")
        # a second attach to the same process works the same way
        proc = _attach(env, target.pid, ["-d", "0.5"], out)
        sonde_ok(proc, "attach --inject, second time")
        check("from inside" in proc.stderr, "second attach:\n%s" % proc.stderr)
        check(marks["pure"] in _lines(load_json(out), script), "second attach: no pure line")
    return "; ".join(notes)


def test_inject_command_killed(env):
    """sonde killed (SIGKILL) while its profiler runs in the target: within
    about a second the injected sampler thread ends and its directory is
    gone; the target runs on, and a new --inject works."""
    if not _injects(env):
        raise Skip("injection needs 3.14 (test_inject_worker_thread_split checks the refusal)")
    script = env.write("server.py", SERVER)
    out = os.path.join(env.tmp, "again.json")
    tmp = os.path.join(env.tmp, "tmpdir")
    os.mkdir(tmp)
    with Target(env, script, ["worker"]) as target:
        threads_before = _task_count(target.pid)
        sonde = subprocess.Popen([env.sonde, "attach", "--inject", str(target.pid), "-o",
                                  os.path.join(env.tmp, "never.json")],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 env=env.base_env({"TMPDIR": tmp}))
        deadline = time.time() + 10
        while _task_count(target.pid) == threads_before and time.time() < deadline:
            time.sleep(0.02)
        check(_task_count(target.pid) == threads_before + 1,
              "the injected sampler thread never started: %d threads" % _task_count(target.pid))
        check(os.listdir(tmp), "no directory of the injected session in %s" % tmp)
        sonde.kill()
        sonde.communicate()
        killed = time.time()
        while (_task_count(target.pid) != threads_before or os.listdir(tmp)) \
                and time.time() < killed + 5:
            time.sleep(0.05)
        gone_after = time.time() - killed
        check(_task_count(target.pid) == threads_before,
              "the injected sampler still runs 5 s after sonde was killed")
        check(not os.listdir(tmp), "left behind: %r" % os.listdir(tmp))
        check(target.proc.poll() is None, "the target ended")
        proc = _attach(env, target.pid, ["-d", "0.5"], out)
        sonde_ok(proc, "attach --inject after a killed one")
        check("from inside" in proc.stderr, "after a killed one:\n%s" % proc.stderr)
    return "sampler gone %.2f s after sonde was killed" % gone_after


def test_inject_target_exits(env):
    """A target that ends while its profiler runs hands the profile over at
    its exit: the report covers what ran, with its exit status kept."""
    if not _injects(env):
        raise Skip("injection needs 3.14 (test_inject_worker_thread_split checks the refusal)")
    script = env.write("server.py", SERVER)
    marks = marked_lines(script)
    out = os.path.join(env.tmp, "ends.json")
    with Target(env, script, ["ends", "2"]) as target:
        proc = _attach(env, target.pid, ["-d", "30"], out)
        sonde_ok(proc, "attach --inject of a target that ends")
        check(target.proc.wait(timeout=30) == 0, "the target's exit status changed")
        check(target.proc.stderr.read() == b"", "the target wrote to stderr")
    prof = load_json(out)
    pure = _lines(prof, script).get(marks["pure"])
    check(pure and pure["n_samples"] > 0, "no samples on the pure line: %r" % pure)
    check(prof["elapsed_time_sec"] < 10, "the session outlived the target: %r"
          % prof["elapsed_time_sec"])
    return "%d samples on the pure line in %.1f s" % (pure["n_samples"], prof["elapsed_time_sec"])


def test_inject_refusals_fall_back_outside(env):
    """Remote debugging turned off (-X disable-remote-debug), and a target
    whose only thread waits in C code past --inject-wait: one line each,
    then the target is sampled from outside, and runs on."""
    if not _injects(env):
        raise Skip("before 3.14 every --inject is refused (test_inject_worker_thread_split)")
    script = env.write("server.py", SERVER)
    out = os.path.join(env.tmp, "outside.json")
    cases = (("main", ["-X", "disable-remote-debug"], "remote debugging turned off"),
             ("sleeping", [], "ran no Python code within 0.5 s"))
    for mode, flags, said in cases:
        target = Target(env, script, [mode], python_flags=flags)
        try:
            proc = _attach(env, target.pid, ["-d", "0.5", "--inject-wait", "0.5"], out)
            sonde_ok(proc, "attach --inject (%s)" % mode)
            check(said in proc.stderr and "sampling it from outside instead" in proc.stderr,
                  "%s: no refusal line %r in:\n%s" % (mode, said, proc.stderr))
            check(os.path.exists(out), "%s: no report from the fallback" % mode)
            os.unlink(out)
            check(target.proc.poll() is None, "%s: the target ended" % mode)
        finally:
            target.stop()
    return "2 refusals"


def test_inject_option_errors(env):
    proc = env.run_sonde(["attach", "--inject", "--inject-wait", "0", "1"])
    check(proc.returncode == 2 and "--inject-wait must be a positive number" in proc.stderr,
          "exit %d: %s" % (proc.returncode, proc.stderr))
    proc = env.run_sonde(["attach", "--inject", "--period", "10", "1"])
    check(proc.returncode == 2 and "--inject does not take --period" in proc.stderr,
          "exit %d: %s" % (proc.returncode, proc.stderr))
    check(len(proc.stderr.strip().splitlines()) == 1, "not one line: %r" % proc.stderr)


test_inject_option_errors.versions = "once: the command's option table"
