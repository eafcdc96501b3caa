"""GPU profiling through NVML (src/ext/gpu.c), against a stand-in NVML.

There is no GPU on the test machines: the Makefile builds a stand-in
libnvidia-ml.so.1 (tests/gpu/fake_nvml.c, for tests only) into
build/.../tests/fakenvml/, and these tests put that directory on
LD_LIBRARY_PATH. The profiled program scripts the figures the stand-in
reports by rewriting a control file (FAKE_NVML_CONTROL) while it runs, so
each line's ground truth is known: the line that runs while the stand-in
says 90 % must get about 90 %.

The stand-in's figures are constant while a line runs, so a line's GPU
figures are exact but for a poll period of lag at its edges (fixed
tolerances, said so beside them). Issue #32: the one figure that rests on
how a line's time splits (a line that runs half at 1000 MB, half at 3000
MB: its mean) goes through tests/accuracy.py, as the CPU seconds of its
second half against the program's thread_time (accuracy.seconds_near;
that run samples CPU time only: in wall-clock mode a run-queue wait that
straddles a half's end moves whole, 100 ms and more on an overloaded
machine).
"""
import json
import os

import accuracy
from accuracy import need_samples, seconds_near, ticks_to_catch
from support import Skip, check, concurrently, lines_by_no, marked_lines

VERSIONS = "tiers: the NVML reader and the GPU figures are C code the same everywhere"

# The default sampling interval (s).
INTERVAL = 0.01
# Systematic allowance of the mixed line's second half (relative): a late
# tick at either half's ends (half its excess goes to the place before it),
# the calls around the timed span.
SPLIT_ALLOWANCE = 0.05
# The defect: the line's memory taken from one reading (the last: 3000 MB,
# all of the line's time at the second half's figure: twice the truth; the
# first: 1000 MB, none) rather than the mean over its time.
ONE_READING = 2.0

# Lines are given this long after each change of figures before they run:
# the reader polls NVML every 20 ms (gpu.c, GPU_POLL_MIN_NS).
SETTLE_SEC = 0.2

PROLOGUE = """\
import os, sys, time
CONTROL = os.environ["FAKE_NVML_CONTROL"]
def phase(text):
    with open(CONTROL + ".new", "w") as f:
        f.write(text)
    os.replace(CONTROL + ".new", CONTROL)
    time.sleep(%r)
def spin(sec):
    end = time.perf_counter() + sec
    while time.perf_counter() < end: pass  # @spin
def spin_hot(sec):
    end = time.perf_counter() + sec
    while time.perf_counter() < end: pass  # @hot
def spin_cold(sec):
    end = time.perf_counter() + sec
    while time.perf_counter() < end: pass  # @cold
def spin_mixed(sec):  # CPU time: test_gpu_attribution_per_line's truth
    end = time.thread_time() + sec
    while time.thread_time() < end: pass  # @mixed
""" % SETTLE_SEC


def fake_dir(env):
    path = os.path.join(env.build, "tests", "fakenvml")
    check(os.path.exists(os.path.join(path, "libnvidia-ml.so.1")), "stand-in NVML not built: " + path)
    return path


def gpu_env(env, mode="", devices=1, extra=None, stand_in=True, case=""):
    """The environment of a run: the stand-in NVML (unless stand_in is
    False), its control file and log (nvml-control, nvml-log; with a case
    name, nvml-control-CASE and nvml-log-CASE: for runs made at once)."""
    suffix = "-" + case if case else ""
    control = os.path.join(env.tmp, "nvml-control" + suffix)
    with open(control, "w") as f:
        f.write("util=0 mem=0")
    e = {"FAKE_NVML_CONTROL": control, "FAKE_NVML_MODE": mode, "FAKE_NVML_DEVICES": str(devices),
         "FAKE_NVML_LOG": os.path.join(env.tmp, "nvml-log" + suffix)}
    if stand_in:
        e["LD_LIBRARY_PATH"] = fake_dir(env) + (":" + os.environ["LD_LIBRARY_PATH"]
                                                 if os.environ.get("LD_LIBRARY_PATH") else "")
    e.update(extra or {})
    return e


def per_process_possible():
    """NVML's process ids are the kernel's global ones: sonde uses them only
    in the initial pid namespace (not in a container with its own)."""
    try:
        return os.readlink("/proc/self/ns/pid") == "pid:[4026531836]"
    except OSError:
        return False


