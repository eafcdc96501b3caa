"""`sonde trace`: the same statistics, report and files as `python -m cProfile`.

Each program in tests/programs/trace/ runs under both; the call counts
(primitive and total) of every function of the program, and per caller,
must be cProfile's. Files are read by the interpreter under test's pstats
(and by every installed version's); the printed report must have pstats'
exact layout; times must be consistent and match durations the program
measures itself.
"""
import os
import re
import subprocess

from support import check, outside_env
from trace_support import (check_times, compare_counts, cprofile_stats, function_key,
                           interpreters, load_stats, parse_report, program, trace_stats)

VERSIONS = "all: trace's hooks (sys.monitoring from 3.12, setprofile before) against each cProfile"


def _same_counts_as_cprofile(env, name):
    script = program(name)
    proc, ours = trace_stats(env, script)
    check(proc.returncode == 0, "sonde trace failed: %s" % proc.stderr[-2000:])
    theirs = cprofile_stats(env, script)
    rows = compare_counts(ours, theirs, name)
    check_times(ours, name)
    return "%d functions of %s match" % (rows, name)


def test_recursion_counts(env):
    return _same_counts_as_cprofile(env, "recursion.py")


def test_generator_and_coroutine_counts(env):
    return _same_counts_as_cprofile(env, "generators.py")


def test_exception_counts(env):
    return _same_counts_as_cprofile(env, "exceptions.py")


def test_builtin_counts(env):
    note = _same_counts_as_cprofile(env, "builtins_calls.py")
    _, ours = trace_stats(env, program("builtins_calls.py"))
    for name in ("<built-in method builtins.len>", "<method 'append' of 'list' objects>",
                 "<built-in method math.sqrt>", "<method 'get' of 'dict' objects>",
                 "<built-in method fromkeys>", "<built-in method time.perf_counter>",
                 "<method 'write' of '_io.StringIO' objects>",
                 "<built-in method __new__ of type object at 0x?>"):
        check(name in ours, "no row named %r (cProfile's name for it)" % name)
    # list.append(items, 99) and bag.append(...) are the same C function
    work = function_key(program("builtins_calls.py"), "work")
    calls = ours["<method 'append' of 'list' objects>"][4][work]
    check(calls[0] == 3 * (50 + 1 + 1 + 20), "list.append calls from work(): %r" % (calls,))
    return note


def test_shapes_counts(env):
    return _same_counts_as_cprofile(env, "shapes.py")


def test_same_key_functions_are_added(env):
    # Two lambdas on one line share a pstats key; cProfile keeps only one of
    # them, sonde adds them up (the true count).
    script = env.write("twins.py", "fs = [lambda: 1, lambda: 2]\nfor i in range(5):\n    fs[0]()\nfs[1]()\n")
    proc, ours = trace_stats(env, script)
    check(ours["twins.py:1(<lambda>)"][:2] == [6, 6], "lambdas on line 1: %r" % (ours["twins.py:1(<lambda>)"][:2],))


def test_times_match_what_the_program_measures(env):
    proc, ours = trace_stats(env, program("timing.py"))
    check(proc.returncode == 0, proc.stderr)
    wall = float(proc.stdout.strip())
    sleep = ours["<built-in method time.sleep>"]
    slow, busy, main = (ours[function_key(program("timing.py"), name)] for name in ("slow", "busy", "main"))
    module = ours["timing.py:1(<module>)"]
    check(0.195 <= sleep[2] <= 0.25, "time.sleep(0.2) tottime %.4f" % sleep[2])
    check(abs(slow[3] - sleep[3]) < 0.005, "slow() cumtime %.4f vs sleep %.4f" % (slow[3], sleep[3]))
    check(0.099 <= busy[3] <= 0.15, "busy() (0.1 s) cumtime %.4f" % busy[3])
    check(abs(main[3] - wall) <= 0.02 * wall + 0.002, "main() cumtime %.4f, measured %.4f" % (main[3], wall))
    total_tt = sum(row[2] for row in ours.values())
    check(abs(total_tt - module[3]) <= 1e-6 * module[3] + 1e-6,
          "sum of tottime %.6f != <module> cumtime %.6f" % (total_tt, module[3]))
    check(abs(total_tt - wall) <= 0.02 * wall + 0.005, "sum of tottime %.4f vs wall %.4f" % (total_tt, wall))
    check_times(ours, "timing.py")
    return "main %.4f s vs %.4f s measured; sum(tottime) %.4f s" % (main[3], wall, total_tt)


