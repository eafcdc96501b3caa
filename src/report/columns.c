/* columns.c — the figures every writer reports for lines and functions.
 *
 * Owns: sonde__columns (report_internal.h) and the helpers that sum rows and
 * order files. A new figure (memory, copy volume) is a field in
 * sonde__row_t, filled in sonde__row_of_line/func, and one entry here: the
 * JSON writer then emits it for every line and function, and the text
 * writer adds a table column when it has a title. Called by the writers
 * after the profile is finished; never in a signal handler.
 */
#include "report_internal.h"

#include <stdlib.h>
#include <string.h>

static double columns_python(const sonde__column_t *col, const sonde__row_t *row,
                             const sonde_profile_t *prof)
{
    return sonde__percent(row->python_ns, prof->total_ns);
}

static double columns_native(const sonde__column_t *col, const sonde__row_t *row,
                             const sonde_profile_t *prof)
{
    return sonde__percent(row->native_ns, prof->total_ns);
}

static double columns_system(const sonde__column_t *col, const sonde__row_t *row,
                             const sonde_profile_t *prof)
{
    return sonde__percent(row->system_ns, prof->total_ns);
}

static double columns_samples(const sonde__column_t *col, const sonde__row_t *row,
                              const sonde_profile_t *prof)
{
    return (double)row->samples;
}

/* ---- memory (sonde run --memory) ---------------------------------------- */

static double columns_malloc_mb(const sonde__column_t *col, const sonde__row_t *row,
                                const sonde_profile_t *prof)
{
    return row->mem ? row->mem->malloc_mb : 0;
}

static double columns_mallocs(const sonde__column_t *col, const sonde__row_t *row,
                              const sonde_profile_t *prof)
{
    return row->mem ? (double)row->mem->mallocs : 0;
}

static double columns_avg_mb(const sonde__column_t *col, const sonde__row_t *row,
                             const sonde_profile_t *prof)
{
    return row->mem ? row->mem->avg_mb : 0;
}

static double columns_peak_mb(const sonde__column_t *col, const sonde__row_t *row,
                              const sonde_profile_t *prof)
{
    return row->mem ? row->mem->peak_mb : 0;
}

static double columns_live_mb(const sonde__column_t *col, const sonde__row_t *row,
                              const sonde_profile_t *prof)
{
    return row->mem ? row->mem->live_mb : 0;
}

static double columns_live_at_peak_mb(const sonde__column_t *col, const sonde__row_t *row,
                                      const sonde_profile_t *prof)
{
    return row->mem ? row->mem->live_at_peak_mb : 0;
}

/* pprof's heap sample types: counts and bytes, rounded to whole units. */
static double columns_alloc_objects(const sonde__column_t *col, const sonde__row_t *row,
                                    const sonde_profile_t *prof)
{
    return row->mem ? row->mem->alloc_objects + 0.5 : 0;
}

static double columns_alloc_space(const sonde__column_t *col, const sonde__row_t *row,
                                  const sonde_profile_t *prof)
{
    return row->mem ? row->mem->malloc_mb * 1048576.0 + 0.5 : 0;
}

static double columns_inuse_objects(const sonde__column_t *col, const sonde__row_t *row,
                                    const sonde_profile_t *prof)
{
    return row->mem ? row->mem->live_objects + 0.5 : 0;
}

static double columns_inuse_space(const sonde__column_t *col, const sonde__row_t *row,
                                  const sonde_profile_t *prof)
{
    return row->mem ? row->mem->live_mb * 1048576.0 + 0.5 : 0;
}

static double columns_python_fraction(const sonde__column_t *col, const sonde__row_t *row,
                                      const sonde_profile_t *prof)
{
    return row->mem ? row->mem->python_fraction : 0;
}

static double columns_usage_fraction(const sonde__column_t *col, const sonde__row_t *row,
                                     const sonde_profile_t *prof)
{
    return row->mem ? sonde__memory_usage_fraction(row->mem, prof) : 0;
}

static double columns_copy_mb_s(const sonde__column_t *col, const sonde__row_t *row,
                                const sonde_profile_t *prof)
{
    return row->mem && prof->elapsed_sec > 0 ? row->mem->copy_mb / prof->elapsed_sec : 0;
}

double sonde__memory_usage_fraction(const sonde_line_memory_t *mem, const sonde_profile_t *prof)
{
    double total = 0;
    for (size_t i = 0; i < prof->n_files; i++)
        for (size_t j = 0; j < prof->files[i].n_lines; j++)
            total += prof->files[i].lines[j].mem.malloc_mb;
    return total > 0 ? mem->malloc_mb / total : 0;
}

