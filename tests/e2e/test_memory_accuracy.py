"""Memory profiling accuracy (`sonde run --memory`) against measured truth.

Allocations are sampled by bytes requested (a Poisson process of mean
512 KiB, docs/json-format.md) and each sample stands for its expected
weight, so a line's figures are right in expectation with a relative
standard error of about 1/sqrt(samples) for blocks much smaller than the
mean (exact for blocks much larger). Each tolerance below is stated with
the number of standard errors it allows (about 4). The truths are what
each program does, or, for small Python objects (whose sizes depend on the
interpreter and whose free lists hide some allocations from any allocator
hook), what tracemalloc measures in a separate run of the same program.
Megabytes are MiB, as in the report. Each program runs for at least 2 s
(paced by the clock where the work itself is quicker), so that its
allocations are spread over a run as long as the CPU accuracy tests'.
"""
import json

from support import check, lines_by_no, marked_lines

MIB = 1 << 20


def _profile(env, name, source, args=(), options=()):
    script = env.write(name, source)
    proc, prof = env.profile(script, args, ["--memory"] + list(options))
    check(proc.returncode == 0, "exit %d; stderr:\n%s" % (proc.returncode, proc.stderr[-3000:]))
    check(prof.get("memory") is True, "no memory figures in the profile")
    return script, proc, prof


def _line(prof, script, marker):
    lineno = marked_lines(script)[marker]
    line = lines_by_no(prof, script).get(lineno)
    check(line is not None, "line %d (@%s) not in the profile" % (lineno, marker))
    return line


def _within(got, want, tolerance, what):
    check(abs(got - want) <= tolerance * want, "%s: %.2f, want %.2f +- %.0f%%"
          % (what, got, want, 100 * tolerance))
    return "%s %.1f (truth %.1f, %+.1f%%)" % (what, got, want, 100 * (got / want - 1))


# ---- one line keeps what it makes, the other frees it -----------------------------------
#
# 800 blocks of 1 MiB on each line: each block is sampled with probability
# 1 - e^-2, so a line's total has a standard error of 1.4 %; 10 % is 7 of
# them. The freeing line's live bytes are at most one block's weight.

# bytes objects are one allocation each (header and data together) and
# the list is made once, so each line makes exactly 800 objects: a sampled
# small allocation on the line (a bytearray's header, a list growing)
# would stand for M/size objects, and the object counts could not be
# checked against 800.
KEEP_FREE = """
    import time

    kept = [None] * 800

    def keep(i):
        kept[i] = bytes(1 << 20)  # @keep

    def churn():
        block = bytes(1 << 20)  # @churn
        del block

    start = time.perf_counter()
    for i in range(800):
        keep(i)
        churn()
        while time.perf_counter() < start + 0.0025 * (i + 1):
            pass
    print(len(kept))
"""


def test_memory_accuracy_keep_free(env):
    script, proc, prof = _profile(env, "keep_free.py", KEEP_FREE)
    keep, churn = _line(prof, script, "keep"), _line(prof, script, "churn")
    notes = [_within(keep["n_malloc_mb"], 800, 0.10, "keep allocated MB"),
             _within(churn["n_malloc_mb"], 800, 0.10, "churn allocated MB"),
             _within(keep["n_live_mb"], 800, 0.10, "keep live MB at exit")]
    check(churn["n_live_mb"] <= 2, "churn live MB at exit %.2f, want <= 2" % churn["n_live_mb"])
    check(churn["n_peak_mb"] <= 2.5, "churn's live MB peaked at %.2f" % churn["n_peak_mb"])
    notes.append("churn live %.2f MB (truth 0)" % churn["n_live_mb"])
    # pprof's names for the same figures.
    check(abs(keep["inuse_space"] - keep["n_live_mb"] * MIB) <= 0.001 * keep["inuse_space"] + 1,
          "inuse_space %d vs n_live_mb %.3f" % (keep["inuse_space"], keep["n_live_mb"]))
    check(abs(keep["alloc_space"] - keep["n_malloc_mb"] * MIB) <= 0.001 * keep["alloc_space"] + 1,
          "alloc_space %d vs n_malloc_mb %.3f" % (keep["alloc_space"], keep["n_malloc_mb"]))
    for name, line in (("keep", keep), ("churn", churn)):
        notes.append(_within(line["alloc_objects"], 800, 0.10, name + " alloc_objects"))
    notes.append(_within(keep["inuse_objects"], 800, 0.10, "keep inuse_objects"))
    check(churn["inuse_objects"] <= 2, "churn inuse_objects %d" % churn["inuse_objects"])
    leaks = {int(k) for k in next(e for p, e in prof["files"].items()
                                  if p == script)["leaks"]}
    marks = marked_lines(script)
    check(leaks == {marks["keep"]}, "leaks on lines %s, want only the keeping line %d"
          % (sorted(leaks), marks["keep"]))
    return "; ".join(notes) + "; leak only on the keeping line"


