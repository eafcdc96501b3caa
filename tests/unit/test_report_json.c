/* test_report_json.c — unit tests of the JSON report (src/report/json.c).
 *
 * Builds profiles with known figures and awkward strings, writes the JSON to
 * a temporary file and has Python parse it strictly (no duplicate keys, no
 * NaN) and flatten it into "path<TAB>type:value" lines, which the checks
 * read: the fields must hold the figures put in, percentages must add up,
 * and every string must decode to what went in (quotes, newlines, tabs,
 * "</script>", invalid UTF-8 as U+FFFD, non-ASCII). Strings come back
 * hex-encoded so no escaping stands between a check and the bytes. Also
 * checks each file's "source" and the "call_stacks" object (frames,
 * threads, root-first stacks with their weights).
 */
#include "report/report.h"

#define CHECK_WITH_FAILING_MALLOC
#include "check.h"

#include <limits.h>
#include <math.h>
#include <sys/wait.h>

#define MS 1000000ull

static const char flatten_py[] =
    "import json, sys\n"
    "def pairs(items):\n"
    "    keys = [k for k, _ in items]\n"
    "    if len(keys) != len(set(keys)):\n"
    "        sys.exit('duplicate key in ' + repr(keys))\n"
    "    return dict(items)\n"
    "def bad_constant(name):\n"
    "    sys.exit('not JSON: ' + name)\n"
    "with open(sys.argv[1], encoding='utf-8') as f:\n"
    "    doc = json.load(f, object_pairs_hook=pairs, parse_constant=bad_constant)\n"
    "out = []\n"
    "def walk(path, v):\n"
    "    if isinstance(v, dict):\n"
    "        out.append(path + '\\to:' + ','.join(k.encode('utf-8').hex() for k in v))\n"
    "        for k, x in v.items(): walk(path + '|' + k, x)\n"
    "    elif isinstance(v, list):\n"
    "        out.append(path + '\\ta:' + str(len(v)))\n"
    "        for i, x in enumerate(v): walk(path + '|' + str(i), x)\n"
    "    elif isinstance(v, str): out.append(path + '\\ts:' + v.encode('utf-8').hex())\n"
    "    elif isinstance(v, bool): out.append(path + '\\tb:' + str(v).lower())\n"
    "    elif v is None: out.append(path + '\\tz:')\n"
    "    else: out.append(path + '\\tn:' + repr(v))\n"
    "walk('$', doc)\n"
    "sys.stdout.buffer.write(('\\n'.join(out) + '\\n').encode('utf-8'))\n";

static const char app_py[] = "x = \"quote \\\" backslash \\\\ tab\t end\"\n"
                             "html = \"</script><script>alert(1)</script>\"\n"
                             "s = \"caf\xc3\xa9 \xe2\x98\x95 \xe6\x97\xa5\xe6\x9c\xac\"\n"
                             "b = \"\xff\xfe\" & 'x' <y>\n"
                             "pass\n";

static const char *tmp_dir;
static char *flat; /* the flattened document of the last render */

/* Runs the flattener over json; returns the flat text or NULL (and says
 * why in err). */
static char *flatten(const char *json, char *err, size_t err_len)
{
    char *json_path = check_path(tmp_dir, "out.json");
    char *script = check_path(tmp_dir, "flatten.py");
    char *result = check_path(tmp_dir, "flat.txt");
    check_write_file(json_path, json, strlen(json));
    check_write_file(script, flatten_py, sizeof flatten_py - 1);
    char cmd[PATH_MAX * 4];
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' > '%s'", check_python(), script, json_path, result);
    int status = system(cmd);
    char *text = NULL;
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        snprintf(err, err_len, "%s rejected the JSON (status %d)", check_python(), status);
    else
        text = check_read_file(result, NULL);
    unlink(json_path);
    unlink(result);
    free(script);
    free(result);
    free(json_path);
    return text;
}

