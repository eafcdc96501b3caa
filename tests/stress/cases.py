"""The cases of sonde's stress suite (tests/stress/run.py).

A case is a function `(env) -> note` registered with @case; it fails by
raising (support.check), skips with support.Skip. `same()` does the usual
work: it runs one program under plain python and under each sonde mode,
each in a fresh directory of its own, and compares byte for byte the
program's standard output and error, every file it left in its directory
and how it ended; then it checks each profile (JSON for run and --memory,
pstats for trace) was written and names the program.
"""
import json
import marshal
import os
import random
import re
import signal
import subprocess
import textwrap
import threading

from support import Skip, check

CASES = []
# the sonde modes a program is compared under, by name
MODES = ("run", "memory", "trace")


class Case:
    def __init__(self, func, alone, known):
        self.func = func
        self.name = func.__name__
        # keeps the CPUs busy: run when no other case runs
        self.alone = alone
        # a sonde bug left open: why, or "" (see run.py)
        self.known = known


def case(alone=False, known=""):
    def register(func):
        CASES.append(Case(func, alone, known))
        return func
    return register


# --- running and comparing ------------------------------------------------

def _argv(env, mode, script, args, prof, run_options=()):
    """The command line of one mode; prof is where its profile goes;
    run_options are added to `sonde run`'s."""
    if mode == "python":
        return [env.python, script] + list(args)
    if mode == "trace":
        return [env.sonde, "trace", "-o", prof, script] + list(args)
    extra = ["--memory"] if mode == "memory" else []
    # --no-gpu: NVML, where there is a GPU, opens descriptors of its own
    return ([env.sonde, "run", "--no-gpu", "--json", "-o", prof] + extra + list(run_options)
            + [script] + list(args))


