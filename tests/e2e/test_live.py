"""The live view: `sonde top PID` and `sonde run --live` (src/live/), in a
real terminal (tmux: send-keys, capture-pane, resize-window).

The target knows its hot line: its main thread spends about three
quarters of its time on @hot (the rest on its loop's line), and a second
thread, "sorter", spreads its time over four lines (a sort, a sum, two
sleeps), none with more than about 40 % of its wall time; every thread's
time counts, so @hot leads the table by a wide margin. Each key is
checked by what it must change on the screen: the sort mark and the
order of the column, the table, the thread (rows of that thread only),
the window of the split, pausing (the clock stops), the help, scrolling;
a resize redraws to the new size; q leaves the target running and the
terminal as it was (stty, the screen's former content); a target that
exits ends the view with a line saying so. `run --live` sends the
program's output to a file it names, ends with the program's exit
status, writes -o at the end, and after q lets the program finish.
Colours only without NO_COLOR. Off a terminal, `top` prints a plain
table per interval.
"""
import itertools
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from attach_support import Target, load_json  # noqa: E402
from support import Skip, check, marked_lines  # noqa: E402

VERSIONS = ("tiers: the view draws what the attach reader and the collector give; the "
            "interpreter only changes how they read it")

# The first draw comes one refresh (1 s) after the start; the bound.
HOT_ON_TOP_SEC = 2.0

TARGET = '''\
import random
import sys
import threading
import time

DATA = [random.random() for _ in range(20000)]


def hot(n):
    x = 0
    for i in range(n):  # @loop
        x += i * i % 7  # @hot
    return x


def sorter():
    while True:  # @spin
        sorted(DATA)  # @sort
        time.sleep(0.005)  # @nap1
        sum(DATA)  # @sum
        time.sleep(0.005)  # @nap2


threading.Thread(target=sorter, name="sorter", daemon=True).start()
print("started", flush=True)
print("to stderr", file=sys.stderr, flush=True)
print("ready", flush=True)
end = time.time() + float(sys.argv[1]) if len(sys.argv) > 1 else None
while end is None or time.time() < end:  # @until
    hot(20000)  # @call
sys.exit(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
'''

ROW_RE = re.compile(r"^\s*([\d.]+)\s+([\d.]+|-)\s+([\d.]+|-)\s+([\d.]+|-)\s+([\d.]+|-)\s+"
                    r"(?:([\d.]+|-)\s+([\d.]+|-)\s+)?(\S+)\s*(.*)$")
COLUMNS = ("NOW%", "ALL%", "PY%", "NAT%", "SYS%")
_sockets = itertools.count()


def _need_tmux():
    if not shutil.which("tmux"):
        raise Skip("no tmux (tools/setup-deps.sh --test installs it)")


class Pane:
    """A tmux server of its own with one pane of width x height running
    a shell command; the screen as text."""

    def __init__(self, env, command, width=110, height=30, extra_env=None):
        self.sock = "sonde-live-%d-%d" % (os.getpid(), next(_sockets))
        self.env = env
        self.tmux_env = env.base_env(extra_env)
        self._tmux("new-session", "-d", "-x", str(width), "-y", str(height), "sh", "-c", command)

    def _tmux(self, *args, **kw):
        return subprocess.run(["tmux", "-L", self.sock, "-f", "/dev/null"] + list(args),
                              capture_output=True, text=True, env=self.tmux_env, timeout=30, **kw)

    def screen(self, escapes=False):
        proc = self._tmux("capture-pane", "-p", *(["-e"] if escapes else []))
        return proc.stdout.split("\n")

    def keys(self, *keys):
        self._tmux("send-keys", *keys)

    def resize(self, width, height):
        self._tmux("resize-window", "-x", str(width), "-y", str(height))

    def wait(self, what, pred, timeout=10.0):
        """The screen once pred(lines) is true; fails with the last screen
        after timeout."""
        deadline = time.time() + timeout
        lines = []
        while time.time() < deadline:
            lines = self.screen()
            if pred(lines):
                return lines
            time.sleep(0.05)
        raise AssertionError("%s: not seen in %.0f s; the screen:\n%s"
                             % (what, timeout, "\n".join(lines)))

    def close(self):
        self._tmux("kill-server")


