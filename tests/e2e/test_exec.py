"""os.exec* midway: before the process is replaced, the profile of what ran
is written (`run`, `run --memory`, `trace`), complete; a new program that
is not this interpreter runs as it would under plain python (same output,
exit status, descriptors and environment: nothing of sonde's crosses the
exec); this same interpreter running a program again is profiled too, as a
second run (its report in <file>.exec1.<ext>, one note line saying so); an
exec that fails all the same leaves profiling going on."""
import json
import os
import re
import stat

from support import check, concurrently, lines_by_no, marked_lines
from trace_support import load_stats

VERSIONS = "all: the exec hooks and the profile written across os.exec*"

# The new program reports what it inherited: open descriptors (with what
# they are) and any variable of sonde's; its exit status is its own.
CHILD = ("import os; fds = os.listdir('/proc/self/fd'); "
         "print('fds', sorted((int(f), os.path.exists('/proc/self/fd/' + f) and "
         "os.readlink('/proc/self/fd/' + f)) for f in fds)); "
         "print('env', sorted(k for k in os.environ if 'SONDE' in k or k == 'LD_PRELOAD')); "
         "raise SystemExit(7)")

EXEC_PROGRAM = """\
    import os, sys, time
    def hot():
        end = time.perf_counter() + 0.3
        while time.perf_counter() < end:  # @hot
            pass
    hot()
    print("before exec", flush=True)
    print("pending", end="")  # lost at the exec unless PYTHONUNBUFFERED
    # execvp tries each PATH entry: the ones without it fail first; env(1)
    # is not this interpreter, so nothing of sonde's follows
    os.execvp("env", ["env", sys.executable, "-c", %r])
    """ % CHILD

MODES = (("run", ["run", "--json"], "json"), ("memory", ["run", "--memory", "--json"], "json"),
         ("trace", ["trace"], "pstats"))

# Each test's runs (plain python's and every mode's) are made at once (CI
# time): their checks are exact output and a profile that names the code
# that ran, nothing a busy CPU changes.


def _check_profile(env, kind, out, script, functions):
    check(os.path.exists(out), "no profile written")
    if kind == "pstats":
        stats = load_stats(env, out)  # pstats.Stats of the interpreter under test
        for name in functions:
            key = "%s:%d(%s)" % (os.path.basename(script), marked_lines(script)["def_" + name], name)
            check(key in stats, "%s not in the statistics: %s" % (key, sorted(stats)[:20]))
        return
    with open(out) as f:
        prof = json.load(f)
    lines = lines_by_no(prof, script)
    for name in functions:
        line = lines.get(marked_lines(script)[name])
        check(line and line["n_samples"] >= 1, "%s's loop in the profile: %r" % (name, line))


def test_exec_writes_profile(env):
    script = env.write("execs.py", EXEC_PROGRAM.replace("def hot():", "def hot():  # @def_hot"))
    path_env = {"PATH": os.pathsep.join([os.path.join(env.tmp, "nowhere"), env.tmp,
                                         os.path.dirname(env.python), os.environ.get("PATH", "")])}
    def run(mode):
        if mode is None:
            return env.run_python([script], env=path_env)
        name, args, kind = mode
        return env.run_sonde(args + ["-o", os.path.join(env.tmp, "exec-%s.%s" % (name, kind)),
                                     script], env=path_env)

    plain, *runs = concurrently(run, (None,) + MODES, workers=4)
    check(plain.returncode == 7 and "fds" in plain.stdout, "plain python: %d %r %r"
          % (plain.returncode, plain.stdout, plain.stderr))
    for (name, args, kind), ours in zip(MODES, runs):
        out = os.path.join(env.tmp, "exec-%s.%s" % (name, kind))
        check(ours.returncode == plain.returncode, "%s: exit %d; stderr:\n%s"
              % (name, ours.returncode, ours.stderr[-2000:]))
        # the same descriptors, up to the numbers of the test's own pipes
        same = [re.sub(r"pipe:\[\d+\]", "pipe", p.stdout) for p in (plain, ours)]
        check(same[0] == same[1], "%s: stdout differs\n--- python\n%s--- sonde\n%s"
              % (name, plain.stdout, ours.stdout))
        check(ours.stderr == plain.stderr, "%s: stderr %r, python's %r"
              % (name, ours.stderr, plain.stderr))
        _check_profile(env, kind, out, script, ["hot"])
    leftovers = [f for f in os.listdir(env.tmp) if f.startswith(".")]
    check(not leftovers, "temporary files left: %s" % leftovers)


def test_failed_exec_profiling_goes_on(env):
    # executable but neither ELF nor script: execv fails with ENOEXEC after
    # the checks sonde can make, so the profile was written already
    bogus = os.path.join(env.tmp, "bogus")
    with open(bogus, "wb") as f:
        f.write(b"\x00\x01not a program\n")
    os.chmod(bogus, stat.S_IRWXU)
    script = env.write("failexec.py", """\
        import os, time
        def first():  # @def_first
            end = time.perf_counter() + 0.3
            while time.perf_counter() < end:  # @first
                pass
        def second():  # @def_second
            end = time.perf_counter() + 0.3
            while time.perf_counter() < end:  # @second
                pass
        first()
        try:
            os.execv(%r, [%r])
        except OSError as e:
            print("exec failed:", e.errno)
        second()
        """ % (bogus, bogus))
    def run(mode):
        if mode is None:
            return env.run_python([script])
        name, args, kind = mode
        return env.run_sonde(args + ["-o", os.path.join(env.tmp, "failexec-%s.%s" % (name, kind)),
                                     script])

    plain, *runs = concurrently(run, (None,) + MODES[::2])
    check(plain.returncode == 0 and "exec failed" in plain.stdout, plain.stdout + plain.stderr)
    for (name, args, kind), ours in zip(MODES[::2], runs):
        out = os.path.join(env.tmp, "failexec-%s.%s" % (name, kind))
        check(ours.returncode == 0 and ours.stdout == plain.stdout and ours.stderr == plain.stderr,
              "%s: exit %d, %r %r" % (name, ours.returncode, ours.stdout, ours.stderr[-2000:]))
        _check_profile(env, kind, out, script, ["first", "second"])


