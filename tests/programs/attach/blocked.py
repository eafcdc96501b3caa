"""Blocks in time.sleep inside a known function (for sonde dump).

    blocked.py [SECONDS]   prints "ready", then sleeps
"""
import sys
import time


def waiter(seconds):
    print("ready", flush=True)
    time.sleep(seconds)  # @sleep


waiter(float(sys.argv[1]) if len(sys.argv) > 1 else 60.0)