def _rows(lines):
    """(header, rows) of a drawn table: rows as (numbers, where, source)."""
    header = lines[2] if len(lines) > 2 else ""
    rows = []
    for line in lines[3:]:
        m = ROW_RE.match(line)
        if m:
            rows.append(([None if m.group(i) == "-" else float(m.group(i)) for i in range(1, 6)],
                         m.group(8), m.group(9)))
    return header, rows


def _marks(script):
    return {name: "%s:%d" % (os.path.basename(script), no)
            for name, no in marked_lines(script).items()}


def _top_row_is(lines, where):
    _, rows = _rows(lines)
    return bool(rows) and rows[0][1] == where


def _sorted_by(lines, col):
    header, rows = _rows(lines)
    values = [r[0][col] for r in rows]
    return (COLUMNS[col] + "*") in header and len(values) >= 3 and values == sorted(values,
                                                                                 reverse=True)


def _state(lines):
    return lines[1] if len(lines) > 1 else ""


def test_top_keys_resize_and_quit(env):
    _need_tmux()
    script = env.write("hot.py", TARGET)
    marks = _marks(script)
    before, after, status = (os.path.join(env.tmp, n) for n in ("before", "after", "status"))
    with Target(env, script) as target:
        command = ("stty -g > %s; echo BEFORE-SONDE; %s top %d; echo $? > %s; stty -g > %s; "
                   "sleep 600" % (before, env.sonde, target.pid, status, after))
        started = time.time()
        pane = Pane(env, command)
        try:
            lines = pane.wait("the hot line on top", lambda l: _top_row_is(l, marks["hot"]),
                              timeout=10)
            took = time.time() - started
            check(took <= HOT_ON_TOP_SEC, "the hot line reached the top after %.1f s (bound %.1f "
                  "s)" % (took, HOT_ON_TOP_SEC))
            check("pid %d" % target.pid in lines[0], "title: %r" % lines[0])
            # by design about 3/8 of all time (3/4 of one thread of two), and
            # each other line under a fifth: a clear lead, not a tie
            _, rows = _rows(lines)
            check(len(rows) >= 2 and rows[0][0][0] >= 1.3 * rows[1][0][0],
                  "the hot line leads by too little: %s" % [r[0][0] for r in rows[:3]])

            # sorting: each column by its key, and < > move along
            pane.keys("3")
            pane.wait("sorted by PY%", lambda l: _sorted_by(l, 2))
            pane.keys("5")
            lines = pane.wait("sorted by SYS%", lambda l: _sorted_by(l, 4))
            check(_rows(lines)[1][0][1] in (marks["nap1"], marks["nap2"]),
                  "by SYS%% a sleep is not on top:\n%s" % "\n".join(lines))
            pane.keys("4")
            pane.wait("sorted by NAT%", lambda l: _sorted_by(l, 3))
            pane.keys("<")
            pane.wait("< moves the sort left", lambda l: _sorted_by(l, 2))
            pane.keys(">", ">")
            pane.wait("> moves the sort right", lambda l: _sorted_by(l, 4))
            pane.keys("2")
            pane.wait("sorted by ALL%", lambda l: _sorted_by(l, 1))
            pane.keys("1")
            pane.wait("sorted by NOW%", lambda l: _sorted_by(l, 0))

            # the tables
            pane.keys("f")
            lines = pane.wait("the function table", lambda l: "FUNCTION" in _rows(l)[0]
                              and any(r[1] == "hot" for r in _rows(l)[1]))
            pane.keys("l")
            pane.wait("the line table", lambda l: " LINE " in _rows(l)[0])
            pane.keys("Tab")
            pane.wait("TAB: functions", lambda l: "FUNCTION" in _rows(l)[0])
            pane.keys("Tab")
            pane.wait("TAB: lines", lambda l: " LINE " in _rows(l)[0])

            # the window of the split
            pane.keys("c")
            pane.wait("c: split over all", lambda l: "split over: all" in _state(l))
            pane.keys("c")
            pane.wait("c: split over the interval",
                      lambda l: "split over: last interval" in _state(l))

            # threads: each one's rows are its own lines
            sorter_lines = {marks[n] for n in ("spin", "sort", "nap1", "sum", "nap2")}
            seen = {}
            thread_re = re.compile(r"thread: \d/2 .*\(tid (\d+)\)")
            for key in ("t", "t"):
                pane.keys(key)
                lines = pane.wait("a thread after t", lambda l: thread_re.search(_state(l))
                                  and thread_re.search(_state(l)).group(1) not in seen
                                  and _rows(l)[1])
                tid = thread_re.search(_state(lines)).group(1)
                rows = _rows(lines)[1]
                where = {r[1] for r in rows}
                # the sorter's lines are its loop's; the main thread's are all
                # others (hot()'s and the module's)
                if int(tid) == target.pid:
                    check(not (where & sorter_lines) and marks["hot"] in where,
                          "the main thread's lines: %s" % where)
                else:
                    check(where <= sorter_lines, "the sorter shows lines not its own: %s"
                          % (where - sorter_lines))
                # the sum keeps no thread apart: one thread's ALL% is not known
                check(all("      -  " in x for x in lines[3:3 + len(rows)]),
                      "a thread's ALL%% shown:\n%s" % "\n".join(lines))
                seen[tid] = where
            check(len(seen) == 2 and str(target.pid) in seen, "the two threads' rows: %s" % seen)
            pane.keys("t")
            pane.wait("t after the last: all", lambda l: "thread: all (2)" in _state(l))
            pane.keys("T")
            pane.wait("T: the last thread", lambda l: "thread: 2/2" in _state(l))
            pane.keys("a")
            pane.wait("a: all threads", lambda l: "thread: all" in _state(l))

            # pause: the clock stops, and goes on after a second press
            def clock(l):
                m = re.search(r"^sonde  (\d+) s  last interval", l[0])
                return int(m.group(1)) if m else None
            pane.keys("p")
            lines = pane.wait("paused", lambda l: "PAUSED" in l[0])
            frozen = clock(lines)
            time.sleep(2.2)
            lines = pane.screen()
            check(clock(lines) == frozen and "PAUSED" in lines[0],
                  "the screen moved while paused: %r then %r" % (frozen, lines[0]))
            pane.keys("Space")
            pane.wait("resumed", lambda l: "PAUSED" not in l[0] and (clock(l) or 0) > frozen,
                      timeout=3)

            # help, closed by any key
            pane.keys("h")
            pane.wait("help", lambda l: any(x.startswith("keys") for x in l)
                      and any("detach" in x for x in l))
            pane.keys("x")
            pane.wait("help closed", lambda l: _rows(l)[1])

            # resizing redraws to the new size; in a short window the rows
            # scroll (in a tall one all of them fit, and nothing scrolls)
            for width, height in ((80, 8), (130, 40)):
                pane.resize(width, height)
                lines = pane.wait("redrawn at %dx%d" % (width, height),
                                  lambda l: len(l) >= height and re.search(
                                      r"lines; rows \d+-", l[height - 1]) is not None)
                check(all(len(x) <= width for x in lines),
                      "a line longer than %d columns after the resize" % width)
                if height == 8:
                    pane.keys("Down")
                    pane.wait("scrolled down", lambda l: "; rows 2-5" in l[7])
                    pane.keys("Up")
                    pane.wait("scrolled up", lambda l: "; rows 1-4" in l[7])

            # q: detached, the target runs on, the terminal as it was
            pane.keys("q")
            lines = pane.wait("sonde left", lambda l: any("sonde: left pid %d" % target.pid in x
                                                          for x in l), timeout=5)
            check(any("BEFORE-SONDE" in x for x in lines),
                  "the screen before sonde is not back:\n%s" % "\n".join(lines))
            deadline = time.time() + 5
            while time.time() < deadline and not os.path.exists(after):
                time.sleep(0.05)
            with open(status) as f:
                check(f.read().strip() == "0", "top's exit status")
            with open(before) as f, open(after) as g:
                check(f.read() == g.read(), "stty settings changed by sonde top")
            check(target.proc.poll() is None, "the target did not survive the detach")
        finally:
            pane.close()
    return "the hot line on top %.1f s after the start" % took


