/* memory.c — the memory profiler's life: start, stop, report.
 *
 * Owns: sonde_memory_t's lifetime. Called by session.c: start and
 * restore with the GIL, stop and to_profile with or without it (the
 * SIGTERM path runs them on the sampler thread). Starting finds the
 * allocator shim (src/shim/, preloaded by `sonde run --memory`) by name,
 * makes sure it sees Python's arenas, wraps Python's MEM and OBJ allocator
 * domains with the shim's wrappers (so that Python memory is told from
 * native memory), opens a direct reader of this interpreter for the
 * callback (memory_hook.c) and starts the shim. Nothing here runs inside
 * an allocator hook.
 *
 * At the report, per line and per function: the bytes and allocations its
 * samples stand for (alloc_space, alloc_objects), their Python share, its
 * live bytes and allocations at the end (inuse_space, inuse_objects), at
 * the program's peak of sampled live heap, averaged over its changes and
 * at its own peak, the timeline of its live bytes, the MB it copied; for
 * the program, its footprint over time and its peak with the line there,
 * and the peak of the sampled live heap. Every timeline is reduced to
 * SONDE_MEMORY_TIMELINE_POINTS points.
 *
 * Leaks: a line is a likely leak when the allocations sampled there are
 * rarely freed. With n remembered and f of them freed, Laplace's rule of
 * succession puts the chance that the next one is freed at (f+1)/(n+2);
 * its complement is the line's leak likelihood. Lines above
 * SONDE_MEMORY_LEAK_LIKELIHOOD are reported when their live bytes grew
 * over the run (they hold, at the end, at least SONDE_MEMORY_LEAK_KEPT of
 * their own peak) and the program's footprint grew by
 * SONDE_MEMORY_LEAK_GROWTH or more, with a rate: their live bytes at the
 * end over the run's time.
 */
#include "ext.h"

#include "../model/rdp.h"

#include <dlfcn.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MEMORY_MB (1024.0 * 1024.0)
#define SONDE_MEMORY_TIMELINE_POINTS 100
#define SONDE_MEMORY_LEAK_LIKELIHOOD 0.95
#define SONDE_MEMORY_LEAK_GROWTH 0.01
#define SONDE_MEMORY_LEAK_KEPT 0.5
/* Copy sampling, relative to the allocation sample mean: a copy sample
 * every 40 x the mean copied (~20 MB by default). */
#define MEMORY_COPY_FACTOR 40

/* ---- start -------------------------------------------------------------------------- */

/* Bytes the C allocator has handed out and not got back (all arenas,
 * mmapped blocks included). */
static int64_t memory_malloc_in_use(void)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    struct mallinfo2 info = mallinfo2();
    return (int64_t)(info.uordblks + info.hblkhd);
#else
    return 0;
#endif
}

/* SONDE_SHIM_PY_SMALL_IN_ARENAS when Python's allocator is pymalloc (with
 * or without its debug hooks): small requests then never reach malloc.
 * Asked before our wrappers are installed (the name is found by comparing
 * the allocators in place with the known ones); an unknown answer is
 * treated as "every request may reach malloc", the safe side. */
static int memory_pyalloc_flags(void)
{
    typedef const char *(*name_fn)(void);
    name_fn name = (name_fn)dlsym(RTLD_DEFAULT, "_PyMem_GetCurrentAllocatorName");
    const char *current = name ? name() : NULL;
    return current && strncmp(current, "pymalloc", 8) == 0 ? SONDE_SHIM_PY_SMALL_IN_ARENAS : 0;
}

/* Wraps one of Python's allocator domains. Returns 0 or -errno. */
static int memory_wrap_domain(PyMemAllocatorDomain domain, int shim_domain,
                              sonde_shim_wrap_pyalloc_fn wrap, int flags,
                              sonde_shim_pyalloc_t *original, bool *wrapped)
{
    PyMemAllocatorEx current, wrapper;
    PyMem_GetAllocator(domain, &current);
    memcpy(original, &current, sizeof *original);
    sonde_shim_pyalloc_t ours;
    int rc = wrap(shim_domain, original, flags, &ours);
    if (rc < 0) return rc;
    memcpy(&wrapper, &ours, sizeof wrapper);
    PyMem_SetAllocator(domain, &wrapper);
    *wrapped = true;
    return 0;
}

_Static_assert(sizeof(PyMemAllocatorEx) == sizeof(sonde_shim_pyalloc_t),
               "the shim's view of PyMemAllocatorEx");
