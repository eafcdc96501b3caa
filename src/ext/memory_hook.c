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
 * Each allocation sample is charged, with its weight (the bytes it stands
 * for), to the line and, under the key of the line's code object with
 * SONDE_MEMORY_FUNC_LINE, to its function (timelines are per line only);
 * the line's key goes back to the shim as the block's site, so that its
 * free lowers the live figures of the line that made it. The program's
 * sampled live heap is the sum of every line's (and of the samples no
 * profiled line made); each time it reaches a new peak the epoch moves on,
 * and a line's live bytes at that peak are captured lazily, at its next
 * change (or at the report), so a peak costs nothing per line.
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

/* Changes an accumulator's live figures by a sample's weight (+ made,
 * - freed), capturing its value at the program's last peak first. */
static void memory_live_change(const sonde_memory_t *m, sonde_memory_line_t *acc, double bytes,
                               double objects)
{
    if (acc->peak_epoch != m->peak_epoch) {
        acc->live_at_peak_bytes = acc->live_bytes;
        acc->peak_epoch = m->peak_epoch;
    }
    acc->live_bytes += bytes;
    acc->live_objects += objects;
    if (acc->live_bytes > acc->peak_live_bytes) acc->peak_live_bytes = acc->live_bytes;
    acc->live_sum_bytes += acc->live_bytes > 0 ? acc->live_bytes : 0;
    acc->live_changes++;
}

/* Adds an allocation sample to the accumulator of a line or a function. */
static void memory_charge(const sonde_memory_t *m, sonde_memory_line_t *acc,
                          const sonde_shim_event_t *ev)
{
    double objects = ev->size ? ev->weight / (double)ev->size : 0;
    acc->alloc_samples++;
    acc->alloc_bytes += ev->weight;
    acc->alloc_objects += objects;
    if (ev->python) acc->python_bytes += ev->weight;
    if (ev->tracked) {
        acc->tracked++;
        memory_live_change(m, acc, ev->weight, objects);
    }
}

/* Moves the program's sampled live heap by bytes; a new peak moves the
 * epoch on (after the lines it includes have changed). */
static void memory_heap_change(sonde_memory_t *m, double bytes)
{
    m->heap_live_bytes += bytes;
    if (m->heap_live_bytes > m->heap_peak_bytes) {
        m->heap_peak_bytes = m->heap_live_bytes;
        m->peak_epoch++;
    }
}

/* A point of the program's footprint: at most one a millisecond, but
 * every new peak. */
static void memory_footprint_point_unlocked(sonde_memory_t *m, uint64_t key,
                                            const sonde_shim_event_t *ev, double t)
{
    double footprint_mb = (double)ev->footprint_bytes / MEMORY_MB;
    bool peak = footprint_mb > m->max_footprint_mb;
    if (peak) {
        m->max_footprint_mb = footprint_mb;
        m->max_footprint_key = key;
    }
    if (peak || t - m->last_footprint_t >= 0.001) {
        memory_timeline_add_unlocked(m, &m->footprint, t, footprint_mb);
        m->last_footprint_t = t;
    }
}

static uint64_t memory_alloc_unlocked(sonde_memory_t *m, const sonde_shim_event_t *ev, double t)
{
    uint64_t key = memory_locate_unlocked(m);
    m->samples++;
    if (!ev->tracked) m->untracked++;
    memory_footprint_point_unlocked(m, key, ev, t);
    sonde_memory_line_t *line = key ? memory_line_unlocked(m, key) : NULL;
    sonde_memory_line_t *func = line ? memory_line_unlocked(m, SONDE_MEMORY_FUNC_KEY(key)) : NULL;
    if (!key)
        m->unattributed_samples++;
    else if (!line || !func)
        m->dropped++;
    if (line) {
        memory_charge(m, line, ev);
        if (ev->tracked)
            memory_timeline_add_unlocked(m, &line->timeline, t, line->live_bytes / MEMORY_MB);
    }
    if (func) memory_charge(m, func, ev);
    if (ev->tracked) memory_heap_change(m, ev->weight);
    return line ? key : 0;
}

static void memory_free_unlocked(sonde_memory_t *m, const sonde_shim_event_t *ev, double t)
{
    double objects = ev->size ? ev->weight / (double)ev->size : 0;
    sonde_memory_line_t *line = ev->site ? memory_line_unlocked(m, ev->site) : NULL;
    sonde_memory_line_t *func =
        ev->site ? memory_line_unlocked(m, SONDE_MEMORY_FUNC_KEY(ev->site)) : NULL;
    if (line) {
        line->freed++;
        memory_live_change(m, line, -ev->weight, -objects);
        memory_timeline_add_unlocked(m, &line->timeline, t, line->live_bytes / MEMORY_MB);
    }
    if (func) {
        func->freed++;
        memory_live_change(m, func, -ev->weight, -objects);
    }
    memory_heap_change(m, -ev->weight);
    memory_footprint_point_unlocked(m, 0, ev, t);
}

uint64_t sonde_memory_on_event(void *ctx, const sonde_shim_event_t *ev)
{
    sonde_memory_t *m = ctx;
    uint64_t result = 0;
    sonde_ns_t now = sonde_prim_monotonic_ns();
    double t = now > m->start_ns ? (double)(now - m->start_ns) / 1e9 : 0;
    pthread_mutex_lock(&m->lock);
    switch (ev->kind) {
    case SONDE_SHIM_EV_ALLOC:
        result = memory_alloc_unlocked(m, ev, t);
        break;
    case SONDE_SHIM_EV_FREE:
        memory_free_unlocked(m, ev, t);
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
    }
    pthread_mutex_unlock(&m->lock);
    return result;
}
