"""Helpers for the attach tests (tests/e2e/test_attach*.py): starting a live
target, and strict readers of the outputs of `sonde attach/record`: folded
stacks, the SVG flame graph, speedscope JSON and sonde's JSON report."""
import json
import os
import re
import signal
import subprocess
import time
import xml.etree.ElementTree as ET

from support import check

PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs", "attach")
SPEEDSCOPE_SCHEMA = "https://www.speedscope.app/file-format-schema.json"
SVG_NS = "{http://www.w3.org/2000/svg}"


def program(name):
    return os.path.join(PROGRAMS, name)


class Target:
    """A Python program running under test: started with `python script
    args`, ready once it printed "ready"; killed on exit."""

    def __init__(self, env, script, args=(), ready_timeout=20, python_flags=()):
        self.proc = subprocess.Popen([env.python] + list(python_flags) + [script]
                                     + [str(a) for a in args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     cwd=env.tmp, env=env.base_env())
        deadline = time.time() + ready_timeout
        line = b""
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if line.strip() == b"ready" or not line:
                break
        if line.strip() != b"ready":
            self.stop()
            raise AssertionError("target %s never got ready: %r" % (script, self.proc.stderr.read()))
        self.pid = self.proc.pid

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            stream.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def sonde_ok(proc, what):
    check(proc.returncode == 0, "%s: exit %d; stderr:\n%s" % (what, proc.returncode, proc.stderr[-3000:]))


# ---- folded stacks ------------------------------------------------------------------

FRAME_RE = re.compile(r"^(?P<func>.+) \((?P<file>.*?)(?::(?P<line>\d+))?\)$")


def parse_folded(text):
    """[(frames root first, count)]; checks every line's shape."""
    stacks = []
    check(text.endswith("\n") or not text, "folded output does not end with a newline")
    for line in text.splitlines():
        m = re.match(r"^(.+) (\d+)$", line)
        check(m, "folded line without a count: %r" % line)
        frames = m.group(1).split(";")
        check(all(frames), "empty frame in %r" % line)
        stacks.append((frames, int(m.group(2))))
    return stacks


def frame_parts(frame):
    """(func, file, line or None) of a folded frame; None for a thread name."""
    m = FRAME_RE.match(frame)
    if not m:
        return None
    return m.group("func"), m.group("file"), int(m.group("line")) if m.group("line") else None


def folded_share(stacks, pred):
    """Percentage of samples whose stack has a frame for which pred(func,
    file, line) holds."""
    total = sum(c for _, c in stacks)
    hit = 0
    for frames, count in stacks:
        if any(p and pred(*p) for p in map(frame_parts, frames)):
            hit += count
    return 100.0 * hit / total if total else 0.0


# ---- SVG ----------------------------------------------------------------------------------


def parse_svg(path):
    """The flame graph's frames as [(label, samples, title)]; checks it is XML
    with the script and the expected structure."""
    tree = ET.parse(path)
    root = tree.getroot()
    check(root.tag == SVG_NS + "svg", "root element is %s" % root.tag)
    scripts = root.findall(SVG_NS + "script")
    check(len(scripts) == 1 and "function zoom" in (scripts[0].text or ""), "script missing")
    group = root.find(SVG_NS + "g[@id='frames']")
    check(group is not None, "no frames group")
    frames = []
    for g in group.findall(SVG_NS + "g"):
        title = g.find(SVG_NS + "title")
        rect = g.find(SVG_NS + "rect")
        check(title is not None and rect is not None, "frame without title or rect")
        frames.append((g.get("data-l"), int(g.get("data-s")), title.text))
    # nothing but our own elements, whatever the names held
    for el in root.iter():
        tag = el.tag.replace(SVG_NS, "")
        check(tag in ("svg", "defs", "linearGradient", "stop", "style", "script", "rect", "text",
                      "g", "title"), "unexpected element %s" % tag)
        for attr in el.attrib:
            check(not attr.startswith("on") or (tag == "svg" and attr == "onload"),
                  "event attribute %s on %s" % (attr, tag))
    return frames


# ---- speedscope -----------------------------------------------------------------------------


def parse_speedscope(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    check(doc.get("$schema") == SPEEDSCOPE_SCHEMA, "schema: %r" % doc.get("$schema"))
    frames = doc["shared"]["frames"]
    check(isinstance(frames, list), "shared.frames is not a list")
    for fr in frames:
        check(isinstance(fr.get("name"), str), "frame without a name: %r" % fr)
    check(doc["profiles"], "no profiles")
    for p in doc["profiles"]:
        check(p["type"] == "sampled", "profile type %r" % p["type"])
        check(p["unit"] in ("nanoseconds", "none"), "unit %r" % p["unit"])
        check(len(p["samples"]) == len(p["weights"]), "samples and weights differ in length")
        for stack in p["samples"]:
            check(all(isinstance(i, int) and 0 <= i < len(frames) for i in stack),
                  "frame index out of range in %r" % stack)
        check(p["startValue"] == 0 and p["endValue"] == sum(p["weights"]), "start/end values")
    return doc


def speedscope_names(doc, profile):
    frames = doc["shared"]["frames"]
    return [[frames[i]["name"] for i in stack] for stack in profile["samples"]]


# ---- sonde's JSON report ----------------------------------------------------------------------


def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def function_totals(prof):
    """{function name: total percent} over every file of a JSON report."""
    out = {}
    for entry in prof["files"].values():
        for f in entry["functions"]:
            total = f["n_cpu_percent_python"] + f["n_cpu_percent_c"] + f["n_sys_percent"]
            out[f["line"]] = out.get(f["line"], 0.0) + total
    return out
