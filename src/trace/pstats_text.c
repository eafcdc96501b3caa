/* pstats_text.c — the report `python3 -m cProfile` prints, written in C.
 *
 * Owns: sort orders (pstats.Stats.sort_stats, abbreviations included) and
 * the text of pstats.Stats(...).strip_dirs().sort_stats(...).print_stats():
 * the "N function calls (M primitive calls) in T seconds" header, the
 * "Ordered by:" line, the column titles and one line per function, with
 * pstats' exact widths ("%9s", " %8.3f"), its stable sort, its merging of
 * functions whose keys coincide once directories are stripped, and its
 * standard names ("file:line(name)", "{built-in method ...}"). Pure C, no
 * Python (pstats.h; built with the core, tested by
 * tests/unit/test_pstats_text.c against Python's pstats); called at report
 * time.
 */
#include "pstats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    TEXT_PCALLS = 0,
    TEXT_CALLS = 1,
    TEXT_TIME = 2,
    TEXT_CUM = 3,
    TEXT_FILE = 4,
    TEXT_LINE = 5,
    TEXT_NAME = 6,
    TEXT_STDNAME = 7,
};

/* pstats.Stats.sort_arg_dict_default, in its order (the order matters for
 * which abbreviations are ambiguous). */
static const struct text_sort_def {
    const char *word;
    int n;
    int8_t keys[3][2];
    const char *title;
} text_sort_defs[] = {
    {"calls", 1, {{TEXT_CALLS, -1}}, "call count"},
    {"ncalls", 1, {{TEXT_CALLS, -1}}, "call count"},
    {"cumtime", 1, {{TEXT_CUM, -1}}, "cumulative time"},
    {"cumulative", 1, {{TEXT_CUM, -1}}, "cumulative time"},
    {"filename", 1, {{TEXT_FILE, 1}}, "file name"},
    {"line", 1, {{TEXT_LINE, 1}}, "line number"},
    {"module", 1, {{TEXT_FILE, 1}}, "file name"},
    {"name", 1, {{TEXT_NAME, 1}}, "function name"},
    {"nfl", 3, {{TEXT_NAME, 1}, {TEXT_FILE, 1}, {TEXT_LINE, 1}}, "name/file/line"},
    {"pcalls", 1, {{TEXT_PCALLS, -1}}, "primitive call count"},
    {"stdname", 1, {{TEXT_STDNAME, 1}}, "standard name"},
    {"time", 1, {{TEXT_TIME, -1}}, "internal time"},
    {"tottime", 1, {{TEXT_TIME, -1}}, "internal time"},
};

#define TEXT_MAX_FRAGMENTS 128

/* The definition `word` selects, as pstats' get_sort_arg_defs expands
 * abbreviations: each key adds its prefixes from the longest down, in
 * dict order; a prefix that is already present is marked ambiguous (and
 * later removed) and ends that key's expansion. NULL when not found or
 * ambiguous. */
static const struct text_sort_def *text_sort_lookup(const char *word)
{
    struct {
        const char *text; /* prefix of text_sort_defs[def].word */
        size_t len;
        size_t def;
        bool ambiguous;
    } frags[TEXT_MAX_FRAGMENTS];
    size_t n_frags = 0;
    for (size_t d = 0; d < SONDE_ARRAY_LEN(text_sort_defs); d++) {
        const char *key = text_sort_defs[d].word;
        for (size_t len = strlen(key); len > 0; len--) {
            size_t k = 0;
            while (k < n_frags && !(frags[k].len == len && strncmp(frags[k].text, key, len) == 0))
                k++;
            if (k < n_frags) {
                frags[k].ambiguous = true;
                break;
            }
            if (n_frags == TEXT_MAX_FRAGMENTS) break;
            frags[n_frags].text = key;
            frags[n_frags].len = len;
            frags[n_frags].def = d;
            frags[n_frags].ambiguous = false;
            n_frags++;
        }
    }
    size_t len = strlen(word);
    for (size_t k = 0; k < n_frags; k++)
        if (frags[k].len == len && strncmp(frags[k].text, word, len) == 0)
            return frags[k].ambiguous ? NULL : &text_sort_defs[frags[k].def];
    return NULL;
}

