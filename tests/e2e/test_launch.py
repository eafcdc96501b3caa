"""`sonde run app.py` behaves exactly like `python3 app.py`.

Issue #32: the two shares these tests read (the busy loop's share of the
profile kept at SIGTERM and at os._exit) go through tests/accuracy.py: the
truth by construction (the loop is all the program runs), n the samples of
the profile's lines, a named systematic allowance, and the Wilson interval
at the suite's corrected confidence; each test checks first that its
samples can catch the defect it was written for.
"""
import json
import os
import signal
import subprocess
import sys
import time

import accuracy
from accuracy import need_samples, samples_to_catch, share_at_least
from support import check, file_entry, line_total, lines_by_no, marked_lines

VERSIONS = "all: the start-up through sitecustomize, and what the program sees of it"

# Systematic allowances (percentage points) of a loop that is all the
# program runs, by construction:
# - SIGTERM: the first and last ticks (the lines before the loop, the exit
#   path after the signal), one or two of ~100 samples
SIGTERM_ALLOWANCE = 5.0
# - os._exit: besides those, the fork, the wait for the child and the
#   writes after the loop, a tick or two of its ~40 samples
OS_EXIT_ALLOWANCE = 10.0
# The defect these checks were written for: the loop's samples lost at the
# program's end (the profile written from part of them) or charged to
# other lines: the loop read at half its share.
LOST_DEFECT = 50.0


def _profile_samples(prof):
    """The samples of every line of every file: the n of a share of the
    profile."""
    return sum(l.get("n_samples", 0) for e in prof["files"].values() for l in e["lines"])


def _power(what, n, allowance, defect=LOST_DEFECT):
    need_samples(what, n, samples_to_catch(1 - defect / 100.0, 1.0, allowance / 100.0))

PROBE = r'''
import json, os, subprocess, sys
data = {
    "argv": sys.argv, "name": __name__, "path": sys.path, "file": __file__,
    "environ": dict(os.environ),
    "c_environ": sorted(subprocess.run(["env", "-0"], capture_output=True).stdout.split(b"\0")),
    "stdin": sys.stdin.read(), "flags": list(sys.flags),
    "orig_argv": getattr(sys, "orig_argv", None),
    "main_keys": sorted(k for k in vars(sys.modules["__main__"]) if k != "data"),
    "warnoptions": sys.warnoptions, "executable": sys.executable,
    "has_sitecustomize": "sitecustomize" in sys.modules,
}
data["c_environ"] = [x.decode("utf-8", "replace") for x in data["c_environ"]]
print(json.dumps(data))
sys.stderr.write("to stderr\n")
'''


def _probe(env_, runner, args, **kw):
    proc = runner(args, input="some input\n", **kw)
    check(proc.returncode == 0, "probe failed: %s" % proc.stderr[-2000:])
    return json.loads(proc.stdout), proc.stderr


def test_same_view_as_python(env):
    script = env.write("probe.py", PROBE)
    out = os.path.join(env.tmp, "prof.json")
    plain, plain_err = _probe(env, env.run_python, [script, "a", "b c", "--flag"])
    ours, our_err = _probe(env, env.run_sonde, ["run", "-o", out, script, "a", "b c", "--flag"])
    for key in plain:
        check(plain[key] == ours[key], "%s differs:\n python: %r\n sonde:  %r" % (key, plain[key], ours[key]))
    check(plain_err == our_err, "stderr differs: %r vs %r" % (plain_err, our_err))
    check(os.path.exists(out), "no profile written")


def test_same_view_with_pythonpath(env):
    script = env.write("probe.py", PROBE)
    extra = {"PYTHONPATH": os.path.join(env.tmp, "extra-dir")}
    plain, _ = _probe(env, env.run_python, [script], env=extra)
    ours, _ = _probe(env, env.run_sonde, ["run", "-o", os.path.join(env.tmp, "p.json"), script], env=extra)
    for key in ("path", "environ", "c_environ", "argv"):
        check(plain[key] == ours[key], "%s differs:\n python: %r\n sonde:  %r" % (key, plain[key], ours[key]))


