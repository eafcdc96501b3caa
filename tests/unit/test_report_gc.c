/* test_report_gc.c — unit tests of the garbage-collection figures in the
 * model and the writers (src/model/figures.c's GC descriptor, merge.c,
 * src/report/columns.c, json.c, text.c).
 *
 * Builds profiles with known GC figures (the seconds charged and, of
 * those, the seconds spent collecting) and checks that the JSON and the
 * terminal report show each line's and function's share of its time spent
 * collecting and the run's, that a merge adds the seconds (not the
 * shares), that the JSON names no device or per-process field for it, and
 * that a profile without GC figures has no trace of them.
 */
#include "report/report.h"

#include "check.h"

#define MS 1000000ull

/* One function: line 2 (0.6 s, 0.45 s collecting: 75 %), line 3 (0.2 s,
 * none: 0 %); the run: 0.45 / 0.8 = 56.25 %. */
static void build(sonde_profile_t *prof, bool gc, double scale)
{
    sonde_profile_init(prof);
    sonde_profile_add(prof, "/nonexistent/app.py", "work", 1, 2, (sonde_ns_t)(600 * MS * scale), 0,
                      0, 60);
    sonde_profile_add(prof, "/nonexistent/app.py", "work", 1, 3, (sonde_ns_t)(200 * MS * scale), 0,
                      0, 20);
    if (gc) {
        sonde_figs_t hot = {
            {[SONDE_FIG_GC_SEC] = 0.6 * scale, [SONDE_FIG_GC_COLLECTING] = 0.45 * scale}};
        sonde_figs_t cold = {{[SONDE_FIG_GC_SEC] = 0.2 * scale}};
        check(sonde_profile_add_figs(prof, "/nonexistent/app.py", "work", 1, 2, &hot) == 0,
              "gc_add_line", "rc");
        check(sonde_profile_add_figs(prof, "/nonexistent/app.py", "work", 1, 3, &cold) == 0,
              "gc_add_second_line", "rc");
        sonde_fig_run_set(&prof->fig_runs[SONDE_FIGSRC_GC], NULL, true);
    }
    sonde_profile_finish(prof);
}

static char *render_json(const sonde_profile_t *prof)
{
    sonde_buf_t out = SONDE_BUF_INIT;
    check(sonde_report_json(prof, &out) == 0, "gc_json_renders", "rc");
    char *text = strdup(out.data ? out.data : "");
    sonde_buf_free(&out);
    return text;
}

static char *render_text(const sonde_profile_t *prof)
{
    sonde_buf_t out = SONDE_BUF_INIT;
    sonde_text_opts_t opts;
    sonde_text_opts_default(&opts);
    opts.width = 160;
    check(sonde_report_text(prof, &opts, &out) == 0, "gc_text_renders", "rc");
    char *text = strdup(out.data ? out.data : "");
    sonde_buf_free(&out);
    return text;
}

static void test_json(void)
{
    sonde_profile_t prof;
    build(&prof, true, 1);
    char *json = render_json(&prof);
    check(strstr(json, "\"gc\": true,\n") != NULL, "gc_json_flag", "%s", json);
    check(strstr(json, "\"gc_percent\": 56.25,") != NULL, "gc_json_run_percent", "%s", json);
    check(strstr(json, "\"n_gc_percent\": 75") != NULL, "gc_json_line", "%s", json);
    check(check_count(json, "\"n_gc_percent\": 0") == 1, "gc_json_line_without", "%s", json);
    check(check_count(json, "\"n_gc_percent\": 56.25") == 1, "gc_json_function", "%s", json);
    check(strstr(json, "{\"source\": \"gc\", \"key\": \"n_gc_percent\", \"title\": \"GC\", "
                       "\"unit\": \"level_percent\"}") != NULL,
          "gc_json_figures_list", "%s", json);
    /* a source without a device or per-process figure writes only its flag */
    check(strstr(json, "\"gc\": true,\n  \"gc_percent\": 56.25,\n  \"figures\"") != NULL,
          "gc_json_no_other_run_fields", "%s", json);
    free(json);
    sonde_profile_free(&prof);

    build(&prof, false, 1);
    json = render_json(&prof);
    check(strstr(json, "gc") == NULL && strstr(json, "\"figures\"") == NULL,
          "gc_json_absent_without_gc", "%s", json);
    free(json);
    sonde_profile_free(&prof);
}

static void test_text(void)
{
    sonde_profile_t prof;
    build(&prof, true, 1);
    char *text = render_text(&prof);
    check(strstr(text, "  GC  ") != NULL, "gc_text_column", "%s", text);
    check(strstr(text, "GC: 56.2% of the time in garbage collection") != NULL &&
              strstr(text, "0.450 s") != NULL,
          "gc_text_summary", "%s", text);
    check(strstr(text, "75%") != NULL, "gc_text_cell", "%s", text);
    free(text);
    sonde_profile_free(&prof);

    build(&prof, false, 1);
    text = render_text(&prof);
    check(strstr(text, "GC") == NULL, "gc_text_absent_without_gc", "%s", text);
    free(text);
    sonde_profile_free(&prof);
}

/* Two profiles of the same line add their seconds: 0.45 + 0.9 collecting
 * of 0.6 + 1.2 s is 75 % still, and a profile without GC figures merged
 * in adds time the line had no reading for (its share is of the seconds
 * with readings). */
static void test_merge(void)
{
    sonde_profile_t a, b, none;
    build(&a, true, 1);
    build(&b, true, 2);
    build(&none, false, 1);
    check(sonde_profile_merge(&a, &b) == 0 && sonde_profile_merge(&a, &none) == 0, "gc_merge_rc",
          "rc");
    const sonde_file_stats_t *file = sonde_profile_file(&a, "/nonexistent/app.py");
    const sonde_line_stats_t *hot = NULL;
    for (size_t i = 0; file && i < file->n_lines; i++)
        if (file->lines[i].lineno == 2) hot = &file->lines[i];
    check(hot && hot->figs.v[SONDE_FIG_GC_SEC] > 1.79 && hot->figs.v[SONDE_FIG_GC_SEC] < 1.81 &&
              hot->figs.v[SONDE_FIG_GC_COLLECTING] > 1.34 &&
              hot->figs.v[SONDE_FIG_GC_COLLECTING] < 1.36 && a.fig_runs[SONDE_FIGSRC_GC].present,
          "gc_merge_adds_seconds", "sec %g collecting %g", hot ? hot->figs.v[SONDE_FIG_GC_SEC] : 0,
          hot ? hot->figs.v[SONDE_FIG_GC_COLLECTING] : 0);
    char *json = render_json(&a);
    check(strstr(json, "\"n_gc_percent\": 75") != NULL, "gc_merge_share", "%s", json);
    free(json);
    sonde_profile_free(&a);
    sonde_profile_free(&b);
    sonde_profile_free(&none);
}

int main(void)
{
    test_json();
    test_text();
    test_merge();
    return check_exit_code();
}
