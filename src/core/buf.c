/* buf.c — growable byte buffer (see buf.h).
 *
 * Owns: sonde_buf_t operations (the bounded reader of regular files that
 * appends to one, sonde_buf_read_file, is the file service's:
 * src/prim/file.c). Called by report writers, the model (source text) and
 * the CLI.
 * Not for signal handlers or allocator hooks (uses malloc).
 */
#include "buf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sonde_buf_free(sonde_buf_t *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->error = 0;
}

void sonde_buf_reset(sonde_buf_t *b)
{
    b->len = 0;
    if (b->data) b->data[0] = 0;
}

int sonde_buf_reserve(sonde_buf_t *b, size_t extra)
{
    if (b->error) return b->error;
    if (extra > SIZE_MAX - b->len - 1) {
        b->error = -ENOMEM;
        return b->error;
    }
    if (b->len + extra + 1 <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) {
        if (cap > SIZE_MAX / 2) {
            b->error = -ENOMEM;
            return b->error;
        }
        cap *= 2;
    }
    char *data = realloc(b->data, cap);
    if (!data) {
        b->error = -ENOMEM;
        return b->error;
    }
    b->data = data;
    b->cap = cap;
    return 0;
}

void sonde_buf_append(sonde_buf_t *b, const void *data, size_t len)
{
    if (sonde_buf_reserve(b, len)) return;
    if (len) memcpy(b->data + b->len, data, len); /* data may be NULL when len is 0 */
    b->len += len;
    b->data[b->len] = 0;
}

void sonde_buf_puts(sonde_buf_t *b, const char *s)
{
    sonde_buf_append(b, s, strlen(s));
}

void sonde_buf_putc(sonde_buf_t *b, char c)
{
    sonde_buf_append(b, &c, 1);
}

void sonde_buf_vprintf(sonde_buf_t *b, const char *fmt, va_list ap)
{
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n < 0 || sonde_buf_reserve(b, (size_t)n)) return;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void sonde_buf_printf(sonde_buf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sonde_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid. */
static size_t buf_utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t n;
    unsigned min;
    if ((c & 0xe0) == 0xc0) {
        n = 2;
        min = 0x80;
        c &= 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
        n = 3;
        min = 0x800;
        c &= 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
        n = 4;
        min = 0x10000;
        c &= 0x07;
    } else
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        c = (c << 6) | (s[i] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return 0;
    return n;
}

void sonde_buf_json_string(sonde_buf_t *b, const char *s)
{
    sonde_buf_putc(b, '"');
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        unsigned char c = *p;
        if (c >= 0x80) {
            size_t n = buf_utf8_len(p);
            if (n == 0) {
                sonde_buf_puts(b, "\\ufffd");
                p++;
            } else {
                sonde_buf_append(b, p, n);
                p += n;
            }
            continue;
        }
        switch (c) {
        case '"':
            sonde_buf_puts(b, "\\\"");
            break;
        case '\\':
            sonde_buf_puts(b, "\\\\");
            break;
        case '\n':
            sonde_buf_puts(b, "\\n");
            break;
        case '\r':
            sonde_buf_puts(b, "\\r");
            break;
        case '\t':
            sonde_buf_puts(b, "\\t");
            break;
        case '<':
            sonde_buf_puts(b, "\\u003c");
            break;
        case '>':
            sonde_buf_puts(b, "\\u003e");
            break;
        case '&':
            sonde_buf_puts(b, "\\u0026");
            break;
        default:
            if (c < 0x20 || c == 0x7f)
                sonde_buf_printf(b, "\\u%04x", c);
            else
                sonde_buf_putc(b, (char)c);
        }
        p++;
    }
    sonde_buf_putc(b, '"');
}

void sonde_buf_json_number(sonde_buf_t *b, double v, int digits)
{
    if (!isfinite(v)) v = 0;
    if (digits < 0) digits = 0;
    if (digits > 9) digits = 9;
    char text[64];
    int n = snprintf(text, sizeof text, "%.*f", digits, v);
    if (n <= 0 || (size_t)n >= sizeof text) {
        /* Too large for fixed notation here: exponent form is valid JSON. */
        snprintf(text, sizeof text, "%.17g", v);
        sonde_buf_puts(b, text);
        return;
    }
    if (strchr(text, '.')) {
        while (n > 0 && text[n - 1] == '0')
            text[--n] = 0;
        if (n > 0 && text[n - 1] == '.') text[--n] = 0;
    }
    if (strcmp(text, "-0") == 0) strcpy(text, "0");
    sonde_buf_puts(b, text);
}

int sonde_errf(char *err, size_t err_len, const char *fmt, ...)
{
    if (!err || !err_len) return -EINVAL;
    char raw[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)raw; *p; p++) {
        char esc[5];
        size_t n;
        if (*p >= 0x20 && *p != 0x7f) {
            esc[0] = (char)*p;
            n = 1;
        } else if (*p == '\n' || *p == '\t') {
            esc[0] = '\\';
            esc[1] = *p == '\n' ? 'n' : 't';
            n = 2;
        } else {
            snprintf(esc, sizeof esc, "\\x%02x", *p);
            n = 4;
        }
        if (o + n >= err_len) break;
        memcpy(err + o, esc, n);
        o += n;
    }
    err[o] = '\0';
    return -EINVAL;
}
