"""What `sonde run` reports and where: files profiled, thresholds, colour."""
import json
import os
import pty
import subprocess

from support import check, file_entry, lines_by_no, line_total, marked_lines

LIBPROG = """\
import json, time
def spin(s):
    end = time.perf_counter() + s
    while time.perf_counter() < end: pass  # @spin
def via_stdlib():
    json.loads("[" + ",".join(["1"] * 200000) + "]")  # @stdlib
for _ in range(3):
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
