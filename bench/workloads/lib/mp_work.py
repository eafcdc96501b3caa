"""The work of bench/workloads/multiprocess.py, in a module of its own so
that `python -m cProfile` (whose __main__ the workers cannot import) runs it."""
import hashlib


def work(n):
    x = 0
    for i in range(n):
        x += i % 7
    for _ in range(40):
        hashlib.sha256(b"z" * (1 << 20)).digest()
    return x
