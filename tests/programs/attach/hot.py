"""A program whose time goes to one known function, for the attach tests.

    hot.py [SECONDS]   prints "ready", runs hot() for SECONDS (default 60), exits
"""
import sys
import time


def hot(seconds):
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        for i in range(2000):
            x += i * i % 7  # @hot
    return x


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    print("ready", flush=True)
    hot(seconds)


main()
