#!/usr/bin/env python3
"""Cost of the live view (`sonde top`) against `sonde attach` at the same rate.

1. The target's slowdown: each workload runs as plain `python`, under
   `sonde attach PID --rate 100` and under `sonde top PID --rate 100` drawn
   full screen in a terminal (tmux, 120x40), interleaved (one run of each in
   turn, repeated); the program times itself (perf_counter around runpy),
   so only the time it runs while watched counts. Ratio of the medians to
   plain; the view's cost is top's ratio against attach's (target: equal,
   within the runs' spread).
2. The sonde process's own CPU (the screen is drawn there, never in the
   target): attach and top for a few seconds at 100 Hz on a target with 10
   busy threads, 50 frames deep; CPU seconds of sonde over wall seconds.

    python3 bench/live.py [--build build] [--reps 5] [--seconds 5]
                          [--append docs/PERFORMANCE.md]
"""
import argparse
import datetime
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attach import DEEP, TIMER  # noqa: E402
from doc import put_section  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKLOADS = ("pure_python", "native", "threads")
SOCKET = "sonde-bench-live-%d" % os.getpid()

# run a command, then write its CPU seconds and wall seconds to a file
RUSAGE = ("import resource, subprocess, sys, time\n"
          "t0 = time.perf_counter()\n"
          "subprocess.run(sys.argv[2:])\n"
          "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
          "open(sys.argv[1], 'w').write('%f %f' % (u.ru_utime + u.ru_stime, "
          "time.perf_counter() - t0))\n")


def tmux(*args):
    return subprocess.run(["tmux", "-L", SOCKET, "-f", "/dev/null"] + list(args),
                          capture_output=True, text=True)


def in_terminal(argv, done_file):
    """Starts argv in a 120x40 terminal; done_file appears when it ends."""
    command = " ".join(shlex.quote(a) for a in argv) + "; touch " + shlex.quote(done_file)
    tmux("new-session", "-d", "-x", "120", "-y", "40", "sh", "-c", command)


def wait_file(path, timeout=600):
    deadline = time.time() + timeout
    while not os.path.exists(path) and time.time() < deadline:
        time.sleep(0.05)
    if not os.path.exists(path):
        raise SystemExit("timed out waiting for " + path)


