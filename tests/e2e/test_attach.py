"""sonde attach / record / dump against live processes of every interpreter.

Tolerances (issue #4): a program whose hot function is known is attributed
>= 80 % to it; the function-bias program's shares are within 3 points of its
own perf_counter measurement; with --threads every thread's stack shows up
under its own root; dump of a program blocked in time.sleep shows the
function and line; non-ASCII function and file names come out unchanged.

Issue #12 (Python or native by watching the thread, as `sonde run` does),
under `sonde record`, unpinned and with the second CPU kept busy: a
big-integer x * y line >= 90 % native and within 5 points of
operator.mul(x, y); an arithmetic loop and a two-instruction loop >= 95 %
Python. Each measured phase is 2 s of thread time. (A collection-heavy
allocation loop is not tested under attach: its coarse clock can read the
loop's bytecode 5-8 points native on a loaded machine, docs/attach.md;
`sonde run`'s test of it is test_cpu_accuracy's.)

Issue #32: each share is checked through tests/accuracy.py against its
truth (by construction, or the program's own clock), with n the samples it
rests on, a named systematic allowance, and the Wilson interval at the
suite's corrected confidence; the function-bias recordings sample at
700 Hz so that their ~1000 samples can tell a 10-point bias.

Issue #25, item 5: under `sonde attach` (unpinned, and with a CPU kept busy
on the interpreters of the loaded runs), a line whose time is one C call
that releases the GIL (hashlib.sha256 of a buffer), in short calls (0.2 ms
of CPU, many per tick) and in long ones (30 ms), is native within
ATTACH_ALLOWANCE, the pure-Python line it takes turns with stays Python,
and the hashing line's share of the time is the program's own wall-clock
measure within CLOCK_ALLOWANCE (attach read such lines 50-100 % native
before, 0 % in one loaded run).
"""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from attach_support import (Target, folded_share, frame_parts, function_totals, load_json,  # noqa: E402
                            parse_folded, program, sonde_ok)
from support import busy_loop, check, loaded_runs_here, marked_lines  # noqa: E402
import accuracy  # noqa: E402
from accuracy import (need_samples, samples_to_catch, samples_to_catch_difference,  # noqa: E402
                      share_at_least, share_at_most, share_near, shares_close)

VERSIONS = "all: attach reads each interpreter's memory through its version's layout"
ALONE = ("the attach reader's shares against the target's own clocks, some runs with a core "
         "kept busy: never beside another accuracy test (tests/run.py, ALONE_LOCK)")

# Systematic allowances (percentage points):
# - a function or line that is all of one thing by construction (hot()
#   is the only code running; a pure loop, one C call, a blocked call):
#   the coarse-clock native rule's per-sample misclassification and the
#   first or last tick of the recording
ATTACH_ALLOWANCE = 3.0
# - a share against the program's own perf_counter (function bias): the
#   edges of its timed spans against the ticks
CLOCK_ALLOWANCE = 2.0
# - --gil: the hashing worker holds the GIL between its 32 MB hashes
GIL_ALLOWANCE = 10.0
# - a program attached to or recorded from its start: the interpreter's
#   start-up and imports before the function (record), a target's last
#   ticks at its exit
START_ALLOWANCE = 10.0
# - record --subprocesses: two interpreters' start-up, the child's imports
SPAWN_ALLOWANCE = 30.0
# - --threads without --idle: the napper, runnable on each of its wake-ups
#   while it waits for the GIL on a busy machine
NAPPER_ALLOWANCE = 15.0
# Defects the tests were written for: time misattributed between functions
# (10 points); a rule or reader that reads a line of one kind 25 points off,
# or --gil ignored (the Python worker half of the running samples).
SHARE_DEFECT = 10.0
KIND_DEFECT = 25.0
# function bias: 700 Hz, about 1200 samples in its 2 s (attach drops some ticks)
BIAS_RATE = "700"


def _power_kind(what, n, allowance=ATTACH_ALLOWANCE, defect=KIND_DEFECT):
    need_samples(what, n, samples_to_catch(1 - defect / 100.0, 1.0, allowance / 100.0))


def _function_samples(prof, names):
    return sum(f.get("n_samples", 0) for e in prof["files"].values() for f in e["functions"]
               if names is None or f["line"] in names)

