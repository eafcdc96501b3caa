/* test_json_load.c — unit tests of the JSON reader (sonde_profile_load_json,
 * src/report/json_load.c).
 *
 * A profile built with figures that the JSON carries exactly (times in
 * whole milliseconds of a 1 s run, MB in quarters) is written, read back
 * and written again: the two documents are the same bytes. Every field the
 * writer writes is covered: run, exit, partial, processes, memory with
 * timelines and leaks, GPU, garbage collection, lines, functions, source, call stacks with
 * threads. Bad documents are refused with -EINVAL, a one-line reason and
 * an empty profile.
 */
#include "report/report.h"

#include "check.h"

#include <stdint.h>

#define MS 1000000ull

/* A profile whose every figure survives the JSON's rounding. */
static void build(sonde_profile_t *prof)
{
    sonde_profile_init(prof);
    const char *argv[] = {"app.py", "--size", "3", "caf\xc3\xa9 <&>"};
    sonde_profile_set_run(prof, "app.py", 4, argv, "3.11.7");
    sonde_profile_set_exit(prof, 3, "ValueError");
    prof->elapsed_sec = 2.0;
    prof->interval_sec = 0.01;
    prof->samples = 123;
    prof->unattributed_ns = 250 * MS; /* 20 % of 1.25 s */
    prof->partial.failed_reads = 1;
    prof->partial.dropped_samples = 2;
    prof->partial.threads_left_out = 3;
    prof->partial.frames_left_out = 4;
    prof->partial.processes_lost = 5;
    sonde_profile_add(prof, "/src/app.py", "main", 1, 2, 500 * MS, 125 * MS, 0, 60);
    sonde_profile_add(prof, "/src/app.py", "Model.run", 10, 12, 0, 250 * MS, 0, 20);
    sonde_profile_add(prof, "/src/lib.py", NULL, 0, 5, 0, 0, 125 * MS, 12);
    prof->has_memory = true;
    prof->max_footprint_mb = 40.5;
    prof->max_footprint_file = strdup("/src/app.py");
    prof->max_footprint_lineno = 12;
    prof->heap_peak_mb = 32.25;
    sonde_timeline_add(&prof->footprint, 0, 8);
    sonde_timeline_add(&prof->footprint, 1.5, 40.5);
    sonde_line_stats_t *line = sonde_profile_line(prof, "/src/app.py", "Model.run", 10, 12);
    line->mem.malloc_mb = 64;
    line->mem.mallocs = 16;
    line->mem.alloc_objects = 17;
    line->mem.python_fraction = 0.25;
    line->mem.avg_mb = 20.5;
    line->mem.peak_mb = 32.25;
    line->mem.live_mb = 30;
    line->mem.live_objects = 15;
    line->mem.live_at_peak_mb = 32.25;
    line->mem.copy_mb = 10; /* 5 MB/s over 2 s */
    line->mem.leak_likelihood = 0.96875;
    line->mem.leak_velocity_mb_s = 15;
    sonde_timeline_add(&line->mem.timeline, 0.5, 16);
    sonde_timeline_add(&line->mem.timeline, 1.0, 30);
    sonde_func_stats_t *func = sonde_profile_func(prof, "/src/app.py", "Model.run", 10);
    func->mem = line->mem;
    memset(&func->mem.timeline, 0, sizeof func->mem.timeline);
    func->mem.leak_likelihood = func->mem.leak_velocity_mb_s = 0;
    sonde_fig_run_set(&prof->fig_runs[SONDE_FIGSRC_GPU], "NVIDIA H100", true);
    sonde_figs_t gpu = {{[SONDE_FIG_GPU_UTIL] = 0.125,
                         [SONDE_FIG_GPU_SAMPLES] = 20,
                         [SONDE_FIG_GPU_MEM] = 25,
                         [SONDE_FIG_GPU_PEAK] = 512,
                         [SONDE_FIG_GPU_SEC] = 0.25}}; /* 50 %, 100 MB over the line's 0.25 s */
    sonde_profile_add_figs(prof, "/src/app.py", "Model.run", 10, 12, &gpu);
    /* garbage collection: every line's time charged, a quarter of
     * Model.run's line spent collecting (the source writes no device or
     * per-process field) */
    sonde_fig_run_set(&prof->fig_runs[SONDE_FIGSRC_GC], NULL, true);
    sonde_figs_t gc_main = {{[SONDE_FIG_GC_SEC] = 0.625}};
    sonde_figs_t gc_run = {{[SONDE_FIG_GC_SEC] = 0.25, [SONDE_FIG_GC_COLLECTING] = 0.0625}};
    sonde_figs_t gc_lib = {{[SONDE_FIG_GC_SEC] = 0.125}};
    sonde_profile_add_figs(prof, "/src/app.py", "main", 1, 2, &gc_main);
    sonde_profile_add_figs(prof, "/src/app.py", "Model.run", 10, 12, &gc_run);
    sonde_profile_add_figs(prof, "/src/lib.py", NULL, 0, 5, &gc_lib);
    int main_thread = sonde_profile_thread(prof, "MainThread");
    int worker = sonde_profile_thread(prof, "worker-1");
    sonde_stack_frame_t frames[] = {{"<module>", "/src/app.py", 20},
                                    {"main", "/src/app.py", 2},
                                    {"Model.run", "/src/app.py", 12}};
    sonde_profile_add_stack(prof, frames, 2, main_thread, 60, 625 * MS);
    sonde_profile_thread_ids(prof, main_thread, 4242, 4242);
    sonde_profile_thread_ids(prof, worker, 4242, 4250);
    sonde_ns_t kinds[SONDE_N_KINDS] = {150 * MS, 75 * MS, 25 * MS};
    sonde_profile_add_stack_kinds(prof, frames, 3, worker, 20, kinds);
    sonde_profile_add_stack(prof, frames + 1, 1, -1, 1, 0);
    sonde_process_t procs[] = {{4242, 4240, "python3 app.py", 1.5, 2.0, 21.5, true},
                               {4243, 4242, "python3 -c \"x\"", 0.25, 0.5, 12, false}};
    sonde_profile_add_process(prof, &procs[0]);
    sonde_profile_add_process(prof, &procs[1]);
    sonde_profile_finish(prof);
    const char source[] = "import sys\n    main()\n";
    sonde_profile_set_source(prof, "/src/app.py", source, sizeof source - 1);
}

