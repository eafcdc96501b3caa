"""CPU attribution against ground truth the tests measure themselves.

Tolerances (stated by issue #2): function-bias shares within 3 points of the
program's own perf_counter measurement; a pure-Python line >= 90 % Python;
a line in one long C call >= 90 % native; two workers >= 90 % of the time,
the main thread's join() <= 5 %; sleep and pipe-read lines >= 90 % system.

Issue #12 adds, each in three conditions (CONDITIONS: unpinned; the program
on one CPU and the sampler thread on another, through the test-only
SONDE_TEST_SAMPLER_CPU, which exposes racing stack reads; the second CPU kept
busy by a process the test starts and kills): operator lines (big-integer
x * y; with numpy a @ b, a * b + a, arr[idx]) >= 90 % native and within 5
points of their call-form twins; pure-Python loops (arithmetic, two
instructions, allocation that keeps the GC busy) >= 95 % Python; a json loop
and a generator pipeline with <= 1 % unattributed time in each run (10 runs
pinned on the oldest, Debian's and the newest interpreter) and each
stage's share within 5 points of its time.thread_time measurement, with
--stacks reaching the root through every generator frame; the thread and
system-time tests under the busy condition too. The busy condition of the
operator and pure-loop tests, and the json repeats, run on the oldest
interpreter, Debian's and the newest only (support.loaded_runs_here).

Issue #32: every share above is an estimate from a line's samples, so each
assertion goes through tests/accuracy.py: it states the truth (measured by
the program, or the line's kind by construction), the samples n it rests on
(the lines' n_samples; for a function's or a stage's share the sum over its
lines), a systematic allowance (the named constants below, each with its
reason) and fails only when the Wilson interval at the suite's corrected
confidence lies wholly beyond truth +- allowance. The fixed tolerances
above are replaced by those; where the interval would be too wide to catch
the defect a test was written for, the test samples faster (--interval)
and checks its power first (accuracy.need_samples). A test's figures give
each estimate, its n and its interval.
"""
import contextlib
import json
import os
import subprocess
import sys

import accuracy
from accuracy import (need_samples, samples_to_catch, samples_to_catch_difference, share_at_least,
                      share_at_most, share_near, shares_close)
from support import Skip, busy_loop, check, file_entry, lines_by_no, line_total, loaded_runs_here, marked_lines

VERSIONS = "all: CPU attribution is the in-process sampler's frame walk and the native rule"
ALONE = ("CPU shares against the program's own clocks, with busy threads and loaded runs of its "
         "own: never beside another accuracy test (tests/run.py, ALONE_LOCK)")

# tests/run.py --sanitize skips this module: it measures CPU attribution
# against the program's own clocks, for about 5 minutes under ASan on one
# interpreter, and ASan's slower sampler changes what it measures.
NO_SANITIZER = "CPU-time accuracy (timing), minutes under ASan"

# Systematic allowances (percentage points), each the most sonde may be off
# by design, beside the statistical interval:
# - a line that is all one kind (pure bytecode, one long C call, a blocked
#   system call): the native rule's per-sample misclassification (12 looks
#   leave < 0.1 % in a two-instruction loop; a VM stall that survives the
#   confirmation, about 1 %), and the loop header's or the call's own
#   bytecode on the line (well under 1 %)
RULE_ALLOWANCE = 3.0
# - a blocked line's system share: the moments it runs on CPU around the
#   system call (wake-up, the read's copy)
SYSTEM_ALLOWANCE = 3.0
# - a share measured against the program's own clock (function bias,
#   stages, the sleep/pipe split): the edges of its timed spans against
#   the ticks (one tick each side), and set-up outside the timed calls
CLOCK_ALLOWANCE = 2.0
# - the two workers' share of a threaded run: start-up (the 32 MB blob,
#   thread starts) and the loop headers outside the marked lines
WORKERS_ALLOWANCE = 5.0
# - a worker thread's own kind: GIL hand-offs (the Python worker in
#   take_gil is C time on its line; the hashing worker's bytecode between
#   hashes)
WORKER_KIND_ALLOWANCE = 10.0
# - the main thread's join(): a waiting thread costs nothing; its last
#   tick after the workers end
JOIN_ALLOWANCE = 2.0
# - unattributed time of a --virtual-time run: the first and last ticks
#   of the interpreter's start-up and shutdown (2 of ~1000: 0.2 %)
UNATTRIBUTED_ALLOWANCE = 0.5