def test_top_target_exits(env):
    _need_tmux()
    script = env.write("hot.py", TARGET)
    status = os.path.join(env.tmp, "status")
    with Target(env, script, args=("2.5",)) as target:
        pane = Pane(env, "%s top %d; echo $? > %s; sleep 600" % (env.sonde, target.pid, status))
        try:
            pane.wait("the view's end", lambda l: any("pid %d exited; the view ends" % target.pid
                                                      in x for x in l), timeout=8)
            pane.keys("x")
            lines = pane.wait("the closing line", lambda l: any(
                "sonde: pid %d exited after" % target.pid in x for x in l), timeout=5)
            deadline = time.time() + 5
            while time.time() < deadline and not os.path.exists(status):
                time.sleep(0.05)
            with open(status) as f:
                check(f.read().strip() == "0", "top's exit status after the target's end")
        finally:
            pane.close()


def test_top_plain_and_report(env):
    """Off a terminal: a plain table per interval; -o writes the sum."""
    script = env.write("hot.py", TARGET)
    marks = _marks(script)
    out = os.path.join(env.tmp, "top.json")
    with Target(env, script) as target:
        proc = subprocess.Popen([env.sonde, "top", "--refresh", "0.5", "-o", out,
                                 str(target.pid)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env.base_env())
        time.sleep(2.3)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=30)
        check(proc.returncode == 0, "exit %d: %s" % (proc.returncode, stderr))
        check(target.proc.poll() is None, "the target did not survive")
    tables = [t for t in stdout.split("\n\n") if "LINE" in t]
    check(len(tables) >= 3, "%d line tables in 2.3 s at 0.5 s:\n%s" % (len(tables), stdout))
    for table in tables[1:]:
        rows = [ROW_RE.match(x) for x in table.split("\n")[2:]]
        first = next((r.group(8) for r in rows if r), None)
        check(first == marks["hot"], "a plain table led by %s, not @hot:\n%s" % (first, table))
    check("stopped watching pid %d" % target.pid in stderr, "closing line: %r" % stderr)
    prof = load_json(out)
    lines = {l["lineno"]: l for f in prof["files"].values() for l in f["lines"]}
    total = lambda l: l["n_cpu_percent_python"] + l["n_cpu_percent_c"] + l["n_sys_percent"]
    hot_no = marked_lines(script)["hot"]
    check(hot_no in lines and total(lines[hot_no]) == max(total(l) for l in lines.values()),
          "the report's top line is not @hot")


