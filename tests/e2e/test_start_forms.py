"""Python's own ways to start a program under `sonde run`: `-c CODE args`,
`- args < script`, a directory with __main__.py and a zip application
behave as under plain python3 (sys.argv, __name__, __file__, sys.path[0],
output, exit status), and the code of -c and of standard input is
reported as the files <string> and <stdin>, line by line."""
import json
import os
import subprocess

from support import check, line_total

VERSIONS = ("all: how the interpreter starts -c, stdin, directories and zip apps, through sonde's "
            "start-up")

PROBE = r'''import json, sys, time
def spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end: pass  # @hot
if sys.argv[1:2] == ["spin"]: spin(0.3)
main = sys.modules["__main__"]
spec = getattr(main, "__spec__", None)
print(json.dumps({"argv": sys.argv, "name": __name__, "file": globals().get("__file__"),
                  "path0": sys.path[0], "spec": spec.name if spec else None,
                  "stdin_tty": sys.stdin.isatty()}))
sys.stderr.write("to stderr\n")
sys.exit(5)
'''
HOT = [i for i, text in enumerate(PROBE.splitlines(), 1) if "# @hot" in text][0]


def _compare(env, args, stdin=None, spin=False):
    """Runs python3 ARGS and sonde run ARGS; checks they agree; returns the
    profile."""
    extra = ["spin"] if spin else []
    out = os.path.join(env.tmp, "p%d.json" % len(os.listdir(env.tmp)))
    plain = env.run_python(args + extra + ["x y"], input=stdin)
    ours = env.run_sonde(["run", "--json", "-o", out] + args + extra + ["x y"], input=stdin)
    check(plain.returncode == 5, "python3 %s: exit %d, %s" % (args, plain.returncode, plain.stderr))
    check(ours.returncode == plain.returncode,
          "sonde run %s: exit %d, python3's %d; %s" % (args, ours.returncode, plain.returncode, ours.stderr[-2000:]))
    check(json.loads(ours.stdout) == json.loads(plain.stdout),
          "%s differs:\n python3: %s\n sonde:   %s" % (args, plain.stdout, ours.stdout))
    check(ours.stderr == plain.stderr, "stderr differs: %r vs %r" % (plain.stderr, ours.stderr))
    with open(out, encoding="utf-8") as f:
        return json.load(f)


def _hot_line(prof, name):
    check(name in prof["files"], "%s not in the profile's files %s" % (name, list(prof["files"])))
    lines = prof["files"][name]["lines"]
    top = max(lines, key=line_total)
    check(top["lineno"] == HOT, "%s: the top line is %d, not the loop's %d: %s"
          % (name, top["lineno"], HOT, [(l["lineno"], line_total(l)) for l in lines]))


def test_dash_c(env):
    _hot_line(_compare(env, ["-c", PROBE], spin=True), "<string>")


def test_script_from_stdin(env):
    _hot_line(_compare(env, ["-"], stdin=PROBE, spin=True), "<stdin>")


def test_directory_and_zipapp(env):
    app = os.path.join(env.tmp, "app")
    env.write("app/__main__.py", PROBE)
    for target in ("app", "app/"):
        _compare(env, [target])
    made = subprocess.run([env.python, "-m", "zipapp", app, "-o", os.path.join(env.tmp, "app.pyz")],
                          capture_output=True, text=True)
    check(made.returncode == 0, made.stderr)
    _compare(env, ["app.pyz"])