def _snapshot(top, skip):
    """{relative path: bytes, or what it is when not a regular file} of
    every entry under top but the names in skip."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in sorted(dirnames + filenames):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, top)
            if rel in skip:
                continue
            if os.path.islink(path):
                found[rel] = "link -> %s" % os.readlink(path)
            elif os.path.isfile(path):
                with open(path, "rb") as f:
                    found[rel] = f.read()
            elif not os.path.isdir(path):
                found[rel] = "special"
    return found


def _ended(rc):
    return "killed by signal %d" % -rc if rc < 0 else "exit %d" % rc


def _short(data, n=600):
    text = repr(data)
    return text if len(text) <= n else text[:n // 2] + " ... " + text[-n // 2:]


def run_one(env, mode, source, args=(), script="prog.py", shell=None, extra_env=None,
            timeout=120, run_options=(), stdin=b""):
    """Runs source (a program's text, or bytes) as script in a fresh
    directory under mode ("python" or one of MODES). shell, when given, is
    a bash command line in which "$@" is the program's command. Returns
    (returncode, stdout bytes, stderr bytes, files dict, profile path).
    stdin: the bytes the program reads on its standard input."""
    cwd = os.path.join(env.tmp, mode)
    os.makedirs(cwd)
    path = os.path.join(os.fsencode(cwd), os.fsencode(script))
    data = source if isinstance(source, bytes) else textwrap.dedent(source).encode()
    with open(path, "wb") as f:
        f.write(data)
    prof = os.path.join(env.tmp, "profile-%s.%s" % (mode, "prof" if mode == "trace" else "json"))
    argv = _argv(env, mode, script, args, prof, run_options)
    if shell:
        argv = ["bash", "-c", shell, "bash"] + argv
    proc = subprocess.run(argv, cwd=cwd, env=env.base_env(extra_env), capture_output=True,
                          timeout=timeout, input=stdin)
    return _result(proc.returncode, proc.stdout, proc.stderr, cwd, {os.fsdecode(script)}, prof)


def _result(rc, out, err, cwd, skip, prof):
    """run_one's tuple; the run's own directory, which tracebacks and
    __file__ name, reads <cwd> in its output and files."""
    here = os.fsencode(cwd)
    files = {k: v.replace(here, b"<cwd>") if isinstance(v, bytes) else v
             for k, v in _snapshot(cwd, skip).items()}
    return rc, out.replace(here, b"<cwd>"), err.replace(here, b"<cwd>"), files, prof


def check_profile(mode, prof, script):
    """The profile exists and names the program (script, as given)."""
    check(os.path.exists(prof), "%s: no profile written" % mode)
    with open(prof, "rb") as f:
        data = f.read()
    base = os.path.basename(os.fsencode(script))
    if mode == "trace":
        stats = marshal.loads(data)
        check(any(os.fsencode(k[0]).endswith(base) for k in stats),
              "trace: %s not among the profile's functions" % script)
    else:
        doc = json.loads(data.decode("utf-8", "surrogateescape"))
        # JSON is UTF-8: a name that is not reads with U+FFFD in its place
        check(doc["program"].endswith(base.decode("utf-8", "replace")),
              "%s: profile names %r, not %r" % (mode, doc["program"], script))
        return doc


def compare(plain, other, mode, ignore_stderr=None):
    """Raises unless other (run_one's result) did what plain did."""
    rc, out, err, files, _ = other
    check(rc == plain[0], "%s: %s, python: %s; stderr %s" % (mode, _ended(rc), _ended(plain[0]),
                                                             _short(err[-1500:], 1500)))
    check(out == plain[1], "%s: stdout %s, python %s" % (mode, _short(out), _short(plain[1])))
    perr = plain[2]
    if ignore_stderr:
        err, perr = ignore_stderr(err), ignore_stderr(perr)
    check(err == perr, "%s: stderr %s, python %s" % (mode, _short(err), _short(perr)))
    check(files.keys() == plain[3].keys(), "%s: files %s, python %s"
          % (mode, sorted(files), sorted(plain[3])))
    for name in files:
        check(files[name] == plain[3][name], "%s: file %s holds %s, python's %s"
              % (mode, name, _short(files[name]), _short(plain[3][name])))


def same(env, source, args=(), modes=MODES, parallel=False, profile=True, **kw):
    """Runs source under python and each mode (all at once if parallel)
    and compares; returns {mode: parsed JSON profile or None} and python's
    result as the note's material: (profiles, plain)."""
    names = ("python",) + tuple(modes)
    ignore_stderr = kw.pop("ignore_stderr", None)
    if parallel:
        results = {}
        threads = [threading.Thread(target=lambda m=m: results.__setitem__(
            m, _safe(run_one, env, m, source, args, **kw))) for m in names]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for m in names:
            if isinstance(results[m], BaseException):
                raise results[m]
    else:
        results = {m: run_one(env, m, source, args, **kw) for m in names}
    plain = results["python"]
    profiles = {}
    for m in modes:
        compare(plain, results[m], m, ignore_stderr)
        if profile:
            profiles[m] = check_profile(m, results[m][4], kw.get("script", "prog.py"))
    return profiles, plain


def _safe(func, *a, **kw):
    try:
        return func(*a, **kw)
    except BaseException as e:  # noqa: BLE001 - re-raised by the caller
        return e


def _note(plain):
    return _ended(plain[0]) + ", %d bytes out, %d files" % (len(plain[1]), len(plain[3]))


# --- fork and processes ---------------------------------------------------

@case()
def fork_storm(env):
    """60 forked children, each writing its file and ending its own way:
    sys.exit(N), os._exit(N), an exception, a return from the script."""
    _, plain = same(env, """
        import os, sys
        pids = {}
        for i in range(60):
            pid = os.fork()
            if pid == 0:
                with open("child%02d.txt" % i, "w") as f:
                    f.write("child %d\\n" % i * (i + 1))
                if i % 4 == 0:
                    os._exit(i % 7)
                if i % 4 == 1:
                    sys.exit(i % 5)
                if i % 4 == 2:
                    raise SystemExit("child %d says no" % i)
                print("child", i, "returns", flush=True)
                break
            pids[pid] = i
            if i % 4 >= 2:  # its output before the next child's
                os.waitpid(pid, 0)
                del pids[pid]
        else:
            got = sorted((pids[p], os.waitstatus_to_exitcode(s) if hasattr(os, "waitstatus_to_exitcode")
                          else s >> 8) for p, s in (os.waitpid(p, 0) for p in list(pids)))
            print(got)
            sys.exit(6)
    """, parallel=True)
    return _note(plain)


@case()
def fork_with_threads(env):
    """Forks while four threads run (two busy, two asleep); the children
    write and os._exit, the parent joins everything."""
    _, plain = same(env, """
        import os, threading, time, warnings
        warnings.simplefilter("ignore", DeprecationWarning)  # 3.12's fork-with-threads warning
        stop = threading.Event()
        def busy():
            n = 0
            while not stop.is_set():
                n += 1
        threads = [threading.Thread(target=busy) for _ in range(2)]
        threads += [threading.Thread(target=stop.wait) for _ in range(2)]
        for t in threads:
            t.start()
        statuses = []
        for i in range(15):
            pid = os.fork()
            if pid == 0:
                with open("c%d" % i, "w") as f:
                    f.write("%d threads seen\\n" % threading.active_count())
                os._exit(i)
            statuses.append(os.waitpid(pid, 0)[1] >> 8)
        stop.set()
        for t in threads:
            t.join()
        print(statuses, threading.active_count())
    """)
    return _note(plain)


@case()
def fork_with_logging_warns_not(env):
    """logging registers os.register_at_fork hooks; with DeprecationWarning
    an error, a fork must not warn about sonde's own threads (3.12+ warns
    when the process forking has other threads)."""
    _, plain = same(env, """
        import logging, os, sys
        logging.basicConfig(filename="log.txt", level=logging.INFO, format="%(message)s")
        logging.info("before")
        for i in range(20):
            pid = os.fork()
            if pid == 0:
                logging.info("child %d", i)
                os._exit(0)
            os.waitpid(pid, 0)
        logging.info("after")
        print("forked")
    """, extra_env={"PYTHONWARNINGS": "error::DeprecationWarning"})
    return _note(plain)


@case()
def fork_from_thread_and_grandchildren(env):
    """Forks from a thread other than the main one; the children fork
    again and wait; every level writes a file and ends its own way."""
    _, plain = same(env, """
        import os, sys, threading, warnings
        warnings.simplefilter("ignore", DeprecationWarning)
        def family(tag):
            pid = os.fork()
            if pid == 0:
                grand = os.fork()
                if grand == 0:
                    with open("grand-%s" % tag, "w") as f:
                        f.write("grandchild of %s\\n" % tag)
                    os._exit(3)
                status = os.waitpid(grand, 0)[1]
                with open("child-%s" % tag, "w") as f:
                    f.write("grandchild ended %d\\n" % (status >> 8))
                sys.exit(4)
            return os.waitpid(pid, 0)[1] >> 8
        out = []
        t = threading.Thread(target=lambda: out.append(family("thread")))
        t.start()
        t.join()
        out.append(family("main"))
        print(out)
    """, parallel=True)
    return _note(plain)


def _without_missing_line(err):
    """stderr without sonde's one line naming processes missing from the
    report (a worker the pool kills before its profiling started, or while
    it hands its profile over, is missing, and sonde says so)."""
    return b"".join(l for l in err.splitlines(keepends=True)
                    if not (l.startswith(b"sonde: ") and b"not in the report" in l))


@case()
def process_pool_broken(env):
    """A worker of a ProcessPoolExecutor dies by os._exit: the pool breaks,
    with the same exception and message as under python (the other worker,
    terminated by the broken pool, may be missing from the report: sonde's
    line saying so is the only difference allowed)."""
    _, plain = same(env, """
        import concurrent.futures, os
        def die(x):
            if x == 3:
                os._exit(1)
            return x
        if __name__ == "__main__":
            with concurrent.futures.ProcessPoolExecutor(2) as ex:
                try:
                    print(sorted(ex.map(die, range(6))))
                except concurrent.futures.process.BrokenProcessPool as e:
                    print("broken:", e)
    """, parallel=True, ignore_stderr=_without_missing_line)
    return _note(plain)


MULTIPROCESSING = """
    import concurrent.futures, multiprocessing, os, sys

    def square(x):
        return x * x

    def write(name, status):
        with open(name, "w") as f:
            f.write("from %s\\n" % multiprocessing.current_process().name)
        sys.exit(status)

    if __name__ == "__main__":
        method = sys.argv[1]
        ctx = multiprocessing.get_context(None if method == "default" else method)
        with ctx.Pool(3) as pool:
            print(pool.map(square, range(30)))
        procs = [ctx.Process(target=write, args=("p%d.txt" % i, i), name="P%d" % i)
                 for i in range(4)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        print([p.exitcode for p in procs])
        with concurrent.futures.ProcessPoolExecutor(2, mp_context=ctx) as ex:
            print(list(ex.map(square, range(10))))
        print("done", flush=True)
"""


def _multiprocessing(env, method):
    _, plain = same(env, MULTIPROCESSING, [method], parallel=True)
    return _note(plain)


@case()
def multiprocessing_fork(env):
    return _multiprocessing(env, "fork")


@case()
def multiprocessing_spawn(env):
    return _multiprocessing(env, "spawn")


@case()
def multiprocessing_forkserver(env):
    return _multiprocessing(env, "forkserver")


@case()
def multiprocessing_default(env):
    return _multiprocessing(env, "default")


@case()
def subprocess_sys_executable(env):
    """Children running sys.executable: output captured, passed through,
    written to files, and their exit statuses."""
    _, plain = same(env, """
        import subprocess, sys
        r = subprocess.run([sys.executable, "-c", "import sys; print('hi', sys.argv[1:]); sys.exit(4)",
                            "a b"], capture_output=True, text=True)
        print(repr(r.stdout), r.returncode)
        with open("child.txt", "w") as f:
            subprocess.run([sys.executable, "-c", "print(sum(range(10**5)))"], stdout=f, check=True)
        subprocess.run([sys.executable, "-c", "import sys; sys.stderr.write('to stderr\\\\n')"])
        p = subprocess.Popen([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"])
        print("killed", p.wait())
        sys.stdout.flush()
        sys.exit(subprocess.call([sys.executable, "-c", "raise SystemExit(9)"]))
    """, parallel=True)
    return _note(plain)


@case()
def exit_paths(env):
    """The ways a program ends: sys.exit with a string, with None, with
    300 (exit 44), os._exit with unflushed output, an exception."""
    seen = []
    for i, tail in enumerate(("sys.exit('bye')", "sys.exit(None)", "raise SystemExit(300)",
                              "os._exit(9)", "raise ValueError('no')")):
        env.cleanup()
        _, plain = same(env, """
            import os, sys
            print("buffered, lost by os._exit")
            sys.stderr.write("err\\n")
            with open("f.txt", "w") as f:
                f.write("x")
            %s
        """ % tail, parallel=True)
        seen.append(_ended(plain[0]))
    return ", ".join(seen)


# --- threads and stacks ---------------------------------------------------

@case()
def thread_storm(env):
    """10,000 short threads, 100 at a time."""
    _, plain = same(env, """
        import threading
        lock = threading.Lock()
        total = [0]
        def work(i):
            with lock:
                total[0] += i
        for start in range(0, 10000, 100):
            batch = [threading.Thread(target=work, args=(i,)) for i in range(start, start + 100)]
            for t in batch:
                t.start()
            for t in batch:
                t.join()
        print(total[0], threading.active_count())
    """)
    return _note(plain)


SLEEPERS = """
    import sys, threading, time
    threading.stack_size(256 * 1024)
    n = int(sys.argv[1])
    ready = threading.Barrier(n + 1)
    stop = threading.Event()
    def sleeper():
        ready.wait()
        stop.wait()
    threads = [threading.Thread(target=sleeper) for _ in range(n)]
    for t in threads:
        t.start()
    ready.wait()
    print("ready", threading.active_count(), flush=True)
    time.sleep(float(sys.argv[2]))
    stop.set()
    for t in threads:
        t.join()
    print("joined")
"""


@case()
def sleeping_threads_1500(env):
    """1,500 threads asleep together: same output, the profile written; the
    main thread (asleep in time.sleep) is never the one left out, and what
    was left out is counted (issue #14, item 4)."""
    # every line with time, however little: the main thread is one of 1,501
    profiles, plain = same(env, SLEEPERS, ["1500", "0.5"], parallel=True,
                           run_options=["--cpu-percent-threshold", "0"])
    main_line = textwrap.dedent(SLEEPERS).splitlines().index("time.sleep(float(sys.argv[2]))") + 1
    left_out = []
    for mode in ("run", "memory"):
        doc = profiles[mode]
        lines = [l for name, entry in doc["files"].items() if name.endswith("prog.py")
                 for l in entry["lines"] if l["lineno"] == main_line]
        check(lines and lines[0]["n_sys_percent"] > 0,
              "%s: the main thread's time.sleep (line %d) is not in the profile; partial %s"
              % (mode, main_line, doc["partial"]))
        left_out.append(str(doc["partial"]["threads_left_out"]))
    return _note(plain) + "; thread samples left out (counted): " + ", ".join(left_out)


@case()
def dump_1500_threads(env):
    """`sonde dump` of a process with 1,500 sleeping threads lists every
    thread, the main one included."""
    script = env.write("sleepers.py", SLEEPERS)
    proc = subprocess.Popen([env.python, script, "1500", "30"], stdout=subprocess.PIPE,
                            text=True, cwd=env.tmp)
    try:
        line = proc.stdout.readline()
        check(line.startswith("ready 1501"), "program said %r" % line)
        dump = env.run_sonde(["dump", str(proc.pid)], timeout=60)
    finally:
        proc.kill()
        proc.wait()
    check(dump.returncode == 0, "dump: exit %d: %s" % (dump.returncode, dump.stderr[-500:]))
    heads = [l for l in dump.stdout.splitlines() if l.startswith("Thread ")]
    check(len(heads) == 1501, "dump lists %d threads of 1501: %s" % (len(heads), dump.stderr))
    check(any('"MainThread"' in h for h in heads), "dump leaves the main thread out")
    return "%d threads listed" % len(heads)


@case(alone=True)
def deep_recursion(env):
    """A stack of 3,000 Python frames: same output; the profile marks the
    frames it left out beyond the depth limit."""
    profiles, plain = same(env, """
        import sys, time
        sys.setrecursionlimit(10000)
        def down(n):
            if n == 0:
                end = time.perf_counter() + 0.3
                while time.perf_counter() < end:
                    pass
                return 0
            return down(n - 1) + 1
        print(down(3000))
    """, run_options=["--stacks"])
    del profiles["trace"]  # pstats has no stacks
    for mode, doc in profiles.items():
        check(doc["partial"]["frames_left_out"] > 0,
              "%s: no frames left out marked in %s" % (mode, doc["partial"]))
    return "frames_left_out %s" % ", ".join(str(d["partial"]["frames_left_out"])
                                            for d in profiles.values())


# --- signals --------------------------------------------------------------

@case()
def sigint_traceback(env):
    """SIGINT while asleep: Python's KeyboardInterrupt traceback, exit 1;
    and a handler that counts them."""
    _, plain = same(env, """
        import os, signal, time
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
        except KeyboardInterrupt:
            print("caught once")
        signal.signal(signal.SIGINT, lambda *a: None)
        os.kill(os.getpid(), signal.SIGINT)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        def inner():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
        inner()
    """, parallel=True)
    check(b"KeyboardInterrupt" in plain[2], "python printed no KeyboardInterrupt")
    return _note(plain)


@case()
def sigterm_default_and_handler(env):
    seen = []
    for handler in (False, True):
        env.cleanup()
        _, plain = same(env, """
            import os, signal, sys, time
            if %r:
                def bye(signum, frame):
                    print("terminated by", signum, flush=True)
                    sys.exit(7)
                signal.signal(signal.SIGTERM, bye)
            print("sending", flush=True)
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
            print("not reached")
        """ % handler, parallel=True)
        seen.append(_ended(plain[0]))
    return ", ".join(seen)


@case()
def sigusr1_handler(env):
    """200 SIGUSR1s, from the main thread and from another one."""
    _, plain = same(env, """
        import os, signal, threading, time
        got = []
        signal.signal(signal.SIGUSR1, lambda s, f: got.append(s))
        for _ in range(100):
            os.kill(os.getpid(), signal.SIGUSR1)
        t = threading.Thread(target=lambda: [os.kill(os.getpid(), signal.SIGUSR1) or time.sleep(0.001)
                                             for _ in range(100)])
        t.start()
        t.join()
        time.sleep(0.05)
        print(len(got) >= 100, set(got))
    """, parallel=True)
    return _note(plain)


@case()
def sigalrm_alarm_and_timers(env):
    """signal.alarm and setitimer (real, virtual and profiling clocks) in
    busy loops: the program's handlers fire, sonde's sampling does not
    take their timers."""
    _, plain = same(env, """
        import signal, time
        class Ring(Exception):
            pass
        def ring(s, f):
            raise Ring()
        signal.signal(signal.SIGALRM, ring)
        signal.alarm(1)
        n = 0
        try:
            while True:
                n += 1
        except Ring:
            print("alarm rang", n > 0)
        for which, sig in ((signal.ITIMER_REAL, signal.SIGALRM),
                           (signal.ITIMER_VIRTUAL, signal.SIGVTALRM),
                           (signal.ITIMER_PROF, signal.SIGPROF)):
            ticks = []
            signal.signal(sig, lambda s, f: ticks.append(s))
            signal.setitimer(which, 0.01, 0.01)
            # the CPU clocks tick while this process computes (sonde's own
            # threads count too): a few seconds allow for a loaded machine
            end = time.monotonic() + 5
            while time.monotonic() < end and len(ticks) < 5:
                for _ in range(1000):
                    pass
            signal.setitimer(which, 0)
            print(which, len(ticks) >= 5, signal.getitimer(which))
    """)
    return _note(plain)


@case()
def blocked_signal_sigwait(env):
    """The main thread blocks SIGUSR2 and waits for it with sigtimedwait; a
    signal sent to the process must not go to one of sonde's threads (where
    its default action would end the process). Then SIGUSR1 through a
    wakeup descriptor (signal.set_wakeup_fd)."""
    _, plain = same(env, """
        import os, signal, socket
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2})
        got = []
        for _ in range(20):
            os.kill(os.getpid(), signal.SIGUSR2)
            info = signal.sigtimedwait({signal.SIGUSR2}, 5)
            got.append(info.si_signo if info else None)
        print(got == [signal.SIGUSR2] * 20)
        a, b = socket.socketpair()
        a.setblocking(False)
        signal.signal(signal.SIGUSR1, lambda s, f: None)
        signal.set_wakeup_fd(a.fileno())
        os.kill(os.getpid(), signal.SIGUSR1)
        print(list(b.recv(16)) == [signal.SIGUSR1])
    """, parallel=True)
    return _note(plain)


@case()
def sigchld_handler(env):
    _, plain = same(env, """
        import os, signal, time
        got = []
        signal.signal(signal.SIGCHLD, lambda s, f: got.append(s))
        codes = []
        for i in range(10):
            pid = os.fork()
            if pid == 0:
                os._exit(i)
            codes.append(os.waitpid(pid, 0)[1] >> 8)
        time.sleep(0.05)
        print(codes, len(got) > 0, set(got))
    """, parallel=True)
    return _note(plain)


@case()
def sigpipe_head(env):
    """`python prog.py | head -1`: the pipe closes; Python's
    BrokenPipeError, and its exit status, are the same."""
    _, plain = same(env, """
        import sys
        for i in range(200000):
            print("line", i)
    """, shell='"$@" | head -1; echo "${PIPESTATUS[0]}" > status', parallel=True)
    return _note(plain) + ", program's status " + plain[3]["status"].decode().strip()


@case()
def killed_by_signal(env):
    """Death by SIGKILL of itself, by SIGSEGV and by os.abort(): the exit
    by signal matches (no profile is asked of a process killed so; the
    catchable SIGTERM and SIGINT have theirs, above); `sonde run` (with and
    without --memory) adds one line saying the program was killed by SIGSEGV
    or SIGABRT, and nothing else."""
    seen = []
    for how in ("os.kill(os.getpid(), signal.SIGKILL)", "os.kill(os.getpid(), signal.SIGSEGV)",
                "os.abort()"):
        env.cleanup()
        said = []

        def strip(err):
            lines = err.splitlines(keepends=True)
            kept = [l for l in lines if not l.startswith(b"sonde: the program was killed by SIG")]
            said.extend(lines[i] for i in range(len(lines)) if lines[i] not in kept)
            return b"".join(kept)

        _, plain = same(env, """
            import os, signal, sys
            print("before", flush=True)
            with open("f.txt", "w") as f:
                f.write("written")
            %s
        """ % how, parallel=True, profile=False, ignore_stderr=strip)
        check(plain[0] < 0, "python: %s" % _ended(plain[0]))
        runs = sum(1 for m in MODES if m in ("run", "memory"))
        want = 0 if "SIGKILL" in how else runs
        check(len(said) == want, "%s: %d lines of sonde's, %d expected: %r"
              % (how, len(said), want, said))
        seen.append(_ended(plain[0]))
    return ", ".join(seen)


# --- output files ---------------------------------------------------------

HELLO = """
    import sys
    print("hello", sys.argv[1:])
    with open("out.txt", "w") as f:
        f.write("x" * 1000)
"""


def _profile_through(env, mode, dest, script="prog.py", shell=None, source=HELLO):
    """Runs source under mode with -o dest, through shell if given;
    returns run_one's result and python's."""
    plain = run_one(env, "python", source, script=script)
    cwd = os.path.join(env.tmp, mode)
    os.makedirs(cwd)
    with open(os.path.join(os.fsencode(cwd), os.fsencode(script)), "wb") as f:
        f.write(textwrap.dedent(source).encode())
    argv = _argv(env, mode, script, [], dest)
    if shell:
        argv = ["bash", "-c", shell, "bash"] + argv
    proc = subprocess.run(argv, cwd=cwd, env=env.base_env(), capture_output=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    skip = {os.fsdecode(script), os.path.relpath(os.path.join(cwd, dest), cwd)}
    return _result(proc.returncode, proc.stdout, proc.stderr, cwd, skip, dest), plain


def _check_profile_bytes(mode, data, script="prog.py"):
    tmp = "/dev/shm/sonde-stress-%d-%s" % (os.getpid(), threading.get_ident())
    with open(tmp, "wb") as f:
        f.write(data)
    try:
        check_profile(mode, tmp, script)
    finally:
        os.unlink(tmp)


@case()
def output_to_symlink(env):
    """-o to a symlink: its target gets the profile, the link stays a link."""
    for mode in MODES:
        target = os.path.join(env.tmp, "target-" + mode)
        link = os.path.join(env.tmp, "link-" + mode)
        os.symlink(target, link)
        other, plain = _profile_through(env, mode, link)
        compare(plain, other, mode)
        check(os.path.islink(link) and os.readlink(link) == target,
              "%s: the link was replaced" % mode)
        check_profile(mode, target, "prog.py")
        env.cleanup()
    return "link kept, target written"


@case()
def output_to_dev_stdout(env):
    """-o /dev/stdout with stdout redirected to a file: the program's
    output, then the profile, in that file; /dev/stdout stays a link."""
    was = os.path.islink("/dev/stdout")
    for mode in MODES:
        other, plain = _profile_through(env, mode, "/dev/stdout",
                                        shell='"$@" > captured.out; echo $? > status')
        other[3].pop("captured.out")
        with open(os.path.join(env.tmp, mode, "captured.out"), "rb") as f:
            captured = f.read()  # as written: the profile names <cwd>
        check(captured.startswith(plain[1]), "%s: the program's output is not first: %s"
              % (mode, _short(captured)))
        _check_profile_bytes(mode, captured[len(plain[1]):])
        status = int(other[3].pop("status"))
        compare(plain, (status, plain[1]) + other[2:], mode)
        check(os.path.islink("/dev/stdout") == was, "/dev/stdout is no longer a link")
        env.cleanup()
    return "program output then profile"


@case()
def output_to_fifo(env):
    """-o to a FIFO that another process reads: the reader gets the whole
    profile, the FIFO stays a FIFO."""
    for mode in MODES:
        fifo = os.path.join(env.tmp, "fifo-" + mode)
        os.mkfifo(fifo)
        got = []
        reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
        reader.start()
        other, plain = _profile_through(env, mode, fifo)
        reader.join(30)
        check(not reader.is_alive(), "%s: the FIFO's reader never got an end" % mode)
        compare(plain, other, mode)
        check(os.path.exists(fifo) and not os.path.isfile(fifo) and
              os.stat(fifo).st_mode & 0o170000 == 0o010000, "%s: the FIFO was replaced" % mode)
        _check_profile_bytes(mode, got[0])
        env.cleanup()
    return "read whole"


@case()
def output_to_dev_null(env):
    for mode in MODES:
        other, plain = _profile_through(env, mode, "/dev/null")
        compare(plain, other, mode)
        check(os.path.exists("/dev/null") and not os.path.isfile("/dev/null"),
              "/dev/null replaced")
        env.cleanup()
    return "ok"


@case()
def chdir_then_relative_output(env):
    """The program moves to another directory, then into one it removes:
    a relative -o still means the directory sonde started in."""
    for mode in MODES:
        dest = "rel." + ("prof" if mode == "trace" else "json")
        other, plain = _profile_through(env, mode, dest, source="""
            import os
            os.mkdir("sub")
            os.chdir("sub")
            with open("in-sub.txt", "w") as f:
                f.write("here")
            os.mkdir("gone")
            os.chdir("gone")
            os.rmdir("../gone")
            print("cwd removed")
        """)
        compare(plain, other, mode)
        check_profile(mode, os.path.join(env.tmp, mode, dest), "prog.py")
        env.cleanup()
    return "written where sonde started"


@case()
def stdin_passthrough(env):
    """4 MB on standard input, read whole by the program and by a child
    it hands the rest to: the same bytes reach them."""
    data = bytes(random.Random(8).randrange(256) for _ in range(1 << 16)) * 64
    _, plain = same(env, """
        import hashlib, subprocess, sys
        head = sys.stdin.buffer.read(1000)
        child = subprocess.run([sys.executable, "-c",
                                "import hashlib, sys; d = sys.stdin.buffer.read(); "
                                "print(len(d), hashlib.sha256(d).hexdigest())"],
                               capture_output=True, text=True)
        print(len(head), hashlib.sha256(head).hexdigest(), child.stdout.strip())
    """, parallel=True, stdin=data)
    return _note(plain)


HOSTILE = [b"with space", b"new\nline", b"bad\xff\xfeutf8", b"-dash"]


@case()
def hostile_names(env):
    """Scripts and -o files named with spaces, a newline, bytes that are
    not UTF-8, a leading dash: same output (the script's own name included)
    and each profile where -o said."""
    for stem in HOSTILE:
        script = os.fsdecode(stem + b".py")
        if stem.startswith(b"-"):
            script = "./" + script  # as python itself needs it
        _, plain = same(env, """
            import sys
            print(repr(sys.argv), repr(__file__))
            with open(sys.argv[0] + ".out", "w") as f:
                f.write("ok")
        """, ["arg " + script], script=script, parallel=True)
        env.cleanup()
        for mode in MODES:
            dest = os.fsdecode(stem + (b".prof" if mode == "trace" else b".json"))
            other, plain = _profile_through(env, mode, dest, script=script)
            compare(plain, other, mode + " -o " + repr(dest))
            where = os.path.join(env.tmp, mode, dest)
            check_profile(mode, where, script)
            env.cleanup()
        env.cleanup()
    return "%d names" % len(HOSTILE)


# --- memory ---------------------------------------------------------------

@case(alone=True)
def numpy_peak_gigabyte(env):
    """A 1.5 GB numpy array under --memory: same output; the profile's
    peak is at least the array."""
    if not os.path.realpath(env.python).startswith("/usr/bin/"):
        raise Skip("numpy is Debian's, for /usr/bin/python3 only")
    if not env.has_module("numpy"):
        raise Skip("no numpy")
    profiles, plain = same(env, """
        import numpy as np
        a = np.ones(1536 * 1024 * 1024 // 8)
        print(a.sum(), a.nbytes)
        del a
        b = np.arange(10**6)
        print(int(b.sum()))
    """, modes=("run", "memory"))
    peak = profiles["memory"]["max_footprint_mb"]
    check(peak >= 1536 * 0.95, "--memory's peak %.0f MB, the array 1536 MB" % peak)
    return "peak %.0f MB" % peak


# --- sonde view on malformed input ----------------------------------------

def _malformed(valid):
    """(name, bytes) of inputs `sonde view` must refuse."""
    rng = random.Random(14)
    out = [("empty", b""), ("nul", b"\0" * 100), ("bom-only", b"\xef\xbb\xbf"),
           ("not-json", b"hello"), ("array", b"[1, 2, 3]"), ("string", b'"profile"'),
           ("number", b"1e999999"), ("null", b"null"), ("object-empty", b"{}"),
           ("deep-array", b"[" * 200000 + b"]" * 200000),
           ("deep-object", b'{"a":' * 100000 + b"1" + b"}" * 100000),
           ("unclosed-deep", b"[" * 1000000)]
    for frac in (0.1, 0.3, 0.5, 0.7, 0.9, 0.99):
        out.append(("truncated-%d" % int(frac * 100), valid[:int(len(valid) * frac)]))
    doc = json.loads(valid)
    def variant(name, **changes):
        d = dict(doc)
        d.update(changes)
        out.append((name, json.dumps(d).encode()))
    variant("files-number", files=3)
    variant("files-list", files=[1, 2])
    variant("files-entry-string", files={"a.py": "lines"})
    variant("lines-string", files={"a.py": {"lines": "x", "functions": []}})
    variant("lines-numbers", files={"a.py": {"lines": [1, 2, 3], "functions": []}})
    variant("samples-string", n_samples="many")
    variant("partial-list", partial=[])
    out.append(("huge-number", valid.replace(b'"n_samples": ', b'"n_samples": 1' + b"9" * 5000,
                                             1)))
    out.append(("huge-exponent", re.sub(rb'"elapsed_time_sec": [^,]*',
                                        b'"elapsed_time_sec": 1e99999', valid)))
    out.append(("bad-utf8", valid.replace(b'"program": "', b'"program": "\xff\xfe', 1)))
    out.append(("bad-escape", valid.replace(b'"program": "', b'"program": "\\ud800\\x', 1)))
    for i in range(6):
        out.append(("garbage-%d" % i, bytes(rng.randrange(256) for _ in range(rng.randrange(1, 5000)))))
    for i in range(4):
        b = bytearray(valid)
        for _ in range(5):
            b[rng.randrange(len(b))] = rng.randrange(256)
        out.append(("flipped-%d" % i, bytes(b)))
    return out


@case()
def view_malformed_json(env):
    """Every malformed input: exit 1 with one `sonde:` line, no output
    file; never a crash (death by signal) nor a traceback. Valid JSON whose
    scalar fields have odd types is shown as the viewer can."""
    script = env.write("small.py", "print(sum(range(10**6)))\n")
    valid = os.path.join(env.tmp, "valid.json")
    proc = env.run_sonde(["run", "--no-gpu", "--json", "-o", valid, "--all-lines", script])
    check(proc.returncode == 0, "cannot make a valid profile: %s" % proc.stderr)
    with open(valid, "rb") as f:
        cases = _malformed(f.read())
    accepted, wrong = [], []
    for name, data in cases:
        path = os.path.join(env.tmp, "bad-%s.json" % name)
        html = os.path.join(env.tmp, "bad-%s.html" % name)
        with open(path, "wb") as f:
            f.write(data)
        p = subprocess.run([env.sonde, "view", path, "-o", html], capture_output=True,
                           timeout=60)
        err = p.stderr.decode("utf-8", "replace")
        check(p.returncode >= 0, "%s: view killed by signal %d: %s" % (name, -p.returncode, err))
        check("Traceback" not in err, "%s: a traceback: %s" % (name, err))
        if p.returncode == 0 and name.startswith("flipped"):
            continue  # a flipped byte may leave a valid profile
        if p.returncode == 0 and name.startswith(("samples", "partial")):
            # by design: the viewer shows what it can of valid JSON whose
            # scalar fields have odd types (test_html.test_odd_profile_renders)
            check(os.path.exists(html), "%s: exit 0 and no page" % name)
            accepted.append(name)
            continue
        lines = err.splitlines()
        if p.returncode != 1 or len(lines) != 1 or not lines[0].startswith("sonde: ") \
                or os.path.exists(html):
            wrong.append("%s: exit %d, %d lines %r, html %s" % (
                name, p.returncode, len(lines), err[:200], os.path.exists(html)))
    check(not wrong, "not refused with one sonde: line: %s" % "; ".join(wrong))
    return "%d inputs refused, %d odd but valid shown" % (len(cases) - len(accepted), len(accepted))


# --- record and attach ----------------------------------------------------

def _not_sonde(data):
    return b"".join(l for l in data.splitlines(True) if not l.startswith(b"sonde: "))


@case()
def record_ends_like_its_command(env):
    """`sonde record -- python prog.py` for a program that exits 5, one
    that os._exits after forking, and one killed by SIGTERM midway: same
    output and files, the same ending, a profile naming the program."""
    seen = []
    for tail in ("sys.exit(5)", "pid = os.fork()\nif pid == 0: os._exit(2)\nos.waitpid(pid, 0)\n"
                 "os._exit(3)", "os.kill(os.getpid(), signal.SIGTERM); time.sleep(5)"):
        env.cleanup()
        source = textwrap.dedent("""
            import os, signal, sys, time
            print("start", flush=True)
            end = time.perf_counter() + 0.3
            while time.perf_counter() < end:
                pass
            with open("f.txt", "w") as f:
                f.write("data")
        """) + tail + "\n"
        plain = run_one(env, "python", source)
        cwd = os.path.join(env.tmp, "record")
        os.makedirs(cwd)
        with open(os.path.join(cwd, "prog.py"), "w") as f:
            f.write(source)
        prof = os.path.join(env.tmp, "rec.json")
        p = subprocess.run([env.sonde, "record", "-o", prof, "--", env.python, "prog.py"],
                           cwd=cwd, capture_output=True, timeout=60, env=env.base_env())
        other = _result(p.returncode, p.stdout, p.stderr, cwd, {"prog.py"}, prof)
        compare(plain, other, "record", ignore_stderr=_not_sonde)
        check_profile("record", prof, "prog.py")
        seen.append(_ended(plain[0]))
    return ", ".join(seen)


@case()
def attach_to_dying_targets(env):
    """attach while the target exits, or is killed by SIGKILL: attach ends
    and writes its profile; attach and dump to a pid that is gone: one clear
    `sonde:` line, exit 1."""
    script = env.write("target.py", """
        import os, signal, sys, time
        print("ready", flush=True)
        end = time.perf_counter() + 0.5
        while time.perf_counter() < end:
            pass
        if sys.argv[1] == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        sys.exit(4)
    """)
    for how, ending in (("exit", 4), ("kill", -signal.SIGKILL)):
        target = subprocess.Popen([env.python, script, how], stdout=subprocess.PIPE, cwd=env.tmp)
        check(target.stdout.readline() == b"ready\n", "target not ready")
        prof = os.path.join(env.tmp, "attach-%s.json" % how)
        p = env.run_sonde(["attach", str(target.pid), "-o", prof], timeout=60)
        check(target.wait(30) == ending, "target ended with %d" % target.returncode)
        check(p.returncode == 0, "attach to a target that %ss: exit %d: %s"
              % (how, p.returncode, p.stderr))
        check_profile("attach", prof, "target.py")
    gone = subprocess.Popen(["true"])
    gone.wait()
    for cmd in (["attach", str(gone.pid)], ["dump", str(gone.pid)],
                ["attach", str(gone.pid), "-d", "1", "-o", os.path.join(env.tmp, "x.json")]):
        p = env.run_sonde(cmd, timeout=30)
        lines = p.stderr.splitlines()
        check(p.returncode == 1 and len(lines) == 1 and lines[0].startswith("sonde: ")
              and str(gone.pid) in lines[0], "%s to a gone pid: exit %d, %r"
              % (cmd[0], p.returncode, p.stderr))
    return "profiles written; gone pid: " + lines[0]


# the cases of issue #23 (where the program stands; losses said)
import process_model  # noqa: E402,F401 (the launcher-side cases and the losses)
