/* text.c — the terminal report (sonde_report_text).
 *
 * Owns: the layout of the report a user sees when the program exits: a
 * header for the run, then per file (hottest first) a table of lines —
 * Line | one cell per titled column of sonde__columns | time bar | source —
 * and a table of functions; a partial profile (sonde_partial_t) says so in
 * one header line. Figures are percentages of the run's total
 * time, the same numbers as the JSON report. Called by the CLI and the
 * extension after sampling has stopped; never in a signal handler.
 */
#include "report_internal.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEXT_DEFAULT_THRESHOLD 1.0
#define TEXT_DEFAULT_WIDTH 100
#define TEXT_MIN_WIDTH 40
#define TEXT_MAX_WIDTH 1000
#define TEXT_GAP 2          /* spaces between columns */
#define TEXT_CELL_MIN 6     /* "100.0%" */
#define TEXT_LINE_MIN 4     /* "Line" */
#define TEXT_BAR_MAX 10     /* the bar's cells: a full bar is 100% of the time */
#define TEXT_SOURCE_MIN 30  /* columns kept for source text before the bar goes */
#define TEXT_PATH_MIN 16    /* columns a shortened path keeps at least */
#define TEXT_MAX_COLUMNS 32 /* bound on sonde__n_columns for local arrays */
#define TEXT_SGR_TITLE "1"
#define TEXT_SGR_DIM "2"
#define TEXT_MARKER "..."
#define TEXT_SPARK_W 10 /* a line's memory timeline (--memory) */
#define TEXT_SPARK_TITLE "timeline"
#define TEXT_RUN_SPARK_W 30 /* the program's footprint in the header */

#define TEXT_NO_SAMPLES "sonde: no samples: the program ran for less than one sampling interval\n"
/* Where time outside the profiled files shows, named when it is most of
 * the time (at least this share) or all of it. */
#define TEXT_OUTSIDE_HINT_PERCENT 50.0
#define TEXT_OUTSIDE_HINT                                                                          \
    "see it with --profile-all (every file) or --profile-only PAT (files whose path contains PAT)"

void sonde_text_opts_default(sonde_text_opts_t *opts)
{
    opts->cpu_percent_threshold = TEXT_DEFAULT_THRESHOLD;
    opts->all_lines = false;
    opts->color = false;
    opts->width = TEXT_DEFAULT_WIDTH;
}

typedef struct text_ctx {
    const sonde_profile_t *prof; /* borrowed */
    sonde_buf_t *out;            /* borrowed; where lines go */
    sonde__tline_t tl;           /* owned; the line being built */
    int width;
    double threshold; /* percent of total_ns */
    bool all_lines;
} text_ctx_t;

/* Column widths of one file's tables. */
typedef struct text_layout {
    int line_w; /* the Line column */
    int bar_w;  /* the time bar; 0 when the width leaves no room */
} text_layout_t;

static void text_end_line(text_ctx_t *ctx)
{
    sonde__tline_end(&ctx->tl, ctx->out, ctx->width);
}

static int text_cell_width(const sonde__column_t *col)
{
    int w = sonde__text_width(col->title);
    return w > TEXT_CELL_MIN ? w : TEXT_CELL_MIN;
}

static int text_digits(long long v)
{
    int digits = v < 0 ? 2 : 1;
    while (v >= 10 || v <= -10) {
        v /= 10;
        digits++;
    }
    return digits;
}

static text_layout_t text_layout_for(const text_ctx_t *ctx, long long max_lineno)
{
    text_layout_t lay;
    int digits = text_digits(max_lineno);
    lay.line_w = digits > TEXT_LINE_MIN ? digits : TEXT_LINE_MIN;
    int fixed = lay.line_w + TEXT_GAP;
    for (size_t i = 0; i < sonde__n_columns; i++)
        if (sonde__columns[i].title && sonde__column_shown(&sonde__columns[i], ctx->prof))
            fixed += TEXT_GAP + text_cell_width(&sonde__columns[i]);
    if (ctx->prof->has_memory) fixed += TEXT_GAP + TEXT_SPARK_W;
    int room = ctx->width - fixed - TEXT_SOURCE_MIN - TEXT_GAP;
    lay.bar_w = room < 3 ? 0 : room < TEXT_BAR_MAX ? room : TEXT_BAR_MAX;
    return lay;
}

