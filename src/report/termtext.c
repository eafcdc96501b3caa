/* termtext.c — building terminal lines: display width, sanitising, clipping.
 *
 * Owns: sonde__tline_* and sonde__text_width (report_internal.h). Used by
 * the text writer. Ordinary code (allocates); never in a signal handler.
 *
 * Text shown on a terminal comes from the profiled program (source lines,
 * paths, function names, arguments) and may hold escape bytes, so every
 * byte is decoded and anything that could drive the terminal — C0 and C1
 * controls, DEL, invalid UTF-8 — is shown as U+FFFD. Widths follow Unicode's
 * East Asian Wide ranges and zero-width combining marks without a locale:
 * the extension runs inside the user's program, whose locale is not ours to
 * set.
 */
#include "report_internal.h"

#include <stdio.h>
#include <string.h>

#define TERMTEXT_TAB_STOP 8
#define TERMTEXT_ESC '\x1b'
#define TERMTEXT_REPLACEMENT "\xef\xbf\xbd" /* U+FFFD */
#define TERMTEXT_ELLIPSIS "\xe2\x80\xa6"    /* U+2026 */
#define TERMTEXT_RESET "\x1b[0m"

typedef struct termtext_range {
    uint32_t first, last;
} termtext_range_t;

static const termtext_range_t termtext_zero_width[] = {
    {0x0300, 0x036f}, {0x0483, 0x0489}, {0x0591, 0x05bd},   {0x0610, 0x061a}, {0x064b, 0x065f},
    {0x1ab0, 0x1aff}, {0x1dc0, 0x1dff}, {0x200b, 0x200f},   {0x20d0, 0x20ff}, {0xfe00, 0xfe0f},
    {0xfe20, 0xfe2f}, {0xfeff, 0xfeff}, {0xe0100, 0xe01ef},
};

static const termtext_range_t termtext_wide[] = {
    {0x1100, 0x115f},   {0x2e80, 0x303e},   {0x3041, 0x33ff},   {0x3400, 0x4dbf},
    {0x4e00, 0x9fff},   {0xa000, 0xa4cf},   {0xac00, 0xd7a3},   {0xf900, 0xfaff},
    {0xfe30, 0xfe4f},   {0xff00, 0xff60},   {0xffe0, 0xffe6},   {0x1f300, 0x1f64f},
    {0x1f900, 0x1f9ff}, {0x20000, 0x2fffd}, {0x30000, 0x3fffd},
};

static bool termtext_in(const termtext_range_t *ranges, size_t n, uint32_t cp)
{
    for (size_t i = 0; i < n; i++)
        if (cp >= ranges[i].first && cp <= ranges[i].last) return true;
    return false;
}

static int termtext_cp_width(uint32_t cp)
{
    if (termtext_in(termtext_zero_width, SONDE_ARRAY_LEN(termtext_zero_width), cp)) return 0;
    if (termtext_in(termtext_wide, SONDE_ARRAY_LEN(termtext_wide), cp)) return 2;
    return 1;
}

/* Decodes the UTF-8 sequence at s (NUL-terminated). Returns its length
 * (1..4) and sets *cp, or returns 1 with *cp = U+FFFD for an invalid byte. */
static size_t termtext_decode(const unsigned char *s, uint32_t *cp)
{
    uint32_t c = s[0];
    size_t n;
    uint32_t min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
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
        goto invalid;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) goto invalid;
        c = (c << 6) | (s[i] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) goto invalid;
    *cp = c;
    return n;
invalid:
    *cp = 0xfffd;
    return 1;
}

static bool termtext_is_control(uint32_t cp)
{
    return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f);
}

int sonde__text_width(const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    int width = 0;
    while (*p) {
        uint32_t cp;
        p += termtext_decode(p, &cp);
        width += termtext_is_control(cp) ? 1 : termtext_cp_width(cp);
    }
    return width;
}

const char *sonde__text_tail(const char *s, int cols)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    int width = sonde__text_width((const char *)p);
    while (*p && width > cols) {
        uint32_t cp;
        p += termtext_decode(p, &cp);
        width -= termtext_is_control(cp) ? 1 : termtext_cp_width(cp);
    }
    /* Never start on a zero-width mark that belonged to the cut glyph. */
    while (*p) {
        uint32_t cp;
        size_t n = termtext_decode(p, &cp);
        if (termtext_is_control(cp) || termtext_cp_width(cp) != 0) break;
        p += n;
    }
    return (const char *)p;
}

void sonde__tline_init(sonde__tline_t *tl, bool color)
{
    sonde_buf_t empty = SONDE_BUF_INIT;
    tl->text = empty;
    tl->col = 0;
    tl->color = color;
    tl->sgr_open = false;
}

void sonde__tline_free(sonde__tline_t *tl)
{
    sonde_buf_free(&tl->text);
}