def test_report_has_cprofiles_layout(env):
    script = program("recursion.py")
    ours = env.run_sonde(["trace", script])
    check(ours.returncode == 0, ours.stderr[-2000:])
    theirs = env.run_python(["-m", "cProfile", script])
    a, b = parse_report(ours.stdout), parse_report(theirs.stdout)
    check(a["ordered_by"] == b["ordered_by"], "default order %r, cProfile %r" % (a["ordered_by"], b["ordered_by"]))
    want = "cumulative time" if env.version >= (3, 11) else "standard name"
    check(a["ordered_by"] == want, "default order %r on %s" % (a["ordered_by"], env.name))
    ncalls_a = {r[5]: r[0] for r in a["rows"]}
    ncalls_b = {r[5]: r[0] for r in b["rows"] if r[5] not in ("{built-in method builtins.exec}",
                                                              "{method 'disable' of '_lsprof.Profiler' objects}")}
    check(ncalls_a == ncalls_b, "ncalls columns differ:\n sonde %s\n cProfile %s" % (ncalls_a, ncalls_b))
    check(ncalls_a.get(function_key(script, "down")) == "901/1", "no total/primitive ncalls: %s" % ncalls_a)
    check(a["calls"] == sum(int(c.split("/")[0]) for c in ncalls_a.values()), "header total")
    check(a["primitive"] == sum(int(c.split("/")[-1]) for c in ncalls_a.values()), "header primitive")
    check(abs(a["seconds"] - sum(r[1] for r in a["rows"])) <= 0.0005 * len(a["rows"]) + 0.001,
          "header seconds %.3f vs sum of tottime" % a["seconds"])
    for r in a["rows"]:
        check(r[1] <= r[3] + 0.0011, "tottime > cumtime in %r" % (r,))


def _pstats_titles(env):
    code = ("import pstats\nfor k, v in pstats.Stats.sort_arg_dict_default.items(): print(k + '=' + v[1])")
    out = env.run_python(["-c", code]).stdout
    return dict(line.split("=", 1) for line in out.strip().splitlines())


def test_sort_option(env):
    titles = _pstats_titles(env)
    script = program("exceptions.py")
    for key, title in sorted(titles.items()):
        proc = env.run_sonde(["trace", "-s", key, script])
        check(proc.returncode == 0, "-s %s: %s" % (key, proc.stderr[-500:]))
        rep = parse_report(proc.stdout)
        check(rep["ordered_by"] == title, "-s %s: ordered by %r, pstats says %r" % (key, rep["ordered_by"], title))
        rows = rep["rows"]
        if key in ("tottime", "time"):
            check(all(rows[i][1] >= rows[i + 1][1] for i in range(len(rows) - 1)), "-s %s not descending" % key)
        if key in ("cumulative", "cumtime"):
            check(all(rows[i][3] >= rows[i + 1][3] for i in range(len(rows) - 1)), "-s %s not descending" % key)
        if key in ("calls", "ncalls"):
            n = [int(r[0].split("/")[0]) for r in rows]
            check(n == sorted(n, reverse=True), "-s %s not descending: %s" % (key, n))
        if key == "stdname":
            names = [r[5] for r in rows]
            check(names == sorted(names), "-s stdname not sorted: %s" % names)
    bad = env.run_sonde(["trace", "-s", "bogus", script])
    check(bad.returncode == 2 and bad.stderr.startswith("sonde: ") and "tottime" in bad.stderr
          and bad.stderr.count("\n") == 1, "bad -s: %d %r" % (bad.returncode, bad.stderr))


def test_file_loads_in_every_pstats(env):
    out = os.path.join(env.tmp, "out.prof")
    proc = env.run_sonde(["trace", "-o", out, program("shapes.py")])
    check(proc.returncode == 0 and proc.stdout == "", "exit %d, stdout %r" % (proc.returncode, proc.stdout[:200]))
    check(os.listdir(env.tmp) == ["out.prof"], "stray files next to the output: %s" % os.listdir(env.tmp))
    with open(out, "rb") as f:
        check(f.read(1) == b"{", "not a marshalled dict")
    script = os.path.join(env.tmp, "browse.py")
    with open(script, "w") as f:
        f.write("import pstats, sys\n"
                "s = pstats.Stats(sys.argv[1])\n"
                "s.strip_dirs().sort_stats('cumulative').print_stats(10)\n"
                "s.print_callers('area')\n"
                "s.print_callees('main')\n"
                "s.sort_stats('nfl').print_stats(0.5, 'shape')\n"
                "s.add(sys.argv[1])\n"
                "s.dump_stats(sys.argv[1] + '.copy')\n")
    versions = []
    for python in interpreters():
        # other interpreters read the file: no sonde code runs there
        proc = subprocess.run([python, script, out], capture_output=True, text=True, timeout=120,
                              env=outside_env())
        check(proc.returncode == 0, "%s: pstats failed on our file:\n%s" % (python, proc.stderr[-2000:]))
        check("shapes.py" in proc.stdout and "was called by" in proc.stdout and "called..." in proc.stdout,
              "%s: unexpected output:\n%s" % (python, proc.stdout[:1000]))
        check(re.search(r"shapes\.py:\d+\(area\)\s+<-\s+\d+\s+[\d.]+\s+[\d.]+\s+shapes\.py:\d+\(", proc.stdout),
              "%s: print_callers shows no caller of area():\n%s" % (python, proc.stdout[-3000:]))
        browser = subprocess.run([python, "-m", "pstats", out], input="sort calls\nstats 5\ncallers main\ncallees main\nquit\n",
                                 capture_output=True, text=True, timeout=120, env=outside_env())
        check(browser.returncode == 0 and "function calls" in browser.stdout and "main" in browser.stdout,
              "%s -m pstats failed:\n%s%s" % (python, browser.stdout[-1000:], browser.stderr[-1000:]))
        versions.append(subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                       capture_output=True, text=True, env=outside_env()).stdout.strip())
    return "read by pstats of " + ", ".join(versions)


