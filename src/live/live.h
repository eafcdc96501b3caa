/* live.h — the live view of `sonde top PID` and `sonde run --live`.
 *
 * Owns: what the user watches while a program runs. A producer (the
 * attach sampler's periods for `top`, src/cli/top.c; the collector's
 * periods for `run --live`, src/cli/run_live.c) feeds the view one
 * profile per refresh interval (src/model/); the view keeps their sum
 * and draws, every interval, per-line and per-function tables with
 * Python / native / system time (and memory when profiled) over the last
 * interval and cumulated.
 *   table.c   the tables (pure): rows of an interval and of the sum joined,
 *             one thread's rows from its stacks, sorting, the columns as
 *             text, the plain table written when standard output is no
 *             terminal
 *   screen.c  the full-screen view (ncurses) on its own thread: keys,
 *             resizes, colours
 *   view.c    the view's state shared by the producer and the screen: the
 *             profiles fed, the cumulated one, pausing
 * Runs in the `sonde` process only, never in the profiled program. No
 * signal handlers: a resize is seen by polling the terminal's size, and
 * the producer's signal mask is inherited by the screen's thread.
 */
#ifndef SONDE_LIVE_H
#define SONDE_LIVE_H

#include "../core/buf.h"
#include "../model/model.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#define SONDE_LIVE_REFRESH_MIN 0.1    /* seconds, shortest refresh accepted */
#define SONDE_LIVE_REFRESH_MAX 3600.0 /* seconds, longest */

/* ---- the tables (table.c, pure) ---------------------------------------------------- */

/* Which rows: one per line, or one per function. */
typedef enum sonde_live_table {
    SONDE_LIVE_LINES,
    SONDE_LIVE_FUNCS,
} sonde_live_table_t;

/* The columns a table can be sorted by, in the order shown. */
typedef enum sonde_live_col {
    SONDE_LIVE_COL_NOW,    /* share of the last interval's time */
    SONDE_LIVE_COL_ALL,    /* share of the time cumulated */
    SONDE_LIVE_COL_PYTHON, /* the window's Python time, share of its total */
    SONDE_LIVE_COL_NATIVE,
    SONDE_LIVE_COL_SYSTEM,
    SONDE_LIVE_COL_ALLOC, /* MB allocated in the window (memory profiled) */
    SONDE_LIVE_COL_PEAK,  /* the line's peak live MB, cumulated */
    SONDE_LIVE_N_COLS,
} sonde_live_col_t;

/* A column's title as drawn ("NOW%"). */
const char *sonde_live_col_title(sonde_live_col_t col);

/* One row: a line (lineno > 0) or a function (lineno 0), with its figures
 * over the last interval (now) and cumulated (all). Strings are borrowed
 * from the profiles the rows were made of. */
typedef struct sonde_live_row {
    const char *path;
    const char *func;
    int lineno;      /* the line; 0 in the function table */
    int firstlineno; /* the function's first line */
    const char *source;
    sonde_ns_t now_ns[SONDE_N_KINDS], all_ns[SONDE_N_KINDS];
    double now_alloc_mb, all_alloc_mb, peak_mb;
} sonde_live_row_t;

/* A table: rows, the totals their shares are of, and whether memory was
 * profiled. */
typedef struct sonde_live_rows {
    sonde_live_row_t *rows; /* owned */
    size_t n, cap;
    sonde_ns_t now_total_ns, all_total_ns;
    bool memory;
    bool one_thread; /* one thread's rows: the last interval's only */
} sonde_live_rows_t;

/* What the table shows: thread -1 for all threads, else the last
 * interval's thread index (rows then come from that thread's stacks in
 * the last interval: each stack's time goes to its innermost frame in a
 * profiled file; the sum since the start keeps no threads apart, so that
 * its size does not grow with the threads a server starts and ends, and
 * memory is not kept per thread: those columns are not shown); the
 * window of the Python / native / system and allocation columns
 * (cumulated, else the last interval). */
typedef struct sonde_live_query {
    sonde_live_table_t table;
    int thread;
    bool cumulated;
    sonde_live_col_t sort;
} sonde_live_query_t;

