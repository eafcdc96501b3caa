/* folded.c — call stacks as folded text (Brendan Gregg's collapsed format).
 *
 * Owns: sonde_report_folded (report.h). Called by the CLI for
 * `sonde attach/record --format folded`. One line per distinct stack:
 *     thread 12 (main);main (/app/x.py:30);work (/app/x.py:12) 57
 * frames root first, separated by ';', each "func (file:line)", then one
 * space and the number of samples; the thread's name comes first when
 * stacks are kept per thread. Lines are sorted, so equal output means
 * equal profiles. Names are untrusted text: since ';' separates frames and
 * a newline separates stacks, ';' becomes ',' and control characters
 * (newline, tab...) become ' '; bytes that are not UTF-8 become U+FFFD.
 * flamegraph.pl, inferno, speedscope and Pyroscope read the result. Plain
 * C; never in a signal handler.
 */
#include "stackfmt.h"

#include <stdlib.h>
#include <string.h>

/* Appends s made safe for one folded frame. */
static void folded_put(sonde_buf_t *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t left = strlen(s);
    while (left > 0) {
        uint32_t cp = 0;
        size_t n = sonde__utf8_decode(p, left, &cp);
        if (n == 0) {
            sonde_buf_puts(out, "\xef\xbf\xbd");
            n = 1;
        } else if (cp == ';') {
            sonde_buf_putc(out, ',');
        } else if (cp < 0x20 || cp == 0x7f) {
            sonde_buf_putc(out, ' ');
        } else {
            sonde_buf_append(out, p, n);
        }
        p += n;
        left -= n;
    }
}

/* One stack's line without its count. */
static void folded_stack(const sonde_profile_t *prof, const sonde_stack_t *stack,
                         sonde_buf_t *label, sonde_buf_t *line)
{
    bool first = true;
    if (stack->thread >= 0) {
        folded_put(line, sonde__thread_name(prof, stack->thread));
        first = false;
    }
    for (uint32_t d = 0; d < stack->depth; d++) {
        if (stack->frames[d] >= prof->n_frames) continue;
        sonde_buf_reset(label);
        sonde__frame_label(label, &prof->frames[stack->frames[d]]);
        if (!first) sonde_buf_putc(line, ';');
        folded_put(line, label->data ? label->data : "");
        first = false;
    }
}

struct folded_line {
    char *text; /* owned */
    uint64_t samples;
};

static int folded_by_text(const void *a, const void *b)
{
    return strcmp(((const struct folded_line *)a)->text, ((const struct folded_line *)b)->text);
}

int sonde_report_folded(const sonde_profile_t *prof, sonde_buf_t *out)
{
    struct folded_line *lines = calloc(prof->n_stacks ? prof->n_stacks : 1, sizeof *lines);
    sonde_buf_t label = SONDE_BUF_INIT, line = SONDE_BUF_INIT;
    size_t n = 0;
    int rc = 0;
    if (!lines) return -ENOMEM;
    for (size_t s = 0; s < prof->n_stacks; s++) {
        const sonde_stack_t *stack = &prof->stacks[s];
        if (!stack->samples) continue;
        sonde_buf_reset(&line);
        folded_stack(prof, stack, &label, &line);
        if (sonde_buf_error(&line) || sonde_buf_error(&label)) {
            rc = -ENOMEM;
            goto done;
        }
        if (line.len == 0) continue; /* no frame at all: nothing to draw */
        lines[n].text = strdup(line.data);
        if (!lines[n].text) {
            rc = -ENOMEM;
            goto done;
        }
        lines[n++].samples = stack->samples;
    }
    qsort(lines, n, sizeof *lines, folded_by_text);
    for (size_t i = 0; i < n; i++) {
        uint64_t samples = lines[i].samples;
        /* stacks that differ only in characters made safe print once */
        while (i + 1 < n && strcmp(lines[i].text, lines[i + 1].text) == 0)
            samples += lines[++i].samples;
        sonde_buf_puts(out, lines[i].text);
        sonde_buf_printf(out, " %llu\n", (unsigned long long)samples);
    }
    rc = sonde_buf_error(out);
done:
    for (size_t i = 0; i < n; i++)
        free(lines[i].text);
    free(lines);
    sonde_buf_free(&label);
    sonde_buf_free(&line);
    return rc;
}
