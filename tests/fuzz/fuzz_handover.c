/* fuzz_handover.c — libFuzzer target: reading a hand-over file back
 * (sonde_handover_decode, src/handover/) and merging it
 * (sonde_profile_merge), as `sonde _children` and `sonde _periods` do with
 * the files the profiled processes wrote.
 *
 * Input: the file. Checked: a file is refused with -EINVAL (no magic),
 * -EPROTO or -ENOMEM and a reason, leaving the profile empty; a file taken
 * is the one encoding of what it holds (encoded again, the same bytes: the
 * reader takes the shortest forms only), and merges into an empty profile
 * twice without error, doubling its processes and its lines' time.
 *
 * Seeds: SONDE_FUZZ_WRITE_SEEDS=DIR build/fuzz/bin/fuzz_handover writes an
 * empty profile, a process's profile at its end (lines, functions, memory
 * and the sources' figures, timelines, sources, stacks, threads) and a period's
 * piece into DIR (`make fuzz-seeds`).
 */
#include "handover/handover.h"

#include "fuzz.h"

static void seed_write(const char *dir, const char *name, const sonde_profile_t *prof)
{
    sonde_buf_t bytes = SONDE_BUF_INIT;
    char path[4096];
    if (sonde_handover_encode(prof, &bytes) != 0) abort();
    snprintf(path, sizeof path, "%s/gen-%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(bytes.data, 1, bytes.len, f) != bytes.len || fclose(f) != 0) {
        perror(path);
        abort();
    }
    sonde_buf_free(&bytes);
}

static void write_seeds(const char *dir)
{
    sonde_profile_t prof;
    sonde_profile_init(&prof);
    seed_write(dir, "empty", &prof);

    const char *argv[] = {"app.py", "-x"};
    sonde_profile_set_run(&prof, "app.py", 2, argv, "3.11.7");
    prof.elapsed_sec = 1.5;
    prof.interval_sec = 0.01;
    prof.samples = 150;
    prof.partial.processes_lost = 1;
    sonde_profile_add(&prof, "a.py", "f", 1, 2, 10000000, 2000000, 0, 12);
    sonde_profile_add(&prof, "a.py", "g", 5, 6, 0, 0, 3000000, 3);
    sonde_profile_add(&prof, "b.py", NULL, 0, 1, 1000000, 0, 0, 1);
    sonde_profile_sum(&prof);
    sonde_process_t process = {.pid = 42,
                               .ppid = 1,
                               .cmdline = "python3 app.py -x",
                               .cpu_sec = 0.2,
                               .wall_sec = 1.5,
                               .complete = true};
    sonde_profile_add_process(&prof, &process);
    seed_write(dir, "period", &prof);

    sonde_profile_set_exit(&prof, 1, "ValueError");
    sonde_profile_set_source(&prof, "a.py", "def f():\n    pass\n", 18);
    prof.has_memory = true;
    prof.max_footprint_mb = 12.5;
    prof.max_footprint_file = strdup("a.py");
    prof.max_footprint_lineno = 2;
    sonde_timeline_add(&prof.footprint, 0.5, 10);
    sonde_line_stats_t *line = sonde_profile_line(&prof, "a.py", "f", 1, 2);
    line->mem.malloc_mb = 4;
    line->mem.mallocs = 3;
    sonde_timeline_add(&line->mem.timeline, 0.25, 4);
    sonde_figs_t figs = {{0}};
    for (unsigned i = 0; i < SONDE_N_FIGS; i++)
        figs.v[i] = 1.5 * (i + 1);
    sonde_profile_add_figs(&prof, "a.py", "f", 1, 2, &figs);
    sonde_fig_run_set(&prof.fig_runs[0], "NVIDIA H200", true);
    prof.fig_runs[0].present = true;
    int thread = sonde_profile_thread_of(&prof, "MainThread", 42, 42);
    sonde_stack_frame_t frames[] = {{"<module>", "a.py", 9}, {"f", "a.py", 2}};
    sonde_ns_t kinds[SONDE_N_KINDS] = {5000000, 1000000, 0};
    sonde_profile_add_stack_kinds(&prof, frames, 2, thread, 6, kinds);
    sonde_profile_add_stack(&prof, frames, 1, -1, 1, 1000000);
    prof.pid = 42;
    seed_write(dir, "end", &prof);
    sonde_profile_free(&prof);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *dir = getenv("SONDE_FUZZ_WRITE_SEEDS");
    if (dir && *dir) {
        write_seeds(dir);
        exit(0);
    }
    return 0;
}

/* The lines' time of a profile (what a merge sums up again). */
static sonde_ns_t lines_ns(const sonde_profile_t *prof)
{
    sonde_ns_t total = 0;
    for (size_t i = 0; i < prof->n_files; i++)
        for (size_t j = 0; j < prof->files[i].n_lines; j++) {
            const sonde_line_stats_t *l = &prof->files[i].lines[j];
            total += l->python_ns + l->native_ns + l->system_ns;
        }
    return total;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* exactly size bytes: a read past the end is caught */
    uint8_t *copy = malloc(size ? size : 1);
    if (copy == NULL) abort();
    memcpy(copy, data, size);
    sonde_profile_t prof, merged;
    sonde_profile_init(&prof);
    sonde_profile_init(&merged);
    sonde_buf_t again = SONDE_BUF_INIT;
    const char *why = NULL;

    int rc = sonde_handover_decode(&prof, copy, size, &why);
    if (rc < 0) {
        fuzz_assert(rc == -EINVAL || rc == -EPROTO || rc == -ENOMEM, "rc %d", rc);
        fuzz_assert(why && why[0], "a refusal without a reason");
        fuzz_assert(!prof.program && !prof.argv && !prof.files && !prof.frames && !prof.stacks &&
                        !prof.thread_names && !prof.processes && !prof.footprint.points,
                    "a refused file left a profile");
    } else {
        rc = sonde_handover_encode(&prof, &again);
        fuzz_assert(rc == 0 || rc == -ENOMEM, "cannot encode what was read: %d", rc);
        fuzz_assert(rc != 0 || (again.len == size && memcmp(again.data, copy, size) == 0),
                    "encoded again, %zu bytes differ from the %zu read", again.len, size);
        if (sonde_profile_merge(&merged, &prof) == 0 && sonde_profile_merge(&merged, &prof) == 0)
            fuzz_assert(merged.total_ns == 2 * lines_ns(&prof) &&
                            merged.n_processes == 2 * prof.n_processes,
                        "merging a profile twice does not double it");
    }
    sonde_buf_free(&again);
    sonde_profile_free(&merged);
    sonde_profile_free(&prof);
    free(copy);
    return 0;
}