/* ---- cells -------------------------------------------------------------- */

static void text_format_cell(const text_ctx_t *ctx, const sonde__column_t *col,
                             const sonde__row_t *row, char *cell, size_t size)
{
    cell[0] = 0;
    if (!sonde__column_applies(col, ctx->prof, row)) return;
    double v = col->value(col, row, ctx->prof);
    if (!(v > 0)) return; /* zero figures stay blank, as in Scalene */
    if (col->unit == SONDE__UNIT_PERCENT) {
        if (v < 0.05)
            snprintf(cell, size, "<0.1%%");
        else
            snprintf(cell, size, "%.1f%%", v);
    } else if (col->unit == SONDE__UNIT_FRACTION) {
        snprintf(cell, size, v < 0.005 ? "<1%%" : "%.0f%%", 100 * v);
    } else if (col->unit == SONDE__UNIT_LEVEL_PERCENT) {
        snprintf(cell, size, v < 0.5 ? "<1%%" : "%.0f%%", v);
    } else if (col->unit == SONDE__UNIT_MB || col->unit == SONDE__UNIT_MB_S) {
        if (v < 0.05)
            snprintf(cell, size, "<0.1");
        else
            snprintf(cell, size, v < 1000 ? "%.1f" : "%.0f", v);
    } else {
        snprintf(cell, size, "%.0f", v);
    }
}

/* The row's share of the run as a stacked bar: one segment per column with
 * a bar glyph, TEXT_BAR_MAX cells = 100%; cells go to segments by largest
 * remainder so that they add up to the rounded total. */
static void text_bar(text_ctx_t *ctx, const sonde__row_t *row, int bar_w)
{
    int cells[TEXT_MAX_COLUMNS] = {0};
    double remainder[TEXT_MAX_COLUMNS] = {0};
    double exact_total = 0;
    int have = 0;
    size_t n_columns = sonde__n_columns;
    sonde_assert(n_columns <= TEXT_MAX_COLUMNS);
    if (n_columns > TEXT_MAX_COLUMNS) n_columns = TEXT_MAX_COLUMNS;

    for (size_t i = 0; i < n_columns; i++) {
        const sonde__column_t *col = &sonde__columns[i];
        if (!col->bar_glyph) continue;
        double exact = col->value(col, row, ctx->prof) / 100.0 * bar_w;
        if (!(exact > 0)) continue;
        cells[i] = (int)floor(exact);
        remainder[i] = exact - cells[i];
        exact_total += exact;
        have += cells[i];
    }
    int want = (int)lround(exact_total);
    if (want > bar_w) want = bar_w;
    while (have < want) {
        size_t best = 0;
        for (size_t i = 1; i < n_columns; i++)
            if (remainder[i] > remainder[best]) best = i;
        if (!(remainder[best] > 0)) break;
        cells[best]++;
        remainder[best] = -1;
        have++;
    }
    for (size_t i = 0; i < n_columns; i++) {
        if (cells[i] <= 0) continue;
        sonde__tline_sgr(&ctx->tl, sonde__columns[i].sgr);
        for (int c = 0; c < cells[i]; c++)
            sonde__tline_text(&ctx->tl, sonde__columns[i].bar_glyph);
        sonde__tline_sgr(&ctx->tl, NULL);
    }
}

/* --memory: the line's live bytes over time as a sparkline cell, on the
 * scale of the program's peak of live heap. */
static void text_spark_cell(text_ctx_t *ctx, const sonde__row_t *row)
{
    sonde__tline_t *tl = &ctx->tl;
    char spark[4 * TEXT_SPARK_W + 1] = "";
    sonde__tline_pad_to(tl, tl->col + TEXT_GAP);
    int end = tl->col + TEXT_SPARK_W;
    if (row && row->mem)
        sonde__sparkline(&row->mem->timeline,
                         ctx->prof->heap_peak_mb > 0 ? ctx->prof->heap_peak_mb
                                                     : ctx->prof->max_footprint_mb,
                         TEXT_SPARK_W, spark, sizeof spark);
    if (spark[0]) {
        sonde__tline_sgr(tl, "34");
        sonde__tline_text(tl, spark);
        sonde__tline_sgr(tl, NULL);
    }
    sonde__tline_pad_to(tl, end);
}

