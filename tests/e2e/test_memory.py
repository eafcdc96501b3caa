"""Memory profiling (`sonde run --memory`) against ground truth.

Each test runs a program whose allocations it knows exactly and checks the
per-line figures of the JSON report (docs/json-format.md) with a stated
tolerance: the size of one large block (seed 000 §6.3: within 2 % of
512 MiB, whatever share of it is touched), Python versus native memory,
the proportion between two allocation sites, the thread an allocation is
charged to, and copy volume. Megabytes are MiB (2**20 bytes), as in the
report. Sampled estimates are checked with tests/accuracy.py and its
variance model of byte sampling (truth, samples, a named
allowance, the suite's per-assertion confidence; see
test_memory_accuracy.py); figures that are exact by design (a block far
larger than the sample mean is always sampled and charged its size; a
function's figures are its lines' sums) keep fixed tolerances.
"""
from accuracy import check as holds, need_samples, samples_to_catch, share_at_least, share_near
from accuracy import MIB, byte_unit, bytes_near, copy_near, copies_to_catch, count_above_to_catch, \
    count_at_most
from support import check, lines_by_no, marked_lines

VERSIONS = "all: the allocator domains' hooks and the lines they charge"

# Systematic allowances (issue #32), each with its reason; the sampled
# figures' intervals come from tests/accuracy.py.
# - a figure exact by design (a block far larger than the sample mean,
#   always sampled and charged its size): the object's header and the
#   line's own small objects (relative)
EXACT_TOLERANCE = 0.02
# - a line whose allocations are all Python's by construction (a list of
#   ints, bytearrays): a native block the interpreter might allocate on the
#   line (none known), in points of the Python share
PYTHON_LIST_ALLOWANCE = 2.0
PYTHON_SHARE_ALLOWANCE = 1.0
# - a site's share of two sites' MB against its share of the bytes asked
#   for (points): a sample's weight differs with the block's size (537 KiB
#   at 48 KiB blocks, 520 at 16 KiB), so the MB share is up to 0.6 points
#   off the share of samples the interval is about
SITE_SHARE_ALLOWANCE = 1.0
# - a line's MB against the bytes it asked for (relative): the bytearrays'
#   57-byte headers, the list's growth, a thread's first mark taken as a
#   fresh draw
BYTES_ALLOWANCE = 0.01
# - copy volume (relative): the interpreter's own small copies elsewhere,
#   whose marks charge a spacing of the line's copying away from it
COPY_ALLOWANCE = 0.03
# - what lines other than the workers' allocate themselves (the threads'
#   start): unmeasured, small; a limit in MiB
OTHER_LINES_LIMIT_MB = 10.0
# Defects (the ratio of the truth, or the share, a figure would read):
HALF = 0.5                 # weights or blocks lost by half
BY_COUNT = 0.5             # blocks sampled by count, not bytes: 48 KiB vs 16 KiB at 50 %
INVERTED = 0.0             # the Python/native split inverted: a Python line 0 % Python
FIRST_LINE_ONLY = 2 / 3.0  # a function given its first line's figures only


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


# ---- one 512 MiB block (seed 000 §6.3) ----------------------------------------------------

NUMPY_BLOCK = """
    import sys
    import numpy as np

    N = 512 * 1024 * 1024
    share = float(sys.argv[1])

    def allocate():
        block = np.empty(N, dtype=np.uint8)  # @alloc
        if share > 0:
            block[: int(N * share)] = 1  # touch that share of it
        return block

    kept = allocate()
    print(kept.nbytes)
"""

BYTEARRAY_BLOCK = """
    import sys

    N = 512 * 1024 * 1024
    share = float(sys.argv[1])
    ONES = b"\\x01" * (1 << 20)

    def allocate():
        block = bytearray(N)  # @alloc
        view = memoryview(block)
        for start in range(0, int(N * share), len(ONES)):
            view[start:start + len(ONES)] = ONES
        return block

    kept = allocate()
    print(len(kept))
"""