# Defects the tests were written for, as the share they would read; each
# test checks that its samples can tell that from truth - allowance.
# A native rule with too few looks (1 look reads a two-instruction loop
# about 50 % native, 2 looks about 25 %), or the pre-#12 rule (an operator
# line read as Python): a line of one kind read 25 points off.
RULE_DEFECT = 25.0
# Time misattributed between functions or stages (charged to a caller,
# lost in a callee or a generator, per-call overhead): 10 points.
SHARE_DEFECT = 10.0
# Sampling interval for the function, stage and sleep/pipe shares: 2 ms, five times
# the default rate, so that a run's ~1000 samples can tell a SHARE_DEFECT
# (samples_to_catch: 735-929 at 25-75 %).
FAST_INTERVAL = "0.002"
# Sampling interval of the big-integer operator lines: 5 ms, twice the
# default rate, so that each form's 0.9 s (about 90 samples at the
# default) gives the ~180 that the twins' difference needs to tell one
# form read a RULE_DEFECT off (samples_to_catch_difference: 114 a side).
TWINS_INTERVAL = "0.005"
# Sampling interval of the threads test: 5 ms, so that each worker's line
# has the 91 samples a worker's kind needs to tell a RULE_DEFECT with its
# WORKER_KIND_ALLOWANCE (the Python worker's line had 77 at the default
# 10 ms in a loaded run: it waits for the GIL beside the hashing worker).
THREADS_INTERVAL = "0.005"

PROGRAMS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "programs")


def _program(name):
    return os.path.join(PROGRAMS, name)


def _func_entry(prof, path, name):
    for f in file_entry(prof, path)["functions"]:
        if f["line"] == name or f["line"].endswith("." + name):
            return f
    return None


def _func_total(prof, path, name):
    f = _func_entry(prof, path, name)
    return line_total(f) if f else 0.0


def _func_samples(prof, path, names):
    return sum((_func_entry(prof, path, n) or {}).get("n_samples", 0) for n in names)


def _n(line):
    return line.get("n_samples", 0) if line else 0


def _toward_middle(truth_pct, by_pct):
    """The share (0..1) a defect of by_pct points moves truth_pct to, toward
    50 % (where a proportion is least certain: the harder case)."""
    t = truth_pct / 100.0
    return t + by_pct / 100.0 if t < 0.5 else t - by_pct / 100.0


def _power_share(what, n, truth_pct, allowance_pct):
    """Checks that n samples can catch a SHARE_DEFECT from truth_pct."""
    need_samples(what, n, samples_to_catch(_toward_middle(truth_pct, SHARE_DEFECT),
                                           truth_pct / 100.0, allowance_pct / 100.0))


def _power_kind(what, n, allowance=RULE_ALLOWANCE):
    """Checks that n samples of a line of one kind can catch a RULE_DEFECT."""
    need_samples(what, n, samples_to_catch(1 - RULE_DEFECT / 100.0, 1.0, allowance / 100.0))


def _power_twins(what, n_op, n_call):
    """Checks that two lines of one kind (an operator and its call form)
    have the samples, each, to tell one of them read a RULE_DEFECT off
    from the other (shares_close's Newcombe interval)."""
    need_samples(what, min(n_op, n_call), samples_to_catch_difference(
        1 - RULE_DEFECT / 100.0, 1.0, RULE_ALLOWANCE / 100.0))


def test_function_bias(env):
    return _function_bias(env, {})