/* One table row: label in the Line column, the figures (none when row is
 * NULL), the bar, then text. Dim rows (context, markers) are drawn faint. */
static void text_row(text_ctx_t *ctx, const text_layout_t *lay, const char *label,
                     const sonde__row_t *row, const char *text, bool dim)
{
    sonde__tline_t *tl = &ctx->tl;
    if (dim) sonde__tline_sgr(tl, TEXT_SGR_DIM);
    sonde__tline_right(tl, label, lay->line_w);
    for (size_t i = 0; i < sonde__n_columns; i++) {
        const sonde__column_t *col = &sonde__columns[i];
        if (!col->title || !sonde__column_shown(col, ctx->prof)) continue;
        int cell_w = text_cell_width(col);
        sonde__tline_pad_to(tl, tl->col + TEXT_GAP);
        char cell[32] = "";
        if (row) text_format_cell(ctx, col, row, cell, sizeof cell);
        if (cell[0]) {
            sonde__tline_sgr(tl, col->sgr);
            sonde__tline_right(tl, cell, cell_w);
            sonde__tline_sgr(tl, NULL);
        } else {
            sonde__tline_pad_to(tl, tl->col + cell_w);
        }
    }
    if (ctx->prof->has_memory) text_spark_cell(ctx, row);
    if (lay->bar_w) {
        sonde__tline_pad_to(tl, tl->col + TEXT_GAP);
        int bar_end = tl->col + lay->bar_w;
        if (row) text_bar(ctx, row, lay->bar_w);
        sonde__tline_pad_to(tl, bar_end);
    }
    sonde__tline_pad_to(tl, tl->col + TEXT_GAP);
    if (text) sonde__tline_text(tl, text);
    text_end_line(ctx);
}

static void text_heading(text_ctx_t *ctx, const text_layout_t *lay, const char *last)
{
    sonde__tline_t *tl = &ctx->tl;
    sonde__tline_sgr(tl, TEXT_SGR_TITLE);
    sonde__tline_right(tl, "Line", lay->line_w);
    for (size_t i = 0; i < sonde__n_columns; i++) {
        const sonde__column_t *col = &sonde__columns[i];
        if (!col->title || !sonde__column_shown(col, ctx->prof)) continue;
        char sgr[32];
        snprintf(sgr, sizeof sgr, "%s;%s", TEXT_SGR_TITLE, col->sgr ? col->sgr : "39");
        sonde__tline_sgr(tl, sgr);
        sonde__tline_pad_to(tl, tl->col + TEXT_GAP);
        sonde__tline_right(tl, col->title, text_cell_width(col));
    }
    sonde__tline_sgr(tl, TEXT_SGR_TITLE);
    if (ctx->prof->has_memory) {
        sonde__tline_pad_to(tl, tl->col + TEXT_GAP);
        int end = tl->col + TEXT_SPARK_W;
        sonde__tline_text(tl, TEXT_SPARK_TITLE);
        sonde__tline_pad_to(tl, end);
    }
    if (lay->bar_w) sonde__tline_pad_to(tl, tl->col + TEXT_GAP + lay->bar_w);
    sonde__tline_pad_to(tl, tl->col + TEXT_GAP);
    sonde__tline_text(tl, last);
    sonde__tline_sgr(tl, NULL);
    text_end_line(ctx);
}

/* ---- the run's header --------------------------------------------------- */

/* Appends a program argument, quoted for a POSIX shell when it needs it. */
static void text_put_arg(sonde__tline_t *tl, const char *arg)
{
    static const char plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                "0123456789_@%+=:,./-";
    if (arg[0] && strspn(arg, plain) == strlen(arg)) {
        sonde__tline_text(tl, arg);
        return;
    }
    sonde_buf_t quoted = SONDE_BUF_INIT;
    sonde_buf_putc(&quoted, '\'');
    for (const char *p = arg; *p; p++) {
        if (*p == '\'')
            sonde_buf_puts(&quoted, "'\\''");
        else
            sonde_buf_putc(&quoted, *p);
    }
    sonde_buf_putc(&quoted, '\'');
    if (sonde_buf_error(&quoted))
        tl->text.error = sonde_buf_error(&quoted);
    else
        sonde__tline_text(tl, quoted.data);
    sonde_buf_free(&quoted);
}