def test_run_live_output_status_and_report(env):
    _need_tmux()
    script = env.write("hot.py", TARGET)
    marks = _marks(script)
    report, status = os.path.join(env.tmp, "live.json"), os.path.join(env.tmp, "status")
    pane = Pane(env, "cd %s; %s run --live -o %s %s 3 5; echo $? > %s; sleep 600"
                % (env.tmp, env.sonde, report, script, status))
    try:
        lines = pane.wait("the hot line on top", lambda l: _top_row_is(l, marks["hot"]),
                          timeout=10)
        check("hot.py 3 5" in lines[0], "title: %r" % lines[0])
        colour = "\n".join(pane.screen(escapes=True))
        check(re.search(r"\x1b\[[0-9;]*3[0-7]m", colour), "no colours on a colour terminal")
        pane.wait("the view's ending line", lambda l: any("exited with status 5 (any key" in x
                                                          for x in l), timeout=15)
        pane.keys("x")
        lines = pane.wait("the closing line", lambda l: any("exited with status 5; its output is "
                                                            "in" in x for x in l), timeout=5)
    finally:
        pane.close()
    with open(status) as f:
        check(f.read().strip() == "5", "sonde did not end with the program's status")
    closing = next(x for x in lines if "its output is in" in x)
    name = closing.split("its output is in ")[1].strip()
    check(re.fullmatch(r"sonde-live-\d+\.out", name), "output file %r" % name)
    with open(os.path.join(env.tmp, name)) as f:
        text = f.read()
    check("started" in text and "to stderr" in text, "the program's output: %r" % text)
    prof = load_json(report)
    lines = {l["lineno"]: l for f in prof["files"].values() for l in f["lines"]}
    hot_no = marked_lines(script)["hot"]
    check(hot_no in lines and lines[hot_no]["n_cpu_percent_python"] > 0,
          "the report at the end lacks @hot")


