#!/usr/bin/env python3
"""sonde's stress suite (`make stress`; issue #14, item 8).

Each case runs a hostile program (fork and thread storms, every
multiprocessing start method, signals of every kind, output through
symlinks and devices, hostile file names, large memory, malformed input to
`sonde view`, targets that die under `record` and `attach`) under plain
python and under sonde (`sonde run`, `sonde run --memory`, `sonde trace`,
or `record` / `attach` / `dump`), and compares byte for byte what the
program did: its standard output and error, the files it wrote, and how it
ended (exit status, or the signal that killed it). It also checks that the
profile was written and names the program.

    python3 tests/stress/run.py [--python NAME_OR_PATH ...] [-k NAME] [-j N] [--werror]

Without --python it runs on three interpreters of tests/pythons.py's: the
oldest, Debian's /usr/bin/python3 and the newest. It builds sonde for each interpreter as tests/run.py does (build/test/<name>/),
prints one PASS, FAIL or SKIP line per case and interpreter, then
`N passed, N failed` (with the known failures counted apart), and exits 1
on any failure. A case marked KNOWN (a sonde bug left open, described with
it) is run and reported as `KNOWN-FAIL`, or as FAIL once it passes (so the
mark is removed when the bug is fixed).

The cases are in cases.py, and the process-model ones (where the program
stands, what is said when a profile is lost; Debian's python3 only) in
process_model.py, which cases.py imports at its end. The
closerange-then-log-files case lives in tests/e2e/test_descriptors.py
(every mode, with and without fork) and is not repeated here.
"""
import argparse
import concurrent.futures
import importlib.util
import os
import signal
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, HERE)

import cases  # noqa: E402
import pythons  # noqa: E402
import support  # noqa: E402

# tests/run.py's per-interpreter build (build/test/<name>/), loaded by path:
# this file is a run.py too
_spec = importlib.util.spec_from_file_location("tests_run", os.path.join(ROOT, "tests", "run.py"))
_tests_run = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_tests_run)
build = _tests_run.build


def run_case(case, env):
    """(status, detail, seconds): status is True, False or None (skipped)."""
    t0 = time.time()
    try:
        note = case.func(env)
        return True, note if isinstance(note, str) else "", time.time() - t0
    except support.Skip as e:
        return None, str(e), time.time() - t0
    except Exception as e:  # noqa: BLE001 - a case fails by raising anything
        tb = traceback.format_exc().strip().splitlines()
        where = [l.strip() for l in tb if l.strip().startswith("File ") and "/stress/" in l]
        detail = "%s: %s" % (type(e).__name__, e)
        if where:
            detail += " [" + where[-1] + "]"
        return False, detail, time.time() - t0
    finally:
        env.cleanup()


def main():
    # a shell's background job (make in CI) starts with SIGINT ignored, and
    # the programs would inherit that: they run as a terminal starts them
    signal.signal(signal.SIGINT, signal.default_int_handler)
    ap = argparse.ArgumentParser(description="sonde's stress suite")
    ap.add_argument("--python", nargs="+", action="extend", default=[],
                    help="interpreters (paths or names as tests/run.py takes them)")
    ap.add_argument("-k", default="", help="run only cases whose name contains this")
    ap.add_argument("-j", type=int, default=4, help="cases run at once (default 4; they "
                    "mostly sleep, and the CPU-bound ones run alone)")
    ap.add_argument("--werror", action="store_true", help="build with WERROR=1 (as make test "
                    "WERROR=1 does, whose builds are then reused)")
    args = ap.parse_args()

    paths = [p for p in args.python if os.sep in p]
    interps = pythons.find_interpreters(paths)
    if args.python:
        interps = [i for i in interps if any(p == i[0] or p == i[1] or i[0].startswith(p)
                                             for p in args.python)]
    else:
        # the oldest, Debian's python3 and the newest found (make stress)
        system = [i for i in interps if i[1] == "/usr/bin/python3"]
        picked = interps[:1] + system + interps[-1:]
        interps = [i for n, i in enumerate(picked) if i not in picked[:n]]
    if not interps:
        print("no CPython %s interpreter found" % pythons.range_text())
        print("0 passed, 1 failed")
        return 1
    selected = [c for c in cases.CASES if args.k in c.name]
    print("interpreters: " + ", ".join("%s (%s)" % (n, p) for n, p, _ in interps), flush=True)
    t_start = time.time()
    passed = failed = skipped = known = 0
    failures = []
    jobs = []
    for name, python, version in interps:
        ok, build_dir, detail, secs = build(name, python, werror=args.werror)
        if not ok:
            print("FAIL build [%s] (%.1fs): %s" % (name, secs, detail[-2000:]), flush=True)
            failed += 1
            failures.append("build [%s]" % name)
            continue
        for case in selected:
            jobs.append((case, dict(name=name, python=python, version=version,
                                    build=build_dir, root=ROOT)))

    def report(case, env_args, result):
        nonlocal passed, failed, skipped, known
        status, detail, secs = result
        label = "%s [%s]" % (case.name, env_args["name"])
        if status is None:
            skipped += 1
            print("SKIP %s: %s" % (label, detail), flush=True)
        elif case.known and not status:
            known += 1
            print("KNOWN-FAIL %s (%.1fs): %s (%s)" % (label, secs, case.known, detail[:300]),
                  flush=True)
        elif case.known:
            failed += 1
            failures.append(label)
            print("FAIL %s (%.1fs): passes now; remove its KNOWN mark (%s)"
                  % (label, secs, case.known), flush=True)
        elif status:
            passed += 1
            print("PASS %s (%.1fs)%s" % (label, secs, (": " + detail) if detail else ""),
                  flush=True)
        else:
            failed += 1
            failures.append(label)
            print("FAIL %s (%.1fs): %s" % (label, secs, detail), flush=True)

    # the sleepy cases in parallel, then those that keep the CPUs busy one
    # at a time (their programs time themselves against the clock)
    sleepy = [j for j in jobs if not j[0].alone]
    alone = [j for j in jobs if j[0].alone]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.j)) as pool:
        futures = {pool.submit(run_case, c, support.Env(**e)): (c, e) for c, e in sleepy}
        for fut in concurrent.futures.as_completed(futures):
            report(*futures[fut], fut.result())
    for c, e in alone:
        report(c, e, run_case(c, support.Env(**e)))

    if failures:
        print("failed: " + ", ".join(failures))
    print("stress: %d cases x %d interpreters in %.0fs%s" % (
        len(selected), len(interps), time.time() - t_start,
        "; %d known failures, %d skipped" % (known, skipped) if known or skipped else ""))
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
