"""Memory profiling (`sonde run --memory`) against ground truth.

Each test runs a program whose allocations it knows exactly and checks the
per-line figures of the JSON report (docs/json-format.md) with a stated
tolerance: the size of one large block (seed 000 §6.3: within 2 % of
512 MiB, whatever share of it is touched), Python versus native memory,
the proportion between two allocation sites, the thread an allocation is
charged to, and copy volume. Megabytes are MiB (2**20 bytes), as in the
report.
"""
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


def _check_512(env, name, source):
    notes = []
    for share in ("0", "0.5", "1"):
        script, proc, prof = _profile(env, name, source, [share])
        check(proc.stdout.strip() == str(512 * MIB), "program output %r" % proc.stdout)
        line = _line(prof, script, "alloc")
        peak = line["n_peak_mb"]
        check(abs(peak - 512) <= 0.02 * 512,
              "%s%% touched: peak %.2f MB at the allocating line, want 512 +- 2%%"
              % (float(share) * 100, peak))
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


def test_memory_python_objects(env):
    script, proc, prof = _profile(env, "python_objects.py", PYTHON_OBJECTS)
    notes = []
    for marker in ("bytes", "list"):
        line = _line(prof, script, marker)
        frac = line["n_python_fraction"]
        check(line["n_malloc_mb"] > 50, "@%s allocated only %.1f MB" % (marker, line["n_malloc_mb"]))
        check(frac >= 0.7, "@%s is %.0f%% Python memory, want >= 70%%" % (marker, 100 * frac))
        notes.append("%s %.0f%% Python (%.0f MB)" % (marker, 100 * frac, line["n_malloc_mb"]))
    return ", ".join(notes)


def test_memory_native_arrays(env):
    script, proc, prof = _profile(env, "numpy_arrays.py", NUMPY_ARRAYS)
    notes = []
    for marker in ("zeros", "ones"):
        line = _line(prof, script, marker)
        frac = line["n_python_fraction"]
        check(abs(line["n_malloc_mb"] - 305.2) < 0.02 * 305.2,
              "@%s allocated %.1f MB, want 305.2 (40e6 doubles)" % (marker, line["n_malloc_mb"]))
        check(frac <= 0.3, "@%s is %.0f%% Python memory, want <= 30%%" % (marker, 100 * frac))
        notes.append("%s %.0f%% Python" % (marker, 100 * frac))
    return ", ".join(notes)


test_memory_native_arrays.requires = "numpy"


# ---- two sites of known sizes ---------------------------------------------------------------
#
# Blocks smaller than the sample mean are charged by sampling: a mark falls
# in a block with probability 1 - exp(-size/mean) and the block then stands
# for size over that probability, so a site's share is right in
# expectation, with a spread that shrinks as 1/sqrt(samples). With 512 KiB
# samples over 1 GiB the ratio's standard deviation is about 4.5 %, so 20 %
# is a 4-sigma bound (test_memory_accuracy.py has the tighter ones).

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
    big = _line(prof, script, "big")["n_malloc_mb"]
    small = _line(prof, script, "small")["n_malloc_mb"]
    check(big > small, "the 48 KiB site got %.1f MB, the 16 KiB site %.1f MB" % (big, small))
    ratio = big / small if small else float("inf")
    check(abs(ratio - 3) <= 0.2 * 3, "ratio %.2f, want 3 +- 20%% (big %.1f MB, small %.1f MB)"
          % (ratio, big, small))
    total = big + small
    check(abs(total - 1024) <= 0.1 * 1024,
          "the two sites add up to %.1f MB, want 1024 +- 10%%" % total)
    return "big %.1f MB, small %.1f MB, ratio %.2f (truth 768, 256, 3)" % (big, small, ratio)


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
    check(abs(two["n_malloc_mb"] - parts) <= 0.01 + 1e-3 * parts,
          "two_lines: %.3f MB, its lines %.3f MB" % (two["n_malloc_mb"], parts))
    check(two["n_mallocs"] == lines[0]["n_mallocs"] + lines[1]["n_mallocs"], "sample counts")
    check(abs(one["n_malloc_mb"] - lines[2]["n_malloc_mb"]) <= 0.01, "one_line vs its line")
    ratio = two["n_malloc_mb"] / one["n_malloc_mb"] if one["n_malloc_mb"] else float("inf")
    check(abs(ratio - 3) <= 0.2 * 3, "ratio %.2f, want 3 +- 20%% (%.1f MB, %.1f MB)"
          % (ratio, two["n_malloc_mb"], one["n_malloc_mb"]))
    check(two["n_peak_mb"] >= max(lines[0]["n_peak_mb"], lines[1]["n_peak_mb"]) - 0.01,
          "function peak %.2f below a line's" % two["n_peak_mb"])
    check(0 < two["n_avg_mb"] <= two["n_peak_mb"] + 0.01, "avg %.2f, peak %.2f"
          % (two["n_avg_mb"], two["n_peak_mb"]))
    check(two["n_python_fraction"] >= 0.7, "bytearray memory is Python's: %r" % two["n_python_fraction"])
    return "two_lines %.1f MB, one_line %.1f MB, ratio %.2f (truth 3)" % (
        two["n_malloc_mb"], one["n_malloc_mb"], ratio)


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


def test_memory_threads(env):
    script, proc, prof = _profile(env, "threads_alloc.py", THREADS)
    lines = lines_by_no(prof, script)
    marks = marked_lines(script)
    a = lines.get(marks["worker_a"], {}).get("n_malloc_mb", 0)
    b = lines.get(marks["worker_b"], {}).get("n_malloc_mb", 0)
    for name, got in (("worker_a", a), ("worker_b", b)):
        check(abs(got - 100) <= 0.25 * 100, "%s's line got %.1f MB, want 100 +- 25%%" % (name, got))
    others = sum(l.get("n_malloc_mb", 0) for n, l in lines.items()
                 if n not in (marks["worker_a"], marks["worker_b"]))
    check(others <= 20, "%.1f MB charged to other lines (the main thread's)" % others)
    return "worker_a %.1f MB, worker_b %.1f MB, elsewhere %.1f MB (truth 100, 100, 0)" % (a, b, others)


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


def _check_copies(env, name, source):
    script, proc, prof = _profile(env, name, source)
    line = _line(prof, script, "copy")
    truth_mb = 64 * 32
    elapsed = prof["elapsed_time_sec"]
    true_rate = truth_mb / elapsed
    rate = line["n_copy_mb_s"]
    check(abs(rate - true_rate) <= 0.25 * true_rate,
          "%.1f MB/s reported, truth %.1f MB/s (%d MB in %.2f s)" % (rate, true_rate, truth_mb, elapsed))
    return "%.1f MB/s reported, truth %.1f MB/s (%+.1f%%)" % (rate, true_rate, 100 * (rate / true_rate - 1))


def test_memory_copy_volume(env):
    return _check_copies(env, "copies.py", COPIES)


def test_memory_copy_volume_numpy(env):
    return _check_copies(env, "copies_numpy.py", NUMPY_COPIES)


test_memory_copy_volume_numpy.requires = "numpy"