# it runs one trace and then every installed interpreter, which runs no
# sonde code, for about 100 s under a loaded machine
test_file_loads_in_every_pstats.no_sanitizer = "every other interpreter reads one file"


def test_builtin_keys_are_cprofiles(env):
    # The raw keys, not only the displayed names: ('~', 0, '<built-in method ...>').
    out = os.path.join(env.tmp, "out.prof")
    script = env.write("keys.py", "import time\nx = []\nx.append(len('ab'))\ntime.sleep(0)\n")
    env.run_sonde(["trace", "-o", out, script])
    code = ("import marshal, sys\nd = marshal.load(open(sys.argv[1], 'rb'))\n"
            "for k in sorted(d, key=repr): print(repr(k))\n")
    keys = env.run_python(["-c", code, out]).stdout.splitlines()
    for want in ("('~', 0, '<built-in method time.sleep>')", "('~', 0, \"<method 'append' of 'list' objects>\")",
                 "('~', 0, '<built-in method builtins.len>')"):
        check(want in keys, "key %s missing: %s" % (want, keys))
    check(any(re.match(r"\('.*keys\.py', 1, '<module>'\)$", k) for k in keys), "no <module> key: %s" % keys)


def test_exit_status_and_exceptions(env):
    script = env.write("exits.py", "import sys\ndef f():\n    print('out')\n    sys.exit(int(sys.argv[1]))\nf()\n")
    for code in ("0", "3"):
        proc = env.run_sonde(["trace", script, code])
        check(proc.returncode == int(code), "sys.exit(%s) gave %d" % (code, proc.returncode))
        check(proc.stdout.startswith("out\n"), proc.stdout[:200])
        rep = parse_report(proc.stdout)
        check(any(r[5].endswith("(f)") for r in rep["rows"]), "f() missing from the report")
    bad = env.write("bad.py", "def g():\n    raise ValueError('boom')\ndef f():\n    g()\nf()\n")
    plain = env.run_python([bad])
    ours = env.run_sonde(["trace", bad])
    check(ours.returncode == 1 == plain.returncode, "exit %d (python %d)" % (ours.returncode, plain.returncode))
    check(ours.stderr == plain.stderr, "traceback differs:\n%s\n---\n%s" % (ours.stderr, plain.stderr))
    names = [r[5] for r in parse_report(ours.stdout)["rows"]]
    check(any(n.endswith("(g)") for n in names), "g() missing: %s" % names)
    out = os.path.join(env.tmp, "bad.prof")
    proc = env.run_sonde(["trace", "-o", out, bad])
    check(proc.returncode == 1 and os.path.exists(out), "exit %d with -o" % proc.returncode)
    stats = load_stats(env, out)
    check(stats["bad.py:1(g)"][:2] == [1, 1], "g: %r" % (stats["bad.py:1(g)"][:2],))


def test_argv_and_module_mode(env):
    probe = "import sys\nprint(repr(sys.argv), __name__)\n"
    script = env.write("probe.py", probe)
    plain = env.run_python([script, "a", "b c"])
    ours = env.run_sonde(["trace", "-o", os.path.join(env.tmp, "p.prof"), script, "a", "b c"])
    check(ours.stdout == plain.stdout, "%r vs %r" % (ours.stdout, plain.stdout))
    env.write("pkg/__init__.py", "")
    mod = env.write("pkg/mod.py", probe + "def f():\n    return 1\nf()\n")
    plain = env.run_python(["-m", "pkg.mod", "x"])
    out = os.path.join(env.tmp, "m.prof")
    ours = env.run_sonde(["trace", "-o", out, "-m", "pkg.mod", "x"])
    check(ours.returncode == 0 and ours.stdout == plain.stdout, "%r vs %r; %s" % (ours.stdout, plain.stdout, ours.stderr))
    stats = load_stats(env, out)
    check(stats.get(function_key(mod, "f"), [0, 0])[:2] == [1, 1], "f of pkg.mod: %s" % sorted(stats))
    # the -m options of cProfile: -m is a flag, the module the first argument
    ours = env.run_sonde(["trace", "-m", "-s", "calls", "pkg.mod"])
    check(ours.returncode == 0 and "Ordered by: call count" in ours.stdout, ours.stderr)


