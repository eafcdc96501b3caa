#!/usr/bin/env python3
"""Overhead of sampling from outside (`sonde record` / `sonde attach`).

1. The target's slowdown while sampled at 100 Hz: every workload in
   bench/workloads/ runs as plain `python` and under `sonde record --rate
   100`, interleaved (one run of each in turn, repeated), and the program
   times itself (perf_counter around runpy), so sonde's start-up and
   output writing are not counted. Median per mode, ratio per workload,
   median of the ratios (target <= x1.01).
2. The sampler's own CPU use: `sonde attach` on a target with 10 threads,
   each 50 Python frames deep and busy in a loop, for a few seconds at 100
   and 1000 Hz (default options, and --idle, which walks every thread);
   CPU seconds of the sonde process (rusage) over wall seconds, in percent
   of one core (target <= 5 % at 100 Hz).

    python3 bench/attach.py [--build build] [--reps 3] [--seconds 5]
                            [--only WORKLOAD] [--append docs/PERFORMANCE.md]

--append puts a "## sonde attach / record" section into the file, its own
(bench/doc.py: replaced at each run, the rest of the file kept).
"""
import argparse
import datetime
import glob
import os
import platform
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from doc import put_section  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TIMER = ("import runpy, sys, time\n"
         "path = sys.argv[1]\n"
         "sys.argv = [path]\n"
         "t0, c0 = time.perf_counter(), time.process_time()\n"
         "runpy.run_path(path, run_name='__main__')\n"
         "sys.stderr.write('BENCH_ELAPSED %.6f %.6f\\n'\n"
         "                 % (time.perf_counter() - t0, time.process_time() - c0))\n")

DEEP = ("import sys, threading\n"
        "THREADS, DEPTH = 10, 50\n"
        "started = threading.Barrier(THREADS)\n"
        "def leaf():\n"
        "    started.wait()\n"
        "    x = 0\n"
        "    while True:\n"
        "        x += 1\n"
        "def recurse(n):\n"
        "    return leaf() if n <= 1 else recurse(n - 1)\n"
        "for _ in range(THREADS - 1):\n"
        "    threading.Thread(target=recurse, args=(DEPTH,), daemon=True).start()\n"
        "threading.Timer(0.2, lambda: print('ready', flush=True)).start()\n"
        "recurse(DEPTH)\n")


def timed_run(argv, env):
    """(wall seconds, CPU seconds) the program measured for itself."""
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                          text=True)
    m = re.search(r"BENCH_ELAPSED ([0-9.]+) ([0-9.]+)", proc.stderr)
    if proc.returncode != 0 or not m:
        raise SystemExit("benchmark run failed: %s\n%s" % (" ".join(argv), proc.stderr[-2000:]))
    return float(m.group(1)), float(m.group(2))


def slowdown(sonde, python, env, tmp, reps, only):
    workloads = sorted(glob.glob(os.path.join(ROOT, "bench", "workloads", "*.py")))
    if only:
        workloads = [w for w in workloads if only in w]
    out = os.path.join(tmp, "attach-bench.folded")
    rows = []
    for w in workloads:
        plain, sampled = [], []
        for _ in range(reps):
            plain.append(timed_run([python, "-c", TIMER, w], env))
            sampled.append(timed_run([sonde, "record", "--rate", "100", "-o", out, "--", python,
                                      "-c", TIMER, w], env))
        base = statistics.median(t for t, _ in plain)
        wall = statistics.median(t for t, _ in sampled) / base
        best = min(t for t, _ in sampled) / min(t for t, _ in plain)
        cpu = statistics.median(c for _, c in sampled) / statistics.median(c for _, c in plain)
        rows.append((os.path.basename(w)[:-3], base, wall, best, cpu))
        print("%-16s python %6.2fs  sampled at 100 Hz: wall x%.3f (best of %d x%.3f), CPU x%.3f"
              % (rows[-1][0], base, wall, reps, best, cpu), flush=True)
    return rows


