"""Lines whose time is native code reached without a call instruction,
beside the same work written as a call, and pure-Python loops that must
stay Python (tests/e2e/test_cpu_accuracy.py).

    operators.py bigint SECONDS  -> x * y and operator.mul(x, y), interleaved
    operators.py numpy SECONDS   -> a @ b, a * b + a, arr[idx] and their call
                                    forms, interleaved
    operators.py pure SECONDS    -> an arithmetic loop, a two-instruction loop,
                                    an allocation loop that keeps the GC busy
    operators.py loops SECONDS   -> the first two only

Each marked line runs for SECONDS of this thread's CPU time.
"""
import operator
import sys
import time


# The two forms of one piece of work alternate in chunks of CHUNK seconds
# of thread time each until each has had about SECONDS: both are measured
# in the same stretch of the run, so a machine whose speed or load changes
# mid-run changes both alike (issue #32).
CHUNK = 0.1


def bigint(seconds):
    x, y = 7 ** 150000, 3 ** 150000
    left = seconds
    while left > 0:
        step = min(CHUNK, left)
        t0 = time.thread_time()
        end = t0 + step
        while time.thread_time() < end:
            z = x * y  # @op_mul
        end = time.thread_time() + step
        while time.thread_time() < end:
            z = operator.mul(x, y)  # @call_mul
        left -= (time.thread_time() - t0) / 2
    return z


def numpy_ops(seconds):
    import numpy as np
    rng = np.random.default_rng(1)
    m = rng.random((320, 320))
    a, b = rng.random(4000000), rng.random(4000000)
    arr, idx = rng.random(1000000), rng.integers(0, 1000000, 1000000)
    left = seconds
    while left > 0:
        step = min(CHUNK, left)
        t0 = time.thread_time()
        end = t0 + step
        while time.thread_time() < end:
            p = m @ m  # @op_matmul
        end = time.thread_time() + step
        while time.thread_time() < end:
            p = np.matmul(m, m)  # @call_matmul
        end = time.thread_time() + step
        while time.thread_time() < end:
            c = a * b + a  # @op_muladd
        end = time.thread_time() + step
        while time.thread_time() < end:
            c = np.add(np.multiply(a, b), a)  # @call_muladd
        end = time.thread_time() + step
        while time.thread_time() < end:
            t = arr[idx]  # @op_index
        end = time.thread_time() + step
        while time.thread_time() < end:
            t = np.take(arr, idx)  # @call_index
        left -= (time.thread_time() - t0) / 6
    return p, c, t


def pure(seconds, alloc=True):
    x = 0
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        for i in range(20000):
            x += i * i % 7  # @arith
    steps = range(20000)
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        for _ in steps: pass  # @two
    if not alloc:
        return x
    keep = []
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        for i in range(2000):
            keep.append([i, (i, x), {}])  # @alloc
        if len(keep) > 300000:
            del keep[:]
    return x


if __name__ == "__main__":
    modes = {"bigint": bigint, "numpy": numpy_ops, "pure": pure,
             "loops": lambda seconds: pure(seconds, alloc=False)}
    modes[sys.argv[1]](float(sys.argv[2]))