def test_script_name_not_utf8(env):
    """A script whose name is not UTF-8 (its bytes reach co_filename as
    surrogates): the main frame is found, its functions are recorded."""
    name = os.path.join(os.fsencode(env.tmp), b"caf\xe9 \xff.py")
    with open(name, "w") as f:
        f.write("def f():\n    return 1\nf()\nf()\nprint('ran')\n")
    script = os.fsdecode(name)
    plain = env.run_python([script])
    out = os.path.join(env.tmp, "n.prof")
    ours = env.run_sonde(["trace", "-o", out, script])
    check(ours.returncode == plain.returncode == 0 and ours.stdout == plain.stdout
          and ours.stderr == plain.stderr, "exit %d, %r %r vs %r %r" % (
              ours.returncode, ours.stdout, ours.stderr, plain.stdout, plain.stderr))
    stats = load_stats(env, out)
    key = "%s:1(f)" % os.path.basename(script)
    check(stats.get(key, [0, 0])[:2] == [2, 2], "f of %r: %s" % (script, sorted(stats)))


def test_cli_errors(env):
    for args, words in ((["trace"], "no program"), (["trace", "/nonexistent/x.py"], "cannot run"),
                        (["trace", "-x", "a.py"], "unknown option"),
                        (["trace", "-o", "/nonexistent/dir/x.prof", program("recursion.py")], "cannot write"),
                        (["trace", "-o"], "-o needs")):
        proc = env.run_sonde(args)
        check(proc.returncode == 2, "%s: exit %d" % (args, proc.returncode))
        check(proc.stderr.startswith("sonde: ") and proc.stderr.count("\n") == 1 and words in proc.stderr,
              "%s: stderr %r" % (args, proc.stderr))
    helped = env.run_sonde(["trace", "--help"])
    check(helped.returncode == 0 and "-o" in helped.stdout and "-s" in helped.stdout, helped.stdout)
    top = env.run_sonde(["--help"])
    check("trace" in top.stdout, "sonde --help does not list trace")


def test_trace_python_option(env):
    """`sonde trace --python PATH` runs PATH, as `sonde run --python` does,
    whatever SONDE_PYTHON says."""
    script = env.write("which.py", "import sys\nprint(sys.executable)\n")
    proc = env.run_sonde(["trace", "--python", env.python, "-s", "calls", script],
                         env={"SONDE_PYTHON": "/nonexistent/python"})
    check(proc.returncode == 0, "trace --python: %s" % proc.stderr)
    check(os.path.realpath(proc.stdout.splitlines()[0]) == os.path.realpath(env.python),
          "ran %r, not %s" % (proc.stdout.splitlines()[:1], env.python))
    proc = env.run_sonde(["trace", "--python", "/nonexistent/python", script])
    check(proc.returncode != 0 and "cannot start the interpreter '/nonexistent/python'"
          in proc.stderr, "a missing interpreter: %r" % proc.stderr)


test_trace_python_option.versions = "tiers: the command's choice of interpreter"


def test_python_dash_m_sonde_trace(env):
    script = env.write("hello.py", "def f():\n    return 2\nprint(f())\n")
    proc = env.run_python(["-m", "sonde", "trace", script], env={"PYTHONPATH": env.lib})
    check(proc.returncode == 0 and proc.stdout.startswith("2\n"), proc.stderr[-1000:])
    rows = {r[5]: r[0] for r in parse_report(proc.stdout)["rows"]}
    check(rows.get("hello.py:1(f)") == "1", "rows: %s" % rows)


def test_only_the_program_is_recorded(env):
    # Nothing of sonde's start-up or of the interpreter's shutdown: the
    # program's <module> is the root and the only entry without a caller
    # (besides calls made at exit by atexit functions, which are not traced).
    script = env.write("small.py", "import atexit\ndef bye():\n    pass\natexit.register(bye)\n"
                                   "def f():\n    return len('x')\nf()\n")
    proc, stats = trace_stats(env, script)
    roots = [name for name, row in stats.items() if not row[4]]
    check(roots == ["small.py:1(<module>)"], "roots: %s; all: %s" % (roots, sorted(stats)))
    check("small.py:2(bye)" not in stats, "atexit function recorded")
    check(not any("sonde" in name or "site" in name.split(":")[0] for name in stats), sorted(stats))
