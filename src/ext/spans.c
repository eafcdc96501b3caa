/* spans.c — named stretches of a profiling session (tests, for the pytest
 * plugin) and the summary of the longest ones.
 *
 * Owns: the session's list of spans (name, wall-clock begin and end) and
 * the span the sampler charges now (sonde_sampler_t.span, an atomic the
 * sampler reads at each tick; it keeps each span's lines in its own
 * accumulator, sampler.c). The summary pauses the sampler thread (as
 * around a fork) to read those accumulators and the code cache, builds a
 * model per span and writes it with sonde_report_span_text. Called with
 * the GIL from module.c, and by session.c when the session ends; nothing
 * here runs in a signal handler.
 */
#include "ext.h"

#include "../report/report.h"

#include <stdlib.h>
#include <string.h>

typedef struct spans_entry {
    char *name;                  /* owned */
    sonde_ns_t begin_ns, end_ns; /* end 0 while open */
} spans_entry_t;

/* The session's spans; span id i (1-based) is entries[i - 1]. GIL. */
static spans_entry_t *spans_entries; /* owned */
static size_t spans_n, spans_cap;
static uint32_t spans_open; /* id of the open span, 0 none */

int sonde_spans_begin_gil(const char *name)
{
    sonde_sampler_t *s = sonde_session_sampler_gil(NULL);
    if (!s) return 0;
    sonde_spans_end_gil();
    if (spans_n >= UINT32_MAX - 1) return 0; /* no id left: not recorded */
    if (spans_n == spans_cap) {
        size_t cap = spans_cap ? 2 * spans_cap : 256;
        spans_entry_t *grown = realloc(spans_entries, cap * sizeof *grown);
        if (!grown) goto nomem;
        spans_entries = grown;
        spans_cap = cap;
    }
    char *copy = strdup(name ? name : "");
    if (!copy) goto nomem;
    spans_entries[spans_n++] = (spans_entry_t){copy, sonde_prim_monotonic_ns(), 0};
    spans_open = (uint32_t)spans_n;
    atomic_store_explicit(&s->span, spans_open, memory_order_release);
    return 1;
nomem:
    PyErr_NoMemory();
    return -1;
}

void sonde_spans_end_gil(void)
{
    if (!spans_open) return;
    spans_entries[spans_open - 1].end_ns = sonde_prim_monotonic_ns();
    spans_open = 0;
    sonde_sampler_t *s = sonde_session_sampler_gil(NULL);
    if (s) atomic_store_explicit(&s->span, 0, memory_order_release);
}

/* A span's wall time (an open one's up to now). */
static sonde_ns_t spans_wall(const spans_entry_t *e, sonde_ns_t now)
{
    sonde_ns_t end = e->end_ns ? e->end_ns : now;
    return end > e->begin_ns ? end - e->begin_ns : 0;
}

/* A span by index, with its wall time, for sorting. */
typedef struct spans_rank {
    size_t index;
    sonde_ns_t wall_ns;
} spans_rank_t;

static int spans_by_wall(const void *a, const void *b)
{
    const spans_rank_t *x = a, *y = b;
    if (x->wall_ns != y->wall_ns) return x->wall_ns < y->wall_ns ? 1 : -1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Appends span `index`'s entry: a model of its own samples, written by
 * the report. The sampler thread is paused. */
static int spans_write_one(sonde_sampler_t *s, const char *cwd, size_t index, sonde_ns_t wall_ns,
                           int n_lines, int width, sonde_buf_t *out)
{
    sonde_profile_t prof;
    sonde_profile_init(&prof);
    int rc = 0;
    if (index < s->n_spans) {
        sonde_codenames_t names = sonde_codenames_of_proc(&s->proc, cwd);
        sonde_accum_convert_t how = {.per_thread = false, .main_tid = getpid()};
        rc = sonde_accum_to_profile(&s->spans[index], &names, &how, &prof);
        if (rc == 0) rc = sonde_profile_finish(&prof);
    }
    if (rc == 0)
        rc = sonde_report_span_text(out, spans_entries[index].name, (double)wall_ns / 1e9, &prof,
                                    cwd, n_lines, width);
    sonde_profile_free(&prof);
    return rc;
}

int sonde_spans_text_gil(sonde_buf_t *out, int n_spans, int n_lines, int width)
{
    const char *cwd = NULL;
    sonde_sampler_t *s = sonde_session_sampler_gil(&cwd);
    if (!s || spans_n == 0 || n_spans <= 0) return 0;
    spans_rank_t *ranks = calloc(spans_n, sizeof *ranks);
    if (!ranks) return -ENOMEM;
    sonde_ns_t now = sonde_prim_monotonic_ns();
    for (size_t i = 0; i < spans_n; i++)
        ranks[i] = (spans_rank_t){i, spans_wall(&spans_entries[i], now)};
    qsort(ranks, spans_n, sizeof *ranks, spans_by_wall);
    /* The sampler thread owns its accumulators and the code cache: it
     * stops for the time it takes to read them (the next tick covers the
     * pause), as around a fork. */
    sonde_sampler_pause(s);
    int rc = 0;
    for (size_t k = 0; k < spans_n && k < (size_t)n_spans && rc == 0; k++)
        rc = spans_write_one(s, cwd, ranks[k].index, ranks[k].wall_ns, n_lines, width, out);
    sonde_sampler_resume(s);
    free(ranks);
    return rc;
}

void sonde_spans_clear_gil(void)
{
    for (size_t i = 0; i < spans_n; i++)
        free(spans_entries[i].name);
    free(spans_entries);
    spans_entries = NULL;
    spans_n = spans_cap = 0;
    spans_open = 0;
}