def test_module_mode(env):
    env.write("pkg/__init__.py", "")
    env.write("pkg/mod.py", PROBE)
    plain, _ = _probe(env, env.run_python, ["-m", "pkg.mod", "x", "y"])
    ours, _ = _probe(env, env.run_sonde, ["run", "-o", os.path.join(env.tmp, "p.json"), "-m", "pkg.mod", "x", "y"])
    for key in ("argv", "name", "path", "environ", "c_environ", "stdin"):
        check(plain[key] == ours[key], "%s differs:\n python: %r\n sonde:  %r" % (key, plain[key], ours[key]))


MODULES = "import json, sys; print(json.dumps(sorted(sys.modules)))"


def test_boot_loads_bytecode_and_few_modules(env):
    """`sonde run` starts the interpreter with the bytecode make wrote for
    it (sonde/_boot/sitecustomize.py and sonde/__init__.py, unchecked
    hashes), also where Python may write none (PYTHONDONTWRITEBYTECODE, a
    read-only install), and adds none of the pure-Python modules plain
    python does not import at start (the boot finds the sitecustomize it
    shadowed through the frozen import system, not importlib.util, whose
    contextlib, collections and functools would cost milliseconds)."""
    tag = env.run_python(["-c", "import sys; print(sys.implementation.cache_tag)"]).stdout.strip()
    pkg = os.path.join(env.lib, "sonde")
    pycs = [os.path.join(pkg, "_boot", "__pycache__", "sitecustomize.%s.pyc" % tag),
            os.path.join(pkg, "__pycache__", "__init__.%s.pyc" % tag)]
    for pyc in pycs:
        check(os.path.exists(pyc), "make wrote no %s" % pyc)
        with open(pyc, "rb") as f:
            flags = int.from_bytes(f.read(8)[4:8], "little")
        check(flags == 1, "%s: flags %d, not 1 (hash-based, source unchecked)" % (pyc, flags))
    out = os.path.join(env.tmp, "p.json")
    proc = env.run_sonde(["run", "-o", out, "-c", "pass"],
                         env={"PYTHONVERBOSE": "1", "PYTHONDONTWRITEBYTECODE": "1"})
    check(proc.returncode == 0, "sonde run: %s" % proc.stderr[-2000:])
    for pyc in pycs:
        check("code object from %r" % pyc in proc.stderr,
              "%s was not loaded: %s" % (pyc, [l for l in proc.stderr.splitlines() if "sonde" in l]))
    plain = json.loads(env.run_python(["-c", MODULES]).stdout)
    proc = env.run_sonde(["run", "-o", out, "-c", MODULES])
    check(proc.returncode == 0, "sonde run: %s" % proc.stderr[-2000:])
    added = sorted(set(json.loads(proc.stdout)) - set(plain))
    heavy = [m for m in added if m in ("contextlib", "collections", "functools", "importlib.util",
                                       "importlib.machinery", "importlib")]
    check(not heavy, "sonde run imports %s at start (all it adds: %s)" % (heavy, added))


def test_python_dash_m_sonde(env):
    script = env.write("probe.py", PROBE)
    extra = {"PYTHONPATH": env.lib}
    out = os.path.join(env.tmp, "p.json")
    plain, _ = _probe(env, env.run_python, [script, "1"], env=extra)
    ours, _ = _probe(env, env.run_python, ["-m", "sonde", "run", "-o", out, script, "1"], env=extra)
    for key in ("argv", "name", "path", "environ", "c_environ", "stdin", "file"):
        check(plain[key] == ours[key], "%s differs:\n python: %r\n sonde:  %r" % (key, plain[key], ours[key]))
    check(os.path.exists(out), "no profile written")


def test_exit_status(env):
    script = env.write("exits.py", "import sys\nprint('out')\nsys.exit(int(sys.argv[1]))\n")
    for code in ("0", "3", "255"):
        proc = env.run_sonde(["run", "-o", os.path.join(env.tmp, "p.json"), script, code])
        check(proc.returncode == int(code), "exit %d instead of %s" % (proc.returncode, code))
        check(proc.stdout == "out\n", proc.stdout)
    msg = env.write("exitmsg.py", "import sys\nsys.exit('bye now')\n")
    plain = env.run_python([msg])
    ours = env.run_sonde(["run", "-o", os.path.join(env.tmp, "p.json"), msg])
    check((plain.returncode, plain.stderr) == (ours.returncode, ours.stderr),
          "sys.exit(str): %r vs %r" % ((plain.returncode, plain.stderr), (ours.returncode, ours.stderr)))


