/* walk.c — the profile model, field by field, for the hand-over.
 *
 * Owns: which fields of sonde_profile_t (src/model/model.h) cross between
 * processes and in what order: all of them, one function per struct, each
 * written once for both directions (the cursor of codec.c writes or reads
 * the same walk). A field added to a struct of the model changes its size
 * and so fails one of the static assertions below until its function walks
 * it (and tests/unit/test_handover.c sets and compares it). Not carried:
 * capacities (a profile read back has cap == n), the stack index (stacks.c
 * builds it again when it is needed), and pointers as such (a line's
 * function goes as the index of its file's function). Reading checks what
 * the model relies on: files, lines and functions in the model's order,
 * indices in range, the strings the model never leaves NULL. Called by
 * codec.c only; no stdio, no Python API, no signal handler.
 */
#include "handover_internal.h"

#include <string.h>

/* A field added to one of these structs fails the build here: walk it
 * below, set and compare it in tests/unit/test_handover.c, then update
 * the size. (LP64 sizes; a field that fits in padding is not caught.) */
#if UINTPTR_MAX == UINT64_MAX
#define WALK_SIZE(type, size)                                                                      \
    _Static_assert(sizeof(type) == (size),                                                         \
                   "a new field in " #type ": add it to the hand-over (src/handover/walk.c) and "  \
                   "to tests/unit/test_handover.c")
#else
#define WALK_SIZE(type, size) _Static_assert(1, "")
#endif

/* The least bytes one element of each array takes in the format (every
 * field at least one byte: the bound of its count, so that a count never
 * allocates more than a small multiple of the bytes the file holds). */
#define WALK_MIN_STRING 1
#define WALK_MIN_POINT 2
#define WALK_MIN_LINE 24
#define WALK_MIN_FUNC 24
#define WALK_MIN_FILE 5
#define WALK_MIN_FRAME 3
#define WALK_MIN_THREAD 3
#define WALK_MIN_STACK 7
#define WALK_MIN_INDEX 1
#define WALK_MIN_PROCESS 8
#define WALK_NO_FUNC UINT32_MAX /* a line without a function */

typedef sonde__ho_io_t walk_io_t;

static void walk_ns(walk_io_t *io, sonde_ns_t *ns)
{
    uint64_t v = *ns;
    sonde__ho_u64(io, &v);
    *ns = v;
}

/* ---- values over time ------------------------------------------------------------- */

WALK_SIZE(sonde_point_t, 16);
WALK_SIZE(sonde_timeline_t, 24);

static void walk_timeline(walk_io_t *io, sonde_timeline_t *tl)
{
    size_t n = tl->n;
    if (!sonde__ho_count(io, &n, WALK_MIN_POINT) ||
        !sonde__ho_alloc(io, (void **)&tl->points, n, sizeof *tl->points))
        return;
    if (io->reading) tl->n = tl->cap = n;
    for (size_t i = 0; i < n && sonde__ho_ok(io); i++) {
        sonde__ho_f64(io, &tl->points[i].t_sec);
        sonde__ho_f64(io, &tl->points[i].mb);
    }
}

/* ---- a line's or function's figures ---------------------------------------------- */

WALK_SIZE(sonde_line_memory_t, 120);

static void walk_memory(walk_io_t *io, sonde_line_memory_t *mem)
{
    sonde__ho_f64(io, &mem->malloc_mb);
    sonde__ho_u64(io, &mem->mallocs);
    sonde__ho_f64(io, &mem->alloc_objects);
    sonde__ho_f64(io, &mem->python_fraction);
    sonde__ho_f64(io, &mem->avg_mb);
    sonde__ho_f64(io, &mem->peak_mb);
    sonde__ho_f64(io, &mem->live_mb);
    sonde__ho_f64(io, &mem->live_objects);
    sonde__ho_f64(io, &mem->live_at_peak_mb);
    sonde__ho_f64(io, &mem->copy_mb);
    walk_timeline(io, &mem->timeline);
    sonde__ho_f64(io, &mem->leak_likelihood);
    sonde__ho_f64(io, &mem->leak_velocity_mb_s);
}

/* The sources' figures (src/model/figures.h): every slot, whatever the
 * sources; their number first, read back it must be this build's. A new
 * slot needs nothing here. */
