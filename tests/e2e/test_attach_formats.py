"""The outputs of sonde attach, read back strictly: folded lines parse, the
SVG is XML with the frames in it, speedscope JSON has the schema fields and
frame indices in range, and the JSON and text reports have the shape of
`sonde run`'s (same fields, same sections).

Issue #32: hot()'s share of the folded stacks and of the SVG's samples goes
through tests/accuracy.py: the truth by construction (hot() is all the
target runs), n the samples of the output read, a named systematic
allowance, and the Wilson interval at the suite's corrected confidence,
after checking that the samples can catch the defect the check was written
for. The JSON report's percentages adding up to 100 is exact: it stays so.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from attach_support import (Target, folded_share, load_json, parse_folded, parse_speedscope,  # noqa: E402
                            parse_svg, program, sonde_ok, speedscope_names)
from support import check  # noqa: E402
import accuracy  # noqa: E402
from accuracy import need_samples, samples_to_catch, share_at_least  # noqa: E402

VERSIONS = ("tiers: the writers of attach's outputs, read back strictly (attach's reading of each "
            "interpreter is test_attach's)")

OUTPUTS = ("flame.svg", "stacks.folded", "profile.speedscope.json", "report.json", "report.txt")

# Systematic allowance (percentage points) of hot()'s share, all the target
# runs after "ready" by construction: the first or last tick of the
# recording (as tests/e2e/test_attach.py's ATTACH_ALLOWANCE)
ATTACH_ALLOWANCE = 3.0
# The defect the checks were written for: stacks written without hot() (a
# frame dropped or garbled by the writer, time charged to its caller): a
# quarter of the samples.
FRAME_DEFECT = 25.0


def _hot_share(what, share, n):
    """Checks hot()'s share (percent) of an output's n samples; returns the
    note."""
    need_samples(what, n, samples_to_catch(1 - FRAME_DEFECT / 100.0, 1.0,
                                           ATTACH_ALLOWANCE / 100.0))
    return accuracy.check(share_at_least(what, share, n, 100, ATTACH_ALLOWANCE))


def _keys(obj):
    return set(obj) if isinstance(obj, dict) else set()


def test_attach_output_formats(env):
    script = program("hot.py")
    paths = {name: os.path.join(env.tmp, name) for name in OUTPUTS}
    with Target(env, script) as target:
        for name in OUTPUTS:
            proc = env.run_sonde(["attach", str(target.pid), "-d", "0.4", "-o", paths[name]])
            sonde_ok(proc, "attach -o %s" % name)
            check("written to %s" % paths[name] in proc.stderr, "summary: %r" % proc.stderr)
        stdout_run = env.run_sonde(["attach", str(target.pid), "-d", "0.3", "--format", "folded"])
        sonde_ok(stdout_run, "attach --format folded (stdout)")

    # folded
    with open(paths["stacks.folded"], encoding="utf-8") as f:
        stacks = parse_folded(f.read())
    notes = [_hot_share("hot() in the folded file", folded_share(
        stacks, lambda func, file, line: func == "hot" and file == script),
        sum(c for _, c in stacks))]
    stdout_stacks = parse_folded(stdout_run.stdout)
    notes.append(_hot_share("hot() in folded on stdout", folded_share(
        stdout_stacks, lambda func, file, line: func == "hot"), sum(c for _, c in stdout_stacks)))

    # SVG
    frames = parse_svg(paths["flame.svg"])
    labels = [label for label, _, _ in frames]
    check(labels and labels[0] == "all", "no root frame: %r" % labels[:3])
    hot = [f for f in frames if f[0].startswith("hot (%s:" % script)]
    check(hot, "hot() not in the SVG: %r" % labels[:10])
    total = frames[0][1]
    hot_samples = sum(s for _, s, _ in hot)
    notes.append(_hot_share("hot() in the SVG", 100.0 * hot_samples / total if total else 0.0,
                            total))
    title = re.search(r"\((\d+) samples?, [\d.]+%\)$", hot[0][2])
    check(title and int(title.group(1)) == hot[0][1], "title: %r (%d samples)" % (hot[0][2], hot[0][1]))

    # speedscope
    doc = parse_speedscope(paths["profile.speedscope.json"])
    names = [n for p in doc["profiles"] for n in speedscope_names(doc, p)]
    check(any(stack and stack[-1] == "hot" for stack in names), "hot() not a leaf: %r" % names[:3])
    check(all(stack[0] == "<module>" for stack in names if stack), "stacks not root first")

    # JSON: the fields of `sonde run --json`
    run_out = os.path.join(env.tmp, "run.json")
    run = env.run_sonde(["run", "--json", "-o", run_out, script, "0.3"])
    sonde_ok(run, "sonde run")
    ours, theirs = load_json(paths["report.json"]), load_json(run_out)
    # attach also records call stacks ("call_stacks", docs/json-format.md)
    check(_keys(ours) - {"call_stacks"} == _keys(theirs) - {"call_stacks"},
          "top-level fields differ: %r" % sorted(_keys(ours) ^ _keys(theirs)))
    stacks_doc = ours.get("call_stacks")
    check(stacks_doc and stacks_doc["samples"], "no call_stacks in the JSON report")
    n_frames = len(stacks_doc["frames"])
    check(all(0 <= i < n_frames for s in stacks_doc["samples"] for i in s["frames"]),
          "call_stacks frame index out of range")
    check(any(stacks_doc["frames"][s["frames"][-1]]["name"] == "hot" for s in stacks_doc["samples"]),
          "hot() is no stack's leaf in call_stacks")
    check(ours["python_version"] == theirs["python_version"], "python_version %r vs %r"
          % (ours["python_version"], theirs["python_version"]))
    check(ours["program"] == script, "program %r" % ours["program"])
    entry = ours["files"].get(script)
    check(entry, "script not in files: %r" % list(ours["files"]))
    their_entry = next(iter(theirs["files"].values()))
    check(_keys(entry) == _keys(their_entry), "file fields differ")
    check(_keys(entry["lines"][0]) == _keys(their_entry["lines"][0]), "line fields differ")
    check(_keys(entry["functions"][0]) == _keys(their_entry["functions"][0]), "function fields differ")
    total = ours["cpu_percent_python"] + ours["cpu_percent_c"] + ours["sys_percent"]
    check(abs(total - 100) < 0.01, "percentages add up to %.3f" % total)

    # text: the terminal report's sections
    with open(paths["report.txt"], encoding="utf-8") as f:
        text = f.read()
    check(text.startswith("sonde "), "text report header: %r" % text[:80])
    check("%s: " % script in text and "hot" in text, "text report misses the file: %r" % text[:500])
    return "%d SVG frames, %d folded stacks, %d speedscope frames; %s" % (
        len(frames), len(stacks), len(doc["shared"]["frames"]), "; ".join(notes))


def test_attach_html_and_output_alias(env):
    """attach reaches the registry's html entry by -o's ending, under the
    --outfile alias of --output."""
    script = program("hot.py")
    page = os.path.join(env.tmp, "attach.html")
    with Target(env, script) as target:
        proc = env.run_sonde(["attach", str(target.pid), "-d", "0.3", "--outfile", page])
    sonde_ok(proc, "attach --outfile x.html")
    check("html written to %s" % page in proc.stderr, "summary: %r" % proc.stderr)
    with open(page, encoding="utf-8") as f:
        text = f.read()
    check(text.startswith("<!DOCTYPE html>") and script in text, "not an HTML report of %s" % script)
