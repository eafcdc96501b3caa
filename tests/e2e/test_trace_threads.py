"""Threads under `sonde trace` and sonde.Profile: each on its own stack.

tests/programs/trace/threads.py runs THREADS workers that recurse in the
same function at the same time, switching threads mid-recursion. The true
counts are known from the program; on 3.12+ cProfile (one stack for all
threads) gets the primitive counts and the callers wrong, sonde must not.
Before 3.12 cProfile sees only the main thread, sonde every thread.
"""
import json

from support import check
from trace_support import check_times, cprofile_stats, function_key, program, trace_stats

VERSIONS = "all: threads under trace's hooks, which differ by version"

DEPTH, ROUNDS, THREADS = 12, 40, 4


def test_threads_never_mix(env):
    script = program("threads.py")
    rec_key, worker_key, sleeper_key, spin_key = (function_key(script, name)
                                                  for name in ("rec", "worker", "sleeper", "spin"))
    proc, ours = trace_stats(env, script)
    check(proc.returncode == 0, "exit %d: %s" % (proc.returncode, proc.stderr[-2000:]))
    chains = THREADS * ROUNDS
    rec = ours.get(rec_key)
    check(rec, "rec() missing: %s" % sorted(ours))
    check(rec[:2] == [chains, chains * (DEPTH + 1)], "rec: (primitive, total) %r, want %r"
          % (rec[:2], [chains, chains * (DEPTH + 1)]))
    callers = {name: tuple(v[:2]) for name, v in rec[4].items()}
    want = {worker_key: (chains, chains), rec_key: (chains * DEPTH, chains)}
    check(callers == want, "rec's callers %s, want %s" % (callers, want))
    worker = ours[worker_key]
    check(worker[:2] == [THREADS, THREADS], "worker: %r" % (worker[:2],))
    sleeper = ours[sleeper_key]
    # Each thread sleeps 0.05 s on its own stack: the cumulative time is
    # the sum over threads, each call charged to its own thread only.
    check(sleeper[:2] == [THREADS, THREADS] and 0.05 * THREADS * 0.98 <= sleeper[3] <= 0.05 * THREADS + 0.2,
          "sleeper: %r" % (sleeper[:4],))
    sleep_callers = {n: tuple(v[:2]) for n, v in ours["<built-in method time.sleep>"][4].items()
                     if n.startswith("threads.py")}
    check(sleep_callers.get(sleeper_key) == (THREADS, THREADS) and sleep_callers.get(rec_key) == (chains, chains),
          "time.sleep callers %s" % sleep_callers)
    # worker's cumulative time covers its own thread's calls only: at most
    # the run's wall time per thread.
    module = ours["threads.py:1(<module>)"]
    check(worker[3] <= THREADS * module[3] * 1.01, "worker cumtime %.3f vs run %.3f" % (worker[3], module[3]))
    spin = ours.get(spin_key)
    check(spin and spin[1] >= 1, "the daemon thread was not traced: %s" % sorted(ours))
    check_times(ours, "threads.py")

    theirs = cprofile_stats(env, program("threads.py"))
    c_rec = theirs.get(rec_key)
    if env.version >= (3, 12):
        note = "cProfile rec (prim, total) %s vs true %s" % (c_rec and c_rec[:2], [chains, chains * (DEPTH + 1)])
    else:
        check(c_rec is None, "cProfile before 3.12 should not see the workers: %r" % (c_rec,))
        note = "cProfile sees no worker thread; sonde all %d" % THREADS
    return note


API_THREADS = r'''
import json, sys, threading, time
import sonde

def rec(n):
    if n == 0:
        time.sleep(0)
        return 0
    return 1 + rec(n - 1)

started = threading.Event()
stop = threading.Event()

def early():
    started.set()
    while not stop.is_set():
        rec(3)
        time.sleep(0.001)

sys.setswitchinterval(1e-5)
t0 = threading.Thread(target=early)
t0.start()
started.wait()
p = sonde.Profile()
p.enable()
ts = [threading.Thread(target=rec, args=(10,)) for _ in range(3)]
for t in ts: t.start()
for t in ts: t.join()
time.sleep(0.05)
p.disable()
stop.set()
t0.join()
p.create_stats()
out = {}
for (f, l, n), v in p.stats.items():
    out[n] = v[:2]
print(json.dumps(out))
'''


def test_profile_sees_threads_started_before_and_after(env):
    script = env.write("api_threads.py", API_THREADS)
    proc = env.run_python([script], env={"PYTHONPATH": env.lib})
    check(proc.returncode == 0, proc.stderr[-2000:])
    stats = json.loads(proc.stdout)
    rec = stats.get("rec")
    check(rec, "rec missing: %s" % stats)
    # 3 new threads x 11 calls, 3 primitive; plus the thread that was
    # already running: rec(3) chains of 4 calls, 1 primitive, of which the
    # first and the last may be cut by enable() and disable().
    extra_total, extra_prim = rec[1] - 33, rec[0] - 3
    check(extra_prim >= 3 and 4 * (extra_prim - 2) + 2 <= extra_total <= 4 * extra_prim,
          "rec %s: the thread running before enable() is not traced on its own stack" % (rec,))
    return "rec %s" % rec
