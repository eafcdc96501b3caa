/* test_report_text.c — unit tests of the terminal report (src/report/text.c).
 *
 * Builds a profile with known figures over small source files written into a
 * temporary directory, then checks the report: the threshold filter and its
 * context lines, "..." markers, the function summary, widths, colour, the
 * edge cases (no samples, no source, lines past the end, hostile source
 * text) and two golden files, tests/golden/text_*.txt, compared after the
 * temporary directory is replaced by "$TMP".
 *
 * SONDE_UPDATE_GOLDEN=1 rewrites the golden files instead of comparing;
 * SONDE_GOLDEN_DIR overrides where they are (default: tests/golden from
 * the current directory, else from the binary's place in build/tests/).
 */
#include "report/report.h"

#define CHECK_WITH_FAILING_MALLOC
#include "check.h"

#include <limits.h>

#define MS 1000000ull

static const char app_py[] =
    "import time\n"
    "\n"
    "\n"
    "def compute(n):\n"
    "    total = 0\n"
    "    for i in range(n):\n"
    "\ttotal += i * i  # a tab-indented line\n"
    "    return total\n"
    "\n"
    "\n"
    "def slow_io():\n"
    "    time.sleep(0.5)\n"
    "    with open(\"/dev/null\", \"w\") as f:\n"
    "        f.write(\"x\" * 1000)\n"
    "\n"
    "\n"
    "def main():\n"
    "    compute(10_000_000)\n"
    "    slow_io()\n"
    "    print(\"done: caf\xc3\xa9 \xe2\x9c\x93\", [x for x in range(3)])\n"
    "\n"
    "\n"
    "if __name__ == \"__main__\":\n"
    "    main()"; /* no final newline */

static const char lib_py[] =
    "# helpers\n"
    "def helper(items):\n"
    "    return sorted(items, key=lambda s: s.casefold())  # \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e "
    "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e and a long tail of "
    "words\n"
    "    s = \"\x1b[31mred\x1b[0m \xc2\x9b"
    "1m \xff\xfe bell\x07\"  # hostile bytes\n"
    "    return s\n";

/* The profile every check uses: 1000 ms in all, so n ms is n/10 %. */
static void build_profile(sonde_profile_t *prof, const char *prefix)
{
    char app[PATH_MAX], lib[PATH_MAX], tiny[PATH_MAX];
    snprintf(app, sizeof app, "%sapp.py", prefix);
    snprintf(lib, sizeof lib, "%slib.py", prefix);
    snprintf(tiny, sizeof tiny, "%stiny.py", prefix);
    const char *argv[] = {"/somewhere/app.py", "--size", "it's big", "x"};

    sonde_profile_init(prof);
    int rc = sonde_profile_set_run(prof, "app.py", 4, argv, "3.11.7");
    prof->elapsed_sec = 1.25;
    prof->interval_sec = 0.01;
    prof->samples = 125;
    prof->unattributed_ns = 20 * MS;
    rc |= sonde_profile_add(prof, app, "compute", 4, 6, 397 * MS, 0, 0, 40);
    rc |= sonde_profile_add(prof, app, "compute", 4, 7, 200 * MS, 50 * MS, 0, 25);
    rc |= sonde_profile_add(prof, app, "slow_io", 11, 12, 0, 10 * MS, 150 * MS, 16);
    rc |= sonde_profile_add(prof, app, "slow_io", 11, 14, 2 * MS, 3 * MS, 5 * MS, 1);
    rc |= sonde_profile_add(prof, app, "main", 17, 18, 4 * MS, 0, 0, 1);
    rc |= sonde_profile_add(prof, app, "<listcomp>", 20, 20, 6 * MS, 0, 0, 1);
    rc |= sonde_profile_add(prof, app, "main", 17, 40, 20 * MS, 0, 0, 2);
    rc |= sonde_profile_add(prof, lib, "helper", 2, 3, 100 * MS, 0, 0, 10);
    rc |= sonde_profile_add(prof, lib, "helper", 2, 4, 20 * MS, 0, 0, 2);
    rc |= sonde_profile_add(prof, "<string>", NULL, 1, 1, 30 * MS, 0, 0, 3);
    rc |= sonde_profile_add(prof, tiny, NULL, 1, 1, 3 * MS, 0, 0, 1);
    rc |= sonde_profile_finish(prof);
    if (rc) {
        fprintf(stderr, "test_report_text: cannot build the profile (%d)\n", rc);
        exit(2);
    }
}

