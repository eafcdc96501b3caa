"""Threads running the same recursive function at the same time, switching
mid-recursion (tiny switch interval, sleep(0) at the bottom), plus a daemon
thread still running at exit. The true counts are known: each of THREADS
workers calls rec(DEPTH) ROUNDS times, and sleeper() once (0.05 s)."""
import sys
import threading
import time

DEPTH = 12
ROUNDS = 40
THREADS = 4


def rec(n):
    if n == 0:
        time.sleep(0)
        return 0
    return 1 + rec(n - 1)


def sleeper():
    time.sleep(0.05)


def worker(barrier):
    barrier.wait()
    for _ in range(ROUNDS):
        rec(DEPTH)
    sleeper()


def spin():
    return sum(range(100))


def background():
    while True:
        spin()
        time.sleep(0.001)


def main():
    sys.setswitchinterval(1e-5)
    threading.Thread(target=background, daemon=True).start()
    barrier = threading.Barrier(THREADS)
    threads = [threading.Thread(target=worker, args=(barrier,)) for _ in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


main()
