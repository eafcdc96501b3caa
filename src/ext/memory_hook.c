/* memory_hook.c — charging the shim's samples to lines of code.
 *
 * Owns: sonde_memory_on_event, the callback the allocator shim calls on
 * the thread that allocated, freed or copied, and the tables it fills
 * (sonde_memory_t's lines and program footprint). THIS RUNS INSIDE
 * ALLOCATOR HOOKS, on any thread, with or without the GIL: it never takes
 * the GIL, never calls into Python beyond PyGILState_GetThisThreadState
 * (a thread-specific-data read), touches no thread-local variable of this
 * module, and takes only the memory profiler's own lock, which is never
 * held outside this file's callback. Whatever it allocates goes straight
 * to the real allocator (the shim's guard is set) and is not counted.
 *
 * Each sample is charged to the line and, under the key of the line's
 * code object with SONDE_MEMORY_FUNC_LINE, to its function (leak tracking and
 * timelines are per line only).
 *
 * The current line is found by reading the calling thread's own frames
 * through src/pyread with plain copies (the thread is inside malloc, so
 * its frame chain cannot change under it), up to the nearest frame of a
 * profiled file, with the CPU sampler's walk and code filter cache (the
 * sampling core, src/sample/). A sample lost for want of memory is counted
 * in dropped (the report's partial.dropped_samples).
 */
#include "ext.h"

#include "../model/rdp.h"

#include <stdlib.h>
#include <string.h>

#define MEMORY_MB (1024.0 * 1024.0)
/* A timeline is halved (by RDP) when it reaches this many points, so that
 * memory stays bounded however long the program runs. */
#define MEMORY_TIMELINE_CAP 2048

/* ---- lines ------------------------------------------------------------------------ */

/* The accumulator of key (created if needed), or NULL without memory. */
static sonde_memory_line_t *memory_line_unlocked(sonde_memory_t *m, uint64_t key)
{
    return sonde_keytab_get((void **)&m->lines, &m->lines_cap, &m->lines_used, sizeof *m->lines,
                            256, key);
}

/* Appends a point, halving the timeline first when it is full. */
static void memory_timeline_add_unlocked(sonde_memory_t *m, sonde_timeline_t *tl, double t,
                                         double mb)
{
    if (tl->n >= MEMORY_TIMELINE_CAP) sonde_timeline_reduce(tl, MEMORY_TIMELINE_CAP / 2);
    if (sonde_timeline_add(tl, t, mb) < 0) m->dropped++;
}

/* ---- where the thread is ------------------------------------------------------------ */

/* The key of the calling thread's nearest profiled line, 0 if none (not a
 * Python thread, no profiled frame on its stack, or a failed read). */
static uint64_t memory_locate_unlocked(sonde_memory_t *m)
{
    PyThreadState *tstate = PyGILState_GetThisThreadState();
    if (!tstate) return 0;
    sonde_walk_t walk = {.frames = NULL}; /* the line only: no stack buffer here */
    if (sonde_walk_thread(&walk, &m->proc, (uint64_t)(uintptr_t)tstate, &m->codes, m->filter) < 0) {
        m->failed_reads++;
        return 0;
    }
    return walk.line_key;
}

/* ---- the samples ------------------------------------------------------------------------- */

/* Adds a memory sample to the accumulator of a line or a function. */
static void memory_charge(sonde_memory_line_t *acc, const sonde_shim_event_t *ev)
{
    if (ev->bytes > 0) {
        double allocated = (double)(ev->python_bytes + ev->native_bytes);
        double python_share = allocated > 0 ? (double)ev->python_bytes / allocated : 0;
        acc->alloc_samples++;
        acc->alloc_bytes += (double)ev->bytes;
        acc->python_bytes += (double)ev->bytes * python_share;
    }
    acc->net_bytes += ev->bytes;
    if (acc->net_bytes > acc->peak_bytes) acc->peak_bytes = acc->net_bytes;
    acc->net_sum_bytes += acc->net_bytes > 0 ? (double)acc->net_bytes : 0;
    acc->net_samples++;
}

static void memory_sample_unlocked(sonde_memory_t *m, uint64_t key, const sonde_shim_event_t *ev,
                                   double t)
{
    double footprint_mb = (double)ev->footprint_bytes / MEMORY_MB;
    m->samples++;
    memory_timeline_add_unlocked(m, &m->footprint, t, footprint_mb);
    if (footprint_mb > m->max_footprint_mb) {
        m->max_footprint_mb = footprint_mb;
        m->max_footprint_key = key;
    }
    if (!key) {
        m->unattributed_samples++;
        return;
    }
    sonde_memory_line_t *line = memory_line_unlocked(m, key);
    if (!line) {
        m->dropped++;
        return;
    }
    memory_charge(line, ev);
    memory_timeline_add_unlocked(m, &line->timeline, t, footprint_mb);
    sonde_memory_line_t *func = memory_line_unlocked(m, SONDE_MEMORY_FUNC_KEY(key));
    if (func)
        memory_charge(func, ev);
    else
        m->dropped++;
}

uint64_t sonde_memory_on_event(void *ctx, const sonde_shim_event_t *ev)
{
    sonde_memory_t *m = ctx;
    uint64_t result = 0;
    sonde_ns_t now = sonde_prim_monotonic_ns();
    double t = now > m->start_ns ? (double)(now - m->start_ns) / 1e9 : 0;
    pthread_mutex_lock(&m->lock);
    switch (ev->kind) {
    case SONDE_SHIM_EV_MEMORY:
        memory_sample_unlocked(m, memory_locate_unlocked(m), ev, t);
        break;
    case SONDE_SHIM_EV_COPY: {
        uint64_t key = memory_locate_unlocked(m);
        sonde_memory_line_t *line = key ? memory_line_unlocked(m, key) : NULL;
        m->copy_samples++;
        uint64_t bytes = ev->bytes > 0 ? (uint64_t)ev->bytes : 0;
        if (line) line->copy_bytes += bytes;
        sonde_memory_line_t *func =
            line ? memory_line_unlocked(m, SONDE_MEMORY_FUNC_KEY(key)) : NULL;
        if (func) func->copy_bytes += bytes;
        break;
    }
    case SONDE_SHIM_EV_LEAK_TRACK: {
        uint64_t key = memory_locate_unlocked(m);
        sonde_memory_line_t *line = key ? memory_line_unlocked(m, key) : NULL;
        if (line) {
            line->leak_tracked++;
            line->leak_tracked_bytes += (double)ev->bytes;
            result = key;
        }
        break;
    }
    case SONDE_SHIM_EV_LEAK_FREED: {
        sonde_memory_line_t *line = ev->site ? memory_line_unlocked(m, ev->site) : NULL;
        if (line) {
            line->leak_freed++;
            line->leak_freed_bytes += (double)ev->bytes;
        }
        break;
    }
    }
    pthread_mutex_unlock(&m->lock);
    return result;
}
