/* test_model.c — unit tests of the profile model (src/model/).
 *
 * Builds profiles from known inputs and checks what sonde_profile_add,
 * sonde_profile_finish and the source loader promise: accumulation,
 * ordering, totals, lookups, "<module>", and source text read from small
 * real files written into a temporary directory.
 */
#include "model/model.h"

#define CHECK_WITH_FAILING_MALLOC
#include "check.h"

#include <stdint.h>
#include <sys/types.h>

#define MS 1000000ull

static bool model_lines_sorted(const sonde_file_stats_t *file)
{
    for (size_t i = 1; i < file->n_lines; i++)
        if (file->lines[i - 1].lineno >= file->lines[i].lineno) return false;
    return true;
}

static void test_empty(void)
{
    sonde_profile_t prof;
    sonde_profile_init(&prof);
    check(prof.n_files == 0 && prof.total_ns == 0 && !prof.files, "model_init_empty", "n_files %zu",
          prof.n_files);
    check(sonde_profile_finish(&prof) == 0 && prof.total_ns == 0, "model_finish_empty",
          "total %llu", (unsigned long long)prof.total_ns);
    check(sonde_profile_file(&prof, "x.py") == NULL && sonde_profile_file(&prof, NULL) == NULL,
          "model_lookup_empty", "found something");
    sonde_profile_free(&prof);
    sonde_profile_free(&prof); /* freeing twice is harmless */
    check(prof.n_files == 0 && !prof.files, "model_free_twice", "not empty");
}

