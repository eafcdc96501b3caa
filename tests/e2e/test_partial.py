"""Partial profiles say so: the "partial" object of the JSON report (always
there, zeros on a complete run), the stack depth limit (a recursion deeper
than it keeps its root and its leaf frames with a "<N frames left out>"
marker between them, counted in frames_left_out), in `sonde run --stacks`,
`sonde attach` and `sonde dump`, and the terminal report's one line."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from attach_support import Target, load_json, parse_folded, sonde_ok  # noqa: E402
from support import check  # noqa: E402

VERSIONS = "all: the depth limit of the in-process sampler's and attach's frame walks"

PARTIAL_KEYS = {"failed_reads", "dropped_samples", "threads_left_out", "frames_left_out",
                "processes_lost", "processes_running"}
DEPTH_LIMIT = 256  # SONDE_STACK_MAX_DEPTH (src/sample/sample.h)
RECURSION = 600    # frames of recursion: deeper than the limit, within Python's

# Recurses RECURSION frames deep, then burns CPU at the bottom: every
# sample's stack is deeper than the limit.
DEEP = """\
import sys, time

def spin(seconds):
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        x += 1
    return x

def dive(n, seconds):
    if n == 0:
        if len(sys.argv) > 2:
            print("ready", flush=True)
        return spin(seconds)
    return dive(n - 1, seconds)

dive(%d, float(sys.argv[1]))
""" % RECURSION

SHALLOW = """\
import time

def work():
    end = time.perf_counter() + 0.3
    x = 0
    while time.perf_counter() < end:
        x += 1

work()
"""

MARKER_RE = re.compile(r"^<(\d+) frames? left out>$")


def _partial(prof):
    partial = prof.get("partial")
    check(isinstance(partial, dict), "no partial object: %r" % sorted(prof))
    check(set(partial) == PARTIAL_KEYS, "partial keys: %r" % sorted(partial))
    check(all(isinstance(v, int) and v >= 0 for v in partial.values()), "partial: %r" % partial)
    return partial


def _check_cut_stacks(doc, what):
    """Every stack of the deep program at the bottom of its recursion: root
    first, root and leaf kept, one marker frame between; returns the frames
    the markers of all samples say were left out."""
    frames = doc["frames"]
    cut = 0
    deep_samples = 0
    for sample in doc["samples"]:
        names = [frames[i]["name"] for i in sample["frames"]]
        markers = [i for i, n in enumerate(names) if MARKER_RE.match(n)]
        if "spin" not in names:  # on the way down (or up): cut or not, its own count
            cut += sum(int(MARKER_RE.match(names[i]).group(1)) for i in markers) * sample["count"]
            continue
        deep_samples += sample["count"]
        check(len(markers) == 1, "%s: %d marker frames in %r" % (what, len(markers), names[:4]))
        check(len(names) == DEPTH_LIMIT, "%s: stack of %d frames" % (what, len(names)))
        check(names[0] == "<module>", "%s: root %r is not <module>" % (what, names[0]))
        check(names[-1] == "spin" and names[-2] == "dive", "%s: leaf %r" % (what, names[-2:]))
        left_out = int(MARKER_RE.match(names[markers[0]]).group(1))
        # <module> + RECURSION + 1 dive frames + spin, DEPTH_LIMIT - 1 kept
        check(left_out == RECURSION + 3 - (DEPTH_LIMIT - 1),
              "%s: marker says %d frames left out" % (what, left_out))
        cut += left_out * sample["count"]
    check(deep_samples > 0, "%s: no sample in spin()" % what)
    return cut


def test_complete_run_has_zero_partial(env):
    script = env.write("shallow.py", SHALLOW)
    proc, prof = env.profile(script)
    sonde_ok(proc, "sonde run --json")
    partial = _partial(prof)
    check(all(v == 0 for v in partial.values()), "a complete run is partial: %r" % partial)
    text = env.run_sonde(["run", script])
    sonde_ok(text, "sonde run")
    check("partial profile" not in text.stderr, "text report says partial:\n%s" % text.stderr)


test_complete_run_has_zero_partial.versions = ("tiers: the JSON report's partial object of a "
                                               "complete run")


def test_run_deep_stack_frames_left_out(env):
    script = env.write("deep.py", DEEP)
    proc, prof = env.profile(script, ["0.6"], ["--stacks"])
    sonde_ok(proc, "sonde run --stacks --json")
    partial = _partial(prof)
    check(partial["frames_left_out"] > 0, "frames_left_out: %r" % partial)
    cut = _check_cut_stacks(prof["call_stacks"], "run --stacks")
    check(partial["frames_left_out"] == cut,
          "frames_left_out %d, markers say %d" % (partial["frames_left_out"], cut))
    text = env.run_sonde(["run", "--stacks", script, "0.3"])
    sonde_ok(text, "sonde run --stacks (text)")
    m = re.search(r"partial profile: .*?(\d+) frames left out", text.stderr)
    check(m and int(m.group(1)) > 0, "no partial line in:\n%s" % text.stderr[:2000])


def test_attach_deep_stack_frames_left_out(env):
    script = env.write("deep.py", DEEP)
    report = os.path.join(env.tmp, "report.json")
    folded = os.path.join(env.tmp, "stacks.folded")
    with Target(env, script, ["30", "wait"]) as target:
        proc = env.run_sonde(["attach", str(target.pid), "-d", "0.5", "-o", report])
        sonde_ok(proc, "attach -o report.json")
        proc = env.run_sonde(["attach", str(target.pid), "-d", "0.3", "-o", folded])
        sonde_ok(proc, "attach -o stacks.folded")
        dump = env.run_sonde(["dump", str(target.pid)])
        sonde_ok(dump, "dump")
    prof = load_json(report)
    partial = _partial(prof)
    cut = _check_cut_stacks(prof["call_stacks"], "attach")
    check(partial["frames_left_out"] == cut and cut > 0,
          "frames_left_out %d, markers say %d" % (partial["frames_left_out"], cut))
    with open(folded, encoding="utf-8") as f:
        stacks = parse_folded(f.read())
    marked = [frames for frames, _ in stacks if any(MARKER_RE.match(fr) for fr in frames)]
    check(marked and all(len(frames) == DEPTH_LIMIT for frames in marked),
          "folded: no cut stack of %d frames: %r" % (DEPTH_LIMIT, [len(f) for f, _ in stacks]))
    lines = [line.strip() for line in dump.stdout.splitlines()]
    markers = [line for line in lines if MARKER_RE.match(line)]
    check(len(markers) == 1, "dump: markers %r in:\n%s" % (markers, dump.stdout[:1500]))
    at = lines.index(markers[0])
    check(lines[at - 1].startswith("dive (") and lines[at + 1].startswith("dive ("),
          "dump: the marker is not between dive() frames")


def test_partial_is_documented(env):
    doc = os.path.join(env.root, "docs", "json-format.md")
    with open(doc, encoding="utf-8") as f:
        text = f.read()
    for key in sorted(PARTIAL_KEYS) + ["partial"]:
        check("`%s`" % key in text, "docs/json-format.md does not document %r" % key)


test_partial_is_documented.versions = "tiers: the documentation of partial profiles"


# Starts argv[1] threads that wait on an event, writes how many threads
# the program has (its own count) to argv[2], and waits.
MANY_THREADS = """\
import sys, threading, time
threading.stack_size(1 << 18)
done = threading.Event()
for _ in range(int(sys.argv[1])):
    threading.Thread(target=done.wait, daemon=True).start()
