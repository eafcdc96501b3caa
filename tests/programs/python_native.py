"""A pure-Python loop line and a line that spends its time in one C call."""
import random
import sys
import time

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
DATA = [random.random() for _ in range(1000000)]


def pure(seconds):
    end = time.perf_counter() + seconds
    x = 0
    while True:
        for i in range(20000):
            x += i * i % 7  # @pure
        if time.perf_counter() > end:
            return x


def native(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        result = sorted(DATA)  # @native
    return result


pure(SECONDS)
native(SECONDS)
