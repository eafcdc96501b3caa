"""Where sonde's output files go (issue #14, item 1), for `run`, `trace`,
`record`, `view` and the in-process API.

-o through a symbolic link writes the link's target (the link stays a
link); a link to /proc/self/fd/1 with stdout redirected to a file adds the
report to that file after the program's output; a FIFO is written for the
process reading it; /dev/null is written, never replaced; a directory is a
one-line error. A temporary file that a writer killed in the middle of a
write left behind (".NAME.sonde-tmp.PID.XXXXXX", PID gone) is removed the
next time the same destination is written; a write that fails (file size
limit) leaves no temporary file and the old file whole; an output
directory that goes away while the program runs gives one message. The
profiled program's stdout and exit status are compared with plain
python's each time.

Runs once (VERSIONS): the file service (src/prim/file.c) is the same C code in
the command and in every interpreter's module; test_report_cli.py's stream
test runs on every interpreter.
"""
import json
import os
import re
import resource
import signal
import subprocess
import threading
import time

from support import check

VERSIONS = "once: the file service is the same C code whatever the interpreter"

PROGRAM = """\
import sys, time
print("program line 1")
end = time.perf_counter() + 0.15
while time.perf_counter() < end: pass
print("program line 2")
sys.exit(3)
"""

# argv: MODE TARGET. Runs a moment, then: "rmdir" removes the directory
# TARGET, "mkdir" makes a directory at TARGET, "efbig" limits the files the
# process writes to TARGET bytes, "kill" does too with SIGXFSZ's default
# action (the process dies in the middle of a larger write, as under kill
# -9); "none" does nothing.
ERRPROG = """\
import os, resource, shutil, signal, sys, time
mode, target = sys.argv[1], sys.argv[2]
print("program before")
end = time.perf_counter() + 0.1
while time.perf_counter() < end: pass
if mode == "rmdir":
    shutil.rmtree(target)
elif mode == "mkdir":
    os.mkdir(target)
elif mode in ("efbig", "kill"):
    if mode == "kill":
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(target), hard))
print("program after")
sys.exit(5)
"""

TEMP_TAG = ".sonde-tmp."


# ---- helpers ----------------------------------------------------------------------------

def _temps(*dirs):
    """sonde's temporary files in dirs."""
    return [n for d in dirs for n in os.listdir(d) if TEMP_TAG in n]


def _sonde_lines(stderr):
    return [l for l in stderr.splitlines() if l.startswith("sonde:")]


def _same_as_plain(proc, plain, what):
    check(proc.returncode == plain.returncode,
          "%s: exit %d, plain python %d; stderr:\n%s" % (what, proc.returncode, plain.returncode,
                                                       proc.stderr[-2000:]))
    check(proc.stdout == plain.stdout,
          "%s: stdout %r, plain python %r" % (what, proc.stdout[-500:], plain.stdout[-500:]))


def _no_errors(proc, what):
    check(not _sonde_lines(proc.stderr), "%s: %s" % (what, proc.stderr[-2000:]))


def _link_kept(link, text, what):
    check(os.path.islink(link) and os.readlink(link) == text,
          "%s: the link %s was replaced (%s)" % (what, link,
                                                 os.readlink(link) if os.path.islink(link)
                                                 else "no longer a link"))


def _read(path, mode="r"):
    with open(path, mode) as f:
        return f.read()


def _run_to_file(env, argv, out_path, preexec_fn=None):
    """Runs argv with stdout going to the file out_path; returns
    (exit status, stderr, the file's bytes)."""
    with open(out_path, "wb") as out:
        proc = subprocess.run(argv, stdout=out, stderr=subprocess.PIPE, text=True, timeout=120,
                              env=env.base_env(), cwd=env.tmp, preexec_fn=preexec_fn)
    return proc.returncode, proc.stderr, _read(out_path, "rb")


