"""An allocation loop that keeps the garbage collector busy, timing its own
collections (tests/e2e/test_attach.py: where collection time goes under
attach).

    alloc_gc.py SECONDS   runs the loop line for SECONDS of this thread's CPU
                          time, then prints "gc FULL YOUNG": the percentage
                          of that time spent in full (generation 2)
                          collections and in the younger generations', from
                          time.thread_time around each collection
"""
import gc
import sys
import time

spent = {0: 0.0, 1: 0.0, 2: 0.0}
began = [0.0]


def timer(phase, info):
    if phase == "start":
        began[0] = time.thread_time()
    else:
        spent[info["generation"]] += time.thread_time() - began[0]


def alloc(seconds):
    keep = []
    start = time.thread_time()
    end = start + seconds
    while time.thread_time() < end:
        for i in range(2000):
            keep.append([i, (i, 1), {}])  # @alloc
        if len(keep) > 300000:
            del keep[:]
    return time.thread_time() - start


gc.callbacks.append(timer)
total = alloc(float(sys.argv[1]))
gc.callbacks.remove(timer)
print("gc %.2f %.2f" % (100 * spent[2] / total, 100 * (spent[0] + spent[1]) / total), flush=True)
