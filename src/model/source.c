/* source.c — loading a profiled file's source text for the reports.
 *
 * Owns: sonde__source_load / sonde__source_split / sonde__source_free
 * (model_internal.h). Called
 * by sonde_profile_finish after sampling has stopped; ordinary code, never
 * in a signal handler or an allocator hook.
 *
 * The path comes from the interpreter and may name anything ("<string>",
 * a FIFO, a directory, a file edited since): only regular files are read,
 * opened non-blocking, and at most SONDE_SOURCE_MAX_BYTES of them.
 */
#include "model_internal.h"

#include "../core/buf.h"
#include "../prim/file.h"

#include <stdlib.h>
#include <string.h>

void sonde__source_free(char **lines, size_t n)
{
    if (!lines) return;
    for (size_t i = 0; i < n; i++)
        free(lines[i]);
    free(lines);
}

/* Splits len bytes of text into owned lines (see sonde__source_load);
 * truncated: the text was cut by the size cap, so a last line without its
 * end is not a line. Returns 0 or -ENOMEM (nothing allocated). */
int sonde__source_split(const char *text, size_t len, bool truncated, char ***lines_out,
                        size_t *n_out)
{
    char **lines = NULL;
    size_t n = 0, cap = 0;

    *lines_out = NULL;
    *n_out = 0;
    if (!text) text = "";
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
    *lines_out = lines;
    *n_out = n;
    return 0;

nomem:
    sonde__source_free(lines, n);
    return -ENOMEM;
}

int sonde__source_load(const char *path, char ***lines_out, size_t *n_out)
{
    sonde_buf_t file = SONDE_BUF_INIT;
    bool truncated = false;

    *lines_out = NULL;
    *n_out = 0;
    int rc = sonde_buf_read_file(&file, path, SONDE_SOURCE_MAX_BYTES, &truncated);
    if (rc == 0) rc = sonde__source_split(file.data, file.len, truncated, lines_out, n_out);
    sonde_buf_free(&file);
    return rc;
}
