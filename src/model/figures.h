/* figures.h — the figures sampling sources add to lines, and how every
 * report shows them.
 *
 * Owns: the one registry of per-line figures that come from a sampling
 * source other than the CPU sampler's own times (the GPU, garbage
 * collection): their
 * slots in a line's sonde_figs_t, how a charge, a merge and a JSON load
 * fill them, the columns reports draw from them and the run-level fields
 * the source sets. A new source adds its slots and one descriptor here
 * (figures.c); the model, the merge, the JSON writer and loader, the text
 * report and the viewer (through the JSON's "figures" list) then carry and
 * show its figures without naming it. Plain C, no libpython; the charge
 * runs on the sampler thread (no allocation, no lock).
 */
#ifndef SONDE_FIGURES_H
#define SONDE_FIGURES_H

#include "../core/buf.h"
#include "../core/common.h"

/* The figure slots of every source, in one numbering. */
enum {
    /* GPU (src/ext/gpu.c): seconds charged while a reading existed, the
     * charges that had one, utilisation % x seconds, memory MB x seconds,
     * the highest memory reading */
    SONDE_FIG_GPU_SEC,
    SONDE_FIG_GPU_SAMPLES,
    SONDE_FIG_GPU_UTIL,
    SONDE_FIG_GPU_MEM,
    SONDE_FIG_GPU_PEAK,
    /* Garbage collection (src/ext/gc.c): seconds charged while the source
     * ran, and of those, the seconds the charged thread spent collecting */
    SONDE_FIG_GC_SEC,
    SONDE_FIG_GC_COLLECTING,
    SONDE_N_FIGS
};

/* The sources that have figures, in one numbering. */
enum { SONDE_FIGSRC_GPU, SONDE_FIGSRC_GC, SONDE_N_FIGSRCS };

/* A line's (or function's) figures; all zero when no source charged it. */
typedef struct sonde_figs {
    double v[SONDE_N_FIGS];
} sonde_figs_t;

/* How a slot takes a charge (a sample's reading r for the seconds sec the
 * sample charged to the line) and how two slots combine (a merge). */
typedef enum sonde_fig_rule {
    SONDE_FIG_WEIGHTED, /* += r x sec; combine: sum */
    SONDE_FIG_SECONDS,  /* += sec (r ignored); combine: sum */
    SONDE_FIG_COUNT,    /* += 1 (r ignored); combine: sum */
    SONDE_FIG_PEAK,     /* max(r); combine: max */
} sonde_fig_rule_t;

/* What a column's number means, for the writers' formatting. */
typedef enum sonde_fig_unit {
    SONDE_FIG_UNIT_LEVEL_PERCENT, /* a level in percent, 0..100 (utilisation) */
    SONDE_FIG_UNIT_MB,            /* megabytes */
    SONDE_FIG_UNIT_COUNT,         /* a plain count */
} sonde_fig_unit_t;

/* One figure reports show for lines and functions (and for the run). */
typedef struct sonde_fig_column {
    const char *json_name;       /* field of a line/function entry (Scalene's names) */
    const char *json_total_name; /* top-level field with the run's figure; NULL: none */
    const char *title;           /* terminal table heading; NULL: JSON only */
    const char *sgr;             /* ANSI SGR parameters of its colour; NULL: none */
    sonde_fig_unit_t unit;
    /* The figure from the source's slots (v: the source's first slot). */
    double (*value)(const double *v);
} sonde_fig_column_t;

/* What a profile knows of a source as a whole. */
typedef struct sonde_fig_run {
    bool present; /* the source ran and had readings */
    char *detail; /* owned; what it read (the GPU: device names), or NULL */
    bool own;     /* the figures are this process tree's own, not the device's */
} sonde_fig_run_t;

/* One source's figures. */
typedef struct sonde_fig_source {
    const char *name;       /* JSON's top-level flag ("gpu"), the viewer's class */
    const char *detail_key; /* JSON field of detail ("gpu_device"); NULL: none */
    const char *own_key;    /* JSON field of own ("gpu_per_process"); NULL: none
                               (the figures are always the process tree's own) */
    unsigned first, n;      /* its slots: v[first .. first + n) */
    const sonde_fig_rule_t *rules;
    const sonde_fig_column_t *columns;
    size_t n_columns;
    /* From a saved report's columns (values[i]: columns[i]'s figure, in
     * the entry's field) and the entry's time (sec) and samples back to
     * slots (v: the source's first slot). */
    void (*load)(double *v, const double *values, double sec, uint64_t samples);
    /* The terminal report's line about the source as a whole: its figures
     * over the run (totals: every line's slots combined, from the source's
     * first slot) into shown, drawn in the colour sgr, then what it read
     * into plain. */
    const char *sgr;
    void (*header)(sonde_buf_t *shown, sonde_buf_t *plain, const double *totals,
                   const sonde_fig_run_t *run);
} sonde_fig_source_t;

extern const sonde_fig_source_t sonde_fig_sources[SONDE_N_FIGSRCS];

/* Adds one charge of source src: reading holds one value per slot of the
 * source (rules that ignore it take anything). Sampler thread: no
 * allocation, no lock. */
void sonde_figs_charge(sonde_figs_t *into, unsigned src, const double *reading, double sec);
/* Combines from into into slot by slot (sums add, peaks keep the highest). */
void sonde_figs_combine(sonde_figs_t *into, const sonde_figs_t *from);
/* Whether any slot of source src is non-zero. */
bool sonde_figs_any(const sonde_figs_t *figs, unsigned src);

/* Combines a source's run information into dst's (present if either is;
 * own only when both are; dst's detail kept, else src's copied). Returns
 * 0 or -ENOMEM. */
int sonde_fig_run_merge(sonde_fig_run_t *dst, const sonde_fig_run_t *src);
/* Records a source's run information (detail copied; NULL none). Returns
 * 0 or -ENOMEM (unchanged on error). */
int sonde_fig_run_set(sonde_fig_run_t *run, const char *detail, bool own);
void sonde_fig_run_free(sonde_fig_run_t *run);

#endif
