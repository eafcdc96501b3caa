"""The in-process API: sonde.start()/stop() and `with sonde.profile(...)`
in a program started with plain python."""
import json
import os

from support import check, file_entry, lines_by_no, line_total, marked_lines


def test_start_stop(env):
    out = os.path.join(env.tmp, "api.json")
    script = env.write("api.py", """\
        import time, sonde
        def before():
            end = time.perf_counter() + 0.3
            while time.perf_counter() < end: pass  # @before
        def inside():
            end = time.perf_counter() + 0.8
            while time.perf_counter() < end: pass  # @inside
        before()
        sonde.start(outfile=%r, json=True)
        inside()
        sonde.stop()
        before()
        print("ok")
        """ % out)
    proc = env.run_python([script], env={"PYTHONPATH": env.lib})
    check(proc.returncode == 0 and proc.stdout == "ok\n", proc.stdout + proc.stderr)
    with open(out) as f:
        prof = json.load(f)
    lines = lines_by_no(prof, script)
    marks = marked_lines(script)
    check(marks["inside"] in lines, "profiled block missing: %s" % sorted(lines))
    check(marks["before"] not in lines, "time outside start()/stop() was profiled")
    check(0.6 <= prof["elapsed_time_sec"] <= 3.0, "elapsed %r" % prof["elapsed_time_sec"])


def test_context_manager_and_restart(env):
    out1 = os.path.join(env.tmp, "one.json")
    out2 = os.path.join(env.tmp, "two.json")
    script = env.write("ctx.py", """\
        import time, sonde
        def spin(s):
            end = time.perf_counter() + s
            while time.perf_counter() < end: pass  # @spin
        with sonde.profile(outfile=%r, json=True):
            spin(0.4)
        with sonde.profile(outfile=%r, json=True, interval=0.005):
            spin(0.4)
        try:
            sonde.start(interval=-1)
        except ValueError as e:
            print("ValueError")
        """ % (out1, out2))
    proc = env.run_python([script], env={"PYTHONPATH": env.lib})
    check(proc.returncode == 0, proc.stderr)
    check(proc.stdout == "ValueError\n", proc.stdout)
    for out in (out1, out2):
        with open(out) as f:
            prof = json.load(f)
        total = sum(line_total(l) for l in file_entry(prof, script)["lines"])
        check(total > 90, "%s: the profiled block holds %.1f%%" % (out, total))


def test_text_report_to_stderr(env):
    script = env.write("txt.py", """\
        import time, sonde
        sonde.start()
        end = time.perf_counter() + 0.3
        while time.perf_counter() < end: pass
        sonde.stop()
        """)
    proc = env.run_python([script], env={"PYTHONPATH": env.lib})
    check(proc.returncode == 0, proc.stderr)
    check("txt.py" in proc.stderr, "no text report: %r" % proc.stderr)


def test_report_at_exit_without_stop(env):
    out = os.path.join(env.tmp, "exit.json")
    script = env.write("noexit.py", """\
        import time, sonde
        sonde.start(outfile=%r, json=True)
        end = time.perf_counter() + 0.3
        while time.perf_counter() < end: pass
        """ % out)
    proc = env.run_python([script], env={"PYTHONPATH": env.lib})
    check(proc.returncode == 0, proc.stderr)
    check(os.path.exists(out), "no report written at exit")


def test_stop_in_a_forked_child(env):
    out = os.path.join(env.tmp, "fork.json")
    script = env.write("forkstop.py", """\
        import os, time, sonde
        sonde.start(outfile=%r, json=True)
        end = time.perf_counter() + 0.2
        while time.perf_counter() < end: pass
        pid = os.fork()
        if pid == 0:
            sonde.stop()          # the child has no sampler: nothing to stop or write
            print("child", flush=True)
            os._exit(0)
        os.waitpid(pid, 0)
        sonde.stop()
        print("parent")
        """ % out)
    proc = env.run_python([script], env={"PYTHONPATH": env.lib}, timeout=60)
    check(proc.returncode == 0 and proc.stdout == "child\nparent\n", proc.stdout + proc.stderr)
    with open(out) as f:
        check("files" in json.load(f), "no profile from the parent")


def test_options_words_and_other_threads(env):
    """start(options=[...]) takes `sonde run`'s options as words, checked by
    its parser; other_threads=False leaves out the threads already running
    (a Jupyter kernel's own), but the caller's and threads started later."""
    out = os.path.join(env.tmp, "threads.json")
    script = env.write("threads.py", """\
        import os, select, threading, time, sonde
        r, w = os.pipe()
        def idle():
            select.select([r], [], [])  # @idle
        def later():
            end = time.perf_counter() + 0.4
            while time.perf_counter() < end: pass  # @later
        threading.Thread(target=idle, daemon=True).start()
        time.sleep(0.05)
        try:
            sonde.start(options=["--bogus"])
        except ValueError as e:
            print(e)
        sonde.start(other_threads=False, options=["--json", "--output", %r, "--interval", "0.005"])
        t = threading.Thread(target=later)
        t.start()
        end = time.perf_counter() + 0.4
        while time.perf_counter() < end: pass  # @caller
        t.join()
        sonde.stop()
        """ % out)
    proc = env.run_python([script], env={"PYTHONPATH": env.lib}, timeout=60)
    check(proc.returncode == 0, proc.stderr)
    check("sonde: unknown option '--bogus'" in proc.stdout, "bad option not refused: %r" % proc.stdout)
    with open(out) as f:
        prof = json.load(f)
    check(prof["interval_sec"] == 0.005, "--interval not taken: %r" % prof["interval_sec"])
    lines = lines_by_no(prof, script)
    marks = marked_lines(script)
    check(marks["caller"] in lines and marks["later"] in lines,
          "caller's or later thread's line missing: %s" % sorted(lines))
    check(marks["idle"] not in lines, "a thread running before start() was profiled")
    check(prof["unattributed_percent"] < 5, "unattributed %r" % prof["unattributed_percent"])