def _function_bias(env, kw):
    script = _program("function_bias.py")
    cal = env.run_python([script, "calibrate"])
    check(cal.returncode == 0, cal.stderr)
    rates = json.loads(cal.stdout)
    results = []
    for target in (0.25, 0.5, 0.75):
        # The run's length comes from the calibration's rates, and this
        # machine's speed changes from one moment to the next (one run had
        # 793 samples of the ~1200 planned): a run with fewer samples than
        # the bound needs is made again, longer by the samples missing, at
        # most twice.
        seconds = 3.0
        for attempt in range(3):
            n_calling = int(rates["calling"] * seconds * target)
            n_inlined = int(rates["inlined"] * seconds * (1 - target))
            proc, prof = env.profile(script, [str(n_calling), str(n_inlined)],
                                     options=["--interval", FAST_INTERVAL], **kw)
            check(proc.returncode == 0, proc.stderr[-2000:])
            truth = json.loads(proc.stdout)
            true_share = 100 * truth["calling"] / (truth["calling"] + truth["inlined"])
            n = _func_samples(prof, script, ("calling", "helper", "inlined"))
            needed = samples_to_catch(_toward_middle(true_share, SHARE_DEFECT),
                                      true_share / 100.0, CLOCK_ALLOWANCE / 100.0)
            if n >= needed:
                break
            seconds *= 1.2 * needed / max(n, 1)
        calling = _func_total(prof, script, "calling") + _func_total(prof, script, "helper")
        inlined = _func_total(prof, script, "inlined")
        check(calling + inlined > 0, "no samples in either function")
        reported = 100 * calling / (calling + inlined)
        _power_share("function bias at %d%%" % (100 * target), n, true_share, CLOCK_ALLOWANCE)
        results.append(accuracy.check(share_near("calling variant", reported, n, true_share,
                                                 CLOCK_ALLOWANCE))
                       + ("" if attempt == 0 else " (run again, %.1f s)" % seconds))
    return "; ".join(results)


def _share(line, key):
    total = line_total(line)
    return 100 * line[key] / total if total else 0.0


def test_python_vs_native(env):
    script = _program("python_native.py")
    proc, prof = env.profile(script, ["2.0"])
    check(proc.returncode == 0, proc.stderr[-2000:])
    lines = lines_by_no(prof, script)
    marks = marked_lines(script)
    pure, native = lines.get(marks["pure"]), lines.get(marks["native"])
    check(pure and native, "loop or sorted line missing: %s" % sorted(lines))
    py = _share(pure, "n_cpu_percent_python")
    nat = _share(native, "n_cpu_percent_c")
    _power_kind("pure-Python line", _n(pure))
    _power_kind("sorted() line", _n(native))
    # truth: the loop line is all bytecode, the sorted() line all C, by construction
    return "; ".join([
        accuracy.check(share_at_least("pure-Python line Python", py, _n(pure), 100, RULE_ALLOWANCE)),
        accuracy.check(share_at_least("sorted() line native", nat, _n(native), 100, RULE_ALLOWANCE))])


def test_threads(env):
    return _threads(env, {})


def _threads(env, kw):
    script = _program("threads.py")
    marks = marked_lines(script)
    # a loaded machine gives a worker fewer samples (it waits for a CPU or
    # the GIL): a run whose worker lines have fewer than their kind's bound
    # needs is made again, longer by the samples missing, at most twice
    # (as _function_bias)
    needed = samples_to_catch(1 - RULE_DEFECT / 100.0, 1.0, WORKER_KIND_ALLOWANCE / 100.0)
    seconds = 2.0
    for attempt in range(3):
        proc, prof = env.profile(script, [str(seconds)],
                                 options=["--interval", THREADS_INTERVAL], **kw)
        check(proc.returncode == 0, proc.stderr[-2000:])
        lines = lines_by_no(prof, script)
        n = min(_n(lines.get(marks["python_worker"])), _n(lines.get(marks["native_worker"])))
        if n >= needed:
            break
        seconds *= 1.2 * needed / max(n, 1)

    def near(mark):  # the marked line or the loop header right above it
        return sum(line_total(lines[n]) for n in (marks[mark] - 1, marks[mark]) if n in lines)

    # Shares of the file's time (its lines hold all of it): n is the sum of
    # their samples. Truth by construction: the workers run the whole time,
    # the main thread waits in join(), which costs nothing.
    workers = near("python_worker") + near("native_worker")
    total = sum(line_total(l) for l in lines.values())
    n_all = sum(_n(l) for l in lines.values())
    workers_pct = 100 * workers / total if total else 0.0
    join = line_total(lines[marks["join"]]) if marks["join"] in lines else 0.0
    join_pct = 100 * join / total if total else 0.0
    check(total > 0, "no samples")
    # the defect: the waiting main thread charged as if it ran (a third of
    # the time: the workers' share 2/3, join()'s 1/3) or a worker's time lost
    need_samples("threads", n_all, samples_to_catch(2 / 3.0, 1.0, WORKERS_ALLOWANCE / 100.0))
    need_samples("join()", n_all, samples_to_catch(1 / 3.0, 0.0, JOIN_ALLOWANCE / 100.0))
    notes = [accuracy.check(share_at_least("workers", workers_pct, n_all, 100, WORKERS_ALLOWANCE)),
             accuracy.check(share_at_most("join()", join_pct, n_all, 0, JOIN_ALLOWANCE))]
    pw, nw = lines.get(marks["python_worker"]), lines.get(marks["native_worker"])
    check(pw and nw, "a worker line is missing: %s" % sorted(lines))
    # each worker's own kind: the defect a RULE_DEFECT (a rule that reads a
    # thread's kind from another thread's, the GIL hand-offs charged to
    # the wrong side)
    _power_kind("Python worker line", _n(pw), WORKER_KIND_ALLOWANCE)
    _power_kind("native worker line", _n(nw), WORKER_KIND_ALLOWANCE)
    notes.append(accuracy.check(share_at_least("Python worker line Python", _share(
        pw, "n_cpu_percent_python"), _n(pw), 100, WORKER_KIND_ALLOWANCE)))
    notes.append(accuracy.check(share_at_least("native worker line native", _share(
        nw, "n_cpu_percent_c"), _n(nw), 100, WORKER_KIND_ALLOWANCE)))
    return ", ".join(notes) + ("" if attempt == 0 else " (run again, %.1f s)" % seconds)


