/* pstats.h — the tracer's statistics in pstats' shape and their writers.
 *
 * Owns: sonde_trace_stats_t (rows keyed by (file, line, name) with their
 * callers, as cProfile's snapshot_stats builds them), the pstats file
 * (pstats_file.c) and the report `python3 -m cProfile` prints
 * (pstats_text.c). No libpython: built into the core, so that the unit
 * tests link the writers (tests/unit/test_pstats_text.c). The snapshot
 * that fills these structures from a running profiler is snapshot.c
 * (trace_internal.h). Never in a signal handler or an interpreter hook.
 */
#ifndef SONDE_TRACE_PSTATS_H
#define SONDE_TRACE_PSTATS_H

#include "../core/buf.h"
#include "../core/common.h"

typedef struct sonde_trace_caller {
    size_t row;      /* index of the calling row */
    uint64_t nc, cc; /* calls, primitive calls (pstats order: nc first) */
    double tt, ct;   /* seconds */
} sonde_trace_caller_t;

typedef struct sonde_trace_row {
    char *file; /* owned UTF-8; "~" for built-ins */
    size_t file_len;
    long line;  /* 0 for built-ins */
    char *name; /* owned UTF-8 */
    size_t name_len;
    uint64_t cc, nc;               /* primitive and total calls */
    double tt, ct;                 /* seconds: internal, cumulative */
    sonde_trace_caller_t *callers; /* owned */
    size_t n_callers, cap_callers;
} sonde_trace_row_t;

typedef struct sonde_trace_stats {
    sonde_trace_row_t *rows; /* owned; one per (file, line, name) */
    size_t n_rows, cap_rows;
} sonde_trace_stats_t;

/* The pstats file: marshal of {(file, line, name): (cc, nc, tt, ct,
 * {caller: (nc, cc, tt, ct)})}. Appends to out. Returns 0, -ENOMEM, or
 * -ENODATA when there are no rows (pstats cannot load an empty dict). */
int sonde_trace_pstats_marshal(const sonde_trace_stats_t *s, sonde_buf_t *out);

#define SONDE_TRACE_SORT_MAX 32

/* A sort order of pstats.Stats.sort_stats. Fields: 0 primitive calls,
 * 1 calls, 2 tottime, 3 cumtime, 4 file, 5 line, 6 name, 7 standard name;
 * dir -1 descending, 1 ascending. */
typedef struct sonde_trace_sort {
    int n_keys;
    struct {
        int8_t field;
        int8_t dir;
    } keys[SONDE_TRACE_SORT_MAX];
    char title[256]; /* "cumulative time", "internal time, call count" */
} sonde_trace_sort_t;

/* sort_stats(*words) with pstats' unambiguous abbreviations. Returns 0,
 * or -EINVAL with the offending word in err. */
int sonde_trace_sort_words(sonde_trace_sort_t *sort, const char *const *words, int n_words,
                           char *err, size_t err_len);
/* sort_stats(n) for the old numeric keys -1, 0, 1, 2. Returns 0 or -EINVAL. */
int sonde_trace_sort_number(sonde_trace_sort_t *sort, long number);

/* The report `python3 -m cProfile` prints:
 * pstats.Stats(...).strip_dirs().sort_stats(...).print_stats(). Appends
 * to out. Returns 0 or -ENOMEM. */
int sonde_trace_text_report(const sonde_trace_stats_t *s, const sonde_trace_sort_t *sort,
                            sonde_buf_t *out);

struct sonde_format;
struct sonde_report_ctx;
/* The statistics as a flat profile (pstats_model.c: one one-frame stack
 * per row, weighted by its internal time, counted by its calls) written
 * in a format of the registry (report.h; `sonde trace` uses pprof).
 * Appends to out. Returns 0, -ENOMEM or the writer's error. */
int sonde_trace_report(const sonde_trace_stats_t *s, const struct sonde_format *format,
                       const struct sonde_report_ctx *ctx, sonde_buf_t *out);

#endif
