/* buf.h — a growable byte buffer for building reports and strings.
 *
 * Owns: sonde_buf_t. Allocates with malloc: never use it in a signal
 * handler or an allocator hook. Errors are sticky: after a failed
 * allocation every append is a no-op and sonde_buf_error() returns -ENOMEM,
 * so writers can append freely and check once at the end.
 */
#ifndef SONDE_BUF_H
#define SONDE_BUF_H

#include "common.h"

#include <stdarg.h>

typedef struct sonde_buf {
    char *data; /* owned; always NUL-terminated when len > 0 */
    size_t len;
    size_t cap;
    int error; /* 0 or -ENOMEM (sticky) */
} sonde_buf_t;

#define SONDE_BUF_INIT                                                                             \
    {                                                                                              \
        NULL, 0, 0, 0                                                                              \
    }

void sonde_buf_free(sonde_buf_t *b);
void sonde_buf_reset(sonde_buf_t *b); /* len = 0, keeps memory */
void sonde_buf_append(sonde_buf_t *b, const void *data, size_t len);
void sonde_buf_puts(sonde_buf_t *b, const char *s);
void sonde_buf_putc(sonde_buf_t *b, char c);
void sonde_buf_printf(sonde_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sonde_buf_vprintf(sonde_buf_t *b, const char *fmt, va_list ap);
/* Appends s as a JSON string literal (quotes included), escaping control
 * characters, quotes, backslashes and, so that the text can sit inside an
 * HTML <script>, '<', '>' and '&'. Invalid UTF-8 becomes U+FFFD. */
void sonde_buf_json_string(sonde_buf_t *b, const char *s);
/* Appends a double as JSON (finite; NaN/inf become 0), at most `digits`
 * digits after the point, trailing zeros trimmed. */
void sonde_buf_json_number(sonde_buf_t *b, double v, int digits);

/* Formats a one-line error message into err (err_len bytes, always
 * NUL-terminated when err_len > 0; NULL or 0 writes nothing) and returns
 * -EINVAL, for the option parsers. Control characters in the result (a
 * user's word holding a newline or an escape) are written as \n, \t or
 * \xNN, so the message stays one line and cannot drive the terminal.
 * Allocates nothing. */
int sonde_errf(char *err, size_t err_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Appends the contents of the regular file at path, at most max bytes of
 * it. A file holding more sets *truncated (the first max bytes are kept)
 * or, with truncated NULL, fails with -EFBIG (at once, before reading,
 * when the file's size says so). Opened non-blocking and
 * without becoming a controlling terminal, so a FIFO or device named by
 * an untrusted path never blocks: it fails with -EINVAL (-EISDIR for a
 * directory). Returns 0 or -errno; on failure b may hold part of the
 * file. */
int sonde_buf_read_file(sonde_buf_t *b, const char *path, size_t max, bool *truncated);
/* 0 or -ENOMEM. */
static inline int sonde_buf_error(const sonde_buf_t *b)
{
    return b->error;
}

#endif
