"""What `sonde run` reports and where: files profiled, thresholds, colour.

Issue #32: leaf()'s share of the stack formats goes through
tests/accuracy.py: truth 100 % by construction (leaf() is all the program
runs), n the samples of the output read, a named allowance, the Wilson
interval at the suite's corrected confidence, after checking that the
samples can catch the defect the check was written for.
"""
import json
import os
import pty
import subprocess

import accuracy
from accuracy import need_samples, samples_to_catch, share_at_least
from support import check, file_entry, lines_by_no, line_total, marked_lines

VERSIONS = "tiers: which files the report shows, thresholds, colour, width, formats and options"

# Systematic allowances of leaf()'s share (points):
# - `sonde run` of STACKPROG: the program's first and last ticks (its
#   imports and definitions, its end), up to 2 of its 40-80 samples
RUN_ALLOWANCE = 5.0
# - a `with sonde.profile()` block around leaf(): sonde's own start and
#   stop and the with statement, the first and last ticks (as
#   test_api.py's BLOCK_ALLOWANCE)
BLOCK_ALLOWANCE = 5.0
# The defect: stacks written without leaf() (a frame dropped or garbled by
# the writer, time charged to its caller middle()): a quarter of the
# samples (test_attach_formats.py's FRAME_DEFECT). 27 samples tell it:
# leaf() spins CPU time, so that a loaded machine (15 samples in 0.4 s of
# the clock in one run) makes it run longer, not sample less.
FRAME_DEFECT = 25.0

# json.loads runs long enough (10 rounds, ~0.1 s) that a loaded machine
# still takes samples inside the json package
LIBPROG = """\
import json, time
def spin(s):
    end = time.perf_counter() + s
    while time.perf_counter() < end: pass  # @spin
def via_stdlib():
    json.loads("[" + ",".join(["1"] * 200000) + "]")  # @stdlib
for _ in range(10):
    via_stdlib()
spin(0.4)
"""


def test_stdlib_time_is_charged_to_caller(env):
    script = env.write("lib.py", LIBPROG)
    proc, prof = env.profile(script)
    check(proc.returncode == 0, proc.stderr)
    for path in prof["files"]:
        check(os.path.realpath(path) == os.path.realpath(script), "unexpected file %s" % path)
    lines = lines_by_no(prof, script)
    check(marked_lines(script)["stdlib"] in lines, "json.loads time not charged to the calling line")


test_stdlib_time_is_charged_to_caller.versions = ("all: charging the standard library's time to "
                                                  "its caller walks the interpreter's frames")


def test_profile_all_and_only(env):
    script = env.write("lib.py", LIBPROG)
    proc, prof = env.profile(script, options=["--profile-all"])
    check(any("json" in os.path.basename(os.path.dirname(p)) or "/json/" in p for p in prof["files"]),
          "--profile-all did not profile the json package: %s" % list(prof["files"]))
    proc, prof = env.profile(script, options=["--profile-only", "nothing-matches"])
    check(not prof["files"], "--profile-only kept files: %s" % list(prof["files"]))
    proc, prof = env.profile(script, options=["--profile-exclude", "lib.py"])
    check(not prof["files"], "--profile-exclude kept files: %s" % list(prof["files"]))


def test_threshold_and_all_lines(env):
    script = env.write("lines.py", """\
        import time
        def spin(s):
            end = time.perf_counter() + s
            while time.perf_counter() < end: pass
        x = 1
        y = 2
        # a comment line that never runs
        z = 3
        spin(0.5)
        """)
    out = os.path.join(env.tmp, "r.txt")
    proc = env.run_sonde(["run", "-o", out, script])
    check(proc.returncode == 0, proc.stderr)
    text = open(out).read()
    check("a comment line that never runs" not in text, "an idle line far from hot lines is shown")
    proc = env.run_sonde(["run", "--all-lines", "-o", out, script])
    text = open(out).read()
    check("a comment line that never runs" in text, "--all-lines did not show every line")


