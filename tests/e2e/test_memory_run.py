"""`sonde run --memory` leaves the program alone and reports what it should.

The program's output and exit status are the same as under plain Python,
including programs that fork, start threads, use a fork-based
multiprocessing pool or run `subprocess.run(["ls"])`; children do not
inherit the allocator shim; without --memory the reports carry no memory
field; with it the terminal report has the memory columns, a sparkline per
line and the leak list, and a long run's JSON stays bounded. The shim is
the malloc the program calls, under tests/run.py --sanitize too (ahead of
libasan, which serves it).
"""
import json
import os
import re
import subprocess

from accuracy import bytes_near
from support import check, file_entry, lines_by_no, marked_lines

VERSIONS = "tiers: what --memory reports and its options"

# test_memory_shim_active (issue #32): the systematic allowance of each
# line's MB (relative): the blocks' headers (a bytearray's 57 bytes), the
# list, a thread's first mark taken as a fresh draw; the defect: half the
# blocks unseen.
SHIM_BYTES_ALLOWANCE = 0.01
HALF = 0.5

TRANSPARENT = """
    import os
    import subprocess
    import sys
    import threading
    import multiprocessing

    def square(x):
        return x * x

    def work(results, i):
        results[i] = sum(len(bytes(1000 * k)) for k in range(200))

    results = [0] * 4
    # threads the kernel lists before ours (1, or 2 with sonde's sampler)
    base = len(os.listdir("/proc/self/task"))
    threads = [threading.Thread(target=work, args=(results, i)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("threads", results)
    # join() returns before the kernel has removed a thread, and 3.12+
    # counts the kernel's threads when it decides to warn at fork: wait
    # until ours are gone, or the warning depends on the machine's load
    import time
    deadline = time.monotonic() + 10
    while len(os.listdir("/proc/self/task")) > base and time.monotonic() < deadline:
        time.sleep(0.001)

    pid = os.fork()
    if pid == 0:
        data = [bytearray(1 << 20) for _ in range(30)]
        print("child", len(data), flush=True)
        os._exit(7)
    _, status = os.waitpid(pid, 0)
    print("child status", os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode")
          else status >> 8)

    with multiprocessing.get_context("fork").Pool(2) as pool:
        print("pool", pool.map(square, range(10)))

    listing = subprocess.run(["ls", sys.argv[1]], capture_output=True, text=True)
    print("ls", listing.returncode, listing.stdout.split())
    env = subprocess.run(["env"], capture_output=True, text=True).stdout
    print("child env has the shim:", "libsonde_shim" in env, "SONDE_HAD_LD_PRELOAD" in env)
    sys.stderr.write("to stderr\\n")
    sys.stdout.flush()
    sys.exit(3)
"""


def test_memory_program_unchanged(env):
    listed = os.path.join(env.tmp, "listed")
    os.makedirs(listed)
    for name in ("b.txt", "a.txt"):
        open(os.path.join(listed, name), "w").close()
    script = env.write("transparent.py", TRANSPARENT)
    plain = env.run_python([script, listed])
    out = os.path.join(env.tmp, "mem.json")
    ours = env.run_sonde(["run", "--memory", "--json", "-o", out, script, listed])
    check(plain.returncode == 3, "plain run: exit %d, stderr %s" % (plain.returncode, plain.stderr))
    check(ours.returncode == plain.returncode, "exit %d under --memory, %d without; stderr:\n%s"
          % (ours.returncode, plain.returncode, ours.stderr[-2000:]))
    check(ours.stdout == plain.stdout, "stdout differs:\n--- plain\n%s--- --memory\n%s"
          % (plain.stdout, ours.stdout))
    # The program forks while its own threads run, so 3.12+ warns in both
    # runs (with different pids); sonde's threads never add to that: the
    # sampler pauses around fork.
    def same(text):
        return re.sub(r"pid=\d+", "pid=N", text)
    check(same(ours.stderr) == same(plain.stderr),
          "stderr differs: %r vs %r" % (plain.stderr, ours.stderr))
    check("child env has the shim: False False" in ours.stdout, "a child inherited the shim")
    with open(out, encoding="utf-8") as f:
        prof = json.load(f)
    check(prof.get("memory") is True, "no memory profile written")


