/* assert.c — the failure path of sonde_assert.
 *
 * Owns: sonde_assert_fail. May be reached from any context, including a
 * signal handler or an allocator hook, so it only uses write(2) and abort.
 */
#include "common.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void assert_write(const char *s)
{
    ssize_t rc = write(2, s, strlen(s));
    (void)rc;
}

void sonde_assert_fail(const char *expr, const char *file, int line)
{
    char digits[16];
    int n = 0;
    unsigned v = line > 0 ? (unsigned)line : 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v && n < 15);
    char text[16];
    for (int i = 0; i < n; i++)
        text[i] = digits[n - 1 - i];
    text[n] = 0;
    assert_write("sonde: internal assertion failed: ");
    assert_write(expr);
    assert_write(" at ");
    assert_write(file);
    assert_write(":");
    assert_write(text);
    assert_write("\n");
    abort();
}
