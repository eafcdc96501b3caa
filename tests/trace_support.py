"""Helpers for the tests of `sonde trace` (tests/e2e/test_trace*.py).

Statistics are always read by the interpreter under test, with its own
pstats module, and handed back as JSON keyed by pstats' standard names with
directories stripped ("prog.py:12(f)", "<built-in method builtins.len>"),
so the comparison with cProfile does not depend on the runner's Python.
"""
import glob
import json
import os
import re
import subprocess

import pythons
from support import check

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAMS = os.path.join(ROOT, "tests", "programs", "trace")

# Reads a pstats file (or, with --profile, the stats of a sonde.Profile run
# in the same process) and prints {name: [cc, nc, tt, ct, {caller: [nc, cc, tt, ct]}]}.
LOAD_STATS = r'''
import json, os, pstats, sys
stats = pstats.Stats(sys.argv[1]).stats
def name(key):
    f, l, n = key
    if f == "~" and l == 0:
        return n
    return "%s:%d(%s)" % (os.path.basename(f), l, n)
out = {}
for key, (cc, nc, tt, ct, callers) in stats.items():
    row = out.setdefault(name(key), [0, 0, 0.0, 0.0, {}])
    row[0] += cc; row[1] += nc; row[2] += tt; row[3] += ct
    for ckey, v in callers.items():
        c = row[4].setdefault(name(ckey), [0, 0, 0.0, 0.0])
        for i in range(4):
            c[i] += v[i]
json.dump(out, sys.stdout)
'''

# Rows only cProfile's own machinery produces.
CPROFILE_ONLY = ("<built-in method builtins.exec>", "<method 'disable' of '_lsprof.Profiler' objects>")


def program(name):
    return os.path.join(PROGRAMS, name)


def interpreters():
    """Every supported interpreter (path list), as tests/run.py finds them."""
    return [path for _, path, _ in pythons.find_interpreters()]


def load_stats(env, path, python=None):
    """The pstats file at path, read by python (default: env.python)."""
    script = os.path.join(env.tmp, "load_stats.py")
    if not os.path.exists(script):
        with open(script, "w") as f:
            f.write(LOAD_STATS)
    proc = subprocess.run([python or env.python, script, path], capture_output=True, text=True, timeout=120)
    check(proc.returncode == 0, "pstats (%s) cannot load %s:\n%s" % (python or env.python, path, proc.stderr[-2000:]))
    return normalise(json.loads(proc.stdout))


def normalise(stats):
    """Addresses in built-in names ("... at 0x7f...") differ between processes."""
    def norm(name):
        return re.sub(r"0x[0-9a-f]+", "0x?", name)
    return {norm(k): [v[0], v[1], v[2], v[3], {norm(c): x for c, x in v[4].items()}] for k, v in stats.items()}


def trace_stats(env, script, args=(), options=(), **kw):
    """Runs `sonde trace -o OUT options script args`; returns (process, stats)."""
    out = os.path.join(env.tmp, "trace-%d.prof" % len(os.listdir(env.tmp)))
    proc = env.run_sonde(["trace", "-o", out] + list(options) + [script] + list(args), **kw)
    check(os.path.exists(out), "sonde trace wrote no file; exit %d; stderr:\n%s" % (proc.returncode, proc.stderr[-3000:]))
    return proc, load_stats(env, out)


def cprofile_stats(env, script, args=()):
    """Runs `python -m cProfile -o OUT script args`; returns the stats."""
    out = os.path.join(env.tmp, "cprofile-%d.prof" % len(os.listdir(env.tmp)))
    proc = env.run_python(["-m", "cProfile", "-o", out, script] + list(args))
    check(proc.returncode == 0 and os.path.exists(out), "cProfile failed: %s" % proc.stderr[-2000:])
    return load_stats(env, out)


def function_key(path, name):
    """pstats' stripped name of the function `name` defined in path."""
    with open(path, encoding="utf-8") as f:
        for lineno, text in enumerate(f, 1):
            if re.match(r"\s*(async\s+)?def %s\(" % re.escape(name), text):
                return "%s:%d(%s)" % (os.path.basename(path), lineno, name)
    raise AssertionError("no function %s in %s" % (name, path))


def counts(row):
    return (row[0], row[1])