/* The report as a string, owned by the caller. */
static char *render(const sonde_profile_t *prof, int width, double threshold, bool all_lines,
                    bool color)
{
    sonde_text_opts_t opts;
    sonde_text_opts_default(&opts);
    opts.width = width;
    opts.cpu_percent_threshold = threshold;
    opts.all_lines = all_lines;
    opts.color = color;
    sonde_buf_t out = SONDE_BUF_INIT;
    int rc = sonde_report_text(prof, &opts, &out);
    if (rc || !out.data) {
        fprintf(stderr, "test_report_text: report failed (%d)\n", rc);
        exit(2);
    }
    return out.data;
}

/* Replaces every occurrence of from by to; owned result. */
static char *replace_all(const char *text, const char *from, const char *to)
{
    size_t from_len = strlen(from), to_len = strlen(to);
    size_t n = (size_t)check_count(text, from);
    char *result = malloc(strlen(text) + n * to_len + 1);
    if (!result) exit(2);
    char *w = result;
    for (const char *p = text;;) {
        const char *hit = strstr(p, from);
        if (!hit) {
            strcpy(w, p);
            break;
        }
        memcpy(w, p, (size_t)(hit - p));
        w += hit - p;
        memcpy(w, to, to_len);
        w += to_len;
        p = hit + from_len;
    }
    return result;
}

/* text without its SGR sequences; owned. */
static char *strip_sgr(const char *text)
{
    char *plain = malloc(strlen(text) + 1);
    if (!plain) exit(2);
    char *w = plain;
    for (const char *p = text; *p;) {
        if (p[0] == '\x1b' && p[1] == '[') {
            p += 2;
            while (*p && *p != 'm')
                p++;
            if (*p) p++;
        } else {
            *w++ = *p++;
        }
    }
    *w = 0;
    return plain;
}

/* Display width of one line (to '\n'): wide CJK counts 2, escapes 0. Only
 * the characters the test's sources use need to be known here. */
static int line_width(const char *p)
{
    int width = 0;
    while (*p && *p != '\n') {
        unsigned char c = (unsigned char)*p;
        if (c == 0x1b) {
            while (*p && *p != 'm')
                p++;
            if (*p) p++;
            continue;
        }
        unsigned cp = c;
        int n = 1;
        if (c >= 0xf0) {
            cp = c & 0x07;
            n = 4;
        } else if (c >= 0xe0) {
            cp = c & 0x0f;
            n = 3;
        } else if (c >= 0xc0) {
            cp = c & 0x1f;
            n = 2;
        }
        for (int i = 1; i < n && p[i]; i++)
            cp = (cp << 6) | ((unsigned char)p[i] & 0x3f);
        if (cp >= 0x300 && cp <= 0x36f)
            width += 0; /* combining marks */
        else if ((cp >= 0x3040 && cp <= 0x9fff) || (cp >= 0x1f300 && cp <= 0x1f64f))
            width += 2;
        else
            width += 1;
        p += n;
    }
    return width;
}

static int max_line_width(const char *text)
{
    int widest = 0;
    for (const char *p = text; *p;) {
        int w = line_width(p);
        if (w > widest) widest = w;
        const char *nl = strchr(p, '\n');
        if (!nl) break;
        p = nl + 1;
    }
    return widest;
}

/* The report line whose Line column holds label (e.g. "   6"); NULL if none.
 * Returns a pointer into text. */
static const char *find_row(const char *text, const char *section, const char *label)
{
    const char *p = section ? strstr(text, section) : text;
    if (!p) return NULL;
    size_t len = strlen(label);
    /* Search the block (up to a blank line) that starts at p. */
    for (bool first = true; p && *p; first = false) {
        if (!first && *p == '\n') break;
        if (strncmp(p, label, len) == 0 && (p[len] == ' ' || p[len] == '\n' || !p[len])) return p;
        p = strchr(p, '\n');
        if (p) p++;
    }
    return NULL;
}

/* The row as its own string (static storage). */
static const char *row_text(const char *row)
{
    static char line[1024];
    if (!row) return "(none)";
    size_t n = strcspn(row, "\n");
    if (n >= sizeof line) n = sizeof line - 1;
    memcpy(line, row, n);
    line[n] = 0;
    return line;
}

/* The section of one file: from its header line to the next blank line
 * before another header (static storage). */
