"""A json.dumps/json.loads loop and a three-stage generator pipeline, each
timed with this thread's CPU clock (tests/e2e/test_cpu_accuracy.py).

    pipeline.py SECONDS -> runs each stage for about SECONDS of CPU time,
                           prints {"json": s, "pipeline": s} as measured
"""
import json
import sys
import time

DOC = {"ints": list(range(300)), "text": {"k%d" % i: "v" * 40 for i in range(40)},
       "floats": [i / 7 for i in range(100)]}


def json_stage(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        text = json.dumps(DOC)  # @dumps
        back = json.loads(text)  # @loads
    return back


def source(n):
    for i in range(n):
        yield i * 7 % 1000  # @source


def square(items):
    for x in items:
        yield x * x + 1  # @square


def keep(items):
    for x in items:
        if x % 3:
            yield x  # @keep


def pipeline_stage(seconds):
    end = time.thread_time() + seconds
    total = 0
    while time.thread_time() < end:
        for v in keep(square(source(20000))):
            total += v  # @sum
    return total


if __name__ == "__main__":
    seconds = float(sys.argv[1])
    t0 = time.thread_time()
    json_stage(seconds)
    t1 = time.thread_time()
    pipeline_stage(seconds)
    t2 = time.thread_time()
    print(json.dumps({"json": t1 - t0, "pipeline": t2 - t1}))
