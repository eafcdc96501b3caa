/* report_internal.h — shared by the writers of src/report/ only.
 *
 * Owns: the figure columns every writer draws from (one table, so that a new
 * figure — memory, copy volume — is one entry in columns.c plus a field in
 * sonde__row_t; a source's figures come from src/model/figures.c), the order files are reported in, and the
 * terminal-text line builder the text writer uses. Plain C, no libpython,
 * never in a signal handler or an allocator hook.
 */
#ifndef SONDE_REPORT_INTERNAL_H
#define SONDE_REPORT_INTERNAL_H

#include "report.h"

/* ---- figures ------------------------------------------------------------ */

/* The offset of the first byte of text that is not well-formed UTF-8
 * (overlong forms, surrogates and code points past U+10FFFF included), or
 * len when all of it is (html_json.c; the command only). */
size_t sonde__utf8_bad_at(const unsigned char *text, size_t len);

/* The figures of one reported row: a line, a function, a file or the run. */
typedef struct sonde__row {
    sonde_ns_t python_ns;
    sonde_ns_t native_ns;
    sonde_ns_t system_ns;
    uint64_t samples;
    const sonde_line_memory_t *mem; /* a line's or function's memory figures
                                       (borrowed); NULL for other rows */
    const sonde_figs_t *figs;       /* a line's or function's figures from
                                       the sources (borrowed); NULL for other rows */
} sonde__row_t;

static inline sonde__row_t sonde__row_of_line(const sonde_line_stats_t *line)
{
    sonde__row_t row = {line->python_ns, line->native_ns, line->system_ns, line->samples,
                        &line->mem};
    row.figs = &line->figs;
    return row;
}

static inline sonde__row_t sonde__row_of_func(const sonde_func_stats_t *func)
{
    sonde__row_t row = {func->python_ns, func->native_ns, func->system_ns, func->samples,
                        &func->mem};
    row.figs = &func->figs;
    return row;
}

static inline void sonde__row_accumulate(sonde__row_t *sum, const sonde__row_t *row)
{
    sum->python_ns += row->python_ns;
    sum->native_ns += row->native_ns;
    sum->system_ns += row->system_ns;
    sum->samples += row->samples;
}

static inline sonde_ns_t sonde__row_total_ns(const sonde__row_t *row)
{
    return row->python_ns + row->native_ns + row->system_ns;
}