/* --memory: the program's peak footprint, where it was reached, and its
 * footprint over the run. */
static void text_memory_header(text_ctx_t *ctx)
{
    const sonde_profile_t *prof = ctx->prof;
    sonde__tline_t *tl = &ctx->tl;
    char spark[4 * TEXT_RUN_SPARK_W + 1] = "";
    sonde__tline_sgr(tl, "34");
    sonde__tline_printf(tl, "memory: peak footprint %.1f MB", prof->max_footprint_mb);
    sonde__tline_sgr(tl, NULL);
    if (prof->max_footprint_file) {
        const char *base = strrchr(prof->max_footprint_file, '/');
        sonde__tline_printf(tl, " at %s:%d", base ? base + 1 : prof->max_footprint_file,
                            prof->max_footprint_lineno);
    }
    sonde__tline_printf(tl, ", grew %+.1f%% over the run; live heap peak %.1f MB",
                        sonde__memory_growth_percent(prof), prof->heap_peak_mb);
    sonde__sparkline(&prof->footprint, prof->max_footprint_mb, TEXT_RUN_SPARK_W, spark,
                     sizeof spark);
    if (spark[0]) {
        sonde__tline_text(tl, "  ");
        sonde__tline_sgr(tl, "34");
        sonde__tline_text(tl, spark);
        sonde__tline_sgr(tl, NULL);
    }
    text_end_line(ctx);
}

/* Each source that ran (src/model/figures.h): its figures over the run, in
 * its colour, and what it read (the devices, and whose figures). */
static void text_fig_headers(text_ctx_t *ctx)
{
    const sonde_profile_t *prof = ctx->prof;
    sonde__tline_t *tl = &ctx->tl;
    sonde_figs_t totals = sonde__figs_totals(prof);
    for (unsigned s = 0; s < SONDE_N_FIGSRCS; s++) {
        const sonde_fig_source_t *src = &sonde_fig_sources[s];
        if (!prof->fig_runs[s].present || !src->header) continue;
        sonde_buf_t shown = SONDE_BUF_INIT, plain = SONDE_BUF_INIT;
        src->header(&shown, &plain, totals.v + src->first, &prof->fig_runs[s]);
        if (!sonde_buf_error(&shown) && !sonde_buf_error(&plain) && shown.len) {
            sonde__tline_sgr(tl, src->sgr);
            sonde__tline_text(tl, shown.data);
            sonde__tline_sgr(tl, NULL);
            if (plain.len) sonde__tline_text(tl, plain.data);
            text_end_line(ctx);
        }
        sonde_buf_free(&shown);
        sonde_buf_free(&plain);
    }
}

/* One line naming what a partial profile misses (the non-zero counts). */
static void text_partial(text_ctx_t *ctx)
{
    const sonde_partial_t *p = &ctx->prof->partial;
    sonde__tline_t *tl = &ctx->tl;
    const struct {
        uint64_t count;
        const char *one, *many;
    } parts[] = {
        {p->failed_reads, "failed stack read", "failed stack reads"},
        {p->dropped_samples, "dropped sample", "dropped samples"},
        {p->threads_left_out, "thread sample left out", "thread samples left out"},
        {p->frames_left_out, "frame left out", "frames left out"},
        {p->processes_lost, "process lost", "processes lost"},
        {p->processes_running, "process still running", "processes still running"},
    };
    const char *sep = ": ";
    sonde__tline_sgr(tl, "33");
    sonde__tline_text(tl, "partial profile");
    for (size_t i = 0; i < SONDE_ARRAY_LEN(parts); i++) {
        if (!parts[i].count) continue;
        sonde__tline_printf(tl, "%s%llu %s", sep, (unsigned long long)parts[i].count,
                            parts[i].count == 1 ? parts[i].one : parts[i].many);
        sep = ", ";
    }
    sonde__tline_sgr(tl, NULL);
    text_end_line(ctx);
}

/* The processes of a merged profile: one row each (only with more than
 * one; time shares elsewhere are of all of them together). */