BIAS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "programs",
                    "function_bias.py")


def test_attach_hot_function(env):
    script = program("hot.py")
    out = os.path.join(env.tmp, "hot.json")
    # The rate: at least half its ticks in 1 s at 100 Hz. Ticks that come
    # late on an overloaded machine (33 in one second at a load of 15) are
    # lost, not made up: a second attach is made then, and a sampler that
    # runs at a third of its rate falls short both times.
    counts = []
    for _ in range(2):
        with Target(env, script) as target:
            proc = env.run_sonde(["attach", str(target.pid), "--duration", "1", "-o", out])
        sonde_ok(proc, "attach")
        prof = load_json(out)
        counts.append(prof["n_samples"])
        if prof["n_samples"] >= 50:
            break
    totals = function_totals(prof)
    share = totals.get("hot", 0.0)
    # A rate floor, not a sampled estimate: ticks come every 10 ms +- 25 %
    # (bounded, not random), 80-133 in 1 s unless dropped; half may be
    # dropped on a loaded machine.
    check(prof["n_samples"] >= 50, "only %s samples in 1 s at 100 Hz" % counts)
    # truth: hot() is all the target runs after "ready"; the defect: time
    # charged to its caller (or elsewhere), a quarter of it at least
    n = _function_samples(prof, None)
    _power_kind("hot()", n)
    note = accuracy.check(share_at_least("hot()", share, n, 100, ATTACH_ALLOWANCE))
    line = marked_lines(script)["hot"]
    lines = [l["lineno"] for e in prof["files"].values() for l in e["lines"]]
    check(line in lines or line - 1 in lines, "the hot loop's lines are missing: %r" % lines)
    return note


def test_record_function_bias(env):
    cal = env.run_python([BIAS, "calibrate"])
    check(cal.returncode == 0, cal.stderr)
    rates = json.loads(cal.stdout)
    results = []
    for target in (0.25, 0.5, 0.75):
        # record drops ticks on a loaded machine (at 700 Hz, 845 of 1400 in
        # one run): a recording with fewer samples than the bound needs is
        # made again, longer by the samples missing, at most twice
        seconds = 2.0
        for attempt in range(3):
            n_calling = int(rates["calling"] * seconds * target)
            n_inlined = int(rates["inlined"] * seconds * (1 - target))
            out = os.path.join(env.tmp, "bias-%d-%d.json" % (int(100 * target), attempt))
            proc = env.run_sonde(["record", "--rate", BIAS_RATE, "-o", out, "--", env.python,
                                  BIAS, str(n_calling), str(n_inlined)])
            sonde_ok(proc, "record")
            truth = json.loads(proc.stdout)
            true_share = 100 * truth["calling"] / (truth["calling"] + truth["inlined"])
            prof = load_json(out)
            n = _function_samples(prof, ("calling", "helper", "inlined"))
            t = true_share / 100.0
            needed = samples_to_catch(t + SHARE_DEFECT / 100.0 if t < 0.5 else
                                      t - SHARE_DEFECT / 100.0, t, CLOCK_ALLOWANCE / 100.0)
            if n >= needed:
                break
            seconds *= 1.2 * needed / max(n, 1)
        totals = function_totals(prof)
        calling = totals.get("calling", 0) + totals.get("helper", 0)
        inlined = totals.get("inlined", 0)
        check(calling + inlined > 0, "no samples in either function: %r" % totals)
        reported = 100 * calling / (calling + inlined)
        need_samples("function bias at %d%%" % (100 * target), n, needed)
        bound = share_near("calling variant", reported, n, true_share, CLOCK_ALLOWANCE)
        check(bound.ok, "%s (%s)" % (bound, proc.stderr.strip().splitlines()[-1]))
        results.append(bound.note + ("" if attempt == 0 else " (recorded %.1f s)" % seconds))
    return "; ".join(results)


def _thread_stacks(stacks):
    """{thread root: {functions seen above it}}."""
    threads = {}
    for frames, _ in stacks:
        check(frame_parts(frames[0]) is None, "stack without a thread root: %r" % frames)
        funcs = threads.setdefault(frames[0], set())
        funcs.update(p[0] for p in map(frame_parts, frames[1:]) if p)
    return threads


