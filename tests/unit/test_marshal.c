/* test_marshal.c — unit tests of the marshal encoder (src/core/marshal.c).
 *
 * Checks the bytes written for each type against what CPython's
 * marshal.dumps(value, 2) produces (constants taken from it), the int
 * boundaries where TYPE_INT turns into TYPE_LONG, and, when a Python
 * interpreter is available ($PYTHON or python3), that marshal.load reads a
 * pstats-shaped dict back to the expected value, non-ASCII and
 * surrogate-escaped names included.
 */
#include "core/marshal.h"

#include "check.h"

#include <stdint.h>

/* Hex of the buffer, owned by the caller. */
static char *marshal_hex(const sonde_buf_t *b)
{
    char *hex = malloc(b->len * 2 + 1);
    if (!hex) exit(2);
    for (size_t i = 0; i < b->len; i++)
        sprintf(hex + 2 * i, "%02x", (unsigned char)b->data[i]);
    hex[b->len * 2] = 0;
    return hex;
}

static void expect_int(int64_t v, const char *want, const char *name)
{
    sonde_buf_t b = SONDE_BUF_INIT;
    sonde_marshal_int(&b, v);
    char *hex = marshal_hex(&b);
    check(sonde_buf_error(&b) == 0 && strcmp(hex, want) == 0, name, "got %s, want %s", hex, want);
    free(hex);
    sonde_buf_free(&b);
}

static void test_ints(void)
{
    expect_int(0, "6900000000", "marshal_int_zero");
    expect_int(1, "6901000000", "marshal_int_one");
    expect_int(-1, "69ffffffff", "marshal_int_minus_one");
    expect_int(INT32_MAX, "69ffffff7f", "marshal_int_int32_max");
    expect_int((int64_t)INT32_MAX + 1, "6c03000000000000000200", "marshal_long_int32_max_plus_1");
    expect_int((int64_t)INT32_MIN - 1, "6cfdffffff010000000200", "marshal_long_int32_min_minus_1");
    expect_int(1099511627776LL, "6c03000000000000000004", "marshal_long_2_40");
    expect_int(-4611686018427387904LL, "6cfbffffff00000000000000000400", "marshal_long_minus_2_62");
    expect_int(INT64_MAX, "6c05000000ff7fff7fff7fff7f0700", "marshal_long_int64_max");
}

static void test_other_types(void)
{
    sonde_buf_t b = SONDE_BUF_INIT;
    sonde_marshal_float(&b, 1.5);
    char *hex = marshal_hex(&b);
    check(strcmp(hex, "67000000000000f83f") == 0, "marshal_float", "got %s", hex);
    free(hex);

    sonde_buf_reset(&b);
    sonde_marshal_str(&b, "ab", 2);
    hex = marshal_hex(&b);
    check(strcmp(hex, "75020000006162") == 0, "marshal_str", "got %s", hex);
    free(hex);

    sonde_buf_reset(&b);
    sonde_marshal_str(&b, "", 0);
    hex = marshal_hex(&b);
    check(strcmp(hex, "7500000000") == 0, "marshal_str_empty", "got %s", hex);
    free(hex);

    /* {('a', 1): (1, 2.0)} */
    sonde_buf_reset(&b);
    sonde_marshal_dict_begin(&b);
    sonde_marshal_tuple(&b, 2);
    sonde_marshal_str(&b, "a", 1);
    sonde_marshal_int(&b, 1);
    sonde_marshal_tuple(&b, 2);
    sonde_marshal_int(&b, 1);
    sonde_marshal_float(&b, 2.0);
    sonde_marshal_dict_end(&b);
    hex = marshal_hex(&b);
    check(strcmp(hex, "7b280200000075010000006169010000002802000000690100000067000000000000"
                      "004030") == 0,
          "marshal_dict_of_tuples", "got %s", hex);
    free(hex);
    sonde_buf_free(&b);
}

/* A pstats-shaped dict, loaded back by a real interpreter. */
static void test_python_reads_it(void)
{
    const char *python = check_python();
    char probe[512];
    snprintf(probe, sizeof probe, "%s -c 'import marshal' >/dev/null 2>&1", python);
    if (system(probe) != 0) {
        printf("SKIP marshal_python_roundtrip: no %s\n", python);
        return;
    }
    char *dir = check_tempdir();
    char *path = check_path(dir, "stats.prof");
    sonde_buf_t b = SONDE_BUF_INIT;
    /* key 1: a file with a non-ASCII name and a lone surrogate as written
     * by "surrogatepass" (U+DCFF = ED B3 BF) */
    const char *file = "/t/caf\xc3\xa9\xed\xb3\xbf.py";
    sonde_marshal_dict_begin(&b);
    sonde_marshal_tuple(&b, 3);
    sonde_marshal_str(&b, file, strlen(file));
    sonde_marshal_int(&b, 12);
    sonde_marshal_str(&b, "f", 1);
    sonde_marshal_tuple(&b, 5);
    sonde_marshal_int(&b, 3);
    sonde_marshal_int(&b, 5000000000LL);
    sonde_marshal_float(&b, 0.25);
    sonde_marshal_float(&b, 1.0 / 3.0);
    sonde_marshal_dict_begin(&b);
    sonde_marshal_tuple(&b, 3);
    sonde_marshal_str(&b, "~", 1);
    sonde_marshal_int(&b, 0);
    sonde_marshal_str(&b, "<built-in method builtins.len>", 30);
    sonde_marshal_tuple(&b, 4);
    sonde_marshal_int(&b, 2);
    sonde_marshal_int(&b, 1);
    sonde_marshal_float(&b, 1e-9);
    sonde_marshal_float(&b, -0.0);
    sonde_marshal_dict_end(&b);
    sonde_marshal_dict_end(&b);
    check(sonde_buf_error(&b) == 0, "marshal_no_error", "error %d", sonde_buf_error(&b));
    check_write_file(path, b.data, b.len);

    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "%s -c \"import marshal,sys\n"
             "d = marshal.load(open(sys.argv[1], 'rb'))\n"
             "want = {('/t/caf\\\\xe9\\\\udcff.py', 12, 'f'): (3, 5000000000, 0.25, 1/3, "
             "{('~', 0, '<built-in method builtins.len>'): (2, 1, 1e-09, -0.0)})}\n"
             "sys.exit(0 if d == want and repr(d) == repr(want) else 1)\" %s",
             python, path);
    int rc = system(cmd);
    check(rc == 0, "marshal_python_roundtrip", "python's marshal.load disagreed (status %d)", rc);
    sonde_buf_free(&b);
    check_rm_rf(dir);
    free(path);
    free(dir);
}

int main(void)
{
    test_ints();
    test_other_types();
    test_python_reads_it();
    return check_exit_code();
}
