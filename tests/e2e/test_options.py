"""One option table for every command (issue #24, item 3): the help of
each command is written from its tables and lists every format of the
registry; one grammar for all, so every command that writes a file takes
-oFILE, -o FILE and --output=FILE alike, and the format options (--json,
--html, --format) mean the same in run, attach, record and merge.

The registry's formats and file name endings are read from the command
itself (the message for an unknown format, and for an output name that
names none), so a format added to src/report/format.c is expected in
every help without this file changing.

Runs once: the option tables are the command's C code.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from attach_support import Target, program  # noqa: E402
from support import check  # noqa: E402

VERSIONS = "once: the option tables, the help and the grammar are the command's C code"

HELP_WIDTH = 79  # src/core/opt.h: SONDE_OPT_HELP_WIDTH
# The commands whose --help lists the registry's formats (trace writes
# pstats or pprof only, its own choices; dump writes no file).
FORMAT_COMMANDS = ("run", "attach", "record", "merge", "view")

SCRIPT = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end:\n    pass\n"


def _registry(env):
    """(format names, file name endings) as the command's messages list
    them from the registry."""
    proc = env.run_sonde(["merge", "--format", "nonesuch", "x.json"])
    names = re.search(r"unknown format 'nonesuch' \(([^)]*)\)", proc.stderr)
    check(proc.returncode == 2 and names, "no format list in %r" % proc.stderr)
    proc = env.run_sonde(["attach", "-o", "x.nonesuch", "1"])
    endings = re.search(r"use an extension \(([^)]*)\)", proc.stderr)
    check(proc.returncode == 2 and endings, "no ending list in %r" % proc.stderr)
    return names.group(1).split(", "), endings.group(1).split(", ")


def _help(env, args):
    proc = env.run_sonde(args + ["--help"])
    check(proc.returncode == 0 and proc.stdout.startswith("usage: sonde") and not proc.stderr,
          "%s --help: exit %d, %r" % (" ".join(args), proc.returncode, proc.stderr))
    wide = [line for line in proc.stdout.splitlines() if len(line) > HELP_WIDTH]
    check(not wide, "%s --help: lines wider than %d: %r" % (" ".join(args), HELP_WIDTH, wide))
    return proc.stdout


def test_help_lists_every_format(env):
    names, endings = _registry(env)
    check("text" in names and ".json" in endings, "registry: %s %s" % (names, endings))
    for command in FORMAT_COMMANDS:
        text = _help(env, [command])
        missing = [n for n in names if not re.search(r"\b%s\b" % re.escape(n), text)]
        check(not missing, "%s --help does not list the formats %s" % (command, missing))
        if command != "view":
            missing = [e for e in endings if e not in text]
            check(not missing, "%s --help does not list the endings %s" % (command, missing))
            check("-f, --format FORMAT" in text and "--json, --html" in text,
                  "%s --help has no format options" % command)
        check("-o, --output FILE" in text and "--outfile" in text and "-h, --help" in text,
              "%s --help: no -o, --output FILE" % command)
    trace = _help(env, ["trace"])
    check("pstats, pprof" in trace and "-o, --outfile OUTFILE" in trace and "--output" in trace,
          "trace --help: %r" % trace)
    _help(env, ["dump"])
    top = _help(env, [])
    for command in ("run", "trace", "view", "merge", "attach", "record", "dump"):
        check(re.search(r"^  %s " % command, top, re.M), "sonde --help does not list %s" % command)


def _spellings(path):
    """The three spellings of the output option, each to its own file."""
    base, ext = os.path.splitext(path)
    files = [base + "-attached" + ext, base + "-separate" + ext, base + "-equals" + ext]
    return [(["-o" + files[0]], files[0]), (["-o", files[1]], files[1]),
            (["--output=" + files[2]], files[2])]


def _written(proc, path, what):
    check(proc.returncode == 0, "%s: exit %d; stderr:\n%s" % (what, proc.returncode, proc.stderr[-2000:]))
    check(os.path.isfile(path) and os.path.getsize(path) > 0, "%s wrote no %s" % (what, path))


def test_output_spellings(env):
    script = env.write("spin.py", SCRIPT)
    base = os.path.join(env.tmp, "out")
    profile = None
    for words, path in _spellings(base + ".json"):
        _written(env.run_sonde(["run"] + words + [script]), path, "run %s" % words)
        with open(path, encoding="utf-8") as f:
            check("files" in json.load(f), "run %s: not a JSON profile" % words)
        profile = path
    for words, path in _spellings(base + ".prof"):
        _written(env.run_sonde(["trace"] + words + [script]), path, "trace %s" % words)
    for words, path in _spellings(base + "-merged.json"):
        _written(env.run_sonde(["merge", profile] + words), path, "merge %s" % words)
    for words, path in _spellings(base + ".html"):
        _written(env.run_sonde(["view", profile] + words), path, "view %s" % words)
    for words, path in _spellings(base + "-record.folded"):
        _written(env.run_sonde(["record"] + words + ["--", env.python, script]), path,
                 "record %s" % words)
    with Target(env, program("hot.py")) as target:
        for words, path in _spellings(base + "-attach.svg"):
            _written(env.run_sonde(["attach", str(target.pid), "-d", "0.2"] + words), path,
                     "attach %s" % words)


def test_one_grammar(env):
    """--json means --format json in every command that writes a report
    (attach refused it before); -xVALUE and --name=VALUE everywhere; every
    command's errors are one line and exit 2."""
    script = env.write("spin.py", SCRIPT)
    with Target(env, program("hot.py")) as target:
        proc = env.run_sonde(["attach", "--json", "-d0.2", str(target.pid)])
        check(proc.returncode == 0, "attach --json: exit %d, %s" % (proc.returncode, proc.stderr))
        check("files" in json.loads(proc.stdout), "attach --json wrote no JSON profile")
        proc = env.run_sonde(["attach", "--json", "--format=svg", str(target.pid)])
        check(proc.returncode == 2 and "--json and --format ask for different formats" in proc.stderr,
              "attach --json --format=svg: %r" % proc.stderr)
    out = os.path.join(env.tmp, "r.txt")
    proc = env.run_sonde(["record", "--json", "-r50", "-o", out, "--", env.python, script])
    check(proc.returncode == 0, "record --json: %s" % proc.stderr)
    with open(out, encoding="utf-8") as f:
        check("files" in json.load(f), "record --json -o r.txt: not JSON")
    for args, words in ((["run", "--interval"], "option --interval needs a number"),
                        (["run", "--stacks=1", script], "option --stacks takes no value"),
                        (["attach", "--bogus", "1"], "unknown option '--bogus' (see 'sonde attach --help')"),
                        (["record", "-d"], "option -d needs a value"),
                        (["dump", "-r", "1"], "unknown option '-r' (see 'sonde dump --help')"),
                        (["view", "-o"], "option -o needs a file name"),
                        (["merge", "--outfile="], "option --outfile needs a file name"),
                        (["trace", "-s", "cum", script], "option -s needs a sort key"),
                        (["--python"], "option --python needs a path"),
                        (["--bogus"], "unknown option '--bogus' (see 'sonde --help')"),
                        (["run", "--memroy", script],
                         "unknown option '--memroy'; did you mean '--memory'?"),
                        (["attach", "--durtion=1", "1"],
                         "unknown option '--durtion'; did you mean '--duration'?"),
                        (["attatch", "1"], "unknown command 'attatch'; did you mean 'attach'?")):
        proc = env.run_sonde(args)
        err = proc.stderr
        check(proc.returncode == 2 and err.startswith("sonde: ") and err.count("\n") == 1
              and words in err, "%s: exit %d, %r" % (args, proc.returncode, err))