/* Fills rows (emptied first; its memory kept) from the last interval's
 * profile now (finished; NULL: none yet) and the cumulated one all
 * (finished), sorted by q->sort, highest first (ties by path and line).
 * Returns 0 or -ENOMEM. */
int sonde_live_rows_build(sonde_live_rows_t *rows, const sonde_profile_t *now,
                          const sonde_profile_t *all, const sonde_live_query_t *q);
void sonde_live_rows_free(sonde_live_rows_t *rows);

/* The index of the thread of prof with these ids and name, or -1. */
int sonde_live_thread_find(const sonde_profile_t *prof, int pid, int tid, const char *name);

/* A column's value of a row under q, as a number to sort by (shares in
 * percent, memory in MB). */
double sonde_live_row_value(const sonde_live_rows_t *rows, const sonde_live_row_t *row,
                            const sonde_live_query_t *q, sonde_live_col_t col);

/* Where column col starts in a formatted row (with_memory as given to
 * sonde_live_format_row) and how wide it is, for colouring; false when
 * the column is not shown. */
bool sonde_live_col_span(sonde_live_col_t col, bool with_memory, size_t *x, size_t *w);

/* Writes the header of the columns (with_memory: the two memory columns)
 * and one row as the screen draws them, without a line end, cut to width
 * columns (the source text is cut first). */
void sonde_live_format_header(sonde_buf_t *out, const sonde_live_query_t *q, bool with_memory,
                              size_t width);
void sonde_live_format_row(sonde_buf_t *out, const sonde_live_rows_t *rows,
                           const sonde_live_row_t *row, const sonde_live_query_t *q,
                           bool with_memory, size_t width);

/* The plain table (`sonde top` when standard output is no terminal): a
 * line naming the interval and then at most max_rows rows of rows, as
 * sonde_live_format_row writes them. */
void sonde_live_format_plain(sonde_buf_t *out, const char *title, double from_sec, double to_sec,
                             const sonde_live_rows_t *rows, const sonde_live_query_t *q,
                             size_t max_rows, size_t width);

/* ---- the view (view.c, screen.c) ------------------------------------------------------ */

typedef struct sonde_live sonde_live_t;

typedef struct sonde_live_opts {
    const char *title;     /* the first line: what is watched ("pid 4242: app.py") */
    const char *quit_say;  /* what q does, for the help ("detach", "close the view") */
    const char *quit_line; /* written to fd once q closed the view, or NULL */
    double refresh_sec;
    int fd;                      /* the terminal (standard output) */
    bool plain;                  /* fd is no terminal: a plain table per interval instead */
    volatile sig_atomic_t *stop; /* set to 1 when q is pressed (the producer's
                                    stop flag, which it polls); NULL: none */
} sonde_live_opts_t;

/* Opens the view: with plain, nothing is drawn until a feed; otherwise
 * the terminal is taken (full screen) and the screen's thread started.
 * Returns 0 (*out set) or -errno (-ENOTTY: the terminal cannot be used;
 * nothing is left taken). */
int sonde_live_open(sonde_live_t **out, const sonde_live_opts_t *opts);
/* Hands the view one interval's profile (finished; moved in: the view
 * owns it afterwards, and prof is left empty), from_sec..to_sec seconds
 * since the start. It is added to the cumulated profile and drawn at the
 * next refresh (plain: written at once). Returns 0 or -ENOMEM. */
int sonde_live_feed(sonde_live_t *v, sonde_profile_t *prof, double from_sec, double to_sec);
/* Whether the user asked to quit (q). The screen then gives the
 * terminal back at once (and writes quit_line); feeds go on being summed
 * for sonde_live_cumulated. */
bool sonde_live_quit_asked(const sonde_live_t *v);
/* Says why the view ends in its status line (the target exited), kept on
 * screen for a moment: the view waits up to linger_sec or a key. */
void sonde_live_ending(sonde_live_t *v, const char *why, double linger_sec);
/* Stops the screen's thread and gives the terminal back as it was. The
 * cumulated profile stays readable (sonde_live_cumulated) until
 * sonde_live_free. */
void sonde_live_close(sonde_live_t *v);
/* The sum of every profile fed (finished), for the report at the end. */
const sonde_profile_t *sonde_live_cumulated(const sonde_live_t *v);
void sonde_live_free(sonde_live_t *v);

#endif
