/* fuzz_marshal.c — libFuzzer target: the pstats file of `sonde trace`
 * (src/trace/pstats_file.c over the marshal writer src/core/marshal.c)
 * written then read back, and cProfile's printed report
 * (src/trace/pstats_text.c) of the same statistics.
 *
 * Input: the statistics: rows of (file, line, name, cc, nc, tt, ct) with
 * their callers, names made of the code points the input gives
 * (surrogates included, as the tracer's "surrogatepass" UTF-8 holds them),
 * any int64 line, any counts below 2^63, any double (NaN and infinities
 * too); then sort words for the report. The file is read back by a reader
 * written after CPython's Python/marshal.c (r_object: TYPE_INT, TYPE_LONG
 * with its digit and normalisation checks, TYPE_BINARY_FLOAT,
 * TYPE_UNICODE decoded with "surrogatepass", TYPE_TUPLE, TYPE_DICT up to
 * TYPE_NULL, no FLAG_REF) and must give back exactly the statistics: every
 * key, count, bit of every float and caller, nothing after the dict. The
 * report must be built for any sort order pstats accepts.
 */
#include "trace/pstats.h"

#include "fuzz.h"

#define FUZZ_MAX_ROWS 12
#define FUZZ_MAX_CALLERS 4
#define FUZZ_MAX_CHARS 24

/* ---- building the statistics ------------------------------------------------ */

/* A name of up to FUZZ_MAX_CHARS code points (0..0x10FFFF, surrogates
 * included) as generalised UTF-8; owned. */
static char *make_name(fuzz_cursor_t *c, size_t *len)
{
    size_t n = (size_t)fuzz_uint(c, 1) % (FUZZ_MAX_CHARS + 1);
    char *s = malloc(4 * n + 1);
    if (s == NULL) abort();
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t kind = (uint32_t)fuzz_uint(c, 1);
        uint32_t cp = kind < 160   ? 0x20 + kind % 0x60 /* ASCII */
                      : kind < 200 ? 0x80 + (uint32_t)fuzz_uint(c, 1) * 7
                      : kind < 230 ? 0xD700 + (uint32_t)fuzz_uint(c, 1) * 3 /* surrogates */
                                   : (uint32_t)fuzz_uint(c, 3) % 0x110000;
        if (cp < 0x80) {
            s[used++] = (char)cp;
        } else if (cp < 0x800) {
            s[used++] = (char)(0xC0 | (cp >> 6));
            s[used++] = (char)(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            s[used++] = (char)(0xE0 | (cp >> 12));
            s[used++] = (char)(0x80 | ((cp >> 6) & 0x3F));
            s[used++] = (char)(0x80 | (cp & 0x3F));
        } else {
            s[used++] = (char)(0xF0 | (cp >> 18));
            s[used++] = (char)(0x80 | ((cp >> 12) & 0x3F));
            s[used++] = (char)(0x80 | ((cp >> 6) & 0x3F));
            s[used++] = (char)(0x80 | (cp & 0x3F));
        }
    }
    s[used] = 0;
    *len = used;
    return s;
}

static double make_double(fuzz_cursor_t *c)
{
    uint64_t bits = fuzz_uint(c, 8);
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

static uint64_t make_count(fuzz_cursor_t *c)
{
    uint8_t width = (uint8_t)fuzz_uint(c, 1) % 9; /* small counts mostly */
    return fuzz_uint(c, width) & (UINT64_MAX >> 1);
}

static bool same_key(const sonde_trace_row_t *a, const sonde_trace_row_t *b)
{
    return a->line == b->line && a->file_len == b->file_len && a->name_len == b->name_len &&
           memcmp(a->file, b->file, a->file_len) == 0 && memcmp(a->name, b->name, a->name_len) == 0;
}

static void make_stats(fuzz_cursor_t *c, sonde_trace_stats_t *s)
{
    size_t n = 1 + (size_t)fuzz_uint(c, 1) % FUZZ_MAX_ROWS;
    s->rows = calloc(n, sizeof *s->rows);
    if (s->rows == NULL) abort();
    for (size_t i = 0; i < n; i++) {
        sonde_trace_row_t *row = &s->rows[s->n_rows];
        row->file = make_name(c, &row->file_len);
        row->name = make_name(c, &row->name_len);
        uint8_t width = (uint8_t)fuzz_uint(c, 1) % 9;
        row->line = (long)fuzz_uint(c, width);
        row->cc = make_count(c);
        row->nc = make_count(c);
        row->tt = make_double(c);
        row->ct = make_double(c);
        bool dup = false; /* a dict holds a key once; the tracer never repeats one */
        for (size_t k = 0; k < s->n_rows && !dup; k++)
            dup = same_key(&s->rows[k], row);
        if (dup) {
            free(row->file);
            free(row->name);
            continue;
        }
        s->n_rows++;
    }
    for (size_t i = 0; i < s->n_rows; i++) {
        sonde_trace_row_t *row = &s->rows[i];
        size_t n_callers = (size_t)fuzz_uint(c, 1) % (FUZZ_MAX_CALLERS + 1);
        row->callers = calloc(n_callers + 1, sizeof *row->callers);
        if (row->callers == NULL) abort();
        for (size_t k = 0; k < n_callers; k++) {
            size_t from = (size_t)fuzz_uint(c, 1) % s->n_rows;
            bool dup = false;
            for (size_t j = 0; j < row->n_callers && !dup; j++)
                dup = row->callers[j].row == from;
            if (dup) continue;
            sonde_trace_caller_t *caller = &row->callers[row->n_callers++];
            caller->row = from;
            caller->nc = make_count(c);
            caller->cc = make_count(c);
            caller->tt = make_double(c);
            caller->ct = make_double(c);
        }
    }
}

static void free_stats(sonde_trace_stats_t *s)
{
    for (size_t i = 0; i < s->n_rows; i++) {
        free(s->rows[i].file);
        free(s->rows[i].name);
        free(s->rows[i].callers);
    }
    free(s->rows);
}

/* ---- a marshal reader after CPython's r_object -------------------------------- */

typedef struct reader {
    const uint8_t *p, *end;
} reader_t;

static uint8_t r_byte(reader_t *r)
{
    fuzz_assert(r->p < r->end, "EOF read where an object was expected");
    return *r->p++;
}

static int32_t r_long(reader_t *r)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)r_byte(r) << (8 * i);
    return (int32_t)v;
}