static const char *file_section(const char *text, const char *header_start)
{
    static char section[16384];
    const char *start = strstr(text, header_start);
    if (!start) return "";
    const char *end = strstr(start, "\n\nLine  Python  native  system              function");
    const char *next = strstr(start + 1, "\n\n/");
    if (!end || (next && next < end)) end = next;
    size_t n = end ? (size_t)(end - start) : strlen(start);
    if (n >= sizeof section) n = sizeof section - 1;
    memcpy(section, start, n);
    section[n] = 0;
    return section;
}

static char golden_dir[PATH_MAX + 64];

static void find_golden_dir(const char *argv0)
{
    const char *env = getenv("SONDE_GOLDEN_DIR");
    struct stat st;
    if (env && env[0]) {
        snprintf(golden_dir, sizeof golden_dir, "%s", env);
    } else if (stat("tests/golden", &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(golden_dir, sizeof golden_dir, "tests/golden");
    } else {
        char self[PATH_MAX];
        snprintf(self, sizeof self, "%s", argv0);
        char *slash = strrchr(self, '/');
        if (slash)
            *slash = 0;
        else
            snprintf(self, sizeof self, ".");
        snprintf(golden_dir, sizeof golden_dir, "%s/../../tests/golden", self);
    }
    char resolved[PATH_MAX];
    if (realpath(golden_dir, resolved)) snprintf(golden_dir, sizeof golden_dir, "%s", resolved);
}

static void check_golden(const char *name, const char *actual)
{
    char path[PATH_MAX + 256];
    snprintf(path, sizeof path, "%s/%s", golden_dir, name);
    char check_name[128];
    snprintf(check_name, sizeof check_name, "text_golden_%s", name);
    const char *update = getenv("SONDE_UPDATE_GOLDEN");
    if (update && strcmp(update, "1") == 0) {
        check_write_file(path, actual, strlen(actual));
        check(true, check_name, "%s", "");
        return;
    }
    char *expected = check_read_file(path, NULL);
    if (!expected) {
        check(false, check_name, "cannot read %s (SONDE_UPDATE_GOLDEN=1 writes it)", path);
        return;
    }
    int lineno = 1;
    const char *e = expected, *a = actual;
    while (*e && *e == *a) {
        if (*e == '\n') lineno++;
        e++;
        a++;
    }
    if (*e == 0 && *a == 0) {
        check(true, check_name, "%s", "");
    } else {
        char want[256], got[256];
        const char *el = e, *al = a;
        while (el > expected && el[-1] != '\n')
            el--;
        while (al > actual && al[-1] != '\n')
            al--;
        snprintf(want, sizeof want, "%.*s", (int)strcspn(el, "\n"), el);
        snprintf(got, sizeof got, "%.*s", (int)strcspn(al, "\n"), al);
        check(false, check_name, "line %d differs:\n  want: %s\n  got:  %s", lineno, want, got);
    }
    free(expected);
}

/* ---- the checks --------------------------------------------------------- */

static void test_default_report(const char *dir, const sonde_profile_t *prof)
{
    char *text = render(prof, 100, 1.0, false, false);
    char *normal = replace_all(text, dir, "$TMP");
    check_golden("text_default_100.txt", normal);

    check(strchr(text, '\x1b') == NULL, "text_no_escape_without_color", "found ESC");
    check(max_line_width(text) <= 100, "text_fits_width_100", "widest %d", max_line_width(text));

    /* Header figures: the run's split adds up to 100%. */
    double py = 0, nat = 0, sys = 0;
    const char *split = strstr(text, "s profiled: ");
    bool parsed = split && sscanf(split, "s profiled: Python %lf%%, native %lf%%, system %lf%%",
                                  &py, &nat, &sys) == 3;
    check(parsed && py + nat + sys > 99.85 && py + nat + sys < 100.15, "text_header_split_adds_up",
          "python %.1f native %.1f system %.1f", py, nat, sys);
    check(parsed && py > 78.1 && py < 78.3 && nat > 6.2 && nat < 6.4 && sys > 15.4 && sys < 15.6,
          "text_header_split_figures", "python %.1f native %.1f system %.1f", py, nat, sys);
    check(
        strstr(text, "\nPython 3.11.7, 1.250 s elapsed, 125 samples every 10 ms (wall clock)\n") &&
            strstr(text, "\n2.0% of the sampled time was outside profiled files (not shown)\n"),
        "text_header_run_facts", "header wrong");
    check(strstr(text, "sonde " SONDE_VERSION ": app.py --size 'it'\\''s big' x\n") != NULL,
          "text_header_program_quoted", "program line wrong");

    const char *app = file_section(normal, "$TMP/app.py: 84.7% of time (0.847 s)\n");
    check(app[0] != 0, "text_file_header_share", "no app.py header");
    check(strstr(normal, "$TMP/app.py: 84.7%") < strstr(normal, "$TMP/lib.py: 12.0%") &&
              strstr(normal, "$TMP/lib.py: 12.0%") < strstr(normal, "<string>: 3.0%"),
          "text_files_ordered_by_time", "order wrong");

    /* Hot lines carry their figures; the bar follows the split. */
    const char *r6 = find_row(app, NULL, "   6");
    check(r6 && strstr(row_text(r6), "39.7%") && strstr(row_text(r6), "for i in range(n):"),
          "text_hot_line_has_figures", "row 6: %s", row_text(r6));
    const char *r7 = find_row(app, NULL, "   7");
    check(r7 && strstr(row_text(r7), "20.0%") && strstr(row_text(r7), "5.0%") &&
              strstr(row_text(r7), "total += i * i") && !strchr(row_text(r7), '\t'),
          "text_tabs_expanded", "row 7: %s", row_text(r7));
    const char *r14 = find_row(app, NULL, "  14");
    check(r14 && strstr(row_text(r14), "0.2%") && strstr(row_text(r14), "0.3%") &&
              strstr(row_text(r14), "0.5%"),
          "text_line_at_threshold_shown", "row 14: %s", row_text(r14));

    /* Context lines: shown without figures. Lines below the threshold and
     * not next to a hot line: absent. */
    bool context_ok = true;
    static const char *const context[] = {"   5", "   8", "  11", "  13", "  15"};
    for (size_t i = 0; i < SONDE_ARRAY_LEN(context); i++) {
        const char *r = find_row(app, NULL, context[i]);
        if (!r || strchr(row_text(r), '%')) context_ok = false;
    }
    check(context_ok, "text_context_lines_without_figures", "a context row is wrong");
    check(!find_row(app, NULL, "  18") && !find_row(app, NULL, "  20") &&
              !find_row(app, NULL, "   1") && !find_row(app, NULL, "  39"),
          "text_below_threshold_hidden", "a cold line is shown");

    /* Markers: before 5 (1-4), before 11 (9-10), before 40 (16-39). */
    check(check_count(app, "\n ...\n") == 3, "text_markers_where_lines_skipped",
          "%d markers in app.py", check_count(app, "\n ...\n"));

    const char *r40 = find_row(app, NULL, "  40");
    check(r40 && strstr(row_text(r40), "2.0%") && row_text(r40)[strlen(row_text(r40)) - 1] != ' ',
          "text_line_past_end_of_source", "row 40: %s", row_text(r40));

    /* Functions above the threshold, in line order; <listcomp> (0.6%) not. */
    const char *funcs = strstr(normal, "system              function\n");
    const char *compute = funcs ? strstr(funcs, "   4   59.7%    5.0%") : NULL;
    check(compute != NULL, "text_function_summary_figures", "compute row missing");
    check(funcs && strstr(funcs, "slow_io") && strstr(funcs, "main") &&
              !strstr(normal, "<listcomp>"),
          "text_function_summary_threshold", "functions wrong");

    check(strstr(normal, "<string>: 3.0% of time (0.030 s); source not available\n") != NULL,
          "text_file_without_source", "no note");
    const char *strings = strstr(normal, "<string>: 3.0%");
    const char *r1 = strings ? find_row(strings, NULL, "   1") : NULL;
    check(r1 && strstr(row_text(r1), "3.0%"), "text_file_without_source_has_figures", "row: %s",
          row_text(r1));

    check(strstr(normal, "1 more file below 1.0% of the time (0.3% in all) not shown") &&
              !strstr(normal, "tiny.py"),
          "text_small_file_hidden", "tiny.py handling wrong");

    /* Hostile source bytes: shown as U+FFFD, never as control bytes. */
    const char *r4 = find_row(strstr(normal, "$TMP/lib.py"), NULL, "   4");
    bool clean = r4 != NULL;
    for (const char *p = row_text(r4); clean && *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p == 0x7f) clean = false;
    check(clean && strstr(row_text(r4), "\xef\xbf\xbd[31mred") &&
              strstr(row_text(r4), "\xef\xbf\xbd\xef\xbf\xbd bell\xef\xbf\xbd"),
          "text_hostile_source_sanitised", "row 4: %s", row_text(r4));

    free(normal);
    free(text);
}

static void test_widths(const sonde_profile_t *prof)
{
    static const int widths[] = {40, 41, 59, 72, 100, 137, 250};
    for (size_t i = 0; i < SONDE_ARRAY_LEN(widths); i++) {
        for (int all = 0; all < 2; all++) {
            char *text = render(prof, widths[i], 1.0, all, true);
            char name[64];
            snprintf(name, sizeof name, "text_fits_width_%d%s_color", widths[i],
                     all ? "_all_lines" : "");
            check(max_line_width(text) <= widths[i], name, "widest %d", max_line_width(text));
            free(text);
        }
    }
    char *narrow = render(prof, 40, 1.0, false, false);
    const char *r3 = find_row(strstr(narrow, "lib.py"), NULL, "   3");
    const char *row = row_text(r3);
    size_t len = strlen(row);
    check(r3 && len > 3 && strcmp(row + len - 3, "\xe2\x80\xa6") == 0,
          "text_truncated_with_ellipsis", "row: %s", row);
    check(strstr(narrow, "\xe2\x80\xa6/lib.py: 12.0% of time") != NULL ||
              strstr(narrow, "lib.py: 12.0% of time") != NULL,
          "text_long_path_keeps_file_name", "no lib.py header");
    free(narrow);

    char *tiny = render(prof, 5, 1.0, false, false);
    check(max_line_width(tiny) <= 40, "text_width_clamped_to_40", "widest %d",
          max_line_width(tiny));
    free(tiny);
}

static void test_color(const sonde_profile_t *prof)
{
    char *plain = render(prof, 100, 1.0, false, false);
    char *color = render(prof, 100, 1.0, false, true);
    char *stripped = strip_sgr(color);
    check(check_count(color, "\x1b[") > 20, "text_color_has_escapes", "%d escapes",
          check_count(color, "\x1b["));
    check(strcmp(stripped, plain) == 0, "text_color_only_adds_escapes", "layouts differ");
    check(strstr(color, "\x1b[36m") && strstr(color, "\x1b[32m") && strstr(color, "\x1b[33m") &&
              strstr(color, "\x1b[2m"),
          "text_color_per_kind", "a colour is missing");
    /* Every line that sets a colour resets it before its end. */
    bool reset_ok = true;
    for (const char *p = color; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        const char *last_esc = NULL;
        for (const char *q = p; q < p + n; q++)
            if (*q == '\x1b') last_esc = q;
        if (last_esc && strncmp(last_esc, "\x1b[0m", 4) != 0) reset_ok = false;
        if (!nl) break;
        p = nl + 1;
    }
    check(reset_ok, "text_color_reset_each_line", "a line leaves a colour on");
    free(stripped);
    free(color);
    free(plain);
}

static void test_all_lines(const char *dir, const sonde_profile_t *prof)
{
    char *text = render(prof, 100, 1.0, true, false);
    char *normal = replace_all(text, dir, "$TMP");
    const char *app = file_section(normal, "$TMP/app.py");
    bool every = true;
    for (int l = 1; l <= 24; l++) {
        char label[16];
        snprintf(label, sizeof label, "%4d", l);
        if (!find_row(app, NULL, label)) every = false;
    }
    check(every, "text_all_lines_every_source_line", "a line is missing");
    const char *r20 = find_row(app, NULL, "  20");
    check(r20 && strstr(row_text(r20), "0.6%"), "text_all_lines_figures_below_threshold",
          "row 20: %s", row_text(r20));
    check(strstr(normal, "tiny.py") && strstr(normal, "<listcomp>"),
          "text_all_lines_every_file_and_function", "something hidden");
    check(check_count(app, "\n ...\n") == 1, "text_all_lines_marker_before_past_end", "%d markers",
          check_count(app, "\n ...\n"));
    free(normal);
    free(text);

    /* Threshold 0: every line with samples carries figures. */
    text = render(prof, 100, 0, false, false);
    const char *r18 = find_row(strstr(text, "app.py:"), NULL, "  18");
    check(r18 && strstr(row_text(r18), "0.4%"), "text_threshold_zero_shows_all_sampled",
          "row 18: %s", row_text(r18));
    free(text);

    /* A high threshold: the hottest line only. */
    text = render(prof, 100, 30, false, false);
    const char *hot = find_row(strstr(text, "app.py:"), NULL, "   6");
    const char *next = find_row(strstr(text, "app.py:"), NULL, "   7");
    check(hot && strstr(row_text(hot), "39.7%") && next && !strchr(row_text(next), '%') &&
              !find_row(strstr(text, "app.py:"), NULL, "  12") &&
              strstr(text, "3 more files below 30.0% of the time (15.3% in all)"),
          "text_threshold_30", "report:\n%s", text);
    free(text);
}

static void test_relative_golden(const char *dir)
{
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd) || chdir(dir) != 0) {
        check(false, "text_golden_relative", "chdir: %s", strerror(errno));
        return;
    }
    sonde_profile_t prof;
    build_profile(&prof, "");
    char *text = render(&prof, 72, 1.0, true, false);
    check_golden("text_all_lines_72.txt", text);
    free(text);
    sonde_profile_free(&prof);
    if (chdir(cwd) != 0) exit(2);
}

