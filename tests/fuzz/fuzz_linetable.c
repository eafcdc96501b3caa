/* fuzz_linetable.c — libFuzzer target: the line tables of every CPython
 * version (src/pyread/linetable.c), which the reader copies out of the
 * profiled process's code objects.
 *
 * Input: one byte choosing the format (the supported versions,
 * src/pyread/pyversions.h, and minor versions 0 to 15 whether supported
 * or not: 3.6/3.7 co_lnotab, those outside the range no table), a 32-bit
 * firstlineno, then the table. Checked: a lookup at any offset returns -1
 * or a line >= 0, never reads outside the table (ASan: the table is a heap
 * copy of exactly its length), and, for tables
 * CPython itself decodes without reading past their end, the same line as
 * an independent decoder written after CPython's own loops
 * (Objects/codeobject.c: PyCode_Addr2Line of 3.8/3.9, the 3.10 address
 * ranges, the 3.11+ location entries with scan_varint and advance).
 */
#include "pyread/pyread.h"
#include "pyread/pyversions.h"

#include "fuzz.h"

#include <limits.h>

#define FUZZ_TABLE_MAX 1024 /* bytes of a table */
#define FUZZ_LOOKUPS 256    /* offsets looked up per input */
#define FUZZ_RANGES (FUZZ_TABLE_MAX + 1)
#define FUZZ_MINORS (SONDE_PY_MINOR_MAX - SONDE_PY_MINOR_MIN + 1) /* supported */

/* An address range of the reference decoder: [start, end) has line. */
struct ref_range {
    int64_t start, end, line; /* line -1: none */
};

/* CPython 3.8/3.9 PyCode_Addr2Line, verbatim in spirit. */
static int64_t ref_lnotab(const uint8_t *t, size_t len, int first, int64_t addrq)
{
    int64_t line = first, addr = 0;
    for (size_t size = len / 2, i = 0; size > 0; size--, i += 2) {
        addr += t[i];
        if (addr > addrq) break;
        line += (int8_t)t[i + 1];
    }
    return line;
}

/* CPython 3.10 ranges: every pair advances; ldelta -128 means no line. */
static int ref_ranges_310(const uint8_t *t, size_t len, int first, struct ref_range *r)
{
    int n = 0;
    int64_t end = 0, line = first;
    if (len % 2) return -1; /* CPython would read the missing byte */
    for (size_t i = 0; i < len; i += 2) {
        int ldelta = (int8_t)t[i + 1];
        int64_t start = end;
        end += t[i];
        if (ldelta != -128) line += ldelta;
        r[n++] = (struct ref_range){start, end, ldelta == -128 ? -1 : line};
    }
    return n;
}

/* CPython 3.11+ scan_varint, refusing what would make CPython read past
 * the table or past an entry (a chunk with bit 7 set) or overflow its
 * unsigned int (more than 5 chunks). */
static bool ref_varint(const uint8_t *t, size_t len, size_t pos, uint32_t *value)
{
    uint32_t val = 0;
    for (int chunk = 0; chunk < 5; chunk++) {
        if (pos >= len || (t[pos] & 128)) return false;
        uint8_t read = t[pos++];
        val |= (uint32_t)(read & 63) << (6 * chunk);
        if (!(read & 64)) {
            *value = val;
            return true;
        }
    }
    return false;
}

/* CPython 3.11+ advance() over the whole table. */
static int ref_ranges_311(const uint8_t *t, size_t len, int first, struct ref_range *r)
{
    int n = 0;
    int64_t end = 0, computed = first;
    size_t next = 0;
    if (len > 0 && !(t[0] & 128)) return -1; /* not an entry: CPython asserts */
    while (next < len) {
        uint8_t b = t[next];
        int code = (b >> 3) & 15;
        int64_t delta = 0;
        if (code == 13 || code == 14) {
            uint32_t u = 0;
            if (!ref_varint(t, len, next + 1, &u)) return -1;
            delta = (u & 1) ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
        } else if (code >= 10 && code <= 12) {
            delta = code - 10;
        }
        computed += delta;
        if (computed > INT_MAX || computed < INT_MIN) return -1; /* CPython's int overflows */
        int64_t start = end;
        end += ((b & 7) + 1) * 2;
        r[n++] = (struct ref_range){start, end, (b >> 3) == 0x1f ? -1 : computed};
        do
            next++;
        while (next < len && !(t[next] & 128));
    }
    return n;
}

static int64_t ref_in_ranges(const struct ref_range *r, int n, int64_t offset)
{
    for (int i = 0; i < n; i++)
        if (r[i].start <= offset && offset < r[i].end) return r[i].line;
    return -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct ref_range ranges[FUZZ_RANGES];
    fuzz_cursor_t c = fuzz_cursor(data, size);
    int selector = (int)fuzz_uint(&c, 1);
    int minor = selector < 240 ? SONDE_PY_MINOR_MIN + selector % FUZZ_MINORS
                               : selector - 240; /* 0..15: outside too */
    int first = (int)(int32_t)fuzz_uint(&c, 4);
    size_t len = 0;
    const uint8_t *bytes = fuzz_bytes(&c, FUZZ_TABLE_MAX, &len);
    uint8_t *table = malloc(len ? len : 1);
    if (table == NULL) abort();
    memcpy(table, bytes, len);

    int n_ranges = -1;
    bool lnotab = minor >= 6 && minor <= 9; /* 3.6 and 3.7 wrote co_lnotab too */
    if (minor == 10) n_ranges = ref_ranges_310(table, len, first, ranges);
    if (minor >= 11 && minor <= SONDE_PY_MINOR_MAX)
        n_ranges = ref_ranges_311(table, len, first, ranges);
    int64_t span = n_ranges > 0 ? ranges[n_ranges - 1].end : 0;
    if (lnotab)
        for (size_t i = 0; i + 1 < len; i += 2)
            span += table[i];
    uint32_t step = (uint32_t)(span / FUZZ_LOOKUPS) + 1;

    for (uint32_t k = 0; k <= FUZZ_LOOKUPS + 4; k++) {
        uint32_t offset = k * step + (k & 1); /* odd offsets too */
        int got = sonde_linetable_lookup(minor, table, len, first, offset);
        fuzz_assert(got >= -1, "line %d at offset %u", got, offset);
        int64_t want = -2; /* no reference */
        if (lnotab) want = ref_lnotab(table, len, first, offset);
        if (n_ranges >= 0) want = ref_in_ranges(ranges, n_ranges, offset);
        if (minor < 6 || minor > SONDE_PY_MINOR_MAX) want = -1;
        if (want == -2) continue;
        if (want < 0 || want > INT_MAX) want = -1; /* sonde: no line */
        fuzz_assert(got == want, "3.%d, firstlineno %d, offset %u: line %d, CPython's loop %lld",
                    minor, first, offset, got, (long long)want);
    }
    /* offsets at the very end of the range */
    fuzz_assert(sonde_linetable_lookup(minor, table, len, first, UINT32_MAX) >= -1, "line < -1");
    free(table);
    return 0;
}
