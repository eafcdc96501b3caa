"""Continuous profiles of `sonde run --period S` (src/collect/ with
src/ext/session.c's hand-over of each period): one pprof profile per
period of every process the program starts, merged by the collector,
written to a directory; each period holds what ran in it and nothing
else; SIGTERM sends the last, partial period and the run still ends as
the program did; wrong combinations are refused with one line. Every
payload is decoded with the protobuf parser below (`go tool pprof` reads
the same files in test_fleet.py).

Issue #32: each sampled figure goes through tests/accuracy.py. A line's
CPU seconds over the periods against the time its process measured on its
own clock is exact but for the two ends of the line's span (each tick
charges the thread's CPU time since the one before: accuracy.seconds_near),
with the named allowance below; memory figures are Poisson counts of
byte samples (accuracy.bytes_near). Each first checks that it can catch
the defect it was written for: a period lost or handed over twice (a
third of a 1.2 s phase of 0.4 s periods), a process's samples given the
other's pid, what was sampled before a failed exec handed over twice.
"""
import gzip
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from support import check, marked_lines  # noqa: E402
from test_fleet import NAME_RE, Receiver, parse_protobuf  # noqa: E402
import accuracy  # noqa: E402
from accuracy import need_samples, seconds_near, ticks_to_catch  # noqa: E402

# The default sampling interval (s): the ticks' spacing.
INTERVAL = 0.01
# Systematic allowances (relative):
# - a line's CPU seconds over the periods against its process's clock:
#   a late tick at the line's ends (half its excess goes to the place
#   before it), a failed stack read (charged nowhere), the call around
#   the measured span
PERIOD_ALLOWANCE = 0.05
# - memory (test_run_period_memory): the bytearrays' 57-byte headers and
#   a thread's first mark taken as a fresh draw (as the memory tests' 1 %)
BYTES_ALLOWANCE = 0.01
# Defects (the ratio of the truth the figure would read):
# - a period lost, or handed over twice: a third of the phase's 1.2 s
PERIOD_LOST = 2 / 3.0
PERIOD_TWICE = 4 / 3.0
# - what was sampled before the failed exec handed over again after it
TWICE = 2.0
# - memory: a period's allocations lost (half the phase's), weights off
#   by half
HALF = 0.5


def _seconds(what, estimate, truth, defects):
    """A line's CPU seconds over the periods against its process's clock,
    after checking that the span's ticks can tell each of defects (ratios
    of the truth) from it; returns the note."""
    for defect in defects:
        need_samples(what, round(truth / INTERVAL), ticks_to_catch(defect, PERIOD_ALLOWANCE))
    return accuracy.check(seconds_near(what, estimate, truth, INTERVAL, PERIOD_ALLOWANCE))

VERSIONS = "tiers: periods, their hand-over, the collector's merge, pprof and uploads"

# Phase A on the parent's line @a, then phase B in a child process on line
# @b; each process measures its CPU time and the wall-clock span of its
# phase (the truth), and the parent prints them as JSON.
PHASES = """\
    import json, multiprocessing as mp, os, sys, time

    def phase_a(sec):
        end = time.thread_time() + sec
        n = 0
        while time.thread_time() < end: n += 1  # @a

    def phase_b(sec, q):
        w0, c0 = time.time(), time.thread_time()
        end = c0 + sec
        n = 0
        while time.thread_time() < end: n += 1  # @b
        q.put((w0, time.time(), time.thread_time() - c0, os.getpid()))

    if __name__ == "__main__":
        sec = float(sys.argv[1])
        w0, c0 = time.time(), time.thread_time()
        phase_a(sec)
        a = (w0, time.time(), time.thread_time() - c0, os.getpid())
        q = mp.Queue()
        p = mp.Process(target=phase_b, args=(sec, q))
        p.start()
        b = q.get()
        p.join()
        print(json.dumps({"a": a, "b": b}), flush=True)
    """


def _strings_and_fields(raw):
    data = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    fields = parse_protobuf(data)
    return [v.decode("utf-8") for f, w, v in fields if f == 6], fields


def _ints(wire, value):
    """A repeated integer field's values (packed or not)."""
    if wire == 0:
        return [value]
    out, i = [], 0
    while i < len(value):
        v, shift = 0, 0
        while True:
            b = value[i]
            i += 1
            v |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        out.append(v)
    return out