/* A file above the threshold whose lines are each below it; odd line
 * numbers; the default options. */
static void test_spread_and_odd_lines(void)
{
    sonde_profile_t prof;
    sonde_profile_init(&prof);
    int rc = 0;
    for (int l = 1; l <= 10; l++)
        rc |= sonde_profile_add(&prof, "/nonexistent/spread.py", "f", 1, l, 5 * MS, 0, 0, 1);
    rc |= sonde_profile_add(&prof, "/nonexistent/odd.py", "g", 0, 0, 800 * MS, 0, 0, 80);
    rc |= sonde_profile_add(&prof, "/nonexistent/odd.py", "g", 0, -1, 100 * MS, 0, 0, 10);
    rc |= sonde_profile_add(&prof, "/nonexistent/odd.py", "h", INT_MAX, INT_MAX, 50 * MS, 0, 0, 5);
    rc |= sonde_profile_finish(&prof);
    sonde_buf_t out = SONDE_BUF_INIT;
    rc |= sonde_report_text(&prof, NULL, &out);
    const char *text = out.data ? out.data : "";
    const char *spread = strstr(text, "/nonexistent/spread.py: 5.0% of time");
    check(rc == 0 && spread && strstr(spread, "(no line reaches 1.0% of the time)"),
          "text_file_shown_without_hot_line", "%s", text);
    const char *odd = strstr(text, "/nonexistent/odd.py: 95.0%");
    check(odd && find_row(odd, NULL, "        -1") && find_row(odd, NULL, "         0") &&
              find_row(odd, NULL, "2147483647") && max_line_width(text) <= 100,
          "text_odd_line_numbers", "%s", text);
    sonde_buf_free(&out);
    sonde_profile_free(&prof);
}

