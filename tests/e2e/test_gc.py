"""Time in garbage collection per line (`sonde run --gc`, src/ext/gc.c)
against the program's own measurements.

The program does known garbage-collection work: a line that makes
reference cycles, whose automatic collections the program times itself
through its own gc.callbacks entry (start/stop, thread_time); a line of
integer arithmetic, which allocates no container and collects nothing;
and a line that calls gc.collect() back to back over half a million
live objects (all of its time is collecting: thread_time around the loop),
while a second thread hashes in native code outside the GIL (none of its
time is a collection: the collections are the main thread's, and this is
what the sources' per-thread reading is for). Each figure goes through
tests/accuracy.py, with a named allowance and a power check first: sonde's
GC seconds of a line (its n_gc_percent of its time) against the truth,
which is exact but for the two ends of the line's span
(accuracy.seconds_near: each tick charges the thread's collections since
the previous one, read from its CPU clock, with its time, to where it is);
a line's GC share against 100 % or 0 % (Wilson, over its n_samples). Each
marked loop is one line, its length set from a rate the program measures
first. The runs sample CPU time only (--virtual-time), as the truth is CPU
time: on a loaded machine, time spent waiting for a CPU would be the
line's in wall-clock mode and not the program's thread_time.

The other tests: without --gc no report says anything about collections
(no column, no field, no "figures" entry); with it the terminal shows the
column and the run's line; the figure survives `sonde merge` (the JSON
loader), `sonde view`'s embedded JSON, sonde.start(gc=True), the hand-over
of a forked child's profile and the periods of `--period`.
"""
import glob
import json
import os

import accuracy
from accuracy import (need_samples, samples_to_catch, seconds_near, share_at_least,
                      share_at_most, ticks_to_catch)
from support import check, file_entry, line_total, lines_by_no, marked_lines

VERSIONS = ("all: when the interpreter collects (inside the allocation before 3.12, at the eval "
            "breaker since, with old-generation increments in 3.14) and its gc.callbacks calls")

INTERVAL = 0.002  # five times the default rate: ~750 samples a phase

# Systematic allowances, each the most sonde may be off by design, beside
# the two ends of a line's span (accuracy.seconds_near: a tick charges what
# the thread did since the previous one to where it is now, so each end is
# off by at most one tick's time, collections included):
# - a line's GC seconds against the program's own timing of its
#   collections: a late tick at the span's ends (half its excess goes to
#   the place before it, its share of collections with it), the program's
#   own gc.callbacks entry, whose time inside a collection it leaves out of
#   its truth (a few microseconds a collection of about a millisecond at
#   threshold 10000)
GC_SECONDS_ALLOWANCE = 0.05
# - the gc.collect() line's share: the loop's thread_time() and call
#   between collections of ~10-30 ms, and the ticks at its phase's ends
COLLECT_ALLOWANCE = 2.0
# - a line that collects nothing, after one that collects half its time:
#   the first tick on it carries the end of the previous phase
NO_GC_ALLOWANCE = 2.0
# - the hashing thread: none of its time is a collection, exactly
WORKER_ALLOWANCE = 1.0

# Defects the tests were written for, as what they would read:
# - a fifth of the collections' time lost, or charged to other lines or
#   threads
GC_DEFECT_RATIO = 0.8
# - a quarter of the gc.collect() line's collecting read as not collecting
#   (a reading taken as a tick finds the thread, which misses the
#   collections of a thread that waits for the GIL after each one)
COLLECT_DEFECT = 25.0
# - a line that collects nothing charged collections: 10 points
NO_GC_DEFECT = 10.0
# - the collections of the main thread charged to the hashing thread too
#   (a reading per tick, given to every thread charged in it): the main
#   thread collects all the while, so half its time at least
WORKER_DEFECT = 50.0

