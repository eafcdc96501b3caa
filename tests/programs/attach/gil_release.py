"""A line whose time is one C call that releases the GIL for its work
(hashlib.sha256 of a buffer, as a service hashes its uploads), alternating
with a pure-Python line; attached to by tests/e2e/test_attach.py (issue #25,
item 5).

    gil_release.py short|long SECONDS SPANS_FILE

short: each call takes about 0.2 ms of CPU (many per tick of attach's
10 ms); long: about 30 ms (the buffer's size is calibrated at the start
from the thread's CPU clock). The two lines take turns, each for SPAN
seconds of wall time (perf_counter: attach charges a running thread's
ticks, wall time), until SECONDS have passed. Each turn is written to
SPANS_FILE as it ends, "KIND START END CALLS CPU" (KIND native or python,
START and END on perf_counter, the system's monotonic clock, CALLS the
calls made, CPU their thread time), so that the test takes the truth of
the window it sampled. Prints "ready" before the first turn.
"""
import hashlib
import sys
import time

MODE = sys.argv[1]
SECONDS = float(sys.argv[2])
SPANS = sys.argv[3]
SPAN = 0.1
CALL_CPU = {"short": 0.0002, "long": 0.03}[MODE]


def calibrated_blob():
    """A buffer whose hash takes about CALL_CPU of this thread's CPU."""
    probe = b"\x5a" * (1 << 20)
    best = None
    for _ in range(5):
        t0 = time.thread_time()
        hashlib.sha256(probe).hexdigest()
        took = time.thread_time() - t0
        best = took if best is None or 0 < took < best else best
    per_byte = max(best, 1e-6) / len(probe)
    # at least 64 KiB: well above the size from which hashlib releases the GIL
    return b"\x5a" * max(64 << 10, int(CALL_CPU / per_byte))


def main():
    blob = calibrated_blob()
    x = 0
    end_all = time.perf_counter() + SECONDS
    with open(SPANS, "a") as spans:
        print("ready", flush=True)
        while time.perf_counter() < end_all:
            start = time.perf_counter()
            c0 = time.thread_time()
            calls = 0
            end = start + SPAN
            while time.perf_counter() < end:
                digest = hashlib.sha256(blob).hexdigest()  # @native
                calls += 1
            spans.write("native %.6f %.6f %d %.6f\n" % (start, time.perf_counter(), calls,
                                                         time.thread_time() - c0))
            start = time.perf_counter()
            c0 = time.thread_time()
            calls = 0
            end = start + SPAN
            while time.perf_counter() < end:
                for i in range(2000):
                    x += i * i % 7  # @python
                calls += 1
            spans.write("python %.6f %.6f %d %.6f\n" % (start, time.perf_counter(), calls,
                                                         time.thread_time() - c0))
            spans.flush()
    return digest, x


main()