static void test_accumulate_and_order(void)
{
    sonde_profile_t prof;
    sonde_profile_init(&prof);
    int rc = 0;
    rc |= sonde_profile_add(&prof, "b.py", "g", 10, 12, 1 * MS, 2 * MS, 3 * MS, 1);
    rc |= sonde_profile_add(&prof, "a.py", "f", 1, 5, 10 * MS, 0, 0, 2);
    rc |= sonde_profile_add(&prof, "b.py", "g", 10, 11, 4 * MS, 0, 0, 1);
    rc |= sonde_profile_add(&prof, "b.py", "g", 10, 12, 1 * MS, 1 * MS, 1 * MS, 3);
    rc |= sonde_profile_add(&prof, "b.py", NULL, 0, 1, 7 * MS, 0, 0, 1);
    rc |= sonde_profile_add(&prof, "b.py", "<lambda>", 11, 11, 0, 5 * MS, 0, 1);
    rc |= sonde_profile_add(&prof, "b.py", "<genexpr>", 11, 11, 0, 0, 2 * MS, 1);
    rc |= sonde_profile_add(&prof, "c.py", "h", 3, 3, 0, 0, 0, 0);
    check(rc == 0, "model_add_returns_0", "rc %d", rc);
    rc = sonde_profile_finish(&prof);
    check(rc == 0, "model_finish_returns_0", "rc %d", rc);

    check(prof.n_files == 3 && strcmp(prof.files[0].path, "a.py") == 0 &&
              strcmp(prof.files[1].path, "b.py") == 0 && strcmp(prof.files[2].path, "c.py") == 0,
          "model_files_sorted_by_path", "n_files %zu", prof.n_files);

    sonde_file_stats_t *b = sonde_profile_file(&prof, "b.py");
    check(b == &prof.files[1], "model_lookup_finds_file", "got %p", (void *)b);
    check(sonde_profile_file(&prof, "zz.py") == NULL, "model_lookup_absent", "found zz.py");

    check(b && b->n_lines == 3 && model_lines_sorted(b) && b->lines[0].lineno == 1 &&
              b->lines[1].lineno == 11 && b->lines[2].lineno == 12,
          "model_lines_sorted_and_unique", "n_lines %zu", b ? b->n_lines : 0);
    const sonde_line_stats_t *l12 = b ? &b->lines[2] : NULL;
    check(l12 && l12->python_ns == 2 * MS && l12->native_ns == 3 * MS && l12->system_ns == 4 * MS &&
              l12->samples == 4,
          "model_same_line_accumulates", "python %llu native %llu system %llu samples %llu",
          l12 ? (unsigned long long)l12->python_ns : 0,
          l12 ? (unsigned long long)l12->native_ns : 0,
          l12 ? (unsigned long long)l12->system_ns : 0, l12 ? (unsigned long long)l12->samples : 0);
    const sonde_line_stats_t *l11 = b ? &b->lines[1] : NULL;
    check(l11 && l11->python_ns == 4 * MS && l11->native_ns == 5 * MS && l11->system_ns == 2 * MS,
          "model_line_shared_by_functions", "line 11 wrong");

    /* Functions: (0,<module>), (10,g), (11,<genexpr>), (11,<lambda>). */
    bool funcs_ok = b && b->n_funcs == 4 && strcmp(b->funcs[0].name, "<module>") == 0 &&
                    b->funcs[0].firstlineno == 0 && strcmp(b->funcs[1].name, "g") == 0 &&
                    strcmp(b->funcs[2].name, "<genexpr>") == 0 &&
                    strcmp(b->funcs[3].name, "<lambda>") == 0;
    check(funcs_ok, "model_funcs_sorted_by_line_then_name", "n_funcs %zu", b ? b->n_funcs : 0);
    check(funcs_ok && b->funcs[0].python_ns == 7 * MS, "model_null_func_is_module",
          "module python %llu", funcs_ok ? (unsigned long long)b->funcs[0].python_ns : 0);
    check(funcs_ok && b->funcs[1].python_ns == 6 * MS && b->funcs[1].native_ns == 3 * MS &&
              b->funcs[1].system_ns == 4 * MS && b->funcs[1].samples == 5,
          "model_func_sums_its_lines", "g wrong");

    sonde_ns_t b_total = 7 * MS + 11 * MS + 9 * MS;
    check(b && b->total_ns == b_total, "model_file_total", "b total %llu want %llu",
          b ? (unsigned long long)b->total_ns : 0, (unsigned long long)b_total);
    check(prof.total_ns == b_total + 10 * MS, "model_profile_total", "total %llu",
          (unsigned long long)prof.total_ns);

    /* Adding after finish, then finishing again, keeps everything right. */
    prof.unattributed_ns = 99 * MS;
    rc = sonde_profile_add(&prof, "a.py", "f", 1, 4, 1 * MS, 0, 0, 1);
    rc |= sonde_profile_finish(&prof);
    check(rc == 0 && prof.total_ns == b_total + 11 * MS && prof.files[0].n_lines == 2 &&
              prof.files[0].lines[0].lineno == 4,
          "model_finish_twice", "total %llu", (unsigned long long)prof.total_ns);
    check(prof.total_ns == b_total + 11 * MS, "model_unattributed_not_in_total", "total %llu",
          (unsigned long long)prof.total_ns);

    sonde_profile_t before = prof;
    rc = sonde_profile_add(&prof, NULL, "f", 1, 1, 1, 1, 1, 1);
    check(rc == -EINVAL && prof.n_files == before.n_files, "model_add_null_path_einval", "rc %d",
          rc);
    sonde_profile_free(&prof);
}

static uint32_t model_rand(uint32_t *state)
{
    *state = *state * 1103515245u + 12345u;
    return *state >> 8;
}

static void test_many_lines(void)
{
    enum { N_LINES = 5000, N_ADDS = 20000 };
    static uint64_t expect_ns[N_LINES + 1];
    sonde_profile_t prof;
    sonde_profile_init(&prof);
    uint32_t seed = 12345;
    int rc = 0;
    uint64_t sum = 0;
    for (int i = 0; i < N_ADDS; i++) {
        int line = 1 + (int)(model_rand(&seed) % N_LINES);
        int file = (int)(model_rand(&seed) % 3);
        if (file != 0) line = 1; /* other files get one line */
        char path[32];
        snprintf(path, sizeof path, "/nonexistent/f%d.py", file);
        sonde_ns_t ns = 1 + model_rand(&seed) % 1000;
        rc |= sonde_profile_add(&prof, path, "f", 1, line, ns, 0, 0, 1);
        if (file == 0) expect_ns[line] += ns;
        sum += ns;
    }
    rc |= sonde_profile_finish(&prof);
    sonde_file_stats_t *f0 = sonde_profile_file(&prof, "/nonexistent/f0.py");
    bool ok = rc == 0 && f0 && model_lines_sorted(f0);
    for (size_t i = 0; ok && i < f0->n_lines; i++)
        ok = f0->lines[i].python_ns == expect_ns[f0->lines[i].lineno];
    check(ok, "model_many_random_adds_sorted_and_summed", "rc %d", rc);
    check(prof.total_ns == sum, "model_many_total", "total %llu want %llu",
          (unsigned long long)prof.total_ns, (unsigned long long)sum);
    check(f0 && f0->source == NULL, "model_missing_file_source_null", "source loaded");
    sonde_profile_free(&prof);
}