# Exact by design: a 512 MiB block holds a mark with probability
# 1 - e^-1024 and is charged its size, so the fixed 2 % is no sampling
# bound (it allows for the object's header and the line's own objects).
def _check_512(env, name, source):
    notes = []
    for share in ("0", "0.5", "1"):
        script, proc, prof = _profile(env, name, source, [share])
        check(proc.stdout.strip() == str(512 * MIB), "program output %r" % proc.stdout)
        line = _line(prof, script, "alloc")
        peak = line["n_peak_mb"]
        check(abs(peak - 512) <= EXACT_TOLERANCE * 512,
              "%s%% touched: peak %.2f MB at the allocating line, want 512 +- %.0f%%"
              % (float(share) * 100, peak, 100 * EXACT_TOLERANCE))
        check(prof["max_footprint_mb"] >= 512, "program peak %.1f MB < 512" % prof["max_footprint_mb"])
        notes.append("%s%%: %.3f MB" % (int(float(share) * 100), peak))
    return "peak at the allocating line: " + ", ".join(notes)


def test_memory_512mib_numpy(env):
    return _check_512(env, "block_numpy.py", NUMPY_BLOCK)


test_memory_512mib_numpy.requires = "numpy"


def test_memory_512mib_bytearray(env):
    return _check_512(env, "block_bytearray.py", BYTEARRAY_BLOCK)


# ---- Python versus native memory ------------------------------------------------------------

PYTHON_OBJECTS = """
    def build_bytes():
        return b"x" * (200 << 20)  # @bytes

    def build_list():
        return [i * 2 for i in range(4_000_000)]  # @list

    kept = [build_bytes(), build_list()]
    print(len(kept[0]), len(kept[1]))
"""

NUMPY_ARRAYS = """
    import numpy as np

    def zeros():
        return np.zeros(40_000_000)  # @zeros

    def ones():
        return np.ones(40_000_000)  # @ones

    kept = [zeros(), ones()]
    print(kept[0].nbytes + kept[1].nbytes)
"""


# @bytes is one 200 MiB block: sampled with certainty, charged its size,
# and Python's by construction (bytes come from Python's allocator): exact,
# a fixed bound. @list (a list of 4 million ints, grown by realloc: all of
# it Python's allocators) is several hundred samples of small objects;
# truth 100 % Python by construction, allowance PYTHON_LIST_ALLOWANCE, a
# Wilson bound over its samples. The defect: the Python/native split
# inverted (0 %).
def test_memory_python_objects(env):
    script, proc, prof = _profile(env, "python_objects.py", PYTHON_OBJECTS)
    notes = []
    for marker in ("bytes", "list"):
        line = _line(prof, script, marker)
        frac = line["n_python_fraction"]
        check(line["n_malloc_mb"] > 50, "@%s allocated only %.1f MB" % (marker, line["n_malloc_mb"]))
        if marker == "bytes":
            # exact by design: one sample, charged its size, Python's by construction
            check(frac >= 0.99, "@bytes is %.0f%% Python memory (exact by design)" % (100 * frac))
            notes.append("bytes %.0f%% Python (%.0f MB, exact)" % (100 * frac, line["n_malloc_mb"]))
            continue
        need_samples("@list's Python share", line["n_mallocs"],
                     samples_to_catch(INVERTED, 1, PYTHON_LIST_ALLOWANCE / 100.0))
        notes.append(holds(share_at_least("list Python share (%.0f MB)" % line["n_malloc_mb"],
                                          100 * frac, line["n_mallocs"], 100,
                                          PYTHON_LIST_ALLOWANCE)))
    return ", ".join(notes)