def decode_lines(raw):
    """A pprof profile's samples as (file, line, values, labels) with the
    leaf location's line, plus the sample type names, time_nanos and
    duration_nanos."""
    strings, fields = _strings_and_fields(raw)
    functions, locations, samples, types = {}, {}, [], []
    time_nanos = duration = 0
    for f, w, v in fields:
        if f == 1:
            st = dict((sf, sv) for sf, sw, sv in parse_protobuf(v))
            types.append(strings[st.get(1, 0)])
        elif f == 5:
            fn = dict((sf, sv) for sf, sw, sv in parse_protobuf(v))
            functions[fn.get(1)] = strings[fn.get(4, 0)]
        elif f == 4:
            loc = parse_protobuf(v)
            lid = [sv for sf, sw, sv in loc if sf == 1][0]
            lines = [dict((lf, lv) for lf, lw, lv in parse_protobuf(sv)) for sf, sw, sv in loc
                     if sf == 4]
            locations[lid] = [(ln.get(1), ln.get(2, 0)) for ln in lines]
        elif f == 9:
            time_nanos = v
        elif f == 10:
            duration = v
    for f, w, v in fields:
        if f != 2:
            continue
        ids, values, labels = [], [], {}
        for sf, sw, sv in parse_protobuf(v):
            if sf == 1:
                ids += _ints(sw, sv)
            elif sf == 2:
                values += _ints(sw, sv)
            elif sf == 3:
                lab = dict((lf, lv) for lf, lw, lv in parse_protobuf(sv))
                labels[strings[lab.get(1, 0)]] = (strings[lab[2]] if lab.get(2) else lab.get(3))
        leaf = locations[ids[0]][-1] if ids and locations.get(ids[0]) else (None, 0)
        samples.append((functions.get(leaf[0]), leaf[1], values, labels))
    return {"types": types, "samples": samples, "time_nanos": time_nanos, "duration": duration}


def _periods(directory):
    out = []
    for name in sorted(os.listdir(directory)):
        m = NAME_RE.match(name)
        check(m and m.group(3) == "pb.gz", "unexpected file in the period directory: %r" % name)
        with open(os.path.join(directory, name), "rb") as f:
            out.append((int(m.group(1)) / 1e3, int(m.group(2)) / 1e3, decode_lines(f.read())))
    return out


def _line_ns(period, script, line, pid=None):
    """The period's first value (cpu ns) on a line of the script."""
    cpu = period["types"].index("cpu")
    return sum(values[cpu] for fn, ln, values, labels in period["samples"]
               if fn == script and ln == line and (pid is None or labels.get("pid") == pid))


def test_run_period_phases(env):
    """Two phases (the parent's line, then a child process's line), 0.4 s
    periods, with stacks (so that samples carry their process's pid): periods are contiguous and cover the run; a period inside
    phase A holds line A and not line B, and the reverse; over all periods
    each line's CPU time matches the time its process measured (within
    10 %: nothing counted twice, nothing lost), and line B carries the
    child's pid."""
    script = env.write("phases.py", PHASES)
    marks = marked_lines(script)
    periods_dir = os.path.join(env.tmp, "periods")
    tmpdir = os.path.join(env.tmp, "tmpdir")
    os.makedirs(tmpdir, exist_ok=True)
    proc = env.run_sonde(["run", "--virtual-time", "--stacks", "--period", "0.4", "--period-dir", periods_dir,
                          "--keep", "1000", script, "1.2"], env={"TMPDIR": tmpdir}, timeout=120)
    check(proc.returncode == 0, "exit %d: %s" % (proc.returncode, proc.stderr[-3000:]))
    check(not os.listdir(tmpdir), "left in TMPDIR: %s" % os.listdir(tmpdir))
    truth = json.loads(proc.stdout.strip().splitlines()[-1])
    (a0, a1, a_cpu, a_pid), (b0, b1, b_cpu, b_pid) = truth["a"], truth["b"]
    periods = _periods(periods_dir)
    check(len(periods) >= 5, "%d periods for a run of %.1f s" % (len(periods), b1 - a0))
    for (f0, u0, _), (f1, u1, _) in zip(periods, periods[1:]):
        check(abs(u0 - f1) < 0.002, "periods not contiguous: %.3f then %.3f" % (u0, f1))
    check(periods[0][0] <= a0 and periods[-1][1] >= b1 - 0.002,
          "periods %.3f..%.3f do not cover the phases %.3f..%.3f"
          % (periods[0][0], periods[-1][1], a0, b1))
    check(all(p[2]["types"][:2] == ["samples", "cpu"] for p in periods),
          "sample types %r" % periods[0][2]["types"])
    # a period's hand-over comes at each process's next tick (10 ms apart)
    # after the period's end: 50 ms of margin at each end
    margin = 0.05
    inside_a = [p for p in periods if p[0] >= a0 + margin and p[1] <= a1 - margin]
    inside_b = [p for p in periods if p[0] >= b0 + margin and p[1] <= b1 - margin]
    check(inside_a and inside_b, "no period inside a phase: a %.3f..%.3f b %.3f..%.3f, %r"
          % (a0, a1, b0, b1, [(p[0], p[1]) for p in periods]))
    for f, u, p in inside_a:
        check(_line_ns(p, script, marks["a"]) > 0 and _line_ns(p, script, marks["b"]) == 0,
              "period %.3f..%.3f inside phase A: line A %d ns, line B %d ns"
              % (f, u, _line_ns(p, script, marks["a"]), _line_ns(p, script, marks["b"])))
    for f, u, p in inside_b:
        check(_line_ns(p, script, marks["b"]) > 0 and _line_ns(p, script, marks["a"]) == 0,
              "period %.3f..%.3f inside phase B: line A %d ns, line B %d ns"
              % (f, u, _line_ns(p, script, marks["a"]), _line_ns(p, script, marks["b"])))
    a_sum = sum(_line_ns(p, script, marks["a"]) for _, _, p in periods) / 1e9
    b_sum = sum(_line_ns(p, script, marks["b"], pid=b_pid) for _, _, p in periods) / 1e9
    notes = [_seconds("line A over the periods", a_sum, a_cpu, (PERIOD_LOST, PERIOD_TWICE)),
             _seconds("line B (pid %d) over the periods" % b_pid, b_sum, b_cpu,
                      (PERIOD_LOST, PERIOD_TWICE))]
    check("%d periods of the program; %d written" % (len(periods), len(periods)) in proc.stderr,
          "closing line: %s" % proc.stderr[-1000:])
    return "%d periods; %s" % (len(periods), "; ".join(notes))


