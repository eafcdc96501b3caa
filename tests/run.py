#!/usr/bin/env python3
"""sonde's test runner (`make test`).

Builds sonde once per installed CPython (build/test/<name>/), runs the C unit
tests, then the end-to-end tests in tests/e2e/test_*.py against the
interpreters each concerns (its tier, below), and ends with the line
`N passed, N failed`.

    python3 tests/run.py [-k SUBSTRING]... [--python NAME_OR_PATH] [-v]
                         [--no-chroot] [--cc COMPILER] [--werror] [--sanitize]
                         [--all-versions] [--serial]

Run as root with the Debian archive reachable, it also runs the suite for
Debian unstable's CPython from 3.13 to the newest supported inside the chroot
that tools/chroot.sh creates once (cached under /var/cache/sonde; one line
says so when it is made or cannot be); the final line counts those too.

Tiers. Every tests/e2e module declares which interpreters its tests
concern, with the reason, as `VERSIONS = "TIER: why"`; a function may
override it with `test_x.versions = "TIER: why"` (a module that declares
nothing fails the run). TIER is one of
  all    every interpreter: what the test exercises depends on the
         interpreter's version (the in-process sampler walking frames, the
         native rule, trace's hooks, attach reading remote memory through
         the version's offsets, the start-up hooks, fork and exec, the
         allocator domains...);
  tiers  three interpreters, pythons.is_tier: the oldest supported (3.8),
         Debian's /usr/bin/python3 and the newest supported (3.15, in CI
         the chroot's): the test is version-independent (report formats,
         option parsing, files, merge and view of saved profiles, uploads,
         the pytest plugin...); the accuracy tests' repeated and loaded runs
         use the same three (support.loaded_runs_here);
  once   the first interpreter of the run only (tests of the command, the
         build or the packaging: the interpreter does not matter).
On any other interpreter a module's "tiers" tests are left out with one
`SKIP module [interpreter]: ...` line, and the summary ends with a line that
names the interpreters that ran them and those that left them out, with the
count. --all-versions runs every test on every interpreter (the tiers
"all" and "tiers" alike; "once" stays once); .ci/run gives it to the clang
and sanitizer steps, whose one interpreter runs its whole suite.

--cc builds with another C compiler (`make CC=clang`) in build/test-<cc>/<name>
(beside the default compiler's build/test/<name>); --werror builds with
WERROR=1 (every warning an error).

--sanitize builds with AddressSanitizer and UBSan (`make SAN=1`, gcc, every
report fatal; the allocator shim stays uninstrumented) in
build/test-asan/<name> and runs the tests with the environment such a build
needs (sanitizer_env below): libasan preloaded into every process (the
interpreter is not instrumented, the extension module is; `sonde run
--memory` puts its shim ahead of it, and the shim forwards to ASan's
malloc), ASan reports written to files that fail the test that made
them (UBSan's end the process with status 1 and go to standard error),
and leak detection on, except for the leaks CPython makes by
design (tests/lsan.supp). A test function may set `test_x.no_sanitizer =
"why"`, a module `NO_SANITIZER = "why"`, to be skipped there (what
measures time or overhead, which ASan's slower code and allocator change).

Interpreters: see tests/pythons.py (PYTHONS="...", or found on this machine;
--python PATH adds and selects one; the supported range is the one in
src/pyread/pyversions.h). Without --python the host runs one interpreter
per minor version, the system's where it has one (pythons.one_per_minor:
here pyenv's 3.11.7 is left out with one SKIP line, and .ci/run's
sanitizer step runs its whole suite).

The chroot's interpreters run in a thread beside the host's (--serial: after
them), their lines interleaved whole. Tests that measure figures against a
truth (every module that uses tests/accuracy.py; or `ALONE = "why"` in a
module, `test_x.alone = "why"`) take turns through one lock (ALONE_LOCK, under /tmp, which the chroot shares):
two accuracy tests never run at once, while the other stream's ordinary
tests load the machine beside them, as the accuracy tests are built to bear.

A test is a function `test_*(env)` in a tests/e2e module; it fails by raising
(AssertionError or anything else). `NOT_WITH_CC = "why"` skips a module in a
--cc run (it builds with make's default compiler itself).
A function may set `test_x.requires = "numpy"` to run only where numpy imports.
"""
import argparse
import concurrent.futures
import contextlib
import fcntl
import glob
import importlib.util
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