class _FifoReader:
    """A FIFO at path, read whole by a thread of this process."""

    def __init__(self, path):
        os.mkfifo(path)
        self.path = path
        self.data = b""
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        with open(self.path, "rb") as f:
            self.data = f.read()

    def finish(self):
        self.thread.join(20)
        if self.thread.is_alive():
            # The writer never opened it: open and close it so that the
            # reader sees the end, and report what it read (nothing).
            os.close(os.open(self.path, os.O_WRONLY | os.O_NONBLOCK))
            self.thread.join(20)
        return self.data


def _run_measured(argv, cwd, timeout=60):
    """Runs argv; returns (exit status, stderr, its peak memory in KiB)."""
    with open(os.path.join(cwd, ".stderr"), "w+") as err:
        child = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.time() + timeout
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.time() > deadline:
                child.kill()
                child.wait()
                raise AssertionError("%s did not end in %d s" % (argv, timeout))
            time.sleep(0.01)
        child.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read()
    os.unlink(os.path.join(cwd, ".stderr"))
    return child.returncode, text, usage.ru_maxrss


def _stdout_link(env, name):
    """A link named name in the test's directory to /proc/self/fd/1."""
    link = os.path.join(env.tmp, name)
    os.symlink("/proc/self/fd/1", link)
    return link


