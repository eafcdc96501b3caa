/* figures.c — the registry of per-line figures from sampling sources.
 *
 * Owns: sonde_fig_sources (one descriptor per source with figures, the
 * GPU's and garbage collection's: its slots, their rules, its columns,
 * how a saved report's columns load back and the terminal's line about
 * it) and the rules' arithmetic
 * (figures.h). sonde_figs_charge runs on the sampler thread for every
 * sample charged: bounded, no allocation, no lock. The rest is ordinary
 * code of the model, the merge and the writers.
 */
#include "figures.h"

#include <stdlib.h>
#include <string.h>

/* ---- the GPU (src/ext/gpu.c) -----------------------------------------------
 * Each sample charged while the reader had a reading adds the reading's
 * mean over the tick, weighted by the time the sample charged: a line's
 * util / sec is its time-weighted mean utilisation while it ran. */

static const sonde_fig_rule_t figures_gpu_rules[] = {
    [SONDE_FIG_GPU_SEC - SONDE_FIG_GPU_SEC] = SONDE_FIG_SECONDS,
    [SONDE_FIG_GPU_SAMPLES - SONDE_FIG_GPU_SEC] = SONDE_FIG_COUNT,
    [SONDE_FIG_GPU_UTIL - SONDE_FIG_GPU_SEC] = SONDE_FIG_WEIGHTED,
    [SONDE_FIG_GPU_MEM - SONDE_FIG_GPU_SEC] = SONDE_FIG_WEIGHTED,
    [SONDE_FIG_GPU_PEAK - SONDE_FIG_GPU_SEC] = SONDE_FIG_PEAK,
};

#define FIGURES_GPU(v, slot) ((v)[SONDE_FIG_GPU_##slot - SONDE_FIG_GPU_SEC])

static double figures_gpu_percent(const double *v)
{
    return FIGURES_GPU(v, SEC) > 0 ? FIGURES_GPU(v, UTIL) / FIGURES_GPU(v, SEC) : 0;
}

static double figures_gpu_avg_mb(const double *v)
{
    return FIGURES_GPU(v, SEC) > 0 ? FIGURES_GPU(v, MEM) / FIGURES_GPU(v, SEC) : 0;
}

static double figures_gpu_peak_mb(const double *v)
{
    return FIGURES_GPU(v, PEAK);
}

/* Scalene's names; red. "GPU util" is a line's mean utilisation while it
 * ran, "GPU MB" its peak GPU memory. */
static const sonde_fig_column_t figures_gpu_columns[] = {
    {"n_gpu_percent", "gpu_percent", "GPU util", "31", SONDE_FIG_UNIT_LEVEL_PERCENT,
     figures_gpu_percent},
    {"n_gpu_avg_memory_mb", "gpu_avg_memory_mb", NULL, NULL, SONDE_FIG_UNIT_MB, figures_gpu_avg_mb},
    {"n_gpu_peak_memory_mb", "gpu_peak_memory_mb", "GPU MB", "31", SONDE_FIG_UNIT_MB,
     figures_gpu_peak_mb},
};

/* The means are weighted by the entry's time (sec), or by a nominal
 * weight when it has none; an entry whose figures are all 0 had no
 * reading and gets no weight. */
static void figures_gpu_load(double *v, const double *values, double sec, uint64_t samples)
{
    double util = values[0], avg_mb = values[1], peak_mb = values[2];
    if (!(util > 0 || avg_mb > 0 || peak_mb > 0)) return;
    if (!(sec > 0)) sec = 1e-6;
    FIGURES_GPU(v, SEC) = sec;
    FIGURES_GPU(v, SAMPLES) = samples ? (double)samples : 1;
    FIGURES_GPU(v, UTIL) = util * sec;
    FIGURES_GPU(v, MEM) = avg_mb * sec;
    FIGURES_GPU(v, PEAK) = peak_mb;
}

static void figures_gpu_header(sonde_buf_t *shown, sonde_buf_t *plain, const double *totals,
                               const sonde_fig_run_t *run)
{
    sonde_buf_printf(shown, "GPU: %.1f%% utilisation, %.1f MB on average, %.1f MB at peak",
                     figures_gpu_percent(totals), figures_gpu_avg_mb(totals),
                     figures_gpu_peak_mb(totals));
    sonde_buf_printf(plain, " (%s; %s)", run->detail ? run->detail : "?",
                     run->own ? "this process and its children" : "whole device");
}

/* ---- garbage collection (src/ext/gc.c) --------------------------------------------
 * Every charge adds its seconds, and its seconds weighted by the share of
 * the charged thread's time that went to its collections (the reading): a
 * line's collecting / sec is the share of its time spent collecting. */

static const sonde_fig_rule_t figures_gc_rules[] = {
    [SONDE_FIG_GC_SEC - SONDE_FIG_GC_SEC] = SONDE_FIG_SECONDS,
    [SONDE_FIG_GC_COLLECTING - SONDE_FIG_GC_SEC] = SONDE_FIG_WEIGHTED,
};

#define FIGURES_GC(v, slot) ((v)[SONDE_FIG_GC_##slot - SONDE_FIG_GC_SEC])

static double figures_gc_percent(const double *v)
{
    return FIGURES_GC(v, SEC) > 0 ? 100.0 * FIGURES_GC(v, COLLECTING) / FIGURES_GC(v, SEC) : 0;
}

