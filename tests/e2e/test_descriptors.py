"""sonde never harms the program's descriptors (issue #14, item 2 and the
closed standard descriptor case).

A program that closes every descriptor above 2 (os.closerange(3, 1024), as
daemons and careful servers do) and then opens log files gets the numbers
sonde's own descriptors had. Under `sonde run`, `sonde run --memory` and
`sonde trace` its files, its output and its exit status must be byte for
byte those of plain Python, with and without a forked child writing too,
and sonde's threads must not spin on a descriptor the program closed: the
process's CPU time across a 1 s sleep stays under 0.2 s (a sampler that
spins on a closed descriptor takes a whole core).

Started with stdin or stderr closed (`<&-`, `2>&-`), sonde takes none of the
numbers 0-2: os.read(0) fails with EBADF as under Python, the program's own
files get the same numbers as under Python, and a file the program opened
on number 2 does not receive the report; with -o the profile is written.

Every case is compared with the same program under the same interpreter;
the runs of one test go in parallel (they mostly sleep). `sonde run` gets
--no-gpu: with a GPU, NVML opens descriptors of its own (at the lowest free
numbers, where sonde cannot move them), which would shift the program's.
"""
import json
import os
import subprocess

from support import check

VERSIONS = ("tiers: sonde's own descriptors are the launcher's, the sampler's and the shim's C "
            "code (the truth, plain python, runs on the same interpreter)")

CLOSERANGE = """
    import os
    import sys
    import time

    fork = sys.argv[1] == "fork"
    os.closerange(3, 1024)
    # let sonde's sampler read its descriptors again after they are gone
    time.sleep(0.05)
    logs = [os.open("log%d.txt" % i, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            for i in range(4)]
    print("numbers", logs, flush=True)
    for i, fd in enumerate(logs):
        os.write(fd, b"parent first %d\\n" % i)
    if fork:
        pid = os.fork()
        if pid == 0:
            for i, fd in enumerate(logs):
                os.write(fd, b"child %d\\n" % i)
            os._exit(5)
        _, status = os.waitpid(pid, 0)
        print("child", status >> 8, flush=True)
    with open("log_buffered.txt", "w") as f:
        f.write("buffered\\n" * 100)
    before = time.process_time()
    time.sleep(1.0)
    spent = time.process_time() - before
    for i, fd in enumerate(logs):
        os.write(fd, b"parent last %d\\n" % i)
        os.close(fd)
    print("done")
    print("cpu %.3f" % spent)
    sys.exit(3)
"""

# Every free number, sonde's own included (dup2 closes what was there),
# becomes a copy of the program's log while a thread of its ends: sonde
# must neither read nor close one of them, and must not spin meanwhile.
FLOOD = """
    import os
    import resource
    import threading
    import time

    os.closerange(3, 1024)
    time.sleep(0.05)
    log = os.open("log_flood.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait, daemon=True)  # an error ends the run
    worker.start()
    time.sleep(0.05)
    limit = min(resource.getrlimit(resource.RLIMIT_NOFILE)[0], 1024)
    taken = [n for n in range(3, limit) if n != log]
    for n in taken:
        os.dup2(log, n)
    stop.set()
    worker.join()
    before = time.process_time()
    time.sleep(0.3)
    spent = time.process_time() - before
    for n in taken:
        os.write(n, b"%d\\n" % n)
    for n in taken:
        os.close(n)
    os.write(log, b"end\\n")
    print("flood", len(taken))
    print("cpu %.3f" % spent)
"""

STANDARD = """
    import errno
    import os
    import sys
    import time

    def attempt(call):
        try:
            call()
            return "ok"
        except OSError as e:
            return errno.errorcode.get(e.errno, str(e.errno))

    report = ["read0 " + attempt(lambda: os.read(0, 1)),
              "write2 " + attempt(lambda: os.write(2, b"")),
              "stdin %s stderr %s" % (sys.stdin is None, sys.stderr is None)]
    logs = [os.open("log%d.txt" % i, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            for i in range(3)]
    report.append("numbers %s" % logs)
    for i, fd in enumerate(logs):
        os.write(fd, b"first %d\\n" % i)
    time.sleep(0.3)
    for i, fd in enumerate(logs):
        os.write(fd, b"last %d\\n" % i)
    # left open: the interpreter exits with them, after sonde's report
    print("\\n".join(report))
"""


def _start(env, argv, cwd, redirect=""):
    """Starts argv in cwd; redirect ("<&-", "2>&-") closes a standard
    descriptor first, through the shell as a user would."""
    if redirect:
        argv = ["/bin/sh", "-c", 'exec "$@" ' + redirect, "sh"] + argv
    os.makedirs(cwd, exist_ok=True)
    return subprocess.Popen(argv, cwd=cwd, env=env.base_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE if "2>" not in redirect else None,
                            stdin=subprocess.DEVNULL if "<" not in redirect else None,
                            text=True)


def _finish(proc):
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err or ""


def _files(cwd, skip=()):
    found = {}
    for name in sorted(os.listdir(cwd)):
        if name.startswith("log"):
            with open(os.path.join(cwd, name), "rb") as f:
                found[name] = f.read()
    return found


def _run_all(env, cases):
    """cases: {label: (argv, redirect)}; runs them together in their own
    directories. Returns {label: (status, stdout, stderr, files, cwd)}."""
    procs = {}
    for label, (argv, redirect) in cases.items():
        cwd = os.path.join(env.tmp, label)
        procs[label] = (_start(env, argv, cwd, redirect), cwd)
    results = {}
    for label, (proc, cwd) in procs.items():
        status, out, err = _finish(proc)
        results[label] = (status, out, err, _files(cwd), cwd)
    return results