def gpu_fields(prof):
    """Every GPU field of a profile: top-level and per line/function."""
    found = sorted(k for k in prof if k.startswith("gpu"))
    for entry in prof["files"].values():
        for row in entry["lines"] + entry["functions"]:
            found += sorted(k for k in row if "gpu" in k)
    return found


def run_program(env, name, body, run_env, options=()):
    script = env.write(name, PROLOGUE + body)
    proc, prof = env.profile(script, options=list(options), env=run_env)
    check(proc.returncode == 0, proc.stderr[-2000:])
    return script, proc, prof


def test_gpu_attribution_per_line(env):
    # Ground truth: what the stand-in reports while each line runs.
    script, proc, prof = run_program(env, "attr.py", """\
phase("util=90 mem=2048")
spin_hot(0.6)
phase("util=0 mem=512")
spin_cold(0.6)
phase("util=40 mem=1000")
spin_mixed(0.4)
phase("util=40 mem=3000")
t0 = time.thread_time()
spin_mixed(0.4)
print(time.thread_time() - t0)
""", gpu_env(env), options=["--virtual-time"])
    marks = marked_lines(script)
    lines = lines_by_no(prof, script)
    hot, cold, mixed = lines[marks["hot"]], lines[marks["cold"]], lines[marks["mixed"]]
    check(prof.get("gpu") is True, "no gpu flag: %r" % {k: prof[k] for k in prof if k != "files"})
    check(prof.get("gpu_device") == "sonde stand-in GPU 0", "gpu_device %r" % prof.get("gpu_device"))
    check(prof.get("gpu_per_process") is per_process_possible(), "gpu_per_process %r"
          % prof.get("gpu_per_process"))
    # 90 % while the hot line ran, 0 % while the cold one did (tolerance:
    # a poll period of lag at the edges of a line).
    check(82 <= hot["n_gpu_percent"] <= 90, "hot line: %r" % hot)
    check(cold["n_gpu_percent"] <= 5, "cold line: %r" % cold)
    check(abs(mixed["n_gpu_percent"] - 40) <= 5, "mixed line: %r" % mixed)
    # Memory: average and peak while the line ran.
    check(abs(hot["n_gpu_avg_memory_mb"] - 2048) <= 60 and hot["n_gpu_peak_memory_mb"] == 2048,
          "hot line memory: %r" % hot)
    check(abs(cold["n_gpu_avg_memory_mb"] - 512) <= 60 and cold["n_gpu_peak_memory_mb"] == 512,
          "cold line memory: %r" % cold)
    # Half of its time at 1000 MB, half at 3000 MB: the mean, weighted by
    # the samples' time, is 1000 MB + 2000 MB x the second half's share of
    # the line's time, so the mean times the line's seconds gives the
    # second half's seconds, against the program's thread_time around it.
    check(mixed["n_gpu_peak_memory_mb"] == 3000, "mixed line peak (exact): %r" % mixed)
    mixed_sec = (mixed["n_cpu_percent_python"] + mixed["n_cpu_percent_c"]
                 + mixed["n_sys_percent"]) / 100.0 * prof["profiled_time_sec"]
    second = (mixed["n_gpu_avg_memory_mb"] - 1000) / 2000 * mixed_sec
    truth = float(proc.stdout.split()[-1])
    need_samples("mixed line's second half", round(truth / INTERVAL),
                 ticks_to_catch(ONE_READING, SPLIT_ALLOWANCE))
    note = accuracy.check(seconds_near("mixed line's second half (mean %.0f MB)"
                                       % mixed["n_gpu_avg_memory_mb"], second, truth, INTERVAL,
                                       SPLIT_ALLOWANCE))
    # The run's summary covers every sample with a reading.
    check(prof["gpu_peak_memory_mb"] == 3000, "gpu_peak_memory_mb %r" % prof["gpu_peak_memory_mb"])
    check(20 <= prof["gpu_percent"] <= 70, "gpu_percent %r" % prof["gpu_percent"])
    funcs = {f["line"]: f for f in next(iter(prof["files"].values()))["functions"]}
    check(82 <= funcs["spin_hot"]["n_gpu_percent"] <= 90, "function figures: %r" % funcs["spin_hot"])
    # NVML is shut down as often as it was initialised.
    log = nvml_log(env)
    check(log == ["init", "shutdown"], "NVML init/shutdown: %r" % log)
    return note


