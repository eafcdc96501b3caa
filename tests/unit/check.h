/* check.h — the small harness shared by the C unit tests (header only).
 *
 * Each test program prints one line per check, "PASS name" or
 * "FAIL name: detail", and exits non-zero when any check failed
 * (check_exit_code). Helpers make temporary directories under /tmp, read
 * and write whole files, and remove trees. Tests run as root in CI, so
 * permission-based failures cannot be relied on.
 */
#ifndef SONDE_TEST_CHECK_H
#define SONDE_TEST_CHECK_H

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHECK_UNUSED __attribute__((unused))

static int check_failures;

/* Prints text on one line as valid UTF-8: newlines become " | ", other
 * control bytes and bytes that are not UTF-8 become \xNN (test runners
 * decode this output strictly). */
static void check_print_detail(const char *text)
{
    const unsigned char *p = (const unsigned char *)text;
    while (*p) {
        unsigned c = *p;
        size_t n = c < 0x80             ? 1
                   : (c & 0xe0) == 0xc0 ? 2
                   : (c & 0xf0) == 0xe0 ? 3
                   : (c & 0xf8) == 0xf0 ? 4
                                        : 0;
        bool ok = n > 0 && (n > 1 || (c >= 0x20 && c != 0x7f) || c == '\n');
        for (size_t i = 1; ok && i < n; i++)
            ok = (p[i] & 0xc0) == 0x80;
        if (ok && n == 2) ok = c >= 0xc2;
        if (ok && n == 3) {
            unsigned cp = ((c & 0x0f) << 12) | ((p[1] & 0x3fu) << 6) | (p[2] & 0x3fu);
            ok = cp >= 0x800 && (cp < 0xd800 || cp > 0xdfff);
        }
        if (ok && n == 4) {
            unsigned cp = ((c & 0x07) << 18) | ((p[1] & 0x3fu) << 12) | ((p[2] & 0x3fu) << 6) |
                          (p[3] & 0x3fu);
            ok = cp >= 0x10000 && cp <= 0x10ffff;
        }
        if (!ok) {
            printf("\\x%02x", c);
            p++;
        } else if (c == '\n') {
            printf(" | ");
            p++;
        } else {
            fwrite(p, 1, n, stdout);
            p += n;
        }
    }
}

/* Records one check: PASS, or FAIL with a printf-style detail (printed on
 * the same line). */
static CHECK_UNUSED __attribute__((format(printf, 3, 4))) bool check(bool ok, const char *name,
                                                                     const char *fmt, ...)
{
    if (ok) {
        printf("PASS %s\n", name);
    } else {
        char detail[8192];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(detail, sizeof detail, fmt, ap);
        va_end(ap);
        printf("FAIL %s: ", name);
        check_print_detail(detail);
        printf("\n");
        check_failures++;
    }
    fflush(stdout);
    return ok;
}

static CHECK_UNUSED int check_exit_code(void)
{
    return check_failures ? 1 : 0;
}

/* A fresh directory /tmp/sonde-test.XXXXXX (fixed length, so normalised
 * outputs do not depend on it). Exits on failure. Owned by the caller. */
static CHECK_UNUSED char *check_tempdir(void)
{
    char *dir = strdup("/tmp/sonde-test.XXXXXX");
    if (!dir || !mkdtemp(dir)) {
        perror("sonde test: mkdtemp");
        exit(2);
    }
    return dir;
}

/* dir + "/" + name, owned by the caller. */
static CHECK_UNUSED char *check_path(const char *dir, const char *name)
{
    size_t len = strlen(dir) + strlen(name) + 2;
    char *path = malloc(len);
    if (!path) exit(2);
    snprintf(path, len, "%s/%s", dir, name);
    return path;
}

static CHECK_UNUSED void check_write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
        fprintf(stderr, "sonde test: cannot write %s: %s\n", path, strerror(errno));
        exit(2);
    }
}

/* The whole file, NUL-terminated, owned by the caller; NULL if unreadable. */
static CHECK_UNUSED char *check_read_file(const char *path, size_t *len_out)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, len = 0;
    char *data = malloc(cap);
    size_t got;
    while (data && (got = fread(data + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (cap - len - 1 == 0) {
            char *grown = realloc(data, cap * 2);
            if (!grown) {
                free(data);
                data = NULL;
                break;
            }
            data = grown;
            cap *= 2;
        }
    }
    fclose(f);
    if (!data) exit(2);
    data[len] = 0;
    if (len_out) *len_out = len;
    return data;
}

static int check_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static CHECK_UNUSED void check_rm_rf(const char *dir)
{
    nftw(dir, check_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Entries of dir other than "." and "..", or -1. */
static CHECK_UNUSED int check_count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

/* Occurrences of needle in haystack. */
static CHECK_UNUSED int check_count(const char *haystack, const char *needle)
{
    int n = 0;
    size_t len = strlen(needle);
    for (const char *p = haystack; (p = strstr(p, needle)); p += len)
        n++;
    return n;
}

/* The interpreter the tests may run ($PYTHON, else python3). */
static CHECK_UNUSED const char *check_python(void)
{
    const char *python = getenv("PYTHON");
    return python && python[0] ? python : "python3";
}

/* Allocation-failure injection, for tests that define
 * CHECK_WITH_FAILING_MALLOC before including this header: replaces malloc
 * and friends (glibc allows that) with versions that fail the n-th call
 * after check_fail_alloc(n). Not under AddressSanitizer, which owns malloc;
 * CHECK_CAN_FAIL_MALLOC tells whether it is available. */
#if defined(CHECK_WITH_FAILING_MALLOC) && !defined(__SANITIZE_ADDRESS__) && defined(__GLIBC__)
#define CHECK_CAN_FAIL_MALLOC 1
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void __libc_free(void *p);

static long check_alloc_countdown = -1; /* -1: never fail */
static long check_alloc_failures;

/* The n-th allocation from now (0: the next one) fails; -1 disarms. */
static CHECK_UNUSED void check_fail_alloc(long n)
{
    check_alloc_countdown = n;
    check_alloc_failures = 0;
}

static bool check_alloc_fails(void)
{
    if (check_alloc_countdown < 0) return false;
    if (check_alloc_countdown-- > 0) return false;
    check_alloc_failures++;
    errno = ENOMEM;
    return true;
}

void *malloc(size_t size)
{
    return check_alloc_fails() ? NULL : __libc_malloc(size);
}
void *calloc(size_t n, size_t size)
{
    return check_alloc_fails() ? NULL : __libc_calloc(n, size);
}
void *realloc(void *p, size_t size)
{
    return check_alloc_fails() ? NULL : __libc_realloc(p, size);
}
void free(void *p)
{
    __libc_free(p);
}
#else
#define CHECK_CAN_FAIL_MALLOC 0
#endif

#endif