static void text_processes(text_ctx_t *ctx)
{
    const sonde_profile_t *prof = ctx->prof;
    sonde__tline_t *tl = &ctx->tl;
    text_end_line(ctx);
    sonde__tline_sgr(tl, TEXT_SGR_DIM);
    sonde__tline_text(tl, "    PID    PPID    CPU s   wall s  peak MB  command");
    sonde__tline_sgr(tl, NULL);
    text_end_line(ctx);
    for (size_t i = 0; i < prof->n_processes; i++) {
        const sonde_process_t *p = &prof->processes[i];
        sonde__tline_printf(tl, "%7d %7d %8.3f %8.3f %8.1f  ", p->pid, p->ppid, p->cpu_sec,
                            p->wall_sec, p->peak_mb);
        sonde__tline_text(tl, p->cmdline ? p->cmdline : "");
        if (!p->complete) sonde__tline_text(tl, " (part of its run)");
        text_end_line(ctx);
    }
}

static void text_header(text_ctx_t *ctx)
{
    const sonde_profile_t *prof = ctx->prof;
    sonde__tline_t *tl = &ctx->tl;

    sonde__tline_sgr(tl, TEXT_SGR_TITLE);
    sonde__tline_text(tl, "sonde " SONDE_VERSION ": ");
    sonde__tline_text(tl, prof->program ? prof->program : "(unknown program)");
    for (int i = 1; i < prof->argc; i++) { /* argv[0] is the program itself */
        sonde__tline_text(tl, " ");
        text_put_arg(tl, prof->argv[i] ? prof->argv[i] : "");
    }
    sonde__tline_sgr(tl, NULL);
    text_end_line(ctx);

    if (prof->python_version) sonde__tline_printf(tl, "Python %s, ", prof->python_version);
    sonde__tline_printf(tl, "%.3f s elapsed, %llu samples", prof->elapsed_sec,
                        (unsigned long long)prof->samples);
    if (prof->interval_sec > 0) sonde__tline_printf(tl, " every %g ms", prof->interval_sec * 1e3);
    sonde__tline_text(tl, prof->virtual_time ? " (CPU time only)" : " (wall clock)");
    text_end_line(ctx);

    sonde__row_t total = sonde__row_of_profile(prof);
    sonde__tline_printf(tl, "%.3f s profiled:", (double)prof->total_ns / SONDE_NS_PER_SEC);
    const char *sep = " ";
    for (size_t i = 0; i < sonde__n_columns; i++) {
        const sonde__column_t *col = &sonde__columns[i];
        if (!col->title || col->unit != SONDE__UNIT_PERCENT) continue;
        sonde__tline_text(tl, sep);
        sonde__tline_sgr(tl, col->sgr);
        sonde__tline_printf(tl, "%s %.1f%%", col->title, col->value(col, &total, prof));
        sonde__tline_sgr(tl, NULL);
        sep = ", ";
    }
    text_end_line(ctx);
    if (prof->unattributed_ns) {
        double outside =
            sonde__percent(prof->unattributed_ns, prof->total_ns + prof->unattributed_ns);
        sonde__tline_printf(tl, "%.1f%% of the sampled time was outside profiled files (not shown)",
                            outside);
        text_end_line(ctx);
        if (!prof->profile_all && outside >= TEXT_OUTSIDE_HINT_PERCENT) {
            sonde__tline_text(tl, "  " TEXT_OUTSIDE_HINT);
            text_end_line(ctx);
        }
    }
    if (prof->n_processes > 1) {
        sonde__tline_printf(tl, "%zu processes profiled; shares are of all their time together",
                            prof->n_processes);
        text_end_line(ctx);
    }
    if (sonde_partial_any(&prof->partial)) text_partial(ctx);
    if (prof->has_memory) text_memory_header(ctx);
    text_fig_headers(ctx);
    if (prof->n_processes > 1) text_processes(ctx);
}

/* ---- one file ----------------------------------------------------------- */

static const char *text_source_at(const sonde_file_stats_t *file, int lineno)
{
    if (!file->source || lineno < 1 || (size_t)lineno > file->n_source) return NULL;
    return file->source[lineno - 1];
}