def _limit_files(n_bytes, die):
    """A preexec_fn: files written are limited to n_bytes; past it the
    process dies (die) or its write fails with EFBIG."""
    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL if die else signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE,
                           (n_bytes, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
    return apply


def _check_killed_then_cleaned(env, dest, killed_pid, killed_status, rerun, what):
    """After a writer (killed_pid) died in the middle of writing dest: its
    temporary file is there, named for it; rerun() writes dest again and
    removes it, while other destinations' leftovers and a live writer's stay."""
    directory, name = os.path.split(dest)
    check(killed_status == -signal.SIGXFSZ,
          "%s: the writer was not killed in its write (status %r)" % (what, killed_status))
    prefix = ".%s%s%d." % (name, TEMP_TAG, killed_pid)
    left = [n for n in os.listdir(directory) if n.startswith(prefix)]
    check(len(left) == 1 and len(left[0]) == len(prefix) + 6,
          "%s: no temporary file %sXXXXXX left by the killed writer: %r" % (what, prefix,
                                                                           _temps(directory)))
    others = [".%s%s%d.abcdef" % ("other.out", TEMP_TAG, killed_pid),
              ".%s%s%d.abcdef" % (name, TEMP_TAG, os.getpid())]  # a live writer's
    for other in others:
        with open(os.path.join(directory, other), "w") as f:
            f.write("not sonde's to remove")
    rerun()
    check(sorted(_temps(directory)) == sorted(others),
          "%s: after the next write, temporary files %r (expected only %r)"
          % (what, _temps(directory), others))
    for other in others:
        os.unlink(os.path.join(directory, other))


# ---- sonde run ---------------------------------------------------------------------------

def test_run_output_kinds(env):
    """Each format to another kind of destination."""
    script = env.write("prog.py", PROGRAM)
    plain = env.run_python([script])
    check(plain.returncode == 3 and plain.stdout.count("program line") == 2, plain.stderr)
    tmp = env.tmp
    sub = os.path.join(tmp, "sub")
    os.mkdir(sub)
    real = os.path.join(sub, "real.json")
    with open(real, "w") as f:
        f.write("old contents")
    links = {"abs.json": real, "dangling.html": "sub/new.html", "c1.svg": "sub/chain.svg",
             "c2.svg": "c1.svg"}
    for name, text in links.items():
        os.symlink(text, os.path.join(tmp, name))

    for dest, extra in (("abs.json", []), ("dangling.html", []), ("c2.svg", []),
                        ("/dev/null", ["--format", "folded"])):
        proc = env.run_sonde(["run", "-o", dest] + extra + [script])
        _same_as_plain(proc, plain, "run -o %s" % dest)
        _no_errors(proc, "run -o %s" % dest)
    check(json.loads(_read(real))["files"], "the link's target holds no profile")
    check(_read(os.path.join(sub, "new.html")).startswith("<!DOCTYPE html>"),
          "a dangling link's target was not created with the page")
    check("<svg" in _read(os.path.join(sub, "chain.svg")), "the chain's target holds no SVG")
    for name, text in links.items():
        _link_kept(os.path.join(tmp, name), text, "run -o %s" % name)
    check(os.path.exists("/dev/null") and not os.path.isfile("/dev/null"), "/dev/null replaced")

    fifo = _FifoReader(os.path.join(tmp, "p.speedscope.json"))
    proc = env.run_sonde(["run", "-o", fifo.path, script])
    data = fifo.finish()
    _same_as_plain(proc, plain, "run -o FIFO")
    _no_errors(proc, "run -o FIFO")
    check("$schema" in json.loads(data.decode()), "the FIFO's reader got no speedscope profile")

    link = _stdout_link(env, "to_stdout.txt")
    rc, err, got = _run_to_file(env, [env.sonde, "run", "-o", link, script],
                                os.path.join(tmp, "stdout.txt"))
    text = got.decode()
    check(rc == plain.returncode and not _sonde_lines(err), "exit %d: %s" % (rc, err))
    check(text.startswith(plain.stdout) and "prog.py" in text[len(plain.stdout):]
          and "Python" in text[len(plain.stdout):],
          "stdout's file does not hold the program's output then the report: %r" % text[:300])
    _link_kept(link, "/proc/self/fd/1", "run -o LINK")
    check(not _temps(tmp, sub), "temporary files left: %r" % _temps(tmp, sub))


def test_run_output_errors(env):
    """A directory named up front or made while the program runs, the
    directory removed while it runs, a write over the file size limit, and
    a writer killed in its write."""
    script = env.write("err.py", ERRPROG)
    tmp = env.tmp
    sub = os.path.join(tmp, "outdir")
    os.mkdir(sub)

    proc = env.run_sonde(["run", "--json", "-o", sub, script, "none", "x"])
    check(proc.returncode != 0 and proc.stdout == "" and os.listdir(sub) == [],
          "-o DIRECTORY: exit %d, stdout %r" % (proc.returncode, proc.stdout))
    lines = _sonde_lines(proc.stderr)
    check(len(proc.stderr.splitlines()) == 1 and "Is a directory" in proc.stderr,
          "-o DIRECTORY: not one clear line: %r" % proc.stderr)

    def during(mode, target, dest, what):
        if mode == "rmdir":
            os.mkdir(target)
        plain = env.run_python([script, mode, target])
        if mode == "mkdir":
            os.rmdir(target)
        elif mode == "rmdir":
            os.mkdir(target)
        proc = env.run_sonde(["run", "-o", dest, script, mode, target])
        _same_as_plain(proc, plain, what)
        return proc

    out = os.path.join(sub, "made.json")
    proc = during("mkdir", out, out, "a directory made at -o while it runs")
    lines = _sonde_lines(proc.stderr)
    check(len(lines) == 1 and "cannot write" in lines[0] and "Is a directory" in lines[0],
          "one clear message expected: %r" % proc.stderr)
    os.rmdir(out)

    gone = os.path.join(tmp, "gone")
    proc = during("rmdir", gone, os.path.join(gone, "p.json"), "the -o directory removed")
    lines = _sonde_lines(proc.stderr)
    check(len(lines) == 1 and "cannot write" in lines[0] and "written" not in proc.stderr,
          "one clear message expected: %r" % proc.stderr)

    page = os.path.join(sub, "page.html")
    with open(page, "w") as f:
        f.write("previous page")
    proc = during("efbig", "4096", page, "a write over the file size limit")
    lines = _sonde_lines(proc.stderr)
    check(len(lines) == 1 and "File too large" in lines[0], "one clear message: %r" % proc.stderr)
    check(_read(page) == "previous page" and not _temps(sub),
          "the old file changed or a temporary file was left: %r" % _temps(sub))

    # SIGXFSZ back at its default and the limit lowered: the report's write
    # holds the signal back, so the program ends as plain python does (exit
    # 5, not killed by a signal its own writes never raised), with one line;
    # the old file stays and no temporary file is left (a writer killed in
    # its write is cleaned up after: test_trace_output_errors, record's)
    plain = env.run_python([script, "kill", "4096"])
    killed = env.run_sonde(["run", "-o", page, script, "kill", "4096"])
    _same_as_plain(killed, plain, "SIGXFSZ at its default")
    lines = _sonde_lines(killed.stderr)
    check(len(lines) == 1 and "File too large" in lines[0], "one clear message: %r" % killed.stderr)
    check(_read(page) == "previous page" and not _temps(sub),
          "the old file changed or a temporary file was left: %r" % _temps(sub))


def test_api_outputs(env):
    """sonde.profile(outfile=LINK) and Profile.dump_stats(LINK) write the
    link's target; an outfile that is a directory is an OSError at start."""
    tmp = env.tmp
    os.mkdir(os.path.join(tmp, "sub"))
    os.symlink("sub/api.json", os.path.join(tmp, "api.json"))
    os.symlink("sub/api.prof", os.path.join(tmp, "api.prof"))
    script = env.write("api.py", """\
        import time, sonde
        with sonde.profile(outfile="api.json", json=True):
            end = time.perf_counter() + 0.1
            while time.perf_counter() < end: pass
        p = sonde.Profile()
        p.enable()
        sorted(range(1000))
        p.disable()
        p.dump_stats("api.prof")
        try:
            sonde.start(outfile="sub", json=True)
        except OSError as e:
            print("OSError", e)
        print("done")
        """)
    proc = env.run_python([script], env={"PYTHONPATH": env.lib})
    check(proc.returncode == 0 and proc.stdout.endswith("done\n"), proc.stdout + proc.stderr)
    check(proc.stdout.startswith("OSError sonde: ") and "Is a directory" in proc.stdout,
          "outfile=DIRECTORY: %r" % proc.stdout)
    _link_kept(os.path.join(tmp, "api.json"), "sub/api.json", "profile(outfile=LINK)")
    _link_kept(os.path.join(tmp, "api.prof"), "sub/api.prof", "dump_stats(LINK)")
    check(json.loads(_read(os.path.join(tmp, "sub", "api.json")))["files"], "no profile")
    check(_read(os.path.join(tmp, "sub", "api.prof"), "rb")[:1] == b"{",
          "dump_stats wrote no marshalled dict through the link")
    check(not _temps(tmp, os.path.join(tmp, "sub")), "temporary files left")


# ---- sonde trace -------------------------------------------------------------------------

def test_trace_output_files(env):
    from trace_support import load_stats
    script = env.write("prog.py", PROGRAM)
    plain = env.run_python([script])
    tmp = env.tmp
    os.mkdir(os.path.join(tmp, "sub"))
    link = os.path.join(tmp, "stats.prof")
    os.symlink("sub/real.prof", link)
    proc = env.run_sonde(["trace", "-o", link, script])
    _same_as_plain(proc, plain, "trace -o LINK")
    _no_errors(proc, "trace -o LINK")
    _link_kept(link, "sub/real.prof", "trace -o LINK")
    stats = load_stats(env, os.path.join(tmp, "sub", "real.prof"))
    check(any(k.startswith(script) or "prog.py" in k for k in stats),
          "the link's target holds no statistics of prog.py: %r" % list(stats)[:5])

    proc = env.run_sonde(["trace", "-o", "/dev/null", script])
    _same_as_plain(proc, plain, "trace -o /dev/null")
    _no_errors(proc, "trace -o /dev/null")

    fifo = _FifoReader(os.path.join(tmp, "fifo.prof"))
    proc = env.run_sonde(["trace", "-o", fifo.path, script])
    data = fifo.finish()
    _same_as_plain(proc, plain, "trace -o FIFO")
    with open(os.path.join(tmp, "from_fifo.prof"), "wb") as f:
        f.write(data)
    check(load_stats(env, f.name).keys() == stats.keys(), "the FIFO's reader got %r" % data[:50])

    out_link = _stdout_link(env, "to_stdout.prof")
    rc, err, got = _run_to_file(env, [env.sonde, "trace", "-o", out_link, script],
                                os.path.join(tmp, "stdout.bin"))
    head = plain.stdout.encode()
    check(rc == plain.returncode and not _sonde_lines(err), "exit %d: %s" % (rc, err))
    check(got.startswith(head), "stdout's file does not start with the program's output")
    tail = os.path.join(tmp, "tail.prof")
    with open(tail, "wb") as f:
        f.write(got[len(head):])
    check(load_stats(env, tail).keys() == stats.keys(),
          "stdout's file does not hold the statistics after the program's output")
    _link_kept(out_link, "/proc/self/fd/1", "trace -o LINK")

    proc = env.run_sonde(["trace", "-o", os.path.join(tmp, "sub"), script])
    check(proc.returncode != 0 and proc.stdout == "" and len(proc.stderr.splitlines()) == 1
          and "Is a directory" in proc.stderr, "trace -o DIRECTORY: %r" % proc.stderr)
    check(not _temps(tmp, os.path.join(tmp, "sub")), "temporary files left")


def test_trace_output_errors(env):
    script = env.write("err.py", ERRPROG)
    tmp = env.tmp
    gone = os.path.join(tmp, "gone")
    os.mkdir(gone)
    plain = env.run_python([script, "rmdir", gone])
    os.mkdir(gone)
    proc = env.run_sonde(["trace", "-o", os.path.join(gone, "x.prof"), script, "rmdir", gone])
    _same_as_plain(proc, plain, "trace, -o directory removed")
    lines = _sonde_lines(proc.stderr)
    check(len(lines) == 1 and "cannot write" in lines[0], "one clear message: %r" % proc.stderr)

    dest = os.path.join(tmp, "k.prof")
    killed = subprocess.Popen([env.sonde, "trace", "-o", dest, script, "kill", "64"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp,
                              env=env.base_env())
    killed.communicate(timeout=120)
    plain = env.run_python([script, "none", "x"])

    def rerun():
        proc = env.run_sonde(["trace", "-o", dest, script, "none", "x"])
        _same_as_plain(proc, plain, "trace after a killed write")
        _no_errors(proc, "trace after a killed write")
    _check_killed_then_cleaned(env, dest, killed.pid, killed.returncode, rerun, "trace")


# ---- sonde record ------------------------------------------------------------------------

def test_record_output_files(env):
    script = env.write("prog.py", PROGRAM)
    plain = env.run_python([script])
    tmp = env.tmp
    sub = os.path.join(tmp, "sub")
    os.mkdir(sub)
    link = os.path.join(tmp, "rec.json")
    os.symlink("sub/real.json", link)

    def record(dest, *extra):
        return env.run_sonde(["record", "-o", dest] + list(extra) + ["--", env.python, script])

    proc = record(link)
    _same_as_plain(proc, plain, "record -o LINK")
    _link_kept(link, "sub/real.json", "record -o LINK")
    check(json.loads(_read(os.path.join(sub, "real.json")))["files"], "no profile in the target")

    proc = record("/dev/null", "--format", "folded")
    _same_as_plain(proc, plain, "record -o /dev/null")

    fifo = _FifoReader(os.path.join(tmp, "rec.folded"))
    proc = record(fifo.path)
    data = fifo.finish()
    _same_as_plain(proc, plain, "record -o FIFO")
    check(b"prog.py" in data, "the FIFO's reader got no stacks of prog.py: %r" % data[:200])

    out_link = _stdout_link(env, "to_stdout")
    rc, err, got = _run_to_file(env, [env.sonde, "record", "--format", "json", "-o", out_link,
                                      "--", env.python, script], os.path.join(tmp, "stdout.txt"))
    text = got.decode()
    check(rc == plain.returncode, "exit %d: %s" % (rc, err))
    check(text.startswith(plain.stdout) and json.loads(text[len(plain.stdout):])["files"],
          "stdout's file does not hold the program's output then the profile: %r" % text[:300])
    _link_kept(out_link, "/proc/self/fd/1", "record -o LINK")

    proc = record(sub, "--format", "json")
    check(proc.returncode != 0 and proc.stdout == "" and len(proc.stderr.splitlines()) == 1
          and "Is a directory" in proc.stderr, "record -o DIRECTORY: %r" % proc.stderr)
    check(not _temps(tmp, sub), "temporary files left: %r" % _temps(tmp, sub))


def test_record_output_errors(env):
    """record itself over the file size limit: the write fails whole, or
    record dies in it and its leftover is removed the next time."""
    script = env.write("prog.py", PROGRAM)
    plain = env.run_python([script])
    dest = os.path.join(env.tmp, "rec.html")
    with open(dest, "w") as f:
        f.write("previous page")
    argv = [env.sonde, "record", "-o", dest, "--", env.python, "-B", script]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=env.tmp,
                          env=env.base_env(), preexec_fn=_limit_files(4096, die=False))
    _same_as_plain(proc, plain, "record over the file size limit")
    check(any("File too large" in l for l in _sonde_lines(proc.stderr)),
          "no word of the failed write: %r" % proc.stderr)
    check(not any("written" in l for l in _sonde_lines(proc.stderr)),
          "says written and cannot write: %r" % proc.stderr)
    check(_read(dest) == "previous page" and not _temps(env.tmp),
          "the old file changed or a temporary file was left: %r" % _temps(env.tmp))

    killed = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=env.tmp,
                              env=env.base_env(), preexec_fn=_limit_files(4096, die=True))
    killed.communicate(timeout=120)

    def rerun():
        proc = env.run_sonde(argv[1:])
        _same_as_plain(proc, plain, "record after a killed write")
        check(_read(dest).startswith("<!DOCTYPE html>"), "no page after the killed write")
    _check_killed_then_cleaned(env, dest, killed.pid, killed.returncode, rerun, "record")


