"""Two workers (one in Python code, one in a C call that releases the GIL)
while the main thread waits in join()."""
import hashlib
import sys
import threading
import time

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
BLOB = b"x" * (32 << 20)


def python_worker():
    end = time.perf_counter() + SECONDS
    x = 0
    while time.perf_counter() < end:
        for i in range(10000):
            x += i % 3  # @python_worker


def native_worker():
    end = time.perf_counter() + SECONDS
    while time.perf_counter() < end:
        hashlib.sha256(BLOB).digest()  # @native_worker


workers = [threading.Thread(target=python_worker), threading.Thread(target=native_worker)]
for w in workers:
    w.start()
for w in workers:
    w.join()  # @join