def test_attach_threads(env):
    script = program("threads.py")
    idle_out = os.path.join(env.tmp, "idle.folded")
    busy_out = os.path.join(env.tmp, "busy.folded")
    with Target(env, script) as target:
        proc = env.run_sonde(["attach", str(target.pid), "-d", "0.8", "--threads", "--idle",
                              "-o", idle_out])
        sonde_ok(proc, "attach --threads --idle")
        proc = env.run_sonde(["attach", str(target.pid), "-d", "0.8", "--threads", "-o", busy_out])
        sonde_ok(proc, "attach --threads")
    with open(idle_out, encoding="utf-8") as f:
        idle = parse_folded(f.read())
    threads = _thread_stacks(idle)
    check(len(threads) == 4, "expected 4 threads, got %r" % sorted(threads))
    check("MainThread" in threads, "no MainThread root: %r" % sorted(threads))
    wanted = {"spin_alpha", "spin_beta", "nap_gamma"}
    seen = set()
    for root, funcs in threads.items():
        if root == "MainThread":
            check(any(f.endswith("join") for f in funcs), "main thread not in join(): %r" % funcs)
        else:
            mine = funcs & wanted
            check(len(mine) == 1, "thread %s runs %r" % (root, funcs))
            seen |= mine
    check(seen == wanted, "threads found: %r" % seen)

    with open(busy_out, encoding="utf-8") as f:
        busy = parse_folded(f.read())
    nap = folded_share(busy, lambda func, file, line: func == "nap_gamma")
    spin = folded_share(busy, lambda func, file, line: func.startswith("spin_"))
    join = folded_share(busy, lambda func, file, line: func.endswith("join"))
    # Truth: without --idle only running threads are kept, so the workers
    # hold every sample but the napper's: it wakes every 50 ms and must then
    # wait for the GIL, so on a busy machine it is caught runnable now and
    # then (NAPPER_ALLOWANCE); the main thread, in join(), never runs. The
    # defect: idle threads kept (the napper and join() a quarter each, the
    # workers half). The workers' share tells it (24 samples), and join()'s
    # (13); the napper's wider allowance could tell it only from 289, so
    # its bound is a check of the napper's own time, not of that defect.
    n = sum(c for _, c in busy)
    _power_kind("attach --threads without --idle", n, NAPPER_ALLOWANCE, 50.0)
    need_samples("join() without --idle", n, samples_to_catch(0.25, 0.0, ATTACH_ALLOWANCE / 100.0))
    return "4 threads with --idle; without: " + "; ".join([
        accuracy.check(share_at_least("running workers", spin, n, 100, NAPPER_ALLOWANCE)),
        accuracy.check(share_at_most("the napper", nap, n, 0, NAPPER_ALLOWANCE)),
        accuracy.check(share_at_most("join()", join, n, 0, ATTACH_ALLOWANCE))])


def test_dump_blocked_in_sleep(env):
    script = program("blocked.py")
    line = marked_lines(script)["sleep"]
    want = "    waiter (%s:%d)" % (script, line)
    with Target(env, script) as target:
        # "ready" comes just before the sleep: look until the thread is in it
        for _ in range(20):
            proc = env.run_sonde(["dump", str(target.pid)])
            sonde_ok(proc, "dump")
            if want in proc.stdout.splitlines():
                break
            time.sleep(0.05)
    out = proc.stdout
    check(out.startswith("Process %d:" % target.pid), "header: %r" % out[:200])
    check("Python %d.%d." % tuple(env.version[:2]) in out, "version missing: %r" % out[:300])
    check(want in out.splitlines(), "no %r in:\n%s" % (want, out))
    header = [l for l in out.splitlines() if l.startswith("Thread %d " % target.pid)]
    check(header and "idle" in header[0] and "MainThread" in header[0],
          "main thread header: %r" % header)
    lines = out.splitlines()
    at = lines.index(want)
    check(lines[at + 1].startswith("    <module> (%s:" % script), "caller after waiter: %r"
          % lines[at:at + 2])
    return header[0]


