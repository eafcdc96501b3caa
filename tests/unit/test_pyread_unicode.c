/* test_pyread_unicode.c — unit test of sonde_pystr_read (unicode.c).
 *
 * Builds str objects in this process's memory with the layout of every
 * supported version (compact ASCII, compact UCS1/UCS2/UCS4, non-compact,
 * not-ready wstr where the version has it), reads them back through the
 * fault-safe reader and compares the UTF-8 with what the text must encode
 * to. Prints "PASS name" / "FAIL name: detail"; exits 1 on any failure.
 */
#include "pyread/pyread_internal.h"

#include <stdio.h>
#include <string.h>

static int failures;
static sonde_mem_t mem;

static void check(bool ok, const char *name, const char *detail)
{
    if (ok) {
        printf("PASS %s\n", name);
    } else {
        printf("FAIL %s: %s\n", name, detail);
        failures++;
    }
}

/* A str object header for `off`, placed at the start of obj. */
static void make_str(const sonde_pyoffsets_t *off, uint8_t *obj, bool compact, bool ascii, int kind,
                     bool ready, int64_t length)
{
    uint32_t state = (uint32_t)kind << off->unicode_kind_shift;
    state |= (uint32_t)compact << off->unicode_compact_shift;
    state |= (uint32_t)ascii << off->unicode_ascii_shift;
    if (off->unicode_ready_shift >= 0) state |= (uint32_t)ready << off->unicode_ready_shift;
    memset(obj, 0, (size_t)off->unicode_data_any + 8);
    memcpy(obj + off->unicode_state, &state, sizeof state);
    memcpy(obj + off->unicode_length, &length, sizeof length);
}

static void put_ptr(uint8_t *obj, int32_t at, const void *ptr)
{
    uint64_t value = (uint64_t)(uintptr_t)ptr;
    memcpy(obj + at, &value, sizeof value);
}

static void expect_read(const sonde_pyoffsets_t *off, const uint8_t *obj, size_t cap,
                        const char *want, const char *what)
{
    char out[SONDE_PY_MAX_STRING + 16], name[128], detail[200];
    int rc = sonde_pystr_read(&mem, off, (uint64_t)(uintptr_t)obj, out, cap);
    snprintf(name, sizeof name, "3.%d %s", off->minor, what);
    snprintf(detail, sizeof detail, "rc %d, got \"%.60s\", want \"%.60s\"", rc, rc >= 0 ? out : "",
             want);
    check(rc == (int)strlen(want) && strcmp(out, want) == 0, name, detail);
}

static void check_layout(const sonde_pyoffsets_t *off)
{
    static uint8_t obj[8192] __attribute__((aligned(16)));
    static uint8_t data[8192] __attribute__((aligned(16)));
    char name[128], detail[64], out[64];

    make_str(off, obj, true, true, 1, true, 5);
    memcpy(obj + off->unicode_ascii_size, "hello", 6);
    expect_read(off, obj, 64, "hello", "compact ASCII");

    static const uint8_t cafe[] = {'c', 'a', 'f', 0xE9};
    make_str(off, obj, true, false, 1, true, 4);
    memcpy(obj + off->unicode_compact_size, cafe, 4);
    expect_read(off, obj, 64, "caf\xC3\xA9", "compact UCS1 (Latin-1)");

    static const uint16_t privet[] = {0x41F, 0x440, 0x438, 0x432, 0x435, 0x442, 0xD800};
    make_str(off, obj, true, false, 2, true, 7);
    memcpy(obj + off->unicode_compact_size, privet, sizeof privet);
    expect_read(off, obj, 64, "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82\xEF\xBF\xBD",
                "compact UCS2, lone surrogate becomes U+FFFD");
    expect_read(off, obj, 6, "\xD0\x9F\xD1\x80", "UCS2 cut at a character boundary");

    static const uint32_t smile[] = {0x1F600, 'x', 0x110000, 0};
    make_str(off, obj, true, false, 4, true, 4);
    memcpy(obj + off->unicode_compact_size, smile, sizeof smile);
    expect_read(off, obj, 64, "\xF0\x9F\x98\x80x\xEF\xBF\xBD\xEF\xBF\xBD",
                "compact UCS4, invalid code point and NUL become U+FFFD");

    static const uint16_t ab[] = {'a', 0xE9};
    memcpy(data, ab, sizeof ab);
    make_str(off, obj, false, false, 2, true, 2);
    put_ptr(obj, off->unicode_data_any, data);
    expect_read(off, obj, 64, "a\xC3\xA9", "non-compact string (data pointer)");

    if (off->unicode_wstr >= 0) {
        wchar_t wide[] = {L'w', L'\u00FC', L'\u4E2D'};
        int64_t wlen = 3;
        memcpy(data, wide, sizeof wide);
        make_str(off, obj, false, false, 0, false, 0);
        put_ptr(obj, off->unicode_wstr, data);
        memcpy(obj + off->unicode_wstr_length, &wlen, sizeof wlen);
        expect_read(off, obj, 64, "w\xC3\xBC\xE4\xB8\xAD", "not ready: read through wstr");
    }

    make_str(off, obj, true, true, 1, true, 6000);
    memset(obj + off->unicode_ascii_size, 'z', 6000);
    int rc = sonde_pystr_read(&mem, off, (uint64_t)(uintptr_t)obj, (char *)data, sizeof data);
    snprintf(name, sizeof name, "3.%d long string bounded by SONDE_PY_MAX_STRING", off->minor);
    snprintf(detail, sizeof detail, "rc %d", rc);
    check(rc == SONDE_PY_MAX_STRING && strlen((char *)data) == SONDE_PY_MAX_STRING, name, detail);

    make_str(off, obj, true, false, 3, true, 2);
    rc = sonde_pystr_read(&mem, off, (uint64_t)(uintptr_t)obj, out, sizeof out);
    snprintf(name, sizeof name, "3.%d invalid kind is -EINVAL", off->minor);
    snprintf(detail, sizeof detail, "rc %d", rc);
    check(rc == -EINVAL && out[0] == 0, name, detail);

    make_str(off, obj, true, true, 1, true, -5);
    rc = sonde_pystr_read(&mem, off, (uint64_t)(uintptr_t)obj, out, sizeof out);
    snprintf(name, sizeof name, "3.%d negative length is -EINVAL", off->minor);
    snprintf(detail, sizeof detail, "rc %d", rc);
    check(rc == -EINVAL, name, detail);

    make_str(off, obj, false, false, 2, true, 2);
    put_ptr(obj, off->unicode_data_any, (void *)(uintptr_t)0x10);
    rc = sonde_pystr_read(&mem, off, (uint64_t)(uintptr_t)obj, out, sizeof out);
    snprintf(name, sizeof name, "3.%d bad data pointer is -EFAULT", off->minor);
    snprintf(detail, sizeof detail, "rc %d", rc);
    check(rc == -EFAULT && out[0] == 0, name, detail);
}

int main(void)
{
    if (sonde_mem_open(&mem, 0) != 0) return 1;
    for (int minor = SONDE_PY_MINOR_MIN; minor <= SONDE_PY_MINOR_MAX; minor++) {
        const sonde_pyoffsets_t *off = sonde_pyoffsets_find(3, minor);
        if (off) check_layout(off);
    }
    sonde_mem_close(&mem);
    return failures ? 1 : 0;
}