def test_blocking_is_system_time(env):
    return _blocking(env, {})


def _blocking(env, kw):
    script = _program("blocking.py")
    marks = marked_lines(script)
    # sampled every 2 ms: the sleep/pipe split needs ~1000 samples (below);
    # a loaded machine delays the sampler's ticks (748 of ~1200 in one run
    # on 3.8 with the second CPU busy), so a run with fewer samples than
    # the split's bound needs is made again, longer by the samples missing,
    # at most twice (as _function_bias)
    seconds = 1.2
    for attempt in range(3):
        proc, prof = env.profile(script, [str(seconds)], options=["--interval", FAST_INTERVAL],
                                 **kw)
        check(proc.returncode == 0, proc.stderr[-2000:])
        truth = json.loads(proc.stdout)
        lines = lines_by_no(prof, script)
        check(marks["sleep"] in lines and marks["pipe"] in lines,
              "sleep or pipe line missing: %s" % sorted(lines))
        n = _n(lines[marks["sleep"]]) + _n(lines[marks["pipe"]])
        t = truth["sleep"] / (truth["sleep"] + truth["pipe"])
        needed = samples_to_catch(_toward_middle(100 * t, SHARE_DEFECT), t,
                                  CLOCK_ALLOWANCE / 100.0)
        if n >= needed:
            break
        seconds *= 1.2 * needed / max(n, 1)
    notes = []
    for mark in ("sleep", "pipe"):
        line = lines.get(marks[mark])
        check(line, "%s line missing: %s" % (mark, sorted(lines)))
        sys_share = _share(line, "n_sys_percent")
        _power_kind("%s line" % mark, _n(line))
        # truth: the line is blocked in the kernel, by construction
        notes.append(accuracy.check(share_at_least(
            "%s line system" % mark, sys_share, _n(line), 100, SYSTEM_ALLOWANCE)))
    # The sleep line's share of the two lines' time against the program's
    # own perf_counter measurement of each (about half).
    sleep, pipe = lines[marks["sleep"]], lines[marks["pipe"]]
    both = line_total(sleep) + line_total(pipe)
    n = _n(sleep) + _n(pipe)
    measured = 100 * truth["sleep"] / (truth["sleep"] + truth["pipe"])
    _power_share("sleep/pipe split", n, measured, CLOCK_ALLOWANCE)
    notes.append(accuracy.check(share_near("sleep line of the two", 100 * line_total(sleep) / both,
                                           n, measured, CLOCK_ALLOWANCE))
                 + ("" if attempt == 0 else " (run again, %.1f s)" % seconds))
    return ", ".join(notes)


def test_virtual_time_has_no_system_time(env):
    script = _program("blocking.py")
    proc, prof = env.profile(script, ["0.6"], options=["--virtual-time"])
    check(proc.returncode == 0, proc.stderr[-2000:])
    for entry in prof["files"].values():
        for line in entry["lines"]:
            check(line["n_sys_percent"] == 0, "system time under --virtual-time: %r" % line)


# ---- issue #12: conditions -------------------------------------------------------------------

CONDITIONS = ("unpinned", "pinned", "busy")


def _cpus():
    return sorted(os.sched_getaffinity(0))


def _pin(cpu):
    return lambda: os.sched_setaffinity(0, {cpu})


