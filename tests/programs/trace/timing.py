"""Known durations: sleep 0.2 s in slow(), spin 0.1 s in busy(); prints the
wall time of main() measured by the program itself."""
import time


def slow():
    time.sleep(0.2)


def busy():
    start = time.perf_counter()
    while time.perf_counter() - start < 0.1:
        pass


def main():
    slow()
    busy()


t0 = time.perf_counter()
main()
print("%.6f" % (time.perf_counter() - t0))