int sonde_trace_sort_words(sonde_trace_sort_t *sort, const char *const *words, int n_words,
                           char *err, size_t err_len)
{
    memset(sort, 0, sizeof *sort);
    size_t title_len = 0;
    for (int i = 0; i < n_words; i++) {
        const struct text_sort_def *def = text_sort_lookup(words[i]);
        if (!def) {
            snprintf(err, err_len, "%s", words[i]);
            return -EINVAL;
        }
        for (int k = 0; k < def->n && sort->n_keys < SONDE_TRACE_SORT_MAX; k++) {
            sort->keys[sort->n_keys].field = def->keys[k][0];
            sort->keys[sort->n_keys].dir = def->keys[k][1];
            sort->n_keys++;
        }
        int n = snprintf(sort->title + title_len, sizeof sort->title - title_len, "%s%s",
                         i ? ", " : "", def->title);
        if (n > 0 && title_len + (size_t)n < sizeof sort->title) title_len += (size_t)n;
    }
    return 0;
}

int sonde_trace_sort_number(sonde_trace_sort_t *sort, long number)
{
    static const char *const words[] = {"stdname", "calls", "time", "cumulative"};
    if (number < -1 || number > 2) return -EINVAL;
    char err[64];
    return sonde_trace_sort_words(sort, &words[number + 1], 1, err, sizeof err);
}

/* ---- the report ------------------------------------------------------------ */

typedef struct text_line {
    const char *file; /* borrowed: the basename within a row's file */
    size_t file_len;
    long line;
    const char *name; /* borrowed */
    size_t name_len;
    uint64_t cc, nc;
    double tt, ct;
    char *std; /* owned: the standard name */
    size_t std_len;
    size_t order; /* position before sorting (stable sort) */
} text_line_t;

static int text_cmp_bytes(const char *a, size_t a_len, const char *b, size_t b_len)
{
    int c = memcmp(a, b, a_len < b_len ? a_len : b_len);
    if (c) return c;
    return a_len < b_len ? -1 : a_len > b_len ? 1 : 0;
}

static int text_cmp_field(const text_line_t *a, const text_line_t *b, int field)
{
    switch (field) {
    case TEXT_PCALLS:
        return a->cc < b->cc ? -1 : a->cc > b->cc;
    case TEXT_CALLS:
        return a->nc < b->nc ? -1 : a->nc > b->nc;
    case TEXT_TIME:
        return a->tt < b->tt ? -1 : a->tt > b->tt;
    case TEXT_CUM:
        return a->ct < b->ct ? -1 : a->ct > b->ct;
    case TEXT_FILE:
        return text_cmp_bytes(a->file, a->file_len, b->file, b->file_len);
    case TEXT_LINE:
        return a->line < b->line ? -1 : a->line > b->line;
    case TEXT_NAME:
        return text_cmp_bytes(a->name, a->name_len, b->name, b->name_len);
    default:
        return text_cmp_bytes(a->std, a->std_len, b->std, b->std_len);
    }
}

static int text_cmp(const void *pa, const void *pb, void *arg)
{
    const text_line_t *a = pa, *b = pb;
    const sonde_trace_sort_t *sort = arg;
    for (int k = 0; k < sort->n_keys; k++) {
        int c = text_cmp_field(a, b, sort->keys[k].field);
        if (c) return c * sort->keys[k].dir;
    }
    return a->order < b->order ? -1 : a->order > b->order;
}

/* pstats' func_std_string. Owned string. */
static char *text_std_name(const text_line_t *l, size_t *len)
{
    sonde_buf_t b = SONDE_BUF_INIT;
    if (l->file_len == 1 && l->file[0] == '~' && l->line == 0) {
        if (l->name_len >= 2 && l->name[0] == '<' && l->name[l->name_len - 1] == '>') {
            sonde_buf_putc(&b, '{');
            sonde_buf_append(&b, l->name + 1, l->name_len - 2);
            sonde_buf_putc(&b, '}');
        } else {
            sonde_buf_append(&b, l->name, l->name_len);
        }
    } else {
        sonde_buf_append(&b, l->file, l->file_len);
        sonde_buf_printf(&b, ":%ld(", l->line);
        sonde_buf_append(&b, l->name, l->name_len);
        sonde_buf_putc(&b, ')');
    }
    sonde_buf_putc(&b, 0);
    if (sonde_buf_error(&b)) {
        sonde_buf_free(&b);
        return NULL;
    }
    *len = b.len - 1;
    return b.data;
}

static uint64_t text_key_hash(const char *file, size_t file_len, long line, const char *name,
                              size_t name_len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < file_len; i++)
        h = (h ^ (unsigned char)file[i]) * 1099511628211ull;
    h = (h ^ (uint64_t)line) * 1099511628211ull;
    for (size_t i = 0; i < name_len; i++)
        h = (h ^ (unsigned char)name[i]) * 1099511628211ull;
    return h;
}