def test_run_live_quit_lets_the_program_finish(env):
    _need_tmux()
    script = env.write("hot.py", TARGET)
    marks = _marks(script)
    report, status = os.path.join(env.tmp, "live.json"), os.path.join(env.tmp, "status")
    out = os.path.join(env.tmp, "prog.out")
    before, after = os.path.join(env.tmp, "before"), os.path.join(env.tmp, "after")
    pane = Pane(env, "cd %s; stty -g > %s; %s run --live --live-output %s -o %s %s 3 7; "
                "echo $? > %s; stty -g > %s; sleep 600"
                % (env.tmp, before, env.sonde, out, report, script, status, after),
                extra_env={"NO_COLOR": "1"})
    try:
        pane.wait("the hot line on top", lambda l: _top_row_is(l, marks["hot"]), timeout=10)
        colour = "\n".join(pane.screen(escapes=True))
        check(not re.search(r"\x1b\[[0-9;]*[34][0-7]m", colour), "colours with NO_COLOR set")
        pane.keys("q")
        pane.wait("the view closed", lambda l: any("the view is closed; " in x and "runs on" in x
                                                   for x in l), timeout=5)
        pane.wait("the program's end", lambda l: any("exited with status 7" in x for x in l),
                  timeout=15)
        deadline = time.time() + 5
        while time.time() < deadline and not os.path.exists(after):
            time.sleep(0.05)
    finally:
        pane.close()
    with open(status) as f:
        check(f.read().strip() == "7", "sonde did not end with the program's status")
    with open(before) as f, open(after) as g:
        check(f.read() == g.read(), "stty settings changed by run --live")
    with open(out) as f:
        check("started" in f.read(), "the program's output is not in --live-output")
    prof = load_json(report)
    # the report covers the whole run, after q too: about 3 s of the main thread
    hot_no = marked_lines(script)["hot"]
    lines = {l["lineno"]: l for f in prof["files"].values() for l in f["lines"]}
    check(hot_no in lines, "the report lacks @hot")
    check(prof.get("elapsed_time_sec", 0) >= 2.5, "the report covers %.1f s of a 3 s run"
          % prof.get("elapsed_time_sec", 0))


WRAPPER = """\
import signal, subprocess, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
with open(sys.argv[2], "w") as err:
    p = subprocess.Popen(sys.argv[3:], stderr=err,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    with open(sys.argv[1] + ".pid", "w") as f:
        f.write(str(p.pid))
    rc = p.wait()
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(rc))
import os
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
"""

FOREVER = """\
def spin():
    x = 0
    for i in range(100000):  # @loop
        x += i  # @spin
print("running", flush=True)
while True:
    spin()
"""


