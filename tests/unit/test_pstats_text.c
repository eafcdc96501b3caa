/* test_pstats_text.c — unit tests of cProfile's printed report, written in C
 * (src/trace/pstats_text.c).
 *
 * Checks the header ("N function calls (M primitive calls) in T seconds"),
 * the "Ordered by:" line, the column titles and the layout of each line
 * (pstats' print_line: "%9s" calls, "nc/cc" for recursion, " %8.3f"
 * figures, blank per-call columns for zero counts, standard names with
 * built-ins in braces), strip_dirs()'s merging of rows whose basenames
 * coincide, every sort order with pstats' abbreviations (ambiguous ones
 * refused), the old numeric sorts and the stable order of ties. When a
 * Python interpreter is available ($PYTHON or python3), the same
 * statistics written as a pstats file (pstats_file.c) are printed by
 * Python's own pstats module for every sort order, and both texts must be
 * identical byte for byte.
 */
#include "trace/pstats.h"

#include "check.h"

/* ---- the statistics under test -------------------------------------------------- */

typedef struct {
    const char *file;
    long line;
    const char *name;
    uint64_t cc, nc;
    double tt, ct;
} fixture_row_t;

/* Rows in first-call order, as the snapshot builds them. app.py:10(fib)
 * appears under two directories (strip_dirs merges them, keeping the
 * first one's place); fib recursed (nc != cc); a row with no calls;
 * built-ins with and without angle brackets; two rows with equal tottime,
 * equal names and equal line numbers (ties keep their first order). */
static const fixture_row_t fixture_rows[] = {
    {"/home/u/app.py", 1, "<module>", 1, 1, 0.0012, 1.5},
    {"/home/u/app.py", 10, "fib", 1, 177, 0.25, 0.25},
    {"~", 0, "<built-in method builtins.len>", 50, 50, 0.004, 0.004},
    {"/usr/lib/python3.11/json/__init__.py", 299, "loads", 2, 2, 0.002, 0.3},
    {"/other/app.py", 10, "fib", 1, 3, 0.01, 0.02},
    {"~", 0, "<method 'append' of 'list' objects>", 1000, 1000, 0.05, 0.05},
    {"/x/zzz.py", 5, "never", 0, 0, 0.0, 0.0},
    {"~", 0, "plain_builtin", 2, 2, 0.3, 0.3},
    {"/a/b.py", 7, "g", 4, 4, 0.004, 0.01},
    {"/a/c.py", 7, "loads", 4, 4, 0.001, 0.001},
};

/* The fixture as snapshot rows; strings point into the fixture. */
static void fixture_stats(sonde_trace_stats_t *stats, sonde_trace_row_t *rows, size_t n)
{
    memset(stats, 0, sizeof *stats);
    for (size_t i = 0; i < n; i++) {
        const fixture_row_t *f = &fixture_rows[i];
        rows[i] = (sonde_trace_row_t){
            .file = (char *)f->file,
            .file_len = strlen(f->file),
            .line = f->line,
            .name = (char *)f->name,
            .name_len = strlen(f->name),
            .cc = f->cc,
            .nc = f->nc,
            .tt = f->tt,
            .ct = f->ct,
        };
    }
    stats->rows = rows;
    stats->n_rows = stats->cap_rows = n;
}

#define N_ROWS (sizeof fixture_rows / sizeof *fixture_rows)

/* Our report for the sort words, owned by the caller; NULL when the words
 * are refused. */
static char *report(const sonde_trace_stats_t *stats, const char *const *words, int n_words)
{
    sonde_trace_sort_t sort;
    char err[64] = "";
    if (sonde_trace_sort_words(&sort, words, n_words, err, sizeof err) < 0) return NULL;
    sonde_buf_t out = SONDE_BUF_INIT;
    int rc = sonde_trace_text_report(stats, &sort, &out);
    if (rc < 0 || !out.data) {
        sonde_buf_free(&out);
        return NULL;
    }
    return out.data;
}

/* The report's function lines (after the column titles), in order, as the
 * standard names at their ends, joined by '|'. */
static void report_order(const char *text, char *names, size_t len)
{
    names[0] = 0;
    const char *p = strstr(text, "filename:lineno(function)\n");
    if (!p) return;
    p = strchr(p, '\n') + 1;
    size_t used = 0;
    while (*p && *p != '\n') {
        const char *end = strchr(p, '\n');
        if (!end) break;
        /* the name follows the five columns ("%9s " and four "%8.3f ") */
        const char *name = end - p > 46 ? p + 46 : end;
        int n =
            snprintf(names + used, len - used, "%s%.*s", used ? "|" : "", (int)(end - name), name);
        if (n < 0 || used + (size_t)n >= len) break;
        used += (size_t)n;
        p = end + 1;
    }
}

