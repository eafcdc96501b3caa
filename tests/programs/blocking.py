"""Lines blocked in the kernel: time.sleep and a read from a pipe."""
import subprocess
import sys
import time

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0


def sleeper():
    for _ in range(4):
        time.sleep(SECONDS / 4)  # @sleep


def reader():
    child = subprocess.Popen(["sh", "-c", "sleep %s; echo done" % SECONDS], stdout=subprocess.PIPE)
    data = child.stdout.read()  # @pipe
    child.wait()
    return data


sleeper()
reader()
