"""Programs with child processes: `sonde run` profiles every Python process
the program starts (os.fork, multiprocessing's fork, spawn and forkserver,
subprocess of this interpreter) and merges them into one report, with a
table of the processes; the program sees what plain python gives it, and
ends the same way; nothing is left in the temporary directory."""
import json
import os
import signal

import accuracy
from accuracy import bytes_near
from support import check, concurrently, lines_by_no, marked_lines

VERSIONS = ("all: children followed through the interpreter's fork hooks, multiprocessing's start "
            "methods and exec")

# Issue #32: test_pool_start_methods's figures go through tests/accuracy.py.
# Systematic allowances: the workers' line seconds against their measured
# CPU time (relative): each process's first tick, taken before its line
# runs, and the worker's start before the profiler's first tick in it;
WORKER_LINE_ALLOWANCE = 0.05
# the parent's share against the measured split (points): the edges of the
# three processes' timed spans against their ticks.
SPLIT_ALLOWANCE = 2.0
# The defect: a worker lost or not followed (half the workers' time; the
# parent's share from ~30 % to ~45 %). At 2 ms a run has ~850 samples,
# enough to tell it (need_samples below); the default 10 ms gave ~170.
POOL_INTERVAL = "0.002"
WORKER_LOST = 0.5
# test_memory_in_children: the allocating line's allowance (relative):
# bytearray headers and the list (57 bytes a block, 0.01 %), a process's
# first mark taken as a fresh draw.
CHILD_BYTES_ALLOWANCE = 0.01

# A parent that works on its own line, then a Pool of two workers that each
# work on one line; every process measures its own CPU time around the
# work (the truth), and the parent prints the sums.
POOL = """\
    import multiprocessing as mp, os, sys, time

    def spin(sec):
        t0 = time.thread_time()
        end = t0 + sec
        n = 0
        while time.thread_time() < end: n += 1  # @worker
        return time.thread_time() - t0

    def parent_work(sec):
        t0 = time.thread_time()
        end = t0 + sec
        n = 0
        while time.thread_time() < end: n += 1  # @parent
        return time.thread_time() - t0

    if __name__ == "__main__":
        method = sys.argv[1]
        ctx = mp.get_context(None if method == "default" else method)
        parent = parent_work(0.5)
        with ctx.Pool(2) as pool:
            child = sum(pool.map(spin, [0.6, 0.6], chunksize=1))
        print("truth", parent, child, flush=True)
    """


def _line_sec(prof, script, mark):
    line = lines_by_no(prof, script).get(marked_lines(script)[mark])
    if not line:
        return 0.0
    share = line["n_cpu_percent_python"] + line["n_cpu_percent_c"] + line["n_sys_percent"]
    return share / 100.0 * prof["profiled_time_sec"]


def _line_samples(prof, script, mark):
    line = lines_by_no(prof, script).get(marked_lines(script)[mark])
    return line["n_samples"] if line else 0


def _tmpdir(env, name="tmpdir"):
    d = os.path.join(env.tmp, name)
    os.makedirs(d, exist_ok=True)
    return d


def _run(env, script, args, options=(), tmp_name="tmpdir"):
    """`sonde run --json` with TMPDIR the directory tmp_name (one per run
    when runs are made at once), which it must leave empty."""
    tmpdir = _tmpdir(env, tmp_name)
    out = os.path.join(env.tmp, "children-%s-%d.json" % (tmp_name, len(os.listdir(env.tmp))))
    proc = env.run_sonde(["run", "--json", "-o", out] + list(options) + [script] + list(args),
                         env={"TMPDIR": tmpdir}, timeout=120)
    check(not os.listdir(tmpdir), "left in TMPDIR: %s" % os.listdir(tmpdir))
    check(os.path.exists(out), "no profile; exit %d; stderr:\n%s" % (proc.returncode,
                                                                    proc.stderr[-3000:]))
    with open(out, encoding="utf-8") as f:
        return proc, json.load(f)


