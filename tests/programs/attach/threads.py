"""Threads whose functions are known: two CPU workers, one that naps, and the
main thread waiting in join().

    threads.py [SECONDS]   prints "ready" once every thread runs
"""
import sys
import threading
import time

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
started = threading.Barrier(4)


def spin_alpha():
    started.wait()
    end = time.perf_counter() + SECONDS
    x = 0
    while time.perf_counter() < end:
        for i in range(1000):
            x += i % 3  # @alpha


def spin_beta():
    started.wait()
    end = time.perf_counter() + SECONDS
    x = 0
    while time.perf_counter() < end:
        for i in range(1000):
            x += i % 5  # @beta


def nap_gamma():
    started.wait()
    end = time.perf_counter() + SECONDS
    while time.perf_counter() < end:
        time.sleep(0.05)  # @gamma


workers = [threading.Thread(target=f) for f in (spin_alpha, spin_beta, nap_gamma)]
for w in workers:
    w.start()
started.wait()
print("ready", flush=True)
for w in workers:
    w.join()  # @join