WALK_SIZE(sonde_figs_t, SONDE_N_FIGS * sizeof(double));

static void walk_figs(walk_io_t *io, sonde_figs_t *figs)
{
    uint32_t n = SONDE_N_FIGS;
    sonde__ho_u32(io, &n);
    if (io->reading && sonde__ho_ok(io) && n != SONDE_N_FIGS) {
        sonde__ho_fail(io, -EPROTO, "another set of figures");
        return;
    }
    for (unsigned i = 0; i < SONDE_N_FIGS; i++)
        sonde__ho_f64(io, &figs->v[i]);
}

WALK_SIZE(sonde_fig_run_t, 24);

/* What the profile knows of one source as a whole. */
static void walk_fig_run(walk_io_t *io, sonde_fig_run_t *run)
{
    sonde__ho_bool(io, &run->present);
    sonde__ho_str(io, &run->detail, true);
    sonde__ho_bool(io, &run->own);
}

WALK_SIZE(sonde_partial_t, 48);

static void walk_partial(walk_io_t *io, sonde_partial_t *partial)
{
    sonde__ho_u64(io, &partial->failed_reads);
    sonde__ho_u64(io, &partial->dropped_samples);
    sonde__ho_u64(io, &partial->threads_left_out);
    sonde__ho_u64(io, &partial->frames_left_out);
    sonde__ho_u64(io, &partial->processes_lost);
    sonde__ho_u64(io, &partial->processes_running);
}

/* ---- files --------------------------------------------------------------------------- */

/* The index in file->funcs of the line's function (the model borrows the
 * line's func_name from there): the model's order first, then by pointer.
 * WALK_NO_FUNC when the line has none; UINT32_MAX - 1 when it is not
 * there (the model's rule broken). */
static uint32_t walk_func_index(const sonde_file_stats_t *file, const sonde_line_stats_t *line)
{
    if (!line->func_name) return WALK_NO_FUNC;
    size_t lo = 0, hi = file->n_funcs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const sonde_func_stats_t *f = &file->funcs[mid];
        int cmp = f->firstlineno != line->func_firstlineno
                      ? (f->firstlineno < line->func_firstlineno ? -1 : 1)
                      : strcmp(f->name, line->func_name);
        if (cmp == 0 && f->name == line->func_name) return (uint32_t)mid;
        if (cmp < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = 0; i < file->n_funcs; i++)
        if (file->funcs[i].name == line->func_name) return (uint32_t)i;
    return UINT32_MAX - 1;
}

WALK_SIZE(sonde_line_stats_t, 176 + sizeof(sonde_figs_t));

/* A line; its file's functions are read already. */
static void walk_line(walk_io_t *io, sonde_file_stats_t *file, sonde_line_stats_t *line)
{
    sonde__ho_int(io, &line->lineno);
    uint32_t func = io->reading ? 0 : walk_func_index(file, line);
    if (func == UINT32_MAX - 1) {
        sonde__ho_fail(io, -EINVAL, "a line's function is not among its file's");
        return;
    }
    sonde__ho_u32(io, &func);
    if (io->reading && sonde__ho_ok(io) && func != WALK_NO_FUNC) {
        if (func >= file->n_funcs) {
            sonde__ho_fail(io, -EPROTO, "a line's function out of range");
            return;
        }
        line->func_name = file->funcs[func].name; /* borrowed, as the model does */
    }
    sonde__ho_int(io, &line->func_firstlineno);
    walk_ns(io, &line->python_ns);
    walk_ns(io, &line->native_ns);
    walk_ns(io, &line->system_ns);
    sonde__ho_u64(io, &line->samples);
    walk_memory(io, &line->mem);
    walk_figs(io, &line->figs);
}

WALK_SIZE(sonde_func_stats_t, 168 + sizeof(sonde_figs_t));

static void walk_func(walk_io_t *io, sonde_func_stats_t *func)
{
    sonde__ho_str(io, &func->name, false);
    sonde__ho_int(io, &func->firstlineno);
    walk_ns(io, &func->python_ns);
    walk_ns(io, &func->native_ns);
    walk_ns(io, &func->system_ns);
    sonde__ho_u64(io, &func->samples);
    walk_figs(io, &func->figs);
    walk_memory(io, &func->mem);
}