static void test_round_trip(void)
{
    sonde_profile_t prof, back;
    sonde_buf_t first = SONDE_BUF_INIT, second = SONDE_BUF_INIT;
    char err[256] = "";
    build(&prof);
    sonde_profile_init(&back);
    int rc = sonde_report_json(&prof, &first);
    check(rc == 0, "json_write", "rc %d", rc);
    rc = sonde_profile_load_json(&back, first.data, first.len, err, sizeof err);
    check(rc == 0, "json_load_returns_0", "rc %d: %s", rc, err);
    rc = sonde_report_json(&back, &second);
    bool same =
        rc == 0 && first.len == second.len && memcmp(first.data, second.data, first.len) == 0;
    if (!same) {
        size_t at = 0;
        while (at < first.len && at < second.len && first.data[at] == second.data[at])
            at++;
        check(false, "json_round_trip_same_bytes", "differ at byte %zu: ...%.80s... / ...%.80s...",
              at, first.data + (at > 40 ? at - 40 : 0), second.data + (at > 40 ? at - 40 : 0));
    } else {
        check(true, "json_round_trip_same_bytes", "%zu bytes", first.len);
    }
    check(back.n_processes == 2 && back.processes[1].ppid == 4242 && !back.processes[1].complete &&
              back.exit_known && back.exit_status == 3 &&
              strcmp(back.exit_exception, "ValueError") == 0 && back.n_threads == 2 &&
              back.n_stacks == 3 && back.partial.processes_lost == 5,
          "json_load_fields", "processes %zu threads %zu", back.n_processes, back.n_threads);
    check(back.n_threads == 2 && back.thread_ids[1].pid == 4242 && back.thread_ids[1].tid == 4250 &&
              back.n_stacks == 3 && back.stacks[1].kind_ns[SONDE_KIND_NATIVE] == 75 * MS &&
              back.stacks[1].ns == 250 * MS && back.stacks[0].kind_ns[0] == 0,
          "json_load_thread_ids_and_kinds", "threads %zu", back.n_threads);
    sonde_file_stats_t *app = sonde_profile_file(&back, "/src/app.py");
    check(app && app->n_source == 2 && strcmp(app->source[1], "    main()") == 0,
          "json_load_source_from_file", "source %zu", app ? app->n_source : 0);
    sonde_buf_free(&first);
    sonde_buf_free(&second);
    sonde_profile_free(&back);
    sonde_profile_free(&prof);
}