# Exact by design: each line is one 305 MiB block (40e6 doubles), sampled
# with certainty and charged its size, one sample whose Python flag is
# deterministic: fixed bounds.
def test_memory_native_arrays(env):
    script, proc, prof = _profile(env, "numpy_arrays.py", NUMPY_ARRAYS)
    notes = []
    for marker in ("zeros", "ones"):
        line = _line(prof, script, marker)
        frac = line["n_python_fraction"]
        check(abs(line["n_malloc_mb"] - 305.2) < EXACT_TOLERANCE * 305.2,
              "@%s allocated %.1f MB, want 305.2 (40e6 doubles)" % (marker, line["n_malloc_mb"]))
        # exact by design: one sample whose Python flag is deterministic
        # (numpy's data block is native; 30 % allows the array object's own)
        check(frac <= 0.3, "@%s is %.0f%% Python memory, want <= 30%%" % (marker, 100 * frac))
        notes.append("%s %.0f%% Python" % (marker, 100 * frac))
    return ", ".join(notes)


test_memory_native_arrays.requires = "numpy"


# ---- two sites of known sizes ---------------------------------------------------------------
#
# Blocks smaller than the sample mean are charged by sampling: a mark falls
# in a block with probability 1 - exp(-size/mean) and the block then stands
# for size over that probability, so a site's share is right in
# expectation. 768 and 256 MiB in 48 and 16 KiB blocks: about 1600 and 520
# samples. The big site's share of the MB, truth 75 %, a Wilson interval
# over the two sites' samples (+- 4.4 points), SITE_SHARE_ALLOWANCE; the
# two together, truth 1024 MiB, a Poisson count of byte_unit(48 KiB) (the
# larger unit of the two) (+- 10 %), BYTES_ALLOWANCE.
# The defects: sampling by count, not bytes (a share of 50 %), one site
# charged to the other's line (100 or 0 %), weights lost by half.
# test_memory_accuracy.py has the tighter ones.
TWO_SITES = """
    kept = []

    def big_site():
        kept.append(bytearray(48 << 10))  # @big

    def small_site():
        kept.append(bytearray(16 << 10))  # @small

    for i in range(16384):
        big_site()
        small_site()
        if i % 1024 == 1023:
            kept.clear()
    print("ok")
"""


def test_memory_two_sites(env):
    script, proc, prof = _profile(env, "two_sites.py", TWO_SITES,
                                  options=["--malloc-threshold", "512K"])
    big_line, small_line = _line(prof, script, "big"), _line(prof, script, "small")
    big, small = big_line["n_malloc_mb"], small_line["n_malloc_mb"]
    n = big_line["n_mallocs"] + small_line["n_mallocs"]
    ratio = big / small if small else float("inf")
    need_samples("the two sites", n, samples_to_catch(BY_COUNT, 0.75, SITE_SHARE_ALLOWANCE / 100.0))
    share = 100 * big / (big + small) if big + small else 0
    notes = [holds(share_near("big site's share (big %.1f MB, small %.1f MB, ratio %.2f)"
                              % (big, small, ratio), share, n, 75, SITE_SHARE_ALLOWANCE)),
             bytes_near("the two sites' MB", big + small, 48 << 10, 1024, BYTES_ALLOWANCE, HALF,
                        n=n)]
    return "; ".join(notes)


FUNCTIONS = """
    kept = []

    def two_lines():
        kept.append(bytearray(32 << 10))  # @first
        kept.append(bytearray(16 << 10))  # @second

    def one_line():
        kept.append(bytearray(16 << 10))  # @third

    for i in range(16384):
        two_lines()
        one_line()
        if i % 1024 == 1023:
            kept.clear()
    print("ok")
"""


