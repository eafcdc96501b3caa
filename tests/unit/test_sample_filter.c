/* test_sample_filter.c — the code filter of the sampling core
 * (src/sample/filter.c): the path rule's decisions (pseudo files,
 * library directories, site-packages, --profile-only, --profile-exclude,
 * --profile-all), the per-code-id cache of its verdict (asked once per
 * code object; a code id the reader cannot name yet is asked again; the
 * marker code id is never profiled), and naming files relative to the
 * working directory.
 */
#include "sample/sample.h"

#include "check.h"

/* A stand-in for the reader's code cache, counting the lookups. */
typedef struct fake_codes {
    sonde_pycode_t codes[8];
    uint32_t n;
    int lookups;
} fake_codes_t;

static const sonde_pycode_t *fake_code(const void *source, uint32_t code_id)
{
    fake_codes_t *fake = (fake_codes_t *)source;
    fake->lookups++;
    return code_id < fake->n ? &fake->codes[code_id] : NULL;
}

static void test_rule(void)
{
    sonde_codefilter_t f = {0};
    check(sonde_codefilter_add_lib_dir(&f, "/usr/lib/python3.11//") == 0 &&
              sonde_codefilter_add_lib_dir(&f, "/usr/lib/python3.11") == 0 &&
              sonde_codefilter_add_lib_dir(&f, "") == 0 &&
              sonde_codefilter_add_lib_dir(&f, NULL) == 0,
          "filter_lib_dirs_added", "rc");
    check(f.n_lib_prefixes == 1 && strcmp(f.lib_prefixes[0], "/usr/lib/python3.11/") == 0,
          "filter_lib_dirs_deduplicated", "%d prefixes, first %s", f.n_lib_prefixes,
          f.n_lib_prefixes ? f.lib_prefixes[0] : "-");

    check(sonde_codefilter_wants(&f, "/home/u/app.py"), "filter_program_file", "refused");
    check(!sonde_codefilter_wants(&f, "/usr/lib/python3.11/json/decoder.py"), "filter_stdlib_out",
          "accepted");
    check(sonde_codefilter_wants(&f, "/usr/lib/python3.110/x.py"), "filter_prefix_is_a_directory",
          "a sibling directory was taken for the library");
    check(!sonde_codefilter_wants(&f, "<frozen os>") && !sonde_codefilter_wants(&f, "<string>") &&
              !sonde_codefilter_wants(&f, "") && !sonde_codefilter_wants(&f, NULL),
          "filter_pseudo_files_out", "accepted");
    /* an IPython cell is the user's code: profiled, though not a file */
    check(sonde_codefilter_wants(&f, "<ipython-input-3-5f1c2a7b9e0d>") &&
              !sonde_codefilter_wants(&f, "<ipython-input"),
          "filter_ipython_cell_in", "wrong verdict");
    /* -c CODE: "<string>" is the program's own file (and only that name) */
    f.program_pseudo = "<string>";
    check(sonde_codefilter_wants(&f, "<string>") && !sonde_codefilter_wants(&f, "<stdin>") &&
              !sonde_codefilter_wants(&f, "<frozen os>") && !sonde_codefilter_wants(&f, NULL),
          "filter_program_pseudo_file", "wrong verdict");
    f.program_pseudo = NULL;

    /* site_dirs: any site-packages/dist-packages component is a library. */
    const char *site = "/venv/lib/python3.11/site-packages/numpy/core.py";
    check(sonde_codefilter_wants(&f, site), "filter_site_dirs_off_by_default", "refused");
    f.site_dirs = true;
    check(!sonde_codefilter_wants(&f, site) &&
              !sonde_codefilter_wants(&f, "/usr/lib/python3/dist-packages/x.py") &&
              sonde_codefilter_wants(&f, "/home/u/site-packages-notes/a.py"),
          "filter_site_dirs_component", "wrong verdict");

    /* --profile-all: every real file, libraries included, pseudo ones not. */
    f.profile_all = true;
    check(sonde_codefilter_wants(&f, site) &&
              sonde_codefilter_wants(&f, "/usr/lib/python3.11/json/decoder.py") &&
              !sonde_codefilter_wants(&f, "<string>"),
          "filter_profile_all", "wrong verdict");

    /* --profile-exclude wins over everything; --profile-only replaces the
     * default rule. */
    check(sonde_codefilter_add_exclude(&f, "tests/") == 0, "filter_add_exclude", "rc");
    check(!sonde_codefilter_wants(&f, "/home/u/tests/test_a.py") &&
              sonde_codefilter_wants(&f, "/home/u/app.py"),
          "filter_exclude", "wrong verdict");
    f.profile_all = false;
    check(sonde_codefilter_add_only(&f, "numpy") == 0, "filter_add_only", "rc");
    check(sonde_codefilter_wants(&f, site) && !sonde_codefilter_wants(&f, "/home/u/app.py") &&
              !sonde_codefilter_wants(&f, "/home/u/tests/numpy_test.py"),
          "filter_only_replaces_rule", "wrong verdict");
    sonde_codefilter_free(&f);
    check(f.n_lib_prefixes == 0 && f.lib_prefixes == NULL && f.n_only == 0 && f.n_exclude == 0,
          "filter_free_zeroes", "not zeroed");
}