/* The source text: absent (NULL), or n lines (an empty file: none, but
 * not NULL). */
static void walk_source(walk_io_t *io, sonde_file_stats_t *file)
{
    bool present = file->source != NULL;
    size_t n = file->n_source;
    sonde__ho_bool(io, &present);
    if (!present || !sonde__ho_count(io, &n, WALK_MIN_STRING)) return;
    /* never NULL once present, as sonde__source_split leaves it */
    if (io->reading && !sonde__ho_alloc(io, (void **)&file->source, n ? n : 1, sizeof(char *)))
        return;
    if (io->reading) file->n_source = n;
    for (size_t i = 0; i < n && sonde__ho_ok(io); i++)
        sonde__ho_str(io, &file->source[i], false);
}

/* Whether function a comes before b in the model's order. */
static bool walk_func_before(const sonde_func_stats_t *a, const sonde_func_stats_t *b)
{
    if (a->firstlineno != b->firstlineno) return a->firstlineno < b->firstlineno;
    return strcmp(a->name, b->name) < 0;
}

WALK_SIZE(sonde_file_stats_t, 80);

static void walk_file(walk_io_t *io, sonde_file_stats_t *file)
{
    sonde__ho_str(io, &file->path, false);
    walk_ns(io, &file->total_ns);
    size_t n_funcs = file->n_funcs;
    if (!sonde__ho_count(io, &n_funcs, WALK_MIN_FUNC) ||
        !sonde__ho_alloc(io, (void **)&file->funcs, n_funcs, sizeof *file->funcs))
        return;
    if (io->reading) file->n_funcs = file->cap_funcs = n_funcs;
    for (size_t i = 0; i < n_funcs && sonde__ho_ok(io); i++) {
        walk_func(io, &file->funcs[i]);
        if (io->reading && sonde__ho_ok(io) && i > 0 &&
            !walk_func_before(&file->funcs[i - 1], &file->funcs[i]))
            sonde__ho_fail(io, -EPROTO, "functions out of order or twice");
    }
    size_t n_lines = file->n_lines;
    if (!sonde__ho_count(io, &n_lines, WALK_MIN_LINE) ||
        !sonde__ho_alloc(io, (void **)&file->lines, n_lines, sizeof *file->lines))
        return;
    if (io->reading) file->n_lines = file->cap_lines = n_lines;
    for (size_t i = 0; i < n_lines && sonde__ho_ok(io); i++) {
        walk_line(io, file, &file->lines[i]);
        if (io->reading && sonde__ho_ok(io) && i > 0 &&
            file->lines[i - 1].lineno >= file->lines[i].lineno)
            sonde__ho_fail(io, -EPROTO, "lines out of order or twice");
    }
    walk_source(io, file);
}

static void walk_files(walk_io_t *io, sonde_profile_t *prof)
{
    size_t n = prof->n_files;
    if (!sonde__ho_count(io, &n, WALK_MIN_FILE) ||
        !sonde__ho_alloc(io, (void **)&prof->files, n, sizeof *prof->files))
        return;
    if (io->reading) prof->n_files = prof->cap_files = n;
    for (size_t i = 0; i < n && sonde__ho_ok(io); i++) {
        walk_file(io, &prof->files[i]);
        if (io->reading && sonde__ho_ok(io) && i > 0 &&
            strcmp(prof->files[i - 1].path, prof->files[i].path) >= 0)
            sonde__ho_fail(io, -EPROTO, "files out of order or twice");
    }
}

/* ---- stacks ------------------------------------------------------------------------- */

WALK_SIZE(sonde_stack_frame_t, 24);

static void walk_frame(walk_io_t *io, sonde_stack_frame_t *frame)
{
    sonde__ho_str(io, &frame->func, false);
    sonde__ho_str(io, &frame->file, false);
    sonde__ho_int(io, &frame->line);
}

WALK_SIZE(sonde_thread_ids_t, 8);

/* Thread i: its name and ids (two arrays of the profile). */
static void walk_thread(walk_io_t *io, sonde_profile_t *prof, size_t i)
{
    sonde__ho_str(io, &prof->thread_names[i], false);
    sonde__ho_int(io, &prof->thread_ids[i].pid);
    sonde__ho_int(io, &prof->thread_ids[i].tid);
}

