/* sources.c — the table of sampling sources, and the session's calls on all
 * of them.
 *
 * Owns: the order sources start in (a device reader is prepared before the
 * sampler thread that launches it; the memory profiler starts once the
 * sampler runs), their states, and sonde_sources_* (ext.h). The states are
 * allocated on first use and kept for the process's life: an allocator
 * hook or a signal that comes late never sees freed memory; a new session
 * zeroes them. Called with the GIL by session.c, and by the sampler
 * thread (launch, tick, thread: bounded, lock-free, no allocation).
 */
#include "ext.h"

#include <stdlib.h>
#include <string.h>

/* The rows, each defined in its source's file, in the order they start:
 * a device reader is prepared before the sampler thread, which launches it
 * after its first tick; the memory profiler starts once the sampler runs;
 * the garbage collection's watch, read per thread, needs neither. */
extern const sonde_source_ops_t sonde_source_gpu;    /* gpu.c */
extern const sonde_source_ops_t sonde_source_cpu;    /* sampler.c */
extern const sonde_source_ops_t sonde_source_memory; /* memory.c */
extern const sonde_source_ops_t sonde_source_gc;     /* gc.c */

static const sonde_source_ops_t *const sources_table[] = {
    &sonde_source_gpu,
    &sonde_source_cpu,
    &sonde_source_memory,
    &sonde_source_gc,
};
#define SONDE_N_SOURCES SONDE_ARRAY_LEN(sources_table)
_Static_assert(SONDE_ARRAY_LEN(sources_table) <= SONDE_MAX_SOURCES, "raise SONDE_MAX_SOURCES");

int sonde_sources_start_gil(sonde_sources_t *set, sonde_sampler_t *sampler,
                            const sonde_run_opts_t *opts, const sonde_filter_t *filter)
{
    sonde_source_ctx_t ctx = {opts, filter, sampler, set};
    for (size_t i = 0; i < SONDE_N_SOURCES; i++) {
        const sonde_source_ops_t *ops = sources_table[i];
        set->started[i] = false;
        if (!ops->state_size) {
            set->state[i] = sampler;
        } else if (!set->state[i] && !(set->state[i] = calloc(1, ops->state_size))) {
            sonde_sources_release_gil(set);
            PyErr_NoMemory();
            return -ENOMEM;
        } else {
            memset(set->state[i], 0, ops->state_size);
        }
    }
    sampler->sources = set;
    for (size_t i = 0; i < SONDE_N_SOURCES; i++) {
        const sonde_source_ops_t *ops = sources_table[i];
        int rc = ops->start_gil ? ops->start_gil(set->state[i], &ctx) : 0;
        if (rc < 0) {
            /* the failing source's exception survives the others' release
             * (the sampler's stop takes its GC callback out of gc.callbacks) */
            PyObject *type = NULL, *value = NULL, *tb = NULL;
            PyErr_Fetch(&type, &value, &tb);
            sonde_sources_release_gil(set);
            PyErr_Restore(type, value, tb);
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_RuntimeError, "sonde: cannot start the %s profiler: %s",
                             ops->name, strerror(-rc));
            return rc;
        }
        set->started[i] = true;
    }
    return 0;
}

void sonde_sources_launch(const sonde_sources_t *set)
{
    for (size_t i = 0; i < SONDE_N_SOURCES; i++)
        if (set->started[i] && sources_table[i]->launch) sources_table[i]->launch(set->state[i]);
}

void sonde_sources_tick(const sonde_sources_t *set, bool has[SONDE_N_FIGSRCS],
                        double reading[SONDE_N_FIGS])
{
    for (size_t f = 0; f < SONDE_N_FIGSRCS; f++)
        has[f] = false;
    for (size_t i = 0; i < SONDE_N_SOURCES; i++) {
        const sonde_source_ops_t *ops = sources_table[i];
        if (!set->started[i] || !ops->tick || ops->figs < 0 || ops->figs >= SONDE_N_FIGSRCS)
            continue;
        has[ops->figs] = ops->tick(set->state[i], reading + sonde_fig_sources[ops->figs].first);
    }
}

void sonde_sources_thread(const sonde_sources_t *set, const sonde_source_thread_t *thread,
                          bool has[SONDE_N_FIGSRCS], double reading[SONDE_N_FIGS])
{
    for (size_t i = 0; i < SONDE_N_SOURCES; i++) {
        const sonde_source_ops_t *ops = sources_table[i];
        if (!set->started[i] || !ops->thread || ops->figs < 0 || ops->figs >= SONDE_N_FIGSRCS)
            continue;
        has[ops->figs] =
            ops->thread(set->state[i], thread, reading + sonde_fig_sources[ops->figs].first);
    }
}

void sonde_sources_pause_gil(sonde_sources_t *set)
{
    for (size_t i = SONDE_N_SOURCES; i-- > 0;)
        if (set->started[i] && sources_table[i]->pause_gil)
            sources_table[i]->pause_gil(set->state[i]);
}

void sonde_sources_resume_gil(sonde_sources_t *set)
{
    for (size_t i = 0; i < SONDE_N_SOURCES; i++)
        if (set->started[i] && sources_table[i]->resume_gil)
            sources_table[i]->resume_gil(set->state[i]);
}

void sonde_sources_halt(sonde_sources_t *set)
{
    for (size_t i = SONDE_N_SOURCES; i-- > 0;)
        if (set->started[i] && sources_table[i]->halt) sources_table[i]->halt(set->state[i]);
}

int sonde_sources_to_profile(sonde_sources_t *set, const char *cwd, sonde_profile_t *prof,
                             bool period)
{
    for (size_t i = 0; i < SONDE_N_SOURCES; i++) {
        if (!set->started[i] || !sources_table[i]->to_profile) continue;
        int rc = sources_table[i]->to_profile(set->state[i], cwd, prof, period);
        if (rc < 0) return rc;
    }
    return 0;
}

/* What guarded runs inside the next source's guard. */
typedef struct sources_guard {
    sonde_sources_t *set;
    size_t next;
    void (*fn)(void *);
    void *arg;
} sources_guard_t;

static void sources_guarded_from(void *arg)
{
    sources_guard_t *g = arg;
    while (g->next < SONDE_N_SOURCES) {
        size_t i = g->next++;
        const sonde_source_ops_t *ops = sources_table[i];
        if (g->set->started[i] && ops->guarded &&
            ops->guarded(g->set->state[i], sources_guarded_from, g))
            return;
    }
    g->fn(g->arg);
}

void sonde_sources_guarded(sonde_sources_t *set, void (*fn)(void *), void *arg)
{
    sources_guard_t g = {set, 0, fn, arg};
    sources_guarded_from(&g);
}

void sonde_sources_release_gil(sonde_sources_t *set)
{
    for (size_t i = SONDE_N_SOURCES; i-- > 0;) {
        const sonde_source_ops_t *ops = sources_table[i];
        if (set->state[i] && ops->release_gil) ops->release_gil(set->state[i]);
        set->started[i] = false;
    }
}