GC_WORK = """\
    import gc, hashlib, json, sys, threading, time

    gc_cpu = {}
    phase = {"name": "start"}
    started = []

    def watch(stage, info):  # the truth of automatic collections
        if stage == "start":
            started.append(time.thread_time())
        elif started:
            gc_cpu[phase["name"]] = gc_cpu.get(phase["name"], 0.0) + time.thread_time() - started.pop()

    # Each marked loop is one line (one unbroken span of the thread's
    # time), its length set by a rate the program measures first on an
    # unmarked copy of it.
    def churn_rate():
        c0 = time.thread_time()
        for _ in range(200000): a = []; a.append(a)
        return 200000 / (time.thread_time() - c0)

    def churn(n):
        c0 = time.thread_time()
        for _ in range(n): a = []; a.append(a)  # @churn
        return time.thread_time() - c0

    def compute_rate():
        c0, x = time.thread_time(), 1
        for i in range(200000): x = x * 3 % 1000003
        return 200000 / (time.thread_time() - c0)

    def compute(n):
        c0, x = time.thread_time(), 1
        for i in range(n): x = x * 3 % 1000003  # @compute
        return time.thread_time() - c0

    def hashing(blob, stop, out):
        c0 = time.thread_time()
        while not stop.is_set(): hashlib.sha256(blob).digest()  # @worker
        out["worker_cpu"] = time.thread_time() - c0

    def collect(sec):
        c0 = time.thread_time()
        end = c0 + sec
        while time.thread_time() < end: gc.collect()  # @collect
        return time.thread_time() - c0

    def main():
        churn_sec, compute_sec, collect_sec = map(float, sys.argv[1:4])
        keep = [[] for _ in range(500000)]  # what every full collection walks
        gc.collect()
        # collections of about a millisecond: the program's own callbacks
        # (its truth) stay a small part of them
        gc.set_threshold(10000, 10, 10)
        n_churn, n_compute = int(churn_rate() * churn_sec), int(compute_rate() * compute_sec)
        gc.callbacks.append(watch)
        phase["name"] = "churn"
        out = {"churn_cpu": churn(n_churn)}
        phase["name"] = "compute"
        out["compute_cpu"] = compute(n_compute)
        gc.callbacks.remove(watch)
        out["gc_cpu"] = gc_cpu
        # gc.collect() back to back while a thread hashes outside the GIL
        stop = threading.Event()
        worker = threading.Thread(target=hashing, args=(b"x" * (16 << 20), stop, out))
        worker.start()
        out["collect_cpu"] = collect(collect_sec)
        stop.set()
        worker.join()
        out["kept"] = len(keep)
        print(json.dumps(out))

    main()
    """


def _n(line):
    return line.get("n_samples", 0) if line else 0


def _line_sec(prof, line):
    return line_total(line) / 100.0 * prof["profiled_time_sec"]


def _gc_sec(prof, line):
    return _line_sec(prof, line) * line.get("n_gc_percent", 0) / 100.0


def _seconds(what, estimate, truth, interval):
    """A line's GC seconds against the program's own measurement, after
    checking that its span's ticks can tell a GC_DEFECT_RATIO from it;
    returns the note."""
    need_samples(what, round(truth / interval), ticks_to_catch(GC_DEFECT_RATIO,
                                                               GC_SECONDS_ALLOWANCE))
    return accuracy.check(seconds_near(what, estimate, truth, interval, GC_SECONDS_ALLOWANCE))


def _gc_fields(prof):
    """Every field about garbage collection, at the top and in the rows."""
    found = [k for k in prof if k.startswith("gc")]
    found += [f for f in prof.get("figures", []) if f.get("source") == "gc"]
    for entry in prof["files"].values():
        for row in entry["lines"] + entry["functions"]:
            found += [k for k in row if "gc" in k]
    return found


