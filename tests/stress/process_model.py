"""The stress suite's process-model cases (issue #23, item 5).

Where `sonde run` leaves the program, and what it says when a profile is
lost. Each case runs the same driver twice or more: with `python3 prog.py`
and with `sonde run prog.py` (and `sonde run --memory` where cheap), and
compares what the driver observed: the program's parent, process group and
session; an inherited readiness pipe's end; PDEATHSIG; signals to the
parent and to the group; STOP/CONT of the pid the launcher got;
RLIMIT_NPROC; `timeout`. Their programs start a followed child
(`subprocess` of sys.executable) before what is observed, so that all that
`sonde run` does for children is in play. Then the ways a profile can be
lost (a full $TMPDIR, privileges dropped, the private directory deleted, a
child still running, abort and SIGSEGV, `ulimit -n` and `ulimit -f`, `-o`
read right after the return): the program does what it did under python, and every
profile missing is said in a `sonde:` line and counted in `partial`.

Each case's note (printed with PASS, or in the FAIL line) reads
"python: ... | run: ... | memory: ...", the values observed under each.

The cases test the process model, not the interpreter: they run on Debian's
/usr/bin/python3 only (one_interpreter below) and are skipped, with a
reason, for the others. Registered by cases.py (its last line imports this
module).
"""
import functools
import json
import os
import pwd
import resource
import select
import signal
import subprocess
import textwrap
import threading
import time

from cases import _argv, _ended, _result, _short, case, check_profile, compare
from support import Skip, check, file_entry

SYSTEM_PYTHON = "/usr/bin/python3"
# the sonde modes of the cheap cases, and of the others
BOTH = ("run", "memory")
RUN = ("run",)


def one_interpreter(env):
    """Skips unless env's interpreter is Debian's python3: the process
    model does not depend on the interpreter's version."""
    if not os.path.exists(SYSTEM_PYTHON) or \
            os.path.realpath(env.python) != os.path.realpath(SYSTEM_PYTHON):
        raise Skip("a process-model case: runs with %s only" % SYSTEM_PYTHON)


def pm_case(alone=False, known=""):
    """@case for this module: the case runs with one interpreter only."""
    def register(func):
        @functools.wraps(func)
        def run(env):
            one_interpreter(env)
            return func(env)
        case(alone=alone, known=known)(run)
        return func
    return register


def _root_only():
    if os.geteuid() != 0:
        raise Skip("needs root (to drop privileges or mount a tmpfs)")


# --- launching ------------------------------------------------------------

def _prepare(env, mode, source, tag=None, script="prog.py"):
    """Writes source as script in a fresh directory for mode; returns
    (cwd, profile path)."""
    tag = tag or mode
    cwd = os.path.join(env.tmp, tag)
    os.makedirs(cwd)
    with open(os.path.join(cwd, script), "w", encoding="utf-8") as f:
        f.write(textwrap.dedent(source))
    return cwd, os.path.join(env.tmp, "profile-%s.json" % tag)


def _command(env, mode, prof, args=(), run_options=(), script="prog.py"):
    return _argv(env, mode, script, [str(a) for a in args], prof, run_options)


def _run(env, argv, cwd, timeout=60, extra_env=None, **popen_kw):
    """Runs argv to its end; returns (returncode, stdout, stderr, wall s)."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, cwd=cwd, env=env.base_env(extra_env), stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen_kw)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        raise AssertionError("%s still running after %d s" % (argv[-1], timeout))
    return p.returncode, out, err, time.monotonic() - t0


def _each(modes, func):
    """{mode: func(mode)} for "python" and modes, run at once (the cases
    whose figures a busy CPU does not change)."""
    names = ("python",) + tuple(modes)
    results = {}

    def one(m):
        try:
            results[m] = func(m)
        except BaseException as e:  # noqa: BLE001 - re-raised below
            results[m] = e
    threads = [threading.Thread(target=one, args=(m,)) for m in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for m in names:
        if isinstance(results[m], BaseException):
            raise results[m]
    return results


def _note(values):
    """"python: A | run: B | memory: C" of {mode: value}."""
    return " | ".join("%s: %s" % (m, v) for m, v in values.items())


def _same(values, what):
    """Raises unless every mode observed what python did."""
    plain = values["python"]
    check(all(v == plain for v in values.values()), "%s differs: %s" % (what, _note(values)))


def _sonde_lines(err):
    return [l for l in err.decode("utf-8", "replace").splitlines() if l.startswith("sonde: ")]


def _not_sonde(err):
    return b"".join(l for l in err.splitlines(True) if not l.startswith(b"sonde: "))


def _kill_pid_if_ours(pid, *markers):
    """Kills pid if its command line still holds one of markers (the pid
    is not reused)."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            cmdline = f.read()
        if any(m.encode() in cmdline for m in markers):
            os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def _kill_if_ours(pid_file, *markers):
    """_kill_pid_if_ours of each pid the program left in pid_file (apart by
    blanks; read once the program has ended)."""
    try:
        with open(pid_file) as f:
            pids = [int(w) for w in f.read().split()]
    except (OSError, ValueError):
        return
    for pid in pids:
        _kill_pid_if_ours(pid, *markers)


def _accounted(doc, err, expected):
    """(whether every one of the expected processes is in the report or
    said lost, a description). A missing one needs a `sonde:` line and a
    count in partial.processes_lost or processes_running."""
    present = len(doc["processes"])
    part = doc["partial"]
    lines = _sonde_lines(err)
    said = part.get("processes_lost", 0) + part.get("processes_running", 0)
    ok = present >= expected or (bool(lines) and present + said >= expected)
    desc = "%d/%d processes in the report, lost %d, running %d%s" % (
        present, expected, part.get("processes_lost", 0), part.get("processes_running", 0),
        "; " + " / ".join(l[7:] for l in lines) if lines else "; no sonde: line")
    return ok, desc


