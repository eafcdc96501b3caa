/* test_linetable.c — unit test of sonde_linetable_lookup.
 *
 *   test_linetable            hand-built tables (every format, exclusive
 *                             range ends, "no line", malformed input)
 *   test_linetable FILE|-     also the ground truth printed by
 *                             tests/pyread/linetable_truth.py under one
 *                             interpreter, e.g.
 *       python3.11 tests/pyread/linetable_truth.py | test_linetable -
 *
 * Prints one line per check, "PASS name" or "FAIL name: detail"; exits 1 on
 * any failure (and when the truth input is empty or unreadable).
 */
#include "pyread/pyread.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static void check_lookup(const char *name, int minor, const uint8_t *table, size_t len,
                         int firstlineno, const int *expect, uint32_t n_offsets, uint32_t step)
{
    for (uint32_t i = 0; i < n_offsets; i++) {
        uint32_t offset = i * step;
        int got = sonde_linetable_lookup(minor, table, len, firstlineno, offset);
        if (got != expect[i]) {
            printf("FAIL %s: offset %u: got line %d, expected %d\n", name, offset, got, expect[i]);
            failures++;
            return;
        }
    }
    printf("PASS %s\n", name);
}

static void builtin_checks(void)
{
    /* 3.8/3.9 lnotab: (6, +1) (8, +2): 0-5 -> 10, 6-13 -> 11, 14.. -> 13 */
    static const uint8_t lnotab[] = {6, 1, 8, 2};
    static const int lnotab_expect[] = {10, 10, 10, 11, 11, 11, 11, 13, 13, 13};
    check_lookup("lnotab basic", 8, lnotab, sizeof lnotab, 10, lnotab_expect, 10, 2);

    /* negative increments: (4, +2) (4, -2); an odd trailing byte is ignored */
    static const uint8_t lnotab_neg[] = {4, 2, 4, 0xFE, 9};
    static const int lnotab_neg_expect[] = {5, 5, 7, 7, 5, 5};
    check_lookup("lnotab negative delta", 9, lnotab_neg, sizeof lnotab_neg, 5, lnotab_neg_expect, 6,
                 2);

    static const int lnotab_empty_expect[] = {42, 42};
    check_lookup("lnotab empty", 8, NULL, 0, 42, lnotab_empty_expect, 2, 2);

    /* 3.10: [0,4) +1 -> 2; [4,6) no line; [6,12) +2 -> 4; past the end: -1 */
    static const uint8_t lt310[] = {4, 1, 2, 0x80, 6, 2};
    static const int lt310_expect[] = {2, 2, -1, 4, 4, 4, -1, -1};
    check_lookup("3.10 linetable, exclusive ends, no-line", 10, lt310, sizeof lt310, 1,
                 lt310_expect, 8, 2);

    /* 3.10: an empty range (0, +5) still moves the line */
    static const uint8_t lt310_empty[] = {2, 1, 0, 5, 2, 0};
    static const int lt310_empty_expect[] = {2, 7, -1};
    check_lookup("3.10 linetable, empty range", 10, lt310_empty, sizeof lt310_empty, 1,
                 lt310_empty_expect, 3, 2);

    /* 3.11 locations, firstlineno 10:
     *   0xE9 06        code 13, 2 units, +3           [0,4)  -> 13
     *   0xF8           code 15, 1 unit, no location   [4,6)  -> -1
     *   0xD8 01 05     code 11, 1 unit, +1            [6,8)  -> 14
     *   0xF2 05 00 02 03  code 14, 3 units, -2        [8,14) -> 12
     *   0x82 11        code 0 (short), 3 units, +0    [14,20) -> 12
     *   0xE8 48 03     code 13, 1 unit, +100          [20,22) -> 112 */
    static const uint8_t loc[] = {0xE9, 0x06, 0xF8, 0xD8, 0x01, 0x05, 0xF2, 0x05,
                                  0x00, 0x02, 0x03, 0x82, 0x11, 0xE8, 0x48, 0x03};
    static const int loc_expect[] = {13, 13, -1, 14, 12, 12, 12, 12, 12, 12, 112, -1, -1};
    check_lookup("3.11 location table, all entry kinds", 11, loc, sizeof loc, 10, loc_expect, 13,
                 2);
    check_lookup("3.13 location table, same format", 13, loc, sizeof loc, 10, loc_expect, 13, 2);
    /* odd byte offsets fall inside the unit that contains them */
    static const int loc_odd_expect[] = {13, 13, 13, 13, -1, -1};
    check_lookup("3.11 location table, odd offsets", 11, loc, sizeof loc, 10, loc_odd_expect, 6, 1);

    static const uint8_t loc_bad_start[] = {0x05, 0xE9, 0x06};
    static const int minus_one[] = {-1, -1, -1};
    check_lookup("3.11 malformed: no entry start", 11, loc_bad_start, sizeof loc_bad_start, 1,
                 minus_one, 3, 2);
    static const uint8_t loc_truncated[] = {0xE8, 0x48};
    check_lookup("3.11 malformed: truncated varint", 11, loc_truncated, sizeof loc_truncated, 1,
                 minus_one, 3, 2);
    static const uint8_t loc_overlong[] = {0xE8, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x01};
    check_lookup("3.11 malformed: overlong varint", 11, loc_overlong, sizeof loc_overlong, 1,
                 minus_one, 3, 2);
    /* a negative line from a hostile delta reads as "no line" */
    static const uint8_t loc_negative[] = {0xE8, 0x15};
    check_lookup("3.11 hostile delta below line 0", 11, loc_negative, sizeof loc_negative, 1,
                 minus_one, 3, 2);
    check_lookup("unsupported version", 0, lnotab, sizeof lnotab, 1, minus_one, 3, 2);
}

