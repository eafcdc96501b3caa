"""sonde.Profile, sonde.run, sonde.runctx: drop-ins for cProfile's.

The same code runs under cProfile.Profile and sonde.Profile in one process;
the statistics must agree call for call, and print_stats must print, byte
for byte, what pstats prints from the same statistics.
"""
import json

from support import check

VERSIONS = "all: sonde.Profile against each interpreter's cProfile.Profile and pstats"


def _run(env, code, timeout=300):
    script = env.write("api_%d.py" % abs(hash(code)), code)
    proc = env.run_python([script], env={"PYTHONPATH": env.lib}, timeout=timeout)
    check(proc.returncode == 0, "script failed:\n%s" % proc.stderr[-3000:])
    return proc.stdout


WORKLOAD = r'''
import cProfile, json, os, pstats, sys, io, contextlib
import sonde

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

def gen(n):
    for i in range(n):
        yield str(i)

class K:
    def m(self, x):
        return [x] * 2
    @classmethod
    def c(cls):
        return sorted([3, 1, 2], key=lambda v: -v)

def boom(n):
    if n == 0:
        raise KeyError(n)
    boom(n - 1)

def work():
    fib(12)
    "".join(gen(20))
    k = K()
    for i in range(30):
        k.m(i)
    K.c()
    for i in range(3):
        try:
            boom(4)
        except KeyError:
            pass
    return len(dir(k))

def rows(prof):
    prof.create_stats()
    out = {}
    for (f, l, n), (cc, nc, tt, ct, callers) in prof.stats.items():
        if f != "~" and os.path.basename(f) != os.path.basename(__file__):
            continue
        out[n] = [cc, nc, sorted((c[2], v[0], v[1]) for c, v in callers.items())]
    return out
'''


def test_profile_matches_cprofile_profile(env):
    out = _run(env, WORKLOAD + r'''
result = {}
for name, cls in (("c", cProfile.Profile), ("s", sonde.Profile)):
    p = cls()
    p.enable()
    work()
    p.disable()
    result[name] = rows(p)
drop = ("<method 'disable' of '_lsprof.Profiler' objects>",)
c = {k: v for k, v in result["c"].items() if k not in drop}
print(json.dumps([c, result["s"]]))
''')
    theirs, ours = json.loads(out)
    check(ours == theirs, "sonde.Profile and cProfile.Profile disagree:\n sonde %s\n cProfile %s"
          % ({k: v for k, v in ours.items() if theirs.get(k) != v}, {k: v for k, v in theirs.items() if ours.get(k) != v}))
    return "%d functions agree" % len(ours)


def test_print_stats_is_pstats_output(env):
    # Our C report against pstats' own rendering of the same statistics.
    out = _run(env, WORKLOAD + r'''
from pstats import SortKey
p = sonde.Profile()
p.enable()
work()
p.disable()
sorts = [-1, 0, 1, 2, "calls", "ncalls", "cumtime", "cumulative", "filename", "file", "line", "module",
         "name", "nfl", "pcalls", "stdname", "time", "tottime", "cum", "tot", "std", "pc", "f", "li",
         ("time", "cum"), ("name", "line"), ("calls", "stdname", "cumulative"), SortKey.CUMULATIVE,
         (SortKey.NAME, SortKey.LINE), ()]
sorts += ["cum", ("time", "cum"), "n", "bogus", 3, ("calls", 1)]  # errors in pstats too
bad = []
for sort in sorts:
    mine = io.StringIO()
    try:
        with contextlib.redirect_stdout(mine):
            p.print_stats(sort)
    except Exception as e:
        mine = io.StringIO(type(e).__name__)
    p.create_stats()
    theirs = io.StringIO()
    args = sort if isinstance(sort, tuple) else (sort,)
    try:
        pstats.Stats(p, stream=theirs).strip_dirs().sort_stats(*args).print_stats()
    except Exception as e:
        theirs = io.StringIO(type(e).__name__)
    if mine.getvalue() != theirs.getvalue():
        bad.append((repr(sort), mine.getvalue(), theirs.getvalue()))
print(json.dumps(bad))
''')
    bad = json.loads(out)
    check(not bad, "print_stats differs from pstats for %s:\n--- sonde\n%s\n--- pstats\n%s"
          % ((bad[0][0], bad[0][1], bad[0][2]) if bad else ("", "", "")))


