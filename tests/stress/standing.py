"""Stress cases of issue #23: the program stands where `python3 prog.py`
would, and nothing is lost without a word.

Each case starts the same program as plain python, `sonde run` and
`sonde run --memory` from a launcher of its own making (a supervisor, a
middle process, `timeout`) and compares what the launcher and the program
see: parent, process group and session, who holds the program's inherited
descriptors, signals to and from the parent, PDEATHSIG, job control,
RLIMIT_NPROC, and how long `sonde run` outlives the program. The programs
start a followed Python child first, so that everything `sonde run` does
for children is in play. Version-independent: they run on Debian's
/usr/bin/python3 only (the stress suite's other interpreters skip them).
Registered by cases.py (imported at its end).
"""
import errno
import json
import os
import signal
import subprocess
import sys
import time

from cases import case
from support import Skip, check

MODES = ("python", "run", "memory")

# a followed child first (the program then has one to merge at its end)
CHILD = "import subprocess, sys\nsubprocess.run([sys.executable, '-c', 'pass'], check=True)\n"


def _only_debian(env):
    if os.path.realpath(env.python) != os.path.realpath("/usr/bin/python3"):
        raise Skip("version-independent: Debian's /usr/bin/python3 only")


def _cmd(env, mode):
    if mode == "python":
        return [env.python]
    return [env.sonde, "run", "--no-gpu"] + (["--memory"] if mode == "memory" else [])


def _write(env, name, text):
    path = env.write(name, CHILD + text)
    os.chmod(env.tmp, 0o755)
    os.chmod(path, 0o644)
    return path


def _each(env, func):
    """{mode: func(mode)} for the three modes."""
    return {mode: func(mode) for mode in MODES}


def _same(results, what):
    plain = results["python"]
    for mode in MODES[1:]:
        check(results[mode] == plain, "%s: %s %r, python %r" % (what, mode, results[mode], plain))
    return "%s %r" % (what, plain)


@case()
def stands_where_python_does(env):
    """Parent, process group leadership, session: the program's own view
    (getppid, killpg of its own group, setsid as a group leader)."""
    _only_debian(env)
    prog = _write(env, "ids.py", """
        import errno, json, os, sys
        r = {"parent": os.getppid() == int(sys.argv[1]), "leader": os.getpgrp() == os.getpid(),
             "session": os.getsid(0) == int(sys.argv[2])}
        try:
            os.killpg(os.getpid(), 0)
            r["killpg"] = "ok"
        except OSError as e:
            r["killpg"] = errno.errorcode[e.errno]
        try:
            os.setsid()
            r["setsid"] = "ok"
        except OSError as e:
            r["setsid"] = errno.errorcode[e.errno]
        print(json.dumps(r, sort_keys=True))
        """.replace("\n        ", "\n"))

    def one(mode):
        # launched as a group leader (a shell's job), from this process
        p = subprocess.run(_cmd(env, mode) + [prog, str(os.getpid()), str(os.getsid(0))],
                           capture_output=True, text=True, process_group=0, timeout=60,
                           env=env.base_env())
        check(p.returncode == 0, "%s: exit %d: %s" % (mode, p.returncode, p.stderr[-1000:]))
        return json.loads(p.stdout.strip().splitlines()[-1])
    results = _each(env, one)
    check(results["python"] == {"parent": True, "leader": True, "session": True, "killpg": "ok",
                                "setsid": "EPERM"}, "python: %r" % results["python"])
    return _same(results, "ids")


@case()
def readiness_pipe_eof(env):
    """A supervisor passes a pipe and waits for its end: the program closes
    it at 0.2 s and goes on for 1 s; the supervisor sees the end when plain
    python's would (no other process holds a copy)."""
    _only_debian(env)
    prog = _write(env, "ready.py", """
        import os, sys, time
        time.sleep(0.2)
        os.close(int(sys.argv[1]))
        time.sleep(1.0)
        """.replace("\n        ", "\n"))

    def one(mode):
        rfd, wfd = os.pipe()
        t0 = time.monotonic()
        p = subprocess.Popen(_cmd(env, mode) + [prog, str(wfd)], pass_fds=(wfd,),
                             env=env.base_env())
        os.close(wfd)
        os.read(rfd, 1)
        eof = time.monotonic() - t0
        os.close(rfd)
        p.wait(timeout=60)
        return eof, p.returncode
    results = _each(env, one)
    for mode in MODES[1:]:
        check(results[mode][1] == 0, "%s: exit %d" % (mode, results[mode][1]))
        # start-up differs by a few ms; the old collector held it to 1.2 s
        check(results[mode][0] < results["python"][0] + 0.5,
              "%s: EOF at %.2f s, python %.2f s" % (mode, results[mode][0], results["python"][0]))
    return "EOF at " + ", ".join("%s %.2f s" % (m, results[m][0]) for m in MODES)