NON_ASCII = '''\
import sys
import time


class Ünïcødé:
    def método_ñ(self, seconds):
        print("ready", flush=True)
        end = time.perf_counter() + seconds
        x = 0
        while time.perf_counter() < end:
            for i in range(1000):
                x += i % 7
        return x


def función_日本(seconds):
    return Ünïcødé().método_ñ(seconds)


función_日本(float(sys.argv[1]))
'''


def test_record_non_ascii_names(env):
    script = env.write("prøgrám_日本/módulo_ü.py", NON_ASCII)
    folded_out = os.path.join(env.tmp, "ü.folded")
    json_out = os.path.join(env.tmp, "ü.json")
    proc = env.run_sonde(["record", "-o", folded_out, "--", env.python, script, "0.6"])
    sonde_ok(proc, "record -o .folded")
    with open(folded_out, encoding="utf-8") as f:
        stacks = parse_folded(f.read())
    qual = "Ünïcødé.método_ñ" if env.version[:2] >= (3, 11) else "método_ñ"
    share = folded_share(stacks, lambda func, file, line: func == qual and file == script)
    # Truth: the program runs método_ñ, called from función_日本, all along
    # but for its start (START_ALLOWANCE); the defect: a name mangled (0 %).
    n = sum(c for _, c in stacks)
    _power_kind("non-ASCII names", n, START_ALLOWANCE, 100.0)
    accuracy.check(share_at_least("%s (%s)" % (qual, script), share, n, 100, START_ALLOWANCE))
    accuracy.check(share_at_least("función_日本", folded_share(
        stacks, lambda func, file, line: func == "función_日本"), n, 100, START_ALLOWANCE))
    proc = env.run_sonde(["record", "-o", json_out, "--", env.python, script, "0.6"])
    sonde_ok(proc, "record -o .json")
    prof = load_json(json_out)
    check(script in prof["files"], "file %s not in %r" % (script, list(prof["files"])))
    names = [f["line"] for f in prof["files"][script]["functions"]]
    check(qual in names, "%s not among %r" % (qual, names))
    return "%s %.1f%%" % (qual, share)


def test_record_subprocesses(env):
    out = os.path.join(env.tmp, "children.folded")
    proc = env.run_sonde(["record", "--subprocesses", "--threads", "-o", out, "--", env.python,
                          program("spawner.py"), "1.0"])
    sonde_ok(proc, "record --subprocesses")
    with open(out, encoding="utf-8") as f:
        stacks = parse_folded(f.read())
    hot = folded_share(stacks, lambda func, file, line: func == "hot" and file.endswith("hot.py"))
    roots = {frames[0] for frames, _ in stacks}
    check(all(r.startswith("process ") for r in roots), "thread roots: %r" % roots)
    # Truth: the parent starts the child and waits (not running: not kept),
    # so the child's hot() holds the samples but for both interpreters'
    # start-up and the child's import (SPAWN_ALLOWANCE); the defect: the
    # child not followed (0 %).
    n = sum(c for _, c in stacks)
    _power_kind("record --subprocesses", n, SPAWN_ALLOWANCE, 100.0)
    return accuracy.check(share_at_least("the child's hot()", hot, n, 100, SPAWN_ALLOWANCE))


def test_attach_gil_only(env):
    script = os.path.join(os.path.dirname(PROGRAMS_DIR), "threads.py")
    out = os.path.join(env.tmp, "gil.folded")
    proc = env.run_sonde(["record", "--gil", "-o", out, "--", env.python, script, "0.8"])
    sonde_ok(proc, "record --gil")
    with open(out, encoding="utf-8") as f:
        stacks = parse_folded(f.read())
    # While the workers run (start-up, when the main thread holds the GIL
    # building its 32 MB blob, takes long on a loaded machine: left out).
    running = [(frames, n) for frames, n in stacks
               if any(frame_parts(fr) and frame_parts(fr)[0] in ("run", "Thread.run")
                      for fr in frames)]
    n = sum(n for _, n in running)
    # truth: the Python worker holds the GIL but for the hashing worker's
    # moments between hashes; the defect: --gil ignored (both running
    # threads sampled: the Python worker half the samples)
    _power_kind("--gil", n, GIL_ALLOWANCE, 50.0)
    py = folded_share(running, lambda func, file, line: func == "python_worker")
    return accuracy.check(share_at_least("with --gil the Python worker", py, n, 100,
                                         GIL_ALLOWANCE))