_Static_assert(sizeof(PyObjectArenaAllocator) == sizeof(sonde_shim_pyarena_t),
               "the shim's view of PyObjectArenaAllocator");

int sonde_memory_start_gil(sonde_memory_t *m, const sonde_run_opts_t *opts,
                           const sonde_filter_t *filter)
{
    int rc = 0;
    memset(m, 0, sizeof *m);
    m->proc.mem.procmem = SONDE_PRIM_KEPT_FD_NONE;
    sonde_shim_start_fn start = (sonde_shim_start_fn)dlsym(RTLD_DEFAULT, SONDE_SHIM_SYM_START);
    sonde_shim_wrap_pyalloc_fn wrap =
        (sonde_shim_wrap_pyalloc_fn)dlsym(RTLD_DEFAULT, SONDE_SHIM_SYM_WRAP_PYALLOC);
    sonde_shim_arena_install_fn arena_install =
        (sonde_shim_arena_install_fn)dlsym(RTLD_DEFAULT, SONDE_SHIM_SYM_ARENA_INSTALL);
    sonde_shim_arena_bytes_fn arena_bytes =
        (sonde_shim_arena_bytes_fn)dlsym(RTLD_DEFAULT, SONDE_SHIM_SYM_ARENA_BYTES);
    m->shim_stop = (sonde_shim_stop_fn)dlsym(RTLD_DEFAULT, SONDE_SHIM_SYM_STOP);
    m->shim_footprint = (sonde_shim_footprint_fn)dlsym(RTLD_DEFAULT, SONDE_SHIM_SYM_FOOTPRINT);
    m->shim_guarded = (sonde_shim_guarded_fn)dlsym(RTLD_DEFAULT, SONDE_SHIM_SYM_GUARDED);
    if (!start || !wrap || !arena_install || !arena_bytes || !m->shim_stop || !m->shim_footprint) {
        PyErr_SetString(PyExc_RuntimeError,
                        "sonde: memory profiling needs sonde's allocator shim loaded at start-up: "
                        "run the program with 'sonde run --memory'");
        return -ENOTSUP;
    }

    m->filter = filter;
    m->sample_bytes =
        opts->malloc_threshold ? opts->malloc_threshold : SONDE_DEFAULT_MALLOC_THRESHOLD;
    m->copy_sample_bytes = m->sample_bytes * MEMORY_COPY_FACTOR;
    pthread_mutex_init(&m->lock, NULL);
    m->started = true;

    /* The reader: opened as the sampler's, then switched to plain copies. */
    void *runtime = dlsym(RTLD_DEFAULT, "_PyRuntime");
    if (!runtime) {
        rc = -ENOEXEC;
        goto error;
    }
    rc = sonde_pyproc_open_self(&m->proc, PY_VERSION_HEX, (uint64_t)(uintptr_t)runtime,
                                (uint64_t)(uintptr_t)&PyCode_Type);
    if (rc < 0) goto error;
    sonde_mem_close(&m->proc.mem);
    sonde_mem_open_direct(&m->proc.mem);

    /* Arenas: normally hooked since the process started (the shim did it). */
    rc = arena_install((void (*)(sonde_shim_pyarena_t *))PyObject_GetArenaAllocator,
                       (void (*)(sonde_shim_pyarena_t *))PyObject_SetArenaAllocator);
    if (rc < 0) goto error;
    int flags = memory_pyalloc_flags();
    if ((rc = memory_wrap_domain(PYMEM_DOMAIN_MEM, SONDE_SHIM_DOMAIN_MEM, wrap, flags,
                                 &m->original_mem, &m->wrapped_mem)) < 0 ||
        (rc = memory_wrap_domain(PYMEM_DOMAIN_OBJ, SONDE_SHIM_DOMAIN_OBJ, wrap, flags,
                                 &m->original_obj, &m->wrapped_obj)) < 0)
        goto error;

    m->baseline_bytes = memory_malloc_in_use() + arena_bytes();
    m->start_ns = sonde_prim_monotonic_ns();
    if (sonde_timeline_add(&m->footprint, 0, (double)m->baseline_bytes / MEMORY_MB) < 0) {
        rc = -ENOMEM;
        goto error;
    }
    m->max_footprint_mb = (double)m->baseline_bytes / MEMORY_MB;
    sonde_shim_config_t config = {
        .abi = SONDE_SHIM_ABI,
        .sample_bytes = m->sample_bytes,
        .copy_sample_bytes = m->copy_sample_bytes,
        .footprint_baseline = m->baseline_bytes,
        .on_event = sonde_memory_on_event,
        .ctx = m,
    };
    rc = start(&config);
    if (rc < 0) goto error;
    m->running = true;
    return 0;

error:
    sonde_memory_restore_gil(m);
    sonde_memory_free(m);
    char why[256] = "";
    if (rc == -ENOTSUP)
        sonde_pyversion_unsupported_text(why, sizeof why, PY_MAJOR_VERSION, PY_MINOR_VERSION,
                                         PY_MICRO_VERSION);
    PyErr_Format(PyExc_RuntimeError, "sonde: cannot start memory profiling: %s%s",
                 why[0] ? "this is " : strerror(-rc), why);
    return rc;
}

