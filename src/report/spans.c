/* spans.c — the short per-span text (sonde_report_span_text): one test of
 * `pytest --sonde-per-test`, its wall time and its hottest lines.
 *
 * Owns: the layout of one entry of the "slowest tests" summary the pytest
 * plugin prints (sonde/pytest_plugin.py hands the text to pytest's
 * terminal as it is): names, paths and source text are sanitised and each
 * line but the test's id clipped to the terminal's width as the terminal
 * report does (termtext.c). Reads a model built from the span's own samples
 * (src/ext/spans.c). Plain C, no libpython; never in a signal handler.
 */
#include "report_internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define SPANS_MIN_WIDTH 40     /* columns, at least */
#define SPANS_OUTSIDE_MIN 0.01 /* the time outside the profiled files is named from 1 % */

/* One line of the span, for sorting. */
typedef struct spans_line {
    const sonde_file_stats_t *file; /* borrowed */
    const sonde_line_stats_t *line; /* borrowed */
    sonde_ns_t ns;
} spans_line_t;

static int spans_by_time(const void *a, const void *b)
{
    const spans_line_t *x = a, *y = b;
    if (x->ns != y->ns) return x->ns < y->ns ? 1 : -1;
    int c = strcmp(x->file->path, y->file->path);
    return c ? c : x->line->lineno - y->line->lineno;
}

/* The function of a line: the last one that starts at or before it. */
static const char *spans_func(const sonde_file_stats_t *file, int lineno)
{
    const char *name = NULL;
    for (size_t i = 0; i < file->n_funcs && file->funcs[i].firstlineno <= lineno; i++)
        name = file->funcs[i].name;
    return name ? name : "<module>";
}

/* path without "cwd/" in front, when it lies there. */
static const char *spans_relative(const char *path, const char *cwd)
{
    size_t n = cwd ? strlen(cwd) : 0;
    if (n > 1 && strncmp(path, cwd, n) == 0 && path[n] == '/') return path + n + 1;
    return path;
}

int sonde_report_span_text(sonde_buf_t *out, const char *name, double wall_sec,
                           const sonde_profile_t *prof, const char *cwd, int n_lines, int width)
{
    size_t n = 0, count = 0;
    for (size_t f = 0; f < prof->n_files; f++)
        count += prof->files[f].n_lines;
    spans_line_t *lines = count ? calloc(count, sizeof *lines) : NULL;
    if (count && !lines) return -ENOMEM;
    for (size_t f = 0; f < prof->n_files; f++) {
        const sonde_file_stats_t *file = &prof->files[f];
        for (size_t i = 0; i < file->n_lines; i++) {
            const sonde_line_stats_t *line = &file->lines[i];
            sonde_ns_t ns = line->python_ns + line->native_ns + line->system_ns;
            if (ns) lines[n++] = (spans_line_t){file, line, ns};
        }
    }
    if (n > 1) qsort(lines, n, sizeof *lines, spans_by_time);
    if (width < SPANS_MIN_WIDTH) width = SPANS_MIN_WIDTH;
    sonde__tline_t tl;
    sonde__tline_init(&tl, false);
    sonde_ns_t sampled = prof->total_ns + prof->unattributed_ns;
    sonde__tline_printf(&tl, "%7.2fs  ", wall_sec);
    sonde__tline_text(&tl, name);
    /* the test's id whole, whatever its length: two ids cut at the same
     * column read the same (the terminal wraps a long one) */
    sonde__tline_end(&tl, out, INT_MAX);
    if (!sampled) {
        sonde__tline_text(&tl, "          no samples (shorter than the sampling interval)");
        sonde__tline_end(&tl, out, width);
    }
    for (size_t i = 0; i < n && (int)i < n_lines && sampled; i++) {
        const sonde_file_stats_t *file = lines[i].file;
        int lineno = lines[i].line->lineno;
        sonde__tline_printf(&tl, "         %5.1f%%  ",
                            100.0 * (double)lines[i].ns / (double)sampled);
        sonde__tline_text(&tl, spans_relative(file->path, cwd));
        sonde__tline_printf(&tl, ":%d in ", lineno);
        sonde__tline_text(&tl, spans_func(file, lineno));
        if (file->source && lineno >= 1 && (size_t)lineno <= file->n_source) {
            const char *text = file->source[lineno - 1];
            while (*text == ' ' || *text == '\t')
                text++;
            sonde__tline_text(&tl, ": ");
            sonde__tline_text(&tl, text);
        }
        sonde__tline_end(&tl, out, width);
    }
    if (sampled && (double)prof->unattributed_ns >= SPANS_OUTSIDE_MIN * (double)sampled) {
        sonde__tline_printf(&tl, "         %5.1f%%  outside the profiled files",
                            100.0 * (double)prof->unattributed_ns / (double)sampled);
        sonde__tline_end(&tl, out, width);
    }
    int rc = sonde__tline_error(&tl);
    sonde__tline_free(&tl);
    free(lines);
    return rc ? rc : sonde_buf_error(out) ? -ENOMEM : 0;
}
