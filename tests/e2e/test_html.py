"""The HTML report (`sonde view`, src/report/html*.c, viewer/) in a real browser.

Each browser test writes a report — from a real `sonde run --json`, from
JSON written here by hand (memory, GPU, leaks, call stacks: figures sonde
does not produce yet), or from one model through both the terminal and the
HTML writer (tests/unit/test_report_html.c --write) — then runs
tests/browser/html_report.test.js, which drives Debian's headless Chromium
with playwright-core and prints PASS/FAIL lines. Screenshots and the pages
are kept in <build>/html-report/.

The browser tests need /usr/bin/chromium (Debian's chromium package) and
tests/browser/node_modules (`npm ci --prefix tests/browser`, run here when
missing); both are installed by .ci/run. Without them the tests fail;
SONDE_SKIP_BROWSER=1 skips them explicitly.
"""
import json
import os
import random
import shutil
import stat
import subprocess
import time

from support import Skip, check, outside_env

VERSIONS = "once: the HTML report in a browser, from JSON"

DRIVER_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "browser")
DRIVER = os.path.join(DRIVER_DIR, "html_report.test.js")

# A program whose source, file name, function names and arguments carry
# markup that would run if the viewer inserted it as HTML.
SCRIPT_PAYLOAD = "</script><script>alert(1)</script>"
IMG_PAYLOAD = "<img src=x onerror=alert(2)>"
FLAG_PAYLOAD = '<img src=x onerror="window.__sondePwned=true">'
INJECTION_FILE = "<img src=x onerror=alert(3)>.py"
INJECTION_PROGRAM = '''\
import sys, time
S = "</script><script>alert(1)</script>"
T = '<img src=x onerror="window.__sondePwned=true">'
def spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:  # </script><script>alert(1)</script> <img src=x onerror=alert(2)>
        pass
def other(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:  # <b>not bold</b> &amp; &lt;
        pass
names = {"co_name": "</script><script>alert(1)</script>"}
if sys.version_info >= (3, 11):
    names["co_qualname"] = '<img src=x onerror="window.__sondePwned=true">'
spin.__code__ = spin.__code__.replace(**names)
spin(0.4)
other(0.2)
'''


def _driver_ready():
    if os.environ.get("SONDE_SKIP_BROWSER") == "1":
        raise Skip("SONDE_SKIP_BROWSER=1")
    if not shutil.which("node"):
        raise AssertionError("node is not installed: the browser tests need Node.js (see .ci/run)")
    if not os.path.exists("/usr/bin/chromium") and not os.environ.get("SONDE_CHROMIUM"):
        raise AssertionError("/usr/bin/chromium is missing: apt-get install chromium (see .ci/run), "
                             "or SONDE_SKIP_BROWSER=1 to skip the browser tests")
    if not os.path.isdir(os.path.join(DRIVER_DIR, "node_modules", "playwright-core")):
        # npm is no sonde code: without the sanitizer's variables (a
        # --sanitize run that installs the driver got LeakSanitizer's
        # report of node's own leaks)
        proc = subprocess.run(["npm", "ci", "--prefix", DRIVER_DIR, "--no-audit", "--no-fund"],
                              capture_output=True, text=True, timeout=600, env=outside_env())
        check(proc.returncode == 0, "npm ci --prefix tests/browser failed:\n" + proc.stderr[-2000:])


def _out_dir(env):
    path = os.path.join(env.build, "html-report")
    os.makedirs(path, exist_ok=True)
    return path


def _view(env, json_path, html_path, extra_env=None):
    proc = env.run_sonde(["view", json_path, "-o", html_path], env=extra_env)
    check(proc.returncode == 0, "sonde view failed: %s" % proc.stderr)
    check(os.path.getsize(html_path) > 0, "empty page")
    return html_path


def _drive(env, case, html, json_path, expect=None, shot=None, **extra):
    """Runs the browser driver on one case; returns a short summary. The
    screenshot is <build>/html-report/<shot or case>.png."""
    _driver_ready()
    out = _out_dir(env)
    spec = {"case": case, "html": html, "json": json_path,
            "screenshot": os.path.join(out, (shot or case) + ".png"), "expect": expect or {}}
    spec.update(extra)
    spec_path = os.path.join(env.tmp, "case-%s.json" % case)
    with open(spec_path, "w", encoding="utf-8") as f:
        json.dump(spec, f)
    proc = subprocess.run(["node", DRIVER, spec_path], capture_output=True, text=True,
                          timeout=240, cwd=env.root, env=outside_env())
    lines = proc.stdout.splitlines()
    fails = [l for l in lines if l.startswith("FAIL ")]
    passes = [l for l in lines if l.startswith("PASS ")]
    if proc.returncode == 3:
        raise AssertionError("the browser could not be started: %s" % (proc.stdout + proc.stderr)[-1500:])
    check(proc.returncode == 0 and not fails and passes,
          "browser checks failed (exit %d):\n%s\n%s" % (proc.returncode, "\n".join(fails[:12]),
                                                       proc.stderr[-1500:]))
    return "%d browser checks" % len(passes)