def _check_losses(env, values, results, expected, modes, script="prog.py"):
    """For each sonde mode of results ({mode: (rc, out, err, cwd, prof)}):
    the program did what python did (status, output, files; stderr but
    sonde's lines), the report exists and names the program, and every
    process missing from it is said and counted. values gets the
    descriptions; raises with all of them."""
    plain = results["python"]
    values["python"] = "%s, %d bytes out" % (_ended(plain[0]), len(plain[1]))
    problems = []
    for m in modes:
        rc, out, err, cwd, prof = results[m]
        if rc != plain[0] or out != plain[1] or _not_sonde(err) != _not_sonde(plain[2]):
            values[m] = "%s, stdout %s, stderr %s" % (_ended(rc), _short(out, 200),
                                                      _short(err, 400))
            problems.append(m)
            continue
        if not os.path.exists(prof):
            values[m] = "%s, no report; %s" % (_ended(rc), " / ".join(_sonde_lines(err))
                                               or "no sonde: line")
            problems.append(m)
            continue
        doc = check_profile(m, prof, script)
        ok, desc = _accounted(doc, err, expected)
        values[m] = "%s, %s" % (_ended(rc), desc)
        if not ok:
            problems.append(m)
    check(not problems, "%s: %s" % (", ".join(problems), _note(values)))
    return _note(values)


def _busy(seconds):
    return "t_end = time.perf_counter() + %r\nwhile time.perf_counter() < t_end:\n    pass\n" \
        % seconds


# --- where the program stands ---------------------------------------------

IDS = """
    import json, os, subprocess, sys
    subprocess.run([sys.executable, "-c", "pass"], check=True)  # a followed child first
    ppid = os.getppid()
    try:
        with open("/proc/%d/comm" % ppid) as f:
            parent = f.read().strip()
    except OSError:
        parent = "?"
    print(json.dumps({"pid": os.getpid(), "ppid": ppid, "parent": parent,
                      "pgid": os.getpgid(0), "sid": os.getsid(0)}))
"""


