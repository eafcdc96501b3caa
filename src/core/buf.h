/* buf.h — a growable byte buffer for building reports and strings.
 *
 * Owns: sonde_buf_t (a file read into one: sonde_buf_read_file,
 * src/prim/file.h). Allocates with malloc: never use it in a signal
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
/* Makes room for extra more bytes (and the NUL after them) past len, for
 * a caller that writes into data + len itself and then adds to len (the
 * file reader, src/prim/file.c). Returns 0 or the sticky -ENOMEM. */
int sonde_buf_reserve(sonde_buf_t *b, size_t extra);
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
/* 0 or -ENOMEM. */
static inline int sonde_buf_error(const sonde_buf_t *b)
{
    return b->error;
}

#endif
