"""Every profile mode writes on SIGTERM and SIGINT (`run`, `run --memory`,
`trace`): the program ends as plain python ends under the same signal
(KeyboardInterrupt traceback, death by the signal) and the profile is
complete (parsed: JSON, or pstats by the interpreter under test) and names
the hot function. A signal that comes while the interpreter is still
starting gives a profile or one `sonde:` line, never a hang, and the same
death as plain python."""
import json
import os
import signal
import subprocess
import time

from support import check, lines_by_no, marked_lines
from trace_support import load_stats

VERSIONS = "all: sonde's signal handlers beside the interpreter's, from start-up to exit"

PROGRAM = """\
    import sys, time
    def step(n):
        return n + 1
    def warm():  # @def_warm
        end = time.perf_counter() + 0.15
        while time.perf_counter() < end:  # @warm
            pass
    def spin():  # @def_spin
        n = 0
        while True:
            n = step(n)
    def wait():  # @def_wait
        time.sleep(60)
    warm()
    print("ready", flush=True)
    spin() if sys.argv[1] == "spin" else wait()
    """

MODES = (("run", ["run", "--json"], "json"), ("memory", ["run", "--memory", "--json"], "json"),
         ("trace", ["trace"], "pstats"))


def _default_sigint():
    # as from a terminal: a test run started in the background inherits
    # SIGINT ignored, and Python then installs no KeyboardInterrupt handler
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(env, argv):
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env.base_env(), cwd=env.tmp, preexec_fn=_default_sigint)


def _finish(p, what):
    try:
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise AssertionError("%s: the program did not end" % what)
    return p.returncode, out, err


def _signalled(env, argv, sig, what):
    """Runs argv, sends sig after its ready line; (status, stdout, stderr)."""
    return _signalled_all(env, [(argv, sig, what)])[0]


def _signalled_all(env, runs):
    """_signalled for each (argv, sig, what) of runs, the programs running at
    once (CI time): each gets its signal 0.2 s or more after its ready
    line. [(status, stdout, stderr)] in the order of runs."""
    procs = []
    try:
        for argv, sig, what in runs:
            procs.append(_start(env, argv))
        readies = []
        for p, (argv, sig, what) in zip(procs, runs):
            ready = p.stdout.readline()
            if ready.strip() != "ready":
                p.kill()
                raise AssertionError("%s: no ready line: %r %s"
                                     % (what, ready, p.communicate()[1][-2000:]))
            readies.append(ready)
        time.sleep(0.2)
        for p, (argv, sig, what) in zip(procs, runs):
            p.send_signal(sig)
        results = []
        for p, ready, (argv, sig, what) in zip(procs, readies, runs):
            status, out, err = _finish(p, what)
            results.append((status, ready + out, err))
        return results
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()


def _check_profile(env, kind, out, script, functions, what):
    check(os.path.exists(out), "%s: no profile written" % what)
    if kind == "pstats":
        stats = load_stats(env, out)
        for name in functions:
            key = "%s:%d(%s)" % (os.path.basename(script), marked_lines(script)["def_" + name], name)
            check(key in stats and stats[key][1] >= 1, "%s: %s not in the statistics: %s"
                  % (what, key, sorted(stats)[:20]))
        return
    with open(out) as f:
        prof = json.load(f)
    line = lines_by_no(prof, script).get(marked_lines(script)["warm"])
    check(line and line["n_samples"] >= 1, "%s: the hot line in the profile: %r" % (what, line))


def test_signals_write_every_profile(env):
    script = env.write("sig.py", PROGRAM)
    # SIGTERM while the program runs Python code, SIGINT while it sleeps
    # (its traceback is then the same at every run)
    for sig, phase in ((signal.SIGTERM, "spin"), (signal.SIGINT, "wait")):
        # plain python and every mode at once, each with its own file
        runs = [([env.python, script, phase], sig, "python")]
        for name, args, kind in MODES:
            out = os.path.join(env.tmp, "sig-%s-%s.%s" % (name, sig.name, kind))
            runs.append(([env.sonde] + args + ["-o", out, script, phase], sig,
                         "%s under %s" % (name, sig.name)))
        results = iter(_signalled_all(env, runs))
        plain = next(results)
        check(plain[0] == -sig, "plain python under %s: %r" % (sig.name, plain))
        for name, args, kind in MODES:
            out = os.path.join(env.tmp, "sig-%s-%s.%s" % (name, sig.name, kind))
            what = "%s under %s" % (name, sig.name)
            status, stdout, stderr = next(results)
            check(status == plain[0], "%s: exit %d, python's %d; stderr:\n%s"
                  % (what, status, plain[0], stderr[-2000:]))
            check(stdout == plain[1], "%s: stdout %r, python's %r" % (what, stdout, plain[1]))
            check(stderr == plain[2], "%s: stderr differs\n--- python\n%s--- sonde\n%s"
                  % (what, plain[2], stderr))
            _check_profile(env, kind, out, script, ["warm", phase], what)
    leftovers = [f for f in os.listdir(env.tmp) if f.startswith(".")]
    check(not leftovers, "temporary files left: %s" % leftovers)


