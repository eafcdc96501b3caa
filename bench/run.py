#!/usr/bin/env python3
"""sonde's overhead benchmark (`make bench`).

Runs every workload in bench/workloads/ under plain python, `sonde run`,
`sonde run --memory` and `python -m cProfile`, interleaved (one run of each
mode in turn, repeated), takes the median wall time per mode and reports
slowdown ratios. Also measures start-up cost: `sonde run` (and with
--no-subprocesses, --memory) of an empty script against plain python, each
repetition running every mode in turn, target STARTUP_TARGET_MS.

    python3 bench/run.py [--build build] [--python PATH] [--reps 5] [--write docs/PERFORMANCE.md]

--write puts the tables into its own section of the file (bench/doc.py),
leaving the rest as it was.
"""
import argparse
import datetime
import glob
import os
import platform
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from doc import put_section  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What `sonde run` may add to an empty script's run (ms; #23).
STARTUP_TARGET_MS = 5.0
# --memory on raytrace, the object-heavy workload where the allocator shim
# costs most per unit of work (#23).
RAYTRACE_MEMORY_TARGET = 1.03


def timed(argv, env):
    t0 = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    dt = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit("benchmark command failed: %s\n%s" % (" ".join(argv), proc.stderr.decode()[-2000:]))
    return dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--python", default="", help="the interpreter (default: the build's)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--startup-reps", type=int, default=21)
    ap.add_argument("--only", default="")
    ap.add_argument("--write", default="")
    args = ap.parse_args()

    sonde = os.path.join(args.build, "bin", "sonde")
    python = args.python
    if not python:
        with open(os.path.join(args.build, "python")) as f:
            python = f.read().strip()
    env = dict(os.environ)
    env["SONDE_PYTHON"] = python
    env.pop("PYTHONPATH", None)
    tmp = os.path.join(args.build, "bench-run")
    os.makedirs(tmp, exist_ok=True)
    report = os.path.join(tmp, "profile.json")

    modes = {
        "python": lambda w: [python, w],
        "sonde run": lambda w: [sonde, "run", "--json", "-o", report, w],
        "--memory": lambda w: [sonde, "run", "--memory", "--json", "-o", report, w],
        "cProfile": lambda w: [python, "-m", "cProfile", "-o", os.path.join(tmp, "cprofile.out"), w],
    }
    workloads = sorted(glob.glob(os.path.join(ROOT, "bench", "workloads", "*.py")))
    if args.only:
        workloads = [w for w in workloads if args.only in w]
    rows = []
    for w in workloads:
        times = {m: [] for m in modes}
        for _ in range(args.reps):
            for m, cmd in modes.items():
                times[m].append(timed(cmd(w), env))
        med = {m: statistics.median(v) for m, v in times.items()}
        row = (os.path.basename(w)[:-3], med["python"], med["sonde run"] / med["python"],
               med["--memory"] / med["python"], med["cProfile"] / med["python"])
        rows.append(row)
        print("%-16s python %6.2fs  sonde run x%.3f  --memory x%.3f  cProfile x%.2f" % row,
              flush=True)

    empty = os.path.join(tmp, "empty.py")
    with open(empty, "w") as f:
        f.write("pass\n")
    startup_modes = {
        "python": [python, empty],
        "sonde run": [sonde, "run", "--json", "-o", report, empty],
        "--no-subprocesses": [sonde, "run", "--no-subprocesses", "--json", "-o", report, empty],
        "--memory": [sonde, "run", "--memory", "--json", "-o", report, empty],
    }
    startup = {m: [] for m in startup_modes}
    for _ in range(args.startup_reps):
        for m, cmd in startup_modes.items():
            startup[m].append(timed(cmd, env))
    startup_med = {m: 1000 * statistics.median(v) for m, v in startup.items()}
    startup_ms = {m: v - startup_med["python"] for m, v in startup_med.items()}
    print("start-up: python %.1f ms; sonde run +%.1f ms (target <= %.0f ms), --no-subprocesses "
          "+%.1f ms, --memory +%.1f ms"
          % (startup_med["python"], startup_ms["sonde run"], STARTUP_TARGET_MS,
             startup_ms["--no-subprocesses"], startup_ms["--memory"]))

    ratios = [r[2] for r in rows]
    summary = "median slowdown x%.3f, worst x%.3f" % (statistics.median(ratios), max(ratios)) if rows else ""
    mem_ratios = [r[3] for r in rows]
    mem_summary = ("median slowdown x%.3f, worst x%.3f" % (statistics.median(mem_ratios), max(mem_ratios))
                   if rows else "")
    raytrace = [r for r in rows if r[0] == "raytrace"]
    raytrace_line = ("--memory on raytrace x%.3f (target <= x%.2f)"
                     % (raytrace[0][3], RAYTRACE_MEMORY_TARGET) if raytrace else "")
    print(summary)
    print("--memory: " + mem_summary)
    if raytrace_line:
        print(raytrace_line)
    if args.write:
        version = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"],
                                 capture_output=True, text=True).stdout.strip()
        lines = [
            "Generated by `make bench` (bench/run.py) on %s: %s, %d cores, Python %s (%s)."
            % (datetime.date.today().isoformat(), platform.machine(), os.cpu_count(), version, python),
            "Each workload runs %d times per mode, the modes interleaved; the table gives the median"
            % args.reps,
            "wall time of plain Python and each mode's median divided by it (lower is better).",
            "Timings on a shared 2-core machine are noisy: compare ratios, not seconds.",
            "",
            "## `sonde run` (CPU profiling) and `sonde run --memory`",
            "",
            "`--memory` adds the allocator shim (malloc/free, memcpy, Python's allocators)",
            "to CPU profiling: memory per line, footprint over time, leaks, copy volume.",
            "",
            "| workload | python (s) | sonde run | --memory | cProfile |",
            "| --- | ---: | ---: | ---: | ---: |",
        ]
        for name, base, s, m, c in rows:
            lines.append("| %s | %.2f | x%.3f | x%.3f | x%.2f |" % (name, base, s, m, c))
        lines += [
            "",
            "Summary: %s (targets: median <= x1.02, worst <= x1.05)." % summary,
            "",
            "`--memory`: %s (targets: median <= x1.05, worst <= x1.15; alloc_storm <= x1.3; "
            "raytrace <= x%.2f)." % (mem_summary, RAYTRACE_MEMORY_TARGET),
            "",
            "Start-up cost (a script containing `pass`, the modes interleaved, medians of %d):"
            " `sonde run` %.1f ms over plain Python (%.1f ms vs %.1f ms; target <= %.0f ms);"
            " `--no-subprocesses` %.1f ms; `--memory` %.1f ms."
            % (args.startup_reps, startup_ms["sonde run"], startup_med["sonde run"],
               startup_med["python"], STARTUP_TARGET_MS, startup_ms["--no-subprocesses"],
               startup_ms["--memory"]),
            "",
        ]
        how = put_section(args.write, "bench/run.py", "\n".join(lines))
        print("%s bench/run.py's section of %s" % (how, args.write))


if __name__ == "__main__":
    main()