# ---- sonde view --------------------------------------------------------------------------

def _profile_json(env):
    script = env.write("prog.py", PROGRAM)
    prof = os.path.join(env.tmp, "prof.json")
    proc = env.run_sonde(["run", "--json", "-o", prof, script])
    check(proc.returncode == 3 and os.path.isfile(prof), proc.stderr)
    return prof


def test_view_output_files(env):
    prof = _profile_json(env)
    tmp = env.tmp
    sub = os.path.join(tmp, "sub")
    os.mkdir(sub)
    link = os.path.join(tmp, "page.html")
    os.symlink("sub/real.html", link)
    proc = env.run_sonde(["view", prof, "-o", link])
    check(proc.returncode == 0, proc.stderr)
    _link_kept(link, "sub/real.html", "view -o LINK")
    page = _read(os.path.join(sub, "real.html"))
    check(page.startswith("<!DOCTYPE html>"), "the link's target holds no page")

    proc = env.run_sonde(["view", prof, "-o", "/dev/null"])
    check(proc.returncode == 0 and not _sonde_lines(proc.stderr), proc.stderr)

    fifo = _FifoReader(os.path.join(tmp, "fifo.html"))
    proc = env.run_sonde(["view", prof, "-o", fifo.path])
    check(proc.returncode == 0 and fifo.finish().decode() == page,
          "the FIFO's reader did not get the page: %s" % proc.stderr)

    out_link = _stdout_link(env, "to_stdout.html")
    rc, err, got = _run_to_file(env, [env.sonde, "view", prof, "-o", out_link],
                                os.path.join(tmp, "stdout.html"))
    check(rc == 0 and got.decode().startswith(page), "stdout's file does not start with the page")
    _link_kept(out_link, "/proc/self/fd/1", "view -o LINK")

    proc = env.run_sonde(["view", prof, "-o", sub])
    check(proc.returncode != 0 and len(proc.stderr.splitlines()) == 1
          and "Is a directory" in proc.stderr and os.listdir(sub) == ["real.html"],
          "view -o DIRECTORY: %r" % proc.stderr)

    # an earlier report of sonde's (view keeps any other file: test_html)
    previous = '<meta name="generator" content="sonde 0">previous page'
    with open(link, "w") as f:
        f.write(previous)  # (through the link)
    proc = subprocess.run([env.sonde, "view", prof, "-o", link], capture_output=True, text=True,
                          timeout=60, preexec_fn=_limit_files(4096, die=False))
    check(proc.returncode != 0 and len(proc.stderr.splitlines()) == 1
          and "File too large" in proc.stderr, "view over the size limit: %r" % proc.stderr)
    check(_read(link) == previous and not _temps(tmp, sub),
          "the old page changed or a temporary file was left: %r" % _temps(tmp, sub))

    killed = subprocess.Popen([env.sonde, "view", prof, "-o", link], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, preexec_fn=_limit_files(4096, die=True))
    killed.communicate(timeout=60)

    def rerun():
        proc = env.run_sonde(["view", prof, "-o", link])
        check(proc.returncode == 0 and _read(link) == page, proc.stderr)
    _check_killed_then_cleaned(env, os.path.join(sub, "real.html"), killed.pid,
                               killed.returncode, rerun, "view")