def test_colour_only_on_a_terminal(env):
    script = env.write("col.py", "import time\nend = time.perf_counter() + 0.3\nwhile time.perf_counter() < end: pass\n")

    def on_tty(extra):
        master, slave = pty.openpty()
        p = subprocess.Popen([env.sonde, "run", script], stdin=slave, stdout=slave, stderr=slave,
                             env=env.base_env(extra), cwd=env.tmp)
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        p.wait(timeout=60)
        os.close(master)
        return b"".join(chunks).decode("utf-8", "replace")

    check("\x1b[" in on_tty({}), "no colour on a terminal")
    check("\x1b[" not in on_tty({"NO_COLOR": "1"}), "colour despite NO_COLOR")
    piped = env.run_sonde(["run", script])
    check("\x1b[" not in piped.stderr, "colour when piped")


def test_width_is_respected(env):
    script = env.write("wide.py", "import time\nend = time.perf_counter() + 0.3\nwhile time.perf_counter() < end: pass  " + "#" * 300 + "\n")
    proc = env.run_sonde(["run", script], env={"COLUMNS": "80"})
    widest = max(len(l) for l in proc.stderr.splitlines())
    check(widest <= 80, "report line of %d columns with COLUMNS=80" % widest)


def test_outfile_can_be_a_stream(env):
    script = env.write("s.py", "import time\nend = time.perf_counter() + 0.2\nwhile time.perf_counter() < end: pass\nprint('program output')\n")
    proc = env.run_sonde(["run", "--json", "-o", "/dev/stdout", script])
    check(proc.returncode == 0, proc.stderr)
    head, _, rest = proc.stdout.partition("\n")
    check(head == "program output", "program output lost: %r" % proc.stdout[:200])
    doc = json.loads(rest)
    check("files" in doc, "no profile on stdout")


def test_html_report(env):
    script = env.write("h.py", "import time\nend = time.perf_counter() + 0.3\nwhile time.perf_counter() < end: pass\n")
    proc = env.run_sonde(["run", "--html", script])
    check(proc.returncode == 0, proc.stderr)
    page = os.path.join(env.tmp, "profile.html")
    check(os.path.exists(page), "--html wrote no profile.html in the working directory")
    text = open(page, encoding="utf-8").read()
    check(text.startswith("<!DOCTYPE html>") and "h.py" in text, "not an HTML report of h.py")
    check("<script src=" not in text and "<link " not in text, "the page loads something from outside")
    bad = env.run_sonde(["run", "--html", "--json", script])
    check(bad.returncode != 0 and bad.stderr.startswith("sonde: "), "--html --json accepted")


# leaf() spins 0.4 s of its thread's CPU time (not of the clock: on a
# loaded machine it then runs longer, and its share keeps the samples
# its bound needs)
STACKPROG = """\
import time
def leaf(s):
    end = time.thread_time() + s
    while time.thread_time() < end: pass
def middle(s):
    leaf(s)
middle(0.4)
"""


def _leaf_share(stacks):
    from attach_support import folded_share
    return folded_share(stacks, lambda func, file, line: func == "leaf")


def _leaf_check(what, share, n, allowance):
    """leaf()'s share (percent) of an output's n samples against its truth,
    100 %; returns the note."""
    need_samples(what, n, samples_to_catch(1 - FRAME_DEFECT / 100.0, 1.0, allowance / 100.0))
    return accuracy.check(share_at_least(what, share, n, 100, allowance))


def _folded_leaf(what, stacks, allowance):
    return _leaf_check(what, _leaf_share(stacks), sum(c for _, c in stacks), allowance)