/* "type:value" at path, or NULL (static storage). */
static const char *get(const char *path)
{
    static char value[8192];
    size_t len = strlen(path);
    for (const char *p = flat; p && *p;) {
        if (strncmp(p, path, len) == 0 && p[len] == '\t') {
            const char *v = p + len + 1;
            size_t n = strcspn(v, "\n");
            if (n >= sizeof value) n = sizeof value - 1;
            memcpy(value, v, n);
            value[n] = 0;
            return value;
        }
        p = strchr(p, '\n');
        if (p) p++;
    }
    return NULL;
}

static double num(const char *path)
{
    const char *v = get(path);
    return v && strncmp(v, "n:", 2) == 0 ? strtod(v + 2, NULL) : NAN;
}

static bool near(double got, double want)
{
    return fabs(got - want) < 1e-4;
}

static bool str_is(const char *path, const char *want)
{
    const char *v = get(path);
    if (!v || strncmp(v, "s:", 2) != 0) return false;
    char hex[8192];
    size_t at = 0;
    for (const unsigned char *p = (const unsigned char *)want; *p && at + 3 < sizeof hex; p++)
        at += (size_t)snprintf(hex + at, sizeof hex - at, "%02x", *p);
    hex[at] = 0;
    return strcmp(v + 2, hex) == 0;
}

/* Path of a field of the line / function at index i of a file. */
static const char *entry(const char *file, const char *kind, int i, const char *field)
{
    static char path[PATH_MAX * 2];
    snprintf(path, sizeof path, "$|files|%s|%s|%d|%s", file, kind, i, field);
    return path;
}

static char *render_json(const sonde_profile_t *prof)
{
    sonde_buf_t out = SONDE_BUF_INIT;
    int rc = sonde_report_json(prof, &out);
    if (rc || !out.data) {
        fprintf(stderr, "test_report_json: report failed (%d)\n", rc);
        exit(2);
    }
    return out.data;
}

/* Renders and flattens; the check named name records whether it parsed. */
static char *render_and_parse(const sonde_profile_t *prof, const char *name)
{
    char *json = render_json(prof);
    char err[256] = "";
    free(flat);
    flat = flatten(json, err, sizeof err);
    check(flat != NULL, name, "%s\n%s", err, json);
    return json;
}

static void build_profile(sonde_profile_t *prof, const char *app, const char *weird)
{
    const char *argv[] = {"/somewhere/app.py", "a\nb",   "q\"uote",
                          "</script>",         "\xff-x", "caf\xc3\xa9"};
    sonde_profile_init(prof);
    int rc = sonde_profile_set_run(prof, "app.py", 6, argv, NULL);
    prof->elapsed_sec = 1.25;
    prof->interval_sec = 0.01;
    prof->virtual_time = true;
    prof->samples = 125;
    prof->unattributed_ns = 20 * MS;
    rc |= sonde_profile_add(prof, app, NULL, 1, 1, 100 * MS, 0, 0, 10);
    rc |= sonde_profile_add(prof, app, NULL, 1, 2, 0, 200 * MS, 0, 20);
    rc |= sonde_profile_add(prof, app, "f</script>\"\n", 3, 3, 0, 0, 300 * MS, 30);
    rc |= sonde_profile_add(prof, app, "g", 4, 4, 10 * MS, 20 * MS, 30 * MS, 6);
    rc |= sonde_profile_add(prof, app, "g", 4, 5, MS / 2, 0, 0, 1);
    rc |= sonde_profile_add(prof, app, "g", 4, 9, 40 * MS, 0, 0, 4);
    rc |= sonde_profile_add(prof, weird, "w", 1, 1, 100 * MS, 0, 0, 10);
    rc |= sonde_profile_add(prof, "<string>", NULL, 1, 1, 199 * MS + MS / 2, 0, 0, 20);
    rc |= sonde_profile_finish(prof);
    if (rc) {
        fprintf(stderr, "test_report_json: cannot build the profile (%d)\n", rc);
        exit(2);
    }
}