def test_trace_sigterm_report_to_stdout(env):
    """Without -o, `sonde trace` prints cProfile's report on stdout, also
    when SIGTERM ends the program (the main thread asleep)."""
    script = env.write("sig.py", PROGRAM)
    status, stdout, stderr = _signalled(env, [env.sonde, "trace", script, "wait"], signal.SIGTERM,
                                        "trace")
    check(status == -signal.SIGTERM, "exit %d; stderr %s" % (status, stderr[-2000:]))
    check("ncalls" in stdout and "(warm)" in stdout and "(wait)" in stdout,
          "no report on stdout: %r" % stdout[-2000:])


def _wait_for_interpreter(p, python):
    """Until the interpreter runs: the launcher p became it (--no-subprocesses,
    trace), or its child did (the collector of `sonde run` stays p and sends
    the signals it gets on to its child)."""
    deadline = time.time() + 30
    while time.time() < deadline:
        pids = [p.pid]
        try:
            with open("/proc/%d/task/%d/children" % (p.pid, p.pid)) as f:
                pids += [int(c) for c in f.read().split()]
        except OSError:
            pass
        for pid in pids:
            try:
                if os.path.realpath("/proc/%d/exe" % pid) == python:
                    return
            except OSError:
                pass
        time.sleep(0.0005)


def test_signal_during_startup(env):
    """The signal comes once the launcher has become the interpreter, before
    the program's first line: a profile or one `sonde:` line, and death by
    the signal, as plain python (which dies by it at that point)."""
    script = env.write("quick.py", """\
        import time
        def f():
            time.sleep(5)
        f()
        """)
    python = os.path.realpath(env.python)
    for sig in (signal.SIGTERM, signal.SIGINT):
        for name, args, kind in MODES:
            out = os.path.join(env.tmp, "early-%s-%s.%s" % (name, sig.name, kind))
            what = "%s, %s during start-up" % (name, sig.name)
            p = _start(env, [env.sonde] + args + ["-o", out, script])
            _wait_for_interpreter(p, python)
            p.send_signal(sig)
            status, stdout, stderr = _finish(p, what)
            check(status == -sig, "%s: exit %d; stderr:\n%s" % (what, status, stderr[-2000:]))
            lines = stderr.strip().splitlines()
            noted = len(lines) == 1 and lines[0].startswith("sonde: ")
            check(noted or os.path.exists(out), "%s: neither a profile nor a note; stderr %r"
                  % (what, stderr))
            if os.path.exists(out):
                check(not stderr, "%s: a profile and %r" % (what, stderr))
                if kind == "json":
                    with open(out) as f:
                        json.load(f)
                else:
                    load_stats(env, out)
    # on the terminal, a report with no sample names the signal
    p = _start(env, [env.sonde, "run", script])
    _wait_for_interpreter(p, python)
    p.send_signal(signal.SIGTERM)
    status, stdout, stderr = _finish(p, "terminal, SIGTERM during start-up")
    check(status == -signal.SIGTERM and stderr.startswith(("sonde 0.", "sonde: ")),
          "terminal: exit %d, stderr %r" % (status, stderr))
    if stderr.startswith("sonde: no samples"):
        check("was ended by a signal (SIGTERM, exit status 143)" in stderr, stderr)


def test_signals_not_held_back_from_the_program(env):
    """SIGINT and SIGTERM are held back only while the interpreter starts:
    the program and its children see the signal mask plain python gives."""
    script = env.write("mask.py", """\
        import os, subprocess
        print([l for l in open("/proc/self/status") if l.startswith("SigBlk")])
        print(subprocess.run(["grep", "SigBlk", "/proc/self/status"], capture_output=True,
                             text=True).stdout)
        print(sorted(k for k in os.environ if k.startswith("SONDE_RUN")))
        """)
    plain = env.run_python([script])
    check(plain.returncode == 0, plain.stderr)
    for name, args, kind in MODES:
        ours = env.run_sonde(args + ["-o", os.path.join(env.tmp, "mask." + kind), script])
        check(ours.returncode == 0 and ours.stdout == plain.stdout,
              "%s: %r, python's %r; %s" % (name, ours.stdout, plain.stdout, ours.stderr[-2000:]))
