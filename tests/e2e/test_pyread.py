"""src/pyread against each live interpreter: line tables and call-family
opcodes against the interpreter's own answers, and stacks read from a live
process against what its threads report about themselves."""
import json
import os
import re
import subprocess
import time

from support import check

VERSIONS = "all: src/pyread against each interpreter's line tables, code objects and stacks"


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


def test_layout_from_the_interpreter(env):
    """3.13+: the offsets read from the live interpreter's _Py_DebugOffsets
    agree with the ones generated from its headers (and the reader uses
    them); before 3.13 there is nothing to read and the tables are used."""
    target = subprocess.Popen([env.python, "-c", "import sys, time\nprint('up', flush=True)\n"
                               "time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        check(target.stdout.readline().strip() == "up", "the target did not start")
        out = subprocess.run([os.path.join(env.build, "tests", "pyread_dump"), "--layout",
                              str(target.pid)], capture_output=True, text=True, timeout=60)
    finally:
        target.kill()
        target.wait()
    check(out.returncode == 0, "pyread_dump --layout: exit %d %s" % (out.returncode, out.stderr))
    layout = json.loads(out.stdout)
    if env.version[:2] < (3, 13):
        check(not layout["from_target"] and not layout["fields"],
              "a layout from the target before 3.13: %s" % out.stdout)
        return "3.%d: generated table only" % env.version[1]
    fields = layout["fields"]
    wrong = [f for f in fields if f["target"] != f["generated"]]
    check(layout["from_target"] and len(fields) >= 20 and not wrong,
          "%d fields, differing: %s" % (len(fields), wrong))
    return "%d fields from _Py_DebugOffsets agree" % len(fields)
