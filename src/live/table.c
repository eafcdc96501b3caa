/* table.c — the live view's tables (pure).
 *
 * Owns: the rows of a table built from the last interval's profile and
 * the cumulated one, joined by line or by function; one thread's rows
 * from its stacks; the order; the columns as text (the screen and the
 * plain table draw the same text). Called by view.c and screen.c on the
 * screen's thread and by the producer (plain table); ordinary code, no
 * signal context, no I/O.
 */
#include "live.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TABLE_PCT_W 7    /* " 100.0" plus the sort mark */
#define TABLE_MB_W 10    /* "   12345.6", "ALLOC MB*" with a space */
#define TABLE_WHERE_W 28 /* "file.py:123" or a function's name */

static const char *const table_titles[SONDE_LIVE_N_COLS] = {
    [SONDE_LIVE_COL_NOW] = "NOW%",     [SONDE_LIVE_COL_ALL] = "ALL%",
    [SONDE_LIVE_COL_PYTHON] = "PY%",   [SONDE_LIVE_COL_NATIVE] = "NAT%",
    [SONDE_LIVE_COL_SYSTEM] = "SYS%",  [SONDE_LIVE_COL_ALLOC] = "ALLOC MB",
    [SONDE_LIVE_COL_PEAK] = "PEAK MB",
};

const char *sonde_live_col_title(sonde_live_col_t col)
{
    return col < SONDE_LIVE_N_COLS ? table_titles[col] : "";
}

void sonde_live_rows_free(sonde_live_rows_t *rows)
{
    free(rows->rows);
    memset(rows, 0, sizeof *rows);
}

/* ---- gathering ---------------------------------------------------------------- */

static int table_push(sonde_live_rows_t *rows, const sonde_live_row_t *row)
{
    if (rows->n == rows->cap) {
        size_t cap = rows->cap ? rows->cap * 2 : 256;
        sonde_live_row_t *grown = realloc(rows->rows, cap * sizeof *grown);
        if (!grown) return -ENOMEM;
        rows->rows = grown;
        rows->cap = cap;
    }
    rows->rows[rows->n++] = *row;
    return 0;
}