/* A level, as the GPU's utilisation: the share of the line's own time
 * (of the run's, for the run's figure); magenta. */
static const sonde_fig_column_t figures_gc_columns[] = {
    {"n_gc_percent", "gc_percent", "GC", "35", SONDE_FIG_UNIT_LEVEL_PERCENT, figures_gc_percent},
};

/* The share back to seconds by the entry's time (a nominal weight when it
 * has none). */
static void figures_gc_load(double *v, const double *values, double sec, uint64_t samples)
{
    (void)samples;
    if (!(sec > 0)) {
        if (!(values[0] > 0)) return;
        sec = 1e-6;
    }
    FIGURES_GC(v, SEC) = sec;
    FIGURES_GC(v, COLLECTING) = values[0] / 100.0 * sec;
}

static void figures_gc_header(sonde_buf_t *shown, sonde_buf_t *plain, const double *totals,
                              const sonde_fig_run_t *run)
{
    (void)run;
    sonde_buf_printf(shown, "GC: %.1f%% of the time in garbage collection",
                     figures_gc_percent(totals));
    sonde_buf_printf(plain,
                     " (%.3f s; per line: the share of its time spent in the collections "
                     "it started)",
                     FIGURES_GC(totals, COLLECTING));
}

/* ---- the registry --------------------------------------------------------------- */

const sonde_fig_source_t sonde_fig_sources[SONDE_N_FIGSRCS] = {
    [SONDE_FIGSRC_GPU] = {"gpu", "gpu_device", "gpu_per_process", SONDE_FIG_GPU_SEC,
                          SONDE_FIG_GPU_PEAK - SONDE_FIG_GPU_SEC + 1, figures_gpu_rules,
                          figures_gpu_columns, SONDE_ARRAY_LEN(figures_gpu_columns),
                          figures_gpu_load, "31", figures_gpu_header},
    [SONDE_FIGSRC_GC] = {"gc", NULL, NULL, SONDE_FIG_GC_SEC,
                         SONDE_FIG_GC_COLLECTING - SONDE_FIG_GC_SEC + 1, figures_gc_rules,
                         figures_gc_columns, SONDE_ARRAY_LEN(figures_gc_columns), figures_gc_load,
                         "35", figures_gc_header},
};

/* Every slot belongs to exactly one source, in order. */
_Static_assert(SONDE_FIG_GPU_PEAK + 1 == SONDE_FIG_GC_SEC, "a new slot: give it to its source");
_Static_assert(SONDE_FIG_GC_COLLECTING + 1 == SONDE_N_FIGS, "a new slot: give it to its source");

/* The rule of slot i (sonde_fig_sources' slots cover 0 .. SONDE_N_FIGS). */
static sonde_fig_rule_t figures_rule(unsigned i)
{
    for (unsigned s = 0; s < SONDE_N_FIGSRCS; s++) {
        const sonde_fig_source_t *src = &sonde_fig_sources[s];
        if (i >= src->first && i < src->first + src->n) return src->rules[i - src->first];
    }
    return SONDE_FIG_WEIGHTED;
}

void sonde_figs_charge(sonde_figs_t *into, unsigned src, const double *reading, double sec)
{
    if (src >= SONDE_N_FIGSRCS) return;
    const sonde_fig_source_t *s = &sonde_fig_sources[src];
    double *v = into->v + s->first;
    for (unsigned i = 0; i < s->n; i++) {
        switch (s->rules[i]) {
        case SONDE_FIG_WEIGHTED:
            v[i] += reading[i] * sec;
            break;
        case SONDE_FIG_SECONDS:
            v[i] += sec;
            break;
        case SONDE_FIG_COUNT:
            v[i] += 1;
            break;
        case SONDE_FIG_PEAK:
            if (reading[i] > v[i]) v[i] = reading[i];
            break;
        }
    }
}

void sonde_figs_combine(sonde_figs_t *into, const sonde_figs_t *from)
{
    for (unsigned i = 0; i < SONDE_N_FIGS; i++) {
        if (figures_rule(i) == SONDE_FIG_PEAK) {
            if (from->v[i] > into->v[i]) into->v[i] = from->v[i];
        } else {
            into->v[i] += from->v[i];
        }
    }
}

bool sonde_figs_any(const sonde_figs_t *figs, unsigned src)
{
    if (src >= SONDE_N_FIGSRCS) return false;
    const sonde_fig_source_t *s = &sonde_fig_sources[src];
    for (unsigned i = 0; i < s->n; i++)
        if (figs->v[s->first + i] != 0) return true;
    return false;
}

int sonde_fig_run_set(sonde_fig_run_t *run, const char *detail, bool own)
{
    char *copy = NULL;
    if (detail && !(copy = strdup(detail))) return -ENOMEM;
    free(run->detail);
    run->detail = copy;
    run->present = true;
    run->own = own;
    return 0;
}

int sonde_fig_run_merge(sonde_fig_run_t *dst, const sonde_fig_run_t *src)
{
    if (!src->present) return 0;
    if (!dst->detail && src->detail && !(dst->detail = strdup(src->detail))) return -ENOMEM;
    dst->own = dst->present ? dst->own && src->own : src->own;
    dst->present = true;
    return 0;
}

void sonde_fig_run_free(sonde_fig_run_t *run)
{
    free(run->detail);
    memset(run, 0, sizeof *run);
}
