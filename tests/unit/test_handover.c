/* test_handover.c — unit tests of the hand-over (src/handover/).
 *
 * The round trip: a profile that sets every field of the model
 * (src/model/model.h, struct by struct) to a distinct value other than its
 * default is encoded, decoded and compared field by field, by this file's
 * own walk of the structs (one function per struct, as walk.c has); the
 * same through a file in a directory, and through the collectors' merge.
 * A field added to a struct fails walk.c's static assertions until walk.c
 * carries it; add it here too (set in build_*, compared in same_*).
 * Hostile input: every truncation, every byte flipped, every word made
 * huge, the wrong magic and version, indices out of range, the model's
 * order broken. And the directory's names: made, parsed, refused.
 */
#include "handover/handover.h"

#include "check.h"

#include <limits.h>
#include <stdint.h>
#include <time.h>

/* ---- a profile with every field set ---------------------------------------------- */

static uint64_t seq; /* every value set is distinct: the next of a sequence */

static double next_f(void)
{
    return (double)++seq * 1.25;
}
static uint64_t next_u(void)
{
    return ++seq * 1000 + 7;
}
static int next_i(void)
{
    return (int)++seq + 100;
}

static void build_timeline(sonde_timeline_t *tl, int points)
{
    for (int i = 0; i < points; i++)
        sonde_timeline_add(tl, next_f(), next_f());
}

static void build_memory(sonde_line_memory_t *mem)
{
    mem->malloc_mb = next_f();
    mem->mallocs = next_u();
    mem->alloc_objects = next_f();
    mem->python_fraction = 1.0 / (double)(++seq);
    mem->avg_mb = next_f();
    mem->peak_mb = next_f();
    mem->live_mb = next_f();
    mem->live_objects = next_f();
    mem->live_at_peak_mb = next_f();
    mem->copy_mb = next_f();
    build_timeline(&mem->timeline, 3);
    mem->leak_likelihood = 1.0 / (double)(++seq);
    mem->leak_velocity_mb_s = next_f();
}

/* Every slot of every source, whatever the sources. */
static void build_figs(sonde_figs_t *figs)
{
    for (unsigned i = 0; i < SONDE_N_FIGS; i++)
        figs->v[i] = next_f();
}

static void build_line(sonde_line_stats_t *line)
{
    line->python_ns = next_u();
    line->native_ns = next_u();
    line->system_ns = next_u();
    line->samples = next_u();
    build_memory(&line->mem);
    build_figs(&line->figs);
}

static void build_func(sonde_func_stats_t *func)
{
    func->python_ns = next_u();
    func->native_ns = next_u();
    func->system_ns = next_u();
    func->samples = next_u();
    build_figs(&func->figs);
    build_memory(&func->mem);
}

/* A file: functions f (line 3) and g (line 10), lines 4 and 11 in them and
 * line 20 without a function (sonde_profile_line_only). */
static void build_file(sonde_profile_t *prof, const char *path)
{
    sonde_profile_line(prof, path, "f", 3, 4);
    sonde_profile_line(prof, path, "g", 10, 11);
    sonde_profile_line_only(prof, path, 20);
    sonde_file_stats_t *file = sonde_profile_file(prof, path);
    for (size_t i = 0; i < file->n_lines; i++)
        build_line(&file->lines[i]);
    for (size_t i = 0; i < file->n_funcs; i++)
        build_func(&file->funcs[i]);
}

static void build_process(sonde_profile_t *prof, const char *cmdline)
{
    sonde_process_t p = {.pid = next_i(),
                         .ppid = next_i(),
                         .cmdline = (char *)cmdline,
                         .cpu_sec = next_f(),
                         .wall_sec = next_f(),
                         .peak_mb = next_f(),
                         .complete = true,
                         .followed = next_i()};
    sonde_profile_add_process(prof, &p);
}

/* Every field of sonde_profile_t and of what it holds. */
static void build_profile(sonde_profile_t *prof)
{
    sonde_profile_init(prof);
    const char *argv[] = {"prog.py", "--flag", "x y"};
    sonde_profile_set_run(prof, "prog.py", 3, argv, "3.11.7");
    prof->elapsed_sec = next_f();
    prof->interval_sec = 1.0 / (double)(++seq);
    prof->virtual_time = true;
    prof->samples = next_u();
    prof->unattributed_ns = next_u();
    prof->profile_all = true;
    sonde_profile_set_exit(prof, next_i(), "ValueError");
    prof->partial = (sonde_partial_t){next_u(), next_u(), next_u(), next_u(), next_u(), next_u()};
    build_file(prof, "/src/a.py");
    build_file(prof, "/src/b\xc3\xa9.py");
    build_file(prof, "<string>");
    sonde_profile_sum(prof);
    /* sources: three lines; none (an empty file: not NULL); unreadable (NULL) */
    const char text[] = "import os\n\ndef f():  # \xe2\x9c\x93\n";
    sonde_profile_set_source(prof, "/src/a.py", text, sizeof text - 1);
    sonde_profile_set_source(prof, "/src/b\xc3\xa9.py", "", 0);
    prof->total_ns += next_u(); /* not the sum: carried as it is */
    prof->files[0].total_ns += next_u();
    prof->has_memory = true;
    prof->max_footprint_mb = next_f();
    prof->heap_peak_mb = next_f();
    prof->max_footprint_file = strdup("/src/a.py");
    prof->max_footprint_lineno = next_i();
    build_timeline(&prof->footprint, 4);
    for (unsigned i = 0; i < SONDE_N_FIGSRCS; i++) {
        prof->fig_runs[i].present = true;
        prof->fig_runs[i].detail = strdup("NVIDIA H200, NVIDIA H200");
        prof->fig_runs[i].own = true;
    }
    int main_thread = sonde_profile_thread_of(prof, "MainThread", next_i(), next_i());
    int worker = sonde_profile_thread(prof, "worker");
    sonde_stack_frame_t frames[] = {
        {"<module>", "/src/a.py", 9}, {"f", "/src/a.py", 4}, {"g", "/src/b\xc3\xa9.py", 11}};
    sonde_profile_add_stack(prof, frames, 2, main_thread, next_u(), next_u());
    sonde_ns_t kinds[SONDE_N_KINDS] = {next_u(), next_u(), next_u()};
    sonde_profile_add_stack_kinds(prof, frames, 3, worker, next_u(), kinds);
    sonde_profile_add_stack(prof, frames + 2, 1, -1, next_u(), next_u());
    build_process(prof, "python3 prog.py --flag 'x y'");
    build_process(prof, "");
    prof->pid = next_i();
}

