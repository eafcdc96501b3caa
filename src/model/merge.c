/* merge.c — adding one profile into another (sonde_profile_merge, model.h).
 *
 * Owns: how figures combine across processes and runs: the same file,
 * line and function add up (times, samples, memory sums), peaks keep the
 * highest, timelines merge in time order, stacks (with their split by
 * kind) and threads (by name and ids) add, the
 * elapsed time is the longest, processes are appended. Called by `sonde
 * merge` (src/cli/merge.c) and, through sonde_handover_take
 * (src/handover/), by the collectors of `sonde run`; plain C, never in a
 * signal handler.
 */
#include "model.h"

#include "model_internal.h"

#include <stdlib.h>
#include <string.h>

static char *merge_strdup(const char *s)
{
    size_t len = strlen(s);
    char *copy = malloc(len + 1);
    if (copy) memcpy(copy, s, len + 1);
    return copy;
}

/* Merges two timelines, each in time order, into dst (in time order).
 * Returns 0 or -ENOMEM (dst unchanged). */
static int merge_timeline(sonde_timeline_t *dst, const sonde_timeline_t *src)
{
    if (!src->n) return 0;
    size_t n = dst->n + src->n;
    sonde_point_t *points = malloc(n * sizeof *points);
    if (!points) return -ENOMEM;
    size_t i = 0, j = 0, k = 0;
    while (i < dst->n || j < src->n) {
        if (j >= src->n || (i < dst->n && dst->points[i].t_sec <= src->points[j].t_sec))
            points[k++] = dst->points[i++];
        else
            points[k++] = src->points[j++];
    }
    free(dst->points);
    dst->points = points;
    dst->n = dst->cap = n;
    return 0;
}

static double merge_max(double a, double b)
{
    return a > b ? a : b;
}

/* Memory figures of a line or function: sums add, peaks keep the
 * highest, the Python share is weighted by the MB allocated. */
static int merge_memory(sonde_line_memory_t *dst, const sonde_line_memory_t *src)
{
    double malloc_mb = dst->malloc_mb + src->malloc_mb;
    if (malloc_mb > 0)
        dst->python_fraction =
            (dst->python_fraction * dst->malloc_mb + src->python_fraction * src->malloc_mb) /
            malloc_mb;
    dst->malloc_mb = malloc_mb;
    dst->mallocs += src->mallocs;
    dst->alloc_objects += src->alloc_objects;
    dst->avg_mb += src->avg_mb;
    dst->peak_mb = merge_max(dst->peak_mb, src->peak_mb);
    dst->live_mb += src->live_mb;
    dst->live_objects += src->live_objects;
    dst->live_at_peak_mb += src->live_at_peak_mb;
    dst->copy_mb += src->copy_mb;
    dst->leak_likelihood = merge_max(dst->leak_likelihood, src->leak_likelihood);
    dst->leak_velocity_mb_s += src->leak_velocity_mb_s;
    return merge_timeline(&dst->timeline, &src->timeline);
}

static int merge_file(sonde_profile_t *dst, const sonde_file_stats_t *file)
{
    for (size_t i = 0; i < file->n_lines; i++) {
        const sonde_line_stats_t *from = &file->lines[i];
        sonde_line_stats_t *into = sonde_profile_line_only(dst, file->path, from->lineno);
        if (!into) return -ENOMEM;
        if (!into->func_name && from->func_name) {
            /* the line's function (pprof's locations), created here when
             * new: its figures come with the functions below */
            sonde_func_stats_t *func =
                sonde_profile_func_entry(dst, file->path, from->func_name, from->func_firstlineno);
            if (!func) return -ENOMEM;
            into = sonde_profile_line_only(dst, file->path, from->lineno);
            if (!into) return -ENOMEM;
            into->func_name = func->name;
            into->func_firstlineno = func->firstlineno;
        }
        into->python_ns += from->python_ns;
        into->native_ns += from->native_ns;
        into->system_ns += from->system_ns;
        into->samples += from->samples;
        sonde_figs_combine(&into->figs, &from->figs);
        if (merge_memory(&into->mem, &from->mem) < 0) return -ENOMEM;
    }
    for (size_t i = 0; i < file->n_funcs; i++) {
        const sonde_func_stats_t *from = &file->funcs[i];
        sonde_func_stats_t *into =
            sonde_profile_func_entry(dst, file->path, from->name, from->firstlineno);
        if (!into) return -ENOMEM;
        into->python_ns += from->python_ns;
        into->native_ns += from->native_ns;
        into->system_ns += from->system_ns;
        into->samples += from->samples;
        sonde_figs_combine(&into->figs, &from->figs);
        if (merge_memory(&into->mem, &from->mem) < 0) return -ENOMEM;
    }
    sonde_file_stats_t *into = sonde_profile_file(dst, file->path);
    if (into && !into->source && file->source) {
        char **lines = calloc(file->n_source ? file->n_source : 1, sizeof *lines);
        if (!lines) return -ENOMEM;
        for (size_t i = 0; i < file->n_source; i++) {
            if (!(lines[i] = merge_strdup(file->source[i]))) {
                sonde__source_free(lines, i);
                return -ENOMEM;
            }
        }
        into->source = lines;
        into->n_source = file->n_source;
    }
    return 0;
}