def test_memory_per_function(env):
    """Functions get the memory figures of the samples taken in them: 48 KiB
    per call against 16 KiB per call gives a ratio of 3, and a function's
    allocation is its lines' sum."""
    script, proc, prof = _profile(env, "functions.py", FUNCTIONS, options=["--malloc-threshold", "512K"])
    entry = next(e for path, e in prof["files"].items() if path == script)
    funcs = {f["line"]: f for f in entry["functions"]}
    check("two_lines" in funcs and "one_line" in funcs, "functions: %r" % sorted(funcs))
    two, one = funcs["two_lines"], funcs["one_line"]
    lines = [_line(prof, script, m) for m in ("first", "second", "third")]
    for f in (two, one):
        for key in ("n_malloc_mb", "n_mallocs", "n_avg_mb", "n_peak_mb", "n_python_fraction",
                    "n_usage_fraction", "n_copy_mb_s"):
            check(key in f, "function %s has no %s: %r" % (f["line"], key, f))
        check("memory_samples" not in f, "functions have no timeline")
    parts = lines[0]["n_malloc_mb"] + lines[1]["n_malloc_mb"]
    # exact: a function's figures are its lines' sums (within the rounding)
    check(abs(two["n_malloc_mb"] - parts) <= 0.01 + 1e-3 * parts,
          "two_lines: %.3f MB, its lines %.3f MB" % (two["n_malloc_mb"], parts))
    check(two["n_mallocs"] == lines[0]["n_mallocs"] + lines[1]["n_mallocs"], "sample counts")
    check(abs(one["n_malloc_mb"] - lines[2]["n_malloc_mb"]) <= 0.01, "one_line vs its line")
    # The ratio, sampled (as in test_memory_two_sites): two_lines' share of
    # the two functions' MB, truth 75 % (48 KiB a call against 16),
    # SITE_SHARE_ALLOWANCE (weights of 32 and 16 KiB blocks differ by 2 %),
    # over their samples (about 2100). The defect: a function given its
    # first line's figures only (67 %: caught from about 830 samples) or
    # another function's.
    ratio = two["n_malloc_mb"] / one["n_malloc_mb"] if one["n_malloc_mb"] else float("inf")
    n = two["n_mallocs"] + one["n_mallocs"]
    need_samples("two_lines against one_line", n,
                 samples_to_catch(FIRST_LINE_ONLY, 0.75, SITE_SHARE_ALLOWANCE / 100.0))
    total = two["n_malloc_mb"] + one["n_malloc_mb"]
    share = holds(share_near("two_lines' share (%.1f MB, %.1f MB, ratio %.2f)"
                             % (two["n_malloc_mb"], one["n_malloc_mb"], ratio),
                             100 * two["n_malloc_mb"] / total if total else 0, n, 75,
                             SITE_SHARE_ALLOWANCE))
    check(two["n_peak_mb"] >= max(lines[0]["n_peak_mb"], lines[1]["n_peak_mb"]) - 0.01,
          "function peak %.2f below a line's" % two["n_peak_mb"])
    check(0 < two["n_avg_mb"] <= two["n_peak_mb"] + 0.01, "avg %.2f, peak %.2f"
          % (two["n_avg_mb"], two["n_peak_mb"]))
    # bytearrays are Python's by construction: truth 100 %; the defect: the
    # split inverted (0 %)
    need_samples("two_lines' Python share", two["n_mallocs"],
                 samples_to_catch(INVERTED, 1, PYTHON_SHARE_ALLOWANCE / 100.0))
    python = holds(share_at_least("two_lines' Python share", 100 * two["n_python_fraction"],
                                  two["n_mallocs"], 100, PYTHON_SHARE_ALLOWANCE))
    return "%s; %s" % (share, python)


# ---- threads ----------------------------------------------------------------------------------

THREADS = """
    import threading

    kept = []
    go = threading.Event()

    def worker_a():
        go.wait()
        for _ in range(50):
            kept.append(bytearray(2 << 20))  # @worker_a

    def worker_b():
        go.wait()
        for _ in range(50):
            kept.append(b"z" * (2 << 20))  # @worker_b

    threads = [threading.Thread(target=worker_a), threading.Thread(target=worker_b)]
    for t in threads:
        t.start()
    go.set()
    for t in threads:
        t.join()  # @join
    print(len(kept))
"""


