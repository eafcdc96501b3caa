"""sonde's demo: where does the time go?

Run it with `make demo` (or `build/bin/sonde run examples/demo.py`).
One line spends its time in the Python interpreter, one in native code
(the C implementation of sorted()), one waits on the system (sleep), and a
worker thread hashes data in C while the main thread waits for it.
"""
import hashlib
import random
import threading
import time


def python_heavy(n):
    total = 0
    for i in range(n):
        total += (i * i) % 7  # mostly Python: the interpreter runs this line
    return total


def native_heavy(values, rounds):
    for _ in range(rounds):
        ordered = sorted(values)  # mostly native: sorted() runs in C
    return ordered


def waiting(seconds):
    time.sleep(seconds)  # system: blocked in the kernel, not using the CPU


def hash_in_thread(blob, rounds):
    def work():
        for _ in range(rounds):
            hashlib.sha256(blob).hexdigest()  # native, in a worker thread

    worker = threading.Thread(target=work)
    worker.start()
    worker.join()  # the main thread waits here: not charged as CPU


def main():
    values = [random.random() for _ in range(300_000)]
    python_heavy(3_000_000)
    native_heavy(values, 12)
    waiting(0.5)
    hash_in_thread(b"sonde" * 2_000_000, 25)
    print("demo finished")


if __name__ == "__main__":
    main()
