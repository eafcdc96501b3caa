/* test_model_merge.c — unit tests of sonde_profile_merge (src/model/merge.c).
 *
 * Builds two profiles from known inputs (lines, functions, memory, GPU,
 * stacks, threads, partial counts, processes) and checks that the merge
 * adds what adds, keeps the highest of peaks, merges timelines in time
 * order and appends processes.
 */
#include "model/model.h"

#include "check.h"

#include <stdint.h>

#define MS 1000000ull

/* A profile of one process: f at a.py:3 and b.py:7, a stack, memory. */
static void merge_build(sonde_profile_t *prof, int pid, double scale, double elapsed,
                        double t_offset)
{
    sonde_profile_init(prof);
    const char *argv[] = {"app.py", "x"};
    sonde_profile_set_run(prof, "app.py", 2, argv, "3.11.7");
    prof->elapsed_sec = elapsed;
    prof->interval_sec = 0.01;
    prof->samples = (uint64_t)(100 * scale);
    prof->partial.failed_reads = 1;
    prof->partial.frames_left_out = (uint64_t)scale;
    sonde_profile_add(prof, "a.py", "f", 1, 3, (sonde_ns_t)(10 * MS * scale),
                      (sonde_ns_t)(5 * MS * scale), 0, (uint64_t)(7 * scale));
    sonde_profile_add(prof, "b.py", "g", 5, 7, 0, 0, (sonde_ns_t)(3 * MS * scale), 2);
    prof->has_memory = true;
    prof->max_footprint_mb = 10 * scale;
    prof->max_footprint_file = strdup(pid == 1 ? "a.py" : "b.py");
    prof->max_footprint_lineno = pid == 1 ? 3 : 7;
    prof->heap_peak_mb = 4 * scale;
    sonde_timeline_add(&prof->footprint, t_offset, 1);
    sonde_timeline_add(&prof->footprint, t_offset + 1, 10 * scale);
    sonde_line_stats_t *line = sonde_profile_line(prof, "a.py", "f", 1, 3);
    line->mem.malloc_mb = 8 * scale;
    line->mem.mallocs = 4;
    line->mem.peak_mb = 6 * scale;
    line->mem.live_mb = 2 * scale;
    line->mem.python_fraction = pid == 1 ? 1.0 : 0.0;
    sonde_timeline_add(&line->mem.timeline, t_offset, 1);
    sonde_timeline_add(&line->mem.timeline, t_offset + 0.5, 2);
    sonde_figs_t gpu = {{[SONDE_FIG_GPU_UTIL] = 50 * scale,
                         [SONDE_FIG_GPU_SAMPLES] = 1,
                         [SONDE_FIG_GPU_MEM] = 100,
                         [SONDE_FIG_GPU_PEAK] = 200 * scale,
                         [SONDE_FIG_GPU_SEC] = scale}};
    sonde_profile_add_figs(prof, "a.py", "f", 1, 3, &gpu);
    sonde_fig_run_set(&prof->fig_runs[SONDE_FIGSRC_GPU], NULL, false);
    int thread = sonde_profile_thread(prof, "MainThread");
    sonde_stack_frame_t frames[] = {{"<module>", "a.py", 9}, {"f", "a.py", 3}};
    sonde_profile_add_stack(prof, frames, 2, thread, 3, 30 * MS);
    sonde_process_t process = {pid, 1, "python3 app.py x", scale, elapsed, 20 * scale, true};
    sonde_profile_add_process(prof, &process);
    sonde_profile_sum(prof);
}