@contextlib.contextmanager
def _condition(name, extra_env=None):
    """Yields the keywords that run a profile in condition `name`."""
    kw = {"env": dict(extra_env or {})}
    cpus = _cpus()
    if name != "unpinned" and len(cpus) < 2:
        raise Skip("condition %s needs two CPUs" % name)
    if name == "pinned":
        kw["preexec_fn"] = _pin(cpus[0])
        kw["env"]["SONDE_TEST_SAMPLER_CPU"] = str(cpus[1])
    busy = None
    if name == "busy":
        busy = busy_loop(cpus[-1])
    try:
        yield kw
    finally:
        if busy:
            busy.kill()
            busy.wait()


def _each_condition(run, conditions=CONDITIONS):
    """Runs run(condition name, keywords) in every condition; returns the
    notes joined (a condition that cannot run here is noted)."""
    notes = []
    for name in conditions:
        try:
            with _condition(name, getattr(run, "env", None)) as kw:
                notes.append("%s: %s" % (name, run(name, kw)))
        except Skip as why:
            notes.append("%s: skipped (%s)" % (name, why))
    return "; ".join(notes)


def _repeat_here(env):
    """The interpreters that repeat the json/generator runs: the oldest,
    Debian's and the newest (CI time; support.loaded_runs_here)."""
    return loaded_runs_here(env)


def _native(line):
    return _share(line, "n_cpu_percent_c")


def _operator_case(env, mode, pairs, seconds, extra_env=None, conditions=CONDITIONS, options=()):
    script = _program("operators.py")
    marks = marked_lines(script)

    def run(cond, kw):
        proc, prof = env.profile(script, [mode, str(seconds)], options=list(options), **kw)
        check(proc.returncode == 0, proc.stderr[-2000:])
        lines = lines_by_no(prof, script)
        notes = []
        for op, call in pairs:
            check(marks[op] in lines and marks[call] in lines, "%s/%s missing" % (op, call))
            op_line, call_line = lines[marks[op]], lines[marks[call]]
            op_n, call_n = _native(op_line), _native(call_line)
            _power_kind("[%s] %s" % (cond, op), _n(op_line))
            _power_twins("[%s] %s and %s" % (cond, op, call), _n(op_line), _n(call_line))
            # truth: all of either line's thread time is in C (the operator's
            # or the call's), by construction; the two forms run interleaved
            notes.append(accuracy.check(share_at_least(
                "[%s] %s native" % (cond, op), op_n, _n(op_line), 100, RULE_ALLOWANCE)))
            notes.append(accuracy.check(shares_close(
                "[%s] %s vs %s native" % (cond, op, call), op_n, _n(op_line), call_n,
                _n(call_line), RULE_ALLOWANCE)))
        return "; ".join(notes)
    run.env = extra_env
    return _each_condition(run, conditions)


def _conditions_here(env):
    """The busy (loaded) condition on the oldest interpreter, Debian's and
    the newest only (CI time: support.loaded_runs_here), as the repeats."""
    return CONDITIONS if loaded_runs_here(env) else tuple(c for c in CONDITIONS if c != "busy")


def test_operator_lines_native(env):
    return _operator_case(env, "bigint", [("op_mul", "call_mul")], 0.9,
                          conditions=_conditions_here(env), options=["--interval", TWINS_INTERVAL])