static void termtext_spaces(sonde__tline_t *tl, int n)
{
    static const char spaces[] = "                                ";
    while (n > 0) {
        int chunk = n < (int)sizeof spaces - 1 ? n : (int)sizeof spaces - 1;
        sonde_buf_append(&tl->text, spaces, (size_t)chunk);
        tl->col += chunk;
        n -= chunk;
    }
}

void sonde__tline_text(sonde__tline_t *tl, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    int origin = tl->col;
    while (*p) {
        uint32_t cp;
        size_t n = termtext_decode(p, &cp);
        if (cp == '\t') {
            int rel = tl->col - origin;
            termtext_spaces(tl, TERMTEXT_TAB_STOP - rel % TERMTEXT_TAB_STOP);
        } else if (termtext_is_control(cp) || cp == 0xfffd) {
            sonde_buf_puts(&tl->text, TERMTEXT_REPLACEMENT);
            tl->col += 1;
        } else {
            sonde_buf_append(&tl->text, p, n);
            tl->col += termtext_cp_width(cp);
        }
        p += n;
    }
}

void sonde__tline_printf(sonde__tline_t *tl, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof small) {
        sonde__tline_text(tl, small);
        return;
    }
    sonde_buf_t big = SONDE_BUF_INIT;
    va_start(ap, fmt);
    sonde_buf_vprintf(&big, fmt, ap);
    va_end(ap);
    if (sonde_buf_error(&big))
        tl->text.error = sonde_buf_error(&big);
    else
        sonde__tline_text(tl, big.data);
    sonde_buf_free(&big);
}

void sonde__tline_right(sonde__tline_t *tl, const char *s, int width)
{
    int w = sonde__text_width(s);
    if (w < width) termtext_spaces(tl, width - w);
    sonde__tline_text(tl, s);
}

void sonde__tline_pad_to(sonde__tline_t *tl, int col)
{
    if (col > tl->col) termtext_spaces(tl, col - tl->col);
}

void sonde__tline_sgr(sonde__tline_t *tl, const char *params)
{
    if (!tl->color) return;
    if (!params) {
        if (tl->sgr_open) sonde_buf_puts(&tl->text, TERMTEXT_RESET);
        tl->sgr_open = false;
        return;
    }
    if (tl->sgr_open) sonde_buf_puts(&tl->text, TERMTEXT_RESET);
    sonde_buf_printf(&tl->text, "\x1b[%sm", params);
    tl->sgr_open = true;
}

/* Length of the SGR sequence at p (which starts with ESC). */
static size_t termtext_escape_len(const char *p)
{
    size_t n = 1;
    if (p[n] == '[') n++;
    while (p[n] && !(p[n] >= 0x40 && p[n] <= 0x7e))
        n++;
    return p[n] ? n + 1 : n;
}

void sonde__tline_end(sonde__tline_t *tl, sonde_buf_t *out, int width)
{
    const char *text = tl->text.data ? tl->text.data : "";
    size_t len = tl->text.len;
    size_t keep = len; /* bytes of text shown */
    bool clipped = false;

    if (tl->col > width) {
        /* Cut before the first glyph that would end past width - 1. */
        int col = 0;
        size_t at = 0;
        while (at < len) {
            if (text[at] == TERMTEXT_ESC) {
                at += termtext_escape_len(text + at);
                continue;
            }
            uint32_t cp;
            size_t n = termtext_decode((const unsigned char *)text + at, &cp);
            int w = termtext_cp_width(cp);
            if (col + w > width - 1) break;
            col += w;
            at += n;
        }
        keep = at;
        clipped = true;
    }

    /* Drop trailing spaces, keeping any SGR sequence that follows them. */
    size_t visible_end = 0;
    for (size_t at = 0; at < keep;) {
        if (text[at] == TERMTEXT_ESC) {
            at += termtext_escape_len(text + at);
            continue;
        }
        uint32_t cp;
        at += termtext_decode((const unsigned char *)text + at, &cp);
        if (cp != ' ') visible_end = at;
    }
    if (clipped) visible_end = keep;
    sonde_buf_append(out, text, visible_end);
    for (size_t at = visible_end; at < keep;) {
        if (text[at] == TERMTEXT_ESC) {
            size_t n = termtext_escape_len(text + at);
            sonde_buf_append(out, text + at, n);
            at += n;
        } else {
            at++;
        }
    }
    if (clipped) sonde_buf_puts(out, TERMTEXT_ELLIPSIS);
    /* A cut may have dropped the reset that closed a colour. */
    if (tl->color && (tl->sgr_open || clipped)) sonde_buf_puts(out, TERMTEXT_RESET);
    sonde_buf_putc(out, '\n');
    if (sonde_buf_error(&tl->text)) out->error = sonde_buf_error(&tl->text);

    sonde_buf_reset(&tl->text);
    tl->col = 0;
    tl->sgr_open = false;
}