/* ---- comparison: this file's own walk of the structs --------------------------------- */

typedef struct cmp {
    char where[256]; /* the first difference */
    bool differ;
} cmp_t;

static void cmp_note(cmp_t *c, const char *what)
{
    if (!c->differ) snprintf(c->where, sizeof c->where, "%s", what);
    c->differ = true;
}

#define SAME(c, a, b, field)                                                                       \
    do {                                                                                           \
        if ((a)->field != (b)->field) cmp_note(c, #field);                                         \
    } while (0)

static void same_str(cmp_t *c, const char *a, const char *b, const char *what)
{
    if ((a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0)) cmp_note(c, what);
}

static void same_timeline(cmp_t *c, const sonde_timeline_t *a, const sonde_timeline_t *b)
{
    SAME(c, a, b, n);
    for (size_t i = 0; i < a->n && i < b->n; i++) {
        SAME(c, a, b, points[i].t_sec);
        SAME(c, a, b, points[i].mb);
    }
}

static void same_memory(cmp_t *c, const sonde_line_memory_t *a, const sonde_line_memory_t *b)
{
    SAME(c, a, b, malloc_mb);
    SAME(c, a, b, mallocs);
    SAME(c, a, b, alloc_objects);
    SAME(c, a, b, python_fraction);
    SAME(c, a, b, avg_mb);
    SAME(c, a, b, peak_mb);
    SAME(c, a, b, live_mb);
    SAME(c, a, b, live_objects);
    SAME(c, a, b, live_at_peak_mb);
    SAME(c, a, b, copy_mb);
    same_timeline(c, &a->timeline, &b->timeline);
    SAME(c, a, b, leak_likelihood);
    SAME(c, a, b, leak_velocity_mb_s);
}

static void same_figs(cmp_t *c, const sonde_figs_t *a, const sonde_figs_t *b)
{
    for (unsigned i = 0; i < SONDE_N_FIGS; i++)
        SAME(c, a, b, v[i]);
}

static void same_fig_run(cmp_t *c, const sonde_fig_run_t *a, const sonde_fig_run_t *b)
{
    SAME(c, a, b, present);
    same_str(c, a->detail, b->detail, "fig_run detail");
    SAME(c, a, b, own);
}

static void same_partial(cmp_t *c, const sonde_partial_t *a, const sonde_partial_t *b)
{
    SAME(c, a, b, failed_reads);
    SAME(c, a, b, dropped_samples);
    SAME(c, a, b, threads_left_out);
    SAME(c, a, b, frames_left_out);
    SAME(c, a, b, processes_lost);
    SAME(c, a, b, processes_running);
}

/* b's line must borrow its function's name from b's own file. */
static void same_line(cmp_t *c, const sonde_file_stats_t *fb, const sonde_line_stats_t *a,
                      const sonde_line_stats_t *b)
{
    SAME(c, a, b, lineno);
    same_str(c, a->func_name, b->func_name, "line func_name");
    bool borrowed = !b->func_name;
    for (size_t i = 0; i < fb->n_funcs && !borrowed; i++)
        borrowed = fb->funcs[i].name == b->func_name;
    if (!borrowed) cmp_note(c, "line func_name not borrowed from its file's functions");
    SAME(c, a, b, func_firstlineno);
    SAME(c, a, b, python_ns);
    SAME(c, a, b, native_ns);
    SAME(c, a, b, system_ns);
    SAME(c, a, b, samples);
    same_memory(c, &a->mem, &b->mem);
    same_figs(c, &a->figs, &b->figs);
}

static void same_func(cmp_t *c, const sonde_func_stats_t *a, const sonde_func_stats_t *b)
{
    same_str(c, a->name, b->name, "func name");
    SAME(c, a, b, firstlineno);
    SAME(c, a, b, python_ns);
    SAME(c, a, b, native_ns);
    SAME(c, a, b, system_ns);
    SAME(c, a, b, samples);
    same_figs(c, &a->figs, &b->figs);
    same_memory(c, &a->mem, &b->mem);
}

static void same_file(cmp_t *c, const sonde_file_stats_t *a, const sonde_file_stats_t *b)
{
    same_str(c, a->path, b->path, "file path");
    SAME(c, a, b, n_lines);
    for (size_t i = 0; i < a->n_lines && i < b->n_lines; i++)
        same_line(c, b, &a->lines[i], &b->lines[i]);
    SAME(c, a, b, n_funcs);
    for (size_t i = 0; i < a->n_funcs && i < b->n_funcs; i++)
        same_func(c, &a->funcs[i], &b->funcs[i]);
    if ((a->source == NULL) != (b->source == NULL)) cmp_note(c, "file source NULL or not");
    SAME(c, a, b, n_source);
    for (size_t i = 0; a->source && b->source && i < a->n_source && i < b->n_source; i++)
        same_str(c, a->source[i], b->source[i], "file source line");
    SAME(c, a, b, total_ns);
}

static void same_process(cmp_t *c, const sonde_process_t *a, const sonde_process_t *b)
{
    SAME(c, a, b, pid);
    SAME(c, a, b, ppid);
    same_str(c, a->cmdline, b->cmdline, "process cmdline");
    SAME(c, a, b, cpu_sec);
    SAME(c, a, b, wall_sec);
    SAME(c, a, b, peak_mb);
    SAME(c, a, b, complete);
    SAME(c, a, b, followed);
}

static void same_frame(cmp_t *c, const sonde_stack_frame_t *a, const sonde_stack_frame_t *b)
{
    same_str(c, a->func, b->func, "frame func");
    same_str(c, a->file, b->file, "frame file");
    SAME(c, a, b, line);
}

static void same_stack(cmp_t *c, const sonde_stack_t *a, const sonde_stack_t *b)
{
    SAME(c, a, b, depth);
    for (uint32_t d = 0; d < a->depth && d < b->depth; d++)
        SAME(c, a, b, frames[d]);
    SAME(c, a, b, thread);
    SAME(c, a, b, samples);
    SAME(c, a, b, ns);
    for (int k = 0; k < SONDE_N_KINDS; k++)
        SAME(c, a, b, kind_ns[k]);
}

static void same_thread_ids(cmp_t *c, const sonde_thread_ids_t *a, const sonde_thread_ids_t *b)
{
    SAME(c, a, b, pid);
    SAME(c, a, b, tid);
}

static void same_profile(cmp_t *c, const sonde_profile_t *a, const sonde_profile_t *b)
{
    same_str(c, a->program, b->program, "program");
    SAME(c, a, b, argc);
    for (int i = 0; i < a->argc && i < b->argc; i++)
        same_str(c, a->argv[i], b->argv[i], "argv");
    same_str(c, a->python_version, b->python_version, "python_version");
    SAME(c, a, b, elapsed_sec);
    SAME(c, a, b, interval_sec);
    SAME(c, a, b, virtual_time);
    SAME(c, a, b, samples);
    SAME(c, a, b, unattributed_ns);
    SAME(c, a, b, profile_all);
    SAME(c, a, b, exit_known);
    SAME(c, a, b, exit_status);
    same_str(c, a->exit_exception, b->exit_exception, "exit_exception");
    same_partial(c, &a->partial, &b->partial);
    SAME(c, a, b, n_files);
    for (size_t i = 0; i < a->n_files && i < b->n_files; i++)
        same_file(c, &a->files[i], &b->files[i]);
    SAME(c, a, b, total_ns);
    SAME(c, a, b, has_memory);
    SAME(c, a, b, max_footprint_mb);
    SAME(c, a, b, heap_peak_mb);
    same_str(c, a->max_footprint_file, b->max_footprint_file, "max_footprint_file");
    SAME(c, a, b, max_footprint_lineno);
    same_timeline(c, &a->footprint, &b->footprint);
    for (unsigned i = 0; i < SONDE_N_FIGSRCS; i++)
        same_fig_run(c, &a->fig_runs[i], &b->fig_runs[i]);
    SAME(c, a, b, n_frames);
    for (size_t i = 0; i < a->n_frames && i < b->n_frames; i++)
        same_frame(c, &a->frames[i], &b->frames[i]);
    SAME(c, a, b, n_stacks);
    for (size_t i = 0; i < a->n_stacks && i < b->n_stacks; i++)
        same_stack(c, &a->stacks[i], &b->stacks[i]);
    SAME(c, a, b, n_threads);
    for (size_t i = 0; i < a->n_threads && i < b->n_threads; i++) {
        same_str(c, a->thread_names[i], b->thread_names[i], "thread name");
        same_thread_ids(c, &a->thread_ids[i], &b->thread_ids[i]);
    }
    SAME(c, a, b, n_processes);
    for (size_t i = 0; i < a->n_processes && i < b->n_processes; i++)
        same_process(c, &a->processes[i], &b->processes[i]);
    SAME(c, a, b, pid);
}

/* ---- every field set: compared with an empty profile, each must differ ----------- */

/* Counts the scalar fields of a that equal b's (a built, b zero): SAME
 * compares them, so this reuses the walk above field by field. */
#define UNSET(c, a, b, field)                                                                      \
    do {                                                                                           \
        if ((a)->field == (b)->field) cmp_note(c, #field " is left at its default");               \
    } while (0)

static void test_every_field_set(const sonde_profile_t *prof)
{
    cmp_t c = {.differ = false};
    sonde_line_stats_t zline;
    sonde_func_stats_t zfunc;
    sonde_process_t zproc;
    sonde_stack_t zstack;
    memset(&zline, 0, sizeof zline);
    memset(&zfunc, 0, sizeof zfunc);
    memset(&zproc, 0, sizeof zproc);
    memset(&zstack, 0, sizeof zstack);
    const sonde_file_stats_t *file = &prof->files[0];
    for (size_t i = 0; i < file->n_lines; i++) {
        const sonde_line_stats_t *l = &file->lines[i];
        UNSET(&c, l, &zline, lineno);
        UNSET(&c, l, &zline, python_ns);
        UNSET(&c, l, &zline, native_ns);
        UNSET(&c, l, &zline, system_ns);
        UNSET(&c, l, &zline, samples);
        UNSET(&c, &l->mem, &zline.mem, malloc_mb);
        UNSET(&c, &l->mem, &zline.mem, mallocs);
        UNSET(&c, &l->mem, &zline.mem, alloc_objects);
        UNSET(&c, &l->mem, &zline.mem, python_fraction);
        UNSET(&c, &l->mem, &zline.mem, avg_mb);
        UNSET(&c, &l->mem, &zline.mem, peak_mb);
        UNSET(&c, &l->mem, &zline.mem, live_mb);
        UNSET(&c, &l->mem, &zline.mem, live_objects);
        UNSET(&c, &l->mem, &zline.mem, live_at_peak_mb);
        UNSET(&c, &l->mem, &zline.mem, copy_mb);
        UNSET(&c, &l->mem, &zline.mem, timeline.n);
        UNSET(&c, &l->mem, &zline.mem, leak_likelihood);
        UNSET(&c, &l->mem, &zline.mem, leak_velocity_mb_s);
        for (unsigned k = 0; k < SONDE_N_FIGS; k++)
            UNSET(&c, &l->figs, &zline.figs, v[k]);
    }
    UNSET(&c, &file->lines[0], &zline, func_name);
    UNSET(&c, &file->lines[0], &zline, func_firstlineno);
    for (size_t i = 0; i < file->n_funcs; i++) {
        const sonde_func_stats_t *f = &file->funcs[i];
        UNSET(&c, f, &zfunc, name);
        UNSET(&c, f, &zfunc, firstlineno);
        UNSET(&c, f, &zfunc, python_ns);
        UNSET(&c, f, &zfunc, native_ns);
        UNSET(&c, f, &zfunc, system_ns);
        UNSET(&c, f, &zfunc, samples);
        for (unsigned k = 0; k < SONDE_N_FIGS; k++)
            UNSET(&c, &f->figs, &zfunc.figs, v[k]);
        UNSET(&c, &f->mem, &zfunc.mem, malloc_mb);
        UNSET(&c, &f->mem, &zfunc.mem, timeline.n);
    }
    for (size_t i = 0; i < prof->n_processes; i++) {
        const sonde_process_t *p = &prof->processes[i];
        UNSET(&c, p, &zproc, pid);
        UNSET(&c, p, &zproc, ppid);
        UNSET(&c, p, &zproc, cpu_sec);
        UNSET(&c, p, &zproc, wall_sec);
        UNSET(&c, p, &zproc, peak_mb);
        UNSET(&c, p, &zproc, complete);
        UNSET(&c, p, &zproc, followed);
    }
    const sonde_stack_t *s = &prof->stacks[1];
    UNSET(&c, s, &zstack, depth);
    UNSET(&c, s, &zstack, thread);
    UNSET(&c, s, &zstack, samples);
    UNSET(&c, s, &zstack, ns);
    for (int k = 0; k < SONDE_N_KINDS; k++)
        UNSET(&c, s, &zstack, kind_ns[k]);
    bool run = prof->program && prof->argc == 3 && prof->python_version && prof->elapsed_sec &&
               prof->interval_sec && prof->virtual_time && prof->samples && prof->unattributed_ns &&
               prof->profile_all && prof->exit_known && prof->exit_status &&
               prof->exit_exception[0] && prof->partial.failed_reads &&
               prof->partial.dropped_samples && prof->partial.threads_left_out &&
               prof->partial.frames_left_out && prof->partial.processes_lost &&
               prof->partial.processes_running && prof->total_ns && prof->has_memory &&
               prof->max_footprint_mb && prof->heap_peak_mb && prof->max_footprint_file &&
               prof->max_footprint_lineno && prof->footprint.n && prof->fig_runs[0].present &&
               prof->fig_runs[0].detail && prof->fig_runs[0].own && prof->n_frames &&
               prof->n_stacks == 3 && prof->n_threads == 2 && prof->thread_ids[0].pid &&
               prof->thread_ids[0].tid && prof->n_processes == 2 && prof->pid &&
               prof->files[0].source && prof->files[0].n_source == 3 && prof->files[1].source &&
               !prof->files[2].source && prof->files[0].lines[2].func_name == NULL;
    if (!run) cmp_note(&c, "a field of the profile itself is left at its default");
    check(!c.differ, "every_field_set", "%s", c.where);
}

/* ---- the round trip ------------------------------------------------------------------ */

static void test_round_trip(void)
{
    sonde_profile_t prof, back;
    build_profile(&prof);
    test_every_field_set(&prof);
    sonde_profile_init(&back);
    sonde_buf_t bytes = SONDE_BUF_INIT;
    int rc = sonde_handover_encode(&prof, &bytes);
    check(rc == 0 && bytes.len > 24, "encode", "rc %d len %zu", rc, bytes.len);
    const char *why = NULL;
    rc = sonde_handover_decode(&back, bytes.data, bytes.len, &why);
    check(rc == 0, "decode", "rc %d: %s", rc, why ? why : "");
    cmp_t c = {.differ = false};
    same_profile(&c, &prof, &back);
    check(!c.differ, "round_trip_every_field", "first difference: %s", c.where);
    check(back.stack_index == NULL && back.cap_files == back.n_files, "round_trip_caps_no_index",
          "index %p", (void *)back.stack_index);

    /* encoded again, the same bytes */
    sonde_buf_t again = SONDE_BUF_INIT;
    rc = sonde_handover_encode(&back, &again);
    check(rc == 0 && again.len == bytes.len && memcmp(again.data, bytes.data, bytes.len) == 0,
          "round_trip_same_bytes", "rc %d len %zu vs %zu", rc, again.len, bytes.len);

    /* the profile read back is a model like any: adds find its entries */
    sonde_stack_frame_t frames[] = {{"<module>", "/src/a.py", 9}, {"f", "/src/a.py", 4}};
    size_t stacks = back.n_stacks, nframes = back.n_frames;
    uint64_t before = back.stacks[0].samples;
    rc = sonde_profile_add_stack(&back, frames, 2, 0, 5, 50);
    check(rc == 0 && back.n_stacks == stacks && back.n_frames == nframes &&
              back.stacks[0].samples == before + 5,
          "read_back_stack_index_rebuilt", "rc %d stacks %zu frames %zu", rc, back.n_stacks,
          back.n_frames);
    rc = sonde_profile_add(&back, "/src/a.py", "f", 3, 4, 1, 2, 3, 1);
    sonde_file_stats_t *a = sonde_profile_file(&back, "/src/a.py");
    check(rc == 0 && a && a->n_lines == 3 && a->n_funcs == 2, "read_back_add_finds_entries",
          "rc %d lines %zu", rc, a ? a->n_lines : 0);

    /* an empty profile too */
    sonde_profile_t empty, empty_back;
    sonde_profile_init(&empty);
    sonde_profile_init(&empty_back);
    sonde_buf_reset(&again);
    rc = sonde_handover_encode(&empty, &again);
    if (rc == 0) rc = sonde_handover_decode(&empty_back, again.data, again.len, &why);
    c.differ = false;
    same_profile(&c, &empty, &empty_back);
    check(rc == 0 && !c.differ && !empty_back.program && !empty_back.argv,
          "round_trip_empty_profile", "rc %d %s", rc, c.where);
    sonde_profile_free(&empty_back);

    sonde_buf_free(&again);
    sonde_buf_free(&bytes);
    sonde_profile_free(&back);
    sonde_profile_free(&prof);
}

/* What the model forbids is not written. */
static void test_encode_refuses(void)
{
    sonde_profile_t prof;
    build_profile(&prof);
    sonde_buf_t bytes = SONDE_BUF_INIT;
    const char *saved = prof.files[0].lines[0].func_name;
    prof.files[0].lines[0].func_name = "f"; /* not the function's own pointer */
    int rc = sonde_handover_encode(&prof, &bytes);
    check(rc == -EINVAL && bytes.len == 0, "encode_refuses_line_function_not_borrowed",
          "rc %d len %zu", rc, bytes.len);
    prof.files[0].lines[0].func_name = saved;
    char *path = prof.files[1].path;
    prof.files[1].path = NULL;
    rc = sonde_handover_encode(&prof, &bytes);
    check(rc == -EINVAL, "encode_refuses_null_path", "rc %d", rc);
    prof.files[1].path = path;
    sonde_buf_free(&bytes);
    sonde_profile_free(&prof);
}

/* ---- hostile input ------------------------------------------------------------------ */

static bool profile_is_empty(const sonde_profile_t *p)
{
    return !p->program && !p->argv && !p->files && !p->n_files && !p->frames && !p->stacks &&
           !p->thread_names && !p->processes && !p->max_footprint_file && !p->fig_runs[0].detail &&
           !p->footprint.points;
}

/* Decodes len bytes of data: rc, and whether a refusal left the profile
 * empty with a reason. */
static int decode_copy(const void *data, size_t len, bool *clean)
{
    /* exactly len bytes: a read past the end is seen by sanitizers */
    void *copy = malloc(len ? len : 1);
    memcpy(copy, data, len);
    sonde_profile_t prof;
    sonde_profile_init(&prof);
    const char *why = NULL;
    int rc = sonde_handover_decode(&prof, copy, len, &why);
    *clean = rc == 0 || (profile_is_empty(&prof) && why && why[0]);
    sonde_profile_free(&prof);
    free(copy);
    return rc;
}

static void test_truncated_everywhere(void)
{
    sonde_profile_t prof;
    build_profile(&prof);
    sonde_buf_t bytes = SONDE_BUF_INIT;
    sonde_handover_encode(&prof, &bytes);
    size_t bad = SIZE_MAX;
    int bad_rc = 0;
    for (size_t len = 0; len < bytes.len && bad == SIZE_MAX; len++) {
        bool clean = false;
        int rc = decode_copy(bytes.data, len, &clean);
        bool expected = len < 8 ? rc == -EINVAL : rc == -EPROTO;
        if (!expected || !clean) {
            bad = len;
            bad_rc = rc;
        }
    }
    check(bad == SIZE_MAX, "truncated_at_every_byte_refused", "at %zu of %zu: rc %d", bad,
          bytes.len, bad_rc);
    /* one byte more */
    sonde_buf_putc(&bytes, 0);
    bool clean = false;
    int rc = decode_copy(bytes.data, bytes.len, &clean);
    check(rc == -EPROTO && clean, "trailing_byte_refused", "rc %d", rc);
    sonde_buf_free(&bytes);
    sonde_profile_free(&prof);
}

static void test_magic_and_version(void)
{
    sonde_profile_t prof;
    sonde_profile_init(&prof);
    sonde_buf_t bytes = SONDE_BUF_INIT;
    sonde_handover_encode(&prof, &bytes);
    bool clean = false;
    bytes.data[0] = '{'; /* a JSON profile, say */
    int rc = decode_copy(bytes.data, bytes.len, &clean);
    check(rc == -EINVAL && clean, "wrong_magic_refused", "rc %d", rc);
    bytes.data[0] = 'S';
    bytes.data[8] = (char)(SONDE_HANDOVER_VERSION + 1);
    rc = decode_copy(bytes.data, bytes.len, &clean);
    check(rc == -EPROTO && clean, "other_version_refused", "rc %d", rc);
    bytes.data[8] = (char)SONDE_HANDOVER_VERSION;
    bytes.data[12] = 1;
    rc = decode_copy(bytes.data, bytes.len, &clean);
    check(rc == -EPROTO && clean, "reserved_word_refused", "rc %d", rc);
    bytes.data[12] = 0;
    rc = decode_copy(bytes.data, bytes.len, &clean);
    check(rc == 0, "empty_profile_taken", "rc %d", rc);
    rc = decode_copy("", 0, &clean);
    check(rc == -EINVAL && clean, "empty_file_refused", "rc %d", rc);
    sonde_buf_free(&bytes);
}

/* Every byte flipped, every 4 bytes made 0xffffffff and 0x7fffffff: never
 * a crash, a leak (sanitizers) or a huge allocation (a count is bounded by
 * the bytes left, which the allocation of a huge one under ASan would
 * show); a refusal leaves the profile empty with a reason. */
static void test_every_byte_mutated(void)
{
    sonde_profile_t prof;
    build_profile(&prof);
    sonde_buf_t bytes = SONDE_BUF_INIT;
    sonde_handover_encode(&prof, &bytes);
    unsigned char *copy = malloc(bytes.len);
    size_t unclean = SIZE_MAX, taken = 0, refused = 0;
    for (size_t i = 0; i < bytes.len; i++) {
        static const uint32_t words[] = {0xffffffffu, 0x7fffffffu};
        for (int m = 0; m < 3; m++) {
            memcpy(copy, bytes.data, bytes.len);
            if (m == 0) {
                copy[i] ^= 0xff;
            } else {
                if (i + 4 > bytes.len) continue;
                memcpy(copy + i, &words[m - 1], 4);
            }
            bool clean = false;
            int rc = decode_copy(copy, bytes.len, &clean);
            if (!clean && unclean == SIZE_MAX) unclean = i;
            if (rc == 0)
                taken++;
            else
                refused++;
        }
    }
    check(unclean == SIZE_MAX && refused > 0, "every_byte_mutated_refused_or_taken",
          "unclean at %zu; %zu taken, %zu refused", unclean, taken, refused);
    free(copy);
    sonde_buf_free(&bytes);
    sonde_profile_free(&prof);
}

/* Encodes a and b (one value apart) and returns the first offset where they
 * differ, or SIZE_MAX; *bytes holds a's encoding. */
static size_t differ_at(const sonde_profile_t *a, const sonde_profile_t *b, sonde_buf_t *bytes)
{
    sonde_buf_t other = SONDE_BUF_INIT;
    sonde_buf_reset(bytes);
    sonde_handover_encode(a, bytes);
    sonde_handover_encode(b, &other);
    size_t at = SIZE_MAX;
    for (size_t i = 0; i < bytes->len && i < other.len && at == SIZE_MAX; i++)
        if (bytes->data[i] != other.data[i]) at = i;
    sonde_buf_free(&other);
    return at;
}

/* A small profile: a.py's f at lines 4 and 5, b.py; two frames, one stack
 * on thread 0; one process. */
static void small_profile(sonde_profile_t *prof, int second_line, uint32_t frame, int thread)
{
    sonde_profile_init(prof);
    sonde_profile_add(prof, "a.py", "f", 3, 4, 1, 0, 0, 1);
    sonde_profile_add(prof, "a.py", "f", 3, second_line, 1, 0, 0, 1);
    sonde_profile_add(prof, "b.py", "g", 1, 2, 1, 0, 0, 1);
    int t = sonde_profile_thread(prof, "MainThread");
    sonde_profile_thread(prof, "other");
    sonde_stack_frame_t frames[] = {{"f", "a.py", 4}, {"g", "b.py", 2}};
    sonde_profile_add_stack(prof, frames, 2, t, 1, 10);
    prof->stacks[0].frames[1] = frame;
    prof->stacks[0].thread = thread;
    sonde_process_t p = {.pid = 1, .cmdline = "x"};
    sonde_profile_add_process(prof, &p);
}

static void test_indices_and_order(void)
{
    sonde_profile_t a, b;
    sonde_buf_t bytes = SONDE_BUF_INIT;
    bool clean = false;

    /* a stack's frame out of range */
    small_profile(&a, 5, 1, 0);
    small_profile(&b, 5, 0, 0);
    size_t at = differ_at(&a, &b, &bytes);
    bytes.data[at] = 2;
    int rc = decode_copy(bytes.data, bytes.len, &clean);
    check(at != SIZE_MAX && rc == -EPROTO && clean, "stack_frame_out_of_range_refused", "rc %d",
          rc);
    sonde_profile_free(&a);
    sonde_profile_free(&b);

    /* a stack's thread out of range (two threads: 0, 1; -1 merged); ints
     * are zigzag varints: 2 is 4, -2 is 3 */
    small_profile(&a, 5, 1, 0);
    small_profile(&b, 5, 1, 1);
    at = differ_at(&a, &b, &bytes);
    bytes.data[at] = 4;
    rc = decode_copy(bytes.data, bytes.len, &clean);
    check(at != SIZE_MAX && rc == -EPROTO && clean, "stack_thread_out_of_range_refused", "rc %d",
          rc);
    bytes.data[at] = 3;
    rc = decode_copy(bytes.data, bytes.len, &clean);
    check(rc == -EPROTO && clean, "stack_thread_negative_refused", "rc %d", rc);
    sonde_profile_free(&a);
    sonde_profile_free(&b);

    /* lines out of order: 4 then 6 becomes 4 then 3 (zigzag: 6) */
    small_profile(&a, 6, 1, 0);
    small_profile(&b, 7, 1, 0);
    at = differ_at(&a, &b, &bytes);
    bytes.data[at] = 6;
    rc = decode_copy(bytes.data, bytes.len, &clean);
    check(at != SIZE_MAX && rc == -EPROTO && clean, "lines_out_of_order_refused", "rc %d", rc);
    bytes.data[at] = 8;
    rc = decode_copy(bytes.data, bytes.len, &clean);
    check(rc == -EPROTO && clean, "line_twice_refused", "rc %d", rc);

    /* files out of order: "a.py" renamed "c.py" (after "b.py") */
    char *p = memmem(bytes.data, bytes.len, "a.py", 4);
    bytes.data[at] = 12;
    if (p) *p = 'c';
    rc = decode_copy(bytes.data, bytes.len, &clean);
    check(p && rc == -EPROTO && clean, "files_out_of_order_refused", "rc %d", rc);
    sonde_profile_free(&a);
    sonde_profile_free(&b);

    /* a line's function out of range */
    small_profile(&a, 5, 1, 0);
    sonde_profile_add(&a, "a.py", "h", 9, 10, 1, 0, 0, 1);
    small_profile(&b, 5, 1, 0);
    sonde_profile_add(&b, "a.py", "f", 3, 10, 1, 0, 0, 1);
    at = differ_at(&a, &b, &bytes); /* a.py's functions: a has f and h, b has f */
    /* line 10 (in h: function 1), found by its number; its function follows */
    char *line10 = memmem(bytes.data + at, bytes.len - at, "\x14\x01", 2); /* 10, 1 */
    if (line10) line10[1] = 9;
    rc = decode_copy(bytes.data, bytes.len, &clean);
    check(line10 && rc == -EPROTO && clean, "line_function_out_of_range_refused", "rc %d", rc);
    sonde_profile_free(&a);
    sonde_profile_free(&b);

    /* a count the record cannot hold: the processes' (the record before
     * the last, END's 12 bytes); then 2^32 - 1, in a record made for it */
    sonde_profile_init(&a);
    sonde_buf_reset(&bytes);
    sonde_handover_encode(&a, &bytes);
    bytes.data[bytes.len - 12 - 1] = 0x7f;
    rc = decode_copy(bytes.data, bytes.len, &clean);
    check(rc == -EPROTO && clean, "count_past_record_refused", "rc %d", rc);
    static const unsigned char huge[] = {6, 0, 0, 0,    5,    0,    0,    0,   0,
                                         0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f};
    size_t keep = bytes.len - 12 - 13; /* up to the processes' record */
    sonde_buf_t crafted = SONDE_BUF_INIT;
    sonde_buf_append(&crafted, bytes.data, keep);
    sonde_buf_append(&crafted, huge, sizeof huge);
    sonde_buf_append(&crafted, bytes.data + bytes.len - 12, 12);
    uint64_t body = crafted.len - 24;
    for (int i = 0; i < 8; i++)
        crafted.data[16 + i] = (char)(body >> (8 * i));
    rc = decode_copy(crafted.data, crafted.len, &clean);
    check(rc == -EPROTO && clean, "huge_count_refused", "rc %d", rc);
    memcpy(crafted.data + keep + 12, "\x80\x80\x80\x80\x00", 5); /* 0 in 5 bytes */
    rc = decode_copy(crafted.data, crafted.len, &clean);
    check(rc == -EPROTO && clean, "overlong_varint_refused", "rc %d", rc);
    memcpy(crafted.data + keep + 12, "\0\0\0\0", 4); /* 0, then 4 bytes too many */
    crafted.data[keep + 12] = 0;
    rc = decode_copy(crafted.data, crafted.len, &clean);
    check(rc == -EPROTO && clean, "record_longer_than_fields_refused", "rc %d", rc);
    sonde_buf_free(&crafted);
    sonde_buf_free(&bytes);
}

/* ---- files, the merge --------------------------------------------------------------- */

static void test_files_and_take(void)
{
    char *dir = check_tempdir();
    sonde_profile_t prof, merged, one;
    build_profile(&prof);
    int rc = sonde_handover_write(dir, "12-34-g0", SONDE_HANDOVER_PROFILE, 0, &prof);
    int rc2 = sonde_handover_write(dir, "12-34-g0", SONDE_HANDOVER_PERIOD, 7, &prof);
    check(rc == 0 && rc2 == 0 && check_count_entries(dir) == 2, "write_leaves_two_files",
          "rc %d %d entries %d", rc, rc2, check_count_entries(dir));
    char path[PATH_MAX];
    sonde_handover_path(path, sizeof path, dir, "12-34-g0", SONDE_HANDOVER_PROFILE, 0);
    sonde_profile_init(&merged);
    sonde_profile_init(&one);
    const char *why = NULL;
    rc = sonde_handover_take(&merged, path, &one, &why);
    cmp_t c = {.differ = false};
    same_profile(&c, &prof, &one);
    check(rc == 0 && !c.differ, "take_reads_whole_profile", "rc %d %s %s", rc, why ? why : "",
          c.where);
    check(merged.n_files == 3 && merged.n_processes == 2 && merged.n_stacks == 3 &&
              merged.has_memory && merged.fig_runs[0].present && merged.profile_all,
          "take_merges", "files %zu processes %zu", merged.n_files, merged.n_processes);
    sonde_profile_t again;
    sonde_profile_init(&again);
    sonde_handover_path(path, sizeof path, dir, "12-34-g0", SONDE_HANDOVER_PERIOD, 7);
    rc = sonde_handover_take(&merged, path, &again, &why);
    check(rc == 0 && merged.n_processes == 4 && merged.n_stacks == 3 &&
              merged.stacks[0].samples == 2 * prof.stacks[0].samples,
          "take_twice_adds", "rc %d processes %zu", rc, merged.n_processes);
    sonde_profile_free(&again);
    /* a JSON file where a hand-over should be: refused, nothing merged */
    check_write_file(path, "{\"files\": {}}\n", 14);
    sonde_profile_init(&again);
    rc = sonde_handover_take(&merged, path, &again, &why);
    check(rc == -EINVAL && why && merged.n_processes == 4 && profile_is_empty(&again),
          "take_refuses_json", "rc %d", rc);
    rc = sonde_handover_take(&merged, "/nonexistent/x.sonde", &again, &why);
    check(rc == -ENOENT && !why, "take_missing_file", "rc %d", rc);
    /* writing into a directory that is gone fails, leaving nothing */
    check_rm_rf(dir);
    rc = sonde_handover_write(dir, "12-34-g0", SONDE_HANDOVER_PROFILE, 0, &prof);
    check(rc == -ENOENT, "write_into_missing_directory", "rc %d", rc);
    rc = sonde_handover_write(dir, "12-34-g0", SONDE_HANDOVER_LIVE, 0, &prof);
    check(rc == -EINVAL, "write_refuses_a_marker_kind", "rc %d", rc);
    sonde_profile_free(&one);
    sonde_profile_free(&merged);
    sonde_profile_free(&prof);
    free(dir);
}

/* ---- names ------------------------------------------------------------------------- */

static void test_names(void)
{
    char stem[SONDE_HANDOVER_STEM_MAX], exec[SONDE_HANDOVER_STEM_MAX], path[PATH_MAX];
    sonde_handover_name_t name;
    check(sonde_handover_stem(stem, sizeof stem, 4242, 123456789ull, 2) == 0 &&
              strcmp(stem, "4242-123456789-g2") == 0,
          "stem", "%s", stem);
    check(sonde_handover_exec_stem(exec, sizeof exec, stem, 3) == 0 &&
              strcmp(exec, "4242-123456789-g2-x3") == 0,
          "exec_stem", "%s", exec);
    char root[SONDE_HANDOVER_STEM_MAX];
    check(sonde_handover_root_stem(root, sizeof root, 77) == 0 && strcmp(root, "77-root") == 0,
          "root_stem", "%s", root);
    char tiny[4];
    check(sonde_handover_stem(tiny, sizeof tiny, 4242, 1, 0) == -ENAMETOOLONG, "stem_too_long",
          "accepted");

    static const struct {
        sonde_handover_kind_t kind;
        uint64_t number;
        const char *suffix;
    } kinds[] = {
        {SONDE_HANDOVER_LIVE, 0, ".live"},       {SONDE_HANDOVER_SERVICE, 0, ".svc"},
        {SONDE_HANDOVER_PROFILE, 0, ".sonde"},   {SONDE_HANDOVER_PERIOD, 12, ".p12.sonde"},
        {SONDE_HANDOVER_FAILED, ENOSPC, ".e28"},
    };
    bool ok = true;
    char detail[PATH_MAX + 64] = "";
    for (size_t i = 0; i < SONDE_ARRAY_LEN(kinds); i++) {
        const char *s = i == 3 ? exec : stem;
        char want[PATH_MAX];
        snprintf(want, sizeof want, "/d/%s%s", s, kinds[i].suffix);
        int rc = sonde_handover_path(path, sizeof path, "/d", s, kinds[i].kind, kinds[i].number);
        bool parsed = sonde_handover_parse(path + 3, &name);
        if (rc != 0 || strcmp(path, want) != 0 || !parsed || name.kind != kinds[i].kind ||
            name.number != kinds[i].number || strcmp(name.stem, s) != 0 || name.pid != 4242) {
            ok = false;
            snprintf(detail, sizeof detail, "%s: rc %d parsed %d kind %d", want, rc, parsed,
                     (int)name.kind);
        }
    }
    check(ok, "paths_made_and_parsed", "%s", detail);
    check(
        sonde_handover_path(path, sizeof path, "/d", "a.b", SONDE_HANDOVER_LIVE, 0) == -EINVAL &&
            sonde_handover_path(path, sizeof path, "/d", "", SONDE_HANDOVER_LIVE, 0) == -EINVAL &&
            sonde_handover_path(path, sizeof path, "/d", "a/b", SONDE_HANDOVER_LIVE, 0) ==
                -EINVAL &&
            sonde_handover_path(path, sizeof path, "/d", "x", SONDE_HANDOVER_OTHER, 0) == -EINVAL &&
            sonde_handover_path(path, 8, "/d", "12345", SONDE_HANDOVER_PROFILE, 0) == -ENAMETOOLONG,
        "paths_refused", "accepted");

    static const char *const others[] = {
        "x.sonde.tmp",    "x.live.tmp",
        "period",         "helper",
        "ending",         "drained",
        "x.e0",           "x.e4096",
        "x.e12a",         "x.e",
        "x.p.sonde",      "x.p12.json",
        "x.p12",          "x.p-1.sonde",
        "x.json",         ".live",
        "x.p1.sonde.tmp", "0123456789012345678901234567890123456789012345678901234567890123.live",
    };
    const char *taken = NULL;
    for (size_t i = 0; i < SONDE_ARRAY_LEN(others) && !taken; i++)
        if (sonde_handover_parse(others[i], &name)) taken = others[i];
    check(!taken, "other_names_not_taken", "%s", taken ? taken : "");
    check(sonde_handover_parse("x.p18446744073709551615.sonde", &name) &&
              name.number == UINT64_MAX &&
              !sonde_handover_parse("x.p18446744073709551616.sonde", &name),
          "period_number_bounds", "wrong");

    check(sonde_handover_dir_path(path, sizeof path, "/d", SONDE_HANDOVER_PERIOD_WORD) == 0 &&
              strcmp(path, "/d/period") == 0 &&
              sonde_handover_dir_path(path, sizeof path, "/d", SONDE_HANDOVER_DRAINED) == 0 &&
              strcmp(path, "/d/drained") == 0 &&
              sonde_handover_dir_path(path, sizeof path, "/d", (sonde_handover_dirfile_t)9) ==
                  -EINVAL,
          "directory_files", "%s", path);
}

static void test_markers(void)
{
    char *dir = check_tempdir();
    int rc = sonde_handover_mark(dir, "5-6-g0", SONDE_HANDOVER_LIVE, 0);
    bool has = sonde_handover_has(dir, "5-6-g0", SONDE_HANDOVER_LIVE, 0);
    sonde_handover_unmark(dir, "5-6-g0", SONDE_HANDOVER_LIVE, 0);
    check(rc == 0 && has && !sonde_handover_has(dir, "5-6-g0", SONDE_HANDOVER_LIVE, 0),
          "mark_has_unmark", "rc %d", rc);
    rc = sonde_handover_mark(dir, "5-6-g0", SONDE_HANDOVER_FAILED, ENOSPC);
    check(rc == 0 && sonde_handover_has(dir, "5-6-g0", SONDE_HANDOVER_FAILED, ENOSPC),
          "mark_failed", "rc %d", rc);
    check(sonde_handover_mark(dir, "5-6-g0", SONDE_HANDOVER_PROFILE, 0) == -EINVAL,
          "mark_refuses_a_profile", "accepted");
    rc = sonde_handover_dir_mark(dir, SONDE_HANDOVER_ENDING, "SIGTERM\n");
    char text[32];
    ssize_t n = sonde_handover_dir_read(dir, SONDE_HANDOVER_ENDING, text, sizeof text);
    check(rc == 0 && n == 8 && strcmp(text, "SIGTERM\n") == 0 &&
              sonde_handover_dir_has(dir, SONDE_HANDOVER_ENDING) &&
              !sonde_handover_dir_has(dir, SONDE_HANDOVER_DRAINED) && check_count_entries(dir) == 2,
          "dir_mark_and_read", "rc %d n %zd", rc, n);
    n = sonde_handover_dir_read(dir, SONDE_HANDOVER_HELPER, text, sizeof text);
    check(n == -ENOENT && text[0] == 0, "dir_read_missing", "n %zd", n);
    check_rm_rf(dir);
    free(dir);
}

int main(void)
{
    test_round_trip();
    test_encode_refuses();
    test_truncated_everywhere();
    test_magic_and_version();
    test_every_byte_mutated();
    test_indices_and_order();
    test_files_and_take();
    test_names();
    test_markers();
    return check_exit_code();
}