def test_pool_start_methods(env):
    """A Pool of two workers under each start method (and the interpreter's
    default): the workers' line has their measured CPU time (each worker's
    loop one unbroken span on its line: exact but for its two ends,
    accuracy.seconds_near), and the parent/child split matches the
    measured one (a Wilson interval over the lines' samples)."""
    script = env.write("pool.py", POOL)
    default = env.run_python(["-c", "import multiprocessing as m; print(m.get_start_method())"])
    check(default.stdout.strip() in ("fork", "spawn", "forkserver"), default.stdout)
    # the interpreter's default (fork before 3.14, forkserver from 3.14) is
    # one of the three: run through it, not forced
    methods = [m if m != default.stdout.strip() else "default"
               for m in ("fork", "spawn", "forkserver")]
    figures = []
    for method in methods:
        # CPU time only: the truth is CPU time, and on a loaded machine the
        # workers wait for a CPU for part of their wall time
        proc, prof = _run(env, script, [method], ["--virtual-time", "--interval", POOL_INTERVAL])
        check(proc.returncode == 0, "%s: exit %d\n%s" % (method, proc.returncode, proc.stderr[-3000:]))
        truth = [l for l in proc.stdout.splitlines() if l.startswith("truth")]
        check(truth, "%s: no truth line: %r" % (method, proc.stdout))
        parent_cpu, child_cpu = map(float, truth[0].split()[1:])
        procs = prof.get("processes", [])
        check(len(procs) >= 3, "%s: processes %r" % (method, procs))
        check(all(p["complete"] for p in procs), "%s: incomplete: %r" % (method, procs))
        check(prof["partial"]["processes_lost"] == 0, "%s: lost %r" % (method, prof["partial"]))
        # the workers end by the Pool's SIGTERM; the run's exit is the program's
        check(prof.get("exit") is None, "%s: exit %r" % (method, prof.get("exit")))
        worker = _line_sec(prof, script, "worker")
        parent = _line_sec(prof, script, "parent")
        n_worker = _line_samples(prof, script, "worker")
        n_parent = _line_samples(prof, script, "parent")
        # the workers' line against the workers' own thread_time (the
        # truth): two spans (one a worker), four ends
        interval = float(POOL_INTERVAL)
        accuracy.need_samples("%s: workers' line" % method, round(child_cpu / interval),
                              accuracy.ticks_to_catch(WORKER_LOST, WORKER_LINE_ALLOWANCE, 4))
        figures.append(accuracy.check(accuracy.seconds_near(
            "%s: workers' line" % method, worker, child_cpu, interval, WORKER_LINE_ALLOWANCE,
            edges=4)))
        reported = 100.0 * parent / (parent + worker)
        measured = 100.0 * parent_cpu / (parent_cpu + child_cpu)
        t = measured / 100.0
        accuracy.need_samples("%s: parent share" % method, n_parent + n_worker,
                              accuracy.samples_to_catch(t + 0.15, t, SPLIT_ALLOWANCE / 100.0))
        figures.append(accuracy.check(accuracy.share_near(
            "%s: parent share" % method, reported, n_parent + n_worker, measured,
            SPLIT_ALLOWANCE)))
    return "; ".join(figures)


test_pool_start_methods.alone = (
    "three processes spin CPU time at a 2 ms interval, checked against their own clocks: "
    "an accuracy test (tests/run.py, ALONE_LOCK); with the host's stream beside the chroot's "
    "and no lock, the workers' line read 1.128 s of 1.2 s (3.14), late ticks at its ends")

