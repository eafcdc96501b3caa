"""`sonde merge` (issue #15, item 6): JSON profiles of separate runs added
up into one report, and the JSON loader (src/report/json_load.c) that
reads them back into the model.

Two runs of a script that spends a known CPU time on one line, merged:
every line's time (percent x profiled_time_sec) is the sum of the two
runs' within the rounding of the written figures, samples add exactly,
"processes" lists both runs' processes, the elapsed time is the longer,
and the terminal report says two processes were profiled. A profile read
and written again (`sonde merge A.json -o B.json`) is the same field for
field (numbers within the rounding the format applies: 4 decimals for
percentages and MB, 6 for seconds). Bad input gives one line "sonde: ...",
a non-zero exit and no output file.

Runs once (VERSIONS): merge is the command's C code; the profiles it reads
come from one interpreter.

Issue #32: the spinning line's merged seconds are a sampled figure,
checked through tests/accuracy.py against the CPU time the runs' loops
took by their own thread_time (accuracy.seconds_near: each run's loop
holds its line for one unbroken span, charged exactly but for its two
ends; the runs sample CPU time only, --virtual-time, as in wall-clock mode
a run-queue wait that straddles an end moves whole); the sums of the runs'
figures are exact (within the JSON's rounding).
"""
import json
import os

import accuracy
from accuracy import need_samples, seconds_near, ticks_to_catch
from support import check, file_entry, marked_lines

VERSIONS = "once: merge is the command's C code"

# The default sampling interval (s).
INTERVAL = 0.01
# Systematic allowance of the spinning line's CPU seconds (relative): time
# on the loop's `pass` line (no instruction before 3.12, a NOP the jump
# runs through after), a late tick at the loop's ends (half its excess goes
# to the place before it), a failed stack read (charged nowhere).
SPIN_ALLOWANCE = 0.05
# The defect: one run's line lost in the merge (0.6 or 0.4 of the truth
# left: the harder, 0.6).
RUN_LOST = 0.6

SCRIPT = """\
import sys, time
def spin(sec):
    end = time.process_time() + sec
    while time.process_time() < end:  # @hot
        pass
def other(n):
    return sorted(range(n, 0, -1))  # @other
t0 = time.thread_time()
spin(float(sys.argv[1]))
print(time.thread_time() - t0)
other(200000)
"""

# Rounding of the JSON writer (src/report/json.c): percentages and MB carry
# 4 decimals, seconds 6.
PERCENT_STEP = 1e-4
SECOND_STEP = 1e-6


def _load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _line_seconds(prof, line):
    """A line's time in seconds, from its shares of the profiled time."""
    share = line["n_cpu_percent_python"] + line["n_cpu_percent_c"] + line["n_sys_percent"]
    return share / 100.0 * prof["profiled_time_sec"]


def _line_error(prof):
    """The most a line's time read from prof can be off by rounding: three
    shares, each within half a step, of the profiled time (itself within
    half a step)."""
    return 3 * 0.5 * PERCENT_STEP / 100.0 * prof["profiled_time_sec"] + 0.5 * SECOND_STEP


def _two_runs(env, spun=None):
    """Two runs of SCRIPT (CPU time only); returns (script, their JSON
    paths). spun: a list that gets the CPU seconds each run's loop took, by
    its thread_time."""
    script = env.write("work.py", SCRIPT)
    paths = []
    for i, sec in enumerate(("0.3", "0.2")):
        out = os.path.join(env.tmp, "run%d.json" % i)
        run = env.run_sonde(["run", "--virtual-time", "--json", "-o", out, script, sec])
        check(run.returncode == 0 and os.path.exists(out),
              "sonde run %d: exit %d\n%s" % (i, run.returncode, run.stderr[-2000:]))
        paths.append(out)
        if spun is not None:
            spun.append(float(run.stdout.split()[0]))
    return script, paths


