"""Which interpreter `sonde run` starts: --python, else SONDE_PYTHON, else
`python3` as the shell finds it on PATH (an activated virtual environment
first); what the program sees is what plain `python3` shows it."""
import json
import os
import subprocess

from support import Skip, check

VERSIONS = "tiers: which interpreter `sonde run` starts is the command's choice"

PROBE = r'''
import json, sys
import sonde_venv_only
print(json.dumps({"prefix": sys.prefix, "base_prefix": sys.base_prefix, "path": sys.path,
                  "executable": sys.executable, "module": sonde_venv_only.__file__}))
'''


def _venv(env):
    """A virtual environment of the test's interpreter, with a module only
    its site-packages holds; returns (venv dir, the environment of a shell
    where it is activated)."""
    venv = os.path.join(env.tmp, "venv")
    made = subprocess.run([env.python, "-m", "venv", "--without-pip", venv], capture_output=True,
                          text=True)
    if made.returncode != 0:
        raise Skip("cannot make a venv with %s: %s" % (env.python, made.stderr.strip()[-200:]))
    vpy = os.path.join(venv, "bin", "python3")
    site = subprocess.run([vpy, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    os.makedirs(site, exist_ok=True)
    with open(os.path.join(site, "sonde_venv_only.py"), "w") as f:
        f.write("total = sum(i * i for i in range(200000))\n")
    shell = dict(os.environ)
    for name in ("SONDE_PYTHON", "PYTHONPATH", "PYTHONHOME", "NO_COLOR"):
        shell.pop(name, None)
    shell["PATH"] = os.path.join(venv, "bin") + os.pathsep + shell.get("PATH", "")
    shell["VIRTUAL_ENV"] = venv
    return venv, shell


def _run(argv, shell, cwd, **extra):
    env = dict(shell, **extra)
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=120)
    check(proc.returncode == 0, "%s failed (exit %d): %s" % (argv, proc.returncode, proc.stderr[-2000:]))
    return json.loads(proc.stdout)


def test_activated_venv(env):
    venv, shell = _venv(env)
    script = env.write("venv_probe.py", PROBE)
    out = os.path.join(env.tmp, "venv.json")
    plain = _run(["python3", script], shell, env.tmp)  # as the shell would run it
    check(plain["prefix"] == venv, "the activated venv is not the plain run's: %r" % plain["prefix"])
    ours = _run([env.sonde, "run", "-o", out, script], shell, env.tmp)
    for key in plain:
        check(plain[key] == ours[key], "%s differs:\n python3: %r\n sonde:   %r" % (key, plain[key], ours[key]))
    check(os.path.exists(out), "no profile written")
    # SONDE_PYTHON wins over PATH, and --python over SONDE_PYTHON
    base = _run([env.sonde, "run", "-o", out, script], shell, env.tmp, SONDE_PYTHON=env.python,
                PYTHONPATH=os.path.dirname(plain["module"]))
    check(base["prefix"] != venv and base["prefix"] == base["base_prefix"],
          "SONDE_PYTHON=%s ran %r" % (env.python, base["prefix"]))
    for argv in ([env.sonde, "run", "--python", os.path.join(venv, "bin", "python3"), "-o", out, script],
                 [env.sonde, "--python=" + os.path.join(venv, "bin", "python3"), "run", "-o", out, script]):
        chosen = _run(argv, shell, env.tmp, SONDE_PYTHON=env.python)
        check(chosen["prefix"] == venv, "%s ran %r" % (argv[1:3], chosen["prefix"]))
    # python -m sonde runs its own sys.executable: the venv's
    mod = _run([os.path.join(venv, "bin", "python3"), "-m", "sonde", "run", "-o", out, script],
               shell, env.tmp, SONDE_PYTHON=env.python, PYTHONPATH=env.lib)
    check(mod["prefix"] == venv, "python -m sonde ran %r" % mod["prefix"])


def test_version_without_build(env):
    """A python3 on PATH that this build cannot serve: one line naming
    what to do, a non-zero exit, and the program never starts."""
    script = env.write("never.py", "open(%r, 'w').close()\n" % os.path.join(env.tmp, "ran"))
    built = env.version[1]
    other = 8 if built != 8 else 9
    for minor, expect in ((other, "make PYTHON="), (99, "cannot profile")):
        bindir = os.path.join(env.tmp, "bin-3.%d" % minor)
        os.makedirs(bindir)
        real = os.path.join(bindir, "python3.%d" % minor)
        with open(real, "w") as f:
            f.write("#!/bin/sh\ntouch %s\n" % os.path.join(env.tmp, "ran"))
        os.chmod(real, 0o755)
        os.symlink("python3.%d" % minor, os.path.join(bindir, "python3"))
        shell = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
        shell.pop("SONDE_PYTHON", None)
        proc = subprocess.run([env.sonde, "run", script], capture_output=True, text=True, env=shell,
                              cwd=env.tmp, timeout=60)
        lines = proc.stderr.strip().splitlines()
        check(proc.returncode != 0, "exit 0 with python3 3.%d" % minor)
        check(len(lines) == 1 and "Python 3.%d" % minor in lines[0] and expect in lines[0],
              "not one line naming 3.%d and %r: %r" % (minor, expect, proc.stderr))
        check(not os.path.exists(os.path.join(env.tmp, "ran")), "the interpreter ran")
    # Python 2, named with --python: the same one line
    fake2 = os.path.join(env.tmp, "bin-2", "python2.7")
    os.makedirs(os.path.dirname(fake2))
    with open(fake2, "w") as f:
        f.write("#!/bin/sh\ntouch %s\n" % os.path.join(env.tmp, "ran"))
    os.chmod(fake2, 0o755)
    proc = env.run_sonde(["run", "--python", fake2, script])
    lines = proc.stderr.strip().splitlines()
    check(proc.returncode != 0 and len(lines) == 1 and "Python 2" in lines[0]
          and "cannot profile" in lines[0] and not os.path.exists(os.path.join(env.tmp, "ran")),
          "python2.7: exit %d, %r" % (proc.returncode, proc.stderr))
