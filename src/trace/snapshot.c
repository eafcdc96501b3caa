/* snapshot.c — a profiler's statistics in the shape of a pstats dict.
 *
 * Owns: sonde_trace_stats_build_gil, which turns the per-thread tables
 * into rows keyed (file, line, name) as cProfile's snapshot_stats does:
 * threads merged, call counts as (primitive, total), times in seconds,
 * each row's callers with (nc, cc, tt, ct). Unlike cProfile, two code
 * objects with the same key (say two lambdas on one line) are added up
 * instead of one silently replacing the other. Called with the GIL from
 * the Profile methods and the boot's exit handler; never from a hook.
 */
#include "trace_internal.h"

#include <stdlib.h>
#include <string.h>

#define SNAP_NO_ROW SIZE_MAX

typedef struct snap_index {
    size_t *slots; /* owned; row index + 1, 0 = empty */
    size_t mask;
} snap_index_t;

static uint64_t snap_hash(const sonde_trace_row_t *row)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < row->file_len; i++)
        h = (h ^ (unsigned char)row->file[i]) * 1099511628211ull;
    h = (h ^ (uint64_t)row->line) * 1099511628211ull;
    for (size_t i = 0; i < row->name_len; i++)
        h = (h ^ (unsigned char)row->name[i]) * 1099511628211ull;
    return h;
}

static bool snap_same_key(const sonde_trace_row_t *a, const sonde_trace_row_t *b)
{
    return a->line == b->line && a->file_len == b->file_len && a->name_len == b->name_len &&
           memcmp(a->file, b->file, a->file_len) == 0 && memcmp(a->name, b->name, a->name_len) == 0;
}

/* The row with row->key, or SNAP_NO_ROW; *slot_out is where it would go. */
static size_t snap_lookup(const snap_index_t *index, const sonde_trace_stats_t *s,
                          const sonde_trace_row_t *row, size_t *slot_out)
{
    size_t j = (size_t)snap_hash(row) & index->mask;
    while (index->slots[j]) {
        size_t r = index->slots[j] - 1;
        if (snap_same_key(&s->rows[r], row)) return r;
        j = (j + 1) & index->mask;
    }
    *slot_out = j;
    return SNAP_NO_ROW;
}

void sonde_trace_stats_free(sonde_trace_stats_t *s)
{
    for (size_t i = 0; i < s->n_rows; i++) {
        free(s->rows[i].file);
        free(s->rows[i].name);
        free(s->rows[i].callers);
    }
    free(s->rows);
    memset(s, 0, sizeof *s);
}

uint64_t sonde_trace_stats_calls(const sonde_trace_stats_t *s)
{
    uint64_t n = 0;
    for (size_t i = 0; i < s->n_rows; i++)
        n += s->rows[i].nc;
    return n;
}

/* Fills the key of row from an entry (UTF-8 copies). Returns 0 or -1
 * with an exception. */
static int snap_key(const sonde_trace_entry_t *e, sonde_trace_row_t *row)
{
    memset(row, 0, sizeof *row);
    if (e->code) {
        PyCodeObject *code = (PyCodeObject *)e->code;
        row->file = sonde_trace_utf8(code->co_filename, &row->file_len);
        row->name = row->file ? sonde_trace_utf8(code->co_name, &row->name_len) : NULL;
        row->line = code->co_firstlineno;
    } else {
        row->file = strdup("~");
        row->file_len = 1;
        if (!row->file) PyErr_NoMemory();
        row->name = row->file ? sonde_trace_utf8(e->label, &row->name_len) : NULL;
        row->line = 0;
    }
    if (!row->file || !row->name) {
        free(row->file);
        free(row->name);
        return -1;
    }
    return 0;
}

