"""Processes: a Pool of two workers (the interpreter's default start method)
each running a pure-Python loop and hashing, as a data-parallel job would."""
import multiprocessing as mp
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from mp_work import work  # noqa: E402

if __name__ == "__main__":
    with mp.Pool(2) as pool:
        print(sum(pool.map(work, [6_000_000] * 20, chunksize=1)))
