"""check_live.py — src/pyread/ against live interpreters.

For every interpreter (default: every supported one tests/pythons.py finds
) it starts a target program, stored under a non-ASCII
path, whose threads are parked at known lines of known functions:

  main      in sys.stdin.readline() in main()
  sleeper   in time.sleep() inside a function with a non-ASCII name
  deep      in lock.acquire() under a recursion of depth 50
  spinner   spinning in pure Python (no call)
  sorter    in sorted() of a big list, a long C call, over and over
  gen       in time.sleep() inside a generator method, consumed by a for loop

then runs the dump tool (tests/pyread/pyread_dump.c) on it several times
and checks, against what the target reports about itself (thread idents,
native ids, the source lines of its markers), every thread's file,
function (qualified name from 3.11), line, in_call flag, native tid and
that at most one thread holds the GIL, and the GIL's switch interval
the target set. It also checks error returns (no
such pid: -ESRCH; `sleep`, not Python: -ENOEXEC), runs the frame walker
from garbage addresses of the live target (--fuzz) and of random memory
(--fuzz-self), and measures the cost of walking the deepest stack (--bench).

    python3 tests/pyread/check_live.py [--dump PATH] [--python PATH ...]

Without --dump the tool is compiled into a temporary directory with:
    gcc -std=gnu11 -O2 -g -D_GNU_SOURCE -Isrc -o pyread_dump \\
        tests/pyread/pyread_dump.c src/core/*.c src/pyread/*.c -lpthread -lm

Prints "PASS name" / "FAIL name: detail" per check, then a summary per
interpreter; exits 1 on any failure. Needs no package beyond the standard
library and runs under any CPython 3.8+.
"""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DUMPS = 5            # dumps per interpreter (the spinner and sorter move)
RECURSION = 50       # depth of the recursion thread
READY_TIMEOUT = 30.0

TARGET = r'''
import _thread
import random
import sys
import threading
import time

ready = {}
flag = [False]
forever = _thread.allocate_lock()
forever.acquire()


def schläfer_ñ():
    time.sleep(1000)  # @sleep


def recurse(n):
    if n == 0:
        return park_deep()  # @recurse_base
    return recurse(n - 1)  # @recurse


def park_deep():
    ready["deep"] = (threading.get_ident(), threading.get_native_id())
    forever.acquire()  # @deep_park


def spin():
    ready["spinner"] = (threading.get_ident(), threading.get_native_id())
    i = 0  # @spin_first
    while not flag[0]:  # @spin_while
        i += 1  # @spin_body
    return i


def sort_forever(data):
    ready["sorter"] = (threading.get_ident(), threading.get_native_id())
    while not flag[0]:  # @sort_while
        sorted(data)  # @sort_call


class Erzeuger:
    def generator_sleeper(self):
        ready["gen"] = (threading.get_ident(), threading.get_native_id())
        while True:
            time.sleep(1000)  # @gen_sleep
            yield 1


def consume():
    for _ in Erzeuger().generator_sleeper():  # @consume_for
        pass


def chain_main():
    ready["chain"] = (threading.get_ident(), threading.get_native_id())
    CHAIN[0]()


# 50 distinct functions calling each other, for timing a stack without
# recursion (every frame has its own code object).
CHAIN = []
exec(compile("".join(
    "def chain_%d():\n    return CHAIN[%d]()\n" % (i, i + 1) for i in range(49)) +
    "def chain_49():\n    forever.acquire()\n", __file__, "exec"))
CHAIN.extend(globals()["chain_%d" % i] for i in range(50))


def sleeper_main():
    ready["sleeper"] = (threading.get_ident(), threading.get_native_id())
    schläfer_ñ()


def main():
    threads = [threading.Thread(target=recurse, args=(RECURSION,), daemon=True)]
    if MODE == "quiet":
        threads.append(threading.Thread(target=chain_main, daemon=True))
    if MODE in ("all", "traced"):
        data = list(range(500000))
        random.Random(1).shuffle(data)  # about 0.2 s per sorted(): a long C call
        threads += [threading.Thread(target=sleeper_main, daemon=True),
                    threading.Thread(target=spin, daemon=True),
                    threading.Thread(target=sort_forever, args=(data,), daemon=True),
                    threading.Thread(target=consume, daemon=True)]
    for t in threads:
        t.start()
    while len(ready) < len(threads):
        time.sleep(0.01)
    time.sleep(0.3)  # let every thread reach its parking line
    if MODE == "traced":
        # 3.12+: settrace/setprofile instrument every executing code object
        # (INSTRUMENTED_LINE, INSTRUMENTED_CALL...); callbacks run only here.
        sys.settrace(lambda frame, event, arg: None)
        sys.setprofile(lambda frame, event, arg: None)
    ready["main"] = (threading.get_ident(), threading.get_native_id())
    sys.stdout.write(json.dumps({"ready": ready}) + "\n")
    sys.stdout.flush()
    sys.stdin.readline()  # @main_park
    flag[0] = True


import json
# a switch interval of the target's own, for the reader to find (4.9 ms:
# near the default, so that the GIL's hand-offs stay as they were)
sys.setswitchinterval(0.0049)
RECURSION = int(sys.argv[1])
MODE = sys.argv[2]  # "all"; "traced": all under settrace/setprofile;
                   # "quiet": only the recursion and the chain, for timing
main()
'''