def _write_json(env, name, doc):
    path = os.path.join(env.tmp, name)
    with open(path, "w", encoding="utf-8") as f:
        # sonde's layout: one line per file entry, ", " and ": " between
        # items; raw '<', '>' and '&' stay raw (sonde would escape them).
        f.write(json.dumps(doc, ensure_ascii=False, separators=(", ", ": ")))
    return path


# ---- real profiles ------------------------------------------------------------


def test_demo_report(env):
    """examples/demo.py through `sonde run --json` and `sonde view`."""
    demo = os.path.join(env.root, "examples", "demo.py")
    out = _out_dir(env)
    json_path = os.path.join(out, "demo.json")
    proc = env.run_sonde(["run", "--json", "-o", json_path, demo])
    check(proc.returncode == 0, proc.stderr)
    html = _view(env, json_path, os.path.join(out, "demo.html"))
    return _drive(env, "report", html, json_path, shot="demo")


def test_injection_program(env):
    """Markup in a profiled program's source, file name, function names and
    arguments renders as text and runs nothing."""
    script = env.write(INJECTION_FILE, INJECTION_PROGRAM)
    json_path = os.path.join(env.tmp, "inject.json")
    proc = env.run_sonde(["run", "--json", "-o", json_path, script, SCRIPT_PAYLOAD, FLAG_PAYLOAD])
    check(proc.returncode == 0, proc.stderr)
    with open(json_path, encoding="utf-8") as f:
        prof = json.load(f)
    paths = list(prof["files"])
    check(any(os.path.basename(p) == INJECTION_FILE for p in paths), "file not profiled: %s" % paths)
    names = [fn["line"] for p in paths for fn in prof["files"][p]["functions"]]
    renamed = FLAG_PAYLOAD if env.version >= (3, 11) else SCRIPT_PAYLOAD  # co_qualname from 3.11
    check(renamed in names, "the renamed function is not in the profile: %s" % names)
    html = _view(env, json_path, os.path.join(_out_dir(env), "injection.html"))
    with open(html, encoding="utf-8") as f:
        page = f.read()
    for payload in (SCRIPT_PAYLOAD, IMG_PAYLOAD, FLAG_PAYLOAD, "<img"):
        check(payload not in page, "the page holds %r unescaped" % payload)
    scripts = _page_scripts(env)
    visible = [SCRIPT_PAYLOAD, INJECTION_FILE, renamed,
               "# </script><script>alert(1)</script> " + IMG_PAYLOAD, FLAG_PAYLOAD]
    return _drive(env, "injection", html, json_path, {"scripts": scripts, "visible_text": visible})


def _page_scripts(env):
    """Script elements a page has: the data element and one per viewer script."""
    viewer = os.path.join(env.lib, "sonde", "viewer")
    return 1 + len([f for f in os.listdir(viewer) if f.endswith(".js") and not f.startswith(".")])


def test_injection_raw_json(env):
    """A JSON file not written by sonde, with raw '<', '>' and '&' in every
    string (Python's json.dumps does not escape them): `sonde view` escapes
    them when embedding, and the viewer shows them as text — in the tables,
    the summaries, the flame graph and the tooltips."""
    p1, p2 = "/tmp/" + SCRIPT_PAYLOAD + ".py", "/srv/" + IMG_PAYLOAD + ".py"
    line = {"lineno": 1, "line": SCRIPT_PAYLOAD + FLAG_PAYLOAD, "n_cpu_percent_python": 60,
            "n_cpu_percent_c": 0, "n_sys_percent": 0, "n_samples": 6, "n_avg_mb": 1, "n_peak_mb": 2,
            "n_malloc_mb": 5, "n_mallocs": 3, "n_python_fraction": 0.5, "n_usage_fraction": 0.5,
            "n_copy_mb_s": 1, "memory_samples": [[0, 1], [1, 2]], "n_gpu_percent": 10,
            "n_gpu_avg_memory_mb": 1, "n_gpu_peak_memory_mb": 2}
    doc = {
        "program": SCRIPT_PAYLOAD, "args": [FLAG_PAYLOAD, "</style><style>*{display:none}</style>"],
        "python_version": IMG_PAYLOAD, "elapsed_time_sec": 1, "interval_sec": 0.01, "n_samples": 10,
        "profiled_time_sec": 1, "cpu_percent_python": 100, "cpu_percent_c": 0, "sys_percent": 0,
        "memory": True, "max_footprint_mb": 10, "max_footprint_fname": FLAG_PAYLOAD,
        "max_footprint_lineno": 1, "samples": [[0, 1], [1, 10]], "gpu": True,
        "gpu_device": SCRIPT_PAYLOAD,
        "files": {
            p1: {"percent_cpu_time": 60, "lines": [line],
                 "functions": [dict(line, line=FLAG_PAYLOAD)],
                 "leaks": {"1": {"likelihood": 0.9, "velocity_mb_s": 1}},
                 "source": [SCRIPT_PAYLOAD + FLAG_PAYLOAD, "<!-- " + IMG_PAYLOAD]},
            p2: {"percent_cpu_time": 40, "lines": [dict(line, n_cpu_percent_python=40)],
                 "functions": [dict(line, line=SCRIPT_PAYLOAD)]},
        },
        "call_stacks": {
            "frames": [{"name": SCRIPT_PAYLOAD, "file": p1, "line": 1},
                       {"name": FLAG_PAYLOAD, "file": p2, "line": 1}],
            "threads": [IMG_PAYLOAD],
            "samples": [{"frames": [0, 1], "thread": 0, "count": 5, "sec": 0.5},
                        {"frames": [0], "thread": 0, "count": 5, "sec": 0.5}],
        },
    }
    json_path = _write_json(env, "raw.json", doc)
    with open(json_path, encoding="utf-8") as f:
        check("</script>" in f.read(), "the hand-written JSON has no raw </script>")
    html = _view(env, json_path, os.path.join(_out_dir(env), "injection-raw.html"))
    with open(html, encoding="utf-8") as f:
        page = f.read()
    data = page.split('id="sonde-profile">', 1)[1].split("</script>", 1)[0]
    check("<" not in data and ">" not in data and "&" not in data, "raw markup left in the data element")
    visible = [SCRIPT_PAYLOAD, FLAG_PAYLOAD, IMG_PAYLOAD, "</style><style>*{display:none}</style>",
               "<!-- " + IMG_PAYLOAD, p1, p2]
    return _drive(env, "injection", html, json_path,
                  {"scripts": _page_scripts(env), "visible_text": visible}, shot="injection-raw")