def test_run_writes_every_format(env):
    """`sonde run` reaches every format of the registry: by --format, by
    -o's ending, with --stacks or without it (the stack formats turn call
    stacks on themselves)."""
    from attach_support import parse_folded, parse_speedscope, parse_svg, speedscope_names
    script = env.write("stacks.py", STACKPROG)
    svg = os.path.join(env.tmp, "flame.svg")
    proc = env.run_sonde(["run", "--stacks", "-o", svg, script])
    check(proc.returncode == 0, proc.stderr)
    frames = parse_svg(svg)
    leaf = [f for f in frames if f[0].startswith("leaf (%s:" % script)]
    check(frames and frames[0][0] == "all" and leaf, "no leaf() in the SVG: %r" % frames[:5])
    notes = [_leaf_check("leaf() in the SVG", 100.0 * sum(s for _, s, _ in leaf) / frames[0][1],
                         frames[0][1], RUN_ALLOWANCE)]

    folded_out = os.path.join(env.tmp, "stacks.out")  # an ending that names no format
    proc = env.run_sonde(["run", "--format", "folded", "-o", folded_out, script])
    check(proc.returncode == 0, proc.stderr)
    with open(folded_out, encoding="utf-8") as f:
        stacks = parse_folded(f.read())
    check(stacks, "no folded stacks in %s" % folded_out)
    notes.append(_folded_leaf("leaf() in folded stacks", stacks, RUN_ALLOWANCE))

    proc = env.run_sonde(["run", "-f", "collapsed", script])  # to stderr, after the program
    check(proc.returncode == 0, "folded stacks on stderr: exit %d: %r"
          % (proc.returncode, proc.stderr[-300:]))
    notes.append(_folded_leaf("leaf() in folded stacks on stderr", parse_folded(proc.stderr),
                              RUN_ALLOWANCE))

    speedscope = os.path.join(env.tmp, "p.speedscope.json")
    proc = env.run_sonde(["run", "-o", speedscope, script])
    check(proc.returncode == 0, proc.stderr)
    doc = parse_speedscope(speedscope)
    names = [n for p in doc["profiles"] for n in speedscope_names(doc, p)]
    check(any(stack[-3:] == ["<module>", "middle", "leaf"] for stack in names),
          "no <module> > middle > leaf stack in speedscope: %r" % names[:3])

    as_json = os.path.join(env.tmp, "by-ending.json")
    proc = env.run_sonde(["run", "-o", as_json, script])
    with open(as_json, encoding="utf-8") as f:
        check("files" in json.load(f), "-o x.json did not write the JSON report")
    page = os.path.join(env.tmp, "by-ending.html")
    proc = env.run_sonde(["run", "--output", page, script])
    with open(page, encoding="utf-8") as f:
        check(f.read(15) == "<!DOCTYPE html>", "-o x.html did not write the HTML report")

    bad = env.run_sonde(["run", "--format", "png", script])
    check(bad.returncode == 2 and bad.stderr.strip() ==
          "sonde: unknown format 'png' (text, json, html, folded, svg, speedscope, pprof)", bad.stderr)
    bad = env.run_sonde(["run", "--json", "-f", "svg", script])
    check(bad.returncode == 2 and "--json and -f ask for different formats" in bad.stderr, bad.stderr)
    return "; ".join(notes)


def test_start_checks_options_as_the_command_does(env):
    """sonde.start() goes through the command's option parser: the same
    values are refused with the same message, and format= / outfile's
    ending reach the same writers."""
    from attach_support import parse_folded
    script = env.write("ok.py", "pass\n")
    folded_out = os.path.join(env.tmp, "api.folded")
    api = env.write("api.py", """\
        import sonde, time
        for kw in (dict(interval=20), dict(cpu_percent_threshold=101),
                   dict(malloc_threshold=1024), dict(format="png"), dict(json=True, format="svg")):
            try:
                sonde.start(**kw)
            except ValueError as e:
                print(e)
        def leaf(s):  # CPU time, as STACKPROG's
            end = time.thread_time() + s
            while time.thread_time() < end: pass
        with sonde.profile(outfile=%r):
            leaf(0.4)
        """ % folded_out)
    proc = env.run_python([api], env={"PYTHONPATH": env.lib})
    check(proc.returncode == 0, proc.stderr)
    cli_words = (["--interval", "20"], ["--cpu-percent-threshold", "101"],
                 ["--malloc-threshold", "1024"], ["--format", "png"], ["--json", "--format", "svg"])
    api_lines = proc.stdout.splitlines()
    check(len(api_lines) == len(cli_words), "start() accepted a bad value: %r" % api_lines)
    for words, api_line in zip(cli_words, api_lines):
        cli = env.run_sonde(["run"] + words + [script])
        check(cli.returncode == 2, "sonde run %s: exit %d" % (words, cli.returncode))
        check(cli.stderr.strip() == api_line, "messages differ:\n cli: %r\n api: %r"
              % (cli.stderr.strip(), api_line))
    with open(folded_out, encoding="utf-8") as f:
        stacks = parse_folded(f.read())
    check(stacks, "start(outfile='x.folded') wrote no stacks")
    return _folded_leaf("leaf() in start(outfile='x.folded')", stacks, BLOCK_ALLOWANCE)