# ---- two sites, a true ratio of 3 -------------------------------------------------------
#
# 3 GiB against 1 GiB in blocks of 48 and 16 KiB: about 6100 and 2000
# samples, standard errors 1.3 % and 2.2 %, 2.6 % on the ratio; 10 % is 3.9
# of them.

RATIO = """
    import time

    def big_site():
        return bytearray(48 << 10)  # @big

    def small_site():
        return bytearray(16 << 10)  # @small

    start = time.perf_counter()
    for i in range(65536):
        big = big_site()
        small = small_site()
        while time.perf_counter() < start + 2.0 * (i + 1) / 65536:
            pass
    print("ok")
"""


def test_memory_accuracy_ratio_three(env):
    script, proc, prof = _profile(env, "ratio.py", RATIO)
    big = _line(prof, script, "big")["n_malloc_mb"]
    small = _line(prof, script, "small")["n_malloc_mb"]
    ratio = big / small if small else float("inf")
    notes = [_within(ratio, 3, 0.10, "ratio"), _within(big, 3072, 0.10, "big MB"),
             _within(small, 1024, 0.10, "small MB")]
    return "; ".join(notes)


# ---- millions of small objects: truth from tracemalloc ----------------------------------
#
# One line keeps 4 million (int, float) tuples, another makes as many in
# batches that are dropped. The truth is what Python's allocators were
# asked for while each line ran, measured by tracemalloc in a separate run
# (batch by batch: nothing is freed while a batch is built). Tracing every
# object is slow, so that run measures the first rounds only; every round
# after the first starts from the same state (the free lists the dropped
# batch refilled), so the truth is the first round plus the mean of the
# others for each later one. Some 300 MB per line is about 600 samples, a
# standard error of 4 %; 15 % is 3.7 of them.

SMALL_OBJECTS = """
    import json
    import sys
    import time

    TRUTH = sys.argv[1] == "truth"
    if TRUTH:
        import tracemalloc
        tracemalloc.start()

    K = 100_000
    ROUNDS = int(sys.argv[2])
    values = list(range(10 ** 6, 10 ** 6 + K))
    slots = list(range(K))
    kept = []
    made = {"keep": [], "drop": []}

    def traced():
        return tracemalloc.get_traced_memory()[0] if TRUTH else 0

    start = time.perf_counter()
    for r in range(ROUNDS):
        batch = [None] * K
        before = traced()
        for i, v in zip(slots, values):
            batch[i] = (v, v * 0.5)  # @keep
        made["keep"].append(traced() - before)
        kept.append(batch)
        dropped = [None] * K
        before = traced()
        for i, v in zip(slots, values):
            dropped[i] = (v, v * 0.5)  # @drop
        made["drop"].append(traced() - before)
        del dropped
        while not TRUTH and time.perf_counter() < start + 2.5 * (r + 1) / ROUNDS:
            pass
    if TRUTH:
        print(json.dumps(made))
    else:
        print(len(kept))
"""


def test_memory_accuracy_small_objects(env):
    rounds, measured = 40, 4
    script = env.write("small_objects.py", SMALL_OBJECTS)
    truth_run = env.run_python([script, "truth", str(measured)])
    check(truth_run.returncode == 0, "truth run: %s" % truth_run.stderr[-2000:])
    truth = {}
    for marker, per_round in json.loads(truth_run.stdout).items():
        later = per_round[1:]
        truth[marker] = per_round[0] + (rounds - 1) * sum(later) / len(later)
    script, proc, prof = _profile(env, "small_objects.py", SMALL_OBJECTS,
                                  ["profile", str(rounds)])
    notes = []
    for marker in ("keep", "drop"):
        line = _line(prof, script, marker)
        notes.append(_within(line["n_malloc_mb"], truth[marker] / MIB, 0.15, marker + " MB"))
        check(line["n_python_fraction"] >= 0.95, "@%s is %.0f%% Python memory"
              % (marker, 100 * line["n_python_fraction"]))
    keep, drop = _line(prof, script, "keep"), _line(prof, script, "drop")
    notes.append(_within(keep["n_live_mb"], truth["keep"] / MIB, 0.15, "keep live MB"))
    check(drop["n_live_mb"] <= 0.05 * truth["drop"] / MIB,
          "drop live MB %.1f at exit" % drop["n_live_mb"])
    return "; ".join(notes)