def test_view_bad_input(env):
    """Every bad input is one line and a non-zero exit, without reading a
    file larger than the limit (1 GiB) or waiting on a FIFO."""
    tmp = env.tmp
    prof = _profile_json(env)
    good = _read(prof)
    inputs = {"empty.json": "", "binary.json": "\x00\x01\x02binary", "cut.json": good[:len(good) // 2],
              "array.json": "[1, 2]", "object.json": "{}", "deep.json": "[" * 100000 + "]" * 100000,
              "text.json": "not json at all",
              # valid JSON syntax, but no profile: a count beyond a double's
              # range, a name that is not UTF-8
              "huge.json": good.replace('"n_samples": ', '"n_samples": 1' + "9" * 400, 1),
              "exponent.json": re.sub(r'"elapsed_time_sec": [^,]*', '"elapsed_time_sec": 1e999', good),
              "latin1.json": good.replace('"program": "', '"program": "\udcff', 1)}
    for name, text in inputs.items():
        with open(os.path.join(tmp, name), "w", errors="surrogateescape") as f:
            f.write(text)
    os.mkdir(os.path.join(tmp, "dir.json"))
    os.mkfifo(os.path.join(tmp, "fifo.json"))
    big = os.path.join(tmp, "big.json")
    with open(big, "wb") as f:
        f.truncate((1 << 30) + 1)  # sparse
    for name in sorted(inputs) + ["dir.json", "fifo.json", "missing.json", "big.json"]:
        out = os.path.join(tmp, "out.html")
        rc, err, peak_kib = _run_measured([env.sonde, "view", name, "-o", out], tmp)
        check(rc != 0 and len(err.splitlines()) == 1 and err.startswith("sonde: ") and name in err
              and not os.path.exists(out), "view %s: exit %d, stderr %r" % (name, rc, err))
        if name == "big.json":
            check("1 GiB" in err and peak_kib < 64 * 1024,
                  "view of a file over 1 GiB: %r, peak memory %d KiB" % (err, peak_kib))
