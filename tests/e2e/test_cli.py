"""The `sonde` command itself: help, version, and one-line errors."""
import os
import shutil

from support import check

VERSIONS = "once: the command's help, version and one-line errors"


def _one_line_error(proc, *words):
    err = proc.stderr.strip()
    check(proc.returncode != 0, "exit status 0 for an error; stderr: %r" % err)
    check(len(err.splitlines()) == 1, "error is not one line: %r" % err)
    check(err.startswith("sonde: "), "error does not start with 'sonde: ': %r" % err)
    for w in words:
        check(w in err, "error %r does not mention %r" % (err, w))


def test_help_and_version(env):
    top = env.run_sonde(["--help"])
    check(top.returncode == 0 and "run" in top.stdout and "usage" in top.stdout, top.stdout)
    run = env.run_sonde(["run", "--help"])
    check(run.returncode == 0, run.stderr)
    for opt in ("--interval", "--virtual-time", "--profile-all", "--profile-only", "--profile-exclude",
                "--cpu-percent-threshold", "--all-lines", "--json", "--html", "--format", "--output",
                "--outfile", "-m", "svg", "folded", "speedscope", ".speedscope.json", "pprof",
                ".pb.gz", ".pprof"):
        check(opt in run.stdout, "run --help does not document %s" % opt)
    ver = env.run_sonde(["--version"])
    check(ver.returncode == 0 and ver.stdout.startswith("sonde "), ver.stdout)


def test_unknown_option_and_command(env):
    script = env.write("ok.py", "print('ran')\n")
    _one_line_error(env.run_sonde(["run", "--bogus", script]), "--bogus")
    _one_line_error(env.run_sonde(["frobnicate"]), "frobnicate")
    _one_line_error(env.run_sonde(["run", "--interval", "abc", script]), "--interval")
    _one_line_error(env.run_sonde(["run"]), "no program")
    # A word holding a newline or a terminal escape is quoted escaped: the
    # message stays one line and sends no escape to the terminal.
    for cmd in (["run"], ["trace"], ["attach"], ["record"]):
        for word, shown in (("--bo\ngus", "--bo\\ngus"), ("--x\x1b[31m", "--x\\x1b[31m"),
                            ("--interval=1\n2", "1\\n2")):
            proc = env.run_sonde(cmd + [word, script])
            _one_line_error(proc, shown)
            check("\x1b" not in proc.stderr, "an escape reached the terminal: %r" % proc.stderr)


def test_missing_script(env):
    missing = os.path.join(env.tmp, "nope.py")
    out = os.path.join(env.tmp, "p.json")
    proc = env.run_sonde(["run", "--json", "-o", out, missing])
    _one_line_error(proc, "nope.py", "No such file")
    check(not os.path.exists(out), "a profile was written for a missing script")


def test_unwritable_outfile(env):
    script = env.write("ok.py", "open(%r, 'w').write('ran')\n" % os.path.join(env.tmp, "marker"))
    for target in (os.path.join(env.tmp, "no", "such", "dir", "p.json"), env.tmp):
        proc = env.run_sonde(["run", "-o", target, script])
        _one_line_error(proc, "cannot write")
        check(not os.path.exists(os.path.join(env.tmp, "marker")),
              "the program ran although the report could not be written")
    leftovers = [f for f in os.listdir(env.tmp) if f not in ("ok.py",)]
    check(not leftovers, "files left behind: %s" % leftovers)


def test_output_option_in_every_command(env):
    """-o/--output is the output option of run, attach, record and view
    (--outfile an alias); every help says so, and view refuses a name the
    format registry gives to another format."""
    for command in ("run", "attach", "view"):
        proc = env.run_sonde([command, "--help"])
        check(proc.returncode == 0 and "-o, --output" in proc.stdout and "--outfile" in proc.stdout,
              "%s --help does not document -o, --output: %r" % (command, proc.stdout))
    good = env.write("good.json", '{"files": {}}\n')
    page = os.path.join(env.tmp, "page.html")
    proc = env.run_sonde(["view", good, "--output", page])
    check(proc.returncode == 0 and os.path.isfile(page), "view --output: %s" % proc.stderr)
    svg = os.path.join(env.tmp, "page.svg")
    _one_line_error(env.run_sonde(["view", good, "-o", svg]), "HTML report only", "svg")
    check(not os.path.exists(svg), "view wrote %s" % svg)
    _one_line_error(env.run_sonde(["record", "--format", "png", "--", "true"]), "unknown format 'png'")


def test_python_m_sonde_from_the_checkout(env):
    """The README's `PYTHONPATH=build/lib python3 -m sonde run app.py`, from
    the repository's root, where the source folder sonde/ (no compiled
    module in it) comes first on sys.path: the build's package is used."""
    checkout = os.path.join(env.tmp, "checkout")
    os.makedirs(os.path.join(checkout, "build"))
    shutil.copytree(os.path.join(env.root, "sonde"), os.path.join(checkout, "sonde"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    os.symlink(env.lib, os.path.join(checkout, "build", "lib"))
    os.symlink(os.path.join(env.build, "bin"), os.path.join(checkout, "build", "bin"))
    app = env.write("checkout/app.py", "print('app ran')\n")
    proc = env.run([env.python, "-m", "sonde", "run", "--json", "-o", "out.json", app],
                   env={"PYTHONPATH": "build/lib"}, cwd=checkout)
    check(proc.returncode == 0 and "app ran" in proc.stdout,
          "python -m sonde from the checkout: exit %d, %s" % (proc.returncode, proc.stderr[-800:]))
    check(os.path.exists(os.path.join(checkout, "out.json")), "no report written")
    # and a missing build still says what is missing
    os.unlink(os.path.join(checkout, "build", "lib"))
    proc = env.run([env.python, "-m", "sonde", "--version"], cwd=checkout)
    check(proc.returncode != 0 and "sonde._sonde" in proc.stderr, "without a build: %r"
          % proc.stderr[-500:])


test_python_m_sonde_from_the_checkout.versions = ("tiers: the package's import from a checkout, "
                                                  "the same Python code on every interpreter")