def test_uncaught_exception(env):
    script = env.write("boom.py", """\
        def inner():
            raise ValueError("kaboom")
        def outer():
            inner()
        print("started")
        outer()
        """)
    out = os.path.join(env.tmp, "p.json")
    plain = env.run_python([script])
    ours = env.run_sonde(["run", "-o", out, script])
    check(ours.returncode == 1 == plain.returncode, "exit %d" % ours.returncode)
    check(ours.stderr == plain.stderr, "traceback differs:\n%s\n---\n%s" % (plain.stderr, ours.stderr))
    check(ours.stdout == "started\n", ours.stdout)
    check(os.path.exists(out), "no profile after an uncaught exception")


def test_keyboard_interrupt_keeps_profile(env):
    script = env.write("intr.py", """\
        import os, signal, time
        def spin():
            end = time.time() + 0.6
            n = 0
            while time.time() < end:  # @spin
                n += 1
        spin()
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
        """)
    # as from a terminal: a test run started in the background inherits
    # SIGINT ignored, and Python then installs no KeyboardInterrupt handler
    def default_sigint():
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    plain = env.run_python([script], preexec_fn=default_sigint)
    proc, prof = env.profile(script, preexec_fn=default_sigint)
    check(proc.returncode == plain.returncode == -signal.SIGINT,
          "exit %d (python: %d)" % (proc.returncode, plain.returncode))
    check("KeyboardInterrupt" in proc.stderr, proc.stderr)
    lines = lines_by_no(prof, script)
    check(marked_lines(script)["spin"] in lines or marked_lines(script)["spin"] + 1 in lines,
          "the spin loop is not in the profile: %s" % sorted(lines))


def test_sigterm_keeps_profile(env):
    script = env.write("term.py", """\
        import sys
        print("ready", flush=True)
        n = 0
        while True:
            n += 1  # @loop
        """)
    out = os.path.join(env.tmp, "term.json")
    p = subprocess.Popen([env.sonde, "run", "--json", "-o", out, script], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env.base_env(), cwd=env.tmp)
    check(p.stdout.readline().strip() == "ready", "program did not start")
    time.sleep(1.0)
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        raise AssertionError("SIGTERM did not end the program")
    check(p.returncode == -signal.SIGTERM, "exit %d, expected death by SIGTERM" % p.returncode)
    check(os.path.exists(out), "no profile after SIGTERM; stderr: %s" % p.stderr.read())
    with open(out) as f:
        prof = json.load(f)
    lines = lines_by_no(prof, script)
    loop = marked_lines(script)["loop"]
    share = sum(lines[n]["n_cpu_percent_python"] + lines[n]["n_cpu_percent_c"]
                for n in (loop - 1, loop) if n in lines)
    # truth: the loop (its header and body) is all the program runs, on CPU
    # (time waiting for a CPU counts as running); the defect: its samples
    # lost at SIGTERM or charged elsewhere
    n = _profile_samples(prof)
    _power("the busy loop at SIGTERM", n, SIGTERM_ALLOWANCE)
    return accuracy.check(share_at_least("the busy loop (Python + native)", share, n, 100,
                                         SIGTERM_ALLOWANCE))


