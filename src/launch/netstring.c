/* netstring.c — netstrings for the hand-over (see netstring.h).
 *
 * Owns: writing and reading "<length>:<bytes>," items. Called by the run
 * options' encoding (options.c), by the launcher for `sonde trace`'s option
 * words (src/cli/trace.c) and by the boot that reads them back
 * (src/ext/boot.c). Ordinary code, no signal context.
 */
#include "netstring.h"

#include <stdlib.h>
#include <string.h>

void sonde_netstring_put(sonde_buf_t *out, const char *s, size_t len)
{
    sonde_buf_printf(out, "%zu:", len);
    sonde_buf_append(out, s, len);
    sonde_buf_putc(out, ',');
}

int sonde_netstring_next(const char **p, const char *end, const char **item, size_t *len)
{
    const char *q = *p;
    size_t n = 0;
    if (q >= end || *q < '0' || *q > '9') return -EINVAL;
    for (; q < end && *q >= '0' && *q <= '9'; q++) {
        if (n > (size_t)(end - q)) return -EINVAL; /* longer than what is left */
        n = n * 10 + (size_t)(*q - '0');
    }
    if (q >= end || *q != ':') return -EINVAL;
    q++;
    if (n >= (size_t)(end - q) || q[n] != ',') return -EINVAL;
    *item = q;
    *len = n;
    *p = q + n + 1;
    return 0;
}

void sonde_netstring_put_words(sonde_buf_t *out, char *const *words, int n)
{
    for (int i = 0; i < n; i++)
        sonde_netstring_put(out, words[i], strlen(words[i]));
}

void sonde_netstring_free_words(char **words)
{
    for (size_t i = 0; words && words[i]; i++)
        free(words[i]);
    free(words);
}

int sonde_netstring_get_words(const char *text, char ***words_out, int *n_out)
{
    const char *p = text ? text : "", *end = p + strlen(p), *item = NULL;
    size_t len = 0, count = 0;
    char **words = NULL;
    int rc = 0;
    *words_out = NULL;
    *n_out = 0;
    /* Count first: every item takes at least three bytes ("0:,"). */
    for (const char *q = p; q < end && (rc = sonde_netstring_next(&q, end, &item, &len)) == 0;)
        count++;
    if (rc < 0 || count > (size_t)1 << 30) return -EINVAL;
    words = calloc(count + 1, sizeof *words);
    if (!words) return -ENOMEM;
    for (size_t i = 0; i < count; i++) {
        sonde_netstring_next(&p, end, &item, &len);
        if (memchr(item, 0, len)) {
            rc = -EINVAL;
            break;
        }
        if (!(words[i] = strndup(item, len))) {
            rc = -ENOMEM;
            break;
        }
    }
    if (rc < 0) {
        sonde_netstring_free_words(words);
        return rc;
    }
    *words_out = words;
    *n_out = (int)count;
    return 0;
}
