"""Python's own errors stay Python's: a main script that does not compile
(a syntax error, a NUL byte, undecodable source) gets the traceback and
exit status plain python gives it, byte for byte, under `sonde run`,
`sonde run --memory` and `sonde trace`, and no profile; the same for a
module run with -m (runpy's frames in the traceback), while a module whose
own import of a broken module fails did start: its report says it failed. Each interpreter
words these errors its own way (3.8-3.10 even run some scripts with NUL
bytes), so the truth is the same script under plain python."""
import os

from support import check

VERSIONS = "all: each interpreter words and runs these errors its own way"

SCRIPTS = {
    "syntax.py": b"print('before')\ndef broken(:\n    pass\n",
    "indent.py": b"print('before')\n\tif x:\n",
    "nul_code.py": b"print('before')\nx = 1\x00\nprint('after')\n",
    "nul_comment.py": b"print('before')  # a comment\x00 with a NUL\nprint('after')\n",
    "undecodable.py": b"print('before')\nx = '\xff'\n",
    "bad_cookie.py": b"# -*- coding: no-such-codec -*-\nprint('before')\n",
}


def _modes(out):
    return (["run", "-o", out], ["run", "--memory", "-o", out], ["trace", "-o", out], ["run"])


def test_script_errors_are_pythons(env):
    for name, source in SCRIPTS.items():
        path = os.path.join(env.tmp, name)
        with open(path, "wb") as f:
            f.write(source)
        for relative in (True, False) if name == "syntax.py" else (False,):
            script = name if relative else path
            plain = env.run_python([script])
            out = os.path.join(env.tmp, "profile.out")
            for mode in _modes(out):
                if os.path.exists(out):
                    os.unlink(out)
                ours = env.run_sonde(mode + [script])
                what = "%s %s (python exit %d)" % (" ".join(mode[:2]), script, plain.returncode)
                check(ours.returncode == plain.returncode,
                      "%s: exit %d; stderr:\n%s" % (what, ours.returncode, ours.stderr[-2000:]))
                check(ours.stdout == plain.stdout, "%s: stdout %r, python's %r"
                      % (what, ours.stdout, plain.stdout))
                if plain.returncode == 0:  # a NUL byte that 3.8-3.10 let through: profiled
                    check(mode == ["run"] or os.path.exists(out), "%s: no profile" % what)
                    continue
                check(ours.stderr == plain.stderr, "%s: stderr differs\n--- python\n%s--- sonde\n%s"
                      % (what, plain.stderr, ours.stderr))
                check(not os.path.exists(out), "%s: a profile was written" % what)
            leftovers = [f for f in os.listdir(env.tmp) if f.startswith(".")]
            check(not leftovers, "temporary files left: %s" % leftovers)


def test_module_errors_are_pythons(env):
    for name in ("syntax.py", "nul_code.py", "undecodable.py"):
        with open(os.path.join(env.tmp, name), "wb") as f:
            f.write(SCRIPTS[name])
        module = name[:-3]
        plain = env.run_python(["-m", module])
        out = os.path.join(env.tmp, "profile.out")
        for mode in _modes(out):
            if os.path.exists(out):
                os.unlink(out)
            ours = env.run_sonde(mode + ["-m", module])
            what = "%s -m %s (python exit %d)" % (" ".join(mode[:2]), module, plain.returncode)
            check(ours.returncode == plain.returncode and ours.stdout == plain.stdout,
                  "%s: exit %d, stdout %r; stderr:\n%s" % (what, ours.returncode, ours.stdout,
                                                            ours.stderr[-2000:]))
            if plain.returncode == 0:  # a NUL byte that 3.8-3.10 let through
                continue
            check(ours.stderr == plain.stderr, "%s: stderr differs\n--- python\n%s--- sonde\n%s"
                  % (what, plain.stderr, ours.stderr))
            check(not os.path.exists(out), "%s: a profile was written" % what)
    # the module itself ran and failed importing a broken one: reported
    env.write("imports_broken.py", "print('started')\nimport syntax\n")
    plain = env.run_python(["-m", "imports_broken"])
    ours = env.run_sonde(["run", "-m", "imports_broken"])
    extra = ours.stderr[len(plain.stderr):].strip().splitlines()
    # usually too short to sample: one line saying it failed; on a slow or
    # loaded machine a tick may land in it: then the report of its lines
    noted = len(extra) == 1 and "the program failed (SyntaxError, exit status 1)" in extra[0]
    reported = len(extra) > 1 and extra[0].startswith("sonde ") and "imports_broken" in extra[0]
    check(ours.returncode == plain.returncode == 1 and ours.stderr.startswith(plain.stderr)
          and (noted or reported),
          "imports_broken: exit %d, stderr:\n%s" % (ours.returncode, ours.stderr[-2000:]))