PROGRAMS_DIR = os.path.dirname(program("hot.py"))


def test_record_exit_status(env):
    proc = env.run_sonde(["record", "-o", os.path.join(env.tmp, "x.folded"), "--", env.python,
                          "-c", "import sys, time; time.sleep(0.2); sys.exit(3)"])
    check(proc.returncode == 3, "exit %d, stderr %s" % (proc.returncode, proc.stderr))


def test_target_exits_mid_recording(env):
    out = os.path.join(env.tmp, "short.folded")
    with Target(env, program("hot.py"), ["0.6"]) as target:
        t0 = time.time()
        proc = env.run_sonde(["attach", str(target.pid), "-d", "20", "-o", out])
        took = time.time() - t0
    sonde_ok(proc, "attach to a process that exits")
    check(took < 5, "attach kept going %.1f s after the target exited" % took)
    check("exited" in proc.stderr, "no word of the exit: %r" % proc.stderr)
    with open(out, encoding="utf-8") as f:
        stacks = parse_folded(f.read())
    share = folded_share(stacks, lambda func, file, line: func == "hot")
    # Truth: hot() runs from start to exit; the defect: what was sampled
    # lost or garbled at the target's exit (0 %).
    n = sum(c for _, c in stacks)
    _power_kind("attach to a process that exits", n, START_ALLOWANCE, 100.0)
    return "kept %d samples; %s" % (n, accuracy.check(share_at_least(
        "hot()", share, n, 100, START_ALLOWANCE)))


def test_ctrl_c_writes_output(env):
    out = os.path.join(env.tmp, "interrupted.svg")
    with Target(env, program("hot.py")) as target:
        sonde = subprocess.Popen([env.sonde, "attach", str(target.pid), "-o", out],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.8)
        sonde.send_signal(signal.SIGINT)
        try:
            _, err = sonde.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            sonde.kill()
            raise AssertionError("sonde attach did not stop on SIGINT")
    check(sonde.returncode == 0, "exit %d after SIGINT: %s" % (sonde.returncode, err))
    check(os.path.exists(out), "no output after SIGINT: %s" % err)
    with open(out, encoding="utf-8") as f:
        check("hot (" in f.read(), "hot() missing from the flame graph")


def _share(line, key):
    total = line["n_cpu_percent_python"] + line["n_cpu_percent_c"] + line["n_sys_percent"]
    return 100 * line[key] / total if total else 0.0


def test_record_python_native_system(env):
    """The line report of a recording splits time as `sonde run` does: a
    pure-Python line is Python time, a line in one long C call (sorted()) is
    native, lines blocked in sleep and in a pipe read are system time."""
    programs = os.path.join(os.path.dirname(PROGRAMS_DIR))
    notes = []
    for name, marks in (("python_native.py", (("pure", "n_cpu_percent_python"),
                                              ("native", "n_cpu_percent_c"))),
                        ("blocking.py", (("sleep", "n_sys_percent"), ("pipe", "n_sys_percent")))):
        script = os.path.join(programs, name)
        out = os.path.join(env.tmp, name + ".json")
        proc = env.run_sonde(["record", "-o", out, "--", env.python, script, "0.8"])
        sonde_ok(proc, "record " + name)
        prof = load_json(out)
        lines = {l["lineno"]: l for l in prof["files"][script]["lines"]}
        for mark, key in marks:
            line = lines.get(marked_lines(script)[mark])
            check(line, "%s line missing: %r" % (mark, sorted(lines)))
            share = _share(line, key)
            # truth: the line is all of its kind, by construction
            _power_kind("%s line" % mark, line["n_samples"])
            notes.append(accuracy.check(share_at_least("%s line %s" % (mark, key), share,
                                                       line["n_samples"], 100, ATTACH_ALLOWANCE)))
    return ", ".join(notes)


REPLACED = '''\
import sys
import time


def spin_here(seconds):
    # said from inside: a dump right after it finds this frame (said before
    # the call, a dump under load found <module> still on the call's line)
    print("ready", flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:  # @spin
        pass


spin_here(30)
'''