def test_program_using_timers_and_signals(env):
    script = env.write("timers.py", """\
        import signal, time
        hits = {"alrm": 0, "prof": 0}
        def on_alrm(s, f): hits["alrm"] += 1
        def on_prof(s, f): hits["prof"] += 1
        signal.signal(signal.SIGALRM, on_alrm)
        signal.signal(signal.SIGPROF, on_prof)
        signal.setitimer(signal.ITIMER_REAL, 0.01, 0.01)
        signal.setitimer(signal.ITIMER_PROF, 0.01, 0.01)
        # 0.5 s of the process's own CPU time: ITIMER_PROF counts CPU time,
        # so on a loaded machine a wall-clock second can hold too few ticks
        end = time.process_time() + 0.5
        x = 0
        while time.process_time() < end:
            x += 1
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.setitimer(signal.ITIMER_PROF, 0)
        print(hits["alrm"] > 20, hits["prof"] > 20, signal.getsignal(signal.SIGALRM) is on_alrm)
        """)
    plain = env.run_python([script])
    ours = env.run_sonde(["run", "-o", os.path.join(env.tmp, "p.json"), script])
    check(plain.stdout.strip() == "True True True", "python: " + plain.stdout)
    check(ours.stdout == plain.stdout and ours.returncode == 0,
          "sonde: %r exit %d %s" % (ours.stdout, ours.returncode, ours.stderr[-500:]))


def test_fork_and_subprocess(env):
    script = env.write("forks.py", """\
        import os, subprocess, sys
        pid = os.fork()
        if pid == 0:
            print("child", flush=True)
            sys.exit(7)
        _, status = os.waitpid(pid, 0)
        print("child exit", os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status >> 8)
        r = subprocess.run([sys.executable, "-c", "import os; print(any(k.startswith('SONDE_RUN') for k in os.environ))"],
                           capture_output=True, text=True)
        print("grandchild sees sonde:", r.stdout.strip())
        r = subprocess.run(["ls", "/"], capture_output=True, text=True)
        print("ls ok", r.returncode == 0 and "usr" in r.stdout)
        """)
    out = os.path.join(env.tmp, "fork.json")
    ours = env.run_sonde(["run", "--json", "-o", out, script])
    check(ours.returncode == 0, ours.stderr)
    got = ours.stdout.splitlines()
    check(got == ["child", "child exit 7", "grandchild sees sonde: False", "ls ok True"], got)
    with open(out) as f:
        json.load(f)
    leftovers = [f for f in os.listdir(env.tmp) if f.startswith(".") or f.endswith(".tmp")]
    check(not leftovers, "temporary files left: %s" % leftovers)


def test_report_to_stderr_by_default(env):
    script = env.write("plain.py", """\
        import time
        end = time.time() + 0.5
        while time.time() < end:
            pass
        print("done")
        """)
    proc = env.run_sonde(["run", script])
    check(proc.returncode == 0 and proc.stdout == "done\n", proc.stdout + proc.stderr)
    check("plain.py" in proc.stderr, "no report on stderr: %r" % proc.stderr[-1000:])
    check("\x1b[" not in proc.stderr, "colour escape codes in a non-terminal report")


def test_fork_warning_not_added(env):
    """3.12+ warns when a multi-threaded process forks: sonde's sampler
    thread must not make a single-threaded program multi-threaded at fork."""
    script = env.write("fork1.py", """\
        import os, time
        end = time.perf_counter() + 0.3
        while time.perf_counter() < end: pass
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        end = time.perf_counter() + 0.3
        while time.perf_counter() < end: pass  # @after
        """)
    plain = env.run_python([script])
    proc, prof = env.profile(script)
    check(proc.stderr == plain.stderr, "stderr differs: %r vs %r" % (plain.stderr, proc.stderr))
    lines = lines_by_no(prof, script)
    check(marked_lines(script)["after"] in lines, "no samples after the fork: the sampler did not resume")