def test_parity_with_terminal(env):
    """One model, two writers: the HTML shows the terminal report's figures,
    lines, functions and headers (default and all-lines)."""
    writer = os.path.join(env.build, "tests", "test_report_html")
    out = os.path.join(env.tmp, "parity")
    os.makedirs(out)
    proc = env.run([writer, "--write", out, os.path.join(env.lib, "sonde", "viewer")])
    check(proc.returncode == 0, proc.stderr)
    shutil.copy(os.path.join(out, "parity.html"), os.path.join(_out_dir(env), "parity.html"))
    return _drive(env, "parity", os.path.join(out, "parity.html"), os.path.join(out, "parity.json"),
                  text=os.path.join(out, "parity.txt"), text_all=os.path.join(out, "parity_all.txt"))


# ---- hand-written profiles: what sonde does not write yet ------------------------


def _memory_profile(src_path):
    src = ["import numpy as np", "", "def load(n):", "    data = [0] * n  # allocates",
           "    blob = bytearray(n)", "    return data, blob", "", "def leak(store):",
           "    store.append(bytearray(10 ** 6))", "", "store = []", "for i in range(100):",
           "    leak(store)", "x = load(10 ** 7)", "y = np.ones(10 ** 6)"]

    def line(no, py, c, sys_, **mem):
        entry = {"lineno": no, "line": src[no - 1], "n_cpu_percent_python": py, "n_cpu_percent_c": c,
                 "n_sys_percent": sys_, "n_samples": int(py + c + sys_)}
        entry.update(mem)
        return entry
    zero_mem = dict(n_malloc_mb=0, n_mallocs=0, n_avg_mb=0, n_peak_mb=0, n_python_fraction=0,
                    n_usage_fraction=0, n_copy_mb_s=0, memory_samples=[], n_gpu_percent=0,
                    n_gpu_avg_memory_mb=0, n_gpu_peak_memory_mb=0, n_gc_percent=0)
    lines = [
        line(4, 30, 10, 0, **dict(zero_mem, n_gc_percent=75, n_malloc_mb=76.3, n_mallocs=12, n_avg_mb=40.5,
                                  n_peak_mb=76.3, n_python_fraction=0.8, n_usage_fraction=0.25,
                                  memory_samples=[[0.1, 10], [0.2, 40], [0.3, 76.3], [0.4, 20.5]])),
        line(5, 0.2, 0.3, 0, **dict(zero_mem, n_malloc_mb=95.4, n_mallocs=9, n_avg_mb=95.4,
                                    n_peak_mb=95.4, n_python_fraction=0, n_usage_fraction=0.3,
                                    n_copy_mb_s=12.5, memory_samples=[[0.5, 95.4]])),
        line(9, 5, 5, 0, **dict(zero_mem, n_malloc_mb=100, n_mallocs=100, n_avg_mb=50,
                                n_peak_mb=100, n_python_fraction=0.1, n_usage_fraction=0.31,
                                memory_samples=[[0.6, 10], [0.7, 60], [0.8, 100]])),
        line(15, 5, 44.5, 5, **dict(zero_mem, n_malloc_mb=7.6, n_mallocs=1, n_avg_mb=7.6,
                                    n_peak_mb=7.6, n_python_fraction=0, n_usage_fraction=0.02,
                                    n_copy_mb_s=3.25, n_gc_percent=10, n_gpu_percent=45.2, n_gpu_avg_memory_mb=800,
                                    n_gpu_peak_memory_mb=1536)),
    ]
    funcs = [dict(l, line=n, lineno=no) for l, n, no in ((lines[0], "load", 3), (lines[2], "leak", 8))]
    return {
        "program": "mem.py", "args": [], "python_version": "3.11.7", "elapsed_time_sec": 1.5,
        "interval_sec": 0.01, "n_samples": 105, "profiled_time_sec": 1.05, "cpu_percent_python": 40.2,
        "cpu_percent_c": 59.8 - 5, "sys_percent": 5, "memory": True, "max_footprint_mb": 279.3,
        "max_footprint_fname": src_path, "max_footprint_lineno": 14,
        "samples": [[0.0, 1.0], [0.3, 80.5], [0.6, 200.25], [0.9, 279.3], [1.2, 150.0]],
        "growth_rate": 14900, "gpu": True, "gpu_device": "NVIDIA H100 80GB HBM3", "gpu_per_process": True,
        "gpu_percent": 38.5, "gpu_avg_memory_mb": 640, "gpu_peak_memory_mb": 1536,
        "gc": True, "gc_percent": 30.1,
        "figures": [{"source": "gpu", "key": "n_gpu_percent", "title": "GPU util", "unit": "level_percent"},
                    {"source": "gc", "key": "n_gc_percent", "title": "GC", "unit": "level_percent"}],
        "files": {src_path: {"percent_cpu_time": 100, "lines": lines, "functions": funcs,
                             "leaks": {"9": {"likelihood": 0.95, "velocity_mb_s": 1.5}},
                             "source": src}},
    }