FIND_LIBPYTHON = '''\
import os, sys, sysconfig
lib = sysconfig.get_config_var("LDLIBRARY") or ""
if sysconfig.get_config_var("Py_ENABLE_SHARED") and lib.endswith(".so") or ".so." in lib:
    for d in (sysconfig.get_config_var("LIBDIR"), os.path.join(sys.base_prefix, "lib")):
        for name in (sysconfig.get_config_var("INSTSONAME") or "", lib):
            if d and name and os.path.exists(os.path.join(d, name)):
                print(os.path.realpath(os.path.join(d, name)), os.path.basename(name))
                raise SystemExit
print("-")
'''


def test_attach_replaced_interpreter(env):
    """A Python upgraded under a running service: the executable (and a
    shared libpython) the process runs were deleted or replaced since it
    started, so their paths in /proc/PID/maps end in " (deleted)". dump
    and attach still read the process, through the mapped files."""
    import shutil
    script = env.write("replaced.py", REPLACED)
    found = env.run_python(["-c", FIND_LIBPYTHON])
    check(found.returncode == 0, found.stderr)
    prefix = env.run_python(["-c", "import sys; print(sys.base_prefix)"]).stdout.strip()
    real_exe = env.run_python(["-c", "import sys, os; print(os.path.realpath(sys.executable))"]).stdout.strip()
    copy_dir = os.path.join(env.tmp, "old-python")
    os.makedirs(copy_dir, exist_ok=True)
    exe = os.path.join(copy_dir, "python-old")
    shutil.copy2(real_exe, exe)
    run_env = dict(env.base_env(), PYTHONHOME=prefix)
    copies = [exe]
    if found.stdout.strip() != "-":
        lib, soname = found.stdout.split()
        lib_copy = os.path.join(copy_dir, soname)
        shutil.copy2(lib, lib_copy)
        copies.append(lib_copy)
        # a preloaded object of the same soname satisfies the executable's
        # need, whatever its run path says
        run_env["LD_PRELOAD"] = lib_copy
    proc = subprocess.Popen([exe, script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=env.tmp, env=run_env)
    try:
        ready = proc.stdout.readline()
        check(ready.strip() == b"ready", "the copied interpreter did not start: %r %r"
              % (ready, proc.stderr.read(2000) if proc.poll() is not None else b""))
        for path in copies:
            os.unlink(path)
        with open("/proc/%d/maps" % proc.pid) as f:
            maps = f.read()
        check(all(p + " (deleted)" in maps for p in copies), "not all copies show as deleted")
        dump = env.run_sonde(["dump", str(proc.pid)])
        sonde_ok(dump, "dump")
        check("    spin_here (%s:" % script in dump.stdout, "no spin_here frame:\n%s" % dump.stdout)
        out = os.path.join(env.tmp, "replaced.json")
        att = env.run_sonde(["attach", str(proc.pid), "--duration", "0.5", "-o", out])
        sonde_ok(att, "attach")
        lines = {l["lineno"]: l for e in load_json(out)["files"].values() for l in e["lines"]}
        check(marked_lines(script)["spin"] in lines, "the spinning line is missing: %r" % sorted(lines))
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    return "%d file(s) deleted under the running process" % len(copies)


# ---- Python or native under attach (issue #12) -----------------------------------------

OPERATORS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "programs",
                         "operators.py")


def _busy_conditions(env):
    """("unpinned", None), and ("busy", cpu) with a second CPU to keep busy,
    the loaded run on the oldest interpreter, Debian's and the newest only
    (CI time, as test_cpu_accuracy's repeated runs)."""
    cpus = sorted(os.sched_getaffinity(0))
    loaded_here = loaded_runs_here(env)
    return [("unpinned", None)] + ([("busy", cpus[-1])] if len(cpus) > 1 and loaded_here else [])


def _record(env, script, args, busy_cpu):
    """`sonde record` of script ARGS (each marked line runs a given time of
    its thread's CPU time, measured by the program itself), with a busy
    process on busy_cpu (None: none): the report's lines of script by number,
    and what the program printed."""
    out = os.path.join(env.tmp, "record-%s.json" % os.path.basename(script))
    busy = None
    if busy_cpu is not None:
        busy = busy_loop(busy_cpu)
    try:
        proc = env.run_sonde(["record", "-o", out, "--", env.python, script] + [str(a) for a in args])
    finally:
        if busy:
            busy.kill()
            busy.wait()
    sonde_ok(proc, "record %s" % os.path.basename(script))
    prof = load_json(out)
    return {line["lineno"]: line for line in prof["files"][script]["lines"]}, proc.stdout


