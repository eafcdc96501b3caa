"""Threads: four Python workers contending for the GIL plus one in C."""
import hashlib
import threading

def py_worker(n):
    x = 0
    for i in range(n):
        x += i % 7

def c_worker(blob, rounds):
    for _ in range(rounds):
        hashlib.sha256(blob).digest()

threads = [threading.Thread(target=py_worker, args=(12_000_000,)) for _ in range(4)]
threads.append(threading.Thread(target=c_worker, args=(b"y" * (8 << 20), 240)))
for t in threads:
    t.start()
for t in threads:
    t.join()