/* strip_dirs(): rows keyed by (basename, line, name), merged in order of
 * first appearance. Returns the number of lines, or -ENOMEM. */
static long text_strip_dirs(const sonde_trace_stats_t *s, text_line_t *lines)
{
    size_t size = 16;
    while (size < s->n_rows * 2)
        size *= 2;
    size_t *index = calloc(size, sizeof *index); /* line + 1; 0 = empty */
    if (!index) return -ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < s->n_rows; i++) {
        const sonde_trace_row_t *row = &s->rows[i];
        const char *slash = memrchr(row->file, '/', row->file_len);
        const char *base = slash ? slash + 1 : row->file;
        size_t base_len = row->file_len - (size_t)(base - row->file);
        size_t j =
            (size_t)text_key_hash(base, base_len, row->line, row->name, row->name_len) & (size - 1);
        text_line_t *l = NULL;
        for (; index[j]; j = (j + 1) & (size - 1)) {
            text_line_t *c = &lines[index[j] - 1];
            if (c->line == row->line && c->name_len == row->name_len && c->file_len == base_len &&
                memcmp(c->name, row->name, row->name_len) == 0 &&
                memcmp(c->file, base, base_len) == 0) {
                l = c;
                break;
            }
        }
        if (!l) {
            l = &lines[n];
            l->file = base;
            l->file_len = base_len;
            l->line = row->line;
            l->name = row->name;
            l->name_len = row->name_len;
            l->order = n++;
            index[j] = n;
            if (!(l->std = text_std_name(l, &l->std_len))) {
                free(index);
                return -ENOMEM;
            }
        }
        l->cc += row->cc;
        l->nc += row->nc;
        l->tt += row->tt;
        l->ct += row->ct;
    }
    free(index);
    return (long)n;
}

static void text_f8(sonde_buf_t *out, double v)
{
    sonde_buf_printf(out, "%8.3f ", v);
}

int sonde_trace_text_report(const sonde_trace_stats_t *s, const sonde_trace_sort_t *sort,
                            sonde_buf_t *out)
{
    uint64_t total_calls = 0, prim_calls = 0;
    double total_tt = 0.0;
    for (size_t i = 0; i < s->n_rows; i++) {
        total_calls += s->rows[i].nc;
        prim_calls += s->rows[i].cc;
        total_tt += s->rows[i].tt;
    }
    text_line_t *lines = calloc(s->n_rows ? s->n_rows : 1, sizeof *lines);
    if (!lines) return -ENOMEM;
    long n = text_strip_dirs(s, lines);
    int rc = 0;
    if (n < 0) {
        rc = (int)n;
        goto done;
    }
    qsort_r(lines, (size_t)n, sizeof *lines, text_cmp, (void *)sort);

    sonde_buf_printf(out, "         %llu function calls ", (unsigned long long)total_calls);
    if (total_calls != prim_calls)
        sonde_buf_printf(out, "(%llu primitive calls) ", (unsigned long long)prim_calls);
    sonde_buf_printf(out, "in %.3f seconds\n\n", total_tt);
    if (n > 0) {
        if (sort->n_keys)
            sonde_buf_printf(out, "   Ordered by: %s\n\n", sort->title);
        else
            sonde_buf_puts(out, "   Random listing order was used\n\n");
        sonde_buf_puts(out,
                       "   ncalls  tottime  percall  cumtime  percall filename:lineno(function)\n");
        for (long i = 0; i < n; i++) {
            const text_line_t *l = &lines[i];
            char calls[48];
            if (l->nc != l->cc)
                snprintf(calls, sizeof calls, "%llu/%llu", (unsigned long long)l->nc,
                         (unsigned long long)l->cc);
            else
                snprintf(calls, sizeof calls, "%llu", (unsigned long long)l->nc);
            sonde_buf_printf(out, "%9s ", calls);
            text_f8(out, l->tt);
            if (l->nc == 0)
                sonde_buf_puts(out, "         ");
            else
                text_f8(out, l->tt / (double)l->nc);
            text_f8(out, l->ct);
            if (l->cc == 0)
                sonde_buf_puts(out, "         ");
            else
                text_f8(out, l->ct / (double)l->cc);
            sonde_buf_append(out, l->std, l->std_len);
            sonde_buf_putc(out, '\n');
        }
        sonde_buf_puts(out, "\n\n");
    }
    rc = sonde_buf_error(out);
done:
    for (size_t i = 0; i < s->n_rows; i++)
        free(lines[i].std); /* unused ones are NULL */
    free(lines);
    return rc;
}