/* Loads the source of the file holding text and returns the profile. */
static sonde_file_stats_t *model_load(sonde_profile_t *prof, const char *path)
{
    sonde_profile_init(prof);
    if (sonde_profile_add(prof, path, "f", 1, 1, 1, 0, 0, 1) || sonde_profile_finish(prof))
        return NULL;
    return sonde_profile_file(prof, path);
}

static bool model_source_is(const sonde_file_stats_t *file, const char *const *want, size_t n)
{
    if (!file || !file->source || file->n_source != n) return false;
    for (size_t i = 0; i < n; i++)
        if (strcmp(file->source[i], want[i]) != 0) return false;
    return true;
}

static void test_source(const char *dir)
{
    sonde_profile_t prof;
    char *path = check_path(dir, "mixed.py");

    static const char mixed[] = "\xef\xbb\xbf"
                                "a = 1\n\tb = 2\r\nc\rd = 'caf\xc3\xa9 \xff'";
    check_write_file(path, mixed, sizeof mixed - 1);
    const char *want_mixed[] = {"a = 1", "\tb = 2", "c", "d = 'caf\xc3\xa9 \xff'"};
    sonde_file_stats_t *file = model_load(&prof, path);
    check(model_source_is(file, want_mixed, 4), "model_source_line_endings_bom_tabs_last_line",
          "n_source %zu", file ? file->n_source : 0);
    sonde_profile_free(&prof);

    check_write_file(path, "x\n\ny\n", 5);
    const char *want_trailing[] = {"x", "", "y"};
    file = model_load(&prof, path);
    check(model_source_is(file, want_trailing, 3), "model_source_final_newline_no_extra_line",
          "n_source %zu", file ? file->n_source : 0);
    sonde_profile_free(&prof);

    check_write_file(path, "", 0);
    file = model_load(&prof, path);
    check(file && file->source && file->n_source == 0, "model_source_empty_file", "source %p n %zu",
          file ? (void *)file->source : NULL, file ? file->n_source : 0);
    sonde_profile_free(&prof);

    check_write_file(path, "one\r\n\r\ntwo\r\n", 12);
    const char *want_crlf[] = {"one", "", "two"};
    file = model_load(&prof, path);
    check(model_source_is(file, want_crlf, 3), "model_source_crlf_blank_lines", "n_source %zu",
          file ? file->n_source : 0);
    sonde_profile_free(&prof);

    file = model_load(&prof, dir);
    check(file && file->source == NULL, "model_source_directory_is_null", "loaded a directory");
    sonde_profile_free(&prof);

    file = model_load(&prof, "<frozen importlib._bootstrap>");
    check(file && file->source == NULL, "model_source_pseudo_path_is_null", "loaded something");
    sonde_profile_free(&prof);

    /* an IPython cell's text, from memory; a file read from disk keeps its own */
    const char *want_cell[] = {"x = 1", "", "while x: pass"};
    file = model_load(&prof, "<ipython-input-1-ab>");
    int set_rc =
        sonde_profile_set_source(&prof, "<ipython-input-1-ab>", "x = 1\n\nwhile x: pass\n", 21);
    check(set_rc == 0 && model_source_is(file, want_cell, 3), "model_source_from_memory",
          "rc %d n_source %zu", set_rc, file ? file->n_source : 0);
    check(sonde_profile_set_source(&prof, "<absent>", "y", 1) == 0 &&
              !sonde_profile_file(&prof, "<absent>"),
          "model_source_from_memory_absent_file", "a file was added");
    sonde_profile_free(&prof);
    check_write_file(path, "disk\n", 5);
    file = model_load(&prof, path);
    const char *want_disk[] = {"disk"};
    check(sonde_profile_set_source(&prof, path, "memory\n", 7) == 0 &&
              model_source_is(file, want_disk, 1),
          "model_source_disk_kept", "replaced");
    sonde_profile_free(&prof);

    /* A FIFO must not block the report. */
    char *fifo = check_path(dir, "fifo.py");
    if (mkfifo(fifo, 0600) == 0) {
        file = model_load(&prof, fifo);
        check(file && file->source == NULL, "model_source_fifo_is_null_without_blocking",
              "loaded a fifo");
        sonde_profile_free(&prof);
    } else {
        check(false, "model_source_fifo_is_null_without_blocking", "mkfifo: %s", strerror(errno));
    }
    free(fifo);

    /* A file over the cap keeps whole lines only. */
    size_t big_len = (size_t)17 << 20;
    char *big = malloc(big_len);
    if (big) {
        for (size_t i = 0; i < big_len; i++)
            big[i] = (i % 100 == 99) ? '\n' : 'x';
        check_write_file(path, big, big_len);
        free(big);
        file = model_load(&prof, path);
        bool ok = file && file->source && file->n_source == ((size_t)16 << 20) / 100;
        for (size_t i = 0; ok && i < file->n_source; i++)
            ok = strlen(file->source[i]) == 99;
        check(ok, "model_source_cap_keeps_whole_lines", "n_source %zu", file ? file->n_source : 0);
        sonde_profile_free(&prof);
    }
    unlink(path);
    free(path);
}