static void test_merge_adds(void)
{
    sonde_profile_t a, b;
    merge_build(&a, 1, 1.0, 2.0, 0.0);
    merge_build(&b, 2, 2.0, 3.0, 0.25);
    int rc = sonde_profile_merge(&a, &b);
    check(rc == 0, "merge_returns_0", "rc %d", rc);

    sonde_file_stats_t *fa = sonde_profile_file(&a, "a.py");
    const sonde_line_stats_t *l3 = fa && fa->n_lines == 1 ? &fa->lines[0] : NULL;
    check(l3 && l3->python_ns == 30 * MS && l3->native_ns == 15 * MS && l3->samples == 21,
          "merge_line_time_adds", "python %llu native %llu samples %llu",
          l3 ? (unsigned long long)l3->python_ns : 0, l3 ? (unsigned long long)l3->native_ns : 0,
          l3 ? (unsigned long long)l3->samples : 0);
    const sonde_func_stats_t *f = sonde_profile_func(&a, "a.py", "f", 1);
    check(f && f->python_ns == 30 * MS && f->samples == 21 && fa->n_funcs == 1,
          "merge_function_time_adds", "python %llu", f ? (unsigned long long)f->python_ns : 0);
    check(a.total_ns == 30 * MS + 15 * MS + 9 * MS, "merge_totals_recomputed", "total %llu",
          (unsigned long long)a.total_ns);
    check(l3 && l3->mem.malloc_mb == 24 && l3->mem.mallocs == 8 && l3->mem.live_mb == 6 &&
              l3->mem.peak_mb == 12,
          "merge_memory_sums_and_peak", "malloc %g mallocs %llu live %g peak %g",
          l3 ? l3->mem.malloc_mb : 0, l3 ? (unsigned long long)l3->mem.mallocs : 0,
          l3 ? l3->mem.live_mb : 0, l3 ? l3->mem.peak_mb : 0);
    /* 8 MB all Python, 16 MB none: a third */
    check(l3 && l3->mem.python_fraction > 0.333 && l3->mem.python_fraction < 0.334,
          "merge_python_fraction_weighted", "%g", l3 ? l3->mem.python_fraction : 0);
    bool ordered = l3 && l3->mem.timeline.n == 4;
    for (size_t i = 1; ordered && i < l3->mem.timeline.n; i++)
        ordered = l3->mem.timeline.points[i - 1].t_sec <= l3->mem.timeline.points[i].t_sec;
    check(ordered && l3->mem.timeline.points[1].t_sec == 0.25, "merge_timeline_time_order", "n %zu",
          l3 ? l3->mem.timeline.n : 0);
    check(a.footprint.n == 4 && a.footprint.points[2].t_sec == 1.0 && a.max_footprint_mb == 20 &&
              strcmp(a.max_footprint_file, "b.py") == 0 && a.max_footprint_lineno == 7 &&
              a.heap_peak_mb == 8,
          "merge_footprint_peak_highest", "n %zu peak %g", a.footprint.n, a.max_footprint_mb);
    check(l3 && l3->figs.v[SONDE_FIG_GPU_UTIL] == 150 && l3->figs.v[SONDE_FIG_GPU_SEC] == 3 &&
              l3->figs.v[SONDE_FIG_GPU_PEAK] == 400 && l3->figs.v[SONDE_FIG_GPU_SAMPLES] == 2,
          "merge_gpu", "util %g peak %g", l3 ? l3->figs.v[SONDE_FIG_GPU_UTIL] : 0,
          l3 ? l3->figs.v[SONDE_FIG_GPU_PEAK] : 0);
    check(a.elapsed_sec == 3.0 && a.samples == 300, "merge_elapsed_longest_samples_add",
          "elapsed %g samples %llu", a.elapsed_sec, (unsigned long long)a.samples);
    check(a.partial.failed_reads == 2 && a.partial.frames_left_out == 3, "merge_partial_adds",
          "failed %llu", (unsigned long long)a.partial.failed_reads);
    check(a.n_stacks == 1 && a.n_threads == 1 && a.stacks[0].samples == 6 &&
              a.stacks[0].ns == 60 * MS && a.n_frames == 2,
          "merge_stacks_add", "stacks %zu threads %zu", a.n_stacks, a.n_threads);
    check(a.n_processes == 2 && a.processes[0].pid == 1 && a.processes[1].pid == 2 &&
              a.processes[1].cpu_sec == 2.0 &&
              strcmp(a.processes[1].cmdline, "python3 app.py x") == 0 &&
              a.processes[1].cmdline != b.processes[0].cmdline,
          "merge_processes_appended", "n %zu", a.n_processes);
    check(sonde_profile_merge(&a, &a) == -EINVAL && sonde_profile_merge(NULL, &b) == -EINVAL,
          "merge_rejects_self_and_null", "accepted");
    sonde_profile_free(&a);
    sonde_profile_free(&b);
}