/* ---- stop ------------------------------------------------------------------------------- */

void sonde_memory_stop(sonde_memory_t *m)
{
    if (!m->running) return;
    m->shim_stop();
    m->running = false;
    m->stop_ns = sonde_prim_monotonic_ns();
    m->final_bytes = m->shim_footprint();
    double t = (double)(m->stop_ns - m->start_ns) / 1e9;
    double mb = (double)m->final_bytes / MEMORY_MB;
    if (sonde_timeline_add(&m->footprint, t, mb) < 0) m->dropped++;
    if (mb > m->max_footprint_mb) m->max_footprint_mb = mb;
}

void sonde_memory_restore_gil(sonde_memory_t *m)
{
    if (m->wrapped_mem) {
        PyMemAllocatorEx original;
        memcpy(&original, &m->original_mem, sizeof original);
        PyMem_SetAllocator(PYMEM_DOMAIN_MEM, &original);
        m->wrapped_mem = false;
    }
    if (m->wrapped_obj) {
        PyMemAllocatorEx original;
        memcpy(&original, &m->original_obj, sizeof original);
        PyMem_SetAllocator(PYMEM_DOMAIN_OBJ, &original);
        m->wrapped_obj = false;
    }
}

/* ---- the report ---------------------------------------------------------------------------- */

/* Where a line key lives: file (absolute when relative), function, line.
 * Returns false when the code object is unknown. */
static bool memory_where(sonde_memory_t *m, uint64_t key, const char *cwd, char *path, size_t len,
                         const sonde_pycode_t **code_out)
{
    sonde_codenames_t names = sonde_codenames_of_proc(&m->proc, cwd);
    const sonde_pycode_t *code = sonde_pyproc_code(&m->proc, sonde_aframe_code(key));
    if (!code || !code->filename) return false;
    sonde_codenames_path(&names, code->filename, path, len);
    *code_out = code;
    return true;
}

/* Adds an accumulator's figures to a line of the model. A line may get
 * several (its code was compiled twice: a module run again, exec): counts,
 * volumes and live figures add up, the Python share is weighted by volume,
 * peaks and leak figures keep the larger. leaks: the footprint grew enough
 * for leaks to be reported (false for functions). */
static void memory_fill_line(const sonde_memory_t *m, const sonde_memory_line_t *acc,
                             sonde_line_memory_t *mem, double elapsed, bool leaks)
{
    double malloc_mb = acc->alloc_bytes / MEMORY_MB;
    double python_mb = mem->python_fraction * mem->malloc_mb + acc->python_bytes / MEMORY_MB;
    double live_at_peak =
        acc->peak_epoch != m->peak_epoch ? acc->live_bytes : acc->live_at_peak_bytes;
    double live = acc->live_bytes > 0 ? acc->live_bytes : 0;
    mem->malloc_mb += malloc_mb;
    mem->mallocs += acc->alloc_samples;
    mem->alloc_objects += acc->alloc_objects;
    mem->python_fraction = mem->malloc_mb > 0 ? python_mb / mem->malloc_mb : 0;
    if (mem->python_fraction > 1) mem->python_fraction = 1;
    double avg_mb =
        acc->live_changes ? acc->live_sum_bytes / (double)acc->live_changes / MEMORY_MB : 0;
    if (avg_mb > mem->avg_mb) mem->avg_mb = avg_mb;
    if (acc->peak_live_bytes / MEMORY_MB > mem->peak_mb)
        mem->peak_mb = acc->peak_live_bytes / MEMORY_MB;
    mem->live_mb += live / MEMORY_MB;
    mem->live_objects += acc->live_objects > 0 ? acc->live_objects : 0;
    mem->live_at_peak_mb += live_at_peak > 0 ? live_at_peak / MEMORY_MB : 0;
    mem->copy_mb += (double)acc->copy_bytes / MEMORY_MB;
    bool kept = live > 0 && live >= SONDE_MEMORY_LEAK_KEPT * acc->peak_live_bytes;
    if (acc->tracked > 0 && leaks && kept) {
        uint64_t freed = acc->freed < acc->tracked ? acc->freed : acc->tracked;
        double likelihood = 1.0 - (double)(freed + 1) / (double)(acc->tracked + 2);
        if (likelihood > SONDE_MEMORY_LEAK_LIKELIHOOD && likelihood > mem->leak_likelihood) {
            mem->leak_likelihood = likelihood;
            mem->leak_velocity_mb_s = elapsed > 0 ? live / MEMORY_MB / elapsed : 0;
        }
    }
}