SERVICE = """\
    import sys, time
    print("serving", flush=True)
    def handle():
        end = time.thread_time() + 0.02
        while time.thread_time() < end: pass  # @work
    while True:
        handle()
        time.sleep(0.01)
    """


def test_run_period_upload_and_sigterm(env):
    """A service under `sonde run --period 0.5 --upload`: SIGTERM to sonde
    reaches the program, which dies by it, and so does sonde; the last,
    partial period is written and sent; the receiver has every period of
    the directory exactly once, in order, with the work line in each."""
    script = env.write("service.py", SERVICE)
    periods_dir = os.path.join(env.tmp, "periods_svc")
    receiver = Receiver().start()
    try:
        proc = subprocess.Popen(
            [env.sonde, "run", "--period", "0.5", "--period-dir", periods_dir, "--upload",
             "http://127.0.0.1:%d" % receiver.port, "--app-name", "svc", "--tag", "env=test",
             script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=env.tmp,
            env=env.base_env())
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (not os.path.isdir(periods_dir)
                                               or len(os.listdir(periods_dir)) < 3):
            time.sleep(0.05)
        time.sleep(0.2)  # into the fourth period
        killed_at = time.time()
        proc.send_signal(signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            raise AssertionError("sonde run did not end: %s" % err[-2000:])
    finally:
        receiver.stop()
    check(proc.returncode == -signal.SIGTERM, "exit %d (the program died by SIGTERM): %s"
          % (proc.returncode, err[-2000:]))
    check(out == "serving\n", "program output %r" % out)
    periods = _periods(periods_dir)
    check(len(periods) >= 4, "%d periods" % len(periods))
    last = periods[-1]
    check(last[1] >= killed_at - 0.01 and last[1] - last[0] < 0.5,
          "last period %.3f..%.3f, SIGTERM at %.3f" % (last[0], last[1], killed_at))
    # the receiver was up all along: each period was sent once, in order
    spans = [(a[0], a[1]) for a in receiver.accepted]
    check(spans == [(int(f), int(u)) for f, u, _ in periods],
          "received %r, periods %r" % (spans, [(f, u) for f, u, _ in periods]))
    check(all(a[2]["name"] == "svc{env=test}" for a in receiver.accepted),
          "names %r" % [a[2]["name"] for a in receiver.accepted][:3])
    check(not receiver.errors, "payloads that did not decode: %r" % receiver.errors[:3])
    line = marked_lines(script)["work"]
    for f, u, p in periods[:-1]:
        check(_line_ns_wall(p, script, line) > 0, "period %.3f..%.3f without the work line"
              % (f, u))
    check("%d periods of the program" % len(periods) in err and "0 waiting" in err,
          "closing line: %s" % err[-1000:])


def _line_ns_wall(period, script, line):
    k = 1  # the second sample type: wall (or cpu) nanoseconds
    return sum(values[k] for fn, ln, values, labels in period["samples"]
               if fn == script and ln == line)


def test_run_period_refusals(env):
    """--period with -o, --no-subprocesses or without a
    destination, and the period options without --period: one line each,
    exit 2, the program never started."""
    script = env.write("never.py", "open('started', 'w').close()\n")
    cases = [
        (["--period", "1", "--period-dir", "d", "-o", "x.json"], "not -o"),
        (["--period", "1", "--period-dir", "d", "--no-subprocesses"], "--no-subprocesses"),
        (["--period", "1"], "somewhere to put"),
        (["--period-dir", "d"], "need --period"),
        (["--period", "0"], "from 0.01 to 86400"),
    ]
    for options, words in cases:
        proc = env.run_sonde(["run"] + options + [script])
        lines = proc.stderr.strip().splitlines()
        check(proc.returncode == 2 and len(lines) == 1 and words in lines[0]
              and lines[0].startswith("sonde: "),
              "%r: exit %d, %r" % (options, proc.returncode, proc.stderr))
    check(not os.path.exists(os.path.join(env.tmp, "started")), "the program ran")


MEMORY = """\
    import json, sys, time
    keep = []
    t = {"a0": time.time()}
    for i in range(20):
        keep.append(bytearray(2 << 20))  # @kept
        time.sleep(0.04)
    t["a1"] = time.time()
    for i in range(20):
        x = bytearray(2 << 20)  # @freed
        del x
        time.sleep(0.04)
    t["b1"] = time.time()
    time.sleep(0.3)
    print(json.dumps(t), flush=True)
    """


def test_run_period_memory(env):
    """`--memory --period 0.4`: 40 MiB kept by one line, then 40 MiB
    allocated and freed by another, 2 MiB at a time (each allocation is
    sampled with a probability of 98 % at the default 512 KiB mean, so the
    estimate's standard deviation is about 1.3 MiB). Each period's alloc_space holds what
    was allocated in it (over all periods each line's sum is 40 MiB within
    25 %; a period after the first phase allocates nothing on its line);
    inuse_space is what is live at each period's end (the kept line's 40
    MiB in the last period, the freed line's under 4 MiB)."""
    script = env.write("memory_periods.py", MEMORY)
    marks = marked_lines(script)
    periods_dir = os.path.join(env.tmp, "periods_mem")
    proc = env.run_sonde(["run", "--memory", "--period", "0.4", "--period-dir", periods_dir,
                          script], timeout=120)
    check(proc.returncode == 0, "exit %d: %s" % (proc.returncode, proc.stderr[-3000:]))
    truth = json.loads(proc.stdout.strip().splitlines()[-1])
    periods = _periods(periods_dir)
    check(len(periods) >= 4, "%d periods" % len(periods))

    def figure(period, line, name):
        k = period["types"].index(name)
        return sum(values[k] for fn, ln, values, labels in period["samples"]
                   if fn == script and ln == line) / float(1 << 20)

    for p in periods:
        check("alloc_space" in p[2]["types"] and "inuse_space" in p[2]["types"],
              "sample types %r" % p[2]["types"])
    kept = sum(figure(p, marks["kept"], "alloc_space") for _, _, p in periods)
    freed = sum(figure(p, marks["freed"], "alloc_space") for _, _, p in periods)
    # Truth 20 blocks of 2 MiB a line, each sampled with probability
    # 1 - e^-4 and charged 2 MiB / (1 - e^-4): a Poisson count of
    # byte_unit(2 MiB) = 0.037 MiB, about 1070 for 40 MiB (+- 14 % at the
    # suite's confidence).
    notes = [accuracy.bytes_near("alloc_space of the kept line over the periods", kept,
                                 2 << 20, 40, BYTES_ALLOWANCE, HALF),
             accuracy.bytes_near("alloc_space of the freed line over the periods", freed,
                                 2 << 20, 40, BYTES_ALLOWANCE, HALF)]
    after = [p for f, u, p in periods if f >= truth["a1"] + 0.05]
    check(after, "no period after the first phase")
    for p in after:
        # exact: no allocation on the line, no sample
        check(figure(p, marks["kept"], "alloc_space") == 0,
              "the kept line allocates %.1f MiB in a period after its phase"
              % figure(p, marks["kept"], "alloc_space"))
    last = periods[-1][2]
    live_kept, live_freed = figure(last, marks["kept"], "inuse_space"), figure(
        last, marks["freed"], "inuse_space")
    # the kept line's samples, none freed: the same Poisson count
    notes.append(accuracy.bytes_near("inuse_space of the kept line at the end", live_kept,
                                     2 << 20, 40, BYTES_ALLOWANCE, HALF))
    # exact by design: each freed sample takes back its own weight (truth
    # 0; one block of weight 2.04 MiB live at a time at most)
    check(live_freed < 4, "inuse_space at the end: freed line %.1f MiB, want < 4 (exact by "
          "design)" % live_freed)
    return "%d periods; %s; freed line in use at the end %.1f MiB" % (
        len(periods), "; ".join(notes), live_freed)


TWO_PROCESSES = """\
    import os, subprocess, sys, time
    def spin(sec):
        end = time.thread_time() + sec
        while time.thread_time() < end: pass  # @spin
    if len(sys.argv) > 1:
        spin(0.3)  # the child
    else:
        spin(0.3)
        subprocess.run([sys.executable, __file__, "child"], check=True)
        print(os.getpid(), flush=True)
    """


def test_pprof_lines_carry_each_process_pid(env):
    """A merged report of two processes in pprof without call stacks: the
    samples of each process's lines carry its own pid label (the collector
    hands the writer each process's profile), and their time adds up to
    the merged line's."""
    script = env.write("two.py", TWO_PROCESSES)
    line = marked_lines(script)["spin"]
    out = os.path.join(env.tmp, "two.pb.gz")
    proc = env.run_sonde(["run", "--virtual-time", "-o", out, script], timeout=120)
    check(proc.returncode == 0, "exit %d: %s" % (proc.returncode, proc.stderr[-2000:]))
    parent = int(proc.stdout.split()[-1])
    with open(out, "rb") as f:
        prof = decode_lines(f.read())
    by_pid = {}
    for fn, ln, values, labels in prof["samples"]:
        if fn == script and ln == line:
            by_pid[labels.get("pid")] = by_pid.get(labels.get("pid"), 0) + values[1]
    check(parent in by_pid and len(by_pid) == 2 and None not in by_pid,
          "the spin line's samples by pid: %r (parent %d)" % (by_pid, parent))
    # truth: each process spins 0.3 s of its own thread time on the line,
    # by construction; the defect: one's samples labelled with the other's
    # pid (twice the truth there)
    return "; ".join(_seconds("pid %s's spin line" % pid, ns / 1e9, 0.3, (TWICE,))
                     for pid, ns in sorted(by_pid.items()))


FAILED_EXEC = """\
    import json, os, sys, time
    def before(sec):
        end = time.thread_time() + sec
        while time.thread_time() < end: pass  # @before
    def after(sec):
        end = time.thread_time() + sec
        while time.thread_time() < end: pass  # @after
    c0 = time.thread_time()
    before(0.6)
    a = time.thread_time() - c0
    junk = os.path.join(os.path.dirname(os.path.abspath(__file__)), "junk.bin")
    with open(junk, "wb") as f:
        f.write(b"\\x01\\x02 not a program")
    os.chmod(junk, 0o755)
    try:
        os.execv(junk, [junk])
    except OSError as e:
        failed = e.errno
    c0 = time.thread_time()
    after(0.6)
    b = time.thread_time() - c0
    print(json.dumps({"before": a, "after": b, "errno": failed}), flush=True)
    """


def test_run_period_failed_exec(env):
    """An os.execv that fails (ENOEXEC) between two phases under --period:
    what was sampled before it is handed over once (no period has it
    twice), and the process goes on being followed: over all periods each
    phase's calling line has the CPU time its process measured, within
    10 %."""
    script = env.write("failed_exec.py", FAILED_EXEC)
    marks = marked_lines(script)
    periods_dir = os.path.join(env.tmp, "periods_exec")
    proc = env.run_sonde(["run", "--virtual-time", "--period", "0.3", "--period-dir",
                          periods_dir, "--keep", "1000", script], timeout=120)
    check(proc.returncode == 0, "exit %d: %s" % (proc.returncode, proc.stderr[-3000:]))
    truth = json.loads(proc.stdout.strip().splitlines()[-1])
    check(truth["errno"] == 8, "the exec did not fail with ENOEXEC: %r" % truth)
    periods = _periods(periods_dir)
    notes = []
    for mark in ("before", "after"):
        total = sum(_line_ns(p, script, marks[mark]) for _, _, p in periods) / 1e9
        # the defects: what was sampled before the exec handed over twice,
        # the process not followed after it (its line lost)
        notes.append(_seconds("line %s over the periods" % mark, total, truth[mark],
                              (TWICE, 0.0)))
    return "%d periods; %s" % (len(periods), ", ".join(notes))


test_run_period_failed_exec.versions = ("all: an os.execv that fails goes through the exec hooks "
                                        "(test_exec)")