@pm_case()
def pm_parent_group_session(env):
    """Launched in the launcher's group, as a group leader (setpgid) and in
    a new session (setsid): the pid the launcher got is the program's, its
    parent is the launcher, and its group and session are where python's
    are."""
    launches = (("same group", {}), ("group leader", {"preexec_fn": os.setpgrp}),
                ("new session", {"start_new_session": True}))
    notes = []
    failed = []
    for label, kw in launches:
        def observe(mode):
            cwd, prof = _prepare(env, mode, IDS, tag="%s-%s" % (mode, label.replace(" ", "-")))
            p = subprocess.Popen(_command(env, mode, prof), cwd=cwd, env=env.base_env(),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
            out, err = p.communicate(timeout=60)
            ids = json.loads(out.decode().splitlines()[0])
            me_pgid, me_sid = os.getpgid(0), os.getsid(0)

            def where(value, launchers):
                return ("the launcher's" if value == launchers and value != ids["pid"]
                        else "own" if value == ids["pid"] else "another (%d)" % value)
            pid = ("= launched" if ids["pid"] == p.pid
                   else "!= launched (%d vs %d)" % (ids["pid"], p.pid))
            parent = ("= launcher" if ids["ppid"] == os.getpid()
                      else "%s (%d)" % (ids["parent"], ids["ppid"]))
            return "pid %s, parent %s, group %s, session %s" % (
                pid, parent, where(ids["pgid"], me_pgid), where(ids["sid"], me_sid))
        values = _each(BOTH, observe)
        notes.append("%s: %s" % (label, _note(values)))
        if any(v != values["python"] for v in values.values()):
            failed.append(label)
    check(not failed, "differs (%s): %s" % (", ".join(failed), "; ".join(notes)))
    return "; ".join(notes)


READINESS = """
    import os, subprocess, sys, time
    fd = int(sys.argv[1])
    os.fstat(fd)  # inherited
    # a followed child started with subprocess (close_fds: no copy), still
    # running when the program closes fd
    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.6)"])
    pid = os.fork()  # a followed child, which closes its copy at once
    if pid == 0:
        os.close(fd)
        time.sleep(0.05)
        os._exit(0)
    os.waitpid(pid, 0)
    time.sleep(0.2)
    os.close(fd)  # ready
    time.sleep(1)
    helper.wait()
    print("done")
"""


@pm_case(alone=True)
def pm_readiness_pipe(env):
    """A supervisor waits for EOF on a pipe the program inherits (pass_fds)
    and closes when ready (at 0.2 s, then it sleeps 1 s; a child started
    with subprocess runs on to 0.6 s, a forked one closed its copy): the
    EOF comes when python's does (within 0.15 s), not when the program, a
    child or a helper ends. Timed: one run at a time, and run alone."""
    values, eofs = {}, {}
    for mode in ("python",) + BOTH:
        cwd, prof = _prepare(env, mode, READINESS)
        r, w = os.pipe()
        t0 = time.monotonic()
        p = subprocess.Popen(_command(env, mode, prof, [w]), cwd=cwd, env=env.base_env(),
                             pass_fds=(w,), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        os.close(w)
        eof = None
        try:
            while select.select([r], [], [], 5)[0]:
                if not os.read(r, 64):
                    eof = time.monotonic() - t0
                    break
        finally:
            os.close(r)
        out, err = p.communicate(timeout=30)
        end = time.monotonic() - t0
        eofs[mode] = eof
        values[mode] = "EOF at %s, ended at %.2f s, %s" % (
            "%.2f s" % eof if eof is not None else "none within 5 s", end, _ended(p.returncode))
        check(p.returncode == 0 and out == b"done\n", "%s: %s, %r %r"
              % (mode, _ended(p.returncode), out, err[-500:]))
    late = [m for m in BOTH if eofs[m] is None or abs(eofs[m] - eofs["python"]) > 0.15]
    check(not late, "EOF off by more than 0.15 s (%s): %s" % (", ".join(late), _note(values)))
    return _note(values)


SETSID_DRIVER = """
    import json, os, signal, subprocess, sys
    p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE)
    ready = p.stdout.readline()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.killpg(0, signal.SIGTERM)  # the launcher's group: not the program's any more
    rest = p.stdout.read()
    print(json.dumps({"ready": ready.decode(), "rest": rest.decode(), "status": p.wait()}))
"""

SETSID_PROG = """
    import os, subprocess, sys, time
    subprocess.run([sys.executable, "-c", "pass"], check=True)  # a followed child first
    os.setsid()
    print("ready", flush=True)
    time.sleep(0.4)
    print("survived")
"""


@pm_case()
def pm_setsid_survives_group_sigterm(env):
    """The program calls setsid(); then its launcher sends SIGTERM to its
    own process group: the program, gone to its own session, runs on and
    exits 0; its profile is written (or a `sonde:` line says why not)."""
    def observe(mode):
        cwd, prof = _prepare(env, mode, SETSID_PROG)
        with open(os.path.join(cwd, "driver.py"), "w") as f:
            f.write(textwrap.dedent(SETSID_DRIVER))
        rc, out, err, _ = _run(env, [env.python, "driver.py"] + _command(env, mode, prof), cwd,
                               start_new_session=True)
        lines = out.decode().splitlines()
        got = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else None
        if got is None:
            return "driver %s: %r %r" % (_ended(rc), out[-300:], err[-300:]), True
        seen = "program %s, %r" % (_ended(got["status"]), got["rest"].strip())
        if mode == "python":
            return seen, True
        if os.path.exists(prof):
            return seen + ", profile written", True
        return seen + ", no profile (%s)" % (" / ".join(_sonde_lines(err)) or "no sonde: line"), \
            bool(_sonde_lines(err))
    results = _each(BOTH, observe)
    values = {m: v[0] for m, v in results.items()}
    check(values["python"].startswith("program exit 0, 'survived'"), "python: " + values["python"])
    check(all(v.startswith(values["python"]) for v in values.values())
          and all(ok for _, ok in results.values()), "differs: " + _note(values))
    return _note(values)


PDEATHSIG = """
    import ctypes, os, signal, subprocess, sys, time
    subprocess.run([sys.executable, "-c", "pass"], check=True)  # a followed child first
    def bye(signum, frame):
        with open("marker", "w") as f:
            f.write("SIGTERM")
        sys.exit(3)
    signal.signal(signal.SIGTERM, bye)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(1, signal.SIGTERM, 0, 0, 0) != 0:  # PR_SET_PDEATHSIG
        raise OSError(ctypes.get_errno(), "prctl")
    print("ready", os.getpid(), flush=True)
    time.sleep(2)
    with open("marker", "w") as f:
        f.write("no signal")
"""

MIDDLE = "import subprocess, sys; subprocess.Popen(sys.argv[1:]).wait()"


@pm_case()
def pm_pdeathsig(env):
    """A middle process starts the launch; the program asks for SIGTERM at
    its parent's death (prctl PR_SET_PDEATHSIG through ctypes); the middle
    is killed by SIGKILL: the program gets SIGTERM (its handler leaves a
    marker file), as under python."""
    def observe(mode):
        cwd, prof = _prepare(env, mode, PDEATHSIG)
        middle = subprocess.Popen([env.python, "-c", MIDDLE] + _command(env, mode, prof),
                                  cwd=cwd, env=env.base_env(), stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        try:
            line = middle.stdout.readline().decode()
            check(line.startswith("ready "), "%s: the program said %r" % (mode, line))
            pid = int(line.split()[1])
            os.kill(middle.pid, signal.SIGKILL)
            middle.wait()
            t0 = time.monotonic()
            marker = os.path.join(cwd, "marker")
            got = None
            while time.monotonic() - t0 < 2.5:
                # The handler creates the marker, then writes it: an empty
                # read is that moment, not an answer.
                try:
                    with open(marker) as f:
                        text = f.read()
                except FileNotFoundError:
                    text = ""
                if text:
                    got = "%s after %.2f s" % (text, time.monotonic() - t0)
                    break
                time.sleep(0.01)
            _kill_pid_if_ours(pid, "prog.py")
            return got.split(" after ")[0] if got else "nothing within 2.5 s", got
        finally:
            middle.stdout.close()
    results = _each(BOTH, observe)
    values = {m: v[1] or v[0] for m, v in results.items()}
    check(results["python"][0] == "SIGTERM", "python: " + values["python"])
    check(all(v[0] == "SIGTERM" for v in results.values()), "differs: " + _note(values))
    return _note(values)


USR1_DRIVER = """
    import json, signal, subprocess, sys, time
    got = []
    signal.signal(signal.SIGUSR1, lambda s, f: got.append(s))
    p = subprocess.Popen(sys.argv[1:])
    status = p.wait()
    time.sleep(0.05)
    print(json.dumps({"status": status, "signals": len(got)}))
"""

USR1_PROG = """
    import os, signal, subprocess, sys, time
    subprocess.run([sys.executable, "-c", "pass"], check=True)  # a followed child first
    for _ in range(3):
        os.kill(os.getppid(), signal.SIGUSR1)
        time.sleep(0.05)
    print("sent 3")
"""


@pm_case()
def pm_sigusr1_to_parent(env):
    """The program sends SIGUSR1 to its parent three times (a worker
    telling its supervisor): the launcher counts them, and the program
    ends as under python."""
    def observe(mode):
        cwd, prof = _prepare(env, mode, USR1_PROG)
        with open(os.path.join(cwd, "driver.py"), "w") as f:
            f.write(textwrap.dedent(USR1_DRIVER))
        rc, out, err, _ = _run(env, [env.python, "driver.py"] + _command(env, mode, prof), cwd)
        lines = out.decode().splitlines()
        if not lines or not lines[-1].startswith("{"):
            return "driver %s: %r %r" % (_ended(rc), out[-300:], err[-300:])
        got = json.loads(lines[-1])
        return "launcher got %d SIGUSR1, program %s, said %r" % (
            got["signals"], _ended(got["status"]), "\n".join(lines[:-1]))
    values = _each(BOTH, observe)
    check(values["python"].startswith("launcher got 3"), "python: " + values["python"])
    _same(values, "what the launcher saw")
    return _note(values)


KILLPG = """
    import errno, os, signal, subprocess, sys, time
    subprocess.run([sys.executable, "-c", "pass"], check=True)  # a followed child first
    got = []
    signal.signal(signal.SIGUSR1, lambda s, f: got.append(s))
    print("group leader", os.getpgid(0) == os.getpid())
    try:
        os.killpg(os.getpid(), signal.SIGUSR1)
        time.sleep(0.05)
        print("killpg: handled", len(got))
    except OSError as e:
        print("killpg:", errno.errorcode[e.errno])
    try:
        os.setsid()
        print("setsid: ok")
    except OSError as e:
        print("setsid:", errno.errorcode[e.errno])
"""


@pm_case()
def pm_killpg_own_group(env):
    """Launched as a group leader: os.killpg(os.getpid(), SIGUSR1) reaches
    its handler, os.setsid() fails with EPERM, and nothing else of the
    group is hurt (status, output, the profile)."""
    def observe(mode):
        cwd, prof = _prepare(env, mode, KILLPG)
        rc, out, err, _ = _run(env, _command(env, mode, prof), cwd, preexec_fn=os.setpgrp)
        return (rc, out, err, {}, prof), cwd
    results = _each(BOTH, observe)
    plain = results["python"][0]
    check(plain[1] == b"group leader True\nkillpg: handled 1\nsetsid: EPERM\n",
          "python said %r" % plain[1])
    values = {m: "%s, %r" % (_ended(r[0][0]), r[0][1].decode("utf-8", "replace"))
              for m, r in results.items()}
    for m in BOTH:
        try:
            compare(plain, results[m][0], m)
            check_profile(m, results[m][0][4], "prog.py")
        except AssertionError as e:
            raise AssertionError("%s; %s" % (e, _note(values)))
    return _note(values)


STOPPED = """
    import os, subprocess, sys, time
    subprocess.run([sys.executable, "-c", "pass"], check=True)  # a followed child first
    print("ready", os.getpid(), flush=True)
    gaps = []
    last = time.monotonic()
    end = last + 1.2
    while time.monotonic() < end:
        time.sleep(0.01)
        now = time.monotonic()
        gaps.append(now - last)
        last = now
    print("stopped twice:", sum(g > 0.2 for g in gaps) >= 2)
"""


def _state(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


@pm_case()
def pm_stop_cont(env):
    """SIGSTOP, then SIGCONT, then SIGTSTP and SIGCONT to the pid the
    launcher got (job control): the program itself stops (state T in
    /proc) and its output after SIGCONT is python's."""
    def observe(mode):
        cwd, prof = _prepare(env, mode, STOPPED)
        # a process group of its own, whose parent (this runner) is in
        # another group of the same session: not orphaned, so that SIGTSTP
        # stops it (the kernel drops SIGTSTP to an orphaned group: run from a
        # shell's background job that had ended, python itself never
        # stopped and ran to its end, state Z)
        p = subprocess.Popen(_command(env, mode, prof), cwd=cwd, env=env.base_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             preexec_fn=lambda: os.setpgid(0, 0))
        states = []
        try:
            line = p.stdout.readline().decode()
            check(line.startswith("ready "), "%s: the program said %r" % (mode, line))
            pid = int(line.split()[1])
            for sig in (signal.SIGSTOP, signal.SIGTSTP):
                time.sleep(0.1)
                p.send_signal(sig)
                # the stop takes effect when the target next runs: on a
                # loaded machine that took more than 0.1 s (python itself
                # read S); wait for it up to 2 s
                deadline = time.monotonic() + 2.0
                while _state(pid) not in ("T", "gone") and time.monotonic() < deadline:
                    time.sleep(0.01)
                states.append("%s: %s" % (signal.Signals(sig).name, _state(pid)))
                time.sleep(0.2)
                p.send_signal(signal.SIGCONT)
        finally:
            out, err = p.communicate(timeout=30)
        return "program state %s; %s, %r" % (", ".join(states), _ended(p.returncode),
                                             out.decode().strip())
    values = _each(BOTH, observe)
    check(values["python"] == "program state SIGSTOP: T, SIGTSTP: T; exit 0, "
          "'stopped twice: True'", "python: " + values["python"])
    _same(values, "job control")
    return _note(values)


NPROC = """
    import os, time
    pids = []
    for i in range(12):
        try:
            pid = os.fork()
        except BlockingIOError:
            break
        if pid == 0:
            time.sleep(0.4)
            os._exit(0)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)
    print("forks", len(pids))
"""


def _readable_by_others(path):
    """Whether every directory above path lets others through and path is
    readable by them."""
    path = os.path.realpath(path)
    parts = path.split(os.sep)
    for i in range(2, len(parts)):
        if not os.stat(os.sep.join(parts[:i])).st_mode & 0o001:
            return False
    return bool(os.stat(path).st_mode & 0o004)


_UID_LOCK = threading.Lock()
_NEXT_UID = [61000 + os.getpid() % 500 * 8]


def _unused_uids(names):
    """{name: a uid without a passwd entry}, none handed out before by this
    process: the cases that run at once as users of their own (one per
    mode) never share one, and their processes count apart."""
    uids = {}
    with _UID_LOCK:
        for name in names:
            uid = _NEXT_UID[0]
            while True:
                try:
                    pwd.getpwuid(uid)
                except KeyError:
                    break
                uid += 1
            uids[name] = uid
            _NEXT_UID[0] = uid + 1
    return uids


def _as_user_with_nproc(uid, limit):
    """A preexec_fn: no groups, RLIMIT_NPROC at limit, then gid and uid."""
    def drop():
        os.setgroups([])
        resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))
        os.setgid(uid)
        os.setuid(uid)
    return drop


def _nproc_runs(env, source):
    """Runs source as a user of its own per mode (python and BOTH at once)
    with RLIMIT_NPROC 8; {mode: "<ending>, <stdout>[; sonde: lines]"}.
    Skips unless root and the build is readable by others."""
    _root_only()
    for path in (env.sonde, env.lib, env.python):
        if not _readable_by_others(path):
            raise Skip("the build (%s) is not readable by other users" % path)
    shared = _open_to_others(env)
    uids = _unused_uids(("python",) + BOTH)

    def observe(mode):
        cwd, _ = _prepare(env, mode, source)
        os.chmod(cwd, 0o755)
        prof = os.path.join(shared, "profile-%s.json" % mode)
        rc, out, err, _ = _run(env, _command(env, mode, prof), cwd,
                               preexec_fn=_as_user_with_nproc(uids[mode], 8))
        return "%s, %r%s" % (_ended(rc), out.decode().strip(),
                             "; " + " / ".join(_sonde_lines(err)) if _sonde_lines(err) else "")
    return _each(BOTH, observe)


def _open_to_others(env):
    """A directory of env.tmp that any user may write (sticky, as /tmp)."""
    os.chmod(env.tmp, 0o755)
    shared = os.path.join(env.tmp, "shared")
    os.makedirs(shared, exist_ok=True)
    os.chmod(shared, 0o1777)
    return shared


@pm_case(known="the kernel counts a user's threads against RLIMIT_NPROC, and every "
                 "profiled process has a sampler thread (the program and each child once its "
                 "session starts): a program that forks up to the limit gets about half the "
                 "children (7 under python, 4 under sonde at 8). Left open: inherent to sampling "
                 "inside the process; pm_nproc_budget checks that no process of sonde's "
                 "counts")
def pm_nproc_limit(env):
    """`ulimit -u 8` for a user of its own (as root: no groups, the limit,
    then an unused uid >= 61000): as many forks succeed as under python."""
    values = _nproc_runs(env, NPROC)
    check(values["python"].startswith("exit 0, 'forks "), "python: " + values["python"])
    check(all(v.split(";")[0] == values["python"] for v in values.values()),
          "differs: " + _note(values))
    return _note(values)


NPROC_BUDGET = """
    import os, subprocess, sys, time
    subprocess.run([sys.executable, "-c", "pass"], check=True)  # a followed child first
    pids = []
    for i in range(3):
        try:
            pid = os.fork()
        except BlockingIOError:
            break
        if pid == 0:
            time.sleep(0.5)
            os._exit(0)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)
    print("forks", len(pids))
"""


@pm_case()
def pm_nproc_budget(env):
    """`ulimit -u 8` as in pm_nproc_limit, but the program (after a
    followed child) forks only 3 children: 8 leaves room for the program,
    its 3 children and a sampler thread each, and all 3 forks succeed under
    sonde as under python (no process of sonde's takes their place)."""
    values = _nproc_runs(env, NPROC_BUDGET)
    check(values["python"] == "exit 0, 'forks 3'", "python: " + values["python"])
    check(all(v.split(";")[0] == values["python"] for v in values.values()),
          "differs: " + _note(values))
    return _note(values)


DAEMON = """
    import subprocess, sys, time
    d = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"],
                         start_new_session=True, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(sys.argv[1], "w") as f:
        f.write(str(d.pid))
    time.sleep(0.3)
    print("bye")
"""


@pm_case(alone=True)
def pm_timeout(env):
    """`timeout 2` of a program that starts a setsid'd daemon (asleep 5 s)
    and exits at 0.3 s: exit 0 in under 1 s; `timeout 1` of a 5 s sleep:
    status 124. As under python. Timed: run alone."""
    def observe(mode):
        cwd, prof = _prepare(env, mode, DAEMON, tag=mode + "-daemon")
        pid_file = os.path.join(env.tmp, "daemon-%s.pid" % mode)
        try:
            rc, out, _, wall = _run(env, ["timeout", "2"] + _command(env, mode, prof, [pid_file]),
                                    cwd)
        finally:
            _kill_if_ours(pid_file, "time.sleep(5)")
        first = "status %d, %.2f s" % (rc, wall), rc == 0 and out == b"bye\n" and wall < 1.0
        cwd, prof = _prepare(env, mode, "import time\ntime.sleep(5)\n", tag=mode + "-sleep")
        rc, _, _, wall = _run(env, ["timeout", "1"] + _command(env, mode, prof), cwd)
        second = "status %d, %.2f s" % (rc, wall), rc == 124 and wall < 1.8
        return "timeout 2 of daemon starter: %s; timeout 1 of sleep 5: %s" % (
            first[0], second[0]), first[1] and second[1]
    results = _each(BOTH, observe)
    values = {m: v[0] for m, v in results.items()}
    check(all(ok for _, ok in results.values()), "not status 0 under 1 s and 124: "
          + _note(values))
    return _note(values)


# --- nothing lost without a word ------------------------------------------

CHILDREN = """
    import os, sys, time
    for i in range(2):
        pid = os.fork()
        if pid == 0:
            %s
            print("child", i, flush=True)
            os._exit(0)
        os.waitpid(pid, 0)
    %s
    print("parent done")
""" % (_busy(0.15).replace("\n", "\n            "), _busy(0.1).replace("\n", "\n    "))


def _full_tmpfs_wrapper():
    """The bash line that mounts a 64 KiB tmpfs on $PM_FULL in a mount
    namespace of its own, fills it, and runs "$@"; Skip if no namespace can
    be made."""
    for unshare in (["unshare", "-m"], ["unshare", "-Urm"]):
        try:
            probe = subprocess.run(unshare + ["true"], capture_output=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if probe.returncode == 0:
            return unshare + ["bash", "-c", 'mount -t tmpfs -o size=64k tmpfs "$PM_FULL" && '
                              '{ cat /dev/zero > "$PM_FULL/fill" 2>/dev/null; exec "$@"; }',
                              "bash"]
    raise Skip("cannot make a mount namespace (unshare -m, unshare -Urm) for a full tmpfs")


def _full_tmpdir(env, modes, period):
    wrapper = _full_tmpfs_wrapper()

    def observe(mode):
        cwd, prof = _prepare(env, mode, CHILDREN)
        full = os.path.join(env.tmp, "full-" + mode)
        os.makedirs(full)
        if period and mode != "python":
            periods = os.path.join(env.tmp, "periods-" + mode)
            os.makedirs(periods)
            argv = [env.sonde, "run", "--no-gpu", "--period", "0.5", "--period-dir", periods,
                    "prog.py"]
        else:
            periods = None
            argv = _command(env, mode, prof)
        rc, out, err, _ = _run(env, wrapper + argv, cwd,
                               extra_env={"TMPDIR": full, "PM_FULL": full})
        return rc, out, err, cwd, prof, periods
    results = _each(modes, observe)
    values = {}
    if not period:
        return _check_losses(env, values, {m: r[:5] for m, r in results.items()}, 3, modes)
    plain = results["python"]
    values["python"] = "%s, %d bytes out" % (_ended(plain[0]), len(plain[1]))
    problems = []
    for m in modes:
        rc, out, err, _, _, periods = results[m]
        written = sorted(os.listdir(periods))
        lines = _sonde_lines(err)
        values[m] = "%s, %d period files, %s" % (_ended(rc), len(written),
                                                  " / ".join(lines) or "no sonde: line")
        if rc != plain[0] or out != plain[1] or _not_sonde(err) != _not_sonde(plain[2]) \
                or not (written or lines):
            problems.append(m)
    check(not problems, "%s: %s" % (", ".join(problems), _note(values)))
    return _note(values)


@pm_case()
def pm_full_tmpdir(env):
    """$TMPDIR a full 64 KiB tmpfs (a mount namespace of its own); the
    program forks two children that run a bit: no SIGBUS, python's status
    and output, the report written, and the children in it or said lost."""
    _root_only()
    return _full_tmpdir(env, BOTH, period=False)


@pm_case()
def pm_full_tmpdir_period(env):
    """The same with `--period 0.5 --period-dir D`: no SIGBUS, python's
    status and output, period profiles written or a `sonde:` line."""
    _root_only()
    return _full_tmpdir(env, RUN, period=True)


SETUID = textwrap.dedent("""
    import os, subprocess, sys, time
    if sys.argv[1:] == ["after-a-child"]:
        subprocess.run([sys.executable, "-c", "pass"], check=True)  # followed, as root
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)
""") + textwrap.dedent(CHILDREN).replace("import os, sys, time\n", "")


@pm_case()
def pm_setuid_children(env):
    """Run as root, the program drops to nobody (setuid 65534), then forks
    two children that run a bit: python's status and output; the children
    in the report, or a `sonde:` line and partial counting them. Then the
    same after a followed child started as root (the directory of the
    profiles is then root's, not the children's): python's status, output
    and standard error (but sonde's lines), the report names the program,
    and one `sonde:` line, the only one, says the profiles are left out,
    and partial counts the three followed processes the program started
    (processes_lost 3: the child and the two forks, whose profiles stay in
    root's directory). (-o names a directory anyone may write, as /tmp.)"""
    _root_only()
    shared = _open_to_others(env)

    def observer(variant):
        def observe(mode):
            tag = "%s-%s" % (mode, variant)
            cwd, _ = _prepare(env, mode, SETUID, tag=tag)
            prof = os.path.join(shared, "profile-%s.json" % tag)
            rc, out, err, _ = _run(env, _command(env, mode, prof, [variant]), cwd)
            return rc, out, err, cwd, prof
        return observe
    note = "before any child: " + _check_losses(env, {}, _each(BOTH, observer("first")), 3,
                                                BOTH)
    results = _each(BOTH, observer("after-a-child"))
    plain = results["python"]
    values = {"python": "%s, %d bytes out" % (_ended(plain[0]), len(plain[1]))}
    problems = []
    for m in BOTH:
        rc, out, err, _, prof = results[m]
        lines = _sonde_lines(err)
        values[m] = "%s, %s" % (_ended(rc), " / ".join(lines) or "no sonde: line")
        if rc != plain[0] or out != plain[1] or _not_sonde(err) != _not_sonde(plain[2]) \
                or len(lines) != 1 or "left out" not in lines[0]:
            problems.append(m)
            continue
        check_profile(m, prof, "prog.py")
        with open(prof) as f:
            lost = json.load(f)["partial"]["processes_lost"]
        values[m] += ", processes_lost %d" % lost
        if lost != 3:
            problems.append(m)
    check(not problems, "after a child: %s: %s" % (", ".join(problems), _note(values)))
    return note + "; after a child: " + _note(values)


DIR_DELETED = """
    import glob, os, shutil, subprocess, sys, tempfile, time
    def children():
        # a forked child and one started with subprocess (two ways to the
        # directory of the profiles)
        pid = os.fork()
        if pid == 0:
            %s
            os._exit(0)
        os.waitpid(pid, 0)
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    children()
    gone = glob.glob(os.path.join(tempfile.gettempdir(), "sonde-run-*"))
    for d in gone:
        shutil.rmtree(d, ignore_errors=True)
    with open(os.path.join(tempfile.gettempdir(), "removed.txt"), "w") as f:
        f.write(str(len(gone)))
    children()
    print("done")
""" % _busy(0.15).replace("\n", "\n            ")


@pm_case()
def pm_private_dir_deleted(env):
    """The program removes $TMPDIR/sonde-run-* after two children (one
    forked, one started with subprocess), then starts two more the same
    ways: python's status and output; the last two in the report, the
    first two counted in partial.processes_lost and said in one `sonde:`
    line, the only one, that names the removed directory; nothing of
    sonde's left in $TMPDIR."""
    def observe(mode):
        cwd, prof = _prepare(env, mode, DIR_DELETED)
        tmp = os.path.join(env.tmp, "tmpdir-" + mode)
        os.makedirs(tmp)
        rc, out, err, _ = _run(env, _command(env, mode, prof), cwd, extra_env={"TMPDIR": tmp})
        return rc, out, err, cwd, prof
    results = _each(BOTH, observe)
    removed, left = {}, {}
    for m in results:
        tmp = os.path.join(env.tmp, "tmpdir-" + m)
        try:
            with open(os.path.join(tmp, "removed.txt")) as f:
                removed[m] = f.read()
        except OSError:
            removed[m] = "?"
        left[m] = sorted(set(os.listdir(tmp)) - {"removed.txt"})
    note = _check_losses(env, {}, results, 5, BOTH)
    problems = []
    for m in BOTH:
        _, _, err, _, prof = results[m]
        with open(prof) as f:
            doc = json.load(f)
        lines = _sonde_lines(err)
        if doc["partial"].get("processes_lost") != 2 or len(doc["processes"]) != 3 \
                or len(lines) != 1 or "removed the directory" not in lines[0] or left[m]:
            problems.append(m)
    check(not problems, "%s: not 3 processes, lost 2, one line on the removed directory and "
          "nothing left: %s (left in $TMPDIR: %s)" % (", ".join(problems), note, _note(left)))
    return note + " (directories removed: %s)" % _note(removed)


LINGER = """
    import os, subprocess, sys, time
    subprocess.run([sys.executable, "-c", "pass"], check=True)  # a followed child that ends
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.devnull, os.O_RDWR)
        for i in (0, 1, 2):
            os.dup2(fd, i)
        time.sleep(3)
        os._exit(0)
    # and one started with subprocess, waited for until it runs its code
    # (it closes its end of a pipe): its profile has started
    r, w = os.pipe()
    d = subprocess.Popen([sys.executable, "-c", "import os, sys, time; "
                          "os.close(int(sys.argv[1])); time.sleep(3)", str(w)],
                         pass_fds=(w,), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    os.close(w)
    os.read(r, 1)
    with open(sys.argv[1], "w") as f:
        f.write("%d %d" % (pid, d.pid))
    time.sleep(0.2)
    print("main done")
"""


@pm_case()
def pm_lingering_child(env):
    """After a followed child that ends, two children (a forked one and
    one started with subprocess, their standard streams on /dev/null)
    still run (3 s) when the program ends at 0.2 s: `sonde run` returns
    within --child-wait (1 s) and a little, the report names the program
    and has its lines, partial.processes_running is 2, and one `sonde:`
    line, the only one, says the 2 still run."""
    def observe(mode):
        cwd, prof = _prepare(env, mode, LINGER)
        pid_file = os.path.join(env.tmp, "child-%s.pid" % mode)
        try:
            rc, out, err, wall = _run(env, _command(env, mode, prof, [pid_file]), cwd)
        finally:
            _kill_if_ours(pid_file, "prog.py", "time.sleep(3)")
        return rc, out, err, wall, prof, cwd
    results = _each(BOTH, observe)
    plain = results["python"]
    values = {"python": "%s, %.2f s" % (_ended(plain[0]), plain[3])}
    problems = []
    for m in BOTH:
        rc, out, err, wall, prof, cwd = results[m]
        desc = "%s, %.2f s" % (_ended(rc), wall)
        ok = rc == plain[0] and out == plain[1] and wall < plain[3] + 1.6
        if os.path.exists(prof):
            doc = check_profile(m, prof, "prog.py")
            try:
                lines = len(file_entry(doc, os.path.join(cwd, "prog.py"))["lines"])
            except AssertionError:
                lines = 0
            running = doc["partial"].get("processes_running", 0)  # older reports lack it
            said = _sonde_lines(err)
            desc += ", %d lines of prog.py, processes_running %d, %s" % (
                lines, running, " / ".join(said) or "no sonde: line")
            ok = ok and lines > 0 and running == 2 and len(said) == 1 \
                and "2 still running" in said[0]
        else:
            desc += ", no report"
            ok = False
        values[m] = desc
        if not ok:
            problems.append(m)
    check(not problems, "%s: %s" % (", ".join(problems), _note(values)))
    return _note(values)


CRASH = """
    import ctypes, os, time
    pid = os.fork()
    if pid == 0:
        %s
        os._exit(0)
    os.waitpid(pid, 0)
    print("before", flush=True)
    %%s
""" % _busy(0.1).replace("\n", "\n        ")


def _no_core():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


@pm_case()
def pm_abort_and_sigsegv(env):
    """os.abort() after a child, and a SIGSEGV (ctypes.string_at(0)), with
    RLIMIT_CORE 0: killed by the same signal as under python, python's
    output, and a `sonde:` line."""
    notes = []
    problems = []
    for how in ("os.abort()", "ctypes.string_at(0)"):
        def observe(mode):
            cwd, prof = _prepare(env, mode, CRASH % how,
                                 tag="%s-%s" % (mode, "abort" if "abort" in how else "segv"))
            rc, out, err, _ = _run(env, _command(env, mode, prof), cwd, preexec_fn=_no_core)
            return rc, out, err
        results = _each(BOTH, observe)
        plain = results["python"]
        values = {"python": "%s, %r" % (_ended(plain[0]), plain[1])}
        for m in BOTH:
            rc, out, err = results[m]
            lines = _sonde_lines(err)
            values[m] = "%s, %r, %s" % (_ended(rc), out, " / ".join(lines) or "no sonde: line")
            if rc != plain[0] or out != plain[1] or _not_sonde(err) != _not_sonde(plain[2]) \
                    or not lines:
                problems.append("%s %s" % (how, m))
        notes.append("%s: %s" % (how, _note(values)))
    check(plain[0] < 0, "python did not die by a signal: " + "; ".join(notes))
    check(not problems, "%s: %s" % (", ".join(problems), "; ".join(notes)))
    return "; ".join(notes)


NOFILE = """
    import errno, os, time
    held = []
    try:
        while True:
            held.append(os.open(os.devnull, os.O_RDONLY))
    except OSError as e:
        full = e.errno
    def child():
        %s
        os._exit(0)
    statuses = []
    for i in range(3):
        if i == 2:  # the last one with descriptors to spare
            for fd in held:
                os.close(fd)
        pid = os.fork()
        if pid == 0:
            child()
        statuses.append(os.waitpid(pid, 0)[1])
    print("EMFILE", full == errno.EMFILE, "children", statuses)
""" % _busy(0.1).replace("\n", "\n        ")


@pm_case()
def pm_nofile_limit(env):
    """`ulimit -n 256`, the program holding every descriptor it can while
    it forks two children (a third once it let them go): python's status
    and output, the report names the program, the children in it or said
    lost."""
    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    def observe(mode):
        cwd, prof = _prepare(env, mode, NOFILE)
        rc, out, err, _ = _run(env, _command(env, mode, prof), cwd, preexec_fn=limit)
        return rc, out, err, cwd, prof
    return _check_losses(env, {}, _each(BOTH, observe), 4, BOTH)


FSIZE = """
    import os, signal, subprocess, sys, time
    # python ignores SIGXFSZ; at its default, a write past the limit kills
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    subprocess.run([sys.executable, "-c", "pass"], check=True)  # a followed child first
    statuses = []
    for i in range(3):
        pid = os.fork()
        if pid == 0:
            %s
            os._exit(0)
        statuses.append(os.waitpid(pid, 0)[1])
    print("children", statuses)
""" % _busy(0.1).replace("\n", "\n            ")


@pm_case()
def pm_fsize_limit(env):
    """`ulimit -f 2` (2 KiB files), SIGXFSZ at its default (the program
    sets it: python ignores it), a followed child, then three forked
    children: none is killed by SIGXFSZ for sonde's writes (their statuses
    are python's), and the program ends as under python. The text report
    on standard error (the limit does not bind a pipe) names the program in
    its header; with `--json -o FILE` (a report over 2 KiB), python's
    standard error but a `sonde:` line naming FILE, the report it could not
    write."""
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))

    def observe(mode):
        cwd, prof = _prepare(env, mode, FSIZE)
        if mode == "python":
            return _run(env, [env.python, "prog.py"], cwd, preexec_fn=limit), None
        argv = [env.sonde, "run", "--no-gpu"] + (["--memory"] if mode == "memory" else []) + \
            ["prog.py"]
        text = _run(env, argv, cwd, preexec_fn=limit)
        return text, _run(env, _command(env, mode, prof), cwd, preexec_fn=limit)[:3] + (prof,)
    results = _each(BOTH, observe)
    plain = results["python"][0]
    values = {"python": "%s, %r" % (_ended(plain[0]), plain[1].decode().strip())}
    problems = []
    for m in BOTH:
        (rc, out, err, _), (rc_o, out_o, err_o, prof) = results[m]
        text = err.decode("utf-8", "replace")
        head = [l for l in text.splitlines() if "prog.py" in l][:1]
        said = [l for l in _sonde_lines(err_o) if prof in l]
        values[m] = "%s, %r, header %s%s; -o: %s, %s" % (
            _ended(rc), out.decode().strip(), repr(head[0].strip()[:80]) if head else
            "not naming prog.py", "; " + " / ".join(_sonde_lines(err)) if _sonde_lines(err)
            else "", _ended(rc_o), " / ".join(_sonde_lines(err_o)) or "no sonde: line")
        if rc != plain[0] or out != plain[1] or not head or rc_o != plain[0] \
                or out_o != plain[1] or _not_sonde(err_o) != _not_sonde(plain[2]) or not said:
            problems.append(m)
    check(not problems, "%s: %s" % (", ".join(problems), _note(values)))
    return _note(values)


START_METHODS = """
    import multiprocessing, sys

    def square(x):
        return x * x

    def hello(name):
        print("hello from", name, flush=True)

    if __name__ == "__main__":
        for method in ("fork", "spawn", "forkserver"):
            ctx = multiprocessing.get_context(method)
            pool = ctx.Pool(2)
            print(method, pool.map(square, range(6)), flush=True)
            pool.close()
            pool.join()
            p = ctx.Process(target=hello, args=(method,))
            p.start()
            p.join()
            print(method, "process", p.exitcode, flush=True)
"""


@pm_case()
def pm_output_complete_on_return(env):
    """-o FILE read the instant `sonde run` returns, with children of
    every multiprocessing start method (fork, spawn, forkserver): whole
    JSON naming the program, every process in it or said lost, and the
    file unchanged a second later."""
    def observe(mode):
        cwd, prof = _prepare(env, mode, START_METHODS)
        rc, out, err, _ = _run(env, _command(env, mode, prof), cwd)
        if mode == "python":
            return rc, out, err, None, None
        data = open(prof, "rb").read() if os.path.exists(prof) else None
        return rc, out, err, data, prof
    results = _each(RUN, observe)
    plain = results["python"]
    values = {"python": "%s, %d bytes out" % (_ended(plain[0]), len(plain[1]))}
    rc, out, err, data, prof = results["run"]
    problems = []
    desc = _ended(rc)
    if rc != plain[0] or out != plain[1]:
        problems.append("output: %s %r" % (desc, _short(out, 300)))
    if data is None:
        problems.append("no file at return")
        desc += ", no file at return"
    else:
        try:
            doc = json.loads(data)
            check(doc["program"].endswith("prog.py"), "names %r" % doc["program"])
            # 9 workers at least: 3 per method (2 in the pool, 1 Process)
            ok, acc = _accounted(doc, err, 10)
            desc += ", whole JSON at return, " + acc
            if not ok:
                problems.append("processes")
        except (ValueError, KeyError, AssertionError) as e:
            desc += ", not whole at return (%d bytes: %s)" % (len(data), e)
            problems.append("incomplete")
        time.sleep(1)
        later = open(prof, "rb").read() if os.path.exists(prof) else b""
        if later != data:
            desc += ", changed after the return"
            problems.append("changed")
    values["run"] = desc
    check(not problems, "%s: %s" % (", ".join(problems), _note(values)))
    return _note(values)
