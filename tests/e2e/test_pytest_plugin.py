"""The pytest plugin (sonde/pytest_plugin.py): `pytest --sonde` profiles the
test session into one report; `--sonde-per-test` adds the slowest tests and
their lines of most time to pytest's terminal summary. Runs where the
interpreter has pytest (Debian's python3 with python3-pytest); skipped
elsewhere.

Issue #32: a line's seconds (its share of the profiled time or of a
span's, times that time) are checked through tests/accuracy.py against the
program's perf_counter around the same loop: the loop holds its line for
one unbroken span, charged exactly but for its two ends
(accuracy.seconds_near), with the named allowance below; a share of a span
times the span's wall time adds the span's two ends and the rounding of
the printed figures. Each first checks it can tell its defect.
"""
import json
import os
import re

import accuracy
from accuracy import need_samples, seconds_near, ticks_to_catch
from support import Skip, check, file_entry, line_total, marked_lines

VERSIONS = ("tiers: the plugin is Python code over sonde.start/stop and spans (the sampler is "
            "test_api's and test_cpu_accuracy's)")

SLOW_SEC = 1.0
MEDIUM_SEC = 0.3
# The default sampling interval (s).
INTERVAL = 0.01
# Systematic allowance of a loop's seconds against its perf_counter
# (relative): a late tick at the loop's ends (half its excess goes to the
# place before it), a failed stack read (charged nowhere), the call and
# return around the timed span.
CLOCK_ALLOWANCE = 0.05
# The defect: the loop's time lost in pytest's or sonde's own frames, or
# charged to its caller: half of it.
HALF = 0.5
# Rounding of the per-test summary (src/report/spans.c): a share with one
# decimal, seconds with two.
SHARE_STEP, SECONDS_STEP = 0.1, 0.01


def _span_seconds(share_pct, wall):
    """A line's seconds from its printed share of a span and the span's
    printed wall time; returns (seconds, what the rounding of the two
    figures allows)."""
    rounding = SHARE_STEP / 2 / 100.0 * wall + SECONDS_STEP / 2 * share_pct / 100.0
    return share_pct / 100.0 * wall, rounding


def _loop_seconds(what, estimate, truth, edges=2, extra=0.0):
    need_samples(what, round(truth / INTERVAL),
                 ticks_to_catch(HALF, CLOCK_ALLOWANCE, edges, extra / INTERVAL))
    return accuracy.check(seconds_near(what, estimate, truth, INTERVAL, CLOCK_ALLOWANCE,
                                       edges=edges, extra=extra))

SUITE = """\
    import time

    def spin(sec, record=None):
        # a settling stretch of 15 ms (over a tick) before the loop: a
        # run-queue wait reported before it is charged there; the longest
        # gap between clock reads from there on bounds one that crosses
        # either end of the loop (wall-clock mode)
        prev = pad = time.perf_counter()
        gap = 0.0
        while prev < pad + 0.015: now = time.perf_counter(); gap, prev = max(gap, now - prev), now
        t0 = prev
        end = t0 + sec
        while (now := time.perf_counter()) < end: gap, prev = max(gap, now - prev), now  # @hot
        gap = max(gap, now - prev)
        if record:
            with open(record, "w") as f:
                f.write(repr(now - t0) + " " + repr(gap))

    def spin_medium(sec):
        end = time.perf_counter() + sec
        while time.perf_counter() < end: pass  # @medium

    def test_slow():
        spin(%r, %r)

    def test_medium():
        spin_medium(%r)

    def test_fast_a():
        assert sum(range(100)) == 4950

    def test_fast_b():
        assert "a" + "b" == "ab"
    """


def _suite(env, name, failing=False):
    """Writes a test suite into its own directory; returns (dir, test file,
    file the slow test writes its measured spin time into)."""
    spun = os.path.join(env.tmp, name + ".spun")
    path = env.write(os.path.join(name, "test_suite.py"),
                     SUITE % (SLOW_SEC, spun, MEDIUM_SEC))
    if failing:
        env.write(os.path.join(name, "test_failing.py"), """\
            def test_fails():
                assert 1 + 1 == 3
            """)
    return os.path.dirname(path), path, spun


def _pytest(env, cwd, args):
    return env.run_python(["-m", "pytest", "-p", "sonde.pytest_plugin", "-p", "no:cacheprovider"]
                          + list(args), env={"PYTHONPATH": env.lib}, cwd=cwd, timeout=120)


def _need_pytest(env):
    if not env.has_module("pytest"):
        raise Skip("no pytest for %s (Debian's python3: apt-get install python3-pytest)"
                   % env.python)


def _spun(path):
    """(the seconds the slow test's loop took, the longest gap between its
    clock reads)."""
    with open(path) as f:
        return tuple(map(float, f.read().split()))