def test_memory_gpu_leaks(env):
    """Memory, copy, GPU and garbage-collection columns (the last from the
    "figures" list), sparklines, the footprint chart, leaks."""
    src_path = os.path.join(env.tmp, "mem.py")
    doc = _memory_profile(src_path)
    json_path = _write_json(env, "mem.json", doc)
    html = _view(env, json_path, os.path.join(_out_dir(env), "memory.html"))
    expect = {
        "file": src_path,
        "cells": {
            "4": {"avg": "40.5 MB", "peak": "76.3 MB", "copy": "", "gpu": "", "gpumem": "",
                  "timeline": "25%", "python": "30.0%", "native": "10.0%", "fig-n_gc_percent": "75.0%"},
            "5": {"avg": "95.4 MB", "peak": "95.4 MB", "copy": "13 MB/s", "python": "0.2%", "native": "0.3%",
                  "fig-n_gc_percent": ""},
            "15": {"avg": "7.6 MB", "copy": "3.3 MB/s", "gpu": "45.2%", "gpumem": "1.50 GB",
                   "native": "44.5%", "system": "5.0%", "fig-n_gc_percent": "10.0%"},
        },
        "memory_only_line": 5,
        "spark_line": 4, "spark_points": 4, "spark_highest": "76.3 MB",
        "peak_text": "76.3 MB", "python_share": "80.0%", "python_fraction": 0.8,
        "leak_line": 9, "leak_badge": "possible leak: 95% likely, 1.500 MB/s",
        "peak_summary": "Peak footprint 279 MB at %s:14" % src_path,
        "last_footprint": "150 MB",
        "gpu_summary": "NVIDIA H100 80GB HBM3: 38.5% mean utilisation, memory 640 MB mean, 1.50 GB peak",
        "growth": "The footprint grew 14900.0% over the run",
    }
    return _drive(env, "memory", html, json_path, expect)


def _stacks_profile():
    frames = [{"name": "<module>", "file": "/app/main.py", "line": 30},
              {"name": "main", "file": "/app/main.py", "line": 25},
              {"name": "compute", "file": "/app/work.py", "line": 10},
              {"name": "inner_loop", "file": "/app/work.py", "line": 4},
              {"name": "load_data", "file": "/app/io.py", "line": 7},
              {"name": "parse", "file": "/app/io.py", "line": 20},
              {"name": "worker", "file": "/app/main.py", "line": 40},
              {"name": "compute", "file": "/app/work.py", "line": 12}]
    samples = [
        {"frames": [0, 1, 2, 3], "thread": 0, "count": 50, "sec": 0.5},
        {"frames": [0, 1, 2, 3], "thread": 0, "count": 10, "sec": 0.1},  # same function, merged
        {"frames": [0, 1, 7], "thread": 0, "count": 10, "sec": 0.1},     # compute, another line
        {"frames": [0, 1, 4, 5], "thread": 0, "count": 20, "sec": 0.2},
        {"frames": [0, 1, 4], "thread": 0, "count": 5, "sec": 0.05},
        {"frames": [6, 2, 3], "thread": 1, "count": 5, "sec": 0.05},
    ]
    return {"program": "main.py", "args": [], "elapsed_time_sec": 1.0, "interval_sec": 0.01,
            "n_samples": 100, "profiled_time_sec": 1.0, "cpu_percent_python": 100, "cpu_percent_c": 0,
            "sys_percent": 0, "files": {},
            "call_stacks": {"frames": frames, "threads": ["MainThread", "worker-1"], "samples": samples}}