WALK_SIZE(sonde_stack_t, 56);

/* A stack; the profile's frames and threads are read already. */
static void walk_stack(walk_io_t *io, const sonde_profile_t *prof, sonde_stack_t *stack)
{
    size_t depth = stack->depth;
    if (!sonde__ho_count(io, &depth, WALK_MIN_INDEX)) return;
    /* never NULL, as stacks.c allocates it */
    if (io->reading &&
        !sonde__ho_alloc(io, (void **)&stack->frames, depth ? depth : 1, sizeof *stack->frames))
        return;
    if (io->reading) stack->depth = (uint32_t)depth;
    for (size_t d = 0; d < depth && sonde__ho_ok(io); d++) {
        sonde__ho_u32(io, &stack->frames[d]);
        if (io->reading && sonde__ho_ok(io) && stack->frames[d] >= prof->n_frames)
            sonde__ho_fail(io, -EPROTO, "a stack's frame out of range");
    }
    sonde__ho_int(io, &stack->thread);
    if (io->reading && sonde__ho_ok(io) &&
        (stack->thread < -1 || (stack->thread >= 0 && (size_t)stack->thread >= prof->n_threads)))
        sonde__ho_fail(io, -EPROTO, "a stack's thread out of range");
    sonde__ho_u64(io, &stack->samples);
    walk_ns(io, &stack->ns);
    for (int k = 0; k < SONDE_N_KINDS; k++)
        walk_ns(io, &stack->kind_ns[k]);
}

static void walk_stacks(walk_io_t *io, sonde_profile_t *prof)
{
    size_t n = prof->n_frames;
    if (!sonde__ho_count(io, &n, WALK_MIN_FRAME) ||
        !sonde__ho_alloc(io, (void **)&prof->frames, n, sizeof *prof->frames))
        return;
    if (io->reading) prof->n_frames = prof->cap_frames = n;
    for (size_t i = 0; i < n && sonde__ho_ok(io); i++)
        walk_frame(io, &prof->frames[i]);

    n = prof->n_threads;
    if (!io->reading && n && !prof->thread_ids) {
        sonde__ho_fail(io, -EINVAL, "threads without their ids");
        return;
    }
    if (!sonde__ho_count(io, &n, WALK_MIN_THREAD) ||
        !sonde__ho_alloc(io, (void **)&prof->thread_names, n, sizeof *prof->thread_names) ||
        !sonde__ho_alloc(io, (void **)&prof->thread_ids, n, sizeof *prof->thread_ids))
        return;
    if (io->reading) prof->n_threads = n;
    for (size_t i = 0; i < n && sonde__ho_ok(io); i++)
        walk_thread(io, prof, i);

    n = prof->n_stacks;
    if (!sonde__ho_count(io, &n, WALK_MIN_STACK) ||
        !sonde__ho_alloc(io, (void **)&prof->stacks, n, sizeof *prof->stacks))
        return;
    if (io->reading) prof->n_stacks = prof->cap_stacks = n;
    for (size_t i = 0; i < n && sonde__ho_ok(io); i++)
        walk_stack(io, prof, &prof->stacks[i]);
}

/* ---- processes -------------------------------------------------------------------- */

WALK_SIZE(sonde_process_t, 48);

static void walk_process(walk_io_t *io, sonde_process_t *process)
{
    sonde__ho_int(io, &process->pid);
    sonde__ho_int(io, &process->ppid);
    sonde__ho_str(io, &process->cmdline, false);
    sonde__ho_f64(io, &process->cpu_sec);
    sonde__ho_f64(io, &process->wall_sec);
    sonde__ho_f64(io, &process->peak_mb);
    sonde__ho_bool(io, &process->complete);
    sonde__ho_int(io, &process->followed);
}

static void walk_processes(walk_io_t *io, sonde_profile_t *prof)
{
    size_t n = prof->n_processes;
    if (!sonde__ho_count(io, &n, WALK_MIN_PROCESS) ||
        !sonde__ho_alloc(io, (void **)&prof->processes, n, sizeof *prof->processes))
        return;
    if (io->reading) prof->n_processes = prof->cap_processes = n;
    for (size_t i = 0; i < n && sonde__ho_ok(io); i++)
        walk_process(io, &prof->processes[i]);
}