def test_subprocess_fork_and_nested(env):
    """subprocess.run([sys.executable, ...]), os.fork() without exec, and a
    Process that starts its own Pool (children of children): each one's
    line is in the one report; without following (--no-subprocesses) only
    the parent's is."""
    child = env.write("child.py", """\
        import time
        end = time.thread_time() + 0.3
        while time.thread_time() < end: pass  # @sub
        """)
    script = env.write("family.py", """\
        import multiprocessing as mp, os, subprocess, sys, time

        def spin(sec):
            end = time.thread_time() + sec
            while time.thread_time() < end: pass  # @grandchild
            return sec

        def middle():
            with mp.get_context("spawn").Pool(1) as pool:
                pool.map(spin, [0.3])

        if __name__ == "__main__":
            subprocess.run([sys.executable, %r], check=True)
            pid = os.fork()
            if pid == 0:
                end = time.thread_time() + 0.3
                while time.thread_time() < end: pass  # @forked
                os._exit(0)
            os.waitpid(pid, 0)
            p = mp.get_context("spawn").Process(target=middle)
            p.start()
            p.join()
            end = time.thread_time() + 0.2
            while time.thread_time() < end: pass  # @parent
            print("done", flush=True)
        """ % child)
    # followed and not followed at once (CI time): each line is checked for
    # 0.1 s of the 0.3 s of thread time it runs
    (proc, prof), (proc_alone, prof_alone) = concurrently(
        lambda options: _run(env, script, [], options, tmp_name="tmp" + "".join(options)),
        [[], ["--no-subprocesses"]])
    check(proc.returncode == 0 and proc.stdout == "done\n", "exit %d %r\n%s"
          % (proc.returncode, proc.stdout, proc.stderr[-3000:]))
    for path, mark in ((child, "sub"), (script, "forked"), (script, "grandchild"),
                       (script, "parent")):
        sec = _line_sec(prof, path, mark)
        check(sec >= 0.1, "%s: %.3f s; processes %r" % (mark, sec, prof.get("processes")))
    check(len(prof["processes"]) >= 5, "processes: %r" % prof["processes"])
    proc, prof = proc_alone, prof_alone
    check(proc.returncode == 0, proc.stderr[-2000:])
    check(_line_sec(prof, script, "forked") == 0 and _line_sec(prof, script, "parent") > 0.1,
          "--no-subprocesses followed a child")
    check(len(prof.get("processes", [])) == 1, "processes: %r" % prof.get("processes"))


def test_killed_child_and_environment(env):
    """A child killed with SIGKILL is counted as lost, the others are kept;
    what the program and its spawned child see (os.environ, sys.path,
    sys.argv, sys.flags, output, exit status) is plain python's."""
    script = env.write("env.py", """\
        import multiprocessing as mp, os, signal, subprocess, sys, time

        def show(tag):
            env = {k: v for k, v in os.environ.items()}
            print(tag, sorted(env.items()), sys.path, sys.argv[1:], tuple(sys.flags), flush=True)

        def victim():
            os.kill(os.getpid(), signal.SIGKILL)

        if __name__ == "__main__":
            show("parent")
            os.putenv("SET_BY_PUTENV", "1")  # in the C environment only
            subprocess.run([sys.executable, "-I", "-c", "import os; print(sorted(os.environ))"],
                           check=True)
            subprocess.run([sys.executable, "-c", "import sys; sys.argv[1:] = ['x'];"
                            "exec(open(%r).read().split('if __name__')[0]); show('child')"],
                           check=True)
            p = mp.get_context("fork").Process(target=victim)
            p.start()
            p.join()
            print("victim", p.exitcode, flush=True)
            end = time.thread_time() + 0.2
            while time.thread_time() < end: pass  # @parent
            sys.exit(3)
        """ % os.path.join(env.tmp, "env.py"))
    plain = env.run_python([script, "a b"], env={"TMPDIR": _tmpdir(env)})
    proc, prof = _run(env, script, ["a b"])
    check(proc.returncode == plain.returncode == 3, "exit %d vs %d\n%s"
          % (proc.returncode, plain.returncode, proc.stderr[-2000:]))
    check(proc.stdout == plain.stdout, "stdout differs\n--- python\n%s--- sonde\n%s"
          % (plain.stdout, proc.stdout))
    check(prof["partial"]["processes_lost"] == 1, "partial: %r" % prof["partial"])
    check(_line_sec(prof, script, "parent") > 0.1, "parent's line missing")


