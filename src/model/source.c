/* source.c — loading a profiled file's source text for the reports.
 *
 * Owns: sonde__source_load / sonde__source_free (model_internal.h). Called
 * by sonde_profile_finish after sampling has stopped; ordinary code, never
 * in a signal handler or an allocator hook.
 *
 * The path comes from the interpreter and may name anything ("<string>",
 * a FIFO, a directory, a file edited since): only regular files are read,
 * opened non-blocking, and at most SONDE_SOURCE_MAX_BYTES of them.
 */
#include "model_internal.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void sonde__source_free(char **lines, size_t n)
{
    if (!lines) return;
    for (size_t i = 0; i < n; i++)
        free(lines[i]);
    free(lines);
}

/* Reads up to max bytes of the regular file at path into an owned buffer.
 * *truncated is set when the file holds more. Returns 0 or -errno. */
static int source_read(const char *path, size_t max, char **text_out, size_t *len_out,
                       bool *truncated)
{
    char *text = NULL;
    size_t len = 0;
    int rc = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return -errno;

    struct stat st;
    if (fstat(fd, &st) != 0) {
        rc = -errno;
        goto error;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
        goto error;
    }
    /* One byte more than allowed tells a file at the cap from a longer one;
     * the file may also have changed size since fstat. */
    size_t want = (size_t)st.st_size < max ? (size_t)st.st_size : max;
    size_t cap = want + 2;
    text = malloc(cap);
    if (!text) {
        rc = -ENOMEM;
        goto error;
    }
    for (;;) {
        if (len == cap - 1) {
            if (cap - 1 > max) break;
            size_t grown_cap = cap * 2 > max + 2 ? max + 2 : cap * 2;
            char *grown = realloc(text, grown_cap);
            if (!grown) {
                rc = -ENOMEM;
                goto error;
            }
            text = grown;
            cap = grown_cap;
        }
        ssize_t got = read(fd, text + len, cap - 1 - len);
        if (got < 0) {
            if (errno == EINTR) continue;
            rc = -errno;
            goto error;
        }
        if (got == 0) break;
        len += (size_t)got;
    }
    close(fd);
    *truncated = len > max;
    if (*truncated) len = max;
    text[len] = 0;
    *text_out = text;
    *len_out = len;
    return 0;

error:
    free(text);
    close(fd);
    return rc;
}

int sonde__source_load(const char *path, char ***lines_out, size_t *n_out)
{
    char *text = NULL;
    size_t len = 0;
    bool truncated = false;
    char **lines = NULL;
    size_t n = 0, cap = 0;

    *lines_out = NULL;
    *n_out = 0;
    int rc = source_read(path, SONDE_SOURCE_MAX_BYTES, &text, &len, &truncated);
    if (rc) return rc;

    const char *p = text, *end = text + len;
    if (len >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0) p += 3;
    while (p < end && n < SONDE_SOURCE_MAX_LINES) {
        const char *eol = p;
        while (eol < end && *eol != '\n' && *eol != '\r')
            eol++;
        /* A line cut by the size cap is not a line of the file. */
        if (eol == end && truncated) break;
        if (n == cap) {
            size_t grown_cap = cap ? cap * 2 : 64;
            char **grown = realloc(lines, grown_cap * sizeof *lines);
            if (!grown) goto nomem;
            lines = grown;
            cap = grown_cap;
        }
        size_t line_len = (size_t)(eol - p);
        char *line = malloc(line_len + 1);
        if (!line) goto nomem;
        memcpy(line, p, line_len);
        line[line_len] = 0;
        lines[n++] = line;
        p = eol;
        if (p < end) p += (*p == '\r' && p + 1 < end && p[1] == '\n') ? 2 : 1;
    }
    if (!lines && !(lines = malloc(sizeof *lines))) goto nomem;
    free(text);
    *lines_out = lines;
    *n_out = n;
    return 0;

nomem:
    sonde__source_free(lines, n);
    free(text);
    return -ENOMEM;
}