# 50 blocks of 2 MiB a thread, each sampled with probability 1 - e^-4 and
# charged 2 MiB / (1 - e^-4): a Poisson count of byte_unit(2 MiB) =
# 0.037 MiB (+- 9 % of 100 MiB), BYTES_ALLOWANCE (headers, the list's
# growth). Other lines: truth what they allocate themselves (the threads'
# start: unmeasured, small), OTHER_LINES_LIMIT_MB against the 100 a
# worker's misattribution to the main thread would put there (its power:
# those 100 MiB, a Poisson count of samples worth the mean, must lie above the
# limit at the check's unit). The defects: a worker's allocation charged
# to the main thread's line, or lost by half.
def test_memory_threads(env):
    script, proc, prof = _profile(env, "threads_alloc.py", THREADS)
    lines = lines_by_no(prof, script)
    marks = marked_lines(script)
    a = lines.get(marks["worker_a"], {}).get("n_malloc_mb", 0)
    b = lines.get(marks["worker_b"], {}).get("n_malloc_mb", 0)
    notes = [bytes_near(name + " MB", got, 2 << 20, 100, BYTES_ALLOWANCE, HALF)
             for name, got in (("worker_a", a), ("worker_b", b))]
    others = sum(l.get("n_malloc_mb", 0) for n, l in lines.items()
                 if n not in (marks["worker_a"], marks["worker_b"]))
    # other lines' small blocks: samples worth the mean each (byte_unit(0));
    # the power: a worker's 100 MiB there, counted so, must fail the check
    need_samples("a worker's MB charged to the main thread", round(100 / byte_unit(0)),
                 count_above_to_catch(OTHER_LINES_LIMIT_MB / byte_unit(0)))
    notes.append(holds(count_at_most("MB charged to other lines (the main thread's)", others,
                                     byte_unit(0), OTHER_LINES_LIMIT_MB)))
    return "; ".join(notes)


# ---- copy volume ------------------------------------------------------------------------------

COPIES = """
    import time

    source = bytearray(32 << 20)

    def copy(times):
        for _ in range(times):
            duplicate = bytes(source)  # @copy
            del duplicate

    start = time.perf_counter()
    copy(64)
    print(time.perf_counter() - start)
"""

NUMPY_COPIES = """
    import numpy as np

    source = np.ones(4 << 20)  # 32 MiB

    def copy(times):
        for _ in range(times):
            duplicate = np.copy(source)  # @copy
            del duplicate

    copy(64)
    print("ok")
"""


# Copies are sampled by rate: marks every 40 x 512 KiB = 20 MiB copied on
# average, each charging the spacing that ends at it (src/shim/copy.c), so
# a line that does the copying is charged what it copied but for its two
# end spacings (accuracy.copy_near: +- 20 MiB x ln(2 / ALPHA) = 266
# MiB of the 2048 copied, about 100 marks). Truth 64 x 32 MiB; the rate's
# denominator is the report's own elapsed time, so the check is on MB
# (rate x elapsed). COPY_ALLOWANCE. The defects: copies counted once per
# call, not per byte (64 marks' worth at most: 1280 MiB, 0.625 of the
# truth), or half the copied bytes lost: the power (copies_to_catch) is
# checked for the nearer, 0.625.
COPY_SPACING_MB = 40 * 512 / 1024
PER_CALL = 1280 / 2048.0


def _check_copies(env, name, source):
    script, proc, prof = _profile(env, name, source)
    line = _line(prof, script, "copy")
    truth_mb = 64 * 32
    elapsed = prof["elapsed_time_sec"]
    true_rate = truth_mb / elapsed
    rate = line["n_copy_mb_s"]
    need_samples("copy marks", round(truth_mb / COPY_SPACING_MB),
                 copies_to_catch(PER_CALL, COPY_ALLOWANCE))
    note = holds(copy_near("MB copied (%.1f MB/s over %.2f s)" % (rate, elapsed), rate * elapsed,
                           truth_mb, COPY_SPACING_MB, COPY_ALLOWANCE))
    return "%s; truth %.1f MB/s (%+.1f%%)" % (note, true_rate, 100 * (rate / true_rate - 1))


def test_memory_copy_volume(env):
    return _check_copies(env, "copies.py", COPIES)


def test_memory_copy_volume_numpy(env):
    return _check_copies(env, "copies_numpy.py", NUMPY_COPIES)


test_memory_copy_volume_numpy.requires = "numpy"