def test_flame_graph(env):
    """Click to zoom, search, hover for counts and percent, one thread."""
    json_path = _write_json(env, "stacks.json", _stacks_profile())
    html = _view(env, json_path, os.path.join(_out_dir(env), "flame.html"))
    expect = {
        "total_count": 100,
        "zoom_name": "compute", "zoom_share": 0.7, "zoom_count": 70, "zoom_percent": "70.00%",
        "sibling_name": "load_data",
        "search": "io.py", "search_matches": ["load_data", "parse"],
        "search_status": "2 matching frames, 25.0% of all",
        "thread_value": "1", "thread_count": 5,
    }
    return _drive(env, "flame", html, json_path, expect)


def test_run_stacks_flame(env):
    """`sonde run --stacks` (a real profile's call stacks) in the flame graph."""
    script = env.write("deep.py", """\
        import time
        def leaf(s):
            end = time.perf_counter() + s
            while time.perf_counter() < end: pass
        def middle(s): leaf(s)
        def top(s): middle(s)
        top(0.4)
        """)
    json_path = os.path.join(env.tmp, "deep.json")
    proc = env.run_sonde(["run", "--stacks", "--json", "-o", json_path, script])
    check(proc.returncode == 0, proc.stderr)
    with open(json_path, encoding="utf-8") as f:
        prof = json.load(f)
    if "call_stacks" not in prof:
        raise Skip("`sonde run --stacks` records no call stacks yet")
    names = {fr["name"] for fr in prof["call_stacks"]["frames"]}
    check({"top", "middle", "leaf"} <= names, "stack frames: %s" % names)
    html = _view(env, json_path, os.path.join(_out_dir(env), "run-stacks.html"))
    samples = prof["call_stacks"]["samples"]
    frames = prof["call_stacks"]["frames"]
    by_sec = any(s["sec"] > 0 for s in samples)
    weight = lambda s: s["sec"] if by_sec else s["count"]  # noqa: E731
    all_w = sum(weight(s) for s in samples)
    top_w = sum(weight(s) for s in samples if any(frames[i]["name"] == "top" for i in s["frames"]))
    expect = {
        "total_count": sum(s["count"] for s in samples),
        "zoom_name": "top", "zoom_share": top_w / all_w,
        "zoom_count": sum(s["count"] for s in samples if any(frames[i]["name"] == "top" for i in s["frames"])),
        "zoom_percent": "%.2f%%" % (100 * top_w / all_w), "sibling_name": None,
        "search": "leaf", "search_matches": ["leaf"],
        "search_status": None, "thread_value": "0", "thread_count": None,
    }
    return _drive(env, "flame", html, json_path, expect, shot="run-stacks")


def test_run_memory_report(env):
    """`sonde run --memory` (a real memory profile) in the viewer."""
    script = env.write("alloc.py", """\
        import time
        keep = []
        def grow(n):
            for _ in range(n):
                keep.append(bytearray(1 << 20))  # 1 MB each, kept
        def churn(n):
            for _ in range(n):
                b = [0] * 200000  # freed again
        grow(150)
        churn(200)
        end = time.perf_counter() + 0.2
        while time.perf_counter() < end: pass
        """)
    json_path = os.path.join(env.tmp, "alloc.json")
    proc = env.run_sonde(["run", "--memory", "--json", "-o", json_path, script])
    if proc.returncode != 0 or not os.path.exists(json_path):
        raise Skip("`sonde run --memory` gave no profile here: %s" % proc.stderr.strip()[-300:])
    with open(json_path, encoding="utf-8") as f:
        prof = json.load(f)
    check(prof.get("memory") is True, "no memory figures in the profile")
    html = _view(env, json_path, os.path.join(_out_dir(env), "run-memory.html"))
    return _drive(env, "realmemory", html, json_path, shot="run-memory")


def _big_profile(path, every, memory):
    """A 1,000-line program with every `every`-th line sampled, as sonde's
    JSON would hold it (figures rounded as the writer rounds them)."""
    src = ["x_%d = sum(i * %d for i in range(100))  # line %d of the program" % (i, i, i)
           for i in range(1, 1001)]
    lines = []
    for i in range(1, 1001, every):
        entry = {"lineno": i, "line": src[i - 1], "n_cpu_percent_python": 0.0612,
                 "n_cpu_percent_c": 0.0234, "n_sys_percent": 0.0154, "n_samples": 1}
        if memory:
            entry.update({"n_malloc_mb": 0.5, "n_mallocs": 1, "n_avg_mb": 0.25, "n_peak_mb": 0.5,
                          "n_python_fraction": 0.5, "n_usage_fraction": 0.001, "n_copy_mb_s": 0,
                          "memory_samples": [[round(0.001 * i, 3), 0.25], [round(0.001 * i + 0.01, 3), 0.5]]})
        lines.append(entry)
    funcs = [dict(lines[i], line="function_%d" % i, lineno=lines[i]["lineno"]) for i in range(0, len(lines), 10)]
    doc = {"program": "big.py", "args": [], "python_version": "3.11.7", "elapsed_time_sec": 10,
           "interval_sec": 0.01, "n_samples": 1000, "profiled_time_sec": 10, "cpu_percent_python": 60,
           "cpu_percent_c": 20, "sys_percent": 20,
           "files": {path: {"percent_cpu_time": 100, "lines": lines, "functions": funcs, "source": src}}}
    if memory:
        doc.update({"memory": True, "max_footprint_mb": 500,
                    "samples": [[round(0.01 * i, 2), i / 2] for i in range(100)]})
    return doc


