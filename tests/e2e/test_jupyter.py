"""IPython and Jupyter: `%load_ext sonde`, then `%%sonde` and `%sonde
statement` (sonde/_ipython.py) profile a cell and show the report: the text
report in terminal IPython, the HTML report in an iframe (srcdoc) in a
notebook, run headless with `jupyter nbconvert --execute`, with the build's
package on PYTHONPATH and `pip install`ed into a venv. Run on the
interpreters that have IPython (Debian's python3 with python3-ipython,
python3-ipykernel and jupyter-nbconvert: tools/setup-deps.sh --test).

Issue #32: the shares these tests read (the hot line's share of the cell,
the kernel's unattributed share) go through tests/accuracy.py: the truth by
construction, n the samples the share rests on, a named systematic
allowance, and the Wilson interval at the suite's corrected confidence;
each test checks first that its samples can catch the defect it was
written for. Profiled seconds are a clock, not a sampled estimate: their
bounds stay as they were."""
import html
import json
import os
import re
import shutil
import subprocess

import accuracy
from accuracy import need_samples, samples_to_catch, share_at_least, share_at_most
from support import Skip, check, outside_env

VERSIONS = "all: cells compiled as IPython does, profiled by the in-process sampler"

# Systematic allowances (percentage points):
# - the hot line of a cell that is its loop, by construction (its Python
#   and native share): the cell's other lines (the import, the def, the
#   call) and its first and last ticks, one or two of ~100-200 samples
HOT_ALLOWANCE = 5.0
# - a kernel's unattributed time: IPython's own code around the cell
#   between the magic's start and stop (compiling the cell, running it,
#   the display hooks), a few ticks of ~100
KERNEL_ALLOWANCE = 5.0
# Defects the checks were written for: the hot line missing or its time
# charged to another line (the call's): half of it at least; the kernel's
# own threads (idle in poll) sampled: half the samples unattributed or more.
HOT_DEFECT = 50.0
THREADS_DEFECT = 50.0


def _power_hot(what, n):
    need_samples(what, n, samples_to_catch(1 - HOT_DEFECT / 100.0, 1.0, HOT_ALLOWANCE / 100.0))

# A cell as a user types it: the hot line is line 4 of the code below
# %%sonde (IPython numbers the cell's body from 1).
HOT_SOURCE = "while time.perf_counter() < end: pass  # hot"
HOT_LINENO = 4
CELL_BODY = """\
import time
def spin(seconds):
    end = time.perf_counter() + seconds
    %s
spin(1.0)
""" % HOT_SOURCE


def _report_row(report, lineno, source):
    """The percentages of the text report's row for line lineno showing
    source, or None."""
    for row in report.splitlines():
        m = re.match(r"\s*(\d+)\s+(.*?)\s{2,}\S*\s*" + re.escape(source) + r"\s*$", row)
        if m and int(m.group(1)) == lineno:
            return [float(x) for x in re.findall(r"([\d.]+)%", m.group(2))]
    return None


def test_ipython_cell_and_line_magics(env):
    """A terminal IPython session, typed on its standard input."""
    typed = "\n".join([
        "%load_ext sonde",
        "%%sonde --interval 0.005",
        CELL_BODY,
        "",  # a blank line ends the cell
        "%sonde --all-lines spin(0.3); s = 'it' + \"'s\"",
        "%sonde --bogus spin(0.1)",
        "print('ran', spin.__code__.co_filename, s)",
        "exit",
    ]) + "\n"
    proc = env.run_python(["-m", "IPython", "--no-banner", "--colors=NoColor", "--simple-prompt"],
                          input=typed, timeout=60,
                          env={"PYTHONPATH": env.lib, "IPYTHONDIR": os.path.join(env.tmp, "ipy")})
    out = proc.stdout
    check(proc.returncode == 0 and re.search(r"ran <ipython-input-\d+-[0-9a-f]+> it's", out),
          out + proc.stderr)
    reports = re.split(r"(?=sonde \d+\.\d+\.\d+: )", out)[1:]
    check(len(reports) == 2, "want 2 reports (%%sonde, %%sonde stmt): %s" % out[-3000:])
    cell, line = reports
    # the header names the code profiled, not the kernel's command line
    check(cell.split("\n", 1)[0].endswith(": %%sonde import time")
          and line.split("\n", 1)[0].endswith(": %sonde spin(0.3); s = 'it' + \"'s\""),
          "headers: %r, %r" % (cell.split("\n", 1)[0], line.split("\n", 1)[0]))
    check("every 5 ms" in cell, "--interval not taken: %s" % cell)
    # the cell's file holds all the time: the line calling %%sonde is left out
    check(re.search(r"<ipython-input-\d+-[0-9a-f]+>: 100\.0% of time", cell), cell)
    row = _report_row(cell, HOT_LINENO, HOT_SOURCE)
    check(row, "hot line %d not found:\n%s" % (HOT_LINENO, cell))
    # n: the report's samples, less its share outside profiled files (the
    # text report gives no line's count); truth: the cell is its loop
    ticks = re.search(r"s elapsed, (\d+) samples", cell)
    check(ticks, "no sample count in the report:\n%s" % cell)
    outside = re.search(r"([\d.]+)% of the sampled time was outside", cell)
    n = int(int(ticks.group(1)) * (100 - (float(outside.group(1)) if outside else 0.0)) / 100)
    _power_hot("%%sonde hot line", n)
    note = accuracy.check(share_at_least("%%%%sonde hot line %d" % HOT_LINENO, sum(row), n, 100,
                                         HOT_ALLOWANCE))
    secs = float(re.search(r"([\d.]+) s profiled", cell).group(1))
    check(0.8 <= secs <= 3.0, "profiled %.3f s of a 1 s loop" % secs)
    # the line magic's statement runs the cell's spin(): its hot line again
    check(_report_row(line, HOT_LINENO, HOT_SOURCE), "line magic: hot line missing:\n" + line)
    check("UsageError: sonde: unknown option '--bogus'" in out + proc.stderr,
          "bad option: %s" % (out + proc.stderr)[-2000:])
    return note