/* ---- the profile -------------------------------------------------------------------- */

static void walk_argv(walk_io_t *io, sonde_profile_t *prof)
{
    size_t n = prof->argc > 0 ? (size_t)prof->argc : 0;
    if (!io->reading && n && !prof->argv) {
        sonde__ho_fail(io, -EINVAL, "arguments without their array");
        return;
    }
    if (!sonde__ho_count(io, &n, WALK_MIN_STRING)) return;
    if (io->reading && n > (size_t)INT32_MAX) {
        sonde__ho_fail(io, -EPROTO, "too many arguments");
        return;
    }
    if (!sonde__ho_alloc(io, (void **)&prof->argv, n, sizeof *prof->argv)) return;
    if (io->reading) prof->argc = (int)n;
    for (size_t i = 0; i < n && sonde__ho_ok(io); i++)
        sonde__ho_str(io, &prof->argv[i], false);
}

/* What was run and how, how it ended, its totals and what it misses. */
static void walk_run(walk_io_t *io, sonde_profile_t *prof)
{
    sonde__ho_str(io, &prof->program, true);
    walk_argv(io, prof);
    sonde__ho_str(io, &prof->python_version, true);
    sonde__ho_f64(io, &prof->elapsed_sec);
    sonde__ho_f64(io, &prof->interval_sec);
    sonde__ho_bool(io, &prof->virtual_time);
    sonde__ho_u64(io, &prof->samples);
    walk_ns(io, &prof->unattributed_ns);
    sonde__ho_bool(io, &prof->profile_all);
    sonde__ho_bool(io, &prof->exit_known);
    sonde__ho_int(io, &prof->exit_status);
    sonde__ho_chars(io, prof->exit_exception, sizeof prof->exit_exception);
    walk_partial(io, &prof->partial);
    walk_ns(io, &prof->total_ns);
    sonde__ho_int(io, &prof->pid);
}

static void walk_memory_run(walk_io_t *io, sonde_profile_t *prof)
{
    sonde__ho_bool(io, &prof->has_memory);
    sonde__ho_f64(io, &prof->max_footprint_mb);
    sonde__ho_f64(io, &prof->heap_peak_mb);
    sonde__ho_str(io, &prof->max_footprint_file, true);
    sonde__ho_int(io, &prof->max_footprint_lineno);
    walk_timeline(io, &prof->footprint);
}

/* The sources with figures: their number first, read back it must be this
 * build's. */
static void walk_fig_runs(walk_io_t *io, sonde_profile_t *prof)
{
    uint32_t n = SONDE_N_FIGSRCS;
    sonde__ho_u32(io, &n);
    if (io->reading && sonde__ho_ok(io) && n != SONDE_N_FIGSRCS) {
        sonde__ho_fail(io, -EPROTO, "another set of sources");
        return;
    }
    for (unsigned i = 0; i < SONDE_N_FIGSRCS; i++)
        walk_fig_run(io, &prof->fig_runs[i]);
}

WALK_SIZE(sonde_profile_t, 400 + sizeof(((sonde_profile_t *)0)->fig_runs));

void sonde__ho_walk(sonde__ho_io_t *io, sonde_profile_t *prof)
{
    static const struct {
        uint32_t tag;
        void (*walk)(walk_io_t *io, sonde_profile_t *prof);
    } records[] = {
        {SONDE__HO_RUN, walk_run},          {SONDE__HO_MEMORY, walk_memory_run},
        {SONDE__HO_FIGURES, walk_fig_runs}, {SONDE__HO_FILES, walk_files},
        {SONDE__HO_STACKS, walk_stacks},    {SONDE__HO_PROCESSES, walk_processes},
    };
    for (size_t i = 0; i < SONDE_ARRAY_LEN(records) && sonde__ho_ok(io); i++) {
        uintptr_t mark = 0;
        sonde__ho_record_begin(io, records[i].tag, &mark);
        records[i].walk(io, prof);
        sonde__ho_record_end(io, mark);
    }
    uintptr_t mark = 0;
    sonde__ho_record_begin(io, SONDE__HO_END, &mark);
    sonde__ho_record_end(io, mark);
}
