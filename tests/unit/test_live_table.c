/* test_live_table.c — the live view's tables (src/live/table.c): the rows
 * of the last interval and of the sum joined by line and by function,
 * shares of each window, one thread's rows from its stacks (charged to the
 * innermost frame in a profiled file), the order by each column, and the
 * text cut to a width without splitting a UTF-8 character. */
#include "check.h"
#include "live/live.h"

#include <stdio.h>
#include <string.h>

#define MS 1000000ull

/* A profile of app.py: line 10 (func hot, first line 9) and line 20
 * (func wait, first line 19), with the given times (ms) by kind. */
static void make_profile(sonde_profile_t *p, unsigned hot_py, unsigned hot_nat, unsigned wait_sys)
{
    sonde_profile_init(p);
    sonde_profile_add(p, "/src/app.py", "hot", 9, 10, hot_py * MS, hot_nat * MS, 0, 1);
    if (wait_sys) sonde_profile_add(p, "/src/app.py", "wait", 19, 20, 0, 0, wait_sys * MS, 1);
    sonde_profile_finish(p);
}

static const sonde_live_row_t *find_line(const sonde_live_rows_t *rows, int lineno)
{
    for (size_t i = 0; i < rows->n; i++)
        if (rows->rows[i].lineno == lineno) return &rows->rows[i];
    return NULL;
}

static bool near(double a, double b)
{
    return a > b - 0.01 && a < b + 0.01;
}

static void test_join_and_shares(void)
{
    sonde_profile_t now, all;
    make_profile(&now, 30, 10, 0);   /* the last interval: line 10 only */
    make_profile(&all, 60, 20, 120); /* since the start: both lines */
    sonde_live_rows_t rows = {0};
    sonde_live_query_t q = {SONDE_LIVE_LINES, -1, false, SONDE_LIVE_COL_NOW};
    check(sonde_live_rows_build(&rows, &now, &all, &q) == 0 && rows.n == 2, "lines_joined",
          "rc or %zu rows", rows.n);
    const sonde_live_row_t *hot = find_line(&rows, 10), *wait = find_line(&rows, 20);
    check(hot && wait, "both_lines", "missing");
    if (!hot || !wait) goto out;
    check(rows.rows[0].lineno == 10, "sorted_by_now", "first row line %d", rows.rows[0].lineno);
    double now_pct = sonde_live_row_value(&rows, hot, &q, SONDE_LIVE_COL_NOW);
    double all_pct = sonde_live_row_value(&rows, hot, &q, SONDE_LIVE_COL_ALL);
    check(near(now_pct, 100.0) && near(all_pct, 40.0), "window_shares", "now %.2f all %.2f",
          now_pct, all_pct);
    double py = sonde_live_row_value(&rows, hot, &q, SONDE_LIVE_COL_PYTHON);
    double nat = sonde_live_row_value(&rows, hot, &q, SONDE_LIVE_COL_NATIVE);
    check(near(py, 75.0) && near(nat, 25.0), "split_over_last_interval", "py %.2f nat %.2f", py,
          nat);
    q.cumulated = true;
    double wsys = sonde_live_row_value(&rows, wait, &q, SONDE_LIVE_COL_SYSTEM);
    double wnow = sonde_live_row_value(&rows, wait, &q, SONDE_LIVE_COL_NOW);
    check(near(wsys, 60.0) && near(wnow, 0.0), "split_over_all", "sys %.2f now %.2f", wsys, wnow);

    /* sorted by system time (over all): the waiting line first */
    q.sort = SONDE_LIVE_COL_SYSTEM;
    check(sonde_live_rows_build(&rows, &now, &all, &q) == 0 && rows.n == 2 &&
              rows.rows[0].lineno == 20,
          "sorted_by_system", "first row line %d", rows.n ? rows.rows[0].lineno : -1);

    /* functions */
    q = (sonde_live_query_t){SONDE_LIVE_FUNCS, -1, false, SONDE_LIVE_COL_ALL};
    check(sonde_live_rows_build(&rows, &now, &all, &q) == 0 && rows.n == 2 &&
              strcmp(rows.rows[0].func, "wait") == 0 && rows.rows[0].lineno == 0 &&
              rows.rows[0].firstlineno == 19,
          "functions_sorted_by_all", "%zu rows, first %s", rows.n,
          rows.n ? rows.rows[0].func : "-");
    /* no interval yet */
    q.sort = SONDE_LIVE_COL_NOW;
    check(sonde_live_rows_build(&rows, NULL, &all, &q) == 0 && rows.n == 2 &&
              rows.now_total_ns == 0,
          "no_interval_yet", "%zu rows", rows.n);
out:
    sonde_live_rows_free(&rows);
    sonde_profile_free(&now);
    sonde_profile_free(&all);
}