static bool text_line_hot(const text_ctx_t *ctx, const sonde_line_stats_t *line)
{
    sonde__row_t row = sonde__row_of_line(line);
    if (sonde__row_share(&row, ctx->prof) >= ctx->threshold) return true;
    /* --memory: also the lines with a share of the memory allocated (the
     * same threshold), and likely leaks. */
    return ctx->prof->has_memory &&
           (sonde__memory_is_leak(&line->mem) ||
            (line->mem.malloc_mb > 0 &&
             100 * sonde__memory_usage_fraction(&line->mem, ctx->prof) >= ctx->threshold));
}

/* Whether a file has a line shown for its memory alone. */
static bool text_file_hot_memory(const text_ctx_t *ctx, const sonde_file_stats_t *file)
{
    if (!ctx->prof->has_memory) return false;
    for (size_t i = 0; i < file->n_lines; i++)
        if (text_line_hot(ctx, &file->lines[i])) return true;
    return false;
}

static void text_file_header(text_ctx_t *ctx, const sonde_file_stats_t *file)
{
    sonde__tline_t *tl = &ctx->tl;
    char rest[128];
    snprintf(rest, sizeof rest, ": %.1f%% of time (%.3f s)%s",
             sonde__percent(file->total_ns, ctx->prof->total_ns),
             (double)file->total_ns / SONDE_NS_PER_SEC,
             file->source ? "" : "; source not available");
    /* Keep the end of a long path: the file name matters most. */
    int room = ctx->width - sonde__text_width(rest);
    if (room < TEXT_PATH_MIN) room = TEXT_PATH_MIN;
    const char *path = file->path;
    sonde__tline_sgr(tl, TEXT_SGR_TITLE);
    if (sonde__text_width(path) > room) {
        sonde__tline_text(tl, "\xe2\x80\xa6"); /* … */
        path = sonde__text_tail(path, room - 1);
    }
    sonde__tline_text(tl, path);
    sonde__tline_sgr(tl, NULL);
    sonde__tline_text(tl, rest);
    text_end_line(ctx);
}

static int text_cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The line numbers a file's table shows, sorted and unique. */
static int text_pick_lines(const text_ctx_t *ctx, const sonde_file_stats_t *file, int **shown_out,
                           size_t *n_out)
{
    size_t n_source = file->source ? file->n_source : 0;
    size_t cap = (ctx->all_lines ? n_source + file->n_lines : 3 * file->n_lines) + 1;
    int *shown = malloc(cap * sizeof *shown);
    size_t n = 0;
    *shown_out = NULL;
    *n_out = 0;
    if (!shown) return -ENOMEM;

    if (ctx->all_lines) {
        for (size_t l = 1; l <= n_source; l++)
            shown[n++] = (int)l;
        for (size_t i = 0; i < file->n_lines; i++)
            shown[n++] = file->lines[i].lineno;
    } else {
        for (size_t i = 0; i < file->n_lines; i++) {
            const sonde_line_stats_t *line = &file->lines[i];
            if (!text_line_hot(ctx, line)) continue;
            int l = line->lineno;
            /* Context lines: a source line, or a line with samples. */
            if (l > 1 &&
                ((size_t)(l - 1) <= n_source || (i > 0 && file->lines[i - 1].lineno == l - 1)))
                shown[n++] = l - 1;
            shown[n++] = l;
            if (l >= 0 && l < INT_MAX &&
                ((size_t)l + 1 <= n_source ||
                 (i + 1 < file->n_lines && file->lines[i + 1].lineno == l + 1)))
                shown[n++] = l + 1;
        }
    }
    qsort(shown, n, sizeof *shown, text_cmp_int);
    size_t unique = 0;
    for (size_t i = 0; i < n; i++)
        if (unique == 0 || shown[unique - 1] != shown[i]) shown[unique++] = shown[i];
    *shown_out = shown;
    *n_out = unique;
    return 0;
}