static void test_set_run(void)
{
    sonde_profile_t prof;
    sonde_profile_init(&prof);
    char arg0[] = "--n";
    const char *argv[] = {arg0, NULL, "x"};
    int rc = sonde_profile_set_run(&prof, "app.py", 3, argv, "3.11.7");
    arg0[0] = 'X'; /* the profile holds copies */
    check(rc == 0 && strcmp(prof.program, "app.py") == 0 && prof.argc == 3 &&
              strcmp(prof.argv[0], "--n") == 0 && strcmp(prof.argv[1], "") == 0 &&
              strcmp(prof.python_version, "3.11.7") == 0,
          "model_set_run_copies", "rc %d", rc);
    rc = sonde_profile_set_run(&prof, "m", 0, NULL, NULL);
    check(rc == 0 && strcmp(prof.program, "m") == 0 && prof.argc == 0 && !prof.python_version,
          "model_set_run_replaces", "rc %d", rc);
    rc = sonde_profile_set_run(&prof, "z", 2, NULL, NULL);
    check(rc == -EINVAL && strcmp(prof.program, "m") == 0, "model_set_run_einval", "rc %d", rc);
    sonde_profile_free(&prof);
    check(!prof.program && !prof.argv && prof.argc == 0, "model_free_clears_run", "not cleared");
}

#if CHECK_CAN_FAIL_MALLOC
/* Writes a description of everything the profile holds into dump (static
 * storage: no allocation while malloc is failing). */
static void model_dump(const sonde_profile_t *prof, char *dump, size_t size)
{
    size_t at = 0;
#define DUMP(...)                                                                                  \
    do {                                                                                           \
        if (at < size) at += (size_t)snprintf(dump + at, size - at, __VA_ARGS__);                  \
    } while (0)
    DUMP("files %zu|", prof->n_files);
    for (size_t i = 0; i < prof->n_files; i++) {
        const sonde_file_stats_t *f = &prof->files[i];
        DUMP("%s:", f->path);
        for (size_t j = 0; j < f->n_lines; j++)
            DUMP("%d=%llu/%llu/%llu/%llu,", f->lines[j].lineno,
                 (unsigned long long)f->lines[j].python_ns,
                 (unsigned long long)f->lines[j].native_ns,
                 (unsigned long long)f->lines[j].system_ns,
                 (unsigned long long)f->lines[j].samples);
        for (size_t j = 0; j < f->n_funcs; j++)
            DUMP("%s@%d=%llu/%llu,", f->funcs[j].name, f->funcs[j].firstlineno,
                 (unsigned long long)f->funcs[j].python_ns,
                 (unsigned long long)f->funcs[j].samples);
        DUMP("|");
    }
#undef DUMP
}