def timed(python, workload, env, tmp, mode, sonde):
    """The program's own wall seconds, plain or watched by mode."""
    proc = subprocess.Popen([python, "-c", TIMER, workload], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=env, text=True)
    watcher = None
    done = os.path.join(tmp, "live-done")
    if os.path.exists(done):
        os.unlink(done)
    if mode == "attach":
        watcher = subprocess.Popen([sonde, "attach", str(proc.pid), "--rate", "100", "-f",
                                    "folded", "-o", os.path.join(tmp, "live-bench.folded")],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    elif mode == "top":
        in_terminal([sonde, "top", str(proc.pid), "--rate", "100"], done)
    _, err = proc.communicate()
    if watcher:
        watcher.wait()
    if mode == "top":
        # top ends with the target: its ending line lingers until a key
        tmux("send-keys", "x")
        wait_file(done)
        tmux("kill-server")
    m = re.search(r"BENCH_ELAPSED ([0-9.]+)", err)
    if proc.returncode != 0 or not m:
        raise SystemExit("benchmark run failed:\n" + err[-2000:])
    return float(m.group(1))


def sonde_cpu(sonde, python, env, tmp, mode, seconds):
    """Percent of one core the sonde process used watching DEEP."""
    script = os.path.join(tmp, "deep_threads.py")
    with open(script, "w") as f:
        f.write(DEEP)
    target = subprocess.Popen([python, script], stdout=subprocess.PIPE, env=env)
    out = os.path.join(tmp, "live-rusage")
    if os.path.exists(out):
        os.unlink(out)
    try:
        target.stdout.readline()
        if mode == "attach":
            argv = [sonde, "attach", str(target.pid), "--rate", "100", "-d", str(seconds),
                    "-f", "folded", "-o", os.path.join(tmp, "deep.folded")]
        else:
            argv = [sonde, "top", str(target.pid), "--rate", "100", "-d", str(seconds)]
        in_terminal([sys.executable, "-c", RUSAGE, out] + argv, os.path.join(tmp, "live-done2"))
        wait_file(out)
        tmux("kill-server")
        with open(out) as f:
            cpu, wall = (float(x) for x in f.read().split())
        return 100.0 * cpu / wall
    finally:
        target.kill()
        target.wait()
        target.stdout.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--append", default="")
    args = ap.parse_args()
    if not shutil.which("tmux"):
        raise SystemExit("bench/live.py needs tmux (tools/setup-deps.sh --test)")
    sonde = os.path.join(args.build, "bin", "sonde")
    with open(os.path.join(args.build, "python")) as f:
        python = f.read().strip()
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    tmp = os.path.join(args.build, "bench")
    os.makedirs(tmp, exist_ok=True)

    load_before = os.getloadavg()[0]
    rows = []
    for name in WORKLOADS:
        w = os.path.join(ROOT, "bench", "workloads", name + ".py")
        times = {"plain": [], "attach": [], "top": []}
        for _ in range(args.reps):
            for mode in times:
                times[mode].append(timed(python, w, env, tmp, mode, sonde))
        base = statistics.median(times["plain"])
        att = statistics.median(times["attach"]) / base
        top = statistics.median(times["top"]) / base
        spread = (max(times["plain"]) - min(times["plain"])) / base
        rows.append((name, base, att, top, top / att, spread))
        print("%-12s python %.2fs  attach x%.3f  top x%.3f  top/attach x%.3f  (plain runs "
              "spread %.1f%%)" % (name, base, att, top, top / att, 100 * spread), flush=True)
    cpu = [(mode, sonde_cpu(sonde, python, env, tmp, mode, args.seconds))
           for mode in ("attach", "top")]
    for mode, percent in cpu:
        print("sonde %s at 100 Hz on 10 threads: %.2f%% of one core" % (mode, percent))
    load_after = os.getloadavg()[0]
    summary = "median top/attach x%.3f" % statistics.median(r[4] for r in rows)
    print(summary)
    if args.append:
        version = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"],
                                 capture_output=True, text=True).stdout.strip()
        lines = [
            "",
            "## `sonde top` (the live view) against `sonde attach`",
            "",
            "Generated by bench/live.py on %s: %s, %d cores, Python %s (%s). Load average %.1f "
            "before, %.1f after." % (datetime.date.today().isoformat(), platform.machine(),
                                     os.cpu_count(), version, python, load_before, load_after),
            "",
            "The program's own time, plain, under `sonde attach --rate 100` and under `sonde top",
            "--rate 100` drawn full screen in a 120x40 terminal (tmux), %d runs each, interleaved;"
            % args.reps,
            "ratios of the medians. Spread: (slowest - fastest) / median of the plain runs.",
            "",
            "| workload | python (s) | attach | top | top / attach | plain spread |",
            "| --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        lines += ["| %s | %.2f | x%.3f | x%.3f | x%.3f | %.1f%% |"
                  % (r[0], r[1], r[2], r[3], r[4], 100 * r[5]) for r in rows]
        lines += ["", "Summary: %s (target: equal to attach's, within the spread)." % summary, "",
                  "The sonde process's own CPU for %.0f s at 100 Hz on 10 busy threads 50 frames "
                  "deep (the screen is drawn there):" % args.seconds, "",
                  "| command | CPU (% of one core) |", "| --- | ---: |"]
        lines += ["| %s | %.2f%% |" % (mode, percent) for mode, percent in cpu]
        lines.append("")
        how = put_section(args.append, "bench/live.py", "\n".join(lines))
        print("%s bench/live.py's section of %s" % (how, args.append))


if __name__ == "__main__":
    sys.exit(main())