def nvml_log(env, pids=False):
    """The stand-in NVML's log: "init"/"shutdown" in order (with the pid of
    the process that called, when pids)."""
    with open(os.path.join(env.tmp, "nvml-log")) as f:
        entries = [line.split() for line in f.read().splitlines()]
    return [(what, int(pid)) for what, pid in entries] if pids else [e[0] for e in entries]


def test_gpu_terminal_columns(env):
    script = env.write("cols.py", PROLOGUE + 'phase("util=90 mem=2048")\nspin_hot(0.5)\n')
    out = os.path.join(env.tmp, "report.txt")
    proc = env.run_sonde(["run", "-o", out, script], env=gpu_env(env))
    check(proc.returncode == 0, proc.stderr)
    text = open(out).read()
    check("GPU util" in text and "GPU MB" in text, "no GPU columns:\n" + text)
    check("sonde stand-in GPU 0" in text, "no GPU summary:\n" + text)
    hot_no = str(marked_lines(script)["hot"])
    hot = [l for l in text.splitlines() if l.split()[:1] == [hot_no]]
    check(hot and "90%" in hot[0] and "2048" in hot[0], "hot line without its GPU figures: %r" % hot)


PER_PROCESS = """\
import subprocess
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
try:
    phase("util=90 mem=4000 proc_util=30 proc_mem=1000 child=%d child_util=20 child_mem=500 "
          "other=1 other_util=50 other_mem=7000" % child.pid)
    spin(0.6)
finally:
    child.kill()
    child.wait()
"""


def test_gpu_per_process_and_device_fallback(env):
    # The device is 90 % busy with 4000 MB in use; this process uses 30 %
    # and 1000 MB, its child 20 % and 500 MB, and another process (pid 1)
    # the rest.
    # both runs at once (CI time): the stand-in's figures are constant
    # through each
    (script, proc, prof), (script2, proc2, prof2) = concurrently(
        lambda mode: run_program(env, "perproc-%s.py" % (mode or "default"), PER_PROCESS,
                                 gpu_env(env, mode=mode, case=mode or "default")),
        ["", "no-per-process"])
    line = lines_by_no(prof, script)[marked_lines(script)["spin"]]
    if per_process_possible():
        check(prof["gpu_per_process"] is True, "per-process figures not used")
        check(abs(line["n_gpu_percent"] - 50) <= 3, "per-process utilisation (30+20): %r" % line)
        check(abs(line["n_gpu_avg_memory_mb"] - 1500) <= 1, "per-process memory (1000+500): %r" % line)
    else:
        check(prof["gpu_per_process"] is False, "per-process figures in a pid namespace")
        check(abs(line["n_gpu_percent"] - 90) <= 3, "device utilisation: %r" % line)

    # The same with an NVML that has no per-process queries: device-wide.
    script, proc, prof = script2, proc2, prof2
    line = lines_by_no(prof, script)[marked_lines(script)["spin"]]
    check(prof["gpu_per_process"] is False, "device-wide fallback not reported")
    check(abs(line["n_gpu_percent"] - 90) <= 3, "device-wide utilisation: %r" % line)
    check(abs(line["n_gpu_avg_memory_mb"] - 4000) <= 1, "device-wide memory: %r" % line)


OUTPUT_PROGRAM = """\
phase("util=90 mem=2048")
spin(0.3)
print("to stdout")
print("to stderr", file=sys.stderr)
sys.exit(3)
"""


