/* test_pyread_maps.c — unit test of the /proc/PID/maps parser (maps.c).
 *
 * Well-formed and hostile lines, version hints from file names, choosing
 * the interpreter's images, and random text (must not crash). Prints
 * "PASS name" / "FAIL name: detail"; exits 1 on any failure.
 */
#include "pyread/pyread_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAPS_FUZZ_ROUNDS 20000

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

static int parse(const char *line, sonde_maps_line_t *m)
{
    return sonde_maps_parse_line(line, strlen(line), m);
}

static void check_lines(void)
{
    sonde_maps_line_t m;
    char detail[200];

    int rc = parse("7f1c2a000000-7f1c2a021000 r-xp 00001000 fe:00 247498     "
                   "/usr/lib/x86_64-linux-gnu/libc.so.6",
                   &m);
    snprintf(detail, sizeof detail, "rc %d start %llx end %llx offset %llx inode %llu path %.*s",
             rc, (unsigned long long)m.start, (unsigned long long)m.end,
             (unsigned long long)m.offset, (unsigned long long)m.inode, (int)m.path_len, m.path);
    check(rc == 0 && m.start == 0x7f1c2a000000ull && m.end == 0x7f1c2a021000ull &&
              m.offset == 0x1000 && m.inode == 247498 && strcmp(m.perms, "r-xp") == 0 &&
              m.path_len == 35 && memcmp(m.path, "/usr/lib/x86_64-linux-gnu/libc.so.6", 35) == 0,
          "file mapping", detail);

    rc = parse("7ffd1e0a2000-7ffd1e0c3000 rw-p 00000000 00:00 0                  [stack]", &m);
    check(rc == 0 && m.path_len == 7 && memcmp(m.path, "[stack]", 7) == 0, "pseudo path", "");
    rc = parse("55d0c0a6e000-55d0c0a8f000 rw-p 00000000 00:00 0 ", &m);
    check(rc == 0 && m.path_len == 0, "anonymous mapping", "");
    rc = parse("00400000-00401000 r--p 00000000 08:01 12 /tmp/a dir/with spaces (deleted)", &m);
    check(rc == 0 && m.path_len == 32 && m.path[31] == ')', "path with spaces kept whole", "");

    static const char *const bad[] = {
        "",
        "-",
        "7f00-",
        "7f00-7f10",
        "7f00-7f10 r-x",
        "7f10-7f00 r-xp 00000000 00:00 0 /start/after/end",
        "12345678901234567-7f10 r-xp 00000000 00:00 0 /too/many/digits",
        "7f00-7f10 r-xp 0000000g 00:00 0 /bad/hex",
        "7f00-7f10 r-xp 00000000 0000 0 /no/colon",
        "7f00-7f10 r-xp 00000000 00:00 x /bad/inode",
        "zz00-7f10 r-xp 00000000 00:00 0 /bad/start",
    };
    int rejected = 0;
    for (size_t i = 0; i < SONDE_ARRAY_LEN(bad); i++)
        rejected += parse(bad[i], &m) == -EINVAL;
    snprintf(detail, sizeof detail, "%d of %zu rejected", rejected, SONDE_ARRAY_LEN(bad));
    check(rejected == (int)SONDE_ARRAY_LEN(bad), "malformed lines rejected", detail);
}

static void check_hints(void)
{
    static const struct {
        const char *path;
        int minor;
    } cases[] = {
        {"/usr/lib/libpython3.11.so.1.0", 11},
        {"libpython3.8.so", 8},
        {"/opt/py/lib/libpython3.13t.so.1.0", 13},
        {"/usr/lib/libpython3.7m.so.1.0", 7},
        {"/usr/bin/python3.12", 12},
        {"/usr/bin/python3.13t", 13},
        {"/usr/lib/libpython3.so", -1},
        {"/usr/bin/python3", -1},
        {"/usr/bin/python", -1},
        {"/usr/bin/mypython3.11", -1},
        {"/x/libpython3.999.so", -1},
        {"", -1},
    };
    int good = 0;
    char detail[160] = "";
    for (size_t i = 0; i < SONDE_ARRAY_LEN(cases); i++) {
        int got = sonde_maps_minor_hint(cases[i].path, strlen(cases[i].path));
        if (got == cases[i].minor)
            good++;
        else
            snprintf(detail, sizeof detail, "%s: got %d, want %d", cases[i].path, got,
                     cases[i].minor);
    }
    check(good == (int)SONDE_ARRAY_LEN(cases), "version hints from file names", detail);
}