double sonde__memory_growth_percent(const sonde_profile_t *prof)
{
    const sonde_timeline_t *tl = &prof->footprint;
    if (tl->n < 2 || !(tl->points[0].mb > 0)) return 0;
    return 100.0 * (tl->points[tl->n - 1].mb - tl->points[0].mb) / tl->points[0].mb;
}

void sonde__sparkline(const sonde_timeline_t *tl, double max_mb, int width, char *buf, size_t size)
{
    static const char *const levels[] = {"\xe2\x96\x81", "\xe2\x96\x82", "\xe2\x96\x83",
                                         "\xe2\x96\x84", "\xe2\x96\x85", "\xe2\x96\x86",
                                         "\xe2\x96\x87", "\xe2\x96\x88"}; /* ▁..█ */
    size_t used = 0;
    if (size) buf[0] = 0;
    if (!tl->n || width <= 0 || size < 4) return;
    int cells = tl->n < (size_t)width ? (int)tl->n : width;
    for (int c = 0; c < cells && used + 4 <= size; c++) {
        /* The highest point in this cell's share of the timeline. */
        size_t from = (size_t)c * tl->n / (size_t)cells;
        size_t to = (size_t)(c + 1) * tl->n / (size_t)cells;
        double v = tl->points[from].mb;
        for (size_t i = from + 1; i < to; i++)
            if (tl->points[i].mb > v) v = tl->points[i].mb;
        int level = max_mb > 0 && v > 0 ? (int)(v / max_mb * 7.0 + 0.5) : 0;
        if (level > 7) level = 7;
        if (level < 0) level = 0;
        memcpy(buf + used, levels[level], 3);
        used += 3;
    }
    buf[used] = 0;
}

/* ---- the sources' figures (src/model/figures.h; only when their source ran) ---- */

static double columns_fig(const sonde__column_t *col, const sonde__row_t *row,
                          const sonde_profile_t *prof)
{
    (void)prof;
    if (!row->figs) return 0;
    return col->fig->value(row->figs->v + sonde_fig_sources[col->fig_src].first);
}

sonde_figs_t sonde__figs_totals(const sonde_profile_t *prof)
{
    sonde_figs_t sum;
    memset(&sum, 0, sizeof sum);
    for (size_t i = 0; i < prof->n_files; i++)
        for (size_t j = 0; j < prof->files[i].n_lines; j++)
            sonde_figs_combine(&sum, &prof->files[i].lines[j].figs);
    return sum;
}

/* Colours: Python cyan, native green, system yellow (bold variants read
 * poorly on light terminals). Bar glyphs differ too, so the split stays
 * readable without colour. */
/* The base columns; the sources' figure columns follow them in
 * sonde__columns (filled once, when the library loads). */
static const sonde__column_t columns_base[] = {
    {"n_cpu_percent_python", "cpu_percent_python", "Python", "36", "\xe2\x96\x88" /* █ */,
     SONDE__UNIT_PERCENT, columns_python},
    {"n_cpu_percent_c", "cpu_percent_c", "native", "32", "\xe2\x96\x93" /* ▓ */,
     SONDE__UNIT_PERCENT, columns_native},
    {"n_sys_percent", "sys_percent", "system", "33", "\xe2\x96\x91" /* ░ */, SONDE__UNIT_PERCENT,
     columns_system},
    {"n_samples", NULL, NULL, NULL, NULL, SONDE__UNIT_COUNT, columns_samples},
    /* Memory (Scalene's names); blue for memory, magenta for copying. */
    {"n_malloc_mb", NULL, NULL, NULL, NULL, SONDE__UNIT_MB, columns_malloc_mb, true},
    {"n_mallocs", NULL, NULL, NULL, NULL, SONDE__UNIT_COUNT, columns_mallocs, true},
    {"n_avg_mb", NULL, "avg MB", "34", NULL, SONDE__UNIT_MB, columns_avg_mb, true},
    {"n_peak_mb", NULL, "peak MB", "34", NULL, SONDE__UNIT_MB, columns_peak_mb, true},
    {"n_python_fraction", NULL, "mem py", "34", NULL, SONDE__UNIT_FRACTION, columns_python_fraction,
     true},
    {"n_usage_fraction", NULL, NULL, NULL, NULL, SONDE__UNIT_FRACTION, columns_usage_fraction,
     true},
    {"n_copy_mb_s", NULL, "copy MB/s", "35", NULL, SONDE__UNIT_MB_S, columns_copy_mb_s, true},
    /* Live memory: what the line allocated and has not freed, at the end
     * and when the program's sampled live heap peaked. */
    {"n_live_mb", NULL, "live MB", "34", NULL, SONDE__UNIT_MB, columns_live_mb, true},
    {"n_live_at_peak_mb", NULL, NULL, NULL, NULL, SONDE__UNIT_MB, columns_live_at_peak_mb, true},
    /* pprof's heap profile sample types (objects: counts; space: bytes). */
    {"alloc_objects", NULL, NULL, NULL, NULL, SONDE__UNIT_COUNT, columns_alloc_objects, true},
    {"alloc_space", NULL, NULL, NULL, NULL, SONDE__UNIT_COUNT, columns_alloc_space, true},
    {"inuse_objects", NULL, NULL, NULL, NULL, SONDE__UNIT_COUNT, columns_inuse_objects, true},
    {"inuse_space", NULL, NULL, NULL, NULL, SONDE__UNIT_COUNT, columns_inuse_space, true},
};

