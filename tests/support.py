"""Helpers shared by sonde's end-to-end tests (see tests/run.py)."""
import concurrent.futures
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading


# The environment before tests/run.py --sanitize added its variables
# (libasan on LD_PRELOAD, the sanitizer options); None without --sanitize.
ENV_BEFORE_SANITIZER = None


def outside_env():
    """The environment for tools that are not sonde and run no sonde code
    (node and the browser): without the sanitizer's variables."""
    return dict(ENV_BEFORE_SANITIZER if ENV_BEFORE_SANITIZER is not None else os.environ)


class Skip(Exception):
    """Raised by a test that cannot run here (the reason is printed)."""


def check(cond, message):
    if not cond:
        raise AssertionError(message)


def concurrently(run, cases, workers=3):
    """[run(case) for case in cases], the calls made on `workers` threads at
    once (CI time: for sub-cases that wait on programs and measure nothing
    that a busy CPU changes; never for accuracy runs). Every call is
    finished before it returns; the first case's exception, in the order of
    cases, is raised."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(run, case) for case in cases]
        concurrent.futures.wait(futures)
    return [f.result() for f in futures]


def busy_loop(cpu=None):
    """A process that keeps one CPU busy (cpu: pinned there; None: where
    the scheduler puts it), the load of the accuracy tests' loaded runs.
    The caller kills it; it also dies with the thread that started it
    (PR_SET_PDEATHSIG), so that a runner killed mid-test leaves no busy
    loop loading the machine (eight were found, from runs cut short)."""
    def setup():
        import ctypes
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if cpu is not None:
            os.sched_setaffinity(0, {cpu})
    return subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=setup)


def loaded_runs_here(env):
    """Whether this interpreter runs the accuracy tests' repeated runs and
    loaded (busy-CPU) conditions, which CI time allows on three only: the
    three of tests/run.py's tier "tiers" (pythons.is_tier: the oldest
    supported, Debian's /usr/bin/python3 and the newest supported)."""
    if env.cc:
        # a second compiler's run (tests/run.py --cc): make test's gcc
        # matrix has made this interpreter's repeated and loaded runs
        return False
    import pythons  # tests/pythons.py: the range of src/pyread/pyversions.h
    return pythons.is_tier(env.version, env.python)


class Env:
    """One interpreter's view of the build, plus a private temp directory."""

    def __init__(self, name, python, version, build, root, sanitize=False, cc=""):
        self.name = name
        # the C compiler of a --cc run ("" for make's default)
        self.cc = cc
        # built with ASan and UBSan (tests/run.py --sanitize)
        self.sanitize = sanitize
        self.python = python
        self.version = version
        self.build = build
        self.root = root
        self.sonde = os.path.join(build, "bin", "sonde")
        self.lib = os.path.join(build, "lib")
        self._tmp = None
        # threads of one case (the stress suite's modes run at once) may
        # all ask first: one directory, made once
        self._tmp_lock = threading.Lock()

    @property
    def tmp(self):
        with self._tmp_lock:
            if self._tmp is None:
                self._tmp = tempfile.mkdtemp(prefix="sonde-test-")
            return self._tmp

    def cleanup(self):
        with self._tmp_lock:
            if self._tmp:
                shutil.rmtree(self._tmp, ignore_errors=True)
                self._tmp = None

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(text))
        return path

    def base_env(self, extra=None):
        env = dict(os.environ)
        env["SONDE_PYTHON"] = self.python
        env.pop("PYTHONPATH", None)
        env.pop("NO_COLOR", None)
        if extra:
            env.update(extra)
        return env

    def run(self, argv, timeout=300, input=None, env=None, cwd=None, **kw):
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, input=input,
                              env=self.base_env(env), cwd=cwd or self.tmp, **kw)

    def run_sonde(self, args, **kw):
        return self.run([self.sonde] + list(args), **kw)

    def run_python(self, args, **kw):
        return self.run([self.python] + list(args), **kw)

    def profile(self, script, args=(), options=(), **kw):
        """Runs `sonde run --json -o OUT options script args`; returns
        (completed process, parsed profile)."""
        # a fresh name, also when several threads profile at once
        # (concurrently below)
        fd, out = tempfile.mkstemp(prefix="profile-", suffix=".json", dir=self.tmp)
        os.close(fd)
        os.unlink(out)
        proc = self.run_sonde(["run", "--json", "-o", out] + list(options) + [script] + list(args),
                              **kw)
        check(os.path.exists(out), "no profile written; exit %d; stderr:\n%s"
              % (proc.returncode, proc.stderr[-3000:]))
        with open(out, encoding="utf-8") as f:
            return proc, json.load(f)

    def has_module(self, name):
        return subprocess.run([self.python, "-c", "import " + name],
                              capture_output=True).returncode == 0


def file_entry(prof, path):
    """The profile's entry for a file (matched by real path)."""
    want = os.path.realpath(path)
    for name, entry in prof["files"].items():
        if os.path.realpath(name) == want:
            return entry
    raise AssertionError("file %s not in profile (files: %s)" % (path, list(prof["files"])))


def lines_by_no(prof, path):
    return {l["lineno"]: l for l in file_entry(prof, path)["lines"]}


def line_total(line):
    return line["n_cpu_percent_python"] + line["n_cpu_percent_c"] + line["n_sys_percent"]


def marked_lines(path):
    """{marker: lineno} for comments `# @marker` in a source file."""
    marks = {}
    with open(path, encoding="utf-8") as f:
        for i, text in enumerate(f, 1):
            if "# @" in text:
                marks[text.split("# @", 1)[1].strip()] = i
    return marks