static void test_cache(void)
{
    fake_codes_t fake = {.n = 3};
    fake.codes[0] = (sonde_pycode_t){0, "/home/u/app.py", "main", 1};
    fake.codes[1] = (sonde_pycode_t){0, "/usr/lib/python3.11/os.py", "walk", 300};
    fake.codes[2] = (sonde_pycode_t){0, NULL, "nameless", 1};
    sonde_codenames_t names = {fake_code, &fake, NULL};
    sonde_codefilter_t f = {0};
    sonde_codecache_t cache = {0};
    sonde_codefilter_add_lib_dir(&f, "/usr/lib/python3.11");

    bool first = sonde_codecache_wants(&cache, &f, &names, 0);
    bool lib = sonde_codecache_wants(&cache, &f, &names, 1);
    bool nameless = sonde_codecache_wants(&cache, &f, &names, 2);
    check(first && !lib && !nameless, "cache_verdicts", "app %d lib %d nameless %d", first, lib,
          nameless);
    int lookups = fake.lookups;
    for (int i = 0; i < 100; i++) {
        sonde_codecache_wants(&cache, &f, &names, 0);
        sonde_codecache_wants(&cache, &f, &names, 1);
    }
    check(fake.lookups == lookups, "cache_asks_once_per_code", "%d lookups after %d", fake.lookups,
          lookups);

    /* A code id the reader cannot name yet is not cached as refused. */
    check(!sonde_codecache_wants(&cache, &f, &names, 5), "cache_unknown_code_refused", "accepted");
    fake.n = 6;
    fake.codes[5] = (sonde_pycode_t){0, "/home/u/later.py", "later", 1};
    check(sonde_codecache_wants(&cache, &f, &names, 5), "cache_unknown_code_asked_again",
          "still refused");
    /* Ids far beyond the first table size grow it. */
    check(!sonde_codecache_wants(&cache, &f, &names, 100000) && cache.cap > 100000, "cache_grows",
          "cap %zu", cache.cap);
    check(!sonde_codecache_wants(&cache, &f, &names, SONDE_AFRAME_MARKER_CODE),
          "cache_marker_never_profiled", "accepted");
    sonde_codecache_free(&cache);
    sonde_codefilter_free(&f);
}

static void test_paths(void)
{
    char buf[256];
    sonde_codenames_t names = {fake_code, NULL, "/srv/app"};
    check(strcmp(sonde_codenames_path(&names, "pkg/mod.py", buf, sizeof buf),
                 "/srv/app/pkg/mod.py") == 0,
          "path_relative_joined", "%s", buf);
    check(strcmp(sonde_codenames_path(&names, "/abs/mod.py", buf, sizeof buf), "/abs/mod.py") == 0,
          "path_absolute_kept", "%s", buf);
    check(strcmp(sonde_codenames_path(&names, "<string>", buf, sizeof buf), "<string>") == 0,
          "path_pseudo_kept", "%s", buf);
    names.cwd = NULL;
    check(strcmp(sonde_codenames_path(&names, "mod.py", buf, sizeof buf), "mod.py") == 0,
          "path_no_cwd", "%s", buf);
}

int main(void)
{
    test_rule();
    test_cache();
    test_paths();
    return check_exit_code();
}