def test_gpu_absent_library(env):
    probe = env.run_python(["-c", "import ctypes; ctypes.CDLL('libnvidia-ml.so.1')"],
                           env=gpu_env(env, stand_in=False))
    if probe.returncode == 0:
        raise Skip("a real libnvidia-ml.so.1 is installed here")
    script = env.write("absent.py", PROLOGUE + OUTPUT_PROGRAM)
    report = os.path.join(env.tmp, "report.txt")

    def run(case):
        # the runs are made at once (CI time): nothing here is timed
        name, options = case
        run_env = gpu_env(env, stand_in=False, case=name)
        if name == "plain":
            return env.run_python([script], env=run_env), None
        if name == "text":
            return env.run_sonde(["run", "-o", report, script], env=run_env), None
        out = os.path.join(env.tmp, name + ".json")
        proc = env.run_sonde(["run", "--json", "-o", out] + options + [script], env=run_env)
        with open(out) as f:
            return proc, json.load(f)

    cases = [("default", []), ("no-gpu", ["--no-gpu"]), ("gpu", ["--gpu"]), ("verbose", ["-v"]),
             ("plain", None), ("text", None)]
    runs = dict(zip([name for name, _ in cases], concurrently(run, cases)))
    plain = runs["plain"][0]
    proc, prof = runs["default"]
    check(proc.returncode == 3 == plain.returncode, "exit status %d" % proc.returncode)
    check(proc.stdout == plain.stdout and proc.stderr == plain.stderr,
          "output changed: %r %r" % (proc.stdout, proc.stderr))
    check(not gpu_fields(prof), "GPU fields without a GPU: %r" % gpu_fields(prof))
    check(set(prof) == set(runs["no-gpu"][1]), "top-level fields differ from --no-gpu")
    for name in ("no-gpu", "gpu", "verbose"):
        check(not gpu_fields(runs[name][1]), "%s: GPU fields without a GPU" % name)
    # One line says why, in verbose mode or when --gpu was asked for.
    for name in ("verbose", "gpu"):
        extra = runs[name][0].stderr.replace(plain.stderr, "", 1).splitlines()
        check(len(extra) == 1 and extra[0].startswith("sonde: GPU: not profiled: ")
              and "libnvidia-ml.so.1" in extra[0], "%s: %r" % (name, extra))
    check("GPU" not in open(report).read(), "GPU in the terminal report without a GPU")


def test_gpu_nvml_failures(env):
    script = env.write("fail.py", PROLOGUE + 'phase("util=90 mem=2048")\nspin(0.3)\n')
    modes = (("init-fails", "did not initialise"), ("no-device", "sees no GPU"))
    cases = [(mode, options) for mode, _ in modes for options in (["-v"], [])]

    def run(case):
        # the runs are made at once (CI time): nothing here is timed
        mode, options = case
        return env.profile(script, options=options,
                           env=gpu_env(env, mode=mode, case=mode + "".join(options)))

    runs = dict(zip([(mode, tuple(options)) for mode, options in cases], concurrently(run, cases)))
    for mode, reason in modes:
        proc, prof = runs[(mode, ("-v",))]
        check(proc.returncode == 0, proc.stderr)
        check(not gpu_fields(prof), "%s: GPU fields: %r" % (mode, gpu_fields(prof)))
        notes = [l for l in proc.stderr.splitlines() if l.startswith("sonde: GPU")]
        check(len(notes) == 1 and reason in notes[0], "%s: %r" % (mode, proc.stderr))
        proc, prof = runs[(mode, ())]
        check(proc.stderr == "", "%s: stderr without -v: %r" % (mode, proc.stderr))


def test_gpu_off(env):
    script = env.write("off.py", PROLOGUE + 'phase("util=90 mem=2048")\nspin(0.3)\n')

    def run(gpu):
        # the runs are made at once (CI time): nothing here is timed
        if gpu == "--no-gpu":
            return env.profile(script, options=["--no-gpu", "-v"], env=gpu_env(env, case="cli"))
        out = os.path.join(env.tmp, "api-%s.json" % gpu)
        api = env.write("api-%s.py" % gpu, PROLOGUE + """\
import sonde
sonde.start(outfile=%r, json=True, gpu=%s)
phase("util=90 mem=2048")
spin(0.3)
sonde.stop()
""" % (out, gpu))
        proc = env.run_python([api], env=gpu_env(env, extra={"PYTHONPATH": env.lib}, case=gpu))
        check(proc.returncode == 0, proc.stderr)
        with open(out) as f:
            return proc, json.load(f)

    # the command's --no-gpu; the API: sonde.start(gpu=False) and the default
    cases = [("--no-gpu", False), ("False", False), ("None", True)]
    runs = concurrently(run, [gpu for gpu, _ in cases])
    proc, prof = runs[0]
    check(not gpu_fields(prof), "--no-gpu: GPU fields: %r" % gpu_fields(prof))
    check(not os.path.exists(os.path.join(env.tmp, "nvml-log-cli")), "--no-gpu initialised NVML")
    check("sonde: GPU: off (--no-gpu)" in proc.stderr, proc.stderr)
    for (gpu, want), (proc, prof) in list(zip(cases, runs))[1:]:
        check(bool(gpu_fields(prof)) is want, "sonde.start(gpu=%s): %r" % (gpu, gpu_fields(prof)))