/* ---- layout ---------------------------------------------------------------------- */

static void test_layout(const sonde_trace_stats_t *stats)
{
    static const char *const cum[] = {"cumulative"};
    char *text = report(stats, cum, 1);
    check(text != NULL, "pstats_text_written", "no report");
    if (!text) return;
    /* 1 + 177 + 50 + 2 + 3 + 1000 + 0 + 2 + 4 + 4 calls; 1 + 1 + 50 + 2 + 1 + 1000 + 0 +
     * 2 + 4 + 4 primitive; tottime summed over the rows */
    static const char header[] = "         1243 function calls (1065 primitive calls) in 0.622 "
                                 "seconds\n\n   Ordered by: cumulative time\n\n"
                                 "   ncalls  tottime  percall  cumtime  percall "
                                 "filename:lineno(function)\n";
    check(strncmp(text, header, sizeof header - 1) == 0, "pstats_text_header", "got:\n%s", text);
    static const char *const lines[] = {
        /* merged fib: nc 177 + 3, cc 1 + 1, tt 0.26, ct 0.27 */
        "\n    180/2    0.260    0.001    0.270    0.135 app.py:10(fib)\n",
        "\n        1    0.001    0.001    1.500    1.500 app.py:1(<module>)\n",
        "\n       50    0.004    0.000    0.004    0.000 {built-in method builtins.len}\n",
        "\n     1000    0.050    0.000    0.050    0.000 {method 'append' of 'list' objects}\n",
        "\n        0    0.000             0.000          zzz.py:5(never)\n",
        "\n        2    0.300    0.150    0.300    0.150 plain_builtin\n",
        "\n        2    0.002    0.001    0.300    0.150 __init__.py:299(loads)\n",
    };
    for (size_t i = 0; i < SONDE_ARRAY_LEN(lines); i++) {
        char name[64];
        snprintf(name, sizeof name, "pstats_text_line_%zu", i);
        check(strstr(text, lines[i]) != NULL, name, "missing '%s' in:\n%s", lines[i], text);
    }
    check(check_count(text, "app.py:10(fib)") == 1, "pstats_text_strip_dirs_merges",
          "fib listed %d times", check_count(text, "app.py:10(fib)"));
    size_t len = strlen(text);
    check(len > 3 && strcmp(text + len - 3, "\n\n\n") == 0, "pstats_text_ends_with_two_blank_lines",
          "ends with '%s'", len > 8 ? text + len - 8 : text);
    free(text);

    /* without recursion the header has no "primitive calls" part */
    sonde_trace_stats_t one;
    sonde_trace_row_t row;
    fixture_stats(&one, &row, 1);
    text = report(&one, cum, 1);
    check(text && strncmp(text, "         1 function calls in 0.001 seconds\n\n", 44) == 0,
          "pstats_text_header_no_recursion", "got:\n%s", text ? text : "(null)");
    free(text);

    /* nothing recorded: the header only, as print_stats with an empty list */
    one.n_rows = 0;
    text = report(&one, cum, 1);
    check(text && strcmp(text, "         0 function calls in 0.000 seconds\n\n") == 0,
          "pstats_text_empty", "got:\n%s", text ? text : "(null)");
    free(text);

    /* sort_stats() with no key: pstats' "Random listing order" */
    sonde_trace_sort_t none;
    char err[64];
    sonde_buf_t out = SONDE_BUF_INIT;
    check(sonde_trace_sort_words(&none, NULL, 0, err, sizeof err) == 0 &&
              sonde_trace_text_report(stats, &none, &out) == 0 && out.data &&
              strstr(out.data, "   Random listing order was used\n\n   ncalls"),
          "pstats_text_no_sort", "got:\n%s", out.data ? out.data : "(null)");
    sonde_buf_free(&out);
}

/* ---- sort orders -------------------------------------------------------------------
 * Ties keep first-call order (pstats sorts stably); names compare as bytes
 * ('<' before letters, so built-ins' names come first); standard names
 * compare as text, so app.py:1( precedes app.py:10( ('(' < '0'). */