def test_merge_adds_lines(env):
    spun = []
    script, (a_path, b_path) = _two_runs(env, spun)
    merged_path = os.path.join(env.tmp, "merged.json")
    proc = env.run_sonde(["merge", a_path, b_path, "-o", merged_path])
    check(proc.returncode == 0, "sonde merge: exit %d\n%s" % (proc.returncode, proc.stderr))
    a, b, m = _load(a_path), _load(b_path), _load(merged_path)

    lines = {}
    for prof in (a, b):
        for line in file_entry(prof, script)["lines"]:
            lines.setdefault(line["lineno"], []).append((prof, line))
    merged_lines = {l["lineno"]: l for l in file_entry(m, script)["lines"]}
    check(set(merged_lines) == set(lines),
          "merged lines %s, inputs' %s" % (sorted(merged_lines), sorted(lines)))
    for lineno, parts in sorted(lines.items()):
        want = sum(_line_seconds(p, l) for p, l in parts)
        got = _line_seconds(m, merged_lines[lineno])
        tolerance = sum(_line_error(p) for p, _ in parts) + _line_error(m)
        check(abs(got - want) <= tolerance,
              "line %d: merged %.6f s, the runs' sum %.6f s (rounding allows %.2g)"
              % (lineno, got, want, tolerance))
        samples = sum(l["n_samples"] for _, l in parts)
        check(merged_lines[lineno]["n_samples"] == samples,
              "line %d: %d samples merged, %d in the runs" % (lineno, merged_lines[lineno]["n_samples"], samples))

    hot = marked_lines(script)["hot"]
    hot_sec = _line_seconds(m, merged_lines[hot])
    # truth: the CPU time the two runs' loops took (0.3 and 0.2 s of the
    # process's CPU time: a little less of the thread's, the sampler's own
    # is the rest): two spans, four ends
    need_samples("the merged spinning line", round(sum(spun) / INTERVAL),
                 ticks_to_catch(RUN_LOST, SPIN_ALLOWANCE, edges=4))
    note = accuracy.check(seconds_near("the merged spinning line", hot_sec, sum(spun), INTERVAL,
                                       SPIN_ALLOWANCE, edges=4))
    check(abs(m["profiled_time_sec"] - a["profiled_time_sec"] - b["profiled_time_sec"]) <= 3 * SECOND_STEP,
          "profiled time %r is not %r + %r" % (m["profiled_time_sec"], a["profiled_time_sec"], b["profiled_time_sec"]))
    check(m["n_samples"] == a["n_samples"] + b["n_samples"], "n_samples do not add")
    check(m["elapsed_time_sec"] == max(a["elapsed_time_sec"], b["elapsed_time_sec"]),
          "elapsed %r, runs %r and %r" % (m["elapsed_time_sec"], a["elapsed_time_sec"], b["elapsed_time_sec"]))

    check(len(a["processes"]) == 1 and len(b["processes"]) == 1,
          "a run lists %d and %d processes" % (len(a["processes"]), len(b["processes"])))
    check(m["processes"] == a["processes"] + b["processes"],
          "merged processes %r" % (m["processes"],))
    for prof, sec in ((a, 0.3), (b, 0.2)):
        p = prof["processes"][0]
        check(p["complete"] and p["pid"] > 0 and p["ppid"] > 0 and "work.py" in p["cmdline"],
              "process entry %r" % (p,))
        check(p["cpu_sec"] >= sec and p["peak_mb"] > 1 and p["wall_sec"] >= sec,
              "process entry %r for %.1f s of CPU" % (p, sec))

    text = env.run_sonde(["merge", a_path, b_path])
    check(text.returncode == 0, "sonde merge to the terminal: %s" % text.stderr)
    check("2 processes profiled" in text.stdout, "header:\n%s" % text.stdout[:600])
    for p in m["processes"]:
        check(str(p["pid"]) in text.stdout, "pid %d not in the process table" % p["pid"])
    return note


def _same(want, got, path="$"):
    """Field-for-field comparison; numbers that are not whole within the
    writer's rounding."""
    if isinstance(want, dict):
        check(isinstance(got, dict) and list(want) == list(got),
              "%s: fields %r, read back %r" % (path, list(want), list(got) if isinstance(got, dict) else got))
        for key in want:
            _same(want[key], got[key], "%s.%s" % (path, key))
    elif isinstance(want, list):
        check(isinstance(got, list) and len(want) == len(got), "%s: lengths differ" % path)
        for i, (w, g) in enumerate(zip(want, got)):
            _same(w, g, "%s[%d]" % (path, i))
    elif isinstance(want, float) or isinstance(got, float):
        # a share re-derived from re-derived times may move by a step or
        # two; a ratio of rounded figures (growth_rate: footprint end over
        # start, each within half a step of 4 decimals of MB, so off by
        # up to 1e-4 MB over the start's MB of itself: 1e-4 of it for a
        # start of 1 MB; a program's start is ~10 MB)
        rel = 1e-4 if path.endswith(".growth_rate") else 1e-5
        check(isinstance(got, (int, float)) and abs(want - got) <= 2 * PERCENT_STEP + rel * abs(want),
              "%s: %r, read back %r" % (path, want, got))
    else:
        check(want == got, "%s: %r, read back %r" % (path, want, got))