static void test_full(const char *app, const char *weird)
{
    sonde_profile_t prof;
    build_profile(&prof, app, weird);
    char *json = render_and_parse(&prof, "json_valid");
    if (!flat) {
        free(json);
        sonde_profile_free(&prof);
        return;
    }

    check(strchr(json, '<') == NULL && strchr(json, '>') == NULL && !strstr(json, "</script"),
          "json_no_raw_angle_brackets", "found '<' or '>'");

    check(str_is("$|sonde_version", SONDE_VERSION) && str_is("$|program", "app.py"),
          "json_version_and_program", "%s", get("$|program"));
    check(strcmp(get("$|python_version") ? get("$|python_version") : "", "z:") == 0,
          "json_missing_python_version_is_null", "%s", get("$|python_version"));
    check(num("$|elapsed_time_sec") == 1.25 && num("$|interval_sec") == 0.01 &&
              num("$|n_samples") == 125 && near(num("$|profiled_time_sec"), 1.0),
          "json_run_figures", "elapsed %g interval %g samples %g", num("$|elapsed_time_sec"),
          num("$|interval_sec"), num("$|n_samples"));
    check(strcmp(get("$|virtual_time") ? get("$|virtual_time") : "", "b:true") == 0,
          "json_virtual_time", "%s", get("$|virtual_time"));
    check(get("$|args") && strcmp(get("$|args"), "a:5") == 0 && str_is("$|args|0", "a\nb") &&
              str_is("$|args|1", "q\"uote") && str_is("$|args|2", "</script>") &&
              str_is("$|args|3", "\xef\xbf\xbd-x") && str_is("$|args|4", "caf\xc3\xa9"),
          "json_args_escaped", "args wrong");

    /* Totals of 1000 ms: Python 450, native 220, system 330. */
    double py = num("$|cpu_percent_python"), c = num("$|cpu_percent_c"), sys = num("$|sys_percent");
    check(near(py, 45.0) && near(c, 22.0) && near(sys, 33.0) && near(py + c + sys, 100.0),
          "json_run_split_adds_up", "python %g c %g sys %g", py, c, sys);
    check(near(num("$|unattributed_percent"), 100.0 * 20 / 1020), "json_unattributed_percent", "%g",
          num("$|unattributed_percent"));

    /* Files ordered by time: app (70.05%), <string> (19.95%), weird (10%). */
    char order[1024];
    snprintf(order, sizeof order, "%s", get("$|files") ? get("$|files") : "");
    char want_order[1024];
    size_t at = (size_t)snprintf(want_order, sizeof want_order, "o:");
    const char *names[] = {app, "<string>", weird};
    for (size_t i = 0; i < 3; i++) {
        if (i) at += (size_t)snprintf(want_order + at, sizeof want_order - at, ",");
        for (const unsigned char *p = (const unsigned char *)names[i]; *p; p++)
            at += (size_t)snprintf(want_order + at, sizeof want_order - at, "%02x", *p);
    }
    check(strcmp(order, want_order) == 0, "json_files_ordered_by_time", "%s", order);

    char key[PATH_MAX * 2];
    snprintf(key, sizeof key, "$|files|%s|percent_cpu_time", app);
    double app_share = num(key);
    snprintf(key, sizeof key, "$|files|%s|percent_cpu_time", weird);
    double weird_share = num(key);
    double string_share = num("$|files|<string>|percent_cpu_time");
    check(near(app_share, 70.05) && near(weird_share, 10.0) && near(string_share, 19.95),
          "json_file_percent", "app %g weird %g string %g", app_share, weird_share, string_share);

    /* Every line with samples, sorted, whatever its share. */
    snprintf(key, sizeof key, "$|files|%s|lines", app);
    check(get(key) && strcmp(get(key), "a:6") == 0, "json_every_sampled_line_listed", "%s",
          get(key));
    static const int want_lineno[] = {1, 2, 3, 4, 5, 9};
    bool sorted = true;
    for (int i = 0; i < 6; i++)
        sorted &= num(entry(app, "lines", i, "lineno")) == want_lineno[i];
    check(sorted, "json_lines_sorted", "line order wrong");

    check(near(num(entry(app, "lines", 0, "n_cpu_percent_python")), 10.0) &&
              near(num(entry(app, "lines", 1, "n_cpu_percent_c")), 20.0) &&
              near(num(entry(app, "lines", 2, "n_sys_percent")), 30.0) &&
              near(num(entry(app, "lines", 3, "n_cpu_percent_python")), 1.0) &&
              near(num(entry(app, "lines", 3, "n_cpu_percent_c")), 2.0) &&
              near(num(entry(app, "lines", 3, "n_sys_percent")), 3.0) &&
              near(num(entry(app, "lines", 4, "n_cpu_percent_python")), 0.05) &&
              num(entry(app, "lines", 4, "n_cpu_percent_c")) == 0,
          "json_line_figures", "line figures wrong");
    check(num(entry(app, "lines", 2, "n_samples")) == 30 &&
              num(entry(app, "lines", 5, "n_samples")) == 4,
          "json_line_samples", "samples wrong");

    /* All line percentages over all files add up to 100. */
    double sum = 0;
    const char *files[] = {app, weird, "<string>"};
    static const char *const fields[] = {"n_cpu_percent_python", "n_cpu_percent_c",
                                         "n_sys_percent"};
    for (size_t f = 0; f < 3; f++)
        for (int i = 0; i < 6; i++)
            for (size_t k = 0; k < 3; k++) {
                double v = num(entry(files[f], "lines", i, fields[k]));
                if (v == v) sum += v;
            }
    check(fabs(sum - 100.0) < 0.001, "json_line_percentages_add_up", "sum %g", sum);

    /* Source text, newline stripped, escaped and decoded back whole. */
    check(str_is(entry(app, "lines", 0, "line"), "x = \"quote \\\" backslash \\\\ tab\t end\""),
          "json_line_quotes_backslash_tab", "%s", get(entry(app, "lines", 0, "line")));
    check(str_is(entry(app, "lines", 1, "line"), "html = \"</script><script>alert(1)</script>\""),
          "json_line_script_tag", "%s", get(entry(app, "lines", 1, "line")));
    check(str_is(entry(app, "lines", 2, "line"),
                 "s = \"caf\xc3\xa9 \xe2\x98\x95 \xe6\x97\xa5\xe6\x9c\xac\""),
          "json_line_non_ascii", "%s", get(entry(app, "lines", 2, "line")));
    check(str_is(entry(app, "lines", 3, "line"), "b = \"\xef\xbf\xbd\xef\xbf\xbd\" & 'x' <y>"),
          "json_line_invalid_utf8", "%s", get(entry(app, "lines", 3, "line")));
    check(str_is(entry(app, "lines", 5, "line"), ""), "json_line_past_end_is_empty", "%s",
          get(entry(app, "lines", 5, "line")));
    check(str_is("$|files|<string>|lines|0|line", ""), "json_line_without_source_is_empty", "%s",
          get("$|files|<string>|lines|0|line"));

    /* Functions: name in "line", first line in "lineno", the same figures. */
    check(str_is(entry(app, "functions", 0, "line"), "<module>") &&
              num(entry(app, "functions", 0, "lineno")) == 1 &&
              near(num(entry(app, "functions", 0, "n_cpu_percent_python")), 10.0) &&
              near(num(entry(app, "functions", 0, "n_cpu_percent_c")), 20.0),
          "json_function_module", "module entry wrong");
    check(str_is(entry(app, "functions", 1, "line"), "f</script>\"\n") &&
              num(entry(app, "functions", 1, "lineno")) == 3 &&
              near(num(entry(app, "functions", 1, "n_sys_percent")), 30.0),
          "json_function_name_escaped", "%s", get(entry(app, "functions", 1, "line")));
    check(str_is(entry(app, "functions", 2, "line"), "g") &&
              near(num(entry(app, "functions", 2, "n_cpu_percent_python")), 5.05) &&
              num(entry(app, "functions", 2, "n_samples")) == 11,
          "json_function_sums", "g: %g", num(entry(app, "functions", 2, "n_cpu_percent_python")));
    snprintf(key, sizeof key, "$|files|%s|functions", weird);
    check(get(key) && strcmp(get(key), "a:1") == 0 &&
              str_is(entry(weird, "functions", 0, "line"), "w"),
          "json_key_with_quote_and_non_ascii", "%s", get(key));

    /* The file's whole text: 5 lines of app.py, the same strings as "line". */
    snprintf(key, sizeof key, "$|files|%s|source", app);
    check(get(key) && strcmp(get(key), "a:5") == 0, "json_source_every_line", "%s", get(key));
    snprintf(key, sizeof key, "$|files|%s|source|1", app);
    check(str_is(key, "html = \"</script><script>alert(1)</script>\""), "json_source_text", "%s",
          get(key));
    snprintf(key, sizeof key, "$|files|%s|source|3", app);
    check(str_is(key, "b = \"\xef\xbf\xbd\xef\xbf\xbd\" & 'x' <y>"), "json_source_invalid_utf8",
          "%s", get(key));
    check(get("$|files|<string>|source") == NULL, "json_source_absent_when_unreadable", "%s",
          get("$|files|<string>|source"));
    check(get("$|call_stacks") == NULL, "json_no_call_stacks_without_stacks", "%s",
          get("$|call_stacks"));

    free(json);
    sonde_profile_free(&prof);
}