def test_record_operator_lines_native(env):
    """Under `sonde record`, a line whose time is C code reached by an
    operator (big-integer x * y: all of its thread time is in CPython's
    multiplication, the truth) is >= 90 % native, and within 5 points of the
    same work as a call (operator.mul)."""
    marks = marked_lines(OPERATORS)
    notes = []
    for cond, busy_cpu in _busy_conditions(env):
        lines, _ = _record(env, OPERATORS, ["bigint", 2.0], busy_cpu)
        op, call = lines.get(marks["op_mul"]), lines.get(marks["call_mul"])
        check(op and call, "[%s] operator lines missing: %r" % (cond, sorted(lines)))
        op_n, call_n = _share(op, "n_cpu_percent_c"), _share(call, "n_cpu_percent_c")
        # truth: both lines' thread time is all C, by construction (the two
        # forms run interleaved: tests/programs/operators.py); the
        # difference's defect: either form read a KIND_DEFECT off
        _power_kind("[%s] x * y" % cond, op["n_samples"])
        need_samples("[%s] x * y and operator.mul" % cond, min(op["n_samples"], call["n_samples"]),
                     samples_to_catch_difference(1 - KIND_DEFECT / 100.0, 1.0,
                                                 ATTACH_ALLOWANCE / 100.0))
        notes.append(accuracy.check(share_at_least("[%s] x * y native" % cond, op_n,
                                                   op["n_samples"], 100, ATTACH_ALLOWANCE)))
        notes.append(accuracy.check(shares_close("[%s] x * y vs operator.mul native" % cond, op_n,
                                                 op["n_samples"], call_n, call["n_samples"],
                                                 ATTACH_ALLOWANCE)))
    return "; ".join(notes)


def test_record_pure_python_loops(env):
    """Under `sonde record`, pure-Python loop lines (all of their thread time
    is bytecode, the truth) stay >= 95 % Python: an arithmetic loop and a
    two-instruction loop (`for _ in steps: pass`, where a second look often
    lands on the same instruction by chance)."""
    marks = marked_lines(OPERATORS)
    notes = []
    for cond, busy_cpu in _busy_conditions(env):
        lines, _ = _record(env, OPERATORS, ["loops", 2.0], busy_cpu)
        shares = []
        for mark in ("arith", "two"):
            line = lines.get(marks[mark])
            check(line, "[%s] %s line missing: %r" % (cond, mark, sorted(lines)))
            py = _share(line, "n_cpu_percent_python")
            # truth: the loop is all bytecode, by construction
            _power_kind("[%s] %s line" % (cond, mark), line["n_samples"])
            shares.append(accuracy.check(share_at_least("[%s] %s Python" % (cond, mark), py,
                                                        line["n_samples"], 100, ATTACH_ALLOWANCE)))
        notes.append("; ".join(shares))
    return "; ".join(notes)


# ---- a C call that releases the GIL (issue #25, item 5) ---------------------------------

GIL_RELEASE = program("gil_release.py")
# attach's sampling of each case: 4 s at 100 Hz, about 200 ticks on each line
GIL_RELEASE_SECONDS = "4"


def _spans_truth(path, start, end):
    """The native line's share of the wall time of the turns (gil_release.py)
    inside [start, end], and the mean CPU time of its calls there."""
    wall = {"native": 0.0, "python": 0.0}
    calls = cpu = 0
    with open(path) as f:
        for line in f:
            if len(line.split()) != 5:
                continue  # the turn being written when the target was killed
            kind, t0, t1, n, used = line.split()
            t0, t1 = float(t0), float(t1)
            inside = max(0.0, min(t1, end) - max(t0, start))
            wall[kind] += inside
            if kind == "native" and inside > 0:
                calls += int(n)
                cpu += float(used)
    total = wall["native"] + wall["python"]
    check(total > 0, "no turn of gil_release.py inside the window %.3f-%.3f" % (start, end))
    return 100 * wall["native"] / total, cpu / calls if calls else 0.0