def test_session_report_json(env):
    _need_pytest(env)
    cwd, suite, spun = _suite(env, "json")
    out = os.path.join(env.tmp, "out.json")
    proc = _pytest(env, cwd, ["--sonde", "--sonde-output", out])
    check(proc.returncode == 0, "pytest exit %d:\n%s%s" % (proc.returncode, proc.stdout,
                                                           proc.stderr))
    check("4 passed" in proc.stdout, "pytest's own output lost: %r" % proc.stdout[-500:])
    with open(out) as f:
        prof = json.load(f)
    marks = marked_lines(suite)
    # The hottest line of the whole profile is the slow test's loop, and
    # its time is the loop's own (measured by the test).
    ranked = sorted(((line_total(l), name, l["lineno"]) for name, entry in prof["files"].items()
                     for l in entry["lines"]), reverse=True)
    check(ranked and os.path.realpath(ranked[0][1]) == os.path.realpath(suite)
          and ranked[0][2] == marks["hot"], "hottest lines: %s" % ranked[:3])
    hot_sec = ranked[0][0] / 100.0 * prof["profiled_time_sec"]
    # a run-queue wait may cross each end of the loop (wall-clock mode):
    # at most the longest gap the loop saw between its clock reads
    truth, gap = _spun(spun)
    note = _loop_seconds("the slow test's loop (longest gap %.3f s)" % gap, hot_sec, truth,
                         extra=2 * gap)
    lines = {l["lineno"]: l for l in file_entry(prof, suite)["lines"]}
    check(marks["medium"] in lines, "the medium test's loop is missing: %s" % sorted(lines))
    # pytest's and pluggy's own files are not the user's code.
    for name in prof["files"]:
        check("_pytest" not in name and "pluggy" not in name and "site-packages" not in name
              and "dist-packages" not in name, "pytest internals profiled: %s" % name)
    return note


def test_failing_suite_keeps_exit_status(env):
    _need_pytest(env)
    cwd, suite, _ = _suite(env, "failing", failing=True)
    out = os.path.join(env.tmp, "fail.json")
    proc = _pytest(env, cwd, ["--sonde-output", out])
    check(proc.returncode == 1, "pytest exit %d, not 1:\n%s" % (proc.returncode, proc.stdout))
    check("1 failed, 4 passed" in proc.stdout, proc.stdout[-500:])
    with open(out) as f:
        prof = json.load(f)
    lines = {l["lineno"] for l in file_entry(prof, suite)["lines"]}
    check(marked_lines(suite)["hot"] in lines, "no hot line in the report: %s" % sorted(lines))
    # The text report goes to stderr, after pytest's own output.
    proc = _pytest(env, cwd, ["--sonde", "-q"])
    check(proc.returncode == 1, "pytest exit %d with the text report" % proc.returncode)
    check(os.path.realpath(suite) in proc.stderr or "test_suite.py" in proc.stderr,
          "no text report on stderr: %r" % proc.stderr[-800:])


def test_per_test_summary(env):
    _need_pytest(env)
    cwd, suite, spun = _suite(env, "pertest")
    proc = _pytest(env, cwd, ["--sonde-per-test", "--sonde-slowest", "3"])
    check(proc.returncode == 0, "pytest exit %d:\n%s%s" % (proc.returncode, proc.stdout,
                                                           proc.stderr))
    head, sep, section = proc.stdout.partition("sonde: slowest tests")
    check(sep, "no per-test section:\n%s" % proc.stdout)
    entries = re.findall(r"^ *([0-9.]+)s  (\S+)$", section, re.M)
    check([name for _, name in entries][:2] == ["test_suite.py::test_slow",
                                               "test_suite.py::test_medium"],
          "slowest tests: %s" % entries)
    check(len(entries) == 3, "--sonde-slowest 3 shows %d tests" % len(entries))
    # The slow test's first line is its loop; its share of the test's time
    # times the test's wall time is the loop's own time: the loop's two ends
    # and the span's (the share is of the span's sampled time, the wall
    # time its clock's), and the rounding of the two printed figures.
    block = section.split("test_suite.py::test_slow", 1)[1].split("\n")[1]
    m = re.match(r"^ *([0-9.]+)%  test_suite.py:(\d+) in spin: ", block)
    hot = marked_lines(suite)["hot"]
    check(m and int(m.group(2)) == hot, "slow test's top line %r, not line %d" % (block, hot))
    hot_sec, rounding = _span_seconds(float(m.group(1)), float(entries[0][0]))
    return _loop_seconds("per-test hot line", hot_sec, _spun(spun)[0], edges=4, extra=rounding)