static int text_file_lines(text_ctx_t *ctx, const sonde_file_stats_t *file,
                           const text_layout_t *lay, long long last_line)
{
    int *shown = NULL;
    size_t n_shown = 0;
    int rc = text_pick_lines(ctx, file, &shown, &n_shown);
    if (rc) return rc;

    text_heading(ctx, lay, "source");
    long long prev = 0;
    size_t j = 0;
    for (size_t i = 0; i < n_shown; i++) {
        int l = shown[i];
        if (l >= 1 && l > prev + 1) text_row(ctx, lay, TEXT_MARKER, NULL, NULL, true);
        while (j < file->n_lines && file->lines[j].lineno < l)
            j++;
        const sonde_line_stats_t *stats =
            j < file->n_lines && file->lines[j].lineno == l ? &file->lines[j] : NULL;
        char label[16];
        snprintf(label, sizeof label, "%d", l);
        if (stats && (ctx->all_lines || text_line_hot(ctx, stats))) {
            sonde__row_t row = sonde__row_of_line(stats);
            text_row(ctx, lay, label, &row, text_source_at(file, l), false);
        } else {
            text_row(ctx, lay, label, NULL, text_source_at(file, l), !ctx->all_lines);
        }
        if (l > prev) prev = l;
    }
    if (n_shown && prev < last_line) text_row(ctx, lay, TEXT_MARKER, NULL, NULL, true);
    if (!n_shown) {
        char note[96];
        snprintf(note, sizeof note, "(no line reaches %.1f%% of the time)", ctx->threshold);
        text_row(ctx, lay, "", NULL, note, true);
    }
    free(shown);
    return 0;
}

static void text_file_funcs(text_ctx_t *ctx, const sonde_file_stats_t *file,
                            const text_layout_t *lay)
{
    bool any = false;
    for (size_t i = 0; i < file->n_funcs; i++) {
        const sonde_func_stats_t *func = &file->funcs[i];
        sonde__row_t row = sonde__row_of_func(func);
        if (!ctx->all_lines && sonde__row_share(&row, ctx->prof) < ctx->threshold) continue;
        if (!any) {
            text_end_line(ctx);
            text_heading(ctx, lay, "function");
            any = true;
        }
        char label[16];
        snprintf(label, sizeof label, "%d", func->firstlineno);
        text_row(ctx, lay, label, &row, func->name, false);
    }
}

static int text_file(text_ctx_t *ctx, const sonde_file_stats_t *file)
{
    long long last_line = file->source ? (long long)file->n_source : 0;
    if (file->n_lines && file->lines[file->n_lines - 1].lineno > last_line)
        last_line = file->lines[file->n_lines - 1].lineno;
    long long max_label = last_line;
    for (size_t i = 0; i < file->n_funcs; i++)
        if (file->funcs[i].firstlineno > max_label) max_label = file->funcs[i].firstlineno;
    if (file->n_lines && file->lines[0].lineno < 0 &&
        text_digits(file->lines[0].lineno) > text_digits(max_label))
        max_label = file->lines[0].lineno;
    text_layout_t lay = text_layout_for(ctx, max_label);

    text_end_line(ctx);
    text_file_header(ctx, file);
    int rc = text_file_lines(ctx, file, &lay, last_line);
    if (rc) return rc;
    text_file_funcs(ctx, file, &lay);
    return 0;
}

/* --memory: the likely leaks, most likely first within each file. */
static void text_leaks(text_ctx_t *ctx)
{
    const sonde_profile_t *prof = ctx->prof;
    sonde__tline_t *tl = &ctx->tl;
    bool any = false;
    for (size_t i = 0; i < prof->n_files; i++) {
        const sonde_file_stats_t *file = &prof->files[i];
        for (size_t j = 0; j < file->n_lines; j++) {
            const sonde_line_stats_t *line = &file->lines[j];
            if (!sonde__memory_is_leak(&line->mem)) continue;
            if (!any) {
                text_end_line(ctx);
                sonde__tline_sgr(tl, TEXT_SGR_TITLE);
                sonde__tline_printf(tl, "Possible memory leaks (the footprint grew %.1f%%):",
                                    sonde__memory_growth_percent(prof));
                sonde__tline_sgr(tl, NULL);
                text_end_line(ctx);
                any = true;
            }
            const char *base = strrchr(file->path, '/');
            sonde__tline_printf(tl, "  %s:%d  likelihood %.0f%%, about %.2f MB/s",
                                base ? base + 1 : file->path, line->lineno,
                                100 * line->mem.leak_likelihood, line->mem.leak_velocity_mb_s);
            const char *source = text_source_at(file, line->lineno);
            if (source) {
                sonde__tline_text(tl, "  ");
                sonde__tline_sgr(tl, TEXT_SGR_DIM);
                while (*source == ' ' || *source == '\t')
                    source++;
                sonde__tline_text(tl, source);
                sonde__tline_sgr(tl, NULL);
            }
            text_end_line(ctx);
        }
    }
}