/* part as a percentage of whole; 0 when whole is 0. */
static inline double sonde__percent(sonde_ns_t part, sonde_ns_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* The sum of every line of a file, or of every file of the profile. */
sonde__row_t sonde__row_of_file(const sonde_file_stats_t *file);
sonde__row_t sonde__row_of_profile(const sonde_profile_t *prof);

/* A line's share of the run, in percent of prof->total_ns. */
static inline double sonde__row_share(const sonde__row_t *row, const sonde_profile_t *prof)
{
    return sonde__percent(sonde__row_total_ns(row), prof->total_ns);
}

typedef enum sonde__unit {
    SONDE__UNIT_PERCENT,       /* percent of the run's total time (total_ns) */
    SONDE__UNIT_COUNT,         /* a plain count */
    SONDE__UNIT_MB,            /* megabytes (memory columns) */
    SONDE__UNIT_MB_S,          /* megabytes per second */
    SONDE__UNIT_FRACTION,      /* 0..1 (JSON), shown as a percentage */
    SONDE__UNIT_LEVEL_PERCENT, /* a level in percent, 0..100 (a device's utilisation),
                                  not a share of the run's time */
} sonde__unit_t;

/* One figure the writers report for each line and function. */
typedef struct sonde__column sonde__column_t;
struct sonde__column {
    const char *json_name;       /* field of a line/function entry */
    const char *json_total_name; /* top-level field with the run's figure; NULL: none */
    const char *title;           /* terminal table heading; NULL: JSON only */
    const char *sgr;             /* ANSI SGR parameters of its colour; NULL: none */
    const char *bar_glyph;       /* non-NULL: a segment of the time bar, drawn
                                    with this glyph (UTF-8, one column) */
    sonde__unit_t unit;
    double (*value)(const sonde__column_t *col, const sonde__row_t *row,
                    const sonde_profile_t *prof);
    bool memory; /* a memory figure: reported only when the
                                    profile has memory (--memory), and only
                                    for lines (rows with mem) */
    /* A source's figure (src/model/figures.h): reported only when the
     * profile has that source (fig_runs[fig_src].present), for lines and
     * functions (rows with figs); NULL: not one. */
    const sonde_fig_column_t *fig;
    unsigned fig_src;
};

/* The base columns, then every source's figure columns (columns.c). */
extern const sonde__column_t *const sonde__columns;
extern size_t sonde__n_columns;

/* Whether a column appears in this profile's reports at all. */
static inline bool sonde__column_shown(const sonde__column_t *col, const sonde_profile_t *prof)
{
    return (!col->memory || prof->has_memory) &&
           (!col->fig || prof->fig_runs[col->fig_src].present);
}

/* Whether a column has a figure for this row. */
static inline bool sonde__column_applies(const sonde__column_t *col, const sonde_profile_t *prof,
                                         const sonde__row_t *row)
{
    return (!col->memory || (prof->has_memory && row->mem)) &&
           (!col->fig || (prof->fig_runs[col->fig_src].present && row->figs));
}

/* ---- memory (columns.c) ------------------------------------------------- */

/* A line's share of all the memory the profile's lines allocated (0..1). */
double sonde__memory_usage_fraction(const sonde_line_memory_t *mem, const sonde_profile_t *prof);
/* Whether a line is listed as a likely leak. */
static inline bool sonde__memory_is_leak(const sonde_line_memory_t *mem)
{
    return mem->leak_likelihood > 0;
}
/* The footprint's growth over the run, in percent of where it started (0
 * without a timeline). */
double sonde__memory_growth_percent(const sonde_profile_t *prof);
/* A sparkline of a timeline (UTF-8 block characters, `width` cells at
 * most, scaled from 0 to max_mb), into buf (at least 4 * width + 1
 * bytes). Empty for an empty timeline. */
void sonde__sparkline(const sonde_timeline_t *tl, double max_mb, int width, char *buf, size_t size);

/* ---- the sources' figures (columns.c) ------------------------------------ */

/* Every line's figures of the profile combined (sonde_figs_combine). */
sonde_figs_t sonde__figs_totals(const sonde_profile_t *prof);

/* Indices into prof->files ordered as reports list files: by total time,
 * descending, then by path. On success *order_out is owned by the caller
 * (non-NULL even for no files). Returns 0 or -ENOMEM. */
int sonde__files_by_time(const sonde_profile_t *prof, size_t **order_out);

/* ---- terminal text ------------------------------------------------------ */

/* A line of terminal output being built. Text is sanitised as it is added
 * (invalid UTF-8 and control characters become U+FFFD, tabs become spaces),
 * so the only escape bytes are the SGR sequences added by sonde__tline_sgr
 * when colour is on. sonde__tline_end clips the line to a width with an
 * ellipsis and drops trailing spaces. */
typedef struct sonde__tline {
    sonde_buf_t text; /* owned; the line so far, SGR sequences included */
    int col;          /* display columns used so far */
    bool color;       /* SGR sequences are kept */
    bool sgr_open;    /* an SGR other than reset is in effect */
} sonde__tline_t;

void sonde__tline_init(sonde__tline_t *tl, bool color);
void sonde__tline_free(sonde__tline_t *tl);
/* Appends text; tabs stop every 8 columns from where this text starts. */
void sonde__tline_text(sonde__tline_t *tl, const char *s);
/* printf-style sonde__tline_text. */
void sonde__tline_printf(sonde__tline_t *tl, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Appends s right-aligned in a cell of the given width. */
void sonde__tline_right(sonde__tline_t *tl, const char *s, int width);
/* Pads with spaces up to display column col (nothing if already past). */
void sonde__tline_pad_to(sonde__tline_t *tl, int col);
/* Switches to an SGR state ("1", "2", "36"); NULL resets. No-op without colour. */
void sonde__tline_sgr(sonde__tline_t *tl, const char *params);
/* Appends the line to out, clipped to width columns ("…" marks the cut),
 * without trailing spaces, colour reset, then '\n'; empties the line. */
void sonde__tline_end(sonde__tline_t *tl, sonde_buf_t *out, int width);
/* Display columns of s once sanitised (tabs counted as one column). */
int sonde__text_width(const char *s);
/* The longest tail of s (starting on a character) that fits in cols
 * display columns. */
const char *sonde__text_tail(const char *s, int cols);
/* 0 or -ENOMEM. */
static inline int sonde__tline_error(const sonde__tline_t *tl)
{
    return sonde_buf_error(&tl->text);
}

#endif