/* Every figure column of every source (figures.c), as many as fit. */
#define COLUMNS_MAX (SONDE_ARRAY_LEN(columns_base) + 8)
static sonde__column_t columns_all[COLUMNS_MAX];
const sonde__column_t *const sonde__columns = columns_all;
size_t sonde__n_columns;

/* Runs when the library or program loads: no allocation, nothing that
 * can fail (a source whose columns do not fit is left out, and the
 * unit tests check that none is). */
__attribute__((constructor)) static void columns_init(void)
{
    size_t n = 0;
    for (size_t i = 0; i < SONDE_ARRAY_LEN(columns_base); i++)
        columns_all[n++] = columns_base[i];
    for (unsigned s = 0; s < SONDE_N_FIGSRCS; s++) {
        const sonde_fig_source_t *src = &sonde_fig_sources[s];
        for (size_t c = 0; c < src->n_columns && n < COLUMNS_MAX; c++) {
            const sonde_fig_column_t *fig = &src->columns[c];
            static const sonde__unit_t units[] = {
                [SONDE_FIG_UNIT_LEVEL_PERCENT] = SONDE__UNIT_LEVEL_PERCENT,
                [SONDE_FIG_UNIT_MB] = SONDE__UNIT_MB,
                [SONDE_FIG_UNIT_COUNT] = SONDE__UNIT_COUNT,
            };
            columns_all[n++] = (sonde__column_t){.json_name = fig->json_name,
                                                 .title = fig->title,
                                                 .sgr = fig->sgr,
                                                 .unit = units[fig->unit],
                                                 .value = columns_fig,
                                                 .fig_src = s,
                                                 .fig = fig};
        }
    }
    sonde__n_columns = n;
}

sonde__row_t sonde__row_of_file(const sonde_file_stats_t *file)
{
    sonde__row_t sum = {0, 0, 0, 0, NULL};
    for (size_t i = 0; i < file->n_lines; i++) {
        sonde__row_t row = sonde__row_of_line(&file->lines[i]);
        sonde__row_accumulate(&sum, &row);
    }
    return sum;
}

sonde__row_t sonde__row_of_profile(const sonde_profile_t *prof)
{
    sonde__row_t sum = {0, 0, 0, 0, NULL};
    for (size_t i = 0; i < prof->n_files; i++) {
        sonde__row_t row = sonde__row_of_file(&prof->files[i]);
        sonde__row_accumulate(&sum, &row);
    }
    return sum;
}

/* What ordering files needs, copied so that qsort needs no context. */
typedef struct columns_file_key {
    sonde_ns_t total_ns;
    const char *path;
    size_t index;
} columns_file_key_t;

static int columns_cmp_files(const void *a, const void *b)
{
    const columns_file_key_t *ka = a, *kb = b;
    if (ka->total_ns != kb->total_ns) return ka->total_ns > kb->total_ns ? -1 : 1;
    return strcmp(ka->path, kb->path);
}

int sonde__files_by_time(const sonde_profile_t *prof, size_t **order_out)
{
    size_t n = prof->n_files;
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    columns_file_key_t *keys = malloc((n ? n : 1) * sizeof *keys);
    *order_out = NULL;
    if (!order || !keys) {
        free(keys);
        free(order);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        keys[i].total_ns = prof->files[i].total_ns;
        keys[i].path = prof->files[i].path;
        keys[i].index = i;
    }
    qsort(keys, n, sizeof *keys, columns_cmp_files);
    for (size_t i = 0; i < n; i++)
        order[i] = keys[i].index;
    free(keys);
    *order_out = order;
    return 0;
}