static void test_empty(void)
{
    sonde_profile_t prof;
    sonde_profile_init(&prof);
    sonde_profile_finish(&prof);
    char *json = render_and_parse(&prof, "json_empty_profile_valid");
    check(flat && get("$|files") && strcmp(get("$|files"), "o:") == 0 &&
              strcmp(get("$|program"), "z:") == 0 && strcmp(get("$|args"), "a:0") == 0 &&
              num("$|cpu_percent_python") == 0 && num("$|n_samples") == 0,
          "json_empty_profile_fields", "%s", json);
    free(json);

    /* Numbers that printf cannot write in fixed notation stay valid JSON. */
    prof.elapsed_sec = 1e300;
    prof.interval_sec = NAN;
    json = render_and_parse(&prof, "json_extreme_numbers_valid");
    check(flat && num("$|elapsed_time_sec") == 1e300 && num("$|interval_sec") == 0,
          "json_extreme_numbers", "elapsed %g interval %g", num("$|elapsed_time_sec"),
          num("$|interval_sec"));
    free(json);
    sonde_profile_free(&prof);
}

/* A profile with call stacks: two threads, a merged stack, awkward names. */
static void build_stacks(sonde_profile_t *prof, const char *app)
{
    build_profile(prof, app, app);
    int main_thread = sonde_profile_thread(prof, "MainThread");
    int worker = sonde_profile_thread(prof, "w</script>");
    sonde_stack_frame_t a[] = {{"<module>", "app.py", 1}, {"f</script>\"\n", "app.py", 3}};
    sonde_stack_frame_t b[] = {{"<module>", "app.py", 1},
                               {"g", "lib \xe2\x98\x83.py", 40},
                               {"h", "lib \xe2\x98\x83.py", 41}};
    int rc = main_thread < 0 || worker < 0;
    rc |= sonde_profile_add_stack(prof, a, 2, main_thread, 3, 30 * MS);
    rc |= sonde_profile_add_stack(prof, b, 3, worker, 1, 10 * MS + 1);
    rc |= sonde_profile_add_stack(prof, a, 2, main_thread, 2, 20 * MS);
    rc |= sonde_profile_add_stack(prof, b, 1, -1, 4, 0);
    if (rc) {
        fprintf(stderr, "test_report_json: cannot build the stacks (%d)\n", rc);
        exit(2);
    }
}