/* Two threads' stacks: a thread's rows are its own in the last
 * interval, charged to the innermost frame of a profiled file (lib.py is
 * not one); the sum keeps no thread apart. */
static void test_thread_rows(void)
{
    sonde_profile_t all;
    make_profile(&all, 60, 20, 120);
    int main_t = sonde_profile_thread_of(&all, "MainThread", 100, 100);
    int worker = sonde_profile_thread_of(&all, "worker", 100, 101);
    sonde_stack_frame_t hot[] = {{"<module>", "/src/app.py", 30},
                                 {"hot", "/src/app.py", 10},
                                 {"helper", "/usr/lib/lib.py", 5}};
    sonde_stack_frame_t wait[] = {{"run", "/usr/lib/threading.py", 1}, {"wait", "/src/app.py", 20}};
    sonde_ns_t hot_kinds[3] = {60 * MS, 20 * MS, 0}, wait_kinds[3] = {0, 0, 120 * MS};
    check(main_t >= 0 && worker >= 0 &&
              sonde_profile_add_stack_kinds(&all, hot, 3, main_t, 8, hot_kinds) == 0 &&
              sonde_profile_add_stack_kinds(&all, wait, 2, worker, 12, wait_kinds) == 0,
          "stacks_added", "rc");
    /* the interval: the same threads, in the other order */
    sonde_profile_t now;
    sonde_profile_init(&now);
    int w2 = sonde_profile_thread_of(&now, "worker", 100, 101);
    int m2 = sonde_profile_thread_of(&now, "MainThread", 100, 100);
    sonde_ns_t wait_now[3] = {0, 0, 7 * MS}, hot_now[3] = {3 * MS, 0, 0};
    sonde_profile_add(&now, "/src/app.py", "hot", 9, 10, 3 * MS, 0, 0, 1);
    sonde_profile_add(&now, "/src/app.py", "wait", 19, 20, 0, 0, 7 * MS, 1);
    sonde_profile_add_stack_kinds(&now, wait, 2, w2, 1, wait_now);
    sonde_profile_add_stack_kinds(&now, hot, 3, m2, 1, hot_now);
    sonde_profile_finish(&now);

    sonde_live_rows_t rows = {0};
    /* a thread is found in the interval by its ids and name (its index
     * there differs from the sum's) */
    int w_now = sonde_live_thread_find(&now, 100, 101, "worker");
    int m_now = sonde_live_thread_find(&now, 100, 100, "MainThread");
    check(w_now == w2 && m_now == m2 && sonde_live_thread_find(&now, 100, 102, "worker") == -1 &&
              sonde_live_thread_find(&now, 100, 101, "other") == -1,
          "thread_found_by_ids_and_name", "%d %d", w_now, m_now);
    sonde_live_query_t q = {SONDE_LIVE_LINES, w_now, false, SONDE_LIVE_COL_NOW};
    check(sonde_live_rows_build(&rows, &now, &all, &q) == 0 && rows.n == 1 &&
              rows.rows[0].lineno == 20 && rows.rows[0].now_ns[SONDE_KIND_SYSTEM] == 7 * MS &&
              rows.rows[0].all_ns[SONDE_KIND_SYSTEM] == 0 && rows.one_thread,
          "worker_rows_only", "%zu rows", rows.n);
    check(!rows.memory, "thread_rows_have_no_memory", "memory shown");
    sonde_buf_t text = SONDE_BUF_INIT;
    sonde_live_format_row(&text, &rows, &rows.rows[0], &q, false, 200);
    sonde_buf_putc(&text, 0);
    check(strncmp(text.data, "  100.0      -", 14) == 0, "thread_all_column_unknown", "'%s'",
          text.data);
    sonde_buf_free(&text);
    q.thread = m_now;
    check(sonde_live_rows_build(&rows, &now, &all, &q) == 0 && rows.n == 1 &&
              rows.rows[0].lineno == 10 && rows.rows[0].now_ns[SONDE_KIND_PYTHON] == 3 * MS,
          "innermost_profiled_frame", "%zu rows, line %d", rows.n,
          rows.n ? rows.rows[0].lineno : -1);
    q.table = SONDE_LIVE_FUNCS;
    check(sonde_live_rows_build(&rows, &now, &all, &q) == 0 && rows.n == 1 &&
              strcmp(rows.rows[0].func, "hot") == 0 && rows.rows[0].firstlineno == 9,
          "thread_function_rows", "%zu rows", rows.n);
    q.thread = w_now;
    check(sonde_live_rows_build(&rows, NULL, &all, &q) == 0 && rows.n == 0,
          "thread_rows_need_an_interval", "%zu rows", rows.n);
    sonde_live_rows_free(&rows);
    sonde_profile_free(&now);
    sonde_profile_free(&all);
}