import pythons  # noqa: E402
import support  # noqa: E402


def build(name, python, cc="", werror=False, sanitize=False):
    if sanitize:
        build_dir = os.path.join("build", "test-asan", name)
    else:
        build_dir = os.path.join("build", "test-" + os.path.basename(cc) if cc else "test", name)
    t0 = time.time()
    argv = ["make", "-s", "-j2", "BUILD=" + build_dir, "PYTHON=" + python, "PYTHONS="]
    if cc:
        argv.append("CC=" + cc)
    if werror:
        argv.append("WERROR=1")
    if sanitize:
        argv.append("SAN=1")
    proc = subprocess.run(argv + ["all"], cwd=ROOT, capture_output=True, text=True)
    ok = proc.returncode == 0
    detail = (proc.stdout + proc.stderr).strip()
    return ok, os.path.join(ROOT, build_dir), detail, time.time() - t0


# The tiers a test declares (module VERSIONS, function .versions): which
# interpreters run it (see the docstring above).
TIERS = ("all", "tiers", "once")


def parse_versions(value, where):
    """(tier, why) of a declaration "TIER: why"; raises ValueError naming
    where when it is none."""
    tier, sep, why = value.partition(":") if isinstance(value, str) else ("", "", "")
    if not sep or tier.strip() not in TIERS or not why.strip():
        raise ValueError('%s: %r is not "TIER: why" with TIER one of %s'
                         % (where, value, ", ".join(TIERS)))
    return tier.strip(), why.strip()


def load_modules(patterns, results):
    """[(module name, module, [(test name, function, tier, why)])] of the
    tests/e2e modules whose tests match patterns. A module or function whose
    declaration of versions is missing or malformed is a failure recorded in
    results; its tests then run on every interpreter."""
    mods = []
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "e2e", "test_*.py"))):
        name = os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        funcs = [(n, f) for n, f in sorted(vars(mod).items())
                 if n.startswith("test_") and callable(f)]
        if patterns:
            funcs = [(n, f) for n, f in funcs if any(p in name + "." + n for p in patterns)]
        if not funcs:
            continue
        where = os.path.relpath(path, ROOT)
        try:
            if not hasattr(mod, "VERSIONS"):
                raise ValueError('%s declares no VERSIONS = "TIER: why" (tests/run.py: tiers)'
                                 % where)
            default = parse_versions(mod.VERSIONS, where + ": VERSIONS")
        except ValueError as e:
            results.record("versions of " + name, False, str(e))
            default = ("all", "no declaration")
        tests = []
        for n, f in funcs:
            tier, why = default
            if hasattr(f, "versions"):
                try:
                    tier, why = parse_versions(f.versions, "%s: %s.versions" % (where, n))
                except ValueError as e:
                    results.record("versions of %s.%s" % (name, n), False, str(e))
                    tier, why = "all", "no declaration"
            tests.append((n, f, tier, why))
        mods.append((name, mod, tests))
    return mods


# One line at a time on standard output: the chroot's interpreters run in a
# thread beside the host's (run_in_chroot), each line whole.
PRINT_LOCK = threading.Lock()


def say(line):
    with PRINT_LOCK:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


# Tests that measure figures against a truth (every module that uses
# tests/accuracy.py, and ALONE = "why" in a module or test_x.alone = "why"
# on a function) take this lock while they run, so
# that two of them never share the machine: the other stream's ordinary
# tests go on beside them, a load the accuracy tests are built to bear
# (tests/accuracy.py), not a second accuracy test with its busy threads.
# /tmp: the chroot binds the host's, so the lock is one for both (and for
# another tree's run on the same machine).
ALONE_LOCK = "/tmp/sonde-tests-alone.lock"