static int memory_point_cmp(const void *a, const void *b)
{
    const sonde_point_t *pa = a, *pb = b;
    return (pa->t_sec > pb->t_sec) - (pa->t_sec < pb->t_sec);
}

/* Adds src's points to dst (kept in time order), reduced to the reported
 * number of points. Returns 0 or -ENOMEM. */
static int memory_merge_timeline(sonde_timeline_t *dst, const sonde_timeline_t *src)
{
    bool sorted = dst->n == 0;
    for (size_t i = 0; i < src->n; i++)
        if (sonde_timeline_add(dst, src->points[i].t_sec, src->points[i].mb) < 0) return -ENOMEM;
    if (!sorted) qsort(dst->points, dst->n, sizeof *dst->points, memory_point_cmp);
    sonde_timeline_reduce(dst, SONDE_MEMORY_TIMELINE_POINTS);
    return 0;
}

/* Adds the figures gathered so far to prof: elapsed is the time rates are
 * over, final_bytes the footprint at the end of that time; timelines: the
 * lines' and the footprint's (a period's hand-over has none: they cover
 * the whole run). Called after stop, or with the lock held while counting
 * goes on (periods). Returns 0 or -ENOMEM. */
static int memory_fill_profile(sonde_memory_t *m, const char *cwd, sonde_profile_t *prof,
                               double elapsed, int64_t final_bytes, bool timelines)
{
    char path[8192];
    bool grew = m->baseline_bytes > 0 ? (double)(final_bytes - m->baseline_bytes) >=
                                            SONDE_MEMORY_LEAK_GROWTH * (double)m->baseline_bytes
                                      : final_bytes > 0;
    prof->has_memory = true;
    /* Lines first (they create their functions), then functions. */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < m->lines_cap; i++) {
            const sonde_memory_line_t *acc = &m->lines[i];
            const sonde_pycode_t *code = NULL;
            uint32_t lineno = (uint32_t)acc->key;
            if (!acc->key || (lineno == SONDE_MEMORY_FUNC_LINE) != (pass == 1) ||
                !memory_where(m, acc->key, cwd, path, sizeof path, &code))
                continue;
            if (pass == 1) {
                sonde_func_stats_t *func =
                    sonde_profile_func(prof, path, code->name, code->firstlineno);
                if (func) memory_fill_line(m, acc, &func->mem, elapsed, false);
                continue;
            }
            sonde_line_stats_t *line =
                sonde_profile_line(prof, path, code->name, code->firstlineno, (int)lineno);
            if (!line) return -ENOMEM;
            memory_fill_line(m, acc, &line->mem, elapsed, grew);
            if (timelines && memory_merge_timeline(&line->mem.timeline, &acc->timeline) < 0)
                return -ENOMEM;
        }
    }
    prof->partial.dropped_samples += m->dropped + m->untracked;
    prof->partial.failed_reads += m->failed_reads;
    prof->max_footprint_mb = m->max_footprint_mb;
    prof->heap_peak_mb = m->heap_peak_bytes / MEMORY_MB;
    free(prof->max_footprint_file);
    prof->max_footprint_file = NULL;
    prof->max_footprint_lineno = 0;
    const sonde_pycode_t *code = NULL;
    if (m->max_footprint_key &&
        memory_where(m, m->max_footprint_key, cwd, path, sizeof path, &code)) {
        if (!(prof->max_footprint_file = strdup(path))) return -ENOMEM;
        prof->max_footprint_lineno = (int)(uint32_t)m->max_footprint_key;
    }
    sonde_timeline_free(&prof->footprint);
    return timelines ? memory_merge_timeline(&prof->footprint, &m->footprint) : 0;
}