def test_signals_reach_the_program(env):
    """SIGTERM sent to `sonde run` reaches the program, whose children's
    profiles are still merged; sonde ends by the same signal."""
    import subprocess
    import time
    script = env.write("term.py", """\
        import multiprocessing as mp, sys, time

        def spin(sec):
            end = time.thread_time() + sec
            while time.thread_time() < end: pass  # @worker
            return sec

        if __name__ == "__main__":
            with mp.get_context("fork").Pool(1) as pool:
                pool.map(spin, [0.3])
            print("ready", flush=True)
            time.sleep(60)
        """)
    out = os.path.join(env.tmp, "term.json")
    tmpdir = _tmpdir(env)
    p = subprocess.Popen([env.sonde, "run", "-o", out, script], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env.base_env({"TMPDIR": tmpdir}))
    check(p.stdout.readline() == "ready\n", "no ready line")
    time.sleep(0.2)
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        raise AssertionError("sonde run did not end after SIGTERM")
    check(p.returncode == -signal.SIGTERM, "exit %r; stderr %s" % (p.returncode, p.stderr.read()))
    with open(out, encoding="utf-8") as f:
        prof = json.load(f)
    check(_line_sec(prof, script, "worker") > 0.1, "worker's line missing: %r" % prof.get("processes"))
    check(not os.listdir(tmpdir), "left in TMPDIR: %s" % os.listdir(tmpdir))


def test_parent_killed_first(env):
    """The program is killed with SIGKILL after its child ended: `sonde run`
    dies by SIGKILL as python does (the program is the process `sonde run`
    became: nothing of sonde's outlives it), with no report; the child's
    profile stays in the private directory, which the next run that follows
    a process removes."""
    child = env.write("kid.py", """\
        import time
        end = time.thread_time() + 0.3
        while time.thread_time() < end: pass  # @kid
        """)
    script = env.write("killed.py", """\
        import os, signal, subprocess, sys
        subprocess.run([sys.executable, %r], check=True)
        os.kill(os.getpid(), signal.SIGKILL)
        """ % child)
    tmpdir = _tmpdir(env, "killed")
    out = os.path.join(env.tmp, "killed.json")
    proc = env.run_sonde(["run", "--json", "-o", out, script], env={"TMPDIR": tmpdir},
                         timeout=120)
    check(proc.returncode == -signal.SIGKILL, "exit %d\n%s" % (proc.returncode, proc.stderr[-2000:]))
    check(not os.path.exists(out), "a report after SIGKILL")
    left = os.listdir(tmpdir)
    check(len(left) == 1 and left[0].startswith("sonde-run-"), "left: %r" % left)
    # the next run with a child removes what the killed one left
    again = env.write("again.py", """\
        import subprocess, sys
        subprocess.run([sys.executable, %r], check=True)
        """ % child)
    proc, prof = _run(env, again, [], tmp_name="killed")
    check(proc.returncode == 0, proc.stderr[-2000:])
    check(_line_sec(prof, child, "kid") > 0.1, "the child's line: %r" % prof.get("processes"))


def test_memory_in_children(env):
    """--memory follows the children too: each Pool worker (fork and spawn)
    allocates and keeps 40 MiB on one line; the line's figures add up."""
    script = env.write("mem.py", """\
        import multiprocessing as mp
        def alloc(n):
            keep = [bytearray(1 << 20) for _ in range(n)]  # @alloc
            return len(keep)
        if __name__ == "__main__":
            for method in ("fork", "spawn"):
                with mp.get_context(method).Pool(1) as pool:
                    pool.map(alloc, [40])
        """)
    proc, prof = _run(env, script, [], ["--memory"])
    check(proc.returncode == 0, proc.stderr[-2000:])
    line = lines_by_no(prof, script).get(marked_lines(script)["alloc"])
    check(line is not None, "the allocating line is not in the profile")
    # Truth 2 x 40 blocks of 1 MiB: 80 in the report's MB, which are MiB
    # (not 84, the same bytes in decimal MB). Each block is sampled with
    # probability 1 - e^-2 (about 69 samples) and charged 1 MiB / (1 - e^-2):
    # a Poisson count of byte_unit(1 MiB) = 0.157 MiB, about 510 (standard
    # deviation 3.5 MiB: 80 +- 17 at the suite's confidence), CHILD_BYTES_ALLOWANCE 1 %
    # (headers, the list). The defect: one child's memory not followed
    # (40 MiB: caught from about 100 samples).
    note = bytes_near("the allocating line's MB", line["n_malloc_mb"], 1 << 20, 80,
                      CHILD_BYTES_ALLOWANCE, WORKER_LOST, n=line["n_mallocs"])
    check(len(prof["processes"]) >= 3, "processes: %r" % prof["processes"])
    return "%s; %d processes" % (note, len(prof["processes"]))