def test_gc_per_line(env):
    script = env.write("gc_work.py", GC_WORK)
    proc, prof = env.profile(script, ["1.5", "0.5", "1.5"],
                             options=["--gc", "--virtual-time", "--interval", str(INTERVAL)])
    check(proc.returncode == 0, proc.stderr[-2000:])
    truth = json.loads(proc.stdout)
    marks = marked_lines(script)
    lines = lines_by_no(prof, script)
    churn, compute, worker, collect = (lines.get(marks[m]) for m in
                                       ("churn", "compute", "worker", "collect"))
    check(churn and compute and worker and collect, "a marked line is missing: %s" % sorted(lines))
    check(prof.get("gc") is True and "gc_percent" in prof,
          "no run-level GC fields: %r" % {k: prof[k] for k in prof if k != "files"})
    check({"source": "gc", "key": "n_gc_percent", "title": "GC", "unit": "level_percent"}
          in prof.get("figures", []), "figures: %r" % prof.get("figures"))
    check(all("n_gc_percent" in f for f in file_entry(prof, script)["functions"]),
          "a function without n_gc_percent")
    notes = []

    # Automatic collections of the cycle-making line: its GC seconds
    # against the collections the program timed in that phase.
    truth_churn = truth["gc_cpu"].get("churn", 0.0)
    check(truth_churn > 0.05, "the churn phase collected only %.3f s" % truth_churn)
    notes.append(_seconds("cycle-making line GC", _gc_sec(prof, churn), truth_churn, INTERVAL)
                 + " (%.1f%% of its time)" % churn.get("n_gc_percent", 0))

    # The gc.collect() line: all of its time collecting, as the loop timed it.
    need_samples("gc.collect() line", _n(collect),
                 samples_to_catch(1 - COLLECT_DEFECT / 100.0, 1.0, COLLECT_ALLOWANCE / 100.0))
    notes.append(accuracy.check(share_at_least("gc.collect() line GC share",
                                               collect.get("n_gc_percent", 0), _n(collect), 100,
                                               COLLECT_ALLOWANCE)))
    notes.append(_seconds("gc.collect() line GC", _gc_sec(prof, collect), truth["collect_cpu"],
                          INTERVAL))

    # The arithmetic line: what the program saw it collect (nothing): its
    # share, and its seconds, which only its span's two ends may carry (the
    # first tick on it brings the end of the cycle-making phase).
    truth_compute = truth["gc_cpu"].get("compute", 0.0)
    truth_pct = 100.0 * truth_compute / max(truth["compute_cpu"], 1e-9)
    need_samples("arithmetic line", _n(compute),
                 samples_to_catch(NO_GC_DEFECT / 100.0, truth_pct / 100.0, NO_GC_ALLOWANCE / 100.0))
    notes.append(accuracy.check(share_at_most("arithmetic line GC share",
                                              compute.get("n_gc_percent", 0), _n(compute),
                                              truth_pct, NO_GC_ALLOWANCE)))
    notes.append(accuracy.check(seconds_near("arithmetic line GC", _gc_sec(prof, compute),
                                             truth_compute, INTERVAL, GC_SECONDS_ALLOWANCE)))

    # The hashing thread, which runs while the main thread collects.
    need_samples("hashing thread", _n(worker),
                 samples_to_catch(WORKER_DEFECT / 100.0, 0.0, WORKER_ALLOWANCE / 100.0))
    notes.append(accuracy.check(share_at_most("hashing thread GC share",
                                              worker.get("n_gc_percent", 0), _n(worker), 0,
                                              WORKER_ALLOWANCE)))
    check(worker["n_cpu_percent_c"] > worker["n_cpu_percent_python"],
          "the hashing line is not native time: %r" % worker)
    return "; ".join(notes)


SMALL = """\
    import gc, time
    keep = [[] for _ in range(200000)]
    def churn(sec):
        end = time.thread_time() + sec
        while time.thread_time() < end:
            for _ in range(10000): a = []; a.append(a)  # @churn
    def collect(sec):
        end = time.thread_time() + sec
        while time.thread_time() < end: gc.collect()  # @collect
    churn(0.3)
    collect(0.3)
    """