def sampler_cpu(sonde, python, env, tmp, rate, idle, seconds):
    script = os.path.join(tmp, "deep_threads.py")
    with open(script, "w") as f:
        f.write(DEEP)
    target = subprocess.Popen([python, script], stdout=subprocess.PIPE, env=env)
    try:
        target.stdout.readline()  # "ready": every thread is 50 frames deep
        argv = [sonde, "attach", str(target.pid), "--rate", str(rate), "--duration", str(seconds),
                "-f", "folded", "-o", os.path.join(tmp, "deep.folded")]
        if idle:
            argv.append("--idle")
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        err = proc.stderr.read().decode()
        proc.stderr.close()
        if status != 0:
            raise SystemExit("sonde attach failed:\n" + err[-2000:])
        m = re.search(r"sonde: (\d+) samples", err)
        samples = int(m.group(1)) if m else 0
        with open(os.path.join(tmp, "deep.folded")) as f:
            depth = max((line.count(";") + 1 for line in f), default=0)
        return 100.0 * (usage.ru_utime + usage.ru_stime) / wall, samples, depth
    finally:
        target.kill()
        target.wait()
        target.stdout.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--only", default="")
    ap.add_argument("--skip-slowdown", action="store_true")
    ap.add_argument("--append", default="")
    args = ap.parse_args()

    sonde = os.path.join(args.build, "bin", "sonde")
    with open(os.path.join(args.build, "python")) as f:
        python = f.read().strip()
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    tmp = os.path.join(args.build, "bench")
    os.makedirs(tmp, exist_ok=True)

    load_before = os.getloadavg()[0]
    rows = [] if args.skip_slowdown else slowdown(sonde, python, env, tmp, args.reps, args.only)
    cpu = []
    for rate in (100, 1000):
        for idle in (False, True):
            percent, samples, depth = sampler_cpu(sonde, python, env, tmp, rate, idle, args.seconds)
            cpu.append((rate, idle, percent, samples, depth))
            print("sampler at %4d Hz%s: %.2f%% of one core (%d samples, stacks %d frames deep)"
                  % (rate, " --idle" if idle else "", percent, samples, depth), flush=True)

    load_after = os.getloadavg()[0]
    ratios = [r[2] for r in rows]
    summary = ("median slowdown x%.3f (wall), x%.3f (best runs), x%.3f (CPU); worst x%.3f"
               % (statistics.median(ratios), statistics.median(r[3] for r in rows),
                  statistics.median(r[4] for r in rows), max(ratios)) if rows else "")
    print("load average %.1f before, %.1f after (%d cores)" % (load_before, load_after,
                                                               os.cpu_count()))
    if summary:
        print(summary)
    if args.append:
        version = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"],
                                 capture_output=True, text=True).stdout.strip()
        lines = [
            "",
            "## `sonde attach` / `sonde record` (sampling from outside)",
            "",
            "Generated by bench/attach.py on %s: %s, %d cores, Python %s (%s)."
            % (datetime.date.today().isoformat(), platform.machine(), os.cpu_count(), version,
               python),
            "",
        ]
        if rows:
            lines += [
                "The program's own time (perf_counter and process_time around the workload),",
                "plain and while `sonde record --rate 100` samples it, %d runs each, interleaved."
                % args.reps,
                "Wall: ratio of the medians; best: ratio of the fastest runs; CPU: ratio of the",
                "medians of the program's CPU time. Load average %.1f before, %.1f after (%d cores):"
                % (load_before, load_after, os.cpu_count()),
                "on a shared machine the wall ratios move by several percent from run to run.",
                "",
                "| workload | python (s) | wall | best | CPU |",
                "| --- | ---: | ---: | ---: | ---: |",
            ]
            lines += ["| %s | %.2f | x%.3f | x%.3f | x%.3f |" % row for row in rows]
            lines += ["", "Summary: %s (target: median <= x1.01)." % summary, ""]
        lines += [
            "The sampler's own CPU use, `sonde attach` for %.0f s on 10 threads each 50 Python"
            % args.seconds,
            "frames deep and busy (CPU seconds of the sonde process over wall seconds):",
            "",
            "| rate | threads walked | CPU (% of one core) | samples | deepest stack |",
            "| ---: | --- | ---: | ---: | ---: |",
        ]
        for rate, idle, percent, samples, depth in cpu:
            lines.append("| %d Hz | %s | %.2f%% | %d | %d |"
                         % (rate, "all (--idle)" if idle else "running ones (default)", percent,
                            samples, depth))
        lines += ["", "Target: <= 5 % of one core at 100 Hz.", ""]
        how = put_section(args.append, "bench/attach.py", "\n".join(lines))
        print("%s bench/attach.py's section of %s" % (how, args.append))


if __name__ == "__main__":
    sys.exit(main())