def test_merge_round_trip(env):
    script = env.write("alloc.py", """\
        import sys, time
        def spin(sec):
            end = time.process_time() + sec
            while time.process_time() < end:
                pass
        def grow(n):
            keep = [bytearray(1 << 20) for _ in range(n)]
            return keep
        kept = grow(40)
        spin(0.2)
        time.sleep(0.05)
        """)
    for options in ([], ["--memory", "--stacks"]):
        src = os.path.join(env.tmp, "src.json")
        again = os.path.join(env.tmp, "again.json")
        run = env.run_sonde(["run", "--json", "-o", src] + options + [script])
        check(run.returncode == 0, "sonde run %s: %s" % (options, run.stderr[-2000:]))
        proc = env.run_sonde(["merge", src, "-o", again])
        check(proc.returncode == 0, "sonde merge: %s" % proc.stderr)
        want, got = _load(src), _load(again)
        if options:
            check(want.get("memory") and want.get("call_stacks"), "no memory or stacks in %s" % options)
        _same(want, got)


def test_merge_bad_input(env):
    script, (good, _) = _two_runs(env)
    doc = _load(good)
    cases = {
        "not_json.json": b"{ this is not json",
        "not_utf8.json": json.dumps(doc).encode().replace(b'"program"', b'"pr\xffogram"'),
        "huge.json": json.dumps(dict(doc, n_samples=1e300)).encode(),
        "overflow.json": json.dumps(doc).encode().replace(b'"elapsed_time_sec": ', b'"elapsed_time_sec": 1e400, "x": '),
        "files_list.json": json.dumps(dict(doc, files=[])).encode(),
        "lineno_text.json": json.dumps(doc).encode().replace(b'"lineno": ', b'"lineno": "4", "was": ', 1),
        "array.json": b"[1, 2]",
        "stack_index.json": json.dumps(dict(doc, call_stacks={"frames": [], "threads": [],
                                                             "samples": [{"frames": [3], "count": 1}]})).encode(),
    }
    out = os.path.join(env.tmp, "out.json")
    for name, data in sorted(cases.items()):
        path = os.path.join(env.tmp, name)
        with open(path, "wb") as f:
            f.write(data)
        proc = env.run_sonde(["merge", good, path, "-o", out])
        err = proc.stderr.splitlines()
        check(proc.returncode != 0, "%s: exit 0" % name)
        check(len(err) == 1 and err[0].startswith("sonde: ") and name in err[0],
              "%s: stderr %r" % (name, proc.stderr))
        # a refusal names what to do
        check("sonde run --json -o FILE" in err[0] or "cannot merge" in err[0],
              "%s: the refusal says not what to do: %r" % (name, err[0]))
        check(not os.path.exists(out), "%s: an output file was written" % name)
        check(not [f for f in os.listdir(env.tmp) if "sonde-tmp" in f], "%s: a temporary file was left" % name)
    for args in (["merge"], ["merge", os.path.join(env.tmp, "missing.json"), "-o", out],
                 ["merge", good, "-o", out, "--format", "nope"], ["merge", good, "--bogus"]):
        proc = env.run_sonde(args)
        err = proc.stderr.splitlines()
        check(proc.returncode != 0 and len(err) == 1 and err[0].startswith("sonde: "),
              "%s: exit %d, stderr %r" % (args[1:], proc.returncode, proc.stderr))
        check(not os.path.exists(out), "%s: an output file was written" % args[1:])


def test_api_process_is_partial(env):
    """sonde.start()/stop() profiles part of a process: its entry says so."""
    out = os.path.join(env.tmp, "api.json")
    script = env.write("api.py", """\
        import os, sys, time, sonde
        sonde.start(outfile=sys.argv[1])
        end = time.process_time() + 0.1
        while time.process_time() < end:
            pass
        sonde.stop()
        print(os.getpid(), os.getppid())
        """)
    proc = env.run_python([script, out], env={"PYTHONPATH": env.lib})
    check(proc.returncode == 0, "api script: %s" % proc.stderr[-2000:])
    pid, ppid = (int(w) for w in proc.stdout.split())
    procs = _load(out)["processes"]
    check(len(procs) == 1 and procs[0]["pid"] == pid and procs[0]["ppid"] == ppid and
          procs[0]["complete"] is False and procs[0]["cpu_sec"] >= 0.1 and "api.py" in procs[0]["cmdline"],
          "processes %r (pid %d, ppid %d)" % (procs, pid, ppid))