int sonde_memory_to_profile(sonde_memory_t *m, const char *cwd, sonde_profile_t *prof)
{
    if (!m->started) return 0;
    sonde_memory_stop(m);
    /* Rates over the run's time as the report states it (the sampler's),
     * like every other per-second figure; ours when there is none. */
    double elapsed =
        prof->elapsed_sec > 0
            ? prof->elapsed_sec
            : (double)((m->stop_ns ? m->stop_ns : sonde_prim_monotonic_ns()) - m->start_ns) / 1e9;
    return memory_fill_profile(m, cwd, prof, elapsed, m->final_bytes, true);
}

/* sonde_memory_period_to_profile's work, run with the shim's guard set. */
typedef struct memory_period {
    sonde_memory_t *m;
    const char *cwd;
    sonde_profile_t *prof;
    int rc;
} memory_period_t;

/* With the guard set (sonde_shim_guarded): under the lock, what was
 * gathered into the profile, then the period's counts emptied (the live
 * figures, peaks and timelines go on). What is allocated here comes from
 * the real allocator, unseen. */
static void memory_period_guarded(void *arg)
{
    memory_period_t *p = arg;
    sonde_memory_t *m = p->m;
    double elapsed = p->prof->elapsed_sec > 0
                         ? p->prof->elapsed_sec
                         : (double)(sonde_prim_monotonic_ns() - m->start_ns) / 1e9;
    int64_t now_bytes = m->shim_footprint();
    pthread_mutex_lock(&m->lock);
    p->rc = memory_fill_profile(m, p->cwd, p->prof, elapsed, now_bytes, false);
    for (size_t i = 0; i < m->lines_cap; i++) {
        sonde_memory_line_t *line = &m->lines[i];
        line->alloc_samples = 0;
        line->alloc_bytes = line->alloc_objects = line->python_bytes = 0;
        line->copy_bytes = 0;
    }
    m->dropped = m->untracked = m->failed_reads = 0;
    pthread_mutex_unlock(&m->lock);
}

int sonde_memory_period_to_profile(sonde_memory_t *m, const char *cwd, sonde_profile_t *prof)
{
    if (!m->started) return 0;
    if (!m->running) return sonde_memory_to_profile(m, cwd, prof);
    if (!m->shim_guarded) return -ENOSYS;
    memory_period_t p = {m, cwd, prof, 0};
    m->shim_guarded(memory_period_guarded, &p);
    return p.rc;
}

/* ---- free -------------------------------------------------------------------------------------
 */

void sonde_memory_free(sonde_memory_t *m)
{
    if (!m->started) return;
    sonde_memory_stop(m);
    for (size_t i = 0; i < m->lines_cap; i++)
        sonde_timeline_free(&m->lines[i].timeline);
    free(m->lines);
    sonde_codecache_free(&m->codes);
    sonde_timeline_free(&m->footprint);
    sonde_pyproc_close(&m->proc);
    pthread_mutex_destroy(&m->lock);
    memset(m, 0, sizeof *m);
}

/* ---- the memory source (sources.c's row) -------------------------------------- */

static int memory_source_start_gil(void *state, const sonde_source_ctx_t *ctx)
{
    return ctx->opts->memory ? sonde_memory_start_gil(state, ctx->opts, ctx->filter) : 0;
}

static int memory_source_to_profile(void *state, const char *cwd, sonde_profile_t *prof,
                                    bool period)
{
    return period ? sonde_memory_period_to_profile(state, cwd, prof)
                  : sonde_memory_to_profile(state, cwd, prof);
}

static bool memory_source_guarded(void *state, void (*fn)(void *), void *arg)
{
    sonde_memory_t *m = state;
    if (!m->running || !m->shim_guarded) return false;
    m->shim_guarded(fn, arg);
    return true;
}

static void memory_source_release_gil(void *state)
{
    sonde_memory_stop(state);
    sonde_memory_restore_gil(state);
    sonde_memory_free(state);
}

const sonde_source_ops_t sonde_source_memory = {
    .name = "memory",
    .figs = -1, /* its figures are the model's own (sonde_line_memory_t): timelines
                   and leak figures that slots do not express */
    .state_size = sizeof(sonde_memory_t),
    .start_gil = memory_source_start_gil,
    .to_profile = memory_source_to_profile,
    .guarded = memory_source_guarded,
    .release_gil = memory_source_release_gil,
};
