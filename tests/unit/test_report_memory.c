/* test_report_memory.c — the memory figures in the writers (src/report/).
 *
 * Builds a profile with memory figures (as `sonde run --memory` fills it)
 * and checks both writers: the JSON per-line fields with Scalene's names
 * and pprof's heap sample types and their values, the top-level footprint fields and timeline, the
 * leaks object; the terminal report's memory columns, sparklines, header
 * line and leak list, and a line shown for its memory alone. The same
 * profile without has_memory must carry none of it, and the sparkline
 * helper is checked on its own.
 */
#include "report/report_internal.h"

#include "check.h"

#include <limits.h>

#define MS 1000000ull

static const char app_py[] = "data = []\n"
                             "def grow():\n"
                             "    data.append(bytearray(1 << 20))\n"
                             "def spin():\n"
                             "    return sum(range(10**6))\n"
                             "def copy(b):\n"
                             "    return bytes(b)\n";

static void build(sonde_profile_t *prof, const char *path, bool memory)
{
    sonde_profile_init(prof);
    sonde_profile_set_run(prof, "app.py", 0, NULL, "3.11.7");
    prof->elapsed_sec = 2.0;
    prof->interval_sec = 0.01;
    sonde_profile_add(prof, path, "grow", 2, 3, 10 * MS, 0, 0, 1);
    sonde_profile_add(prof, path, "spin", 4, 5, 900 * MS, 0, 0, 90);
    sonde_profile_add(prof, path, "copy", 6, 7, 1 * MS, 0, 0, 1);
    if (!memory) return;
    prof->has_memory = true;
    sonde_line_stats_t *grow = sonde_profile_line(prof, path, "grow", 2, 3);
    grow->mem.malloc_mb = 300;
    grow->mem.mallocs = 30;
    grow->mem.python_fraction = 0.75;
    grow->mem.avg_mb = 150;
    grow->mem.peak_mb = 300;
    grow->mem.live_mb = 280;
    grow->mem.live_objects = 280.4;
    grow->mem.live_at_peak_mb = 290;
    grow->mem.alloc_objects = 299.6;
    grow->mem.leak_likelihood = 0.97;
    grow->mem.leak_velocity_mb_s = 150;
    for (int i = 0; i <= 10; i++)
        sonde_timeline_add(&grow->mem.timeline, 0.2 * i, 30.0 * i);
    sonde_line_stats_t *copy = sonde_profile_line(prof, path, "copy", 6, 7);
    copy->mem.malloc_mb = 100;
    copy->mem.mallocs = 10;
    copy->mem.copy_mb = 500;
    sonde_timeline_add(&copy->mem.timeline, 1.0, 200);
    sonde_func_stats_t *grow_fn = sonde_profile_func(prof, path, "grow", 2);
    grow_fn->mem.malloc_mb = 300;
    grow_fn->mem.mallocs = 30;
    grow_fn->mem.python_fraction = 0.75;
    grow_fn->mem.avg_mb = 120;
    grow_fn->mem.peak_mb = 310;
    grow_fn->mem.live_mb = 1.5;
    grow_fn->mem.live_objects = 3;
    grow_fn->mem.live_at_peak_mb = 2;
    grow_fn->mem.alloc_objects = 12;
    prof->max_footprint_mb = 310;
    prof->heap_peak_mb = 295;
    prof->max_footprint_file = strdup(path);
    prof->max_footprint_lineno = 3;
    sonde_timeline_add(&prof->footprint, 0, 10);
    sonde_timeline_add(&prof->footprint, 1, 200);
    sonde_timeline_add(&prof->footprint, 2, 310);
}

static char *render_json(sonde_profile_t *prof)
{
    sonde_buf_t out = SONDE_BUF_INIT;
    sonde_profile_finish(prof);
    int rc = sonde_report_json(prof, &out);
    return rc == 0 ? out.data : NULL;
}

static char *render_text(sonde_profile_t *prof)
{
    sonde_buf_t out = SONDE_BUF_INIT;
    sonde_text_opts_t opts;
    sonde_text_opts_default(&opts);
    opts.width = 160;
    sonde_profile_finish(prof);
    int rc = sonde_report_text(prof, &opts, &out);
    return rc == 0 ? out.data : NULL;
}