# ---- a 512 MiB numpy array, touched or not ----------------------------------------------

NUMPY_BLOCK = """
    import sys
    import time
    import numpy as np

    N = 512 * 1024 * 1024
    share = float(sys.argv[1])

    def work(seconds):
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass

    def allocate():
        block = np.empty(N, dtype=np.uint8)  # @alloc
        if share > 0:
            block[: int(N * share)] = 1
        return block

    work(1.0)
    kept = allocate()
    work(1.0)
    print(kept.nbytes)
"""


def test_memory_accuracy_numpy_512mib(env):
    notes = []
    for share in ("0", "0.5", "1"):
        script, proc, prof = _profile(env, "numpy_block.py", NUMPY_BLOCK, [share])
        line = _line(prof, script, "alloc")
        pct = int(float(share) * 100)
        notes.append(_within(line["n_malloc_mb"], 512, 0.02, "%d%%: allocated MB" % pct))
        notes.append(_within(line["n_peak_mb"], 512, 0.02, "%d%%: peak live MB" % pct))
        check(line["n_python_fraction"] <= 0.02, "numpy's block is native")
        check(prof["heap_peak_mb"] >= 512 * 0.98, "heap peak %.1f MB" % prof["heap_peak_mb"])
    return "; ".join(notes)


test_memory_accuracy_numpy_512mib.requires = "numpy"


# ---- worker threads ---------------------------------------------------------------------
#
# 1 GiB per thread in 64 KiB blocks (16384 blocks sampled with probability
# 1 - e^-1/8: standard error 2.2 %) and in 256 KiB blocks (4096, 1 - e^-1/2:
# 1.9 %); 10 % is 4.5 and 5 of them.

THREADS = """
    import threading
    import time

    go = threading.Event()

    def pace(start, done):
        while time.perf_counter() < start + 2.0 * done:
            pass

    def worker_a():
        go.wait()
        start = time.perf_counter()
        for i in range(16384):
            block = bytearray(64 << 10)  # @worker_a
            pace(start, (i + 1) / 16384)

    def worker_b():
        go.wait()
        start = time.perf_counter()
        for i in range(4096):
            block = bytearray(256 << 10)  # @worker_b
            pace(start, (i + 1) / 4096)

    threads = [threading.Thread(target=worker_a), threading.Thread(target=worker_b)]
    for t in threads:
        t.start()
    go.set()
    for t in threads:
        t.join()  # @join
    print("ok")
"""


def test_memory_accuracy_threads(env):
    script, proc, prof = _profile(env, "threads.py", THREADS)
    notes = [_within(_line(prof, script, m)["n_malloc_mb"], 1024, 0.10, m + " MB")
             for m in ("worker_a", "worker_b")]
    marks = marked_lines(script)
    others = sum(l.get("n_malloc_mb", 0) for n, l in lines_by_no(prof, script).items()
                 if n not in (marks["worker_a"], marks["worker_b"]))
    check(others <= 10, "%.1f MB charged to other lines" % others)
    return "; ".join(notes) + "; elsewhere %.1f MB" % others


# ---- native memory through ctypes -------------------------------------------------------
#
# 400 blocks of 1 MiB from libc's malloc itself: each sampled with
# probability 1 - e^-2, a standard error of 2 %.

CTYPES_MALLOC = """
    import ctypes
    import time

    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    size = 1 << 20
    blocks = []
    start = time.perf_counter()
    for i in range(400):
        blocks.append(libc.malloc(size))  # @native
        while time.perf_counter() < start + 0.005 * (i + 1):
            pass
    for b in blocks:
        libc.free(b)
    print(len(blocks))
"""


def test_memory_accuracy_ctypes_native(env):
    script, proc, prof = _profile(env, "ctypes_malloc.py", CTYPES_MALLOC)
    line = _line(prof, script, "native")
    note = _within(line["n_malloc_mb"], 400, 0.10, "native MB")
    check(line["n_python_fraction"] <= 0.05, "%.0f%% of ctypes' malloc counted as Python"
          % (100 * line["n_python_fraction"]))
    check(line["n_live_mb"] <= 2, "freed on another line, yet %.1f MB live" % line["n_live_mb"])
    return "%s; Python share %.1f%%" % (note, 100 * line["n_python_fraction"])