def compare_counts(ours, theirs, prog):
    """Call counts (primitive, total) of every function of the program file
    and of every call made from it must be cProfile's; so must the counts
    per caller. Rows of the import machinery are skipped (the modules
    cProfile imports for itself are already loaded in its run)."""
    prefix = prog + ":"
    problems = []
    for name in sorted(set(ours) | set(theirs)):
        if name.startswith("<frozen importlib") or name in CPROFILE_ONLY:
            continue
        a, b = ours.get(name), theirs.get(name)
        if name.startswith(prefix):
            if not a or not b:
                problems.append("%s: sonde %s, cProfile %s" % (name, a and counts(a), b and counts(b)))
                continue
            ca = {c: tuple(v[:2]) for c, v in a[4].items()}
            cb = {c: tuple(v[:2]) for c, v in b[4].items() if c not in CPROFILE_ONLY}
            if counts(a) != counts(b) or ca != cb:
                problems.append("%s: sonde %s callers %s; cProfile %s callers %s" % (name, counts(a), ca, counts(b), cb))
            continue
        # A function of elsewhere (a built-in, a library): the calls made
        # to it from the program file.
        ca = {c: tuple(v[:2]) for c, v in (a[4] if a else {}).items() if c.startswith(prefix)}
        cb = {c: tuple(v[:2]) for c, v in (b[4] if b else {}).items() if c.startswith(prefix)}
        if ca != cb:
            problems.append("%s called from %s: sonde %s, cProfile %s" % (name, prog, ca, cb))
    check(not problems, "counts differ from cProfile's:\n  " + "\n  ".join(problems[:20]))
    n_rows = sum(1 for name in ours if name.startswith(prefix))
    check(n_rows >= 3, "too few rows for %s: %s" % (prog, sorted(ours)))
    return n_rows


def check_times(stats, label):
    """tottime <= cumtime for every row (1 us of float slack), no negative times."""
    for name, (cc, nc, tt, ct, callers) in stats.items():
        check(tt >= -1e-9 and ct >= -1e-9, "%s: negative time in %s: tt %r ct %r" % (label, name, tt, ct))
        check(tt <= ct + 1e-6, "%s: tottime %r > cumtime %r for %s" % (label, tt, ct, name))
        check(cc <= nc, "%s: primitive calls %d > calls %d for %s" % (label, cc, nc, name))


REPORT_HEADER = re.compile(r"^ {9}(\d+) function calls(?: \((\d+) primitive calls\))? in (\d+\.\d{3}) seconds$")
REPORT_TITLE = "   ncalls  tottime  percall  cumtime  percall filename:lineno(function)"
# pstats' columns: "%9s " then four " %8.3f"-wide columns (blank for a zero
# count), then the standard name.
REPORT_ROW = re.compile(r"^([ \d/]{9}) ([ \d.]{8}) ([ \d.]{8}) ([ \d.]{8}) ([ \d.]{8}) (.+)$")


def parse_report(text):
    """Parses the report of `python -m cProfile` (or ours) at the end of a
    program's stdout: {"calls", "primitive", "seconds", "ordered_by",
    "rows": [(ncalls, tottime, percall, cumtime, percall, name)]}."""
    lines = text.split("\n")
    start = None
    for i, line in enumerate(lines):
        if REPORT_HEADER.match(line):
            start = i
    check(start is not None, "no report header in output:\n%s" % text[-2000:])
    m = REPORT_HEADER.match(lines[start])
    report = {"calls": int(m.group(1)), "primitive": int(m.group(2) or m.group(1)),
              "seconds": float(m.group(3)), "rows": []}
    check(lines[start + 1] == "", "no blank line after the header")
    check(lines[start + 2].startswith("   Ordered by: "), "no 'Ordered by' line: %r" % lines[start + 2])
    report["ordered_by"] = lines[start + 2][len("   Ordered by: "):]
    check(lines[start + 3] == "", "no blank line after 'Ordered by'")
    check(lines[start + 4] == REPORT_TITLE, "column titles differ: %r" % lines[start + 4])
    i = start + 5
    while lines[i] != "":
        m = REPORT_ROW.match(lines[i])
        check(m, "row does not have pstats' columns: %r" % lines[i])
        fields = [f.strip() for f in m.groups()]
        report["rows"].append((fields[0], float(fields[1]), fields[2], float(fields[3]), fields[4], fields[5]))
        i += 1
    check(lines[i:i + 2] == ["", ""] and all(l == "" for l in lines[i:]),
          "the report does not end as pstats' does: %r" % lines[i:])
    return report