/* The file of prof named path (files are sorted by path once finished). */
static const sonde_file_stats_t *table_file(const sonde_profile_t *prof, const char *path)
{
    size_t lo = 0, hi = prof->n_files;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(prof->files[mid].path, path);
        if (c == 0) return &prof->files[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* A line of file (lines are sorted by lineno once finished). */
static const sonde_line_stats_t *table_line(const sonde_file_stats_t *file, int lineno)
{
    size_t lo = 0, hi = file->n_lines;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (file->lines[mid].lineno == lineno) return &file->lines[mid];
        if (file->lines[mid].lineno < lineno)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static const char *table_source(const sonde_file_stats_t *file, int lineno)
{
    if (!file || !file->source || lineno < 1 || (size_t)lineno > file->n_source) return NULL;
    return file->source[lineno - 1];
}

/* Sets one window's figures of row. */
static void table_set(sonde_live_row_t *row, bool all, const sonde_ns_t ns[SONDE_N_KINDS],
                      double alloc_mb, double peak_mb)
{
    sonde_ns_t *to = all ? row->all_ns : row->now_ns;
    for (int k = 0; k < SONDE_N_KINDS; k++)
        to[k] = ns[k];
    if (all)
        row->all_alloc_mb = alloc_mb;
    else
        row->now_alloc_mb = alloc_mb;
    row->peak_mb = peak_mb;
}

/* Every line or function of prof, all threads, as rows of one window. */
static int table_gather_profile(sonde_live_rows_t *rows, const sonde_profile_t *prof, bool all,
                                sonde_live_table_t table)
{
    for (size_t f = 0; f < prof->n_files; f++) {
        const sonde_file_stats_t *file = &prof->files[f];
        if (table == SONDE_LIVE_LINES) {
            for (size_t i = 0; i < file->n_lines; i++) {
                const sonde_line_stats_t *line = &file->lines[i];
                sonde_ns_t ns[SONDE_N_KINDS] = {line->python_ns, line->native_ns, line->system_ns};
                sonde_live_row_t row = {.path = file->path,
                                        .func = line->func_name,
                                        .lineno = line->lineno,
                                        .firstlineno = line->func_firstlineno,
                                        .source = table_source(file, line->lineno)};
                table_set(&row, all, ns, line->mem.malloc_mb, line->mem.peak_mb);
                if (table_push(rows, &row) < 0) return -ENOMEM;
            }
        } else {
            for (size_t i = 0; i < file->n_funcs; i++) {
                const sonde_func_stats_t *fn = &file->funcs[i];
                sonde_ns_t ns[SONDE_N_KINDS] = {fn->python_ns, fn->native_ns, fn->system_ns};
                sonde_live_row_t row = {.path = file->path,
                                        .func = fn->name,
                                        .firstlineno = fn->firstlineno,
                                        .source = table_source(file, fn->firstlineno)};
                table_set(&row, all, ns, fn->mem.malloc_mb, fn->mem.peak_mb);
                if (table_push(rows, &row) < 0) return -ENOMEM;
            }
        }
    }
    return 0;
}

int sonde_live_thread_find(const sonde_profile_t *prof, int pid, int tid, const char *name)
{
    for (size_t i = 0; i < prof->n_threads; i++) {
        int ipid = prof->thread_ids ? prof->thread_ids[i].pid : 0;
        int itid = prof->thread_ids ? prof->thread_ids[i].tid : 0;
        if (ipid == pid && itid == tid && strcmp(prof->thread_names[i], name) == 0) return (int)i;
    }
    return -1;
}

/* One thread's rows of one window, from its stacks: each stack's time
 * goes to its innermost frame in a profiled file (a file prof has lines
 * of), as the line figures charge it. */
static int table_gather_thread(sonde_live_rows_t *rows, const sonde_profile_t *prof, bool all,
                               sonde_live_table_t table, int thread)
{
    if (thread < 0) return 0;
    for (size_t s = 0; s < prof->n_stacks; s++) {
        const sonde_stack_t *st = &prof->stacks[s];
        if (st->thread != thread) continue;
        for (uint32_t d = st->depth; d-- > 0;) {
            const sonde_stack_frame_t *fr = &prof->frames[st->frames[d]];
            const sonde_file_stats_t *file = table_file(prof, fr->file);
            if (!file) continue;
            sonde_ns_t ns[SONDE_N_KINDS] = {st->kind_ns[0], st->kind_ns[1], st->kind_ns[2]};
            if (!ns[0] && !ns[1] && !ns[2]) ns[SONDE_KIND_PYTHON] = st->ns;
            const sonde_line_stats_t *line = table_line(file, fr->line);
            int first = line ? line->func_firstlineno : 0;
            sonde_live_row_t row = {.path = file->path,
                                    .func = line ? line->func_name : fr->func,
                                    .lineno = table == SONDE_LIVE_LINES ? fr->line : 0,
                                    .firstlineno = first};
            row.source = table_source(file, table == SONDE_LIVE_LINES ? fr->line : first);
            table_set(&row, all, ns, 0, 0);
            if (table_push(rows, &row) < 0) return -ENOMEM;
            break;
        }
    }
    return 0;
}

/* ---- joining and ordering ------------------------------------------------------------ */

static int table_key_cmp(const void *a, const void *b)
{
    const sonde_live_row_t *x = a, *y = b;
    int c = strcmp(x->path, y->path);
    if (c) return c;
    if (x->lineno != y->lineno) return x->lineno < y->lineno ? -1 : 1;
    if (x->lineno) return 0;
    if (x->firstlineno != y->firstlineno) return x->firstlineno < y->firstlineno ? -1 : 1;
    return strcmp(x->func ? x->func : "", y->func ? y->func : "");
}

/* Joins rows with the same key (sorted by key), adding their figures. */
static void table_join(sonde_live_rows_t *rows)
{
    size_t out = 0;
    for (size_t i = 0; i < rows->n; i++) {
        sonde_live_row_t *r = &rows->rows[i];
        if (out && table_key_cmp(&rows->rows[out - 1], r) == 0) {
            sonde_live_row_t *to = &rows->rows[out - 1];
            for (int k = 0; k < SONDE_N_KINDS; k++) {
                to->now_ns[k] += r->now_ns[k];
                to->all_ns[k] += r->all_ns[k];
            }
            to->now_alloc_mb += r->now_alloc_mb;
            to->all_alloc_mb += r->all_alloc_mb;
            if (r->peak_mb > to->peak_mb) to->peak_mb = r->peak_mb;
            if (!to->source) to->source = r->source;
            continue;
        }
        rows->rows[out++] = *r;
    }
    rows->n = out;
}

static sonde_ns_t table_sum(const sonde_ns_t ns[SONDE_N_KINDS])
{
    return ns[0] + ns[1] + ns[2];
}

static double table_pct(sonde_ns_t part, sonde_ns_t total)
{
    return total ? 100.0 * (double)part / (double)total : 0.0;
}

double sonde_live_row_value(const sonde_live_rows_t *rows, const sonde_live_row_t *row,
                            const sonde_live_query_t *q, sonde_live_col_t col)
{
    const sonde_ns_t *ns = q->cumulated ? row->all_ns : row->now_ns;
    sonde_ns_t total = q->cumulated ? rows->all_total_ns : rows->now_total_ns;
    switch (col) {
    case SONDE_LIVE_COL_NOW:
        return table_pct(table_sum(row->now_ns), rows->now_total_ns);
    case SONDE_LIVE_COL_ALL:
        return table_pct(table_sum(row->all_ns), rows->all_total_ns);
    case SONDE_LIVE_COL_PYTHON:
        return table_pct(ns[SONDE_KIND_PYTHON], total);
    case SONDE_LIVE_COL_NATIVE:
        return table_pct(ns[SONDE_KIND_NATIVE], total);
    case SONDE_LIVE_COL_SYSTEM:
        return table_pct(ns[SONDE_KIND_SYSTEM], total);
    case SONDE_LIVE_COL_ALLOC:
        return q->cumulated ? row->all_alloc_mb : row->now_alloc_mb;
    case SONDE_LIVE_COL_PEAK:
        return row->peak_mb;
    default:
        return 0;
    }
}

/* qsort has no argument: the order's context, set by sonde_live_rows_build
 * around its one qsort (the screen's thread is the only caller that
 * sorts, and the plain table's producer never runs beside it). */
static _Thread_local const sonde_live_rows_t *table_order_rows;
static _Thread_local const sonde_live_query_t *table_order_q;

static int table_order_cmp(const void *a, const void *b)
{
    const sonde_live_row_t *x = a, *y = b;
    double vx = sonde_live_row_value(table_order_rows, x, table_order_q, table_order_q->sort);
    double vy = sonde_live_row_value(table_order_rows, y, table_order_q, table_order_q->sort);
    if (vx != vy) return vx > vy ? -1 : 1;
    /* then by the other window's time, then by place */
    double tx = sonde_live_row_value(table_order_rows, x, table_order_q, SONDE_LIVE_COL_ALL);
    double ty = sonde_live_row_value(table_order_rows, y, table_order_q, SONDE_LIVE_COL_ALL);
    if (tx != ty) return tx > ty ? -1 : 1;
    return table_key_cmp(x, y);
}

int sonde_live_rows_build(sonde_live_rows_t *rows, const sonde_profile_t *now,
                          const sonde_profile_t *all, const sonde_live_query_t *q)
{
    rows->n = 0;
    rows->now_total_ns = rows->all_total_ns = 0;
    rows->memory = all->has_memory && q->thread < 0;
    rows->one_thread = q->thread >= 0;
    int rc = 0;
    if (q->thread < 0) {
        if (now) rc = table_gather_profile(rows, now, false, q->table);
        if (rc == 0) rc = table_gather_profile(rows, all, true, q->table);
    } else if (now) {
        rc = table_gather_thread(rows, now, false, q->table, q->thread);
    }
    if (rc < 0) return rc;
    if (rows->n) qsort(rows->rows, rows->n, sizeof *rows->rows, table_key_cmp);
    table_join(rows);
    for (size_t i = 0; i < rows->n; i++) {
        rows->now_total_ns += table_sum(rows->rows[i].now_ns);
        rows->all_total_ns += table_sum(rows->rows[i].all_ns);
    }
    table_order_rows = rows;
    table_order_q = q;
    if (rows->n) qsort(rows->rows, rows->n, sizeof *rows->rows, table_order_cmp);
    table_order_rows = NULL;
    table_order_q = NULL;
    return 0;
}

/* ---- as text ---------------------------------------------------------------------------- */

static const char *table_base(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash && slash[1] ? slash + 1 : path;
}

/* Appends text cut or padded to exactly w columns (bytes: the view's text
 * is cut at a byte, and a cut UTF-8 sequence is dropped whole). */
static void table_cell(sonde_buf_t *out, const char *text, size_t w, bool right)
{
    size_t len = strlen(text);
    if (len > w) {
        len = w;
        while (len && ((unsigned char)text[len] & 0xC0) == 0x80)
            len--;
    }
    size_t pad = w - len;
    if (right)
        for (size_t i = 0; i < pad; i++)
            sonde_buf_putc(out, ' ');
    sonde_buf_append(out, text, len);
    if (!right)
        for (size_t i = 0; i < pad; i++)
            sonde_buf_putc(out, ' ');
}

/* Whether col is shown (memory columns only with memory). */
static bool table_shown(sonde_live_col_t col, bool with_memory)
{
    return with_memory || (col != SONDE_LIVE_COL_ALLOC && col != SONDE_LIVE_COL_PEAK);
}

static size_t table_col_width(sonde_live_col_t col)
{
    return col == SONDE_LIVE_COL_ALLOC || col == SONDE_LIVE_COL_PEAK ? TABLE_MB_W : TABLE_PCT_W;
}

bool sonde_live_col_span(sonde_live_col_t col, bool with_memory, size_t *x, size_t *w)
{
    size_t at = 0;
    for (int c = 0; c < SONDE_LIVE_N_COLS; c++) {
        if (!table_shown((sonde_live_col_t)c, with_memory)) continue;
        if ((sonde_live_col_t)c == col) {
            *x = at;
            *w = table_col_width(col);
            return true;
        }
        at += table_col_width((sonde_live_col_t)c);
    }
    return false;
}

void sonde_live_format_header(sonde_buf_t *out, const sonde_live_query_t *q, bool with_memory,
                              size_t width)
{
    size_t start = out->len;
    char title[32];
    for (int c = 0; c < SONDE_LIVE_N_COLS; c++) {
        if (!table_shown((sonde_live_col_t)c, with_memory)) continue;
        snprintf(title, sizeof title, "%s%s", table_titles[c], (int)q->sort == c ? "*" : "");
        table_cell(out, title, table_col_width((sonde_live_col_t)c), true);
    }
    sonde_buf_puts(out, "  ");
    table_cell(out, q->table == SONDE_LIVE_LINES ? "LINE" : "FUNCTION", TABLE_WHERE_W, false);
    sonde_buf_puts(out, q->table == SONDE_LIVE_LINES ? " SOURCE" : " WHERE");
    if (out->len - start > width) out->len = start + width;
}

void sonde_live_format_row(sonde_buf_t *out, const sonde_live_rows_t *rows,
                           const sonde_live_row_t *row, const sonde_live_query_t *q,
                           bool with_memory, size_t width)
{
    size_t start = out->len;
    char cell[64];
    for (int c = 0; c < SONDE_LIVE_N_COLS; c++) {
        if (!table_shown((sonde_live_col_t)c, with_memory)) continue;
        double v = sonde_live_row_value(rows, row, q, (sonde_live_col_t)c);
        bool mb = c == SONDE_LIVE_COL_ALLOC || c == SONDE_LIVE_COL_PEAK;
        bool unknown = (mb && !rows->memory) ||
                       (rows->one_thread && (c == SONDE_LIVE_COL_ALL || q->cumulated) &&
                        c != SONDE_LIVE_COL_NOW);
        if (unknown)
            snprintf(cell, sizeof cell, "-");
        else
            snprintf(cell, sizeof cell, "%.1f", v);
        table_cell(out, cell, table_col_width((sonde_live_col_t)c), true);
    }
    sonde_buf_puts(out, "  ");
    if (q->table == SONDE_LIVE_LINES)
        snprintf(cell, sizeof cell, "%.48s:%d", table_base(row->path), row->lineno);
    else
        snprintf(cell, sizeof cell, "%.60s", row->func ? row->func : "<module>");
    table_cell(out, cell, TABLE_WHERE_W, false);
    sonde_buf_putc(out, ' ');
    if (q->table == SONDE_LIVE_LINES) {
        const char *src = row->source ? row->source : "";
        while (*src == ' ' || *src == '\t')
            src++;
        sonde_buf_puts(out, src);
    } else {
        snprintf(cell, sizeof cell, "%.48s:%d", table_base(row->path), row->firstlineno);
        sonde_buf_puts(out, cell);
    }
    if (out->len - start > width) {
        size_t len = width;
        while (len && ((unsigned char)out->data[start + len] & 0xC0) == 0x80)
            len--;
        out->len = start + len;
    }
}

void sonde_live_format_plain(sonde_buf_t *out, const char *title, double from_sec, double to_sec,
                             const sonde_live_rows_t *rows, const sonde_live_query_t *q,
                             size_t max_rows, size_t width)
{
    sonde_buf_printf(out, "%s  %.1f-%.1f s  (NOW: this interval, ALL: since the start)\n", title,
                     from_sec, to_sec);
    sonde_live_format_header(out, q, rows->memory, width);
    sonde_buf_putc(out, '\n');
    for (size_t i = 0; i < rows->n && i < max_rows; i++) {
        sonde_live_format_row(out, rows, &rows->rows[i], q, rows->memory, width);
        sonde_buf_putc(out, '\n');
    }
    if (!rows->n) sonde_buf_puts(out, "(no samples on the program's lines yet)\n");
    sonde_buf_putc(out, '\n');
}