def uses_accuracy(mod):
    """Whether a test module checks figures through tests/accuracy.py (the
    module or any of its functions imported): such a module's tests take
    ALONE_LOCK too, declared or not."""
    return any(getattr(v, "__name__", None) == "accuracy"
               or getattr(v, "__module__", None) == "accuracy" for v in vars(mod).values())


@contextlib.contextmanager
def alone(active):
    if not active:
        yield
        return
    fd = os.open(ALONE_LOCK, os.O_CREAT | os.O_RDWR, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


class Results:
    def __init__(self, verbose):
        self.passed = 0
        self.failed = 0
        self.skipped = 0
        self.failures = []
        self.verbose = verbose
        # the tier "tiers": the interpreters that ran those tests, those
        # that left them out, and how many test runs were left out
        self.tier_ran = []
        self.tier_left = []
        self.tier_skipped = 0

    def tier_line(self):
        """The summary's line on the version-independent tests, or None when
        the run had none (tests/run.py --inside-chroot prints it for the
        host, which adds it to its own: add_tier_line)."""
        if not self.tier_ran and not self.tier_left:
            return None
        return ("version-independent tests ran on %s; left out on %s (%d test runs; "
                "--all-versions runs them everywhere)"
                % (", ".join(self.tier_ran) or "none", ", ".join(self.tier_left) or "none",
                   self.tier_skipped))

    def add_tier_line(self, line):
        """Adds a tier_line() of another run; False when line is none."""
        m = re.match(r"version-independent tests ran on (.*); left out on (.*) \((\d+) test runs",
                     line)
        if not m:
            return False
        for names, into in ((m.group(1), self.tier_ran), (m.group(2), self.tier_left)):
            if names != "none":
                into.extend(names.split(", "))
        self.tier_skipped += int(m.group(3))
        return True

    def record(self, label, ok, detail="", seconds=0.0, skipped=False):
        if skipped:
            self.skipped += 1
            say("SKIP %s: %s" % (label, detail))
            return
        if ok:
            self.passed += 1
            # a test may return the figures it measured: always shown
            say("PASS %s (%.1fs)%s" % (label, seconds, (": " + detail) if detail else ""))
        else:
            self.failed += 1
            self.failures.append(label)
            say("FAIL %s (%.1fs): %s" % (label, seconds, detail))


def sanitizer_env(cc, log_dir):
    """The environment variables of a --sanitize run, every ASan and LSan
    report going to a file under log_dir (asan.PID). libasan comes first on
    LD_PRELOAD, the user's value after it; `sonde run --memory` then puts
    its shim ahead of both, which ASan accepts with verify_asan_link_order=0
    (the shim forwards every call to the next malloc, ASan's)."""
    libasan = subprocess.run([cc or "gcc", "-print-file-name=libasan.so"], capture_output=True,
                             text=True).stdout.strip()
    libasan = os.path.realpath(libasan)
    preload = os.environ.get("LD_PRELOAD", "")
    return {
        "LD_PRELOAD": libasan + (":" + preload if preload else ""),
        "ASAN_OPTIONS": "verify_asan_link_order=0:detect_leaks=1:allocator_may_return_null=1:"
                        "log_path=" + os.path.join(log_dir, "asan"),
        "LSAN_OPTIONS": "print_suppressions=0:suppressions="
                        + os.path.join(ROOT, "tests", "lsan.supp"),
        # gcc's libubsan beside libasan ignores log_path: its reports go to
        # standard error and end the process with status 1
        "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
    }


def sanitizer_reports(log_dir):
    """Takes the report files written since the last call: the first lines
    of each report, or "" when there is none (a warning alone, such as a
    failed allocation that returned NULL as the program asked, is none)."""
    texts = []
    for path in sorted(glob.glob(os.path.join(log_dir, "*"))):
        with open(path, errors="replace") as f:
            text = f.read()
        os.unlink(path)
        if not any(w in text for w in ("ERROR: ", "runtime error: ", "SUMMARY: ")):
            continue
        lines = [l for l in text.splitlines() if l.strip()]
        texts.append("%s: %s" % (os.path.basename(path), " | ".join(lines[:12])))
    return "; ".join(texts)


def run_unit_tests(build_dir, results, san_log=None):
    for binary in sorted(glob.glob(os.path.join(build_dir, "tests", "test_*"))):
        name = os.path.basename(binary)
        t0 = time.time()
        try:
            proc = subprocess.run([binary], capture_output=True, text=True, timeout=300, cwd=ROOT)
            out = proc.stdout + proc.stderr
            checks = [l for l in out.splitlines() if l.startswith(("PASS ", "FAIL "))]
            fails = [l for l in checks if l.startswith("FAIL ")]
            ok = proc.returncode == 0 and not fails and checks
            detail = "%d checks" % len(checks)
            if not ok:
                detail = "exit %d; %s" % (proc.returncode, "; ".join(fails[:5]) or out[-500:])
        except subprocess.TimeoutExpired:
            ok, detail = False, "timed out"
        reports = sanitizer_reports(san_log) if san_log else ""
        if reports:
            ok, detail = False, "sanitizer report: " + reports[:3000]
        results.record("unit/%s" % name, ok, detail, time.time() - t0)


def run_test(func, env):
    t0 = time.time()
    try:
        note = func(env)
        return True, (note if isinstance(note, str) else ""), time.time() - t0
    except support.Skip as e:
        return None, str(e), time.time() - t0
    except Exception as e:  # noqa: BLE001 - a test fails by raising anything
        tb = traceback.format_exc().strip().splitlines()
        where = [l.strip() for l in tb if l.strip().startswith("File ") and "/tests/" in l]
        detail = "%s: %s" % (type(e).__name__, e)
        if where:
            detail += " [" + where[-1] + "]"
        return False, detail, time.time() - t0


def run_in_chroot(args, results):
    """Runs this suite inside the chroot, one interpreter after another, and
    adds its counts to results (its own: it runs in a thread beside the
    host's interpreters unless --serial). Returns the names of the
    interpreters run."""
    tool = os.path.join(ROOT, "tools", "chroot.sh")
    versions = pythons.chroot_versions()
    not_tested = "Debian unstable's %s not tested" % "/".join(versions)
    if os.geteuid() != 0:
        say("chroot: not used (needs root): " + not_tested)
        return []
    t0 = time.time()
    proc = subprocess.run([tool, "ensure"], cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        say("chroot: " + (proc.stderr.strip().splitlines() or ["cannot create it"])[-1]
            + ": " + not_tested)
        return []
    if time.time() - t0 > 5:
        say("chroot: created in %.0fs" % (time.time() - t0))
    names = []
    try:
        for ver in versions:
            inner = ["python" + ver, "tests/run.py", "--inside-chroot", "--no-chroot",
                     "--python", "/usr/bin/python" + ver]
            for k in args.k:
                inner += ["-k", k]
            if args.v:
                inner.append("-v")
            if args.all_versions:
                inner.append("--all-versions")
            cmd = " ".join("'%s'" % a.replace("'", "'\\''") for a in inner)
            p = subprocess.Popen([tool, "run", cmd], cwd=ROOT, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
            counted = False
            for line in p.stdout:
                line = line.rstrip("\n")
                words = line.split()
                if line.startswith("interpreters tested: "):
                    names += line[len("interpreters tested: "):].split(", ")
                    continue
                if results.add_tier_line(line):
                    continue
                if len(words) == 4 and words[1] == "passed," and words[3] == "failed":
                    results.passed += int(words[0])
                    results.failed += int(words[2])
                    counted = True
                    continue
                if line.startswith("FAIL "):
                    results.failures.append(line[5:].split(" (")[0])
                if line.startswith("failed: "):
                    continue
                say(line)
            if p.wait() != 0 and not counted:
                results.record("chroot [python%s]" % ver, False, "exit %d" % p.returncode)
    finally:
        subprocess.run([tool, "umount"], cwd=ROOT)
    return names


def main():
    # Started as a shell's background job (CI runners are), the runner has
    # SIGINT ignored, and every program it starts would inherit that: the
    # tests compare with python as a terminal starts it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    ap = argparse.ArgumentParser()
    ap.add_argument("-k", action="append", default=[],
                    help="run only tests whose module.name contains this (repeatable: any of them)")
    ap.add_argument("--python", action="append", default=[], help="only these interpreters")
    ap.add_argument("-v", action="store_true")
    ap.add_argument("--no-chroot", action="store_true",
                    help="do not test Debian unstable's interpreters in the chroot")
    ap.add_argument("--inside-chroot", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--cc", default="", help="C compiler to build with (make CC=...), "
                    "in build/test-<cc>/")
    ap.add_argument("--werror", action="store_true", help="build with WERROR=1")
    ap.add_argument("--sanitize", action="store_true", help="build with ASan and UBSan "
                    "(make SAN=1) in build/test-asan/ and run under them")
    ap.add_argument("--serial", action="store_true",
                    help="run the chroot's interpreters after the host's, not beside them")
    ap.add_argument("--all-versions", action="store_true",
                    help='run every test on every interpreter, the version-independent ones '
                    '(VERSIONS = "tiers: ...") too, which otherwise run on three')
    args = ap.parse_args()

    if args.sanitize and args.cc and "gcc" not in os.path.basename(args.cc):
        print("--sanitize builds with gcc (its shared libasan is what the interpreter preloads)")
        print("0 passed, 1 failed")
        return 1
    results = Results(args.v)
    paths = [p for p in args.python if os.sep in p]
    for path in paths:
        info = pythons.describe(path) if os.path.isfile(path) else None
        lo, hi = pythons.supported_range()
        if not info or not lo <= info[2][:2] <= hi:
            print("--python %s: not a CPython %s interpreter" % (path, pythons.range_text()))
            print("0 passed, 1 failed")
            return 1
    interps = pythons.find_interpreters(paths)
    if args.python:
        interps = [i for i in interps if any(p == i[0] or p == i[1] or i[0].startswith(p)
                                             for p in args.python)]
    if not args.python and not args.inside_chroot:
        interps, left_out = pythons.one_per_minor(interps)
        for n, p, _ in left_out:
            say("SKIP %s (%s): the system's interpreter of its minor version is tested here; "
                "--python %s runs it (.ci/run's sanitizer step does)" % (n, p, n))
    if args.inside_chroot:
        # Debian unstable's interpreters, named so in the host's summary
        interps = [(n.replace("-system", "-sid"), p, v) for n, p, v in interps]
    if not interps:
        print("no CPython %s interpreter found" % pythons.range_text())
        print("0 passed, 1 failed")
        return 1
    say("interpreters: " + ", ".join("%s (%s)" % (n, p) for n, p, _ in interps))
    modules = load_modules(args.k, results)

    # Debian unstable's interpreters, in the chroot: in a thread beside the
    # host's (their builds and most tests wait on processes more than they
    # compute; the accuracy tests take turns through ALONE_LOCK), or after
    # them with --serial.
    use_chroot = not args.no_chroot and not args.python and not args.sanitize
    chroot_results, chroot_names = Results(args.v), []
    chroot_thread = None
    if use_chroot and not args.serial:
        chroot_thread = threading.Thread(
            target=lambda: chroot_names.extend(run_in_chroot(args, chroot_results)), daemon=True)
        chroot_thread.start()

    # inside the chroot the host's run has done the unit tests and the
    # tests of the command itself (tier "once")
    first = not args.inside_chroot
    for name, python, version in interps:
        ok, build_dir, detail, secs = build(name, python, args.cc, args.werror, args.sanitize)
        results.record("build [%s]" % name, ok, detail[-2000:] if not ok else "", secs)
        if not ok:
            first = False
            continue
        san_log = None
        if args.sanitize:
            # after the build: make and the compiler run without libasan
            san_log = tempfile.mkdtemp(prefix="sonde-san-")
            if support.ENV_BEFORE_SANITIZER is None:
                support.ENV_BEFORE_SANITIZER = dict(os.environ)
            os.environ.update(sanitizer_env(args.cc, san_log))
        if first and (not args.k or any(k.startswith("unit") for k in args.k)):
            run_unit_tests(build_dir, results, san_log)
        env_base = dict(name=name, python=python, version=version, build=build_dir, root=ROOT,
                        sanitize=args.sanitize, cc=args.cc)
        # the version-independent tests: here, or only on the three
        tiers_here = args.all_versions or pythons.is_tier(version, python)
        has_tier = any(t[2] == "tiers" for _, _, tests in modules for t in tests)
        if has_tier:
            (results.tier_ran if tiers_here else results.tier_left).append(name)
        for mod_name, mod, tests in modules:
            left = [t for t in tests if t[2] == "tiers" and not tiers_here]
            if left:
                whys = sorted(set(why for _, _, _, why in left))
                if len(left) == len(tests):
                    what = "its test" if len(left) == 1 else "its %d tests" % len(left)
                else:
                    what = "%d of its %d tests (%s)" % (len(left), len(tests),
                                                      ", ".join(n for n, _, _, _ in left))
                say("SKIP %s [%s]: %s, version-independent (%s), run on %s only; "
                    "--all-versions runs them here"
                    % (mod_name, name, what, "; ".join(whys), pythons.TIER_TEXT))
                results.tier_skipped += len(left)
            for test_name, func, tier, _ in tests:
                if tier == "once" and not first or tier == "tiers" and not tiers_here:
                    continue
                label = "%s.%s [%s]" % (mod_name, test_name, name)
                env = support.Env(**env_base)
                req = getattr(func, "requires", None)
                if req and not env.has_module(req):
                    results.record(label, None, "needs %s" % req, skipped=True)
                    continue
                why_cc = getattr(mod, "NOT_WITH_CC", None)
                if args.cc and why_cc:
                    results.record(label, None, "not with --cc: " + why_cc, skipped=True)
                    continue
                why = getattr(func, "no_sanitizer", None) or getattr(mod, "NO_SANITIZER", None)
                if args.sanitize and why:
                    results.record(label, None, "not under sanitizers: " + why, skipped=True)
                    continue
                why_alone = (getattr(func, "alone", None) or getattr(mod, "ALONE", None)
                             or uses_accuracy(mod))
                try:
                    with alone(bool(why_alone)):
                        ok, detail, secs = run_test(func, env)
                finally:
                    env.cleanup()
                reports = sanitizer_reports(san_log) if san_log else ""
                if reports:
                    ok, detail = False, "sanitizer report: " + reports[:3000]
                if ok is None:
                    results.record(label, None, detail, skipped=True)
                else:
                    results.record(label, ok, detail, secs)
        first = False

    tested = [n for n, _, _ in interps]
    if use_chroot:
        if chroot_thread:
            chroot_thread.join()
        else:
            chroot_names.extend(run_in_chroot(args, chroot_results))
        tested += chroot_names
        results.passed += chroot_results.passed
        results.failed += chroot_results.failed
        results.skipped += chroot_results.skipped
        results.failures += chroot_results.failures
        results.tier_ran += chroot_results.tier_ran
        results.tier_left += chroot_results.tier_left
        results.tier_skipped += chroot_results.tier_skipped
    if results.failures:
        say("failed: " + ", ".join(results.failures))
    if results.tier_line():
        say(results.tier_line())
    say("interpreters tested: " + ", ".join(tested))
    say("%d passed, %d failed" % (results.passed, results.failed))
    return 0 if results.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