test_memory_program_unchanged.versions = ("all: forks, threads, a pool and subprocess under the "
                                          "shim, as the interpreter does them")


def test_memory_reports_only_with_memory(env):
    script = env.write("plain.py", """
        def f():
            return [bytes(1000) for _ in range(200_000)]
        for _ in range(5):
            f()
    """)
    proc, prof = env.profile(script)
    text = json.dumps(prof)
    for field in ("n_malloc_mb", "memory_samples", "max_footprint_mb", "leaks", '"memory"'):
        check(field not in text, "%s in a profile taken without --memory" % field)
    plain_text = env.run_sonde(["run", script])
    check("peak MB" not in plain_text.stderr and "timeline" not in plain_text.stderr,
          "memory columns in the terminal report without --memory")

    proc, prof = env.profile(script, (), ["--memory"])
    line = file_entry(prof, script)["lines"][0]
    for field in ("n_malloc_mb", "n_mallocs", "n_avg_mb", "n_peak_mb", "n_python_fraction",
                  "n_usage_fraction", "n_copy_mb_s", "memory_samples"):
        check(field in line, "%s missing from a line of the --memory profile" % field)
    for field in ("max_footprint_mb", "max_footprint_fname", "max_footprint_lineno", "samples"):
        check(field in prof, "%s missing from the --memory profile" % field)
    check("leaks" in file_entry(prof, script), "files[path].leaks missing")


LEAKY_TEXT = """
    leaked = []

    def leak():
        leaked.append(bytearray(1 << 20))

    for _ in range(150):
        leak()
"""


def test_memory_terminal_report(env):
    script = env.write("leaky.py", LEAKY_TEXT)
    proc = env.run_sonde(["run", "--memory", script], env={"COLUMNS": "160"})
    check(proc.returncode == 0, "exit %d: %s" % (proc.returncode, proc.stderr[-2000:]))
    report = proc.stderr
    for text in ("memory: peak footprint", "avg MB", "peak MB", "mem py", "copy MB/s",
                 "timeline", "Possible memory leaks", "leaky.py:5"):
        check(text in report, "%r not in the terminal report:\n%s" % (text, report))
    check(any(ch in report for ch in "\u2581\u2582\u2583\u2584\u2585\u2586\u2587\u2588"),
          "no sparkline in the terminal report")


LONG_RUN = """
    def churn():
        block = bytearray(24 << 20)
        block[0] = 1
        return len(block)

    total = 0
    for _ in range(1500):
        total += churn()
    print(total)
"""


def test_memory_long_run_bounded(env):
    script = env.write("long_run.py", LONG_RUN)
    proc, prof = env.profile(script, (), ["--memory"])
    check(proc.returncode == 0, "exit %d" % proc.returncode)
    check(2 <= len(prof["samples"]) <= 100, "%d program footprint points" % len(prof["samples"]))
    for line in file_entry(prof, script)["lines"]:
        check(len(line["memory_samples"]) <= 100, "line %d has %d timeline points"
              % (line["lineno"], len(line["memory_samples"])))
    # a count, not an estimate: each 24 MiB block holds a mark with
    # probability 1 - e^-48, so every one is sampled
    churn = max(file_entry(prof, script)["lines"], key=lambda l: l["n_mallocs"])
    check(churn["n_mallocs"] >= 1500, "the churning line has %d samples, want one per block"
          % churn["n_mallocs"])
    size = os.path.getsize(sorted(os.path.join(env.tmp, f) for f in os.listdir(env.tmp)
                                  if f.startswith("profile-"))[-1])
    check(size < 64 << 10, "a %d-byte JSON profile for a 20-line program" % size)
    return "%d samples at the line, %d bytes of JSON" % (churn["n_mallocs"], size)


def test_memory_api_needs_the_shim(env):
    script = env.write("api.py", """
        import sonde
        try:
            sonde.start(memory=True)
        except RuntimeError as e:
            print("refused:", e)
        else:
            print("started")
    """)
    proc = env.run_python([script], env={"PYTHONPATH": env.lib})
    check("refused:" in proc.stdout and "sonde run --memory" in proc.stdout,
          "sonde.start(memory=True) without the shim: %r %r" % (proc.stdout, proc.stderr))