static void test_json(const char *path)
{
    sonde_profile_t prof;
    build(&prof, path, true);
    char *json = render_json(&prof);
    check(json != NULL, "memory_json_written", "no output");
    if (!json) return;
    static const char *const want[] = {
        "\"memory\": true",
        "\"max_footprint_mb\": 310",
        "\"max_footprint_lineno\": 3",
        "\"heap_peak_mb\": 295",
        "\"growth_rate\": 3000",
        "\"samples\": [[0, 10], [1, 200], [2, 310]]",
        ("\"n_malloc_mb\": 300, \"n_mallocs\": 30, \"n_avg_mb\": 150, \"n_peak_mb\": 300, "
         "\"n_python_fraction\": 0.75, \"n_usage_fraction\": 0.75, \"n_copy_mb_s\": 0, "
         "\"n_live_mb\": 280, \"n_live_at_peak_mb\": 290, \"alloc_objects\": 300, "
         "\"alloc_space\": 314572800, \"inuse_objects\": 280, \"inuse_space\": 293601280"),
        "\"n_copy_mb_s\": 250",
        "\"memory_samples\": [[0, 0], [0.2, 30]",
        "\"leaks\": {\"3\": {\"likelihood\": 0.97, \"velocity_mb_s\": 150}}",
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        char name[64];
        snprintf(name, sizeof name, "memory_json_field_%zu", i);
        check(strstr(json, want[i]) != NULL, name, "missing %s in:\n%s", want[i], json);
    }
    /* Functions have their own memory figures, but no timeline. */
    const char *funcs = strstr(json, "\"functions\"");
    check(funcs &&
              strstr(funcs, "{\"line\": \"grow\", \"lineno\": 2, \"n_cpu_percent_python\": "
                            "1.0977, \"n_cpu_percent_c\": 0, \"n_sys_percent\": 0, \"n_samples\": "
                            "1, \"n_malloc_mb\": 300, \"n_mallocs\": 30, \"n_avg_mb\": 120, "
                            "\"n_peak_mb\": 310, \"n_python_fraction\": 0.75, "
                            "\"n_usage_fraction\": 0.75, \"n_copy_mb_s\": 0, \"n_live_mb\": 1.5, "
                            "\"n_live_at_peak_mb\": 2, \"alloc_objects\": 12, \"alloc_space\": "
                            "314572800, \"inuse_objects\": 3, \"inuse_space\": 1572864}") &&
              !strstr(funcs, "\"memory_samples\""),
          "memory_json_on_functions", "%s", funcs ? funcs : "(none)");
    free(json);
    sonde_profile_free(&prof);
}

static void test_json_without_memory(const char *path)
{
    sonde_profile_t prof;
    build(&prof, path, false);
    char *json = render_json(&prof);
    bool clean = json && !strstr(json, "n_malloc_mb") && !strstr(json, "memory") &&
                 !strstr(json, "leaks") && !strstr(json, "max_footprint") &&
                 !strstr(json, "\"samples\"") && !strstr(json, "inuse_space") &&
                 !strstr(json, "heap_peak_mb");
    check(clean, "memory_json_absent_without_memory", "%s", json ? json : "(none)");
    free(json);
    sonde_profile_free(&prof);
}

static void test_text(const char *path)
{
    sonde_profile_t prof;
    build(&prof, path, true);
    char *text = render_text(&prof);
    check(text != NULL, "memory_text_written", "no output");
    if (!text) return;
    static const char *const want[] = {"memory: peak footprint 310.0 MB at app.py:3",
                                       "grew +3000.0% over the run; live heap peak 295.0 MB",
                                       "live MB",
                                       "avg MB",
                                       "peak MB",
                                       "mem py",
                                       "copy MB/s",
                                       "timeline",
                                       "150.0    300.0     75%",
                                       "250.0",
                                       "Possible memory leaks (the footprint grew 3000.0%):",
                                       ("app.py:3  likelihood 97%, about 150.00 MB/s  "
                                        "data.append(bytearray(1 << 20))"),
                                       "\xe2\x96\x81"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        char name[64];
        snprintf(name, sizeof name, "memory_text_has_%zu", i);
        check(strstr(text, want[i]) != NULL, name, "missing '%s' in:\n%s", want[i], text);
    }
    /* Line 7 has 0.1 % of the time but a quarter of the memory: shown. */
    check(strstr(text, "return bytes(b)") != NULL, "memory_text_line_shown_for_memory", "%s", text);
    free(text);
    sonde_profile_free(&prof);
}

static void test_text_without_memory(const char *path)
{
    sonde_profile_t prof;
    build(&prof, path, false);
    char *text = render_text(&prof);
    bool clean = text && !strstr(text, "peak MB") && !strstr(text, "timeline") &&
                 !strstr(text, "memory") && !strstr(text, "leaks");
    check(clean, "memory_text_absent_without_memory", "%s", text ? text : "(none)");
    free(text);
    sonde_profile_free(&prof);
}

static void test_sparkline(void)
{
    sonde_timeline_t tl = {NULL, 0, 0};
    char buf[64];
    sonde__sparkline(&tl, 100, 10, buf, sizeof buf);
    check(buf[0] == 0, "sparkline_empty", "'%s'", buf);
    for (int i = 0; i < 8; i++)
        sonde_timeline_add(&tl, i, 100.0 * i / 7);
    sonde__sparkline(&tl, 100, 10, buf, sizeof buf);
    check(strcmp(buf, "\xe2\x96\x81\xe2\x96\x82\xe2\x96\x83\xe2\x96\x84\xe2\x96\x85\xe2\x96\x86"
                      "\xe2\x96\x87\xe2\x96\x88") == 0,
          "sparkline_levels", "'%s'", buf);
    sonde__sparkline(&tl, 100, 4, buf, sizeof buf);
    check(sonde__text_width(buf) == 4, "sparkline_width", "'%s'", buf);
    sonde__sparkline(&tl, 100, 10, buf, 8); /* room for two cells */
    check(sonde__text_width(buf) == 2, "sparkline_small_buffer", "'%s'", buf);
    sonde_timeline_free(&tl);
}

int main(void)
{
    char *dir = check_tempdir();
    char *path = check_path(dir, "app.py");
    check_write_file(path, app_py, strlen(app_py));
    test_json(path);
    test_json_without_memory(path);
    test_text(path);
    test_text_without_memory(path);
    test_sparkline();
    check_rm_rf(dir);
    free(path);
    free(dir);
    return check_exit_code();
}