/* True when text is valid UTF-8 (no overlongs, surrogates or values past
 * U+10FFFF). */
static bool valid_utf8(const char *text)
{
    const unsigned char *p = (const unsigned char *)text;
    while (*p) {
        unsigned c = *p, cp, n;
        if (c < 0x80) {
            p++;
            continue;
        }
        if ((c & 0xe0) == 0xc0)
            n = 2, cp = c & 0x1f;
        else if ((c & 0xf0) == 0xe0)
            n = 3, cp = c & 0x0f;
        else if ((c & 0xf8) == 0xf0)
            n = 4, cp = c & 0x07;
        else
            return false;
        for (unsigned i = 1; i < n; i++) {
            if ((p[i] & 0xc0) != 0x80) return false;
            cp = (cp << 6) | (p[i] & 0x3f);
        }
        static const unsigned min[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
        p += n;
    }
    return true;
}

/* Random source bytes and figures: whatever the input, the report fits the
 * width, is valid UTF-8, and has no escape byte unless colour is on. */
static void test_random_inputs(const char *dir)
{
    static const unsigned char alphabet[] =
        "ab \t\t\n\n\r\x1b[m\x07\x7f\x80\x9b\xc3\xa9\xe6\x97\xa5"
        "\xf0\x9f\x98\x80\xff\xed\xa0\x80\xcc\x81";
    char *path = check_path(dir, "random.py");
    uint32_t seed = 2024;
    bool fits = true, utf8 = true, no_escape = true;
    int bad_width = 0;
    for (int iter = 0; iter < 300; iter++) {
        char source[2048];
        size_t len = 0;
        size_t want = (seed = seed * 1103515245u + 12345u) >> 16 & 1023;
        while (len < want) {
            seed = seed * 1103515245u + 12345u;
            source[len++] = (char)alphabet[(seed >> 16) % (sizeof alphabet - 1)];
        }
        check_write_file(path, source, len);
        sonde_profile_t prof;
        sonde_profile_init(&prof);
        for (int k = 0; k < 12; k++) {
            seed = seed * 1103515245u + 12345u;
            int line = (int)((seed >> 16) % 40) - 2;
            sonde_ns_t ns = (seed >> 8) % 100 * MS;
            if (sonde_profile_add(&prof, path, (seed & 1) ? "\x1b[31mf\xff" : NULL, line, line, ns,
                                  ns / 3 * (seed >> 3 & 1), ns / 2 * (seed >> 5 & 1), 1))
                exit(2);
        }
        if (sonde_profile_finish(&prof)) exit(2);
        seed = seed * 1103515245u + 12345u;
        int width = 40 + (int)((seed >> 16) % 160);
        bool color = seed & 1, all = seed & 2;
        char *text = render(&prof, width, (seed >> 2) % 3, all, color);
        if (max_line_width(text) > width) {
            fits = false;
            bad_width = width;
        }
        if (!valid_utf8(text)) utf8 = false;
        if (!color && strchr(text, '\x1b')) no_escape = false;
        free(text);
        sonde_profile_free(&prof);
    }
    check(fits, "text_random_inputs_fit_width", "a line wider than %d", bad_width);
    check(utf8, "text_random_inputs_valid_utf8", "invalid UTF-8 in a report");
    check(no_escape, "text_random_inputs_no_escape_without_color", "ESC without colour");
    unlink(path);
    free(path);
}

static void test_empty(void)
{
    sonde_profile_t prof;
    sonde_profile_init(&prof);
    prof.samples = 0;
    sonde_profile_finish(&prof);
    char *text = render(&prof, 100, 1.0, false, true);
    check(strcmp(text, "sonde: no samples: the program ran for less than one sampling "
                       "interval\n") == 0,
          "text_empty_profile_one_line", "got: %s", text);
    free(text);

    /* A program that failed says so, with its exit status; a clean exit
     * keeps the line above. */
    sonde_profile_set_exit(&prof, 0, NULL);
    text = render(&prof, 100, 1.0, false, false);
    check(strstr(text, "less than one sampling interval") && !strstr(text, "failed"),
          "text_empty_clean_exit", "got: %s", text);
    free(text);
    sonde_profile_set_exit(&prof, 1, "ModuleNotFoundError");
    prof.elapsed_sec = 0.004;
    text = render(&prof, 100, 1.0, false, false);
    check(strcmp(text, "sonde: no samples: the program failed (ModuleNotFoundError, exit status 1) "
                       "after 0.004 s, before sonde sampled any of its lines\n") == 0,
          "text_empty_program_failed", "got: %s", text);
    free(text);
    sonde_profile_set_exit(&prof, 3, "");
    text = render(&prof, 100, 1.0, false, false);
    check(strstr(text, "failed (exit status 3)") && check_count(text, "\n") == 1,
          "text_empty_program_exit_status", "got: %s", text);
    free(text);

    /* All the time outside the profiled files: how much, and the options
     * that show it (none to name under --profile-all). */
    prof.exit_known = false;
    prof.unattributed_ns = 1500000000;
    text = render(&prof, 100, 1.0, false, false);
    check(check_count(text, "\n") == 1 && strstr(text, "all 1.500 s sampled fell outside") &&
              strstr(text, "--profile-all") && strstr(text, "--profile-only"),
          "text_empty_all_outside", "got: %s", text);
    free(text);
    prof.profile_all = true;
    text = render(&prof, 100, 1.0, false, false);
    check(strstr(text, "outside") && !strstr(text, "--profile"), "text_empty_all_outside_all",
          "got: %s", text);
    free(text);
    prof.profile_all = false;
    prof.unattributed_ns = 0;

    /* Samples but no time on any line count as empty too. */
    sonde_profile_add(&prof, "/nonexistent.py", "f", 1, 1, 0, 0, 0, 3);
    sonde_profile_finish(&prof);
    text = render(&prof, 100, 1.0, false, false);
    check(check_count(text, "\n") == 1 && strstr(text, "no samples"), "text_zero_time_is_empty",
          "got: %s", text);
    free(text);

    /* Most of the time outside: the header names the options; a small
     * share is only counted. */
    sonde_profile_add(&prof, "/nonexistent.py", "f", 1, 1, 400000000, 0, 0, 40);
    prof.unattributed_ns = 600000000;
    sonde_profile_finish(&prof);
    text = render(&prof, 200, 1.0, false, false);
    check(strstr(text, "\n60.0% of the sampled time was outside profiled files (not shown)\n  "
                       "see it with --profile-all (every file) or --profile-only PAT (files whose "
                       "path contains PAT)\n"),
          "text_most_time_outside_names_options", "got: %s", text);
    free(text);
    prof.unattributed_ns = 100000000;
    text = render(&prof, 200, 1.0, false, false);
    check(strstr(text, "\n20.0% of the sampled time was outside profiled files (not shown)\n") &&
              !strstr(text, "--profile-all"),
          "text_some_time_outside_counted", "got: %s", text);
    free(text);
    sonde_profile_free(&prof);
}

static void test_enomem(const sonde_profile_t *prof)
{
#if CHECK_CAN_FAIL_MALLOC
    bool ok = true, succeeded = false;
    long n = 0;
    for (; n < 100000 && !succeeded; n++) {
        sonde_text_opts_t opts;
        sonde_text_opts_default(&opts);
        opts.color = n % 2;
        sonde_buf_t out = SONDE_BUF_INIT;
        check_fail_alloc(n);
        int rc = sonde_report_text(prof, &opts, &out);
        check_fail_alloc(-1);
        if (rc == 0)
            succeeded = true;
        else if (rc != -ENOMEM)
            ok = false;
        sonde_buf_free(&out);
    }
    check(ok && succeeded, "text_enomem_reported", "ok %d succeeded %d after %ld", ok, succeeded,
          n);
#else
    (void)prof;
#endif
}

/* The processes of a merged profile: counted in the header and listed one
 * row each; a profile of one process shows neither. */
static void test_processes(void)
{
    sonde_profile_t prof;
    sonde_profile_init(&prof);
    sonde_profile_add(&prof, "/nowhere/app.py", "f", 1, 2, 30000000, 0, 0, 3);
    sonde_process_t first = {4242, 4240, "python3 app.py", 1.25, 2.5, 21.5, true};
    sonde_profile_add_process(&prof, &first);
    sonde_profile_finish(&prof);
    char *text = render(&prof, 100, 1.0, false, false);
    check(!strstr(text, "processes profiled") && !strstr(text, "4242"), "text_one_process_no_table",
          "got: %s", text);
    free(text);
    sonde_process_t second = {4250, 4242, "python3 -c work", 0.5, 1.0, 12.0, false};
    sonde_profile_add_process(&prof, &second);
    text = render(&prof, 100, 1.0, false, false);
    check(strstr(text, "2 processes profiled") != NULL, "text_processes_counted", "got: %s", text);
    check(strstr(text, "   4242    4240    1.250    2.500     21.5  python3 app.py\n") &&
              strstr(text,
                     "   4250    4242    0.500    1.000     12.0  python3 -c work (part of its "
                     "run)\n"),
          "text_process_rows", "got: %s", text);
    free(text);
    sonde_profile_free(&prof);
}

int main(int argc, char **argv)
{
    (void)argc;
    find_golden_dir(argv[0]);
    char *dir = check_tempdir();
    char *app = check_path(dir, "app.py"), *lib = check_path(dir, "lib.py");
    char *tiny = check_path(dir, "tiny.py");
    check_write_file(app, app_py, sizeof app_py - 1);
    check_write_file(lib, lib_py, sizeof lib_py - 1);
    check_write_file(tiny, "pass\n", 5);

    char prefix[PATH_MAX];
    snprintf(prefix, sizeof prefix, "%s/", dir);
    sonde_profile_t prof;
    build_profile(&prof, prefix);

    test_default_report(dir, &prof);
    test_widths(&prof);
    test_color(&prof);
    test_all_lines(dir, &prof);
    test_relative_golden(dir);
    test_empty();
    test_processes();
    test_spread_and_odd_lines();
    test_random_inputs(dir);
    test_enomem(&prof);

    sonde_profile_free(&prof);
    check_rm_rf(dir);
    free(tiny);
    free(lib);
    free(app);
    free(dir);
    return check_exit_code();
}