static void test_sort_orders(const sonde_trace_stats_t *stats)
{
    static const struct {
        const char *words[3];
        int n;
        const char *title;
        const char *order; /* the first functions listed */
    } cases[] = {
        {{"tottime"},
         1,
         "internal time",
         "plain_builtin|app.py:10(fib)|{method 'append' of 'list' objects}|"
         "{built-in method builtins.len}|b.py:7(g)"},
        {{"ti"}, 1, "internal time", "plain_builtin|app.py:10(fib)"},
        {{"calls"},
         1,
         "call count",
         "{method 'append' of 'list' objects}|app.py:10(fib)|{built-in method builtins.len}|"
         "b.py:7(g)|c.py:7(loads)"},
        {{"pcalls"},
         1,
         "primitive call count",
         "{method 'append' of 'list' objects}|{built-in method builtins.len}|b.py:7(g)|"
         "c.py:7(loads)|app.py:10(fib)"},
        {{"cumu"},
         1,
         "cumulative time",
         "app.py:1(<module>)|__init__.py:299(loads)|plain_builtin|app.py:10(fib)"},
        {{"name"},
         1,
         "function name",
         "{built-in method builtins.len}|{method 'append' of 'list' objects}|app.py:1(<module>)|"
         "app.py:10(fib)|b.py:7(g)|__init__.py:299(loads)|c.py:7(loads)|zzz.py:5(never)|"
         "plain_builtin"},
        {{"nfl"},
         1,
         "name/file/line",
         "{built-in method builtins.len}|{method 'append' of 'list' objects}|app.py:1(<module>)|"
         "app.py:10(fib)|b.py:7(g)|__init__.py:299(loads)|c.py:7(loads)"},
        {{"file", "line"},
         2,
         "file name, line number",
         "__init__.py:299(loads)|app.py:1(<module>)|app.py:10(fib)|b.py:7(g)|c.py:7(loads)|"
         "zzz.py:5(never)|{built-in method builtins.len}"},
        {{"stdname"},
         1,
         "standard name",
         "__init__.py:299(loads)|app.py:1(<module>)|app.py:10(fib)|b.py:7(g)|c.py:7(loads)|"
         "plain_builtin|zzz.py:5(never)|{built-in method builtins.len}"},
        {{"line", "name"},
         2,
         "line number, function name",
         "{built-in method builtins.len}|{method 'append' of 'list' objects}|plain_builtin|"
         "app.py:1(<module>)|zzz.py:5(never)|b.py:7(g)|c.py:7(loads)|app.py:10(fib)"},
    };
    for (size_t i = 0; i < SONDE_ARRAY_LEN(cases); i++) {
        char name[64], title[300], order[4096];
        snprintf(name, sizeof name, "pstats_sort_%s%s%s", cases[i].words[0],
                 cases[i].n > 1 ? "_" : "", cases[i].n > 1 ? cases[i].words[1] : "");
        char *text = report(stats, cases[i].words, cases[i].n);
        if (!check(text != NULL, name, "sort words refused")) continue;
        snprintf(title, sizeof title, "   Ordered by: %s\n\n", cases[i].title);
        report_order(text, order, sizeof order);
        check(strstr(text, title) && strncmp(order, cases[i].order, strlen(cases[i].order)) == 0,
              name, "want '%s' ordered as %s; got %s", cases[i].title, cases[i].order, order);
        free(text);
    }

    /* pstats' abbreviations: a prefix of two keys is refused */
    static const char *const refused[] = {"c", "cum", "t", "n", "nonsense", ""};
    for (size_t i = 0; i < SONDE_ARRAY_LEN(refused); i++) {
        sonde_trace_sort_t sort;
        char err[64] = "", name[64];
        snprintf(name, sizeof name, "pstats_sort_refuses_%s", refused[i][0] ? refused[i] : "empty");
        int rc = sonde_trace_sort_words(&sort, &refused[i], 1, err, sizeof err);
        check(rc == -EINVAL && strcmp(err, refused[i]) == 0, name, "rc %d err '%s'", rc, err);
    }

    /* the numeric sorts of old: -1 stdname, 0 calls, 1 time, 2 cumulative */
    static const char *const numeric_titles[] = {"standard name", "call count", "internal time",
                                                 "cumulative time"};
    for (long number = -1; number <= 2; number++) {
        sonde_trace_sort_t sort;
        char name[64];
        snprintf(name, sizeof name, "pstats_sort_number_%ld", number);
        int rc = sonde_trace_sort_number(&sort, number);
        check(rc == 0 && strcmp(sort.title, numeric_titles[number + 1]) == 0, name,
              "rc %d title '%s'", rc, sort.title);
    }
    sonde_trace_sort_t sort;
    check(sonde_trace_sort_number(&sort, 3) == -EINVAL &&
              sonde_trace_sort_number(&sort, -2) == -EINVAL,
          "pstats_sort_number_out_of_range", "accepted");
}