static uint8_t r_type(reader_t *r)
{
    uint8_t code = r_byte(r);
    fuzz_assert(!(code & 0x80), "FLAG_REF set");
    return code;
}

/* An int object (TYPE_INT or TYPE_LONG), as r_PyLong checks it. */
static int64_t r_int(reader_t *r)
{
    uint8_t type = r_type(r);
    if (type == 'i') return r_long(r);
    fuzz_assert(type == 'l', "type '%c' where an int was expected", type);
    int32_t n = r_long(r);
    fuzz_assert(n >= -0x7fffffff && n <= 0x7fffffff, "bad marshal data (long size out of range)");
    if (n == 0) return 0;
    int32_t digits = n < 0 ? -n : n;
    fuzz_assert(digits <= 5, "%d digits: more than an int64", digits);
    uint64_t mag = 0;
    int d = 0;
    for (int32_t i = 0; i < digits; i++) {
        d = (int)(r_byte(r) | (uint32_t)r_byte(r) << 8);
        fuzz_assert(d >= 0 && d <= 0x7fff, "bad marshal data (digit out of range in long)");
        mag |= (uint64_t)d << (15 * i);
    }
    fuzz_assert(d != 0, "bad marshal data (unnormalized long data)");
    if (n < 0) {
        fuzz_assert(mag <= (uint64_t)1 << 63, "below INT64_MIN");
        return (int64_t)(0 - mag);
    }
    fuzz_assert(mag <= INT64_MAX, "above INT64_MAX");
    return (int64_t)mag;
}

static uint64_t r_float_bits(reader_t *r)
{
    uint8_t type = r_type(r);
    fuzz_assert(type == 'g', "type '%c' where a binary float was expected", type);
    uint64_t bits = 0;
    for (int i = 0; i < 8; i++)
        bits |= (uint64_t)r_byte(r) << (8 * i);
    return bits;
}

/* TYPE_UNICODE, checked as PyUnicode_DecodeUTF8(..., "surrogatepass")
 * would decode it; returns a pointer into the stream. */
static const uint8_t *r_str(reader_t *r, size_t *len)
{
    uint8_t type = r_type(r);
    fuzz_assert(type == 'u', "type '%c' where a str was expected", type);
    int32_t n = r_long(r);
    fuzz_assert(n >= 0 && (size_t)n <= (size_t)(r->end - r->p), "bad marshal data (str size)");
    const uint8_t *s = r->p;
    for (int32_t i = 0; i < n;) {
        uint8_t b = s[i];
        int k = b < 0x80                ? 1
                : b >= 0xC2 && b < 0xE0 ? 2
                : (b & 0xF0) == 0xE0    ? 3
                : b >= 0xF0 && b < 0xF5 ? 4
                                        : 0;
        fuzz_assert(k > 0 && i + k <= n, "not UTF-8 at byte %d of a str", i);
        for (int j = 1; j < k; j++)
            fuzz_assert((s[i + j] & 0xC0) == 0x80, "not UTF-8 at byte %d of a str", i);
        if (k == 3) fuzz_assert(b != 0xE0 || s[i + 1] >= 0xA0, "an overlong form");
        if (k == 4) {
            fuzz_assert(b != 0xF0 || s[i + 1] >= 0x90, "an overlong form");
            fuzz_assert(b != 0xF4 || s[i + 1] < 0x90, "above U+10FFFF");
        }
        i += k;
    }
    r->p += n;
    *len = (size_t)n;
    return s;
}

