"""The extension module links neither the command line nor the attach reader.

Every profiled process loads sonde._sonde, so it must not carry the code
that reads other processes, spawns and follows them, or parses the
command's options: `python3 -m sonde ...` hands over to the sonde command
beside the package instead. Checked on the built module's symbols (nm,
readelf) and by running the hand-over.
"""
import glob
import os
import shutil
import subprocess

from support import Skip, check

VERSIONS = "all: each interpreter's own extension module"

# Name prefixes of functions that only the command may define: the
# dispatcher (src/cli/), the attach reader (src/attach/), and the prim
# handles of another process's threads that only the attach reader uses.
COMMAND_ONLY_PREFIXES = ("sonde_cli_", "sonde_attach_", "sonde_atarget_", "sonde_prim_task_")
# Library functions the module has no use for: starting, tracing and
# waiting for other processes, and the JSON parser of `sonde view`.
# (process_vm_readv stays: the sampler reads its own interpreter with it;
# waitpid too: a root with followed processes starts `sonde _children` at
# its end through a first child it reaps, src/prim/spawn.c, by raw clone
# and execve system calls, never fork or posix_spawn.)
COMMAND_ONLY_IMPORTS = ("ptrace", "fork", "vfork", "posix_spawn", "posix_spawnp", "wait4",
                        "execvp", "setsid")


def _module(env):
    found = glob.glob(os.path.join(env.lib, "sonde", "_sonde*.so"))
    check(len(found) == 1, "expected one extension module in %s, found %r" % (env.lib, found))
    return found[0]


def _tool(name):
    path = shutil.which(name)
    if not path:
        raise Skip("%s is not installed (binutils)" % name)
    return path


def _nm(args):
    out = subprocess.run([_tool("nm")] + args, capture_output=True, text=True, check=True).stdout
    names = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            names.append(parts[-1].split("@")[0])
    return names


def test_module_exports_only_its_init(env):
    so = _module(env)
    exported = _nm(["-D", "--defined-only", so])
    check(exported == ["PyInit__sonde"], "the module exports %r, expected only PyInit__sonde"
          % exported)


def test_module_defines_no_command_code(env):
    so = _module(env)
    defined = _nm(["--defined-only", so])
    check(any(n.startswith("sonde_prim_") for n in defined),
          "no sonde_prim_* symbol in the module's symbol table: stripped? %d symbols" % len(defined))
    bad = sorted(n for n in defined if n.startswith(COMMAND_ONLY_PREFIXES))
    check(not bad, "the module defines command-only functions: %s" % " ".join(bad[:20]))
    check("main" not in defined, "the module defines main()")
    undefined = set(_nm(["-u", so]))
    # zlib: the module gzips pprof with the interpreter's own zlib module
    # (src/ext/gzip.c), never a second copy beside the program's
    needed = sorted(n for n in undefined if n in COMMAND_ONLY_IMPORTS
                    or n.startswith(("cJSON_", "deflate", "inflate", "crc32", "compress")))
    check(not needed, "the module needs %s" % " ".join(needed))
    dynamic = subprocess.run([_tool("readelf"), "-d", so], capture_output=True, text=True).stdout
    check("libz.so" not in dynamic, "the module links zlib:\n%s" % dynamic)
    check("process_vm_readv" in undefined, "the sampler's own-process reader is missing: "
          "is this the module? %d imports" % len(undefined))


def test_module_built_from_no_command_source(env):
    """Where the module has debug information (the default -g), none of its
    compile units comes from src/cli/ or src/attach/."""
    so = _module(env)
    out = subprocess.run([_tool("readelf"), "--debug-dump=info", "--dwarf-depth=1", so],
                         capture_output=True, text=True).stdout
    units = [line.split(":")[-1].strip() for line in out.splitlines()
             if "DW_AT_name" in line and line.strip().endswith(".c")]
    if not units:
        raise Skip("the module has no debug information (CFLAGS without -g)")
    check(any(u.startswith("src/ext/") for u in units), "no src/ext/ unit among %r" % units[:5])
    bad = [u for u in units if u.startswith(("src/cli/", "src/attach/"))]
    check(not bad, "the module is built from %s" % " ".join(bad))


def test_python_dash_m_sonde_hands_over(env):
    """python -m sonde runs the sonde command with this interpreter: its
    --version names sys.executable, and attach's own help comes back."""
    extra = {"PYTHONPATH": env.lib, "SONDE_PYTHON": "/nonexistent/python"}
    exe = env.run_python(["-c", "import sys; print(sys.executable)"]).stdout.strip()
    ver = env.run_python(["-m", "sonde", "--version"], env=extra)
    check(ver.returncode == 0 and ver.stdout.startswith("sonde "), ver.stdout + ver.stderr)
    check("(Python: %s)" % exe in ver.stdout,
          "python -m sonde does not hand over its interpreter %s: %r" % (exe, ver.stdout))
    direct = env.run_sonde(["attach", "--help"])
    via = env.run_python(["-m", "sonde", "attach", "--help"], env=extra)
    check(direct.returncode == 0 and via.returncode == 0 and via.stdout == direct.stdout,
          "python -m sonde attach --help differs from sonde attach --help:\n%s\n%s"
          % (via.stdout + via.stderr, direct.stdout))
    wrong = env.run_python(["-m", "sonde", "--python"], env=extra)
    check(wrong.returncode == 2 and "--python" in wrong.stderr, wrong.stderr)


def test_python_dash_m_sonde_without_command(env):
    """A package copied away from its command: one line that names the
    missing command, exit status 2."""
    lib = os.path.join(env.tmp, "elsewhere", "lib")
    pkg = os.path.join(lib, "sonde")
    os.makedirs(pkg)
    for name in os.listdir(os.path.join(env.lib, "sonde")):
        src = os.path.join(env.lib, "sonde", name)
        if os.path.isfile(src):
            shutil.copy(src, pkg)
    proc = env.run_python(["-m", "sonde", "dump", "1"], env={"PYTHONPATH": lib})
    err = proc.stderr.strip()
    want = os.path.join(env.tmp, "elsewhere", "bin", "sonde")
    check(proc.returncode == 2, "exit %d: %s" % (proc.returncode, err))
    check(len(err.splitlines()) == 1 and err.startswith("sonde: ") and want in err,
          "expected one line naming %s, got %r" % (want, err))