def test_memory_bad_threshold(env):
    script = env.write("x.py", "pass\n")
    proc = env.run_sonde(["run", "--memory", "--malloc-threshold", "12", script])
    check(proc.returncode == 2 and "--malloc-threshold" in proc.stderr,
          "exit %d: %s" % (proc.returncode, proc.stderr))


PRELOADED = """
    import ctypes
    import os
    import sys

    def mapped(name):
        with open("/proc/self/maps") as f:
            return [l.split()[-1] for l in f if name in l.split()[-1]][:1]

    # the malloc every library calls is the one the dynamic linker found
    # first: the shim's, whatever else is preloaded (libasan under --sanitize)
    libc = ctypes.CDLL(None)
    where = ctypes.cast(libc.malloc, ctypes.c_void_p).value
    owner = "?"
    with open("/proc/self/maps") as f:
        for l in f:
            lo, hi = (int(x, 16) for x in l.split()[0].split("-"))
            if lo <= where < hi:
                owner = l.split()[-1]
    # A non-PIE executable that takes malloc's address (Debian's python3)
    # holds its canonical PLT entry, which dlsym returns: a stub that jumps
    # to the first malloc the linker found. Then the figures below are the
    # proof that the shim served the program.
    if os.path.realpath(owner) == os.path.realpath(sys.executable):
        owner = "plt-stub"
    print("shim", mapped("libsonde_shim"), "asan", mapped("libasan"), "malloc in", owner)
    libc.malloc.restype = ctypes.c_void_p
    blocks = [libc.malloc(1 << 20) for _ in range(64)]  # @native
    data = [bytearray(1 << 20) for _ in range(64)]  # @python
    print(sum(1 for b in blocks if b), len(data))
    libc.free.argtypes = [ctypes.c_void_p]
    for b in blocks:
        libc.free(b)
"""


def test_memory_shim_active(env):
    """The shim is preloaded and is the malloc the program calls (under
    tests/run.py --sanitize too, ahead of libasan, which then serves it):
    both lines' 64 MiB are counted."""
    script = env.write("preloaded.py", PRELOADED)
    out = os.path.join(env.tmp, "preloaded.json")
    proc = env.run_sonde(["run", "--memory", "--json", "-o", out, script])
    check(proc.returncode == 0, "exit %d: %s" % (proc.returncode, proc.stderr[-2000:]))
    first = proc.stdout.splitlines()[0]
    owner = first.split("malloc in")[1]
    check("libsonde_shim.so" in owner or owner.strip() == "plt-stub",
          "malloc is not the shim's: " + first)
    check("libsonde_shim.so" in first.split("malloc in")[0], "the shim is not mapped: " + first)
    check(env.sanitize == ("libasan" in first.split("malloc in")[0]),
          "libasan mapped %s, sanitizer build %s: %s" % ("libasan" in first, env.sanitize, first))
    with open(out, encoding="utf-8") as f:
        prof = json.load(f)
    marks, lines = marked_lines(script), lines_by_no(prof, script)
    got = {m: lines.get(marks[m], {}).get("n_malloc_mb", 0.0) for m in ("native", "python")}
    # 64 MiB each (the report's MB are MiB: 64, not 67.1), in 1 MiB blocks
    # sampled with probability 1 - e^-2: a Poisson count of byte_unit(1 MiB)
    # = 0.157 MiB (about 410: +- 23 %), SHIM_BYTES_ALLOWANCE 1 % (headers, the list).
    # The defect: the shim not the malloc the program calls (0 MB), or half
    # its blocks unseen (caught from about 100 samples).
    notes = [bytes_near("%s MB" % mark, mb, 1 << 20, 64, SHIM_BYTES_ALLOWANCE, HALF)
             for mark, mb in got.items()]
    return "%s; %s" % ("; ".join(notes), first)


test_memory_shim_active.versions = "all: the shim is the malloc that this interpreter's build calls"