# A launcher that counts the SIGUSR1 its child sends it (the stress suite
# runs cases in threads, which cannot take signals).
USR1_LAUNCHER = """
import signal, subprocess, sys, time
got = []
signal.signal(signal.SIGUSR1, lambda s, f: got.append(s))
rc = subprocess.run(sys.argv[1:]).returncode
time.sleep(0.05)
print(rc, len(got))
"""


@case()
def sigusr1_to_parent(env):
    """os.kill(os.getppid(), SIGUSR1) ("ready") reaches the launcher."""
    _only_debian(env)
    prog = _write(env, "usr1.py", "import os, signal\nos.kill(os.getppid(), signal.SIGUSR1)\n")

    def one(mode):
        p = subprocess.run([env.python, "-c", USR1_LAUNCHER] + _cmd(env, mode) + [prog],
                           capture_output=True, text=True, timeout=60, env=env.base_env())
        return p.stdout.strip()
    results = _each(env, one)
    check(results["python"] == "0 1", "python: %r" % (results["python"],))
    return _same(results, "(exit, SIGUSR1 received)")


@case()
def pdeathsig_launcher_killed(env):
    """The program asks for SIGTERM when its parent dies; its launcher (a
    middle process) is killed with SIGKILL: the program gets SIGTERM."""
    _only_debian(env)
    prog = _write(env, "pdeath.py", """
        import ctypes, os, signal, sys, time
        def on(sig, frame):
            open(sys.argv[1], "w").write("SIGTERM")
            os._exit(0)
        signal.signal(signal.SIGTERM, on)
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        open(sys.argv[1], "w").write("armed")
        time.sleep(5)
        open(sys.argv[1], "w").write("outlived its parent")
        """.replace("\n        ", "\n"))

    def one(mode):
        mark = os.path.join(env.tmp, "mark-" + mode)
        middle = subprocess.Popen(["sh", "-c", '"$@" & wait', "sh"] + _cmd(env, mode)
                                  + [prog, mark], env=env.base_env())
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not os.path.exists(mark):
            time.sleep(0.01)
        time.sleep(0.2)
        middle.kill()
        middle.wait()
        deadline = time.monotonic() + 10
        # The handler truncates the mark and then writes it: an empty read
        # is that moment, not an answer.
        while time.monotonic() < deadline and open(mark).read() in ("", "armed"):
            time.sleep(0.02)
        return open(mark).read() if os.path.exists(mark) else "never armed"
    results = _each(env, one)
    check(results["python"] == "SIGTERM", "python: %r" % results["python"])
    return _same(results, "the program")