/* A file only src has arrives whole; run information dst lacks is taken. */
static void test_merge_into_empty(void)
{
    sonde_profile_t empty, b;
    sonde_profile_init(&empty);
    merge_build(&b, 2, 1.0, 1.5, 0.0);
    sonde_profile_add(&b, "c.py", "h", 2, 4, 1 * MS, 0, 0, 1);
    sonde_profile_sum(&b);
    int rc = sonde_profile_merge(&empty, &b);
    check(rc == 0 && empty.n_files == 3 && empty.total_ns == b.total_ns && empty.program &&
              strcmp(empty.program, "app.py") == 0 && empty.argc == 2 && empty.n_processes == 1 &&
              empty.has_memory && empty.fig_runs[SONDE_FIGSRC_GPU].present,
          "merge_into_empty_copies", "rc %d files %zu", rc, empty.n_files);
    sonde_file_stats_t *c = sonde_profile_file(&empty, "c.py");
    check(c && c->n_lines == 1 && c->n_funcs == 1 && c->lines[0].lineno == 4 &&
              c->funcs[0].firstlineno == 2,
          "merge_new_file_lines_and_functions", "c.py wrong");
    /* each line keeps its function (pprof's locations name it) */
    check(c && c->lines[0].func_name && strcmp(c->lines[0].func_name, "h") == 0 &&
              c->lines[0].func_firstlineno == 2 && c->lines[0].func_name == c->funcs[0].name,
          "merge_line_keeps_its_function", "%s",
          c && c->lines[0].func_name ? c->lines[0].func_name : "NULL");
    sonde_profile_free(&empty);
    sonde_profile_free(&b);
}

/* Two processes' MainThreads stay two threads (their pid and tid); a
 * stack's split by kind is kept; the same thread of one process adds. */
static void test_merge_threads_and_kinds(void)
{
    sonde_profile_t a, b, c;
    sonde_profile_init(&a);
    sonde_profile_init(&b);
    sonde_profile_init(&c);
    sonde_stack_frame_t frames[] = {{"<module>", "a.py", 9}, {"f", "a.py", 3}};
    sonde_ns_t kinds[SONDE_N_KINDS] = {10 * MS, 20 * MS, 0};
    int ta = sonde_profile_thread_of(&b, "MainThread", 100, 100);
    sonde_profile_add_stack_kinds(&b, frames, 2, ta, 3, kinds);
    int tc = sonde_profile_thread_of(&c, "MainThread", 200, 200);
    sonde_profile_add_stack_kinds(&c, frames, 2, tc, 3, kinds);
    int rc = sonde_profile_merge(&a, &b);
    if (rc == 0) rc = sonde_profile_merge(&a, &c);
    if (rc == 0) rc = sonde_profile_merge(&a, &b);
    check(rc == 0 && a.n_threads == 2 && a.n_stacks == 2 && a.thread_ids[0].pid == 100 &&
              a.thread_ids[1].pid == 200 && a.stacks[0].samples == 6 &&
              a.stacks[0].kind_ns[SONDE_KIND_NATIVE] == 40 * MS &&
              a.stacks[1].kind_ns[SONDE_KIND_PYTHON] == 10 * MS && a.stacks[1].ns == 30 * MS,
          "merge_threads_by_ids_and_kinds", "rc %d threads %zu stacks %zu", rc, a.n_threads,
          a.n_stacks);
    sonde_profile_free(&a);
    sonde_profile_free(&b);
    sonde_profile_free(&c);
}

int main(void)
{
    test_merge_threads_and_kinds();
    test_merge_adds();
    test_merge_into_empty();
    return check_exit_code();
}
