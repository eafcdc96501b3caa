/* remote_exec.c — PEP 768: asking a live interpreter (3.14+) to run a
 * Python file at its next safe point.
 *
 * Owns: sonde_pyproc_remote_exec, _remote_pending and _remote_cancel.
 * CPython 3.14 gives each thread state a _PyRemoteDebuggerSupport (an int
 * debugger_pending_call and a char debugger_script_path[512]); a debugger
 * that may ptrace the process writes the path, sets the flag, and sets the
 * "please stop" bit of the thread's eval breaker: the thread then runs the
 * file at its next eval breaker check (between bytecodes), with the GIL,
 * and clears the flag. Where each field lies comes from the target's own
 * _Py_DebugOffsets (its debugger_support section, pyoffsets.h). Only the
 * `sonde` command calls this (sonde attach --inject), never a signal
 * handler; the writes go through src/prim (process_vm_writev). Everything
 * read back is the target's: a flag is read as a plain int, nothing is
 * followed.
 */
#include "pyread_internal.h"

#include "../prim/prim.h"

#include <string.h>

/* The thread state's support block, or -ENOTSUP before 3.14. */
static int remote_layout(const sonde_pyproc_t *proc)
{
    const sonde_pyoffsets_t *off = proc->off;
    if (!off || off->tstate_remote_support < 0 || off->remote_pending_call < 0 ||
        off->remote_script_path < 0 || off->tstate_eval_breaker < 0 ||
        off->interp_remote_debug < 0 || off->remote_script_path_size <= 1 ||
        off->eval_please_stop_bit == 0)
        return -ENOTSUP;
    return 0;
}

static pid_t remote_pid(const sonde_pyproc_t *proc)
{
    return proc->mem.pid;
}

int sonde_pyproc_remote_pending(sonde_pyproc_t *proc, uint64_t tstate)
{
    int rc = remote_layout(proc);
    if (rc < 0) return rc;
    const sonde_pyoffsets_t *off = proc->off;
    int32_t pending = 0;
    rc = sonde_mem_read(&proc->mem,
                        tstate + (uint64_t)off->tstate_remote_support +
                            (uint64_t)off->remote_pending_call,
                        &pending, sizeof pending);
    if (rc != 0) return rc;
    return pending != 0;
}

int sonde_pyproc_remote_exec(sonde_pyproc_t *proc, uint64_t tstate, const char *path)
{
    int rc = remote_layout(proc);
    if (rc < 0) return rc;
    const sonde_pyoffsets_t *off = proc->off;
    size_t len = strlen(path);
    if (len == 0 || len >= (size_t)off->remote_script_path_size) return -ENAMETOOLONG;

    /* the interpreter this thread state belongs to allows it
     * (-X disable-remote-debug, PYTHON_DISABLE_REMOTE_DEBUG, or a build
     * without it leave config.remote_debug at 0) */
    uint64_t interp = 0;
    int32_t enabled = 0;
    if ((rc = sonde_mem_read(&proc->mem, tstate + (uint64_t)off->tstate_interp, &interp,
                             sizeof interp)) != 0)
        return rc;
    if (interp == 0) return -EFAULT;
    if ((rc = sonde_mem_read(&proc->mem, interp + (uint64_t)off->interp_remote_debug, &enabled,
                             sizeof enabled)) != 0)
        return rc;
    if (enabled != 1) return -ENOPROTOOPT;

    uint64_t support = tstate + (uint64_t)off->tstate_remote_support;
    rc = sonde_pyproc_remote_pending(proc, tstate);
    if (rc < 0) return rc;
    if (rc == 1) return -EBUSY; /* another debugger's request, not run yet */

    /* the path first, whole with its NUL, then the flag, then the bit: the
     * thread reads the path only once it sees the flag */
    pid_t pid = remote_pid(proc);
    if ((rc = sonde_prim_mem_write(pid, support + (uint64_t)off->remote_script_path, path,
                                   len + 1)) != 0)
        return rc;
    int32_t one = 1;
    if ((rc = sonde_prim_mem_write(pid, support + (uint64_t)off->remote_pending_call, &one,
                                   sizeof one)) != 0)
        return rc;
    /* The eval breaker is a word the thread changes itself (atomically):
     * read it and or the bit in, as CPython's own sys.remote_exec does
     * from outside. A bit the thread set or cleared between the two is
     * the thread's to look at again; the request stays pending either way,
     * and the caller waits and asks again (sonde_pyproc_remote_kick). */
    return sonde_pyproc_remote_kick(proc, tstate);
}

int sonde_pyproc_remote_kick(sonde_pyproc_t *proc, uint64_t tstate)
{
    int rc = remote_layout(proc);
    if (rc < 0) return rc;
    const sonde_pyoffsets_t *off = proc->off;
    uint64_t breaker = 0;
    uint64_t at = tstate + (uint64_t)off->tstate_eval_breaker;
    if ((rc = sonde_mem_read(&proc->mem, at, &breaker, sizeof breaker)) != 0) return rc;
    if (breaker & (uint64_t)off->eval_please_stop_bit) return 0;
    breaker |= (uint64_t)off->eval_please_stop_bit;
    return sonde_prim_mem_write(remote_pid(proc), at, &breaker, sizeof breaker);
}

int sonde_pyproc_remote_cancel(sonde_pyproc_t *proc, uint64_t tstate)
{
    int rc = remote_layout(proc);
    if (rc < 0) return rc;
    const sonde_pyoffsets_t *off = proc->off;
    int32_t zero = 0;
    /* A thread that saw the flag already runs the file: the caller knows
     * by the file's own sign of life, not from here. */
    return sonde_prim_mem_write(remote_pid(proc),
                                tstate + (uint64_t)off->tstate_remote_support +
                                    (uint64_t)off->remote_pending_call,
                                &zero, sizeof zero);
}