/* ---- the report --------------------------------------------------------- */

/* The report of a profile with no time on a profiled line: why, in one
 * line. A program that failed says so (with its exit status; time it spent
 * outside the profiled files, starting or printing its traceback, is no
 * news then); else time sampled outside the profiled files says how much,
 * and which option shows it. */
static void text_empty(const sonde_profile_t *prof, sonde_buf_t *out)
{
    bool failed = prof->exit_known && (prof->exit_status != 0 || prof->exit_exception[0]);
    bool by_signal = strncmp(prof->exit_exception, "SIG", 3) == 0;
    if (failed)
        sonde_buf_printf(out,
                         "sonde: no samples: the program %s (%s%sexit status %d) after %.3f s, "
                         "before sonde sampled any of its lines\n",
                         by_signal ? "was ended by a signal" : "failed", prof->exit_exception,
                         prof->exit_exception[0] ? ", " : "", prof->exit_status, prof->elapsed_sec);
    else if (prof->unattributed_ns)
        sonde_buf_printf(out,
                         "sonde: no samples in profiled files: all %.3f s sampled fell outside "
                         "them (the standard library, site-packages, code with no file)%s%s\n",
                         (double)prof->unattributed_ns / SONDE_NS_PER_SEC,
                         prof->profile_all ? "" : "; ", prof->profile_all ? "" : TEXT_OUTSIDE_HINT);
    if (!failed && !prof->unattributed_ns) sonde_buf_puts(out, TEXT_NO_SAMPLES);
}

int sonde_report_text(const sonde_profile_t *prof, const sonde_text_opts_t *opts, sonde_buf_t *out)
{
    sonde_text_opts_t defaults;
    size_t *order = NULL;
    int rc = 0;

    sonde_text_opts_default(&defaults);
    if (!opts) opts = &defaults;
    if (prof->total_ns == 0) {
        text_empty(prof, out);
        return sonde_buf_error(out);
    }

    text_ctx_t ctx = {
        .prof = prof,
        .out = out,
        .width = opts->width < TEXT_MIN_WIDTH   ? TEXT_MIN_WIDTH
                 : opts->width > TEXT_MAX_WIDTH ? TEXT_MAX_WIDTH
                                                : opts->width,
        .threshold = isfinite(opts->cpu_percent_threshold) && opts->cpu_percent_threshold > 0
                         ? opts->cpu_percent_threshold
                         : 0,
        .all_lines = opts->all_lines,
    };
    sonde__tline_init(&ctx.tl, opts->color);

    rc = sonde__files_by_time(prof, &order);
    if (rc) goto error;
    text_header(&ctx);
    size_t hidden = 0;
    sonde_ns_t hidden_ns = 0;
    for (size_t i = 0; i < prof->n_files; i++) {
        const sonde_file_stats_t *file = &prof->files[order[i]];
        if (!ctx.all_lines && sonde__percent(file->total_ns, prof->total_ns) < ctx.threshold &&
            !text_file_hot_memory(&ctx, file)) {
            hidden++;
            hidden_ns += file->total_ns;
            continue;
        }
        rc = text_file(&ctx, file);
        if (rc) goto error;
    }
    if (hidden) {
        text_end_line(&ctx);
        sonde__tline_sgr(&ctx.tl, TEXT_SGR_DIM);
        sonde__tline_printf(
            &ctx.tl, "%zu more file%s below %.1f%% of the time (%.1f%% in all) not shown", hidden,
            hidden == 1 ? "" : "s", ctx.threshold, sonde__percent(hidden_ns, prof->total_ns));
        sonde__tline_sgr(&ctx.tl, NULL);
        text_end_line(&ctx);
    }
    if (prof->has_memory) text_leaks(&ctx);
    rc = sonde__tline_error(&ctx.tl);
    if (!rc) rc = sonde_buf_error(out);

error:
    free(order);
    sonde__tline_free(&ctx.tl);
    return rc;
}