static void model_base(sonde_profile_t *prof)
{
    sonde_profile_init(prof);
    for (int i = 0; i < 20; i++) {
        char path[32];
        snprintf(path, sizeof path, "/nonexistent/m%02d.py", i);
        /* Fill capacities exactly so that adds must grow arrays. */
        for (int line = 1; line <= 8; line++)
            if (sonde_profile_add(prof, path, line % 2 ? "odd" : "even", line % 2, line,
                                  (sonde_ns_t)line, 0, 0, 1))
                exit(2);
    }
}

typedef struct model_add_case {
    const char *name, *path, *func;
    int firstlineno, lineno;
    long allocations; /* the add's allocations, each made to fail once */
} model_add_case_t;

static void test_add_enomem(void)
{
    static const model_add_case_t cases[] = {
        {"new_file", "/nonexistent/new.py", "f", 1, 1, 4},
        {"new_line_new_func", "/nonexistent/m03.py", "g", 50, 50, 2},
        {"new_line_old_func", "/nonexistent/m03.py", "odd", 1, 51, 1},
        {"old_line_new_func", "/nonexistent/m03.py", "h", 7, 3, 1},
        {"old_line_old_func", "/nonexistent/m03.py", "odd", 1, 3, 0},
    };
    static char before[1 << 16], after[1 << 16];
    for (size_t c = 0; c < SONDE_ARRAY_LEN(cases); c++) {
        const model_add_case_t *k = &cases[c];
        bool unchanged = true, succeeded = false;
        long failures = 0;
        for (long n = 0; n < 64 && !succeeded; n++) {
            sonde_profile_t prof;
            model_base(&prof);
            model_dump(&prof, before, sizeof before);
            check_fail_alloc(n);
            int rc =
                sonde_profile_add(&prof, k->path, k->func, k->firstlineno, k->lineno, 5, 6, 7, 1);
            check_fail_alloc(-1);
            if (rc == -ENOMEM) {
                failures++;
                model_dump(&prof, after, sizeof after);
                if (strcmp(before, after) != 0) unchanged = false;
            } else if (rc == 0) {
                succeeded = true;
            }
            sonde_profile_free(&prof);
        }
        char name[96];
        snprintf(name, sizeof name, "model_enomem_leaves_profile_unchanged_%s", k->name);
        check(unchanged && succeeded && failures == k->allocations, name,
              "unchanged %d succeeded %d after %ld failures (want %ld)", unchanged, succeeded,
              failures, k->allocations);
    }
}

static void test_finish_enomem(const char *dir)
{
    char *path = check_path(dir, "enomem.py");
    check_write_file(path, "a\nb\nc\n", 6);
    bool all_enomem = true, succeeded = false;
    for (long n = 0; n < 64 && !succeeded; n++) {
        sonde_profile_t prof;
        sonde_profile_init(&prof);
        if (sonde_profile_add(&prof, path, "f", 1, 2, 1, 0, 0, 1)) exit(2);
        check_fail_alloc(n);
        int rc = sonde_profile_finish(&prof);
        check_fail_alloc(-1);
        if (rc == 0)
            succeeded = prof.files[0].n_source == 3;
        else if (rc != -ENOMEM)
            all_enomem = false;
        sonde_profile_free(&prof);
    }
    check(all_enomem && succeeded, "model_finish_enomem_reported", "all_enomem %d succeeded %d",
          all_enomem, succeeded);
    unlink(path);
    free(path);
}
#endif

int main(void)
{
    char *dir = check_tempdir();
    test_empty();
    test_accumulate_and_order();
    test_many_lines();
    test_source(dir);
    test_set_run();
#if CHECK_CAN_FAIL_MALLOC
    test_add_enomem();
    test_finish_enomem(dir);
#endif
    check_rm_rf(dir);
    free(dir);
    return check_exit_code();
}