static void test_text(void)
{
    sonde_profile_t all;
    sonde_profile_init(&all);
    sonde_profile_add(&all, "/src/app.py", "f", 1, 2, 10 * MS, 0, 0, 1);
    sonde_profile_finish(&all);
    /* a source line with a character of two bytes at the cut */
    char *src[] = {"def f():", "    x = 'ééééééééééééé'"};
    all.files[0].source = src;
    all.files[0].n_source = 2;
    sonde_live_rows_t rows = {0};
    sonde_live_query_t q = {SONDE_LIVE_LINES, -1, false, SONDE_LIVE_COL_PYTHON};
    sonde_buf_t out = SONDE_BUF_INIT;
    check(sonde_live_rows_build(&rows, &all, &all, &q) == 0 && rows.n == 1, "one_row", "%zu",
          rows.n);
    sonde_live_format_header(&out, &q, false, 200);
    sonde_buf_putc(&out, 0);
    check(strstr(out.data, "PY%*") != NULL && strstr(out.data, "ALLOC") == NULL &&
              strstr(out.data, "SOURCE") != NULL,
          "header_marks_sort", "'%s'", out.data);
    sonde_buf_reset(&out);
    sonde_live_format_row(&out, &rows, &rows.rows[0], &q, false, 200);
    sonde_buf_putc(&out, 0);
    check(strstr(out.data, "app.py:2") && strstr(out.data, "x = 'éé") && out.data[0] == ' ',
          "row_text", "'%s'", out.data);
    size_t full = strlen(out.data);
    bool whole = true;
    for (size_t w = full - 12; w < full; w++) {
        sonde_buf_reset(&out);
        sonde_live_format_row(&out, &rows, &rows.rows[0], &q, false, w);
        if (out.len > w || (out.len && ((unsigned char)out.data[out.len - 1] & 0xE0) == 0xC0))
            whole = false;
    }
    check(whole, "cut_keeps_characters_whole", "a cut split a character or overran");
    size_t x, w;
    check(sonde_live_col_span(SONDE_LIVE_COL_NATIVE, false, &x, &w) && x == 21 && w == 7 &&
              !sonde_live_col_span(SONDE_LIVE_COL_PEAK, false, &x, &w) &&
              sonde_live_col_span(SONDE_LIVE_COL_PEAK, true, &x, &w) && x == 45,
          "column_spans", "x %zu w %zu", x, w);
    all.files[0].source = NULL;
    all.files[0].n_source = 0;
    sonde_buf_free(&out);
    sonde_live_rows_free(&rows);
    sonde_profile_free(&all);
}

int main(void)
{
    test_join_and_shares();
    test_thread_rows();
    test_text();
    return check_exit_code();
}