class Checker:
    """Counts and prints checks; with buffered, keeps the lines for
    flush() (a Checker used on another thread)."""

    def __init__(self, label, buffered=False):
        self.label = label
        self.passed = 0
        self.failed = 0
        self.lines = [] if buffered else None

    def say(self, text):
        if self.lines is None:
            print(text)
        else:
            self.lines.append(text)

    def flush(self):
        for text in self.lines or ():
            print(text)
        self.lines = []

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            self.say("PASS %s %s" % (self.label, name))
        else:
            self.failed += 1
            self.say("FAIL %s %s: %s" % (self.label, name, detail))
        return ok


def build_dump(tmp):
    out = os.path.join(tmp, "pyread_dump")
    sources = ([os.path.join(ROOT, "tests/pyread/pyread_dump.c")] +
               sorted(glob.glob(os.path.join(ROOT, "src/core/*.c"))) +
               sorted(glob.glob(os.path.join(ROOT, "src/pyread/*.c"))))
    subprocess.check_call(["gcc", "-std=gnu11", "-O2", "-g", "-D_GNU_SOURCE",
                           "-I" + os.path.join(ROOT, "src"), "-o", out] + sources +
                          ["-lpthread", "-lm"])
    return out


def run_dump(dump, *args):
    proc = subprocess.run([dump] + [str(a) for a in args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=120)
    text = proc.stdout.decode("utf-8", "replace").strip()
    try:
        doc = json.loads(text) if text else None
    except ValueError:
        doc = None
    return proc.returncode, doc, text + proc.stderr.decode("utf-8", "replace")


def marker_lines(source):
    lines = {}
    for number, text in enumerate(source.splitlines(), 1):
        m = re.search(r"# @(\w+)$", text)
        if m:
            lines[m.group(1)] = number
    return lines


def interpreter_version(python):
    out = subprocess.check_output([python, "-c",
                                   "import sys; print('%d.%d.%d' % sys.version_info[:3])"])
    return out.decode().strip()


def find_thread(dump_doc, ident):
    for t in dump_doc.get("threads", []):
        if t["pthread_id"] == ident:
            return t
    return None


def check_dump(c, doc, expect, lines, path, n, tally, gil_tally):
    """Checks one dump; tally counts the sorter's in_call observations,
    gil_tally whether the sorter held the GIL."""
    ready = expect["ready"]
    threads = doc.get("threads", [])
    c.check("dump %d: all %d threads listed" % (n, len(ready)),
            doc.get("threads_rc") == len(ready) and len(threads) == len(ready),
            "threads_rc %s, expected %d" % (doc.get("threads_rc"), len(ready)))
    holders = [t for t in threads if t["holds_gil"]]
    c.check("dump %d: at most one GIL holder" % n, len(holders) <= 1,
            "%d holders" % len(holders))
    # Only the two threads that run Python code can hold the GIL: the
    # sorter (inside sorted(), most of the time) or the spinner (for a
    # switch interval after each sort, longer when the machine is busy and
    # preempts it while it holds the GIL). A blocked thread never does.
    if holders:
        c.check("dump %d: the GIL holder is the sorter or the spinner" % n,
                holders[0]["pthread_id"] in (ready["sorter"][0], ready["spinner"][0]),
                "holder thread_id %d" % holders[0]["pthread_id"])
    gil_tally.append(len(holders) == 1 and holders[0]["pthread_id"] == ready["sorter"][0])
    c.check("dump %d: the GIL's switch interval" % n,
            doc.get("switch_rc") == 0 and doc.get("switch_ns") == 4900000,
            "rc %s, %s ns; the target set 4900000" % (doc.get("switch_rc"), doc.get("switch_ns")))
    for name, (ident, native_id) in sorted(ready.items()):
        t = find_thread(doc, ident)
        if not c.check("dump %d %s: thread found by pthread id" % (n, name), t is not None,
                       "no thread state with thread_id %d" % ident):
            continue
        c.check("dump %d %s: native tid" % (n, name), t["native_tid"] == native_id,
                "got %s, threading.get_native_id() says %d" % (t["native_tid"], native_id))
        frames = t["frames"]
        if not c.check("dump %d %s: walk ended cleanly" % (n, name),
                       t["walk_rc"] == 0 and not t["truncated"] and frames,
                       "walk_rc %s truncated %s frames %d" % (t["walk_rc"], t["truncated"],
                                                              len(frames))):
            continue
        top = frames[0]
        c.check("dump %d %s: innermost file" % (n, name), top["file"] == path,
                "got %r, expected %r" % (top["file"], path))
        want = expect["names"][name]
        c.check("dump %d %s: innermost function" % (n, name), top["name"] == want,
                "got %r, expected %r" % (top["name"], want))
        if name == "spinner":
            ok_lines = {lines["spin_while"], lines["spin_body"], lines["spin_first"]}
            c.check("dump %d spinner: line in the loop, not in a call" % n,
                    top["line"] in ok_lines and not top["in_call"],
                    "line %s in_call %s, loop lines %s" % (top["line"], top["in_call"],
                                                           sorted(ok_lines)))
            continue
        if name == "sorter":
            ok_lines = {lines["sort_while"], lines["sort_call"]}
            # at the sorted() line in_call may be either (LOAD_GLOBAL, POP_TOP)
            good = top["line"] in ok_lines and (top["line"] == lines["sort_call"]
                                                or not top["in_call"])
            c.check("dump %d sorter: line in the loop" % n, good,
                    "line %s in_call %s" % (top["line"], top["in_call"]))
            tally.append(top["line"] == lines["sort_call"] and top["in_call"])
            continue
        line_marker = {"main": "main_park", "sleeper": "sleep", "deep": "deep_park",
                       "gen": "gen_sleep"}[name]
        c.check("dump %d %s: innermost line" % (n, name), top["line"] == lines[line_marker],
                "got %s, expected %d" % (top["line"], lines[line_marker]))
        c.check("dump %d %s: innermost in_call" % (n, name), top["in_call"] is True,
                "in_call %s" % top["in_call"])
        if name == "deep":
            rec = frames[1:1 + RECURSION + 1]
            names_ok = all(f["name"] == "recurse" for f in rec) and len(rec) == RECURSION + 1
            c.check("dump %d deep: %d recurse frames under park_deep" % (n, RECURSION + 1),
                    names_ok, "names %s" % [f["name"] for f in frames[:RECURSION + 3]])
            want_lines = [lines["recurse_base"]] + [lines["recurse"]] * RECURSION
            c.check("dump %d deep: recursion lines and in_call" % n,
                    [f["line"] for f in rec] == want_lines and all(f["in_call"] for f in rec),
                    "lines %s in_call %s" % ([f["line"] for f in rec],
                                             [f["in_call"] for f in rec]))
            c.check("dump %d deep: bottom is threading's bootstrap" % n,
                    frames[-1]["name"].endswith("_bootstrap") and
                    frames[-1]["file"].endswith("threading.py"),
                    "bottom %r in %r" % (frames[-1]["name"], frames[-1]["file"]))
        if name == "gen":
            if c.check("dump %d gen: consumer under the generator" % n, len(frames) > 1,
                       "only %d frames" % len(frames)):
                caller = frames[1]
                c.check("dump %d gen: consumer at its for line, not in a call" % n,
                        caller["name"] == "consume" and caller["line"] == lines["consume_for"]
                        and caller["in_call"] is False,
                        "%r line %s in_call %s" % (caller["name"], caller["line"],
                                                   caller["in_call"]))
        if name == "main":
            c.check("dump %d main: called from <module>" % n,
                    len(frames) == 2 and frames[1]["name"] == "<module>"
                    and frames[1]["in_call"] and frames[1]["file"] == path,
                    "frames %s" % [(f["name"], f["in_call"]) for f in frames])
        if name == "sleeper":
            c.check("dump %d sleeper: called from sleeper_main" % n,
                    len(frames) > 1 and frames[1]["name"] == "sleeper_main"
                    and frames[1]["in_call"],
                    "frames %s" % [(f["name"], f["in_call"]) for f in frames[:3]])


def check_interpreter(python, dump, tmp, mode):
    version = interpreter_version(python)
    minor = int(version.split(".")[1])
    label = version if python.startswith("/root") else "%s(%s)" % (version, python)
    c = Checker(label + ("" if mode == "all" else " " + mode))
    # A non-ASCII directory and file name.
    directory = os.path.join(tmp, "pfad_ü_路径_%d_%s" % (minor, mode))
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "ziel_мод.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(TARGET)
    lines = marker_lines(TARGET)
    qual = minor >= 11
    names = {"main": "main", "sleeper": "schläfer_ñ", "deep": "park_deep",
             "spinner": "spin", "sorter": "sort_forever",
             "gen": "Erzeuger.generator_sleeper" if qual else "generator_sleeper"}

    # the quiet target of the timing below starts now, beside this one
    # (its threads park at once; CI time)
    quiet = start_target(python, path, "quiet") if mode == "all" else None
    quiet_used = False
    target = start_target(python, path, mode)
    try:
        line = target.stdout.readline().decode()
        if not c.check("target started", line.startswith("{"), "target said %r" % line):
            return c, None
        expect = json.loads(line)
        expect["names"] = names
        # The main thread signals before it parks, and may wait a while for
        # the GIL (the sorter holds it for ~0.1 s at a time): wait, by the
        # kernel's account, until it sits in read(0, ...).
        c.check("target main thread parked in read(0)",
                wait_in_read_stdin(target.pid, expect["ready"]["main"][1]),
                "not seen in read(0) within %.0f s" % READY_TIMEOUT)
        tally, gil_tally = [], []
        for n in range(DUMPS):
            rc, doc, text = run_dump(dump, target.pid)
            if not c.check("dump %d: opened" % n, rc == 0 and doc and "threads" in doc,
                           "rc %d: %s" % (rc, text[:300])):
                continue
            if n == 0:
                c.check("version detected", doc["version"] == version,
                        "got %s, interpreter is %s" % (doc["version"], version))
            check_dump(c, doc, expect, lines, path, n, tally, gil_tally)
            time.sleep(0.3)  # longer than one sort: the dumps see independent moments
        # How much of its time the sorter spends inside sorted() is the
        # scheduler's doing, not the reader's: on a loaded machine a spinner
        # preempted while it holds the GIL keeps the sorter out of sorted()
        # (2 of 5 dumps once on 3.14). Each dump's line is checked above;
        # here, that in_call is reported at all.
        c.check("sorter: seen inside sorted() in a dump", sum(tally) >= 1,
                "in_call at the sorted() line in %d of %d dumps" % (sum(tally), len(tally)))
        # sorted() keeps the GIL for its whole run: the sorter is seen
        # holding it (in most dumps on a quiet machine; at least once always)
        c.check("GIL: the sorter is seen holding it", sum(gil_tally) >= 1,
                "sorter held the GIL in %d of %d dumps" % (sum(gil_tally), len(gil_tally)))

        rc, doc, text = run_dump(dump, "--fuzz", 20000, target.pid)
        c.check("fuzz: 20000 walks from garbage addresses of the live target",
                rc == 0 and doc and doc["fuzz"]["walks"] > 0,
                "rc %d: %s" % (rc, text[-300:]))
        fuzz = doc["fuzz"] if rc == 0 and doc else None

        rc, doc, text = run_dump(dump, target.pid)
        c.check("target still healthy after fuzz",
                rc == 0 and doc and doc["threads_rc"] == len(expect["ready"]), text[-200:])
        quiet_used = quiet is not None
    finally:
        stop_target(target)
        if quiet and not quiet_used:
            stop_target(quiet)
    if mode != "all":
        return c, {"bench": None, "fuzz": fuzz}

    # Timing on a quiet target (the busy threads above would share the CPU).
    target = quiet
    try:
        target.stdout.readline()
        time.sleep(0.3)
        rc, doc, text = run_dump(dump, "--bench", 5000, target.pid)
        bench = doc["bench"] if rc == 0 and doc and "bench" in doc else None
        depths = sorted(w["depth"] for w in bench["walks"]) if bench else []
        c.check("bench: the chain and the recursion walked", len(depths) == 2 and
                depths[0] >= 50 and depths[1] >= RECURSION + 3, text[-300:])
    finally:
        stop_target(target)
    return c, {"bench": bench, "fuzz": fuzz}


READ_SYSCALL = {"x86_64": 0, "aarch64": 63}.get(os.uname().machine)


def wait_in_read_stdin(pid, tid):
    """Waits until thread tid is blocked in read(0, ...), from
    /proc/PID/task/TID/syscall (falls back to a fixed pause)."""
    path = "/proc/%d/task/%d/syscall" % (pid, tid)
    deadline = time.time() + READY_TIMEOUT
    while time.time() < deadline:
        try:
            with open(path) as f:
                fields = f.read().split()
        except OSError:
            time.sleep(1.0)
            return True
        if READ_SYSCALL is None:
            time.sleep(1.0)
            return True
        if len(fields) > 1 and fields[0] == str(READ_SYSCALL) and int(fields[1], 16) == 0:
            return True
        time.sleep(0.01)
    return False


def start_target(python, path, mode):
    return subprocess.Popen([python, path, str(RECURSION), mode], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE,
                            env=dict(os.environ, PYTHONIOENCODING="utf-8"))


def stop_target(target):
    try:
        target.stdin.write(b"\n")
        target.stdin.close()
    except OSError:
        pass
    try:
        target.wait(timeout=10)
    except subprocess.TimeoutExpired:
        target.kill()
        target.wait()


def check_errors(dump):
    """The error returns and the walks over random memory: the same for every
    interpreter under test, run on a thread beside their checks (CI time);
    its lines are printed by the caller (Checker.flush)."""
    c = Checker("errors", buffered=True)
    gone = subprocess.Popen(["true"])
    gone.wait()
    rc, doc, text = run_dump(dump, gone.pid)
    c.check("no such pid gives -ESRCH", rc == 2 and doc and doc["error"] == -3, text[:200])
    sleeper = subprocess.Popen(["sleep", "10"])
    try:
        time.sleep(0.1)
        rc, doc, text = run_dump(dump, sleeper.pid)
        c.check("a non-Python process (sleep) gives -ENOEXEC",
                rc == 2 and doc and doc["error"] == -8, text[:200])
    finally:
        sleeper.kill()
        sleeper.wait()
    # Interpreters without a layout: -ENOTSUP with the version (3.6, 3.7).
    for old in sorted(glob.glob("/root/.pyenv/versions/3.[67].*/bin/python")):
        version = interpreter_version(old)
        target = subprocess.Popen([old, "-c", "import time; time.sleep(30)"])
        try:
            time.sleep(0.3)
            rc, doc, text = run_dump(dump, target.pid)
            c.check("CPython %s (no layout) gives -ENOTSUP and its version" % version,
                    rc == 2 and doc and doc["error"] == -95 and
                    doc["version"].startswith(version.rsplit(".", 1)[0] + "."), text[:200])
        finally:
            target.kill()
            target.wait()
    rc, doc, text = run_dump(dump, "--fuzz-self", 1000)
    c.check("fuzz-self: walks over random memory of this process, every layout",
            rc == 0 and doc and doc["fuzz_self"]["walks"] > 0, text[-300:])
    if rc == 0 and doc:
        c.say("  fuzz-self: %s" % json.dumps(doc["fuzz_self"]))
    return c


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dump", help="pyread_dump binary (default: build one)")
    parser.add_argument("--python", action="append", help="interpreter(s) to test")
    args = parser.parse_args()
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import pythons as found  # tests/pythons.py: the range of src/pyread/pyversions.h
    lo, hi = found.supported_range()
    pythons = args.python or [path for _, path, _ in found.find_interpreters()]
    pythons = [p for p in pythons if os.path.exists(p) and
               lo <= tuple(int(x) for x in interpreter_version(p).split(".")[:2]) <= hi]
    tmp = tempfile.mkdtemp(prefix="sonde_pyread_")
    results = []
    try:
        dump = args.dump or build_dump(tmp)
        errors = []
        beside = threading.Thread(target=lambda: errors.append(check_errors(dump)))
        beside.start()
        try:
            for python in pythons:
                for mode in ("all", "traced"):
                    c, extra = check_interpreter(python, dump, tmp, mode)
                    results.append((c.label, c, extra))
        finally:
            beside.join()
        if not errors:
            errors.append(Checker("errors"))
            errors[0].check("the error checks ran", False, "an exception on their thread")
        errors[0].flush()
        results.insert(0, ("errors", errors[0], None))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print()
    failed = 0
    for label, c, extra in results:
        line = "%-28s %4d passed %3d failed" % (label, c.passed, c.failed)
        print(line)
        if extra and extra["bench"]:
            b = extra["bench"]
            for w in sorted(b["walks"], key=lambda w: w["depth"]):
                print("%-28s walk of %d frames: %.1f reads, %.1f us" % (
                    "", w["depth"], w["reads"], w["us"]))
            print("%-28s threads(), %d threads: %.1f reads, %.1f us" % (
                "", b["threads"], b["threads_reads"], b["threads_us"]))
        if extra and extra["fuzz"]:
            f = extra["fuzz"]
            print("%-28s fuzz: %d walks, %d frames (longest %d), %d ended by errors, %.0f ms"
                  % ("", f["walks"], f["frames"], f["longest"], f["errors"], f["us"] / 1000))
        failed += c.failed
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