static void test_stacks(const char *app)
{
    sonde_profile_t prof;
    build_stacks(&prof, app);
    char *json = render_and_parse(&prof, "json_stacks_valid");
    if (!flat) {
        free(json);
        sonde_profile_free(&prof);
        return;
    }
    check(strchr(json, '<') == NULL && strchr(json, '>') == NULL,
          "json_stacks_no_raw_angle_brackets", "found '<' or '>'");
    check(get("$|call_stacks") && strcmp(get("$|call_stacks"), "o:" /* frames,threads,samples */
                                                               "6672616d6573,"
                                                               "74687265616473,"
                                                               "73616d706c6573") == 0,
          "json_stacks_fields", "%s", get("$|call_stacks"));
    check(strcmp(get("$|call_stacks|frames"), "a:4") == 0 &&
              str_is("$|call_stacks|frames|0|name", "<module>") &&
              str_is("$|call_stacks|frames|0|file", "app.py") &&
              num("$|call_stacks|frames|0|line") == 1 &&
              str_is("$|call_stacks|frames|1|name", "f</script>\"\n") &&
              str_is("$|call_stacks|frames|2|file", "lib \xe2\x98\x83.py") &&
              num("$|call_stacks|frames|3|line") == 41,
          "json_stacks_frames_interned", "%s", get("$|call_stacks|frames"));
    check(strcmp(get("$|call_stacks|threads"), "a:2") == 0 &&
              str_is("$|call_stacks|threads|0", "MainThread") &&
              str_is("$|call_stacks|threads|1", "w</script>"),
          "json_stacks_threads", "%s", get("$|call_stacks|threads"));
    /* Three distinct stacks; the first added twice: 5 samples, 50 ms. */
    check(strcmp(get("$|call_stacks|samples"), "a:3") == 0 &&
              strcmp(get("$|call_stacks|samples|0|frames"), "a:2") == 0 &&
              num("$|call_stacks|samples|0|frames|0") == 0 &&
              num("$|call_stacks|samples|0|frames|1") == 1 &&
              num("$|call_stacks|samples|0|thread") == 0 &&
              num("$|call_stacks|samples|0|count") == 5 &&
              near(num("$|call_stacks|samples|0|sec"), 0.05),
          "json_stacks_merged_weights", "count %g sec %g", num("$|call_stacks|samples|0|count"),
          num("$|call_stacks|samples|0|sec"));
    check(strcmp(get("$|call_stacks|samples|1|frames"), "a:3") == 0 &&
              num("$|call_stacks|samples|1|frames|0") == 0 &&
              num("$|call_stacks|samples|1|frames|1") == 2 &&
              num("$|call_stacks|samples|1|frames|2") == 3 &&
              num("$|call_stacks|samples|1|thread") == 1 &&
              num("$|call_stacks|samples|1|sec") == 0.01,
          "json_stacks_root_first", "frames %s", get("$|call_stacks|samples|1|frames"));
    check(strcmp(get("$|call_stacks|samples|2|thread"), "z:") == 0 &&
              num("$|call_stacks|samples|2|count") == 4 && num("$|call_stacks|samples|2|sec") == 0,
          "json_stacks_merged_thread_is_null", "%s", get("$|call_stacks|samples|2|thread"));
    free(json);
    sonde_profile_free(&prof);
}