/* Each of src's stacks, its frames and thread (by name) mapped into dst. */
static int merge_stacks(sonde_profile_t *dst, const sonde_profile_t *src)
{
    uint32_t max_depth = 0;
    for (size_t i = 0; i < src->n_stacks; i++)
        if (src->stacks[i].depth > max_depth) max_depth = src->stacks[i].depth;
    sonde_stack_frame_t *frames = calloc(max_depth ? max_depth : 1, sizeof *frames);
    if (!frames) return -ENOMEM;
    int rc = 0;
    for (size_t i = 0; i < src->n_stacks && rc == 0; i++) {
        const sonde_stack_t *s = &src->stacks[i];
        for (uint32_t d = 0; d < s->depth; d++)
            frames[d] = src->frames[s->frames[d]];
        int thread = -1;
        if (s->thread >= 0 && (size_t)s->thread < src->n_threads) {
            const char *name = src->thread_names[s->thread];
            const sonde_thread_ids_t *ids = &src->thread_ids[s->thread];
            thread = sonde_profile_thread_of(dst, name ? name : "", ids->pid, ids->tid);
            if (thread < 0) rc = thread;
        }
        bool kinds = s->kind_ns[0] || s->kind_ns[1] || s->kind_ns[2];
        if (rc == 0 && kinds)
            rc = sonde_profile_add_stack_kinds(dst, frames, s->depth, thread, s->samples,
                                               s->kind_ns);
        else if (rc == 0)
            rc = sonde_profile_add_stack(dst, frames, s->depth, thread, s->samples, s->ns);
    }
    free(frames);
    return rc;
}

/* Run information dst lacks, taken from src. */
static int merge_run(sonde_profile_t *dst, const sonde_profile_t *src)
{
    if (!dst->program && !dst->argc && !dst->python_version &&
        (src->program || src->argc || src->python_version)) {
        int rc = sonde_profile_set_run(dst, src->program, src->argc, (const char *const *)src->argv,
                                       src->python_version);
        if (rc < 0) return rc;
    }
    if (!dst->exit_known && src->exit_known)
        sonde_profile_set_exit(dst, src->exit_status, src->exit_exception);
    if (!(dst->interval_sec > 0)) dst->interval_sec = src->interval_sec;
    dst->virtual_time = dst->virtual_time || src->virtual_time;
    dst->profile_all = dst->profile_all || src->profile_all;
    dst->elapsed_sec = merge_max(dst->elapsed_sec, src->elapsed_sec);
    dst->samples += src->samples;
    dst->unattributed_ns += src->unattributed_ns;
    sonde_partial_add(&dst->partial, &src->partial);
    return 0;
}

static int merge_memory_run(sonde_profile_t *dst, const sonde_profile_t *src)
{
    if (!src->has_memory) return 0;
    if (!dst->has_memory || src->max_footprint_mb > dst->max_footprint_mb) {
        char *file = NULL;
        if (src->max_footprint_file && !(file = merge_strdup(src->max_footprint_file)))
            return -ENOMEM;
        free(dst->max_footprint_file);
        dst->max_footprint_file = file;
        dst->max_footprint_lineno = src->max_footprint_lineno;
        dst->max_footprint_mb = src->max_footprint_mb;
    }
    dst->has_memory = true;
    dst->heap_peak_mb = merge_max(dst->heap_peak_mb, src->heap_peak_mb);
    return merge_timeline(&dst->footprint, &src->footprint);
}

int sonde_profile_merge(sonde_profile_t *dst, const sonde_profile_t *src)
{
    if (!dst || !src || dst == src) return -EINVAL;
    int rc = merge_run(dst, src);
    if (rc == 0) rc = merge_memory_run(dst, src);
    for (size_t i = 0; rc == 0 && i < SONDE_N_FIGSRCS; i++)
        rc = sonde_fig_run_merge(&dst->fig_runs[i], &src->fig_runs[i]);
    for (size_t i = 0; rc == 0 && i < src->n_files; i++)
        rc = merge_file(dst, &src->files[i]);
    if (rc == 0) rc = merge_stacks(dst, src);
    for (size_t i = 0; rc == 0 && i < src->n_processes; i++)
        rc = sonde_profile_add_process(dst, &src->processes[i]);
    sonde_profile_sum(dst);
    return rc;
}