def test_nothing_without_the_option(env):
    _need_pytest(env)
    cwd, _, _ = _suite(env, "off", failing=True)
    proc = _pytest(env, cwd, ["-q"])
    check(proc.returncode == 1, "pytest exit %d, not 1" % proc.returncode)
    check("sonde" not in proc.stdout + proc.stderr, "sonde spoke unasked:\n%s%s"
          % (proc.stdout, proc.stderr))
    check("--sonde-per-test" in _pytest(env, cwd, ["--help"]).stdout, "options not in --help")
    # A report that cannot be written is refused before any test runs.
    proc = _pytest(env, cwd, ["--sonde-output", os.path.join(env.tmp, "no", "dir", "x.json")])
    check(proc.returncode == 4 and "sonde: cannot write the report" in proc.stderr
          and "test_suite.py" not in proc.stdout,
          "exit %d:\n%s%s" % (proc.returncode, proc.stdout, proc.stderr))


def test_entry_script_is_not_the_users_code(env):
    # A `pytest` command (Debian's /usr/bin/pytest-3, a venv's bin/pytest) is
    # a real file outside site-packages; pytest's own work below its one line
    # must not be charged to it.
    _need_pytest(env)
    cwd, suite, _ = _suite(env, "script")
    script = env.write("bin/pytest", """\
        import sys
        import pytest
        sys.exit(pytest.console_main())  # @main
        """)
    out = os.path.join(env.tmp, "script.json")
    proc = env.run_python([script, "-p", "sonde.pytest_plugin", "-p", "no:cacheprovider",
                           "--sonde-output", out], env={"PYTHONPATH": env.lib}, cwd=cwd,
                          timeout=120)
    check(proc.returncode == 0, "exit %d:\n%s%s" % (proc.returncode, proc.stdout, proc.stderr))
    with open(out) as f:
        prof = json.load(f)
    names = [os.path.realpath(name) for name in prof["files"]]
    check(os.path.realpath(script) not in names, "the pytest script was profiled: %s" % names)
    check(os.path.realpath(suite) in names, "the suite is missing: %s" % names)


def test_spans_api(env):
    # The C side of --sonde-per-test, on every interpreter (pytest or not):
    # spans ordered by wall time, each with its own hot line.
    script = env.write("spans.py", """\
        import time
        from sonde import _sonde

        def spin(sec):
            end = time.perf_counter() + sec
            while time.perf_counter() < end: pass  # @spin

        def nap(sec):
            time.sleep(sec)  # @nap

        print(_sonde._span_begin("none"), repr(_sonde._spans_text(5, 3, 100)))
        _sonde.start()
        _sonde._span_begin("short")
        t0 = time.perf_counter()
        nap(0.3)
        t1 = time.perf_counter()
        _sonde._span_begin("long")   # closes "short"
        t2 = time.perf_counter()
        spin(0.6)
        t3 = time.perf_counter()
        _sonde._span_end()
        spin(0.2)                     # in no span
        print(_sonde._spans_text(5, 1, 100), end="")
        _sonde.stop()
        print(t1 - t0, t3 - t2)
        """)
    proc = env.run_python([script], env={"PYTHONPATH": env.lib})
    check(proc.returncode == 0, "exit %d:\n%s" % (proc.returncode, proc.stderr))
    marks = marked_lines(script)
    lines = proc.stdout.splitlines()
    check(lines[0] == "False ''", "without a session: %r" % lines[0])
    check(len(lines) == 6, "want 2 spans of 1 line each:\n%s" % proc.stdout)
    measured = dict(zip(("nap", "spin"), map(float, lines[5].split())))
    long_m = re.match(r"^ *([0-9.]+)s  long$", lines[1])
    short_m = re.match(r"^ *([0-9.]+)s  short$", lines[3])
    check(long_m and short_m, "order or names:\n%s" % proc.stdout)
    check(0.55 <= float(long_m.group(1)) <= 0.9 and 0.25 <= float(short_m.group(1)) <= 0.6,
          "wall times:\n%s" % proc.stdout)
    # each span's top line: its share of the span times the span's wall
    # time against the function's perf_counter (the line's two ends and
    # the span's, the printed figures' rounding)
    notes = []
    for text, mark, wall in ((lines[2], "spin", long_m), (lines[4], "nap", short_m)):
        m = re.match(r"^ *([0-9.]+)%  spans.py:(\d+) in (spin|nap): ", text)
        check(m and int(m.group(2)) == marks[mark], "span's top line %r, not line %d"
              % (text, marks[mark]))
        sec, rounding = _span_seconds(float(m.group(1)), float(wall.group(1)))
        notes.append(_loop_seconds("%s's line in its span" % mark, sec, measured[mark], edges=4,
                                   extra=rounding))
    return "; ".join(notes)