static void r_tuple(reader_t *r, int32_t want)
{
    uint8_t type = r_type(r);
    fuzz_assert(type == '(', "type '%c' where a tuple was expected", type);
    int32_t n = r_long(r);
    fuzz_assert(n == want, "a tuple of %d items, %d expected", n, want);
}

static void r_key(reader_t *r, const sonde_trace_row_t *row)
{
    size_t len = 0;
    r_tuple(r, 3);
    const uint8_t *file = r_str(r, &len);
    fuzz_assert(len == row->file_len && memcmp(file, row->file, len) == 0, "the file changed");
    int64_t line = r_int(r);
    fuzz_assert(line == (int64_t)row->line, "line %lld read back as %lld", (long long)row->line,
                (long long)line);
    const uint8_t *name = r_str(r, &len);
    fuzz_assert(len == row->name_len && memcmp(name, row->name, len) == 0, "the name changed");
}

static uint64_t bits_of(double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    return bits;
}

static void read_back(const sonde_buf_t *out, const sonde_trace_stats_t *s)
{
    reader_t r = {(const uint8_t *)out->data, (const uint8_t *)out->data + out->len};
    fuzz_assert(r_type(&r) == '{', "not a dict");
    for (size_t i = 0; i < s->n_rows; i++) {
        const sonde_trace_row_t *row = &s->rows[i];
        r_key(&r, row);
        r_tuple(&r, 5);
        fuzz_assert(r_int(&r) == (int64_t)row->cc && r_int(&r) == (int64_t)row->nc,
                    "the counts of row %zu changed", i);
        fuzz_assert(r_float_bits(&r) == bits_of(row->tt) && r_float_bits(&r) == bits_of(row->ct),
                    "the times of row %zu changed", i);
        fuzz_assert(r_type(&r) == '{', "no callers dict");
        for (size_t k = 0; k < row->n_callers; k++) {
            const sonde_trace_caller_t *caller = &row->callers[k];
            r_key(&r, &s->rows[caller->row]);
            r_tuple(&r, 4);
            fuzz_assert(r_int(&r) == (int64_t)caller->nc && r_int(&r) == (int64_t)caller->cc,
                        "the counts of a caller changed");
            fuzz_assert(r_float_bits(&r) == bits_of(caller->tt) &&
                            r_float_bits(&r) == bits_of(caller->ct),
                        "the times of a caller changed");
        }
        fuzz_assert(r_type(&r) == '0', "the callers dict does not end");
    }
    fuzz_assert(r_type(&r) == '0', "the dict does not end");
    fuzz_assert(r.p == r.end, "%zu bytes after the dict", (size_t)(r.end - r.p));
}

/* ---- the target ---------------------------------------------------------------- */

static void text_report(fuzz_cursor_t *c, const sonde_trace_stats_t *s)
{
    static const char *const words[] = {"calls",   "ncalls", "cumtime", "cumulative", "filename",
                                        "line",    "module", "name",    "nfl",        "pcalls",
                                        "stdname", "time",   "tottime", "c",          "cu",
                                        "t",       "std",    "n",       "nonsense"};
    const char *chosen[4];
    int n = 1 + (int)(fuzz_uint(c, 1) % 4);
    for (int i = 0; i < n; i++)
        chosen[i] = words[fuzz_uint(c, 1) % SONDE_ARRAY_LEN(words)];
    sonde_trace_sort_t sort;
    char err[128];
    if (sonde_trace_sort_words(&sort, chosen, n, err, sizeof err) != 0 &&
        sonde_trace_sort_number(&sort, (long)(fuzz_uint(c, 1) % 4) - 1) != 0)
        return;
    sonde_buf_t text = SONDE_BUF_INIT;
    int rc = sonde_trace_text_report(s, &sort, &text);
    fuzz_assert(rc == 0 && text.len > 0, "the report failed: %d", rc);
    sonde_buf_free(&text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_cursor_t c = fuzz_cursor(data, size);
    sonde_trace_stats_t stats;
    memset(&stats, 0, sizeof stats);
    make_stats(&c, &stats);

    sonde_buf_t out = SONDE_BUF_INIT;
    int rc = sonde_trace_pstats_marshal(&stats, &out);
    fuzz_assert(rc == 0, "the pstats writer failed: %d", rc);
    read_back(&out, &stats);
    sonde_buf_free(&out);
    text_report(&c, &stats);
    free_stats(&stats);
    return 0;
}