def test_large_profile_page_size(env):
    """Pages for a 1,000-line program stay under 500 KB: CPU-only with every
    line sampled, and with memory figures on half its lines; the worst case
    (memory figures on every line) is measured and shown in the browser."""
    path = os.path.join(env.tmp, "big.py")
    sizes = {}
    for name, every, memory in (("cpu-all", 1, False), ("memory-half", 2, True), ("memory-all", 1, True)):
        json_path = _write_json(env, name + ".json", _big_profile(path, every, memory))
        html = _view(env, json_path, os.path.join(_out_dir(env), "large-%s.html" % name))
        sizes[name] = os.path.getsize(html)
    check(sizes["cpu-all"] < 500 * 1024, "CPU-only page of a 1,000-line program: %d bytes" % sizes["cpu-all"])
    check(sizes["memory-half"] < 500 * 1024, "memory page, 500 lines sampled: %d bytes" % sizes["memory-half"])
    note = _drive(env, "large", os.path.join(_out_dir(env), "large-memory-all.html"),
                  os.path.join(env.tmp, "memory-all.json"), {"rows": 1000, "max_ms": 8000})
    return "%s; pages: %s" % (note, ", ".join("%s %d KB" % (k, v // 1024) for k, v in sizes.items()))


# ---- the command ----------------------------------------------------------------


def _one_line_error(proc, *words):
    err = proc.stderr.strip()
    check(proc.returncode != 0, "exit status 0 for an error; stderr: %r" % err)
    check(len(err.splitlines()) == 1, "error is not one line: %r" % err)
    check(err.startswith("sonde: "), "error does not start with 'sonde: ': %r" % err)
    for w in words:
        check(w in err, "error %r does not mention %r" % (err, w))


def test_view_errors(env):
    missing = os.path.join(env.tmp, "missing.json")
    out = os.path.join(env.tmp, "out.html")
    _one_line_error(env.run_sonde(["view", missing, "-o", out]), "missing.json", "No such file")
    bad = env.write("bad.json", '{"files": {"a.py": {"lines": [}}}\n')
    _one_line_error(env.run_sonde(["view", bad, "-o", out]), "bad.json", "not a sonde profile",
                    "not valid JSON", "line 1")
    multi = env.write("multi.json", '{"files": {}}\n{"files": {}}\n')
    _one_line_error(env.run_sonde(["view", multi, "-o", out]), "not valid JSON", "line 2")
    for text, why in (('{"x": 1}', '"files"'), ('[1, 2]', "not an object"),
                      ('{"files": []}', '"files"'), ('{"files": {"a": 3}}', "not an object"),
                      ('{"files": {"a": {"lines": [{"line": "x"}]}}}', "lineno"),
                      ('{"files": {}, "call_stacks": []}', "call_stacks")):
        path = env.write("np.json", text)
        _one_line_error(env.run_sonde(["view", path, "-o", out]), "not a sonde profile", why)
    binary = os.path.join(env.tmp, "bin.json")
    with open(binary, "wb") as f:
        f.write(b'{"files": {}}\0garbage')
    _one_line_error(env.run_sonde(["view", binary, "-o", out]), "NUL")
    check(not os.path.exists(out), "a page was written for a bad profile")

    good = env.write("good.json", '\ufeff{"files": {}}\n')  # a byte-order mark is fine
    for target in (os.path.join(env.tmp, "no", "such", "dir", "p.html"), env.tmp):
        _one_line_error(env.run_sonde(["view", good, "-o", target]), "cannot write")
    _one_line_error(env.run_sonde(["view"]), "no profile")
    _one_line_error(env.run_sonde(["view", good, good]), "one too many")
    _one_line_error(env.run_sonde(["view", "--bogus", good]), "--bogus")
    _one_line_error(env.run_sonde(["view", good, "-o"]), "-o")
    helped = env.run_sonde(["view", "--help"])
    check(helped.returncode == 0 and "usage: sonde view" in helped.stdout, helped.stdout)
    top = env.run_sonde(["--help"])
    check("view" in top.stdout, "sonde --help does not list view")

    # A viewer that is missing: one line naming where it looked.
    lib_copy = os.path.join(env.tmp, "prefix")
    os.makedirs(os.path.join(lib_copy, "bin"))
    os.makedirs(os.path.join(lib_copy, "lib", "sonde"))
    shutil.copy(env.sonde, os.path.join(lib_copy, "bin", "sonde"))
    proc = env.run([os.path.join(lib_copy, "bin", "sonde"), "view", good, "-o", out])
    _one_line_error(proc, "viewer", "make")


def test_view_writes_and_opens(env):
    """Without -o: profile.html beside the JSON, opened with $BROWSER;
    without a browser, only where the file is. -o - writes to stdout;
    python3 -m sonde view runs the command."""
    prof = env.write("run1.json", '{"files": {}, "program": "p.py"}\n')
    opener = env.write("opener.sh", "#!/bin/sh\necho \"$@\" > %s\n" % os.path.join(env.tmp, "opened"))
    os.chmod(opener, os.stat(opener).st_mode | stat.S_IEXEC)
    proc = env.run_sonde(["view", prof], env={"BROWSER": opener + " --new-window %s"})
    html = os.path.join(env.tmp, "run1.html")
    check(proc.returncode == 0 and os.path.exists(html), proc.stderr)
    check(html in proc.stdout and "opened with" in proc.stdout, proc.stdout)
    opened = os.path.join(env.tmp, "opened")
    for _ in range(100):
        if os.path.exists(opened) and open(opened).read().strip():
            break
        time.sleep(0.05)
    check(os.path.exists(opened) and open(opened).read().strip() == "--new-window " + html,
          "the browser was not started with the page")

    os.remove(html)
    no_browser = {"BROWSER": "", "DISPLAY": "", "WAYLAND_DISPLAY": ""}
    proc = env.run_sonde(["view", prof], env=no_browser)
    check(proc.returncode == 0 and os.path.exists(html) and "open it in a web browser" in proc.stdout,
          proc.stdout + proc.stderr)
    proc = env.run_sonde(["view", prof], env={"BROWSER": "/nonexistent/browser"})
    check(proc.returncode == 0 and "could not start" in proc.stdout, proc.stdout + proc.stderr)

    other = env.write("data.txt", '{"files": {}}')
    proc = env.run_sonde(["view", other], env=no_browser)
    check(proc.returncode == 0 and os.path.exists(other + ".html"), proc.stdout + proc.stderr)

    proc = env.run_sonde(["view", prof, "-o", "-"])
    check(proc.returncode == 0 and proc.stdout.startswith("<!DOCTYPE html>"), proc.stderr)

    out = os.path.join(env.tmp, "via-python.html")
    proc = env.run([env.python, "-m", "sonde", "view", prof, "-o", out],
                   env={"PYTHONPATH": env.lib})
    check(proc.returncode == 0 and os.path.exists(out), "python -m sonde view: %s" % proc.stderr)


def test_view_keeps_files_it_did_not_write(env):
    """view never replaces a file that is not a report of sonde's (the
    user's own notes.html beside notes.json) without --force; a report it
    wrote is replaced as before, and -o to a new name is written."""
    prof = env.write("notes.json", '{"files": {}, "program": "p.py"}\n')
    mine = env.write("notes.html", "<p>my own notes</p>\n")
    no_browser = {"BROWSER": "", "DISPLAY": "", "WAYLAND_DISPLAY": ""}
    for extra in ([], ["-o", mine]):
        proc = env.run_sonde(["view", prof] + extra, env=no_browser)
        check(proc.returncode == 1 and proc.stderr.count("\n") == 1
              and "notes.html exists and is not a report sonde wrote" in proc.stderr
              and "--force" in proc.stderr, "%s: exit %d, %r" % (extra, proc.returncode, proc.stderr))
        with open(mine, encoding="utf-8") as f:
            check(f.read() == "<p>my own notes</p>\n", "the user's file was changed")
    proc = env.run_sonde(["view", prof, "--force"], env=no_browser)
    check(proc.returncode == 0, "--force: %s" % proc.stderr)
    with open(mine, encoding="utf-8") as f:
        check('content="sonde ' in f.read(), "--force did not replace it")
    proc = env.run_sonde(["view", prof], env=no_browser)
    check(proc.returncode == 0, "replacing its own report: %s" % proc.stderr)


def test_odd_profile_renders(env):
    """Valid JSON of the wrong types and ranges (strings for numbers, missing
    fields, negative and huge line numbers, bad frame indices): the viewer
    shows what it can and raises no error."""
    doc = {
        "program": 42, "args": "not a list", "elapsed_time_sec": "1", "n_samples": None,
        "cpu_percent_python": "50", "samples": [[0, "x"], "y", [1]], "memory": True,
        "processes": [None, {"pid": "x", "cmdline": 5, "complete": "no"}, 7, {}],
        "files": {
            "odd.py": {"percent_cpu_time": "high", "source": "not a list",
                       "lines": [{"lineno": -5, "n_cpu_percent_python": 50},
                                 {"lineno": 3.7, "line": 7, "n_cpu_percent_c": "9"},
                                 {"lineno": 10 ** 9, "n_sys_percent": 1e308, "memory_samples": {"a": 1}},
                                 {"lineno": 2, "n_peak_mb": -3, "n_python_fraction": 7}],
                       "functions": [{"lineno": 1}, {"lineno": 2, "line": None}],
                       "leaks": {"x": 1, "2": [0.5], "3": {"likelihood": "y"}}},
            "__proto__": {"lines": [{"lineno": 1, "n_cpu_percent_python": 5}]},
            "empty.py": {},
        },
        "call_stacks": {"frames": [{"name": "a"}, None, 5, {"name": "b", "file": 3, "line": "x"}],
                        "threads": [None],
                        "samples": [{"frames": [0, 1, 99, -1, "x", 3], "thread": 0, "count": 3, "sec": "s"},
                                    {"frames": "no", "count": 1}, {"count": -4}, 7]},
    }
    json_path = _write_json(env, "odd.json", doc)
    html = _view(env, json_path, os.path.join(env.tmp, "odd.html"))
    return _drive(env, "robust", html, json_path, {"sections": 3, "file": "odd.py"}, shot="odd")


def test_merged_processes(env):
    """`sonde merge` of two profiles, viewed: the header says two processes
    were profiled and the process table lists both (pid, ppid, command
    line), as the merged JSON has them."""
    inputs = []
    for i, (pid, cmd) in enumerate(((4242, "python3 main.py"), (4250, "python3 -c 'x <b>'"))):
        doc = _stacks_profile()
        doc["processes"] = [{"pid": pid, "ppid": 4240, "cmdline": cmd, "cpu_sec": 1.5 + i,
                             "wall_sec": 2.0, "peak_mb": 20.5, "complete": i == 0}]
        inputs.append(_write_json(env, "proc%d.json" % i, doc))
    json_path = os.path.join(env.tmp, "merged.json")
    proc = env.run_sonde(["merge"] + inputs + ["-o", json_path])
    check(proc.returncode == 0, "sonde merge: %s" % proc.stderr)
    with open(json_path, encoding="utf-8") as f:
        check(len(json.load(f)["processes"]) == 2, "merged profile without two processes")
    html = _view(env, json_path, os.path.join(_out_dir(env), "processes.html"))
    return _drive(env, "processes", html, json_path)


def test_view_mutated_inputs(env):
    """Damaged and odd profiles: `sonde view` writes a page or gives one
    line of error, and never crashes (cJSON and the shape check together)."""
    doc = _memory_profile("/app/mem.py")
    doc["call_stacks"] = _stacks_profile()["call_stacks"]
    text = json.dumps(doc).encode("utf-8")
    rng = random.Random(6)
    out = os.path.join(env.tmp, "m.html")
    path = os.path.join(env.tmp, "m.json")
    outcomes = {"page": 0, "error": 0}
    for i in range(300):
        data = bytearray(text)
        kind = i % 4
        if kind == 0:
            del data[rng.randrange(len(data)):]
        elif kind == 1:
            for _ in range(rng.randint(1, 8)):
                data[rng.randrange(len(data))] = rng.choice(b'{}[]",:0\\\x00\xff<>&e-.')
        elif kind == 2:
            at = rng.randrange(len(data))
            data[at:at] = rng.choice([b"[" * 5000, b"{\"a\":" * 3000, b"\"\\u0000\"", b"1e999999"])
        else:
            start = rng.randrange(len(data))
            del data[start:start + rng.randint(1, 200)]
        with open(path, "wb") as f:
            f.write(bytes(data))
        proc = env.run_sonde(["view", path, "-o", out])
        check(proc.returncode in (0, 1), "exit %d on mutation %d: %s" % (proc.returncode, i, proc.stderr[-300:]))
        if proc.returncode == 0:
            outcomes["page"] += 1
            with open(out, encoding="utf-8", errors="replace") as f:
                page = f.read()
            body = page.split('id="sonde-profile">', 1)[1].split("</script>", 1)[0]
            check("<" not in body and ">" not in body, "raw markup embedded on mutation %d" % i)
        else:
            outcomes["error"] += 1
            _one_line_error(proc, "not a sonde profile")
    return "%(page)d pages, %(error)d one-line errors" % outcomes


def test_extension_does_not_link_cjson(env):
    """cJSON is the command's alone: the extension module never loads it."""
    lib = os.path.join(env.lib, "sonde")
    ext = [f for f in os.listdir(lib) if f.startswith("_sonde") and f.endswith(".so")]
    check(ext, "no extension module in %s" % lib)
    if not shutil.which("ldd"):
        raise Skip("no ldd")
    deps = subprocess.run(["ldd", os.path.join(lib, ext[0])], capture_output=True, text=True).stdout
    check("cjson" not in deps, "the extension links cJSON:\n" + deps)
    deps = subprocess.run(["ldd", env.sonde], capture_output=True, text=True).stdout
    check("cjson" in deps, "the command does not link cJSON:\n" + deps)