def test_gc_only_when_asked(env):
    """Without --gc no report says anything of collections; with it the
    terminal has the GC column and the run's line, and JSON the fields."""
    script = env.write("small.py", SMALL)
    proc, prof = env.profile(script)
    check(proc.returncode == 0, proc.stderr[-2000:])
    check(not _gc_fields(prof), "GC fields without --gc: %r" % _gc_fields(prof))
    plain = env.run_sonde(["run", "--all-lines", script])
    check(plain.returncode == 0, plain.stderr[-2000:])
    check("GC" not in plain.stderr, "GC in the terminal report without --gc:\n" + plain.stderr)
    shown = env.run_sonde(["run", "--gc", "--all-lines", script])
    check(shown.returncode == 0, shown.stderr[-2000:])
    check("GC: " in shown.stderr and "% of the time in garbage collection" in shown.stderr,
          "no GC line in the terminal report:\n" + shown.stderr)
    header = [l for l in shown.stderr.splitlines() if l.startswith("Line ")]
    check(header and all(" GC " in h for h in header), "no GC column: %r" % header)
    marks = marked_lines(script)
    row = [l for l in shown.stderr.splitlines()
           if l.split()[:1] == [str(marks["collect"])] and "%" in l]
    check(row, "the gc.collect() line is not in the report:\n" + shown.stderr)
    help_text = env.run_sonde(["run", "--help"])
    check("--gc" in help_text.stdout + help_text.stderr, "--gc missing from run's help")
    return "absent without --gc; terminal: %s" % row[0].strip()


def test_gc_saved_and_merged(env):
    """The figure survives the JSON loader (`sonde merge` of one file gives
    the same shares within the JSON's rounding), `sonde view`'s page embeds
    it, and two files merged add their seconds."""
    script = env.write("small.py", SMALL)
    proc, prof = env.profile(script, options=["--gc"])
    check(proc.returncode == 0, proc.stderr[-2000:])
    saved = os.path.join(env.tmp, "one.json")
    with open(saved, "w") as f:
        json.dump(prof, f)
    again = os.path.join(env.tmp, "again.json")
    merged = env.run_sonde(["merge", saved, "-o", again])
    check(merged.returncode == 0, merged.stderr)
    with open(again) as f:
        back = json.load(f)
    check(back.get("gc") is True, "gc flag lost by merge: %r" % sorted(back))
    before, after = lines_by_no(prof, script), lines_by_no(back, script)
    for no, line in before.items():
        check(abs(line.get("n_gc_percent", -1) - after[no].get("n_gc_percent", -2)) <= 0.01,
              "line %d: n_gc_percent %r read back as %r" % (no, line.get("n_gc_percent"),
                                                            after[no].get("n_gc_percent")))
    check(abs(prof["gc_percent"] - back["gc_percent"]) <= 0.5,
          "gc_percent %r read back as %r" % (prof["gc_percent"], back["gc_percent"]))
    # two copies merged: the same shares (seconds add on both sides)
    twice = os.path.join(env.tmp, "twice.json")
    merged = env.run_sonde(["merge", saved, saved, "-o", twice])
    check(merged.returncode == 0, merged.stderr)
    with open(twice) as f:
        both = json.load(f)
    marks = marked_lines(script)
    a = before[marks["collect"]].get("n_gc_percent", 0)
    b = lines_by_no(both, script)[marks["collect"]].get("n_gc_percent", 0)
    check(abs(a - b) <= 0.01, "merged twice: %r, alone %r" % (b, a))
    page = os.path.join(env.tmp, "page.html")
    view = env.run_sonde(["view", saved, "-o", page])
    check(view.returncode == 0, view.stderr)
    with open(page, encoding="utf-8") as f:
        html = f.read()
    check("n_gc_percent" in html and '"source": "gc"' in html,
          "the page does not carry the GC figures")
    return "collect line %.2f%% GC, read back %.2f%%, merged twice %.2f%%" % (
        a, after[marks["collect"]].get("n_gc_percent", 0), b)


START = """\
    import gc, sys, time, sonde
    keep = [[] for _ in range(200000)]
    def collect(sec):
        end = time.thread_time() + sec
        while time.thread_time() < end: gc.collect()  # @collect
    sonde.start(outfile=sys.argv[1], json=True, gc=sys.argv[2] == "1")
    collect(0.4)
    sonde.stop()
    """