static void test_enomem(const char *app, const char *weird)
{
#if CHECK_CAN_FAIL_MALLOC
    sonde_profile_t prof;
    build_profile(&prof, app, weird);
    bool ok = true, succeeded = false;
    long n = 0;
    for (; n < 100000 && !succeeded; n++) {
        sonde_buf_t out = SONDE_BUF_INIT;
        check_fail_alloc(n);
        int rc = sonde_report_json(&prof, &out);
        check_fail_alloc(-1);
        if (rc == 0)
            succeeded = true;
        else if (rc != -ENOMEM)
            ok = false;
        sonde_buf_free(&out);
    }
    check(ok && succeeded, "json_enomem_reported", "ok %d succeeded %d after %ld", ok, succeeded,
          n);
    sonde_profile_free(&prof);
#else
    (void)app;
    (void)weird;
#endif
}

int main(void)
{
    char *dir = check_tempdir();
    tmp_dir = dir;
    char *app = check_path(dir, "app.py");
    char *weird = check_path(dir, "we\"ird \xe2\x98\x83.py");
    check_write_file(app, app_py, sizeof app_py - 1);
    check_write_file(weird, "w()\n", 4);

    test_full(app, weird);
    test_empty();
    test_stacks(app);
    test_enomem(app, weird);

    free(flat);
    check_rm_rf(dir);
    free(weird);
    free(app);
    free(dir);
    return check_exit_code();
}