def test_run_live_signals_reach_the_program(env):
    """Ctrl-C in the terminal reaches the program (sonde's process group);
    SIGTERM sent to sonde alone is passed on; each time sonde ends killed
    by the program's signal, after saying so and where its output is."""
    _need_tmux()
    script = env.write("forever.py", FOREVER)
    marks = _marks(script)
    for sig, how in ((signal.SIGINT, "C-c"), (signal.SIGTERM, "kill")):
        err, out, status = (os.path.join(env.tmp, "%s.%d" % (n, sig))
                            for n in ("err", "out", "status"))
        # the wrapper, in sonde's process group, ignores the terminal's
        # Ctrl-C (sonde gets the default) and records how sonde ended
        pane = Pane(env, "cd %s; %s -c %s %s %s %s run --live --live-output %s %s"
                    % (env.tmp, sys.executable, shlex.quote(WRAPPER), status, err, env.sonde, out,
                       script))
        try:
            # the loop drawn (its two lines: which leads depends on the interpreter)
            pane.wait("the loop's lines", lambda l: {r[1] for r in _rows(l)[1]}
                      & {marks["spin"], marks["loop"]}, timeout=10)
            if how == "kill":
                with open(status + ".pid") as f:
                    os.kill(int(f.read()), sig)
            else:
                pane.keys("C-c")
            # the view's last line says so, and a key ends it sooner
            pane.wait("the ending line", lambda l: any("was killed by signal %d" % sig in x
                                                       for x in l), timeout=10)
            pane.keys("x")
            deadline = time.time() + 10
            while time.time() < deadline and not os.path.exists(status):
                time.sleep(0.05)
        finally:
            pane.close()
        with open(status) as f:
            ended = f.read()
        check(ended == str(-int(sig)), "%s: sonde ended with %r, not killed by signal %d"
              % (how, ended, sig))
        with open(err) as f:
            text = f.read()
        check("was killed by signal %d; its output is in %s" % (sig, out) in text,
              "%s: sonde's last words: %r" % (how, text))
        with open(out) as f:
            text = f.read()
        check(text.startswith("running") and (sig != signal.SIGINT or "KeyboardInterrupt" in text),
              "%s: the program's output: %r" % (how, text))


def test_run_live_hangup(env):
    """The terminal hangs up (its tmux server killed) under `run --live` run
    directly by it (sonde leads the session, so the hang-up reaches sonde
    alone): the program gets the SIGHUP too, and neither is left running
    (nor sonde spinning on a terminal that is gone)."""
    _need_tmux()
    pidfile = os.path.join(env.tmp, "prog.pid")
    script = env.write("forever.py", "import os\nopen(%r, 'w').write(str(os.getpid()))\n" % pidfile
                       + FOREVER)
    out = os.path.join(env.tmp, "hup.out")
    pane = Pane(env, "cd %s; exec %s run --live --live-output %s %s"
                % (env.tmp, env.sonde, out, script))
    try:
        pane.wait("the spinning line", lambda l: _rows(l)[1], timeout=10)
        with open(pidfile) as f:
            prog = int(f.read())
        sonde_pid = int(pane._tmux("display", "-p", "#{pane_pid}").stdout.strip())
    finally:
        pane.close()

    def gone(pid):
        try:
            with open("/proc/%d/stat" % pid) as f:
                return f.read().split(") ", 1)[1].split()[0] in ("Z", "X")
        except FileNotFoundError:
            return True
    deadline = time.time() + 10
    while time.time() < deadline and not (gone(prog) and gone(sonde_pid)):
        time.sleep(0.05)
    left = [(what, pid) for what, pid in (("program", prog), ("sonde", sonde_pid))
            if not gone(pid)]
    for _, pid in left:
        os.kill(pid, signal.SIGKILL)
    check(not left, "still running 10 s after the hang-up: %s" % left)


def test_live_usage_errors(env):
    script = env.write("hot.py", TARGET)
    cases = [
        (["run", "--live", script, "0"], "--live draws on a terminal"),
        (["run", "--refresh", "2", script, "0"], "--refresh goes with --live"),
        (["run", "--live-output", "x", script, "0"], "--live-output goes with --live"),
        (["run", "--live", "--period", "1", "--period-dir", env.tmp, script, "0"],
         "--live and --period do not go together"),
        (["run", "--live", "--refresh", "0", script, "0"], "--refresh must be a number"),
        (["top", "--refresh", "0", "1"], "--refresh must be a number"),
        (["top"], "top needs the id of a process"),
        (["top", "1", "2"], "top takes one process id"),
    ]
    for args, message in cases:
        proc = env.run_sonde(args, timeout=30)
        check(proc.returncode == 2 and message in proc.stderr and proc.stderr.count("\n") == 1,
              "sonde %s: exit %d, %r" % (" ".join(args), proc.returncode, proc.stderr))