/* ---- ground truth from the interpreter ----------------------------------- */

#define TRUTH_MAX_LINE (1 << 22)

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

static size_t decode_hex(const char *hex, uint8_t *out, size_t cap)
{
    size_t n = 0;
    if (strcmp(hex, "-") == 0) return 0;
    while (hex[0] && hex[1] && n < cap) {
        int hi = hexval(hex[0]), lo = hexval(hex[1]);
        if (hi < 0 || lo < 0) break;
        out[n++] = (uint8_t)(hi << 4 | lo);
        hex += 2;
    }
    return n;
}

struct truth_code {
    char name[128];
    int firstlineno;
    uint8_t *table;
    size_t table_len;
    int checked, bad;
    char first_bad[160];
};

static void finish_code(int minor, struct truth_code *code, int *n_codes)
{
    if (code->name[0] == 0) return;
    (*n_codes)++;
    if (code->bad == 0 && code->checked > 0) {
        printf("PASS 3.%d %s: %d offsets\n", minor, code->name, code->checked);
    } else {
        printf("FAIL 3.%d %s: %d of %d offsets wrong, first %s\n", minor, code->name, code->bad,
               code->checked, code->checked ? code->first_bad : "(no offsets)");
        failures++;
    }
    code->name[0] = 0;
}

static int truth_checks(FILE *in)
{
    static char line[TRUTH_MAX_LINE];
    static uint8_t table[TRUTH_MAX_LINE / 2];
    struct truth_code code = {{0}, 0, table, 0, 0, 0, {0}};
    int minor = -1, n_codes = 0, warnings = 0;

    while (fgets(line, sizeof line, in)) {
        line[strcspn(line, "\n")] = 0;
        if (strncmp(line, "minor ", 6) == 0) {
            minor = atoi(line + 6);
        } else if (strncmp(line, "code ", 5) == 0) {
            finish_code(minor, &code, &n_codes);
            char name[100], hex[16];
            int firstlineno = 0;
            unsigned code_bytes = 0;
            if (sscanf(line, "code %99s %d %u %15s", name, &firstlineno, &code_bytes, hex) != 4) {
                printf("FAIL truth input: bad line '%.60s'\n", line);
                failures++;
                continue;
            }
            const char *table_hex = strrchr(line, ' ') + 1;
            snprintf(code.name, sizeof code.name, "%s@%d", name, firstlineno);
            code.firstlineno = firstlineno;
            code.table_len = decode_hex(table_hex, table, sizeof table);
            code.checked = code.bad = 0;
        } else if (strncmp(line, "at ", 3) == 0 && code.name[0]) {
            unsigned offset = 0;
            int expect = 0;
            if (sscanf(line, "at %u %d", &offset, &expect) != 2) continue;
            int got =
                sonde_linetable_lookup(minor, code.table, code.table_len, code.firstlineno, offset);
            code.checked++;
            if (got != expect && code.bad++ == 0)
                snprintf(code.first_bad, sizeof code.first_bad,
                         "offset %u: got %d, interpreter says %d", offset, got, expect);
        } else if (strncmp(line, "warn ", 5) == 0) {
            warnings++;
        }
    }
    finish_code(minor, &code, &n_codes);
    if (minor < 0 || n_codes == 0) {
        printf("FAIL truth input: no code objects read\n");
        failures++;
    } else if (warnings) {
        printf("FAIL 3.%d truth input: the interpreter disagreed with itself "
               "%d times (PyCode_Addr2Line vs co_lines)\n",
               minor, warnings);
        failures++;
    } else {
        printf("PASS 3.%d truth input: %d code objects\n", minor, n_codes);
    }
    return 0;
}

int main(int argc, char **argv)
{
    builtin_checks();
    if (argc > 1) {
        FILE *in = strcmp(argv[1], "-") == 0 ? stdin : fopen(argv[1], "r");
        if (in == NULL) {
            printf("FAIL truth input: cannot open %s\n", argv[1]);
            return 1;
        }
        truth_checks(in);
        if (in != stdin) fclose(in);
    }
    return failures ? 1 : 0;
}
