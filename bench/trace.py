#!/usr/bin/env python3
"""Overhead of `sonde trace` (sonde.Profile) against cProfile, per call.

For every installed CPython (or those given with --python), builds sonde for
it (build/bench/<version>/), then, inside that interpreter, runs call-heavy
workloads with no profiler, under cProfile.Profile and under sonde.Profile,
the three modes interleaved (one run of each in turn, repeated --reps
times). The added time per call of a profiler is
(median time under it - median time without) / calls, calls being the
number of calls the profilers record for the workload. The ratio is
sonde's added time over cProfile's; the targets are <= 0.5 on 3.12+ and
<= 0.8 before.

    python3 bench/trace.py [--python PATH_OR_VERSION ...] [--reps 15]
                           [--monotonic] [--write FILE | --append FILE] [--json FILE]

--monotonic adds a column for sonde with CLOCK_MONOTONIC instead of the
TSC. On 3.12+ two more modes measure the floor that sys.monitoring itself
sets: the same events delivered to C callbacks that do nothing, and to
callbacks that only read the clock (bench/floor.c, built here). --write and
--append (the same) put the tables as Markdown into the file's section of
this script (bench/doc.py: replaced at each run, the rest of the file kept).
Timings on a shared machine are noisy: compare ratios, and rerun.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from doc import put_section  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# ---- the workloads (run inside the interpreter under test) ----------------

WORKER = r'''
import cProfile, gc, json, math, statistics, sys, time
import sonde

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

def w_fib():
    fib(21)

class Account:
    def __init__(self):
        self.balance = 0
    def deposit(self, amount):
        self.balance += self.fee(amount)
    def fee(self, amount):
        return amount - 1
    @property
    def rich(self):
        return self.balance > 100

def w_methods():
    a = Account()
    for i in range(8000):
        a.deposit(i)
        a.rich

def w_builtins():
    items = []
    d = {}
    for i in range(6000):
        items.append(i)
        d.get(i)
        len(items)
        isinstance(i, int)
        math.sqrt(i)

def count(n):
    for i in range(n):
        yield i

def w_generators():
    for _ in range(300):
        for _ in count(30):
            pass

WORKLOADS = [("fib", w_fib), ("methods", w_methods), ("builtins", w_builtins),
             ("generators", w_generators)]

def calls_of(fn):
    p = cProfile.Profile()
    p.enable()
    fn()
    p.disable()
    n = sum(e.callcount for e in p.getstats())
    return n - 1  # the disable() call

def timed(fn, factory):
    gc.collect()
    p = factory() if factory else None
    if p:
        p.enable()
    t0 = time.perf_counter()
    fn()
    dt = time.perf_counter() - t0
    if p:
        p.disable()
    return dt

class Floor:
    """sys.monitoring with callbacks that do nothing (or only read the
    clock) on the events sonde.Profile uses: the interpreter's own cost."""
    EVENTS = ("PY_START", "PY_RESUME", "PY_THROW", "PY_RETURN", "PY_YIELD", "PY_UNWIND",
              "CALL", "C_RETURN", "C_RAISE")
    read_clock = False

    def enable(self):
        mon = sys.monitoring
        mon.use_tool_id(2, "floor")
        hook = sonde_bench_floor.hook(1 if self.read_clock else 0)
        call_hook = sonde_bench_floor.hook(2 if self.read_clock else 0)
        mask = 0
        for name in self.EVENTS:
            bit = getattr(mon.events, name)
            mon.register_callback(2, bit, call_hook if name == "CALL" else hook)
            mask |= bit
        mon.set_events(2, mask)

    def disable(self):
        mon = sys.monitoring
        mon.set_events(2, 0)
        for name in self.EVENTS:
            mon.register_callback(2, getattr(mon.events, name), None)
        mon.free_tool_id(2)

class FloorClock(Floor):
    read_clock = True

reps = int(sys.argv[1])
modes = [("python", None), ("cProfile", cProfile.Profile), ("sonde", sonde.Profile)]
try:
    import sonde_bench_floor
    modes += [("floor", Floor), ("floor_clock", FloorClock)]
except ImportError:
    pass
