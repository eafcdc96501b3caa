/* test_pyread_code.c — unit test of the call-family classification
 * (sonde_pycode_call_bits) and of the generated per-version tables.
 *
 *   test_pyread_code            built-in checks on every table
 *   test_pyread_code FILE|-     also the ground truth printed by
 *                               tests/pyread/code_truth.py under one
 *                               interpreter, e.g.
 *       python3.12 tests/pyread/code_truth.py | test_pyread_code -
 *
 * Prints "PASS name" or "FAIL name: detail" per check; exits 1 on failure.
 */
#include "pyread/pyread_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CODE_MAX_LINE (1 << 20)

static int failures;

static void check(bool ok, const char *name, const char *detail)
{
    if (ok) {
        printf("PASS %s\n", name);
    } else {
        printf("FAIL %s: %s\n", name, detail);
        failures++;
    }
}

static void bits_to_text(const uint8_t *bits, uint32_t n, char *text)
{
    for (uint32_t u = 0; u < n; u++)
        text[u] = (bits[u >> 3] >> (u & 7)) & 1 ? '1' : '0';
    text[n] = 0;
}

/* Every supported version has a table whose fields are self-consistent. */
static void check_tables(void)
{
    char name[96], detail[160];

    for (int minor = SONDE_PY_MINOR_MIN; minor <= SONDE_PY_MINOR_MAX; minor++) {
        const sonde_pyoffsets_t *off = sonde_pyoffsets_find(3, minor);
        snprintf(name, sizeof name, "3.%d table present and consistent", minor);
        if (off == NULL) {
            check(false, name, "no table");
            continue;
        }
        bool ok = off->major == 3 && off->minor == minor &&
                  off->frame_model == (minor <= 10   ? SONDE_PYFRAMES_OBJECT
                                       : minor <= 12 ? SONDE_PYFRAMES_CFRAME
                                                     : SONDE_PYFRAMES_DIRECT) &&
                  (off->code_qualname >= 0) == (minor >= 11) &&
                  (off->tstate_native_thread_id >= 0) == (minor >= 11) &&
                  (off->frame_owner_cstack >= 0) == (minor >= 12) &&
                  (off->n_debug_checks > 0) == (minor >= 13) && off->op_extended_arg > 0 &&
                  off->base_op[off->op_extended_arg] == off->op_extended_arg;
        int calls = 0;
        for (int op = 0; op < 256; op++)
            calls += sonde_pyop_is_call(off, (unsigned)op);
        ok = ok && calls >= 4;
        snprintf(detail, sizeof detail, "%d call-family opcodes, frame model %d", calls,
                 off->frame_model);
        check(ok, name, detail);
    }
    check(sonde_pyoffsets_find(3, SONDE_PY_MINOR_MIN - 1) == NULL &&
              sonde_pyoffsets_find(3, SONDE_PY_MINOR_MAX + 1) == NULL &&
              sonde_pyoffsets_find(2, 7) == NULL,
          "unsupported versions have no table", "found one");
}