def test_gpu_two_devices(env):
    # Utilisation is the mean over the devices, memory their sum.
    script, proc, prof = run_program(env, "two.py", """\
phase("util0=80 util1=20 mem0=1000 mem1=3000")
spin(0.5)
""", gpu_env(env, devices=2))
    line = lines_by_no(prof, script)[marked_lines(script)["spin"]]
    check(prof["gpu_device"] == "sonde stand-in GPU 0, sonde stand-in GPU 1", prof["gpu_device"])
    check(abs(line["n_gpu_percent"] - 50) <= 3, "mean utilisation: %r" % line)
    check(abs(line["n_gpu_avg_memory_mb"] - 4000) <= 1, "summed memory: %r" % line)


def test_gpu_cuda_visible_devices(env):
    script = env.write("cvd.py", PROLOGUE + """\
phase("util0=10 util1=50 util2=90 mem0=100 mem1=200 mem2=400")
spin(0.4)
""")
    uuid1 = "GPU-5e6d0000-0000-4000-8000-000000000001"
    cases = [
        ("2", "sonde stand-in GPU 2", 90, 400),
        (uuid1, "sonde stand-in GPU 1", 50, 200),
        ("2,0", "sonde stand-in GPU 2, sonde stand-in GPU 0", 50, 500),
        ("1,7,2", "sonde stand-in GPU 1", 50, 200),  # CUDA stops at an invalid entry
        ("", None, 0, 0),
        ("GPU-5e6d", None, 0, 0),  # ambiguous prefix: names no device
    ]

    def run(case):
        n, (visible, _, _, _) = case
        return env.profile(script, options=["-v"], env=gpu_env(
            env, devices=3, extra={"CUDA_VISIBLE_DEVICES": visible}, case=str(n)))

    # the stand-in's figures are constant through each run: the runs are
    # made at once (CI time)
    runs = concurrently(run, list(enumerate(cases)))
    for (visible, device, util, mem), (proc, prof) in zip(cases, runs):
        check(proc.returncode == 0, proc.stderr)
        if device is None:
            check(not gpu_fields(prof), "CUDA_VISIBLE_DEVICES=%r: %r" % (visible, gpu_fields(prof)))
            check("CUDA_VISIBLE_DEVICES" in proc.stderr, proc.stderr)
            continue
        line = lines_by_no(prof, script)[marked_lines(script)["spin"]]
        check(prof.get("gpu_device") == device, "CUDA_VISIBLE_DEVICES=%r: %r"
              % (visible, prof.get("gpu_device")))
        check(abs(line["n_gpu_percent"] - util) <= 3 and abs(line["n_gpu_avg_memory_mb"] - mem) <= 1,
              "CUDA_VISIBLE_DEVICES=%r: %r" % (visible, line))


def test_gpu_reader_paused_around_fork(env):
    """The GPU reader thread is stopped around os.fork() like the sampler:
    a single-threaded program stays single-threaded at fork (3.12+ warns
    otherwise), and the reader comes back in the parent without setting
    NVML up again."""
    body = """\
phase("util=0 mem=512")
spin_cold(0.3)
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
phase("util=70 mem=1500")
spin_hot(0.6)
"""
    run_env = gpu_env(env)
    plain_script = env.write("plain_fork.py", PROLOGUE + body)
    plain = env.run_python([plain_script], env=run_env)
    check(plain.returncode == 0, plain.stderr[-2000:])
    script, proc, prof = run_program(env, "gpu_fork.py", body, gpu_env(env))
    check(proc.stderr == plain.stderr, "stderr differs: %r vs %r" % (plain.stderr, proc.stderr))
    lines = lines_by_no(prof, script)
    hot = lines.get(marked_lines(script)["hot"])
    check(hot, "no samples after the fork")
    # the reader came back: the stand-in's figures after the fork reach the line
    check(62 <= hot.get("n_gpu_percent", 0) <= 70, "line after the fork: %r" % hot)
    check(hot.get("n_gpu_peak_memory_mb") == 1500, "line after the fork: %r" % hot)
    # the parent set NVML up once; the forked child, profiled too
    # (test_children.py), sets it up for itself
    parent = [what for what, pid in nvml_log(env, pids=True) if pid == prof["processes"][0]["pid"]]
    check(parent == ["init", "shutdown"], "NVML init/shutdown in the parent: %r"
          % nvml_log(env, pids=True))
    check(len(prof["processes"]) == 2 and nvml_log(env).count("init") == 2,
          "the forked child: %r %r" % (prof["processes"], nvml_log(env, pids=True)))


test_gpu_reader_paused_around_fork.versions = ("all: the reader stopped around os.fork, whose "
                                               "hooks (and 3.12+'s warning) are the interpreter's")