static void check_images(void)
{
    static const char text[] =
        "55f0a0000000-55f0a0001000 r--p 00000000 fe:00 100 /usr/bin/python3.11\n"
        "55f0a0001000-55f0a0300000 r-xp 00001000 fe:00 100 /usr/bin/python3.11\n"
        "7f0000000000-7f0000100000 r--p 00000000 fe:00 200 /opt/lib/libpython3.12.so.1.0 "
        "(deleted)\n"
        "7f0000100000-7f0000200000 r-xp 00100000 fe:00 200 /opt/lib/libpython3.12.so.1.0 "
        "(deleted)\n"
        "7f1000000000-7f1000001000 r--p 00000000 fe:00 300 /opt/lib/libpython3.so\n"
        "7f2000000000-7f2000001000 r--p 00000000 fe:00 200 /opt/lib/libpython3.12.so.1.0 "
        "(deleted)\n"
        "garbage line\n"
        "7ffd00000000-7ffd00001000 rw-p 00000000 00:00 0 [stack]";
    sonde_maps_image_t images[4];
    char detail[300];

    int n = sonde_maps_find_images(text, sizeof text - 1, "/usr/bin/python3.11", images, 4);
    snprintf(detail, sizeof detail, "n %d; [0] %.100s @%llx hint %d; [1] %.100s @%llx hint %d", n,
             n > 0 ? images[0].path : "", n > 0 ? (unsigned long long)images[0].base : 0,
             n > 0 ? images[0].minor_hint : 0, n > 1 ? images[1].path : "",
             n > 1 ? (unsigned long long)images[1].base : 0, n > 1 ? images[1].minor_hint : 0);
    check(n == 2 && strcmp(images[0].path, "/usr/bin/python3.11") == 0 &&
              images[0].base == 0x55f0a0000000ull && !images[0].is_libpython &&
              images[0].minor_hint == 11 &&
              strcmp(images[1].path, "/opt/lib/libpython3.12.so.1.0") == 0 &&
              images[1].base == 0x7f0000000000ull && images[1].is_libpython &&
              images[1].minor_hint == 12 && images[1].inode == 200,
          "executable first, then libpython (deleted suffix dropped, stub skipped)", detail);

    check(!images[0].deleted && images[1].deleted && images[1].end == 0x7f0000100000ull,
          "a deleted image is marked, with the end of its mapping (map_files names it so)", "");

    /* The executable itself replaced while it runs (a Python upgraded
     * under a service): /proc/PID/exe and maps both say " (deleted)". */
    static const char replaced[] =
        "55f0a0000000-55f0a0001000 r--p 00000000 fe:00 100 /usr/bin/python3.11 (deleted)\n"
        "55f0a0001000-55f0a0300000 r-xp 00001000 fe:00 100 /usr/bin/python3.11 (deleted)\n";
    n = sonde_maps_find_images(replaced, sizeof replaced - 1, "/usr/bin/python3.11 (deleted)",
                               images, 4);
    check(n == 1 && !images[0].is_libpython && images[0].deleted &&
              strcmp(images[0].path, "/usr/bin/python3.11") == 0 &&
              images[0].end == 0x55f0a0001000ull,
          "a replaced executable is found by its /proc/PID/exe name, marked deleted", "");

    n = sonde_maps_find_images(text, sizeof text - 1, "/not/mapped", images, 4);
    check(n == 1 && images[0].is_libpython, "unmapped executable: libpython only", "");
    n = sonde_maps_find_images(text, sizeof text - 1, NULL, images, 4);
    check(n == 2 && strcmp(images[0].path, "/usr/bin/python3.11") == 0,
          "no executable path: the first file mapping stands in", "");
    n = sonde_maps_find_images(text, sizeof text - 1, "/usr/bin/python3.11", images, 1);
    check(n == 1, "at most max images", "");

    /* A NUL inside a path (found by tests/fuzz/fuzz_maps.c): the image
     * would be opened by the path cut there, another file. */
    static const char nul_text[] =
        "7f0000000000-7f0000001000 r--p 00000000 fe:00 1 /weird\0/libpython3.12.so\n"
        "7f1000000000-7f1000001000 r--p 00000000 fe:00 2 /usr/lib/libpython3.11.so.1.0\n";
    n = sonde_maps_find_images(nul_text, sizeof nul_text - 1, "/x", images, 4);
    snprintf(detail, sizeof detail, "n %d; [0] %.100s", n, n > 0 ? images[0].path : "");
    check(n == 1 && strcmp(images[0].path, "/usr/lib/libpython3.11.so.1.0") == 0,
          "a path holding a NUL byte is skipped", detail);
}

static void check_fuzz(void)
{
    static const char alphabet[] = "0123456789abcdefABCDEFxz-: /\n\t(deleted)rwxp[]libpython3.1";
    char text[512];
    sonde_maps_image_t images[4];
    long total = 0;

    srandom(7);
    for (int round = 0; round < MAPS_FUZZ_ROUNDS; round++) {
        size_t len = (size_t)(random() % (long)sizeof text);
        for (size_t i = 0; i < len; i++)
            text[i] =
                random() % 8 ? alphabet[random() % (long)(sizeof alphabet - 1)] : (char)random();
        sonde_maps_line_t m;
        if (sonde_maps_parse_line(text, len, &m) == 0 &&
            (m.path < text || m.path + m.path_len > text + len || m.start >= m.end)) {
            check(false, "random text", "parsed a line outside its bounds");
            return;
        }
        int n = sonde_maps_find_images(text, len, random() % 2 ? "/x" : NULL, images, 4);
        if (n < 0 || n > 4) {
            check(false, "random text", "image count out of range");
            return;
        }
        total += n;
    }
    char detail[64];
    snprintf(detail, sizeof detail, "%ld images found", total);
    check(true, "20000 random texts parsed within bounds", detail);
}

int main(void)
{
    check_lines();
    check_hints();
    check_images();
    check_fuzz();
    return failures ? 1 : 0;
}
