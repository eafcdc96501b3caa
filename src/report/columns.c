/* columns.c — the figures every writer reports for lines and functions.
 *
 * Owns: sonde__columns (report_internal.h) and the helpers that sum rows and
 * order files. A new figure (memory, GPU, copy volume) is a field in
 * sonde__row_t, filled in sonde__row_of_line/func, and one entry here: the
 * JSON writer then emits it for every line and function, and the text
 * writer adds a table column when it has a title. Called by the writers
 * after the profile is finished; never in a signal handler.
 */
#include "report_internal.h"

#include <stdlib.h>
#include <string.h>

static double columns_python(const sonde__row_t *row, const sonde_profile_t *prof)
{
    return sonde__percent(row->python_ns, prof->total_ns);
}

static double columns_native(const sonde__row_t *row, const sonde_profile_t *prof)
{
    return sonde__percent(row->native_ns, prof->total_ns);
}

static double columns_system(const sonde__row_t *row, const sonde_profile_t *prof)
{
    return sonde__percent(row->system_ns, prof->total_ns);
}

static double columns_samples(const sonde__row_t *row, const sonde_profile_t *prof)
{
    return (double)row->samples;
}

/* Colours: Python cyan, native green, system yellow (bold variants read
 * poorly on light terminals). Bar glyphs differ too, so the split stays
 * readable without colour. */
const sonde__column_t sonde__columns[] = {
    {"n_cpu_percent_python", "cpu_percent_python", "Python", "36", "\xe2\x96\x88" /* █ */,
     SONDE__UNIT_PERCENT, columns_python},
    {"n_cpu_percent_c", "cpu_percent_c", "native", "32", "\xe2\x96\x93" /* ▓ */,
     SONDE__UNIT_PERCENT, columns_native},
    {"n_sys_percent", "sys_percent", "system", "33", "\xe2\x96\x91" /* ░ */, SONDE__UNIT_PERCENT,
     columns_system},
    {"n_samples", NULL, NULL, NULL, NULL, SONDE__UNIT_COUNT, columns_samples},
};
const size_t sonde__n_columns = SONDE_ARRAY_LEN(sonde__columns);

sonde__row_t sonde__row_of_file(const sonde_file_stats_t *file)
{
    sonde__row_t sum = {0, 0, 0, 0};
    for (size_t i = 0; i < file->n_lines; i++) {
        sonde__row_t row = sonde__row_of_line(&file->lines[i]);
        sonde__row_accumulate(&sum, &row);
    }
    return sum;
}

sonde__row_t sonde__row_of_profile(const sonde_profile_t *prof)
{
    sonde__row_t sum = {0, 0, 0, 0};
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
