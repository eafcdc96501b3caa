#!/usr/bin/env python3
"""sonde against Python's own sampling profiler (3.15's `profiling.sampling`).

Runs inside the chroot that tools/chroot.sh makes (Debian unstable's
python3.15), with a sonde built for that interpreter. Every workload in
bench/workloads/ times itself (perf_counter around runpy, so start-up and
report writing are not counted) and runs, interleaved, one of each in turn,
repeated:

  python          plain python3.15
  sonde run       `sonde run` at its default rate (100 Hz)
  sonde 1 kHz     `sonde run --interval 0.001`
  tachyon 1 kHz   `python3.15 -m profiling.sampling run -a` (its default rate)
  tachyon 100 Hz  the same with `-r 100` (sonde's rate)

and then from outside, on a program already running:

  attach sonde    `sonde attach PID --rate 100` until the program ends
  attach tachyon  `python3.15 -m profiling.sampling attach -a -r 100 PID`

For each: the program's own wall time over plain python's (median of the
runs), and the CPU of the whole command (profiler and program, from wait4)
over plain python's. Both profilers sample every thread and write a file.

    python3.15 bench/tachyon.py --build DIR [--reps 3] [--only NAME]
                                [--append docs/PERFORMANCE.md]
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
         "t0 = time.perf_counter()\n"
         "runpy.run_path(path, run_name='__main__')\n"
         "sys.stderr.write('BENCH_ELAPSED %.6f\\n' % (time.perf_counter() - t0))\n")


def run_timed(argv, env):
    """(program's own wall seconds, CPU seconds of the whole command)."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = status
    m = re.search(r"BENCH_ELAPSED ([0-9.]+)", err)
    if status != 0 or not m:
        raise SystemExit("benchmark run failed: %s\n%s" % (" ".join(argv), err[-2000:]))
    return float(m.group(1)), usage.ru_utime + usage.ru_stime


def attach_timed(profiler_argv, python, timer, workload, env):
    """Starts the program, attaches the profiler to it until it ends.
    Returns (program's own wall seconds, CPU of program + profiler)."""
    target = subprocess.Popen([python, timer, workload], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, env=env)
    time.sleep(0.05)
    prof = subprocess.Popen(profiler_argv(target.pid), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=env)
    err = target.stderr.read().decode(errors="replace")
    target.stderr.close()
    _, tstatus, tusage = os.wait4(target.pid, 0)
    target.returncode = tstatus
    perr = prof.stderr.read().decode(errors="replace")
    prof.stderr.close()
    _, pstatus, pusage = os.wait4(prof.pid, 0)
    prof.returncode = pstatus
    m = re.search(r"BENCH_ELAPSED ([0-9.]+)", err)
    if tstatus != 0 or not m:
        raise SystemExit("benchmark target failed:\n%s" % err[-2000:])
    if pstatus != 0:
        raise SystemExit("profiler failed: %s\n%s" % (" ".join(profiler_argv(0)), perr[-2000:]))
    cpu = tusage.ru_utime + tusage.ru_stime + pusage.ru_utime + pusage.ru_stime
    return float(m.group(1)), cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", default="")
    ap.add_argument("--append", default="")
    args = ap.parse_args()

    python = sys.executable
    sonde = os.path.join(args.build, "bin", "sonde")
    tmp = os.path.join(args.build, "bench-tachyon")
    os.makedirs(tmp, exist_ok=True)
    timer = os.path.join(tmp, "timer.py")
    with open(timer, "w") as f:
        f.write(TIMER)
    env = dict(os.environ)
    env["SONDE_PYTHON"] = python
    env.pop("PYTHONPATH", None)
    out = lambda name: os.path.join(tmp, name)  # noqa: E731

    modes = {
        "python": lambda w: [python, timer, w],
        "sonde run": lambda w: [sonde, "run", "--json", "-o", out("s.json"), timer, w],
        "sonde 1 kHz": lambda w: [sonde, "run", "--interval", "0.001", "--json", "-o",
                                  out("s1k.json"), timer, w],
        "tachyon 1 kHz": lambda w: [python, "-m", "profiling.sampling", "run", "-a", "--collapsed",
                                    "-o", out("t.txt"), timer, w],
        "tachyon 100 Hz": lambda w: [python, "-m", "profiling.sampling", "run", "-a", "-r", "100",
                                     "--collapsed", "-o", out("t100.txt"), timer, w],
    }
    attachers = {
        "attach sonde": lambda pid: [sonde, "attach", str(pid), "--rate", "100", "-o",
                                     out("a.folded")],
        "attach tachyon": lambda pid: [python, "-m", "profiling.sampling", "attach", "-a", "-r",
                                       "100", "--collapsed", "-o", out("at.txt"), str(pid)],
    }
    workloads = sorted(glob.glob(os.path.join(ROOT, "bench", "workloads", "*.py")))
    if args.only:
        workloads = [w for w in workloads if args.only in w]
    names = list(modes) + list(attachers)
    rows = []
    for w in workloads:
        wall = {m: [] for m in names}
        cpu = {m: [] for m in names}
        for _ in range(args.reps):
            for m, argv in modes.items():
                t, c = run_timed(argv(w), env)
                wall[m].append(t)
                cpu[m].append(c)
            for m, argv in attachers.items():
                t, c = attach_timed(argv, python, timer, w, env)
                wall[m].append(t)
                cpu[m].append(c)
        base_t = statistics.median(wall["python"])
        base_c = statistics.median(cpu["python"])
        row = (os.path.basename(w)[:-3], base_t,
               {m: (statistics.median(wall[m]) / base_t, statistics.median(cpu[m]) / base_c)
                for m in names[1:]})
        rows.append(row)
        print("%-14s python %5.2fs  " % row[:2]
              + "  ".join("%s x%.3f/x%.3f" % (m, *row[2][m]) for m in names[1:]), flush=True)

    version = sys.version.split()[0]
    summary = {m: (statistics.median(r[2][m][0] for r in rows),
                   statistics.median(r[2][m][1] for r in rows)) for m in names[1:]}
    print("median: " + "  ".join("%s x%.3f/x%.3f" % (m, *summary[m]) for m in names[1:]))
    if args.append:
        lines = [
            "",
            "## Against Python's own sampling profiler (3.15 `profiling.sampling`)",
            "",
            "Generated by bench/tachyon.py on %s: %s, %d cores, Python %s (Debian unstable, in"
            " the chroot of tools/chroot.sh)." % (datetime.date.today().isoformat(),
                                                  platform.machine(), os.cpu_count(), version),
            "Each workload times itself; %d runs per mode, the modes interleaved. Each cell:"
            % args.reps,
            "the program's wall time over plain Python's / the CPU of the whole command",
            "(profiler and program) over plain Python's, medians. Both profilers sample every",
            "thread (`-a` for profiling.sampling) and write a file.",
            "",
            "| workload | python (s) | " + " | ".join(names[1:]) + " |",
            "| --- | ---: | " + " | ".join("---:" for _ in names[1:]) + " |",
        ]
        for name, base, cells in rows:
            lines.append("| %s | %.2f | " % (name, base)
                         + " | ".join("x%.3f / x%.2f" % cells[m] for m in names[1:]) + " |")
        lines.append("| median | | " + " | ".join("x%.3f / x%.2f" % summary[m]
                                                  for m in names[1:]) + " |")
        lines.append("")
        how = put_section(args.append, "bench/tachyon.py", "\n".join(lines))
        print("%s bench/tachyon.py's section of %s" % (how, args.append))


if __name__ == "__main__":
    main()