/* Each document is refused: -EINVAL, one line of reason, an empty profile. */
static void test_refused(void)
{
    static const struct {
        const char *name, *text;
    } bad[] = {
        {"not_json", "{\"files\": "},
        {"not_object", "[1, 2]"},
        {"no_files", "{\"program\": \"x\"}"},
        {"files_list", "{\"files\": []}"},
        {"huge_count", "{\"n_samples\": 1e300, \"files\": {}}"},
        {"overflow", "{\"elapsed_time_sec\": 1e400, \"files\": {}}"},
        {"negative_count", "{\"n_samples\": -1, \"files\": {}}"},
        {"fraction_count", "{\"n_samples\": 1.5, \"files\": {}}"},
        {"string_number", "{\"elapsed_time_sec\": \"1\", \"files\": {}}"},
        {"lineno_text", "{\"files\": {\"a.py\": {\"lines\": [{\"lineno\": \"3\"}]}}}"},
        {"lineno_huge", "{\"files\": {\"a.py\": {\"lines\": [{\"lineno\": 1e12}]}}}"},
        {"share_over_100", "{\"profiled_time_sec\": 1, \"files\": {\"a.py\": {\"lines\": "
                           "[{\"lineno\": 3, \"n_cpu_percent_python\": 150}]}}}"},
        {"args_numbers", "{\"args\": [1], \"files\": {}}"},
        {"bool_text", "{\"virtual_time\": \"yes\", \"files\": {}}"},
        {"process_pid", "{\"processes\": [{\"pid\": -4}], \"files\": {}}"},
        {"stack_index", "{\"files\": {}, \"call_stacks\": {\"frames\": [], \"threads\": [], "
                        "\"samples\": [{\"frames\": [0], \"count\": 1}]}}"},
        {"stack_thread", "{\"files\": {}, \"call_stacks\": {\"frames\": [{\"name\": \"f\", "
                         "\"file\": \"a.py\", \"line\": 1}], \"threads\": [], \"samples\": "
                         "[{\"frames\": [0], \"thread\": 2, \"count\": 1}]}}"},
        {"timeline_shape", "{\"memory\": true, \"samples\": [[1]], \"files\": {}}"},
        {"not_utf8", "{\"program\": \"\xff\", \"files\": {}}"},
        {"nul", "{\"files\": {}}\0"},
    };
    for (size_t i = 0; i < SONDE_ARRAY_LEN(bad); i++) {
        sonde_profile_t prof;
        char err[256] = "";
        sonde_profile_init(&prof);
        size_t len = strlen(bad[i].text) + (strcmp(bad[i].name, "nul") == 0);
        int rc = sonde_profile_load_json(&prof, bad[i].text, len, err, sizeof err);
        char name[64];
        snprintf(name, sizeof name, "json_load_refuses_%s", bad[i].name);
        check(rc == -EINVAL && err[0] && !strchr(err, '\n') && prof.n_files == 0 &&
                  prof.n_processes == 0 && !prof.program,
              name, "rc %d err '%s'", rc, err);
    }
    sonde_profile_t prof;
    char err[64] = "";
    sonde_profile_init(&prof);
    int rc = sonde_profile_load_json(&prof, "{\"files\": {}}", 13, err, sizeof err);
    check(rc == 0 && prof.n_files == 0, "json_load_empty_profile", "rc %d %s", rc, err);
    sonde_profile_free(&prof);
}

int main(void)
{
    test_round_trip();
    test_refused();
    return check_exit_code();
}
