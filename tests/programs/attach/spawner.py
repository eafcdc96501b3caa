"""Starts hot.py as a child Python process and waits for it (record
--subprocesses).

    spawner.py [SECONDS]
"""
import os
import subprocess
import sys

HOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hot.py")
seconds = sys.argv[1] if len(sys.argv) > 1 else "1.0"
subprocess.run([sys.executable, HOT, seconds], check=True, stdout=subprocess.DEVNULL)
