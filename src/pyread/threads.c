/* threads.c — walking the thread states of the main interpreter.
 *
 * Owns: sonde_pythread_iter_begin / _next, sonde_pyproc_threads,
 * sonde_pyproc_gil_holder and sonde_pyproc_gil_switch_ns. Called once per sample by the in-process
 * sampler thread (no GIL held: a thread state may be freed under us) and by
 * the attach reader. Each thread state costs one read (next, interp,
 * thread_id and native_thread_id lie within a few words), plus one read of
 * struct pthread for the native tid before 3.11; the GIL holder costs one
 * read per call (and sonde_pyproc_gil_holder and _switch_ns one read
 * each, for the attach reader's native rule). A walk is an iterator (the caller keeps as many threads as
 * it likes); it is bounded by SONDE_PY_MAX_THREADS (more than the kernel
 * can run), stops at a cycle (Brent's algorithm) and at a thread state
 * that does not point back at its interpreter. Nothing here runs in a
 * signal handler.
 */
#include "pyread_internal.h"

#include <string.h>

#define THREADS_PID_MAX (1 << 22) /* kernel.pid_max upper bound */

static uint64_t threads_rd64(const uint8_t *bytes, int32_t at)
{
    uint64_t value = 0;
    memcpy(&value, bytes + at, sizeof value);
    return value;
}

/* The main interpreter, read (and remembered) on first use: it is 0 while
 * the target is still starting. */
static int threads_interp(sonde_pyproc_t *proc, uint64_t *interp)
{
    const sonde_pyoffsets_t *off = proc->off;
    uint64_t addr = 0;

    if (proc->interp_addr == 0) {
        int rc = sonde_mem_read(&proc->mem,
                                proc->runtime_addr + (uint64_t)off->runtime_interpreters_main,
                                &addr, sizeof addr);
        if (rc != 0) return rc;
        if (addr == 0) {
            rc = sonde_mem_read(&proc->mem,
                                proc->runtime_addr + (uint64_t)off->runtime_interpreters_head,
                                &addr, sizeof addr);
            if (rc != 0) return rc;
        }
        proc->interp_addr = addr;
    }
    *interp = proc->interp_addr;
    return 0;
}

/* The thread state holding the GIL of the interpreter at `interp`
 * (pyread.h: sonde_pyproc_gil_holder). */
static int threads_gil_holder(sonde_pyproc_t *proc, uint64_t interp, uint64_t *holder)
{
    const sonde_pyoffsets_t *off = proc->off;

    *holder = 0;
    if (off->gil_model == SONDE_PYGIL_GILSTATE)
        return sonde_mem_read(&proc->mem,
                              proc->runtime_addr + (uint64_t)off->runtime_gilstate_tstate_current,
                              holder, sizeof *holder);
    if (off->gil_model != SONDE_PYGIL_INTERP) return -ENOTSUP;
    if (proc->gil_addr == 0) {
        int rc = sonde_mem_read(&proc->mem, interp + (uint64_t)off->interp_ceval_gil,
                                &proc->gil_addr, sizeof proc->gil_addr);
        if (rc != 0) return rc;
        if (proc->gil_addr == 0) return -EAGAIN; /* not made yet */
    }
    /* locked (int) and last_holder (pointer) in one read */
    int32_t lo = off->gil_locked < off->gil_last_holder ? off->gil_locked : off->gil_last_holder;
    int32_t hi = off->gil_locked > off->gil_last_holder ? off->gil_locked : off->gil_last_holder;
    uint8_t gil[SONDE_PYREAD_GIL_SPAN_MAX];
    if (lo < 0 || hi + 8 - lo > (int32_t)sizeof gil) return -EINVAL;
    int rc = sonde_mem_read(&proc->mem, proc->gil_addr + (uint64_t)lo, gil, (size_t)(hi + 8 - lo));
    if (rc != 0) return rc;
    int32_t locked = 0;
    uint64_t last = 0;
    memcpy(&locked, gil + (off->gil_locked - lo), sizeof locked);
    memcpy(&last, gil + (off->gil_last_holder - lo), sizeof last);
    *holder = locked > 0 ? last : 0;
    return 0;
}

/* Reads the GIL's switch interval (pyread.h). */
int sonde_pyproc_gil_switch_ns(sonde_pyproc_t *proc, sonde_ns_t *ns)
{
    const sonde_pyoffsets_t *off = proc->off;
    uint64_t interval_us = 0, interp = 0, base = 0;

    *ns = 0;
    if (off->gil_interval < 0) return -ENOTSUP;
    if (off->gil_model == SONDE_PYGIL_GILSTATE) {
        base = proc->runtime_addr;
    } else {
        int rc = threads_interp(proc, &interp);
        if (rc != 0) return rc;
        if (interp == 0) return -EAGAIN;
        if (proc->gil_addr == 0) {
            rc = sonde_mem_read(&proc->mem, interp + (uint64_t)off->interp_ceval_gil,
                                &proc->gil_addr, sizeof proc->gil_addr);
            if (rc != 0) return rc;
            if (proc->gil_addr == 0) return -EAGAIN;
        }
        base = proc->gil_addr;
    }
    int rc = sonde_mem_read(&proc->mem, base + (uint64_t)off->gil_interval, &interval_us,
                            sizeof interval_us);
    if (rc != 0) return rc;
    /* sys.setswitchinterval keeps it within (0, ULONG_MAX / 1000] us */
    if (interval_us == 0 || interval_us > UINT64_MAX / 1000) return -EINVAL;
    *ns = (sonde_ns_t)interval_us * 1000;
    return 0;
}