/* ---- against Python's pstats ------------------------------------------------------- */

static const char pstats_script[] =
    "import io, pstats, sys\n"
    "out = io.StringIO()\n"
    "st = pstats.Stats(sys.argv[1], stream=out)\n"
    "st.files = []  # loaded from a file: cProfile prints no file name\n"
    "keys = [int(k) if k.lstrip('-').isdigit() else k for k in sys.argv[2:]]\n"
    "st.strip_dirs().sort_stats(*keys).print_stats()\n"
    "sys.stdout.write(out.getvalue())\n";

/* What Python's pstats prints for the file at path, sorted by args
 * (space-separated words). Owned; NULL when Python fails. */
static char *python_report(const char *python, const char *script, const char *path,
                           const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s '%s' '%s' %s", python, script, path, args);
    FILE *p = popen(cmd, "r");
    if (!p) return NULL;
    sonde_buf_t out = SONDE_BUF_INIT;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, p)) > 0)
        sonde_buf_append(&out, chunk, n);
    int status = pclose(p);
    if (status != 0 || sonde_buf_error(&out)) {
        sonde_buf_free(&out);
        return NULL;
    }
    sonde_buf_putc(&out, 0);
    return out.data;
}

static void test_against_python(const sonde_trace_stats_t *stats)
{
    const char *python = check_python();
    char probe[512];
    snprintf(probe, sizeof probe, "%s -c 'import pstats' >/dev/null 2>&1", python);
    if (system(probe) != 0) {
        printf("SKIP pstats_text_matches_python: no %s\n", python);
        return;
    }
    char *dir = check_tempdir();
    char *path = check_path(dir, "stats.prof");
    char *script = check_path(dir, "print_stats.py");
    check_write_file(script, pstats_script, sizeof pstats_script - 1);
    sonde_buf_t file = SONDE_BUF_INIT;
    int rc = sonde_trace_pstats_marshal(stats, &file);
    if (check(rc == 0 && file.data, "pstats_file_written", "rc %d", rc))
        check_write_file(path, file.data, file.len);
    sonde_buf_free(&file);

    static const char *const sorts[] = {
        "cumulative", "tottime", "calls", "pcalls", "name", "nfl", "stdname", "file line",
        "line name",  "ti",      "cumu",  "module", "-1",   "0",   "1",       "2",
    };
    for (size_t i = 0; rc == 0 && i < SONDE_ARRAY_LEN(sorts); i++) {
        char words_text[64], name[80];
        snprintf(words_text, sizeof words_text, "%s", sorts[i]);
        const char *words[3];
        int n_words = 0;
        for (char *w = strtok(words_text, " "); w && n_words < 3; w = strtok(NULL, " "))
            words[n_words++] = w;
        snprintf(name, sizeof name, "pstats_text_matches_python_%s", sorts[i]);
        for (char *c = name; *c; c++)
            if (*c == ' ' || *c == '-') *c = '_';
        char *ours = NULL;
        char *end = NULL;
        long number = strtol(words[0], &end, 10);
        if (end && *end == 0) {
            sonde_trace_sort_t sort;
            sonde_buf_t out = SONDE_BUF_INIT;
            if (sonde_trace_sort_number(&sort, number) == 0 &&
                sonde_trace_text_report(stats, &sort, &out) == 0)
                ours = out.data;
            else
                sonde_buf_free(&out);
        } else {
            ours = report(stats, words, n_words);
        }
        char *theirs = python_report(python, script, path, sorts[i]);
        check(ours && theirs && strcmp(ours, theirs) == 0, name, "ours:\n%s\npstats:\n%s",
              ours ? ours : "(null)", theirs ? theirs : "(python failed)");
        free(ours);
        free(theirs);
    }
    free(script);
    free(path);
    check_rm_rf(dir);
    free(dir);
}

int main(void)
{
    sonde_trace_stats_t stats;
    sonde_trace_row_t rows[N_ROWS];
    fixture_stats(&stats, rows, N_ROWS);
    test_layout(&stats);
    test_sort_orders(&stats);
    test_against_python(&stats);
    return check_exit_code();
}