@case()
def stop_cont(env):
    """kill -STOP of the pid the launcher got stops the program (its state
    is T); SIGCONT resumes it and it ends as python does."""
    _only_debian(env)
    prog = _write(env, "stop.py", """
        import time
        end = time.monotonic() + 1.2
        while time.monotonic() < end:
            time.sleep(0.01)
        print("done")
        """.replace("\n        ", "\n"))

    def one(mode):
        p = subprocess.Popen(_cmd(env, mode) + [prog], stdout=subprocess.PIPE,
                             env=env.base_env())
        time.sleep(0.6)
        os.kill(p.pid, signal.SIGSTOP)
        time.sleep(0.2)
        with open("/proc/%d/stat" % p.pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        os.kill(p.pid, signal.SIGCONT)
        out, _ = p.communicate(timeout=60)
        return state, p.returncode, out
    results = _each(env, one)
    check(results["python"][0] == "T", "python: %r" % (results["python"],))
    return _same(results, "(state, exit, output)")


@case()
def rlimit_nproc_budget(env):
    """Under RLIMIT_NPROC (as a user the limit applies to), the program
    forks as many children as under python: no process of sonde's counts
    against it. The limit counts threads too, and each profiled process has
    a sampler thread: 8 leaves room for the program, its 3 children and a
    sampler thread each (the collector process of before made it 9)."""
    _only_debian(env)
    if os.geteuid() != 0:
        raise Skip("needs root to run the program as an unused uid")
    path = env.sonde
    while path != "/":
        if os.stat(path).st_mode & 0o005 != 0o005:
            raise Skip("%s is not readable by other users" % path)
        path = os.path.dirname(path)
    uids = {mode: 61000 + (os.getpid() % 300) * 3 + i for i, mode in enumerate(MODES)}
    prog = _write(env, "nproc.py", """
        import os, time
        n = 0
        for i in range(3):
            try:
                pid = os.fork()
            except OSError:
                break
            if pid == 0:
                time.sleep(0.5)
                os._exit(0)
            n += 1
        print(n)
        """.replace("\n        ", "\n"))

    def one(mode):
        uid = uids[mode]  # one per mode: the children of another mode still sleep

        def drop():
            import resource
            os.setgroups([])
            os.setgid(uid)
            resource.setrlimit(resource.RLIMIT_NPROC, (8, 8))
            os.setuid(uid)
        p = subprocess.run(_cmd(env, mode) + [prog], capture_output=True, text=True, timeout=60,
                           preexec_fn=drop, cwd="/", env=env.base_env({"TMPDIR": "/tmp"}))
        check(p.returncode == 0, "%s: exit %d: %r" % (mode, p.returncode, p.stderr[-1500:]))
        return p.returncode, p.stdout.strip()
    results = _each(env, one)
    return _same(results, "(exit, children forked)")


@case()
def timeout_with_daemon(env):
    """`timeout 2` of a program that starts a daemon in a session of its own
    (sleeping 5 s) and ends at 0.3 s: exit 0 well before the timeout, as
    python; `timeout 1` of a 3 s sleep: 124 for all."""
    _only_debian(env)
    prog = _write(env, "linger.py", """
        import subprocess, sys, time
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"],
                         start_new_session=True, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
        time.sleep(0.3)
        """.replace("\n        ", "\n"))
    sleeper = _write(env, "sleeper.py", "import time\ntime.sleep(3)\n")

    def one(mode):
        t0 = time.monotonic()
        p = subprocess.run(["timeout", "2"] + _cmd(env, mode) + [prog], capture_output=True,
                           timeout=60, env=env.base_env())
        took = time.monotonic() - t0
        q = subprocess.run(["timeout", "1"] + _cmd(env, mode) + [sleeper], capture_output=True,
                           timeout=60, env=env.base_env())
        return p.returncode, took, q.returncode
    results = _each(env, one)
    for mode in MODES:
        rc, took, rc2 = results[mode]
        check(rc == 0 and took < 1.5 and rc2 == 124,
              "%s: exit %d after %.2f s; timeout 1: %d" % (mode, rc, took, rc2))
    return ", ".join("%s %.2f s" % (m, results[m][1]) for m in MODES)


def _report(env, mode, prog, args=(), extra_env=None, **kw):
    """`sonde run --json -o F` (mode run or memory) or python: (result, profile or None)."""
    out = os.path.join(env.tmp, "profile-%s.json" % mode)
    if os.path.exists(out):
        os.unlink(out)
    cmd = [env.python] if mode == "python" else \
        _cmd(env, mode)[:2] + ["--no-gpu", "--json", "-o", out] + _cmd(env, mode)[3:]
    p = subprocess.run(cmd + [prog] + list(args), capture_output=True, text=True, timeout=120,
                       env=env.base_env(extra_env), **kw)
    prof = None
    if mode != "python" and os.path.exists(out):
        with open(out) as f:
            prof = json.load(f)
    return p, prof


def _sonde_lines(stderr):
    return [l for l in stderr.splitlines() if l.startswith("sonde:")]


@case()
def lingering_child_said(env):
    """A child of the program's group still running when it ends: sonde
    waits --child-wait (0.3 s here), then writes the report of what it has
    (the program's lines, the program in the header), with one line saying
    one process still runs and partial.processes_running 1."""
    _only_debian(env)
    prog = _write(env, "linger2.py", """
        import subprocess, sys, time
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3)"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = time.thread_time() + 0.3
        while time.thread_time() < end: pass
        print("main done")
        """.replace("\n        ", "\n"))
    plain, _ = _report(env, "python", prog)
    for mode in MODES[1:]:
        t0 = time.monotonic()
        p, prof = _report(env, mode, prog, extra_env=None)
        took = time.monotonic() - t0
        check(p.returncode == 0 and p.stdout == plain.stdout, "%s: %r" % (mode, p.stderr[-800:]))
        check(prof and prof["program"].endswith("linger2.py"), "%s: header %r" % (
            mode, prof and prof["program"]))
        check(prof["partial"]["processes_running"] == 1, "%s: partial %r" % (mode, prof["partial"]))
        lines = _sonde_lines(p.stderr)
        check(len(lines) == 1 and "1 still running" in lines[0], "%s: %r" % (mode, p.stderr))
        check(took < 2.5, "%s: took %.1f s (child 3 s, --child-wait 1 s)" % (mode, took))
    return "one line, processes_running 1"


@case()
def private_dir_removed(env):
    """The program removes $TMPDIR/sonde-run-* after its first child, then
    starts another: same output as python; the report has the second
    child, and one line counts the first as missing."""
    _only_debian(env)
    tmp = os.path.join(env.tmp, "tmpdir")
    os.makedirs(tmp, exist_ok=True)
    prog = _write(env, "rmdir.py", """
        import glob, os, shutil, subprocess, sys
        for d in glob.glob(os.path.join(os.environ["TMPDIR"], "sonde-run-*")):
            shutil.rmtree(d)
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        print("ok")
        """.replace("\n        ", "\n"))
    plain, _ = _report(env, "python", prog, extra_env={"TMPDIR": tmp})
    for mode in MODES[1:]:
        p, prof = _report(env, mode, prog, extra_env={"TMPDIR": tmp})
        check(p.returncode == 0 and p.stdout == plain.stdout, "%s: %r" % (mode, p.stderr[-800:]))
        lines = _sonde_lines(p.stderr)
        check(len(lines) == 1 and "removed the directory" in lines[0], "%s: %r" % (mode, p.stderr))
        check(prof["partial"]["processes_lost"] == 1 and len(prof["processes"]) == 2,
              "%s: partial %r, %d processes" % (mode, prof["partial"], len(prof["processes"])))
        check(not os.listdir(tmp), "%s: left %r" % (mode, os.listdir(tmp)))
    return "one line, processes_lost 1"


@case()
def privileges_dropped_before_fork(env):
    """Root drops to another uid after its first child (the directory is
    then not its own), then forks two more: same output as python, one
    line, the two counted lost."""
    _only_debian(env)
    if os.geteuid() != 0:
        raise Skip("needs root")
    prog = _write(env, "drop.py", """
        import os, time
        os.setgid(65534)
        os.setuid(65534)
        for i in range(2):
            pid = os.fork()
            if pid == 0:
                end = time.monotonic() + 0.1
                while time.monotonic() < end: pass
                os._exit(0)
            os.waitpid(pid, 0)
        print("dropped")
        """.replace("\n        ", "\n"))
    os.chmod(env.tmp, 0o1777)  # the report, written as uid 65534
    plain, _ = _report(env, "python", prog, cwd="/")
    for mode in MODES[1:]:
        p, prof = _report(env, mode, prog, cwd="/")
        check(p.returncode == plain.returncode and p.stdout == plain.stdout,
              "%s: exit %d %r" % (mode, p.returncode, p.stderr[-800:]))
        lines = _sonde_lines(p.stderr)
        check(len(lines) == 1 and "left out" in lines[0] and prof and
              prof["program"].endswith("drop.py"), "%s: %r" % (mode, p.stderr))
    return "one line: " + lines[0]


@case()
def file_size_limit_children(env):
    """RLIMIT_FSIZE at 2 KiB with SIGXFSZ at its default, then two forked
    children: no process dies by SIGXFSZ for sonde's writes; same output
    and exit as python, and sonde says what it could not write."""
    _only_debian(env)
    prog = _write(env, "fsize.py", """
        import os, resource, signal, time
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
        resource.setrlimit(resource.RLIMIT_FSIZE, (2048, resource.RLIM_INFINITY))
        for i in range(2):
            pid = os.fork()
            if pid == 0:
                end = time.monotonic() + 0.1
                while time.monotonic() < end: pass
                os._exit(0)
            print(os.waitpid(pid, 0)[1])
        """.replace("\n        ", "\n"))
    plain, _ = _report(env, "python", prog)
    for mode in MODES[1:]:
        p, _ = _report(env, mode, prog)
        check(p.returncode == plain.returncode and p.stdout == plain.stdout,
              "%s: exit %d, out %r, python %r; %r" % (mode, p.returncode, p.stdout, plain.stdout,
                                                      p.stderr[-800:]))
        check(_sonde_lines(p.stderr), "%s: nothing said: %r" % (mode, p.stderr))
    return "children exit %r; %s" % (plain.stdout.split(), " / ".join(_sonde_lines(p.stderr)))