/* Reads who holds the GIL now (pyread.h). */
int sonde_pyproc_gil_holder(sonde_pyproc_t *proc, uint64_t *holder)
{
    uint64_t interp = 0;
    *holder = 0;
    int rc = threads_interp(proc, &interp);
    if (rc != 0) return rc;
    if (interp == 0) return -EAGAIN;
    return threads_gil_holder(proc, interp, holder);
}

/* The kernel tid of a thread state whose fields are in `ts` (read from
 * `lo`), or 0 when unknown. */
static pid_t threads_native_tid(sonde_pyproc_t *proc, const uint8_t *ts, int32_t lo)
{
    const sonde_pyoffsets_t *off = proc->off;
    int64_t tid = 0;

    if (off->tstate_native_thread_id >= 0) {
        tid = (int64_t)threads_rd64(ts, off->tstate_native_thread_id - lo);
    } else if (proc->pthread_tid_offset >= 0) {
        uint64_t pthread_addr = threads_rd64(ts, off->tstate_thread_id - lo);
        int32_t value = 0;
        if (sonde_mem_read(&proc->mem, pthread_addr + (uint64_t)proc->pthread_tid_offset, &value,
                           sizeof value) == 0)
            tid = value;
    }
    return tid > 0 && tid < THREADS_PID_MAX ? (pid_t)tid : 0;
}

/* Starts a walk of the main interpreter's thread states (pyread.h). */
int sonde_pythread_iter_begin(sonde_pyproc_t *proc, sonde_pythread_iter_t *it)
{
    const sonde_pyoffsets_t *off = proc->off;
    int32_t fields[] = {off->tstate_next, off->tstate_interp, off->tstate_thread_id,
                        off->tstate_native_thread_id};
    uint64_t interp = 0;

    memset(it, 0, sizeof *it);
    it->proc = proc;
    it->lo = INT32_MAX;
    it->cycle_power = 1;
    for (size_t i = 0; i < SONDE_ARRAY_LEN(fields); i++) {
        if (fields[i] < 0) continue;
        it->lo = fields[i] < it->lo ? fields[i] : it->lo;
        it->hi = fields[i] + 8 > it->hi ? fields[i] + 8 : it->hi;
    }
    if (it->hi - it->lo > SONDE_PYREAD_THREAD_SPAN_MAX) return -EINVAL;
    int rc = threads_interp(proc, &interp);
    if (rc != 0 || interp == 0) return rc;
    rc = sonde_mem_read(&proc->mem, interp + (uint64_t)off->interp_threads_head, &it->next,
                        sizeof it->next);
    if (rc != 0) {
        it->next = 0;
        return rc;
    }
    it->interp = interp;
    if (threads_gil_holder(proc, interp, &it->holder) != 0) it->holder = 0; /* best effort */
    return 0;
}

/* Reads the next thread state (pyread.h). */
int sonde_pythread_iter_next(sonde_pythread_iter_t *it, sonde_pythread_t *t)
{
    sonde_pyproc_t *proc = it->proc;
    const sonde_pyoffsets_t *off = proc ? proc->off : NULL;
    uint8_t ts[SONDE_PYREAD_THREAD_SPAN_MAX];
    int32_t lo = it->lo;

    if (it->next == 0) return 0;
    if (it->count >= SONDE_PY_MAX_THREADS) {
        it->next = 0; /* longer than any real list: hostile memory */
        return 0;
    }
    uint64_t tstate = it->next;
    if (sonde_mem_read(&proc->mem, tstate + (uint64_t)lo, ts, (size_t)(it->hi - lo)) != 0 ||
        threads_rd64(ts, off->tstate_interp - lo) != it->interp) {
        proc->sample_errors++; /* freed under us: keep what we have */
        it->next = 0;
        return 0;
    }
    it->count++;
    t->tstate = tstate;
    t->pthread_id = threads_rd64(ts, off->tstate_thread_id - lo);
    t->native_tid = threads_native_tid(proc, ts, lo);
    t->holds_gil = it->holder != 0 && it->holder == tstate;

    it->next = threads_rd64(ts, off->tstate_next - lo);
    if (it->next == it->cycle_mark) {
        it->next = 0; /* a cycle: every member has been listed */
    } else if (++it->cycle_lap == it->cycle_power) {
        it->cycle_mark = tstate;
        it->cycle_power *= 2;
        it->cycle_lap = 0;
    }
    return 1;
}

/* Lists the thread states of the main interpreter (pyread.h). */
int sonde_pyproc_threads(sonde_pyproc_t *proc, sonde_pythread_t *threads, int max)
{
    sonde_pythread_iter_t it;
    int count = 0;
    int rc = sonde_pythread_iter_begin(proc, &it);
    if (rc != 0) return rc;
    while (count < max && sonde_pythread_iter_next(&it, &threads[count]) == 1)
        count++;
    return count;
}