def _gil_release_case(env, mode, busy_cpu):
    """Attaches to gil_release.py MODE (with a busy process on busy_cpu, or
    none): the notes of its checks."""
    spans = os.path.join(env.tmp, "spans-%s-%s.txt" % (mode, busy_cpu))
    out = os.path.join(env.tmp, "gil-%s-%s.json" % (mode, busy_cpu))
    busy = None
    with Target(env, GIL_RELEASE, [mode, 60, spans]) as target:
        if busy_cpu is not None:
            busy = busy_loop(busy_cpu)
        try:
            proc = env.run_sonde(["attach", str(target.pid), "-d", GIL_RELEASE_SECONDS, "-o", out])
            ended = time.monotonic()  # the target's perf_counter: the same clock
        finally:
            if busy:
                busy.kill()
                busy.wait()
    sonde_ok(proc, "attach gil_release.py %s" % mode)
    prof = load_json(out)
    truth, call_cpu = _spans_truth(spans, ended - prof["elapsed_time_sec"], ended)
    # the shape asked for: short calls well under a tick, long ones of tens of ms
    check(call_cpu < 0.0004 if mode == "short" else call_cpu > 0.01,
          "%s calls took %.2f ms of CPU each" % (mode, 1000 * call_cpu))
    marks = marked_lines(GIL_RELEASE)
    script = os.path.realpath(GIL_RELEASE)
    files = {os.path.realpath(f): e for f, e in prof["files"].items()}
    check(script in files, "gil_release.py missing: %r" % list(prof["files"]))
    lines = {l["lineno"]: l for l in files[script]["lines"]}
    native, python = lines.get(marks["native"]), lines.get(marks["python"])
    check(native and python, "marked lines missing: %r" % sorted(lines))
    cond = "%s, %s calls of %.2f ms" % ("busy" if busy_cpu is not None else "unpinned", mode,
                                        1000 * call_cpu)

    def total(line):
        return line["n_cpu_percent_python"] + line["n_cpu_percent_c"] + line["n_sys_percent"]

    # truth: the hashing line's time is C code that released the GIL, the
    # other line's bytecode, by construction; the defect: the hashing line
    # read as Python (issue #25: 0 % native on 3.11, 3.12 and 3.15; this
    # shape read 50-100 % here before the rule read the GIL)
    _power_kind("[%s] hashing line" % cond, native["n_samples"])
    _power_kind("[%s] Python line" % cond, python["n_samples"])
    notes = [accuracy.check(share_at_least("[%s] hashing line native" % cond,
                                           _share(native, "n_cpu_percent_c"),
                                           native["n_samples"], 100, ATTACH_ALLOWANCE)),
             accuracy.check(share_at_least("[%s] Python line Python" % cond,
                                           _share(python, "n_cpu_percent_python"),
                                           python["n_samples"], 100, ATTACH_ALLOWANCE))]
    # truth: the hashing turns' share of the window's wall time (the
    # program's clock); the defect: the time off the GIL not charged, or
    # charged elsewhere (a quarter of the program's time)
    n_all = sum(l["n_samples"] for l in lines.values())
    file_total = sum(total(l) for l in lines.values())
    share = 100 * total(native) / file_total if file_total else 0.0
    need_samples("[%s] hashing turns" % cond, n_all,
                 samples_to_catch(max(0.0, truth / 100 - 0.25), truth / 100, CLOCK_ALLOWANCE / 100))
    notes.append(accuracy.check(share_near("[%s] hashing line's share of the time" % cond, share,
                                           n_all, truth, CLOCK_ALLOWANCE)))
    return "; ".join(notes)


def test_attach_gil_releasing_call(env):
    """Under `sonde attach`, a line whose time is one C call that releases
    the GIL (hashlib.sha256 of a buffer) is native, whether its calls are
    short (about 0.2 ms of CPU, many per tick) or long (about 30 ms), and
    the pure-Python line it takes turns with stays Python; the hashing
    line's share of the time is the program's own measure."""
    notes = []
    for cond, busy_cpu in _busy_conditions(env):
        for mode in ("short", "long"):
            notes.append(_gil_release_case(env, mode, busy_cpu))
    return "; ".join(notes)
