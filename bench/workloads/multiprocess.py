"""Processes: a Pool of two workers (the interpreter's default start method)
each running a pure-Python loop and hashing, as a data-parallel job would."""
import hashlib
import multiprocessing as mp


def work(n):
    x = 0
    for i in range(n):
        x += i % 7
    for _ in range(40):
        hashlib.sha256(b"z" * (1 << 20)).digest()
    return x


if __name__ == "__main__":
    with mp.Pool(2) as pool:
        print(sum(pool.map(work, [6_000_000] * 8, chunksize=1)))