out = {"version": "%d.%d.%d" % sys.version_info[:3], "workloads": []}
for name, fn in WORKLOADS:
    calls = calls_of(fn)
    for _ in range(2):  # warm up
        for _, factory in modes:
            timed(fn, factory)
    times = {m: [] for m, _ in modes}
    for _ in range(reps):
        for m, factory in modes:
            times[m].append(timed(fn, factory))
    med = {m: statistics.median(v) for m, v in times.items()}
    out["workloads"].append({"name": name, "calls": calls, "median_s": med})
print(json.dumps(out))
'''


def interpreters(wanted):
    """The interpreters the tests use (tests/pythons.py: PYTHONS, pyenv, the
    range of src/pyread/pyversions.h), or those named in wanted."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import pythons  # noqa: E402
    result = pythons.find_interpreters([w for w in wanted if os.sep in w])
    return [r for r in result
            if not wanted or any(w == r[1] or r[0].startswith(w) for w in wanted)]


def build(name, python):
    build_dir = os.path.join(ROOT, "build", "bench", name)
    proc = subprocess.run(["make", "-s", "-j2", "BUILD=" + build_dir, "PYTHON=" + python, "PYTHONS=", "all"],
                          cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit("cannot build sonde for %s:\n%s" % (python, (proc.stdout + proc.stderr)[-2000:]))
    return build_dir


def build_floor(python, build_dir):
    """bench/floor.c as an extension for `python` (3.12+): no-op
    sys.monitoring callbacks, to measure what the events alone cost.
    Returns the directory holding it."""
    out_dir = os.path.join(build_dir, "bench-floor")
    os.makedirs(out_dir, exist_ok=True)
    proc = subprocess.run([python, "-c", "import sysconfig as s; print(s.get_paths()['include']); "
                           "print(s.get_config_var('EXT_SUFFIX'))"], capture_output=True, text=True)
    include, suffix = proc.stdout.split()
    target = os.path.join(out_dir, "sonde_bench_floor" + suffix)
    proc = subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-I" + include, os.path.join(ROOT, "bench", "floor.c"),
                           "-o", target], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit("cannot build bench/floor.c for %s:\n%s" % (python, proc.stderr[-2000:]))
    return out_dir


def run_worker(python, build_dir, reps, extra_env=None, extra_path=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(build_dir, "lib")] + ([extra_path] if extra_path else []))
    env.update(extra_env or {})
    proc = subprocess.run([python, "-c", WORKER, str(reps)], capture_output=True, text=True, env=env,
                          cwd=build_dir)  # not the source tree: its sonde/ has no extension
    if proc.returncode != 0:
        raise SystemExit("benchmark failed under %s:\n%s" % (python, proc.stderr[-3000:]))
    return json.loads(proc.stdout)


def added_ns(med, mode, calls):
    return (med[mode] - med["python"]) / calls * 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", action="append", default=[], help="only these interpreters (path or version prefix)")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--monotonic", action="store_true", help="also time sonde with CLOCK_MONOTONIC")
    ap.add_argument("--write", default="", help="write the tables as Markdown to this file")
    ap.add_argument("--append", default="", help="append the Markdown tables to this file")
    ap.add_argument("--json", default="", help="write the raw figures as JSON to this file")
    args = ap.parse_args()

    results = []
    for name, python, parts in interpreters(args.python):
        build_dir = build(name, python)
        floor_dir = build_floor(python, build_dir) if parts[:2] >= (3, 12) else None
        res = run_worker(python, build_dir, args.reps, extra_path=floor_dir)
        if args.monotonic:
            mono = run_worker(python, build_dir, args.reps, {"SONDE_TRACE_CLOCK": "monotonic"})
            for w, m in zip(res["workloads"], mono["workloads"]):
                w["monotonic_added_ns"] = added_ns(m["median_s"], "sonde", m["calls"])
        target = 0.5 if parts[:2] >= (3, 12) else 0.8
        ratios = []
        print("Python %s (%s): target ratio <= %.1f" % (name, python, target), flush=True)
        for w in res["workloads"]:
            med, calls = w["median_s"], w["calls"]
            w["base_ns"] = med["python"] / calls * 1e9
            w["cprofile_added_ns"] = added_ns(med, "cProfile", calls)
            w["sonde_added_ns"] = added_ns(med, "sonde", calls)
            w["ratio"] = w["sonde_added_ns"] / w["cprofile_added_ns"] if w["cprofile_added_ns"] > 0 else float("nan")
            ratios.append(w["ratio"])
            floor = ""
            if "floor" in med:
                w["floor_added_ns"] = added_ns(med, "floor", calls)
                w["floor_clock_added_ns"] = added_ns(med, "floor_clock", calls)
                floor = "  events alone +%.1f, with a clock read +%.1f" % (w["floor_added_ns"],
                                                                         w["floor_clock_added_ns"])
            print("  %-11s %7d calls  python %6.1f ns/call  cProfile +%6.1f  sonde +%6.1f%s  ratio %.2f%s"
                  % (w["name"], calls, w["base_ns"], w["cprofile_added_ns"], w["sonde_added_ns"],
                     "  (monotonic +%.1f)" % w["monotonic_added_ns"] if "monotonic_added_ns" in w else "",
                     w["ratio"], floor), flush=True)
        res.update(name=name, python=python, target=target, median_ratio=statistics.median(ratios),
                   worst_ratio=max(ratios))
        print("  median ratio %.2f, worst %.2f (%s)" % (res["median_ratio"], res["worst_ratio"],
              "meets the target" if res["worst_ratio"] <= target else "misses the target"), flush=True)
        results.append(res)

    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if args.write or args.append:
        lines = [
            "## `sonde trace` (deterministic profiling) against cProfile",
            "",
            "Generated by `python3 bench/trace.py` on %s: %s, %d cores. Each workload runs %d times"
            % (time.strftime("%Y-%m-%d"), platform.machine(), os.cpu_count(), args.reps),
            "per mode inside the interpreter (no profiler, cProfile.Profile, sonde.Profile, interleaved);",
            "the added time per call is (median with the profiler - median without) / calls.",
            "Ratio = sonde's added time / cProfile's (targets: <= 0.5 on 3.12+, <= 0.8 before).",
            "",
            "| Python | workload | calls | python ns/call | cProfile +ns/call | sonde +ns/call | ratio |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        for res in results:
            for w in res["workloads"]:
                lines.append("| %s | %s | %d | %.1f | %.1f | %.1f | %.2f |" % (
                    res["name"], w["name"], w["calls"], w["base_ns"], w["cprofile_added_ns"],
                    w["sonde_added_ns"], w["ratio"]))
        lines += ["", "| Python | median ratio | worst ratio | target |", "| --- | ---: | ---: | ---: |"]
        for res in results:
            lines.append("| %s | %.2f | %.2f | <= %.1f |" % (res["name"], res["median_ratio"], res["worst_ratio"],
                                                          res["target"]))
        floors = [(res, w) for res in results for w in res["workloads"] if "floor_added_ns" in w]
        if floors:
            lines += [
                "",
                "The floor on 3.12+: sys.monitoring delivering the same events to callbacks written in C",
                "that do nothing (bench/floor.c), then to callbacks that only read the TSC, once per",
                "event that a profiler must time (not on CALL of a Python function). Any profiler built",
                "on sys.monitoring that times Python functions and built-ins exactly costs at least the",
                "last of these; the floor ratio is that cost over cProfile's.",
                "",
                "| Python | workload | cProfile +ns/call | events alone +ns/call | events + clock +ns/call "
                "| sonde +ns/call | floor ratio | sonde ratio |",
                "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
            ]
            for res, w in floors:
                lines.append("| %s | %s | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f |" % (
                    res["name"], w["name"], w["cprofile_added_ns"], w["floor_added_ns"],
                    w["floor_clock_added_ns"], w["sonde_added_ns"],
                    w["floor_clock_added_ns"] / w["cprofile_added_ns"], w["ratio"]))
        lines.append("")
        path = args.write or args.append
        how = put_section(path, "bench/trace.py", "\n".join(lines))
        print("%s bench/trace.py's section of %s" % (how, path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
