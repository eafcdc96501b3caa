"""The SVG flame graph of `sonde record` in a real browser (headless Chromium
via tests/browser/flamegraph_svg.test.js): hover, zoom, search, offline,
and a function and file whose names are markup render as text.

Needs node, /usr/bin/chromium and tests/browser/node_modules, as
test_html.py does (SONDE_SKIP_BROWSER=1 skips it). Runs once (VERSIONS): the
SVG does not depend on the interpreter.
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from attach_support import parse_svg, sonde_ok  # noqa: E402
from support import Skip, check, outside_env  # noqa: E402

VERSIONS = "once: the SVG flame graph in a browser does not depend on the interpreter"

DRIVER_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "browser")
DRIVER = os.path.join(DRIVER_DIR, "flamegraph_svg.test.js")
EVIL = "</script><img src=x onerror=alert(1)>]]>&\"'"

PROGRAM = '''\
import sys
import time


def work(seconds):
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        for i in range(1000):
            x += i % 7
    return x


EVIL = EVIL_NAME
names = {"co_name": EVIL}
if sys.version_info >= (3, 11):
    names["co_qualname"] = EVIL
work.__code__ = work.__code__.replace(**names)
work(float(sys.argv[1]))
'''.replace("EVIL_NAME", repr(EVIL))


def _driver_ready():
    if os.environ.get("SONDE_SKIP_BROWSER") == "1":
        raise Skip("SONDE_SKIP_BROWSER=1")
    if not shutil.which("node"):
        raise AssertionError("node is not installed: the browser tests need Node.js (see .ci/run)")
    if not os.path.exists("/usr/bin/chromium") and not os.environ.get("SONDE_CHROMIUM"):
        raise AssertionError("/usr/bin/chromium is missing (see .ci/run), or SONDE_SKIP_BROWSER=1")
    if not os.path.isdir(os.path.join(DRIVER_DIR, "node_modules", "playwright-core")):
        proc = subprocess.run(["npm", "ci", "--prefix", DRIVER_DIR, "--no-audit", "--no-fund"],
                              capture_output=True, text=True, timeout=600)
        check(proc.returncode == 0, "npm ci --prefix tests/browser failed:\n" + proc.stderr[-2000:])


def test_flamegraph_in_browser(env):
    _driver_ready()
    script = env.write("<img src=x onerror=alert(3)>.py", PROGRAM)
    out_dir = os.path.join(env.build, "attach-svg")
    os.makedirs(out_dir, exist_ok=True)
    svg = os.path.join(out_dir, "hostile.svg")
    proc = env.run_sonde(["record", "-o", svg, "--", env.python, script, "0.8"])
    sonde_ok(proc, "record -o hostile.svg")
    frames = parse_svg(svg)
    label = "%s (%s:" % (EVIL, script)
    check(any(l.startswith(label) for l, _, _ in frames), "hostile frame missing: %r"
          % [l for l, _, _ in frames][:6])
    case = os.path.join(env.tmp, "case.json")
    with open(case, "w", encoding="utf-8") as f:
        json.dump({"svg": svg, "screenshot": os.path.join(out_dir, "hostile.png"),
                   "frame": EVIL, "search": "onerror"}, f)
    run = subprocess.run(["node", DRIVER, case], capture_output=True, text=True, timeout=120,
                         env=outside_env())
    lines = run.stdout.splitlines()
    fails = [l for l in lines if l.startswith("FAIL")]
    check(run.returncode == 0 and not fails and lines,
          "browser checks failed (exit %d): %s %s" % (run.returncode, "; ".join(fails),
                                                     run.stderr[-1000:]))
    return "%d browser checks" % len([l for l in lines if l.startswith("PASS")])