/* Hand-made bytecode where the answer does not depend on the tables. */
static void check_synthetic(void)
{
    const sonde_pyoffsets_t *off38 = sonde_pyoffsets_find(3, 8);
    const sonde_pyoffsets_t *off312 = sonde_pyoffsets_find(3, 12);
    uint8_t bits[8];
    char text[64];

    /* 3.8: NOP-like ops, EXTENDED_ARG + CALL_FUNCTION (131), POP_TOP */
    uint8_t code38[] = {100, 0, 144, 1, 131, 44, 1, 0};
    sonde_pycode_call_bits(off38, code38, 4, NULL, 1, NULL, bits);
    bits_to_text(bits, 4, text);
    check(strcmp(text, "0110") == 0, "3.8 EXTENDED_ARG prefix belongs to the call", text);

    /* 3.12: INSTRUMENTED_LINE hiding LOAD_GLOBAL (116, 4 caches) whose cache
     * entries happen to hold the CALL opcode byte (171): resolved, they are
     * caches; unresolved, they would read as calls. */
    uint8_t code312[] = {
        (uint8_t)off312->op_instrumented_line, 1, 171, 0, 171, 0, 171, 0, 171, 0, 1, 0};
    uint8_t orig_line[6] = {0, 0, 0, 0, 0, 0};
    orig_line[0] = 116;
    sonde_pycode_call_bits(off312, code312, 6, orig_line, 1, NULL, bits);
    bits_to_text(bits, 6, text);
    check(strcmp(text, "000000") == 0, "3.12 INSTRUMENTED_LINE resolved through monitoring data",
          text);
    sonde_pycode_call_bits(off312, code312, 6, NULL, 1, NULL, bits);
    bits_to_text(bits, 6, text);
    check(strcmp(text, "000000") != 0, "3.12 unresolved INSTRUMENTED_LINE misreads (control)",
          text);

    /* a call at the very end, its caches cut off: no overrun */
    uint8_t tail[] = {1, 0, 171, 0};
    sonde_pycode_call_bits(off312, tail, 2, NULL, 1, NULL, bits);
    bits_to_text(bits, 2, text);
    check(strcmp(text, "01") == 0, "3.12 truncated call at the end", text);
}

/* ---- ground truth from the interpreter ----------------------------------- */

static int hexval(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static size_t decode_hex(const char *hex, size_t hex_len, uint8_t *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i + 1 < hex_len && n < cap; i += 2) {
        int hi = hexval(hex[i]), lo = hexval(hex[i + 1]);
        if (hi < 0 || lo < 0) break;
        out[n++] = (uint8_t)(hi << 4 | lo);
    }
    return n;
}

static void truth_checks(FILE *in)
{
    static char line[CODE_MAX_LINE], got[CODE_MAX_LINE / 2];
    static uint8_t code[CODE_MAX_LINE / 2], orig[CODE_MAX_LINE / 4], bits[CODE_MAX_LINE / 16];
    char name[128] = "", label[160], detail[256];
    const sonde_pyoffsets_t *off = NULL;
    size_t code_len = 0, orig_len = 0;
    int minor = -1, records = 0;

    while (fgets(line, sizeof line, in)) {
        line[strcspn(line, "\n")] = 0;
        if (strncmp(line, "minor ", 6) == 0) {
            minor = atoi(line + 6);
            off = sonde_pyoffsets_find(3, minor);
        } else if (strncmp(line, "code ", 5) == 0) {
            char *hex = strchr(line + 5, ' ');
            char *orig_hex = hex ? strchr(hex + 1, ' ') : NULL;
            if (hex == NULL || orig_hex == NULL) continue;
            snprintf(name, sizeof name, "%.*s", (int)(hex - line - 5), line + 5);
            code_len = decode_hex(hex + 1, (size_t)(orig_hex - hex - 1), code, sizeof code);
            orig_len = decode_hex(orig_hex + 1, strlen(orig_hex + 1), orig, sizeof orig);
        } else if (strncmp(line, "expect ", 7) == 0 && off && name[0]) {
            const char *expect = line + 7;
            uint32_t n_units = (uint32_t)(code_len / 2);
            const uint8_t *hidden = orig_len >= n_units && n_units ? orig : NULL;
            sonde_pycode_call_bits(off, code, n_units, hidden, 1, hidden, bits);
            bits_to_text(bits, n_units, got);
            snprintf(label, sizeof label, "3.%d %s: call-family units match dis", minor, name);
            size_t bad = 0;
            while (bad < n_units && got[bad] == expect[bad])
                bad++;
            snprintf(detail, sizeof detail,
                     "%zu units (expected %zu); first difference at unit %zu", (size_t)n_units,
                     strlen(expect), bad);
            check(strlen(expect) == n_units && strcmp(got, expect) == 0, label, detail);
            records++;
            name[0] = 0;
        }
    }
    snprintf(label, sizeof label, "3.%d truth input read", minor);
    check(off != NULL && records > 0, label, "no records (or no table for that version)");
}

int main(int argc, char **argv)
{
    check_tables();
    check_synthetic();
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