def test_numpy_operator_lines_native(env):
    # 2 s of thread time per line (about 200 samples): at 1.2 s one run in
    # the 3.15 chroot read np.take's line 92.8 % native beside arr[idx]'s
    # 99.0 % (pinned; 96-100 % in the runs around it), a burst of some nine
    # samples judged Python weighing 7 points of 120
    one_thread = {k: "1" for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    return _operator_case(env, "numpy", [("op_matmul", "call_matmul"), ("op_muladd", "call_muladd"),
                                         ("op_index", "call_index")], 2.0, one_thread)


test_numpy_operator_lines_native.requires = "numpy"


def test_pure_python_loops_stay_python(env):
    script = _program("operators.py")
    marks = marked_lines(script)

    def run(cond, kw):
        proc, prof = env.profile(script, ["pure", "0.7"], **kw)
        check(proc.returncode == 0, proc.stderr[-2000:])
        lines = lines_by_no(prof, script)
        notes = []
        for mark in ("arith", "two", "alloc"):
            line = lines.get(marks[mark])
            check(line, "[%s] %s line missing: %s" % (cond, mark, sorted(lines)))
            py = _share(line, "n_cpu_percent_python")
            _power_kind("[%s] %s line" % (cond, mark), _n(line))
            # truth: the loop is all bytecode, by construction
            notes.append(accuracy.check(share_at_least(
                "[%s] %s Python" % (cond, mark), py, _n(line), 100, RULE_ALLOWANCE)))
        return "; ".join(notes)
    return _each_condition(run, _conditions_here(env))


def _stage_total(prof, script, names):
    return sum(_func_total(prof, script, name) for name in names)


def test_json_and_generators_attributed(env):
    script = _program("pipeline.py")
    repeat = _repeat_here(env)

    def run(cond, kw):
        # Each run samples every 2 ms, 1.25 s of each stage (about 1250
        # samples, where a share near 50 % needs 929 to tell a 10-point
        # error: 1.0 s gave 988 in one run), so fewer runs repeat it: 3
        # pinned (10 before), 1 in the other conditions (2 before), more
        # samples in all (issue #32).
        runs = (3 if cond == "pinned" else 1) if repeat else 1
        notes = []
        for _ in range(runs):
            proc, prof = env.profile(script, ["1.25"], options=["--virtual-time", "--interval",
                                                               FAST_INTERVAL], **kw)
            check(proc.returncode == 0, proc.stderr[-2000:])
            truth = json.loads(proc.stdout)
            # unattributed: a share of all the run's samples; truth 0 (every
            # tick finds the script's frames), but for start-up and shutdown;
            # the defect: a stage's frames not found (json's C encoder, a
            # generator's frame), a SHARE_DEFECT of the run unattributed
            unattr = prof["unattributed_percent"]
            need_samples("[%s] unattributed" % cond, prof["n_samples"], samples_to_catch(
                SHARE_DEFECT / 100.0, 0.0, UNATTRIBUTED_ALLOWANCE / 100.0))
            unattr_note = accuracy.check(share_at_most(
                "[%s] unattributed" % cond, unattr, prof["n_samples"], 0, UNATTRIBUTED_ALLOWANCE))
            js = _stage_total(prof, script, ["json_stage"])
            stages = ["pipeline_stage", "source", "square", "keep"]
            pipe = _stage_total(prof, script, stages)
            check(js + pipe > 0, "[%s] no time in either stage" % cond)
            reported = 100 * js / (js + pipe)
            n = _func_samples(prof, script, ["json_stage"] + stages)
            measured = 100 * truth["json"] / (truth["json"] + truth["pipeline"])
            _power_share("[%s] stage shares" % cond, n, measured, CLOCK_ALLOWANCE)
            notes.append(accuracy.check(share_near("[%s] json stage" % cond, reported, n, measured,
                                                   CLOCK_ALLOWANCE)) + "; " + unattr_note)
        # Stacks through the generators reach the root.
        out = os.path.join(env.tmp, "pipeline-%s.folded" % cond)
        proc = env.run_sonde(["run", "-o", out, script, "0.5"], **kw)
        check(proc.returncode == 0, proc.stderr[-2000:])
        with open(out, encoding="utf-8") as f:
            stacks = [l.rsplit(" ", 1)[0].split(";") for l in f if l.strip()]
        gen = [st for st in stacks if any(fr.startswith(("source ", "square ", "keep ")) for fr in st)]
        check(gen, "[%s] no stack through the generators" % cond)
        cut = [st for st in gen if not (len(st) > 2 and st[1].startswith("<module> ")
                                        and st[2].startswith("pipeline_stage "))]
        check(not cut, "[%s] %d of %d generator stacks cut, e.g. %s"
              % (cond, len(cut), len(gen), ";".join(cut[0]) if cut else ""))
        return " | ".join(notes)
    return _each_condition(run)


def test_thread_and_system_time_under_load(env):
    """The earlier thread and system-time tests, with the second CPU kept
    busy. (Function bias under load is not here yet: on 3.8 it still missed
    by 4 to 7 points in this condition; see issue #12.)"""
    notes = []
    for name, run in (("threads", _threads), ("blocking", _blocking)):
        with _condition("busy") as kw:
            notes.append("%s: %s" % (name, run(env, kw)))
    return "; ".join(notes)


test_thread_and_system_time_under_load.versions = ("tiers: the loaded (busy-CPU) condition, which "
                                                   "the accuracy tests run on these three only "
                                                   "(support.loaded_runs_here)")
