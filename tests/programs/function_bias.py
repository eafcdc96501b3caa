"""Function-bias benchmark (seed 000 §6.2): two semantically identical
functions, one calling a helper in its loop, one with the helper inlined.

    function_bias.py calibrate          -> prints iterations per second of each
    function_bias.py N_CALLING N_INLINED -> runs both, prints the measured seconds
"""
import json
import sys
import time


def helper(x):
    return (x * 3 + 1) % 7


def calling(n):
    total = 0
    for i in range(n):
        total += helper(i)  # @calling
    return total


def inlined(n):
    total = 0
    for i in range(n):
        total += (i * 3 + 1) % 7  # @inlined
    return total


def rate(func):
    n = 20000
    while True:
        t0 = time.perf_counter()
        func(n)
        dt = time.perf_counter() - t0
        if dt > 0.2:
            return n / dt
        n *= 2


if __name__ == "__main__":
    if sys.argv[1] == "calibrate":
        print(json.dumps({"calling": rate(calling), "inlined": rate(inlined)}))
    else:
        n_calling, n_inlined = int(sys.argv[1]), int(sys.argv[2])
        t0 = time.perf_counter()
        calling(n_calling)
        t1 = time.perf_counter()
        inlined(n_inlined)
        t2 = time.perf_counter()
        print(json.dumps({"calling": t1 - t0, "inlined": t2 - t1}))
