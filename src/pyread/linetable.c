/* linetable.c — instruction offset to line number, for each CPython format.
 *
 * Owns: sonde_linetable_lookup. Called by code.c on every sampled frame
 * (with the code cache's private copy of the table) and by the unit test.
 * Pure: no allocation, no I/O; the table is hostile input, so every byte
 * read is bounds-checked and every accumulator is wide. Nothing here runs
 * in a signal handler (though it could).
 *
 * The three formats, as the interpreter itself decodes them:
 *  - 3.8, 3.9 co_lnotab: pairs (address increment, unsigned byte; line
 *    increment, signed byte). The line of offset X is firstlineno plus the
 *    line increments of every pair whose accumulated address is <= X.
 *    There is no "no line" value.
 *  - 3.10 co_linetable: pairs (byte delta, unsigned; line delta, signed;
 *    -128 = no line). Each pair is the range [end, end + delta) of the
 *    previous end; the line accumulates over every pair but the -128 ones.
 *  - 3.11+ location table (Objects/locations.md): entries whose first byte
 *    has bit 7 set, bits 3-6 a code and bits 0-2 the length in code units
 *    minus one. Code 15 = no location, 14 = long form and 13 = no columns
 *    (both start with a signed varint line delta), 10-12 = one-line form
 *    (delta code - 10), 0-9 = short form (delta 0). Varints are 6-bit
 *    little-endian chunks with bit 6 as "more"; a signed varint keeps the
 *    sign in bit 0. The rest of an entry (columns) is skipped by finding
 *    the next byte with bit 7 set.
 */
#include "pyread.h"

#include <limits.h>

#define LOC_CODE_NO_LOCATION 15
#define LOC_CODE_LONG 14
#define LOC_CODE_NO_COLUMNS 13
#define LOC_CODE_ONE_LINE0 10
/* A varint of more chunks than this cannot be a line delta. */
#define LOC_MAX_VARINT_CHUNKS 6

static int line_or_none(int64_t line)
{
    return line >= 0 && line <= INT_MAX ? (int)line : -1;
}

static int lnotab_lookup(const uint8_t *table, size_t len, int firstlineno, uint32_t offset)
{
    int64_t line = firstlineno;
    uint64_t addr = 0;

    for (size_t i = 0; i + 1 < len; i += 2) {
        addr += table[i];
        if (addr > offset) break;
        line += (int8_t)table[i + 1];
    }
    return line_or_none(line);
}

static int linetable310_lookup(const uint8_t *table, size_t len, int firstlineno, uint32_t offset)
{
    int64_t line = firstlineno;
    uint64_t end = 0;

    for (size_t i = 0; i + 1 < len; i += 2) {
        uint64_t start = end;
        int ldelta = (int8_t)table[i + 1];
        end += table[i];
        if (ldelta != -128) line += ldelta;
        if (start <= offset && offset < end) return ldelta == -128 ? -1 : line_or_none(line);
    }
    return -1;
}

/* Reads a varint at table[*pos]; returns false on a truncated or overlong
 * one. Stops at a byte with bit 7 set (the start of the next entry). */
static bool loc_read_varint(const uint8_t *table, size_t len, size_t *pos, uint64_t *value)
{
    uint64_t result = 0;

    for (int chunk = 0; chunk < LOC_MAX_VARINT_CHUNKS; chunk++) {
        if (*pos >= len || (table[*pos] & 0x80)) return false;
        uint8_t byte = table[(*pos)++];
        result |= (uint64_t)(byte & 63) << (6 * chunk);
        if (!(byte & 64)) {
            *value = result;
            return true;
        }
    }
    return false;
}

static int locations_lookup(const uint8_t *table, size_t len, int firstlineno, uint32_t offset)
{
    int64_t line = firstlineno;
    uint64_t end = 0;
    size_t pos = 0;

    while (pos < len) {
        uint8_t first = table[pos++];
        if (!(first & 0x80)) return -1; /* not at an entry start: malformed */
        int code = (first >> 3) & 15;
        uint64_t start = end;
        end += 2 * (uint64_t)((first & 7) + 1);

        if (code == LOC_CODE_LONG || code == LOC_CODE_NO_COLUMNS) {
            uint64_t raw = 0;
            if (!loc_read_varint(table, len, &pos, &raw)) return -1;
            int64_t magnitude = (int64_t)(raw >> 1);
            line += (raw & 1) ? -magnitude : magnitude;
        } else if (code >= LOC_CODE_ONE_LINE0 && code < LOC_CODE_NO_COLUMNS) {
            line += code - LOC_CODE_ONE_LINE0;
        }
        if (start <= offset && offset < end)
            return code == LOC_CODE_NO_LOCATION ? -1 : line_or_none(line);
        while (pos < len && !(table[pos] & 0x80))
            pos++;
    }
    return -1;
}

/* Line of the instruction at byte offset `offset`, decoding the table
 * format of CPython 3.`minor`. Range ends are exclusive. Returns the line,
 * or -1 for "no line", an offset past the table, a malformed table or an
 * unsupported version. */
int sonde_linetable_lookup(int minor, const uint8_t *table, size_t table_len, int firstlineno,
                           uint32_t offset)
{
    if (table == NULL && table_len != 0) return -1;
    if (table_len > SONDE_PY_MAX_LINETABLE) table_len = SONDE_PY_MAX_LINETABLE;
    if (minor >= 6 && minor <= 9) return lnotab_lookup(table, table_len, firstlineno, offset);
    if (minor == 10) return linetable310_lookup(table, table_len, firstlineno, offset);
    if (minor >= 11) return locations_lookup(table, table_len, firstlineno, offset);
    return -1;
}
