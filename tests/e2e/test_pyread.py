"""src/pyread against each live interpreter: line tables and call-family
opcodes against the interpreter's own answers, and stacks read from a live
process against what its threads report about themselves."""
import os
import re
import subprocess

from support import check


def _pipe(env, script, binary):
    producer = subprocess.run([env.python, os.path.join(env.root, "tests", "pyread", script)],
                              capture_output=True, timeout=300)
    check(producer.returncode == 0, "%s failed: %s" % (script, producer.stderr.decode()[-1000:]))
    proc = subprocess.run([os.path.join(env.build, "tests", binary), "-"], input=producer.stdout,
                          capture_output=True, timeout=300)
    out = proc.stdout.decode("utf-8", "replace")
    fails = [l for l in out.splitlines() if l.startswith("FAIL")]
    passes = [l for l in out.splitlines() if l.startswith("PASS")]
    check(proc.returncode == 0 and not fails and passes,
          "exit %d: %s" % (proc.returncode, "; ".join(fails[:5]) or out[-500:]))
    return "%d checks" % len(passes)


def test_line_tables_match_the_interpreter(env):
    return _pipe(env, "linetable_truth.py", "test_linetable")


def test_code_objects_match_the_interpreter(env):
    return _pipe(env, "code_truth.py", "test_pyread_code")


def test_live_stacks(env):
    proc = subprocess.run(["python3" if os.path.exists("/usr/bin/python3") else env.python,
                           os.path.join(env.root, "tests", "pyread", "check_live.py"),
                           "--dump", os.path.join(env.build, "tests", "pyread_dump"),
                           "--python", env.python],
                          capture_output=True, text=True, timeout=600)
    fails = [l for l in proc.stdout.splitlines() if l.startswith("FAIL")]
    passes = [l for l in proc.stdout.splitlines() if l.startswith("PASS")]
    check(proc.returncode == 0 and not fails and len(passes) > 50,
          "exit %d: %s" % (proc.returncode, "; ".join(fails[:5]) or (proc.stdout + proc.stderr)[-800:]))
    return "%d checks" % len(passes)