def test_pstats_reads_the_profile_object(env):
    out = _run(env, WORKLOAD + r'''
p = sonde.Profile()
with p:
    work()
s = pstats.Stats(p)
buf = io.StringIO()
s.stream = buf
s.sort_stats("cumulative").print_callers("fib")
s.print_callees("work")
text = buf.getvalue()
q = sonde.Profile()
q.runcall(work)
r = sonde.Profile()
r.runctx("work()", globals(), None)
path = os.path.join(os.path.dirname(__file__), "api.prof")
r.dump_stats(path)
t = pstats.Stats(path)
entries = p.getstats()
e = [x for x in entries if getattr(x.code, "co_name", "") == "fib"][0]
sub = [x for x in entries if getattr(x.code, "co_name", "") == "work"][0].calls
print(json.dumps({
    "callers": "was called by" in text and "fib" in text,
    "callees": "called..." in text,
    "runcall": rows(q).get("work", [0, 0])[:2],
    "runctx_exec": "<built-in method builtins.exec>" in rows(r),
    "file": len(t.stats),
    "getstats": [e.callcount, e.reccallcount, e.totaltime >= e.inlinetime >= 0, type(e).__name__],
    "subentries": sorted(getattr(x.code, "co_name", x.code) for x in sub),
    "stats_attr": isinstance(p.stats, dict),
}))
''')
    got = json.loads(out)
    check(got["callers"] and got["callees"], "print_callers/print_callees: %s" % got)
    check(got["runcall"] == [1, 1], "runcall: %s" % got)
    check(got["runctx_exec"], "runctx does not record exec as cProfile does")
    check(got["file"] > 5, "dump_stats file: %s" % got)
    check(got["getstats"] == [465, 464, True, "profiler_entry"], "getstats fib entry: %s" % got["getstats"])
    check({"fib", "m", "boom", "<built-in method builtins.dir>"} <= set(got["subentries"]),
          "work's subentries: %s" % got["subentries"])


def test_run_and_runctx_functions(env):
    out = _run(env, r'''
import sonde, os, pstats, sys
def f(n):
    return sum(range(n))
sonde.run("f(10)")
sonde.run("f(10)", sort="tottime")
sonde.runctx("g(5)", {"g": f}, {}, sort=("calls", "name"))
path = os.path.join(os.path.dirname(__file__), "run.prof")
sonde.run("f(3)", path)
print("FILE", len(pstats.Stats(path).stats))
sonde.run("import sys; sys.exit(4)")
print("after exit")
''')
    check(out.count("function calls") == 4, "four reports expected:\n%s" % out)
    check("Ordered by: standard name" in out and "Ordered by: internal time" in out
          and "Ordered by: call count, function name" in out, out)
    check("FILE " in out and "after exit" in out, out)


def test_options_and_timer(env):
    out = _run(env, r'''
import json, sonde, time
def f():
    return len("abc")
def g():
    for i in range(10):
        f()
ticks = [0]
def int_timer():
    ticks[0] += 5
    return ticks[0]
def float_timer():
    ticks[0] += 5
    return ticks[0] / 1000.0
res = {}
for label, kw in (("nosub", {"subcalls": False}), ("nobuiltin", {"builtins": False}),
                  ("int", {"timer": int_timer, "timeunit": 0.001}), ("float", {"timer": float_timer})):
    p = sonde.Profile(**kw)
    p.enable(); g(); p.disable()
    p.create_stats()
    st = {n if fl == "~" else n: v for (fl, l, n), v in p.stats.items()}
    res[label] = {"names": sorted(st), "g_ct": st["g"][3], "f_callers": len(st["f"][4]), "f": st["f"][:2]}
p = sonde.Profile()
p.enable(); g(); p.disable(); p.enable(); g(); p.disable()
p.create_stats()
res["twice"] = [v[:2] for (fl, l, n), v in p.stats.items() if n == "f"][0]
p.clear(); p.enable(); f(); p.disable(); p.create_stats()
res["cleared"] = [v[:2] for (fl, l, n), v in p.stats.items() if n == "f"][0]
class Mine(sonde.Profile):
    pass
m = Mine(); m.enable(); f(); m.disable(); m.create_stats()
res["subclass"] = len(m.stats)
print(json.dumps(res))
''')
    res = json.loads(out)
    check(res["nosub"]["f_callers"] == 0 and res["nosub"]["f"] == [10, 10], "subcalls=False: %s" % res["nosub"])
    check(not any(n.startswith("<") for n in res["nobuiltin"]["names"]), "builtins=False: %s" % res["nobuiltin"])
    check(res["float"]["f_callers"] == 1 and "<built-in method builtins.len>" in res["float"]["names"], res)
    # Each event reads the timer once: g's cumulative time is a whole
    # number of 5-unit steps (each step 5 ms), as with cProfile's timer.
    for label in ("int", "float"):
        ct = res[label]["g_ct"]
        check(ct > 0 and abs(ct / 0.005 - round(ct / 0.005)) < 1e-6, "%s timer: g cumtime %r" % (label, ct))
    check(res["twice"] == [20, 20], "enable twice accumulates: %s" % res["twice"])
    check(res["cleared"] == [1, 1], "clear(): %s" % res["cleared"])
    check(res["subclass"] >= 1, "subclass")


def test_tool_id_in_use(env):
    if env.version < (3, 12):
        return "sys.monitoring not in %s" % env.name
    out = _run(env, r'''
import sys, cProfile, sonde
sys.monitoring.use_tool_id(2, "othertool")
try:
    sonde.Profile().enable()
    print("enabled?!")
except ValueError as e:
    print("ERR", e)
sys.monitoring.free_tool_id(2)
c = cProfile.Profile(); c.enable()
try:
    sonde.Profile().enable()
except ValueError as e:
    print("ERR2", e)
c.disable()
p = sonde.Profile(); p.enable(); p.disable(); print("OK after")
''')
    check("ERR sonde: cannot trace: another profiler ('othertool')" in out, out)
    check("ERR2" in out and "cProfile" in out and "OK after" in out, out)
