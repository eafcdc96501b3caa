"""Lines blocked in the kernel: time.sleep and a read from a pipe; prints
{"sleep": s, "pipe": s}, the wall time each line took (perf_counter)."""
import json
import subprocess
import sys
import time

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0


def sleeper():
    took = 0.0
    for _ in range(4):
        t0 = time.perf_counter()
        time.sleep(SECONDS / 4)  # @sleep
        took += time.perf_counter() - t0
    return took


def reader():
    child = subprocess.Popen(["sh", "-c", "sleep %s; echo done" % SECONDS], stdout=subprocess.PIPE)
    t0 = time.perf_counter()
    child.stdout.read()  # @pipe
    took = time.perf_counter() - t0
    child.wait()
    return took


print(json.dumps({"sleep": sleeper(), "pipe": reader()}))