static int snap_add_caller(sonde_trace_row_t *row, size_t caller_row, uint64_t nc, uint64_t cc,
                           double tt, double ct)
{
    for (size_t i = 0; i < row->n_callers; i++) {
        sonde_trace_caller_t *c = &row->callers[i];
        if (c->row != caller_row) continue;
        c->nc += nc;
        c->cc += cc;
        c->tt += tt;
        c->ct += ct;
        return 0;
    }
    if (row->n_callers == row->cap_callers) {
        size_t cap = row->cap_callers ? row->cap_callers * 2 : 4;
        sonde_trace_caller_t *grown = realloc(row->callers, cap * sizeof *grown);
        if (!grown) return -ENOMEM;
        row->callers = grown;
        row->cap_callers = cap;
    }
    row->callers[row->n_callers++] = (sonde_trace_caller_t){caller_row, nc, cc, tt, ct};
    return 0;
}

/* Seconds per tick of p's clock, as _lsprof scales: the default clock's
 * calibrated rate; a float timer in seconds; an integer timer times
 * timeunit (or in seconds when timeunit is 0). */
static double snap_seconds_per_tick(const sonde_trace_prof_t *p)
{
    if (!p->timer) return sonde_trace_clock_seconds_per_tick();
    return p->timeunit > 0.0 ? p->timeunit : 1e-9;
}

int sonde_trace_stats_build_gil(sonde_trace_prof_t *p, sonde_trace_stats_t *out)
{
    memset(out, 0, sizeof *out);
    snap_index_t index = {NULL, 0};
    size_t *row_of = NULL; /* row of each entry of the merged table */
    sonde_trace_thread_t *all = sonde_trace_merged_gil(p);
    if (!all) return -1;
    double factor = snap_seconds_per_tick(p);

    size_t size = 16;
    while (size < all->n_entries * 2)
        size *= 2;
    index.slots = calloc(size, sizeof *index.slots);
    index.mask = size - 1;
    row_of = malloc((all->n_entries ? all->n_entries : 1) * sizeof *row_of);
    out->rows = calloc(all->n_entries ? all->n_entries : 1, sizeof *out->rows);
    out->cap_rows = all->n_entries;
    if (!index.slots || !row_of || !out->rows) goto nomem;

    for (size_t i = 0; i < all->n_entries; i++) {
        const sonde_trace_entry_t *e = all->entries[i];
        row_of[i] = SNAP_NO_ROW;
        if (e->calls == 0) continue; /* _lsprof skips these too */
        sonde_trace_row_t key;
        if (snap_key(e, &key) < 0) goto error;
        size_t slot = 0;
        size_t r = snap_lookup(&index, out, &key, &slot);
        if (r == SNAP_NO_ROW) {
            r = out->n_rows++;
            out->rows[r] = key;
            index.slots[slot] = r + 1;
        } else {
            free(key.file);
            free(key.name);
        }
        sonde_trace_row_t *row = &out->rows[r];
        row->nc += e->calls;
        row->cc += e->calls - e->rec_calls;
        row->tt += factor * (double)e->inline_ticks;
        row->ct += factor * (double)e->total_ticks;
        row_of[i] = r;
    }
    for (size_t i = 0; i < all->n_entries; i++)
        all->entries[i]->scratch = row_of[i];
    for (size_t i = 0; i < all->n_edges; i++) {
        const sonde_trace_edge_t *edge = all->edges[i];
        size_t callee_row = edge->callee->scratch, caller_row = edge->caller->scratch;
        if (callee_row == SNAP_NO_ROW || caller_row == SNAP_NO_ROW || edge->calls == 0) continue;
        if (snap_add_caller(&out->rows[callee_row], caller_row, edge->calls,
                            edge->calls - edge->rec_calls, factor * (double)edge->inline_ticks,
                            factor * (double)edge->total_ticks) < 0)
            goto nomem;
    }
    free(index.slots);
    free(row_of);
    sonde_trace_thread_free(all);
    return 0;
nomem:
    PyErr_NoMemory();
error:
    free(index.slots);
    free(row_of);
    sonde_trace_thread_free(all);
    sonde_trace_stats_free(out);
    return -1;
}