with open(sys.argv[2], "w") as f:
    f.write(str(threading.active_count()))
print("ready", flush=True)
time.sleep(60)
"""

# Recurses argv[1] frames deep, writes the depth of its stack as Python
# counts it to argv[2], and waits at the bottom.
DEEPER = """\
import sys, time, traceback
sys.setrecursionlimit(int(sys.argv[1]) + 100)

def dive(n):
    if n == 0:
        with open(sys.argv[2], "w") as f:
            f.write(str(len(traceback.extract_stack())))
        print("ready", flush=True)
        time.sleep(60)
    dive(n - 1)

dive(int(sys.argv[1]))
"""


def test_dump_lists_every_thread(env):
    """More threads than the old fixed table of 1,024: dump lists them all,
    or says exactly how many it left out, and the main thread is there."""
    script = env.write("many_threads.py", MANY_THREADS)
    count = os.path.join(env.tmp, "threads.txt")
    with Target(env, script, ["1500", count]) as target:
        dump = env.run_sonde(["dump", str(target.pid)])
        sonde_ok(dump, "dump")
    with open(count) as f:
        truth = int(f.read())
    headers = [l for l in dump.stdout.splitlines() if l.startswith("Thread ")]
    m = re.search(r"^\((\d+) more threads? left out\)$", dump.stdout, re.M)
    left_out = int(m.group(1)) if m else 0
    check(len(headers) + left_out == truth,
          "dump lists %d threads and leaves out %d of %d" % (len(headers), left_out, truth))
    check(any(h.endswith('"MainThread"') for h in headers), "no main thread among %d threads:\n%s"
          % (len(headers), "\n".join(headers[:5])))
    return "%d of %d threads listed" % (len(headers), truth)


def test_dump_deeper_than_the_reader_walked(env):
    """1,500 frames (deeper than the reader's old bound of 1,024): dump
    keeps the root and the leaf, and its marker counts the frames between
    exactly, against the program's own count."""
    script = env.write("deeper.py", DEEPER)
    count = os.path.join(env.tmp, "depth.txt")
    with Target(env, script, ["1500", count]) as target:
        dump = env.run_sonde(["dump", str(target.pid)])
        sonde_ok(dump, "dump")
    with open(count) as f:
        depth = int(f.read())
    lines = [line.strip() for line in dump.stdout.splitlines()]
    markers = [line for line in lines if MARKER_RE.match(line)]
    check(len(markers) == 1, "dump: markers %r in:\n%s" % (markers, dump.stdout[:1500]))
    left_out = int(MARKER_RE.match(markers[0]).group(1))
    check(left_out == depth - (DEPTH_LIMIT - 1),
          "the marker says %d frames left out of %d" % (left_out, depth))
    root_side = [l for l in lines[lines.index(markers[0]) + 1:] if l]
    check(len(root_side) == DEPTH_LIMIT // 2 and root_side[-1].startswith("<module> ("),
          "dump keeps %d frames after the marker, the last %r" % (len(root_side), root_side[-1:]))
    return "%d frames, %d left out" % (depth, left_out)
