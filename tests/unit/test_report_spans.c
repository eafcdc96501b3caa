/* test_report_spans.c — unit tests of one span's text (src/report/spans.c),
 * the entries of `pytest --sonde-per-test`'s summary.
 *
 * Builds a span's profile with known times over a source file written into
 * a temporary directory and checks the text: the first line (wall time,
 * name), the lines of most time in order with their shares of the span's
 * sampled time, paths relative to the working directory, function and
 * source text, the line naming the time outside the profiled files, the
 * limit on lines, clipping to the width, sanitised escape bytes, a span
 * without samples, and failed allocations.
 */
#include "report/report.h"

#define CHECK_WITH_FAILING_MALLOC
#include "check.h"

#define MS 1000000ull

static const char suite_py[] = "import time\n"
                               "\n"
                               "def spin(sec):\n"
                               "    end = time.perf_counter() + sec\n"
                               "    while time.perf_counter() < end: pass\n"
                               "\n"
                               "def test_slow():\n"
                               "    spin(1.0)  # \x1b[31mred\n";

/* 1000 ms sampled: 700 on line 5, 200 on line 8, 50 on line 4, 50 outside. */
static void build(sonde_profile_t *prof, const char *path)
{
    sonde_profile_init(prof);
    sonde_profile_add(prof, path, "spin", 3, 5, 600 * MS, 100 * MS, 0, 70);
    sonde_profile_add(prof, path, "test_slow", 7, 8, 0, 0, 200 * MS, 20);
    sonde_profile_add(prof, path, "spin", 3, 4, 50 * MS, 0, 0, 5);
    sonde_profile_finish(prof);
    prof->unattributed_ns = 50 * MS;
}

static void test_text(const char *dir, const sonde_profile_t *prof)
{
    sonde_buf_t out = SONDE_BUF_INIT;
    int rc = sonde_report_span_text(&out, "test_suite.py::test_slow", 1.004, prof, dir, 3, 200);
    const char *want = "   1.00s  test_suite.py::test_slow\n"
                       "          70.0%  test_suite.py:5 in spin: while time.perf_counter() < "
                       "end: pass\n"
                       "          20.0%  test_suite.py:8 in test_slow: spin(1.0)  # "
                       "\xef\xbf\xbd[31mred\n"
                       "           5.0%  test_suite.py:4 in spin: end = time.perf_counter() + "
                       "sec\n"
                       "           5.0%  outside the profiled files\n";
    check(rc == 0 && out.data && strcmp(out.data, want) == 0, "span_text", "rc %d:\n%s", rc,
          out.data ? out.data : "(null)");
    sonde_buf_free(&out);

    out = (sonde_buf_t)SONDE_BUF_INIT;
    rc = sonde_report_span_text(&out, "t::x", 0.5, prof, "/elsewhere", 1, 200);
    char first[512];
    snprintf(first, sizeof first, "          70.0%%  %s/test_suite.py:5 in spin:", dir);
    check(rc == 0 && out.data && strstr(out.data, first) && !strstr(out.data, "test_suite.py:8") &&
              strstr(out.data, "outside the profiled"),
          "span_text_one_line_absolute_path", "%s", out.data ? out.data : "(null)");
    sonde_buf_free(&out);

    out = (sonde_buf_t)SONDE_BUF_INIT;
    rc = sonde_report_span_text(&out, "test_suite.py::test_slow", 1.0, prof, dir, 3, 10);
    bool fits = rc == 0 && out.data;
    for (const char *line = out.data; fits && *line;) {
        const char *end = strchr(line, '\n');
        size_t bytes = end ? (size_t)(end - line) : strlen(line);
        /* 40 columns at least; the ellipsis is three bytes */
        fits = bytes <= 40 + 2;
        line += bytes + (end ? 1 : 0);
    }
    check(fits, "span_text_clipped", "%s", out.data ? out.data : "(null)");
    sonde_buf_free(&out);

    /* two ids alike up to past the width: each printed whole */
    const char *ids[2] = {"tests/test_flow.py::TestGomoryHuTree::test_karate_gomory_hu_tree",
                          "tests/test_flow.py::TestGomoryHuTree::test_florentine_families"};
    for (int k = 0; k < 2; k++) {
        out = (sonde_buf_t)SONDE_BUF_INIT;
        rc = sonde_report_span_text(&out, ids[k], 1.0, prof, dir, 3, 40);
        check(rc == 0 && out.data && strstr(out.data, ids[k]), "span_text_id_whole", "%s",
              out.data ? out.data : "(null)");
        sonde_buf_free(&out);
    }
}

static void test_empty(void)
{
    sonde_profile_t prof;
    sonde_profile_init(&prof);
    sonde_buf_t out = SONDE_BUF_INIT;
    int rc = sonde_report_span_text(&out, "t.py::test_fast", 0.001, &prof, "/", 3, 100);
    check(rc == 0 && out.data &&
              strcmp(out.data, "   0.00s  t.py::test_fast\n"
                               "          no samples (shorter than the sampling interval)\n") == 0,
          "span_text_no_samples", "%s", out.data ? out.data : "(null)");
    sonde_buf_free(&out);
    sonde_profile_free(&prof);
}

static void test_failing_malloc(const sonde_profile_t *prof, const char *dir)
{
#if CHECK_CAN_FAIL_MALLOC
    bool ok = true;
    for (long n = 0; n < 40 && ok; n++) {
        sonde_buf_t out = SONDE_BUF_INIT;
        check_fail_alloc(n);
        int rc = sonde_report_span_text(&out, "t::x", 1.0, prof, dir, 3, 100);
        check_fail_alloc(-1);
        ok = rc == 0 || rc == -ENOMEM;
        sonde_buf_free(&out);
    }
    check(ok, "span_text_failing_malloc", "an allocation failure gave another error");
#else
    (void)prof;
    (void)dir;
#endif
}

int main(void)
{
    char *dir = check_tempdir();
    char *path = check_path(dir, "test_suite.py");
    check_write_file(path, suite_py, sizeof suite_py - 1);
    sonde_profile_t prof;
    build(&prof, path);
    test_text(dir, &prof);
    test_empty();
    test_failing_malloc(&prof, dir);
    sonde_profile_free(&prof);
    check_rm_rf(dir);
    free(path);
    free(dir);
    return check_exit_code();
}
