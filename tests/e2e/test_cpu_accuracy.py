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
"""
import contextlib
import json
import os
import subprocess
import sys

from support import Skip, check, file_entry, lines_by_no, line_total, loaded_runs_here, marked_lines

# tests/run.py --sanitize skips this module: it measures CPU attribution
# against the program's own clocks, for about 5 minutes under ASan on one
# interpreter, and ASan's slower sampler changes what it measures.
NO_SANITIZER = "CPU-time accuracy (timing), minutes under ASan"

PROGRAMS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "programs")


def _program(name):
    return os.path.join(PROGRAMS, name)


def _func_total(prof, path, name):
    for f in file_entry(prof, path)["functions"]:
        if f["line"] == name or f["line"].endswith("." + name):
            return line_total(f)
    return 0.0


def test_function_bias(env):
    return _function_bias(env, {})


def _function_bias(env, kw):
    script = _program("function_bias.py")
    cal = env.run_python([script, "calibrate"])
    check(cal.returncode == 0, cal.stderr)
    rates = json.loads(cal.stdout)
    total_seconds = 2.4
    results = []
    for target in (0.25, 0.5, 0.75):
        n_calling = int(rates["calling"] * total_seconds * target)
        n_inlined = int(rates["inlined"] * total_seconds * (1 - target))
        proc, prof = env.profile(script, [str(n_calling), str(n_inlined)], **kw)
        check(proc.returncode == 0, proc.stderr[-2000:])
        truth = json.loads(proc.stdout)
        true_share = 100 * truth["calling"] / (truth["calling"] + truth["inlined"])
        calling = _func_total(prof, script, "calling") + _func_total(prof, script, "helper")
        inlined = _func_total(prof, script, "inlined")
        check(calling + inlined > 0, "no samples in either function")
        reported = 100 * calling / (calling + inlined)
        results.append("%.1f%% vs true %.1f%%" % (reported, true_share))
        check(abs(reported - true_share) <= 3.0,
              "calling variant reported %.1f%%, measured %.1f%%" % (reported, true_share))
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
    check(py >= 90, "pure-Python line only %.1f%% Python (%r)" % (py, pure))
    check(nat >= 90, "sorted() line only %.1f%% native (%r)" % (nat, native))
    return "pure line %.1f%% Python, sorted line %.1f%% native" % (py, nat)


def test_threads(env):
    return _threads(env, {})


def _threads(env, kw):
    script = _program("threads.py")
    proc, prof = env.profile(script, ["2.0"], **kw)
    check(proc.returncode == 0, proc.stderr[-2000:])
    lines = lines_by_no(prof, script)
    marks = marked_lines(script)

    def near(mark):  # the marked line or the loop header right above it
        return sum(line_total(lines[n]) for n in (marks[mark] - 1, marks[mark]) if n in lines)

    workers = near("python_worker") + near("native_worker")
    total = sum(line_total(l) for l in lines.values())
    join = line_total(lines[marks["join"]]) if marks["join"] in lines else 0.0
    check(total > 0, "no samples")
    check(workers >= 90, "workers hold %.1f%% of the time (lines: %r)" % (workers, lines))
    check(join <= 5, "main thread's join() holds %.1f%%" % join)
    pw, nw = lines.get(marks["python_worker"]), lines.get(marks["native_worker"])
    check(pw and _share(pw, "n_cpu_percent_python") >= 80, "Python worker line: %r" % pw)
    check(nw and _share(nw, "n_cpu_percent_c") >= 80, "native worker line: %r" % nw)
    return "workers %.1f%%, join %.1f%%" % (workers, join)


def test_blocking_is_system_time(env):
    return _blocking(env, {})


def _blocking(env, kw):
    script = _program("blocking.py")
    proc, prof = env.profile(script, ["1.2"], **kw)
    check(proc.returncode == 0, proc.stderr[-2000:])
    lines = lines_by_no(prof, script)
    marks = marked_lines(script)
    notes = []
    for mark in ("sleep", "pipe"):
        line = lines.get(marks[mark])
        check(line, "%s line missing: %s" % (mark, sorted(lines)))
        sys_share = _share(line, "n_sys_percent")
        check(sys_share >= 90, "%s line only %.1f%% system (%r)" % (mark, sys_share, line))
        notes.append("%s %.1f%% system" % (mark, sys_share))
    sleep_total = line_total(lines[marks["sleep"]])
    check(35 <= sleep_total <= 65, "sleep line holds %.1f%% of a run that sleeps half the time" % sleep_total)
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
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=_pin(cpus[-1]))
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


def _operator_case(env, mode, pairs, seconds, extra_env=None, conditions=CONDITIONS):
    script = _program("operators.py")
    marks = marked_lines(script)

    def run(cond, kw):
        proc, prof = env.profile(script, [mode, str(seconds)], **kw)
        check(proc.returncode == 0, proc.stderr[-2000:])
        lines = lines_by_no(prof, script)
        notes = []
        for op, call in pairs:
            check(marks[op] in lines and marks[call] in lines, "%s/%s missing" % (op, call))
            op_n, call_n = _native(lines[marks[op]]), _native(lines[marks[call]])
            notes.append("%s %.1f%% vs %s %.1f%% native" % (op, op_n, call, call_n))
            check(op_n >= 90, "[%s] %s only %.1f%% native (%r)" % (cond, op, op_n, lines[marks[op]]))
            check(abs(op_n - call_n) <= 5, "[%s] %s %.1f%% native, its call form %s %.1f%%"
                  % (cond, op, op_n, call, call_n))
        return ", ".join(notes)
    run.env = extra_env
    return _each_condition(run, conditions)


def _conditions_here(env):
    """The busy (loaded) condition on the oldest interpreter, Debian's and
    the newest only (CI time: support.loaded_runs_here), as the repeats."""
    return CONDITIONS if loaded_runs_here(env) else tuple(c for c in CONDITIONS if c != "busy")


def test_operator_lines_native(env):
    return _operator_case(env, "bigint", [("op_mul", "call_mul")], 0.9,
                          conditions=_conditions_here(env))


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
            notes.append("%s %.1f%%" % (mark, py))
            check(py >= 95, "[%s] %s line only %.1f%% Python (%r)" % (cond, mark, py, line))
        return "Python " + ", ".join(notes)
    return _each_condition(run, _conditions_here(env))


def _stage_total(prof, script, names):
    return sum(_func_total(prof, script, name) for name in names)


def test_json_and_generators_attributed(env):
    script = _program("pipeline.py")
    repeat = _repeat_here(env)

    def run(cond, kw):
        runs = (10 if cond == "pinned" else 2) if repeat else 1
        worst_unattr, worst_gap = 0.0, 0.0
        for _ in range(runs):
            proc, prof = env.profile(script, ["1.0"], options=["--virtual-time"], **kw)
            check(proc.returncode == 0, proc.stderr[-2000:])
            truth = json.loads(proc.stdout)
            unattr = prof["unattributed_percent"]
            check(unattr <= 1.0, "[%s] %.1f%% unattributed (partial %r)"
                  % (cond, unattr, prof.get("partial")))
            js = _stage_total(prof, script, ["json_stage"])
            pipe = _stage_total(prof, script, ["pipeline_stage", "source", "square", "keep"])
            check(js + pipe > 0, "[%s] no time in either stage" % cond)
            reported = 100 * js / (js + pipe)
            measured = 100 * truth["json"] / (truth["json"] + truth["pipeline"])
            check(abs(reported - measured) <= 5, "[%s] json stage %.1f%%, measured %.1f%%"
                  % (cond, reported, measured))
            worst_unattr = max(worst_unattr, unattr)
            worst_gap = max(worst_gap, abs(reported - measured))
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
        return "%d runs, unattributed <= %.1f%%, json share within %.1f points" % (
            runs, worst_unattr, worst_gap)
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
