#!/usr/bin/env python3
"""Runs every libFuzzer target of tests/fuzz/ for a bounded time (`make fuzz`).

    python3 tests/fuzz/run.py --bin build/fuzz/bin [--seconds 10] [-k NAME]

Each target build/fuzz/bin/fuzz_<name> runs for --seconds over a scratch
copy of its checked-in seed corpus tests/fuzz/corpus/<name>/ (libFuzzer adds
the inputs it finds to the first directory it is given, so the checked-in
corpus stays as it is). A target that crashes, leaks, breaks an invariant
or times out makes the run fail; its input is kept under
build/fuzz/crashes/<name>/ (run the target on that file to reproduce it;
add it to the corpus once fixed). Prints, per target, the executions run
and the coverage libFuzzer reached (cov: edges, ft: features), then one
line `N targets passed, N failed`.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")


def last_int(pattern, text, default=0):
    found = re.findall(pattern, text)
    return int(found[-1]) if found else default


def run_target(binary, seconds, crash_root):
    name = os.path.basename(binary)[len("fuzz_"):]
    seeds = os.path.join(CORPUS, name)
    crash_dir = os.path.join(crash_root, name)
    shutil.rmtree(crash_dir, ignore_errors=True)  # inputs of an earlier run
    os.makedirs(crash_dir, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="sonde-fuzz-" + name + "-")
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0:allocator_may_return_null=1")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    argv = [binary, "-max_total_time=%d" % seconds, "-print_final_stats=1",
            "-timeout=10", "-rss_limit_mb=2048", "-max_len=65536",
            "-artifact_prefix=" + crash_dir + "/", scratch]
    if os.path.isdir(seeds):
        argv.append(seeds)
    t0 = time.time()
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, errors="replace", timeout=seconds + 120)
        out, rc = proc.stdout, proc.returncode
    except subprocess.TimeoutExpired as e:
        out, rc = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) \
            else (e.stdout or ""), -1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    runs = last_int(r"stat::number_of_executed_units:\s*(\d+)", out)
    if not runs:
        runs = last_int(r"Done (\d+) runs", out)
    cov = last_int(r"\bcov: (\d+)", out)
    ft = last_int(r"\bft: (\d+)", out)
    corpus = last_int(r"\bcorp: (\d+)", out)
    crashes = sorted(glob.glob(os.path.join(crash_dir, "*")))
    ok = rc == 0 and not crashes
    return {"name": name, "ok": ok, "rc": rc, "runs": runs, "cov": cov, "ft": ft,
            "corpus": corpus, "seconds": time.time() - t0, "output": out, "crashes": crashes}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "fuzz", "bin"))
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("-k", default="", help="only the targets whose name contains this")
    args = ap.parse_args()
    binaries = sorted(b for b in glob.glob(os.path.join(args.bin, "fuzz_*"))
                      if os.access(b, os.X_OK) and args.k in os.path.basename(b))
    if not binaries:
        print("no fuzz targets in %s (run 'make fuzz')" % args.bin)
        return 1
    crash_root = os.path.join(os.path.dirname(os.path.abspath(args.bin)), "crashes")
    results = []
    for binary in binaries:
        r = run_target(binary, args.seconds, crash_root)
        results.append(r)
        status = "PASS" if r["ok"] else "FAIL"
        print("%s fuzz_%-16s %9d runs in %4.1f s  cov: %-5d ft: %-6d corpus: %d" % (
            status, r["name"], r["runs"], r["seconds"], r["cov"], r["ft"], r["corpus"]),
            flush=True)
        if not r["ok"]:
            tail = r["output"][-6000:]
            print("---- fuzz_%s (exit %d) ----\n%s" % (r["name"], r["rc"], tail))
            for c in r["crashes"]:
                print("input kept: %s (reproduce: %s %s)" % (c, binary, c))
    failed = sum(not r["ok"] for r in results)
    print("%d targets passed, %d failed; %d executions in all" % (
        len(results) - failed, failed, sum(r["runs"] for r in results)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