test_ipython_cell_and_line_magics.requires = "IPython"


def _notebook(cells):
    """nbformat 4 JSON for code cells, with the test's kernel."""
    return {
        "nbformat": 4, "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "sonde-test", "display_name": "sonde test",
                                    "language": "python"}},
        "cells": [{"cell_type": "code", "id": "cell%d" % i, "metadata": {},
                   "execution_count": None, "outputs": [], "source": text}
                  for i, text in enumerate(cells)],
    }


def _run_notebook(env, python, shell):
    """Runs a notebook of `%load_ext sonde` and a %%sonde cell headless
    (jupyter nbconvert --execute) in a kernel of python, with the
    environment shell; checks the cell's output is the HTML report in an
    iframe (srcdoc) and returns the profile the page holds."""
    nbconvert = shutil.which("jupyter-nbconvert")
    if not nbconvert:
        raise Skip("no jupyter-nbconvert (Debian: apt-get install jupyter-nbconvert)")
    # the kernel: python, found through JUPYTER_PATH first
    jupyter = os.path.join(env.tmp, "jupyter")
    kernels = os.path.join(jupyter, "kernels", "sonde-test")
    os.makedirs(kernels)
    with open(os.path.join(kernels, "kernel.json"), "w") as f:
        json.dump({"argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                   "display_name": "sonde test", "language": "python"}, f)
    nb = os.path.join(env.tmp, "cells.ipynb")
    with open(nb, "w") as f:
        json.dump(_notebook(["%load_ext sonde", "%%sonde\n" + CELL_BODY]), f)
    shell = dict(shell, JUPYTER_PATH=jupyter,
                 JUPYTER_RUNTIME_DIR=os.path.join(env.tmp, "runtime"),
                 JUPYTER_CONFIG_DIR=os.path.join(env.tmp, "config"),
                 IPYTHONDIR=os.path.join(env.tmp, "ipy"), PYDEVD_DISABLE_FILE_VALIDATION="1")
    proc = subprocess.run([nbconvert, "--to", "notebook", "--execute", "--output", "out.ipynb", nb],
                          capture_output=True, text=True, env=shell, cwd=env.tmp, timeout=120)
    out = os.path.join(env.tmp, "out.ipynb")
    check(proc.returncode == 0 and os.path.exists(out), proc.stdout + proc.stderr[-3000:])
    with open(out) as f:
        outputs = json.load(f)["cells"][1]["outputs"]
    shown = [o for o in outputs if o["output_type"] == "display_data"]
    check(len(shown) == 1 and "text/html" in shown[0]["data"], "outputs: %s" % str(outputs)[:2000])
    frame = "".join(shown[0]["data"]["text/html"])
    m = re.fullmatch(r'<iframe srcdoc="([^"<>]*)"[^<>]*></iframe>', frame, re.S)
    check(m, "not an iframe with srcdoc: %s" % frame[:300])
    page = html.unescape(m.group(1))
    check(page.startswith("<!DOCTYPE html>"), page[:200])
    data = re.search(r'<script type="application/json" id="sonde-profile">(.*?)</script>',
                     page, re.S)
    check(data, "no profile in the page")
    return json.loads(data.group(1))


def _check_notebook_profile(prof):
    """The cell's file, its source and its hot line; nothing else."""
    files = prof["files"]
    check(len(files) == 1 and re.search(r"/ipykernel_\d+/\d+\.py$", list(files)[0]),
          "files: %s" % list(files))
    entry = list(files.values())[0]
    check(entry["source"][HOT_LINENO - 1].strip() == HOT_SOURCE, "source: %r" % entry["source"])
    hot = [l for l in entry["lines"] if l["lineno"] == HOT_LINENO]
    check(hot and hot[0]["line"].strip() == HOT_SOURCE, "hot line: %s" % entry["lines"])
    # truth: the cell is its loop, on CPU (its Python and native share); n:
    # the samples of the cell's lines
    n = sum(l.get("n_samples", 0) for l in entry["lines"])
    _power_hot("notebook hot line", n)
    notes = [accuracy.check(share_at_least(
        "notebook hot line %d" % HOT_LINENO,
        hot[0]["n_cpu_percent_python"] + hot[0]["n_cpu_percent_c"], n, 100, HOT_ALLOWANCE))]
    # the kernel's own threads (idle in poll) are not the cell's time:
    # unattributed is a share of all the run's samples (n: the sampler's
    # ticks), truth 0 but for IPython's code around the cell
    ticks = prof["n_samples"]
    need_samples("kernel unattributed", ticks, samples_to_catch(
        THREADS_DEFECT / 100.0, 0.0, KERNEL_ALLOWANCE / 100.0))
    notes.append(accuracy.check(share_at_most("kernel unattributed", prof["unattributed_percent"],
                                              ticks, 0, KERNEL_ALLOWANCE)))
    check(0.8 <= prof["profiled_time_sec"] <= 3.0, "profiled %r s" % prof["profiled_time_sec"])
    return "; ".join(notes)


def test_notebook_html_report(env):
    """The build's package on PYTHONPATH, which the kernel inherits."""
    shell = env.base_env({"PYTHONPATH": env.lib})
    return _check_notebook_profile(_run_notebook(env, env.python, shell))


test_notebook_html_report.requires = "ipykernel"


def test_cell_source_from_linecache(env):
    """Without IPython: code compiled as IPython compiles a cell (a name that
    is no file, its text in linecache) is profiled, with its text; code
    under a name the filter leaves out ("<string>") is not, text or not."""
    out = os.path.join(env.tmp, "cell.json")
    cell = CELL_BODY.replace("spin(1.0)", "spin(0.6)")
    script = env.write("cellsim.py", """\
        import linecache, sonde
        cell = %r
        for name in ("<ipython-input-7-0123abcd>", "<string>"):
            linecache.cache[name] = (len(cell), None, cell.splitlines(True), name)
        sonde.start(outfile=%r, json=True)
        exec(compile(cell, "<ipython-input-7-0123abcd>", "exec"), {})
        exec(compile(cell.replace("0.6", "0.2"), "<string>", "exec"), {})
        sonde.stop()
        """ % (cell, out))
    proc = env.run_python([script], env={"PYTHONPATH": env.lib}, timeout=60)
    check(proc.returncode == 0, proc.stderr)
    with open(out) as f:
        prof = json.load(f)
    # <string>'s time goes to the line of cellsim.py that ran it
    check("<ipython-input-7-0123abcd>" in prof["files"] and "<string>" not in prof["files"],
          "files: %s" % list(prof["files"]))
    entry = prof["files"]["<ipython-input-7-0123abcd>"]
    check(entry.get("source") == cell.splitlines(), "source: %r" % entry.get("source"))
    hot = [l for l in entry["lines"] if l["lineno"] == HOT_LINENO]
    check(hot and hot[0]["line"].strip() == HOT_SOURCE, "hot line: %s" % entry["lines"])


def test_notebook_in_venv_with_pip_install(env):
    """A venv of this python made with --system-site-packages (Debian's
    IPython and ipykernel), sonde `pip install`ed into it offline, the
    kernel the venv's python, no PYTHONPATH."""
    install = _load_test_install(env)
    venv = os.path.join(env.tmp, "venv")
    made = subprocess.run([env.python, "-m", "venv", "--system-site-packages", venv],
                          capture_output=True, text=True, env=outside_env(), timeout=120)
    if made.returncode != 0 and "ensurepip" in made.stdout + made.stderr:
        raise Skip("no venv module with pip (Debian: apt-get install python3-venv)")
    check(made.returncode == 0, "python -m venv failed: %s" % made.stderr[-2000:])
    shell = outside_env()
    for name in ("SONDE_PYTHON", "PYTHONPATH", "PYTHONHOME", "NO_COLOR", "PIP_INDEX_URL"):
        shell.pop(name, None)
    shell["PATH"] = os.path.join(venv, "bin") + os.pathsep + shell.get("PATH", "")
    shell["VIRTUAL_ENV"] = venv
    python = os.path.join(venv, "bin", "python")
    install._call([python, "-m", "pip", "install", "--no-index", "--no-build-isolation",
                   "--config-settings", "build-dir=" + install._shared_build(env), env.root],
                  shell, env.tmp, timeout=300)
    where = install._call([python, "-c", "import sonde, IPython; print(sonde.__file__)"],
                          shell, env.tmp).stdout.strip()
    check(os.path.realpath(where).startswith(os.path.realpath(venv) + os.sep),
          "the venv's sonde is %s" % where)
    return _check_notebook_profile(_run_notebook(env, python, shell))


test_notebook_in_venv_with_pip_install.requires = "ipykernel"


def _load_test_install(env):
    """tests/e2e/test_install.py, for its pip install helpers (one shared
    build directory for every install of a run)."""
    import importlib.util
    path = os.path.join(env.root, "tests", "e2e", "test_install.py")
    spec = importlib.util.spec_from_file_location("sonde_test_install", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