def test_gc_start(env):
    """sonde.start(gc=True) takes the figure too; without it, none."""
    script = env.write("start.py", START)
    notes = []
    for on in ("1", "0"):
        out = os.path.join(env.tmp, "start%s.json" % on)
        proc = env.run_python([script, out, on], env={"PYTHONPATH": env.lib})
        check(proc.returncode == 0, proc.stdout + proc.stderr)
        with open(out) as f:
            prof = json.load(f)
        if on == "0":
            check(not _gc_fields(prof), "GC fields without gc=True: %r" % _gc_fields(prof))
            continue
        line = lines_by_no(prof, script)[marked_lines(script)["collect"]]
        need_samples("start(gc=True) gc.collect() line", _n(line),
                     samples_to_catch(1 - COLLECT_DEFECT / 100.0, 1.0, COLLECT_ALLOWANCE / 100.0))
        notes.append(accuracy.check(share_at_least("start(gc=True) gc.collect() line GC share",
                                                   line.get("n_gc_percent", 0), _n(line), 100,
                                                   COLLECT_ALLOWANCE)))
    return "; ".join(notes)


CHILD_INTERVAL = 0.005

CHILD = """\
    import gc, json, multiprocessing as mp, time

    def work(q):
        keep = [[] for _ in range(300000)]
        c0 = time.thread_time()
        end = c0 + 0.8
        while time.thread_time() < end: gc.collect()  # @child
        q.put(time.thread_time() - c0)

    if __name__ == "__main__":
        ctx = mp.get_context("fork")
        q = ctx.Queue()
        p = ctx.Process(target=work, args=(q,))
        p.start()
        print(json.dumps({"child_cpu": q.get()}))
        p.join()
    """


def test_gc_child_and_periods(env):
    """A forked child's collections come back through the hand-over and
    the merge of its profile into the report; `--period` hands each
    period's figures over the same way, and each period's file has them."""
    script = env.write("child.py", CHILD)
    marks = marked_lines(script)
    proc, prof = env.profile(script,
                             options=["--gc", "--virtual-time", "--interval", str(CHILD_INTERVAL)])
    check(proc.returncode == 0, proc.stderr[-2000:])
    check(len(prof["processes"]) == 2, "processes: %r" % prof["processes"])
    line = lines_by_no(prof, script).get(marks["child"])
    check(line, "the child's line is missing")
    need_samples("child's gc.collect() line", _n(line),
                 samples_to_catch(1 - COLLECT_DEFECT / 100.0, 1.0, COLLECT_ALLOWANCE / 100.0))
    notes = [accuracy.check(share_at_least("child's gc.collect() line GC share",
                                           line.get("n_gc_percent", 0), _n(line), 100,
                                           COLLECT_ALLOWANCE))]

    periods_dir = os.path.join(env.tmp, "periods")
    run = env.run_sonde(["run", "--gc", "--virtual-time", "--interval", str(CHILD_INTERVAL),
                         "--period", "0.3",
                         "--period-dir",
                         periods_dir, "--format", "json", script], timeout=120)
    check(run.returncode == 0, run.stderr[-2000:])
    truth = json.loads(run.stdout.strip().splitlines()[-1])
    files = sorted(glob.glob(os.path.join(periods_dir, "*.json")))
    check(len(files) >= 2, "periods: %r" % os.listdir(periods_dir))
    gc_sec, samples, handed = 0.0, 0, 0
    for name in files:
        with open(name) as f:
            period = json.load(f)
        if not period["processes"]:
            continue  # no process handed this period over (start-up on a loaded machine)
        handed += 1
        check(period.get("gc") is True, "a period without the gc flag: %s" % name)
        for path, entry in period["files"].items():
            if os.path.realpath(path) != os.path.realpath(script):
                continue
            for l in entry["lines"]:
                if l["lineno"] == marks["child"]:
                    gc_sec += _gc_sec(period, l)
                    samples += _n(l)
    check(samples > 0, "no period has the child's line")
    notes.append(_seconds("child's gc.collect() line GC over %d periods" % handed, gc_sec,
                          truth["child_cpu"], CHILD_INTERVAL))
    return "; ".join(notes)