def _split_cpu(out):
    lines = out.splitlines()
    check(lines and lines[-1].startswith("cpu "), "no CPU figure in the output:\n" + out)
    return "\n".join(lines[:-1]), float(lines[-1].split()[1])


def _sonde_modes(env, tag, out_dir="..", run_options=()):
    """{label: argv prefix} of the three profiling modes, each writing its
    profile into env.tmp (the runs' directories are its children)."""
    out = os.path.join(out_dir, tag)
    return {"run": [env.sonde, "run", "--no-gpu", "--json", "-o", out + "-run.json"],
            "memory": [env.sonde, "run", "--no-gpu", "--memory", "--json", "-o",
                       out + "-memory.json"],
            "trace": [env.sonde, "trace", "-o", out + "-trace.pstats"]}


def _check_profiles(env, tag, program):
    for mode, ending in (("run", "json"), ("memory", "json"), ("trace", "pstats")):
        written = os.path.join(env.tmp, "%s-%s.%s" % (tag, mode, ending))
        check(os.path.exists(written) and os.path.getsize(written) > 0,
              "%s-%s: no profile written" % (tag, mode))
        if ending == "json":
            with open(written, encoding="utf-8") as f:
                prof = json.load(f)
            check(any(name.endswith(program) for name in prof["files"]),
                  "%s-%s: the program is not in its profile: %s"
                  % (tag, mode, list(prof["files"])))


def _check_same(label, plain, ours):
    p_status, p_out, p_err, p_files, _ = plain
    status, out, err, files, _ = ours
    check(status == p_status, "%s: exit %d, %d under python; stderr:\n%s"
          % (label, status, p_status, err[-3000:]))
    check(out == p_out, "%s: stdout differs:\n--- python\n%s\n--- sonde\n%s" % (label, p_out, out))
    check(err == p_err, "%s: stderr differs:\n--- python\n%s\n--- sonde\n%s"
          % (label, p_err, err[-3000:]))
    check(files == p_files, "%s: the program's files differ:\n--- python\n%r\n--- sonde\n%r"
          % (label, p_files, files))


def test_closerange_then_log_files(env):
    programs = {  # tag: (script, arguments, its exit status, its files, CPU limit)
        "fork": (env.write("closerange.py", CLOSERANGE), ["fork"], 3, 5, 0.2),
        "nofork": (env.write("closerange.py", CLOSERANGE), ["nofork"], 3, 5, 0.2),
        # a 0.3 s sleep: a spinning sampler takes about 0.3 s
        "flood": (env.write("flood.py", FLOOD), [], 0, 1, 0.1),
    }
    cases = {}
    for tag, (script, args, _, _, _) in programs.items():
        cases["python-" + tag] = ([env.python, script] + args, "")
        for mode, argv in _sonde_modes(env, tag).items():
            cases["%s-%s" % (mode, tag)] = (argv + [script] + args, "")
    results = _run_all(env, cases)
    for tag, (script, _, want_status, want_files, cpu_limit) in programs.items():
        plain = results["python-" + tag]
        p_status, p_out, p_err, p_files, _ = plain
        check(p_status == want_status and len(p_files) == want_files,
              "plain python: exit %d, files %s; stderr:\n%s" % (p_status, list(p_files), p_err))
        p_text, p_cpu = _split_cpu(p_out)
        for mode in ("run", "memory", "trace"):
            label = "%s-%s" % (mode, tag)
            status, out, err, files, cwd = results[label]
            check(status == p_status, "%s: exit %d, %d under python; stdout:\n%s\nstderr:\n%s"
                  % (label, status, p_status, out[-2000:], err[-3000:]))
            text, cpu = _split_cpu(out)
            _check_same(label, (p_status, p_text, p_err, p_files, None),
                        (status, text, err, files, cwd))
            # a sampler spinning on a closed descriptor takes a whole core
            check(cpu < cpu_limit, "%s: the process used %.3f s of CPU during its sleep "
                  "(python: %.3f s)" % (label, cpu, p_cpu))
        _check_profiles(env, tag, os.path.basename(script))


def test_closed_standard_descriptors(env):
    script = env.write("standard.py", STANDARD)
    cases = {}
    for redirect, tag in (("<&-", "stdin"), ("2>&-", "stderr")):
        cases["python-" + tag] = ([env.python, script], redirect)
        for mode, argv in _sonde_modes(env, tag).items():
            cases["%s-%s" % (mode, tag)] = (argv + [script], redirect)
    # with stderr closed and no -o, the report has nowhere to go: it must
    # not land in the program's log file on number 2
    cases["report-stderr"] = ([env.sonde, "run", "--no-gpu", script], "2>&-")
    results = _run_all(env, cases)
    for tag in ("stdin", "stderr"):
        plain = results["python-" + tag]
        p_status, p_out, p_err, p_files, _ = plain
        check(p_status == 0 and len(p_files) == 3,
              "plain python: exit %d, files %s; stderr:\n%s" % (p_status, list(p_files), p_err))
        closed = 0 if tag == "stdin" else 2
        check("numbers [%d," % closed in p_out,
              "under python the first file did not get number %d:\n%s" % (closed, p_out))
        for mode in ["run", "memory", "trace"] + (["report"] if tag == "stderr" else []):
            label = "%s-%s" % (mode, tag)
            _check_same(label, plain, results[label])
        _check_profiles(env, tag, "standard.py")