def test_os_exit_writes_profile(env):
    """os._exit runs no atexit handler: the profile of every mode is written
    all the same, the exit status and output are plain python's, and a forked child's os._exit
    writes nothing of the parent's."""
    script = env.write("osexit.py", """\
        import os, sys, time
        def hot():  # @def_hot
            end = time.perf_counter() + 0.3
            while time.perf_counter() < end:  # @hot
                pass
        hot()
        pid = os.fork()
        if pid == 0:
            os._exit(9)
        _, status = os.waitpid(pid, 0)
        print("child", status >> 8, flush=True)
        print("pending", end="")  # lost by os._exit unless unbuffered, as under python
        os._exit(5)
        """)
    def run(mode):
        if mode is None:
            return env.run_python([script])
        if mode == "terminal":
            return env.run_sonde(["trace", script])
        name, args, kind = mode
        return env.run_sonde(args + ["-o", os.path.join(env.tmp, "osexit-%s.%s" % (name, kind)),
                                     script])

    plain, *runs, terminal = concurrently(run, (None,) + MODES + ("terminal",))
    check(plain.returncode == 5 and plain.stdout.startswith("child 9\n"), "plain python: %d %r"
          % (plain.returncode, plain.stdout))
    for (name, args, kind), ours in zip(MODES, runs):
        out = os.path.join(env.tmp, "osexit-%s.%s" % (name, kind))
        check(ours.returncode == 5 and ours.stdout == plain.stdout and ours.stderr == plain.stderr,
              "%s: exit %d, stdout %r, stderr:\n%s" % (name, ours.returncode, ours.stdout,
                                                       ours.stderr[-2000:]))
        _check_profile(env, kind, out, script, ["hot"])
    # trace's report on the terminal: cProfile's, after the program's output
    ours = terminal
    check(ours.returncode == 5 and ours.stdout.startswith("child 9\n")
          and "function calls" in ours.stdout and "osexit.py" in ours.stdout,
          "trace to the terminal: exit %d, stdout %r" % (ours.returncode, ours.stdout[:500]))


AGAIN_PROGRAM = """\
    import os, sys, time
    def first():  # @def_first
        end = time.perf_counter() + 0.3
        while time.perf_counter() < end:  # @first
            pass
    def second():  # @def_second
        end = time.perf_counter() + 0.3
        while time.perf_counter() < end:  # @second
            pass
    if sys.argv[1:] != ["again"]:
        first()
        print("first", sorted(k for k in os.environ if "SONDE" in k or k == "LD_PRELOAD"), flush=True)
        os.execv(sys.executable, [sys.executable, "-X", "utf8", __file__, "again"])
    second()
    print("second", sys.flags.utf8_mode, sys.argv[1:],
          sorted(k for k in os.environ if "SONDE" in k or k == "LD_PRELOAD"), flush=True)
    sys.exit(6)
    """


def test_exec_same_interpreter_profiled_again(env):
    script = env.write("again.py", AGAIN_PROGRAM)
    def run(mode):
        if mode is None:
            return env.run_python([script])
        if mode == "terminal":
            return env.run_sonde(["run", script])
        name, args, kind = mode
        return env.run_sonde(args + ["-o", os.path.join(env.tmp, "again-%s.%s" % (name, kind)),
                                     script])

    plain, *runs, terminal = concurrently(run, (None,) + MODES + ("terminal",))
    check(plain.returncode == 6 and "second 1 ['again']" in plain.stdout,
          "plain python: %d %r %r" % (plain.returncode, plain.stdout, plain.stderr))
    for (name, args, kind), ours in zip(MODES, runs):
        out = os.path.join(env.tmp, "again-%s.%s" % (name, kind))
        second_out = os.path.join(env.tmp, "again-%s.exec1.%s" % (name, kind))
        check(ours.returncode == plain.returncode and ours.stdout == plain.stdout,
              "%s: exit %d, stdout %r; stderr:\n%s" % (name, ours.returncode, ours.stdout,
                                                      ours.stderr[-2000:]))
        notes = [l for l in ours.stderr.splitlines() if l.startswith("sonde:")]
        check(len(notes) == 1 and "second run" in notes[0] and second_out in notes[0]
              and ours.stderr.replace(notes[0] + "\n", "") == plain.stderr,
              "%s: stderr %r" % (name, ours.stderr))
        _check_profile(env, kind, out, script, ["first"])
        _check_profile(env, kind, second_out, script, ["second"])
    # on the terminal: two reports, the first before the exec
    ours = terminal
    check(ours.returncode == 6 and ours.stderr.count("sonde 0.") == 2
          and ours.stderr.index("second run") < ours.stderr.rindex("sonde 0."),
          "two reports on the terminal: %r" % ours.stderr[-3000:])