def test_os_exit_keeps_profile(env):
    """os._exit() skips atexit handlers; the profile of what ran is still
    written, the exit status and output are plain python's, and a forked
    child's os._exit writes nothing."""
    script = env.write("osexit.py", """\
        import os, sys, time
        end = time.perf_counter() + 0.4
        while time.perf_counter() < end: pass  # @busy
        pid = os.fork()
        if pid == 0:
            os._exit(5)
        print("child", os.waitpid(pid, 0)[1] >> 8, flush=True)
        print("pending", end="")
        sys.stderr.write("to stderr\\n")
        os._exit(status=3)
        """)
    plain = env.run_python([script])
    check(plain.returncode == 3, "plain python: %d %r" % (plain.returncode, plain.stderr))
    out = os.path.join(env.tmp, "osexit.json")
    ours = env.run_sonde(["run", "--json", "-o", out, script])
    check(ours.returncode == 3, "exit %d: %s" % (ours.returncode, ours.stderr[-2000:]))
    check(ours.stdout == plain.stdout, "stdout %r vs plain %r" % (ours.stdout, plain.stdout))
    check(ours.stderr == plain.stderr, "stderr %r vs plain %r" % (ours.stderr, plain.stderr))
    check(os.path.exists(out), "no profile written on os._exit")
    with open(out) as f:
        prof = json.load(f)
    busy = lines_by_no(prof, script).get(marked_lines(script)["busy"])
    check(busy, "busy line missing: %r" % sorted(lines_by_no(prof, script)))
    # truth: the 0.4 s loop is all the program runs but for the fork, the
    # wait and the writes after it; the defect: the loop's samples lost at
    # os._exit (only part of them written) or charged elsewhere
    n = _profile_samples(prof)
    _power("the busy line before os._exit", n, OS_EXIT_ALLOWANCE)
    note = accuracy.check(share_at_least("the busy line", line_total(busy), n, 100,
                                         OS_EXIT_ALLOWANCE))
    leftovers = [f for f in os.listdir(env.tmp) if f.startswith(".") or f.endswith(".tmp")]
    check(not leftovers, "temporary files left: %s" % leftovers)
    return "%s; busy line n_samples %d" % (note, busy["n_samples"])


ARGV_PROBE = r'''
import hashlib, sys
arg = sys.argv[1]
print(len(arg), hashlib.sha256(arg.encode("utf-8", "surrogateescape")).hexdigest())
'''


def _long_path(base, total, name_len=200, suffix=".json"):
    """A path of exactly `total` characters under base: nested directories
    of name_len characters (each under NAME_MAX), then a file ending in
    suffix. Creates the directories."""
    path = base
    k = 0
    while total - len(path) > name_len + 1 + 64:
        path = os.path.join(path, ("d%d-" % k).ljust(name_len, "x"))
        k += 1
    os.makedirs(path)
    rest = total - len(path) - 1
    return os.path.join(path, "r" * (rest - len(suffix)) + suffix)


def test_long_outfile_path_and_argument(env):
    """Paths and arguments of any length the system accepts go through: a
    4,000-character output path gets the report at exactly that path
    (nothing written under a shortened name), and a 100,000-character
    argument reaches the program's sys.argv unchanged."""
    import hashlib
    script = env.write("argv.py", ARGV_PROBE)
    out = _long_path(os.path.join(env.tmp, "deep"), 4000)
    check(len(out) == 4000 and max(len(p) for p in out.split("/")) < 255, "bad test path")
    arg = "".join("abc,:; \x1f=%d" % i for i in range(20000))[:100000]
    check(len(arg) == 100000, "bad test argument")
    proc = env.run_sonde(["run", "-o", out, script, arg])
    check(proc.returncode == 0, "exit %d: %s" % (proc.returncode, proc.stderr[-2000:]))
    want = "%d %s\n" % (len(arg), hashlib.sha256(arg.encode()).hexdigest())
    check(proc.stdout == want, "argument changed on the way: %r, wanted %r" % (proc.stdout, want))
    check(os.path.isfile(out), "no report at the 4,000-character path")
    with open(out, encoding="utf-8") as f:
        prof = json.load(f)  # the ending picks JSON
    check(prof["program"] == script and prof["args"] == [arg],
          "report of another run: %r %d" % (prof["program"], len(prof["args"])))
    leftovers = os.listdir(os.path.dirname(out))
    check(leftovers == [os.path.basename(out)], "other files beside the report: %r"
          % [name[:20] for name in leftovers])
    # The 1,031-character case of the bug report, with --outfile and --json.
    short = _long_path(os.path.join(env.tmp, "b"), 1031, name_len=250)
    proc = env.run_sonde(["run", "--json", "--outfile", short, script, "x"])
    check(proc.returncode == 0 and os.path.isfile(short), "1,031-character path: %s"
          % proc.stderr[-500:])
    check(os.listdir(os.path.dirname(short)) == [os.path.basename(short)],
          "report written under another name: %r" % os.listdir(os.path.dirname(short)))
