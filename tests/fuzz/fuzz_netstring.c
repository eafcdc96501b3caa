/* fuzz_netstring.c — libFuzzer target: the netstrings of the hand-over
 * (src/launch/netstring.c), which the boot inside the profiled
 * interpreter reads back from an environment variable.
 *
 * Input: any bytes. Checked: sonde_netstring_next over the raw bytes (not
 * NUL-terminated) never reads past the end and each item lies inside the
 * input; sonde_netstring_get_words of the text up to the first NUL either
 * fails or gives words that encode and decode to themselves; and words cut
 * from the input at '\n' survive put_words then get_words unchanged.
 */
#include "launch/netstring.h"

#include "fuzz.h"

static void fuzz_next(const uint8_t *data, size_t size)
{
    /* a copy of exactly size bytes, so that ASan sees any read past it */
    char *copy = malloc(size ? size : 1);
    if (copy == NULL) abort();
    memcpy(copy, data, size);
    const char *p = copy, *end = copy + size;
    while (p < end) {
        const char *item = NULL, *before = p;
        size_t len = 0;
        if (sonde_netstring_next(&p, end, &item, &len) != 0) {
            fuzz_assert(p == before, "the cursor moved on an error");
            break;
        }
        fuzz_assert(p > before && p <= end, "the cursor left the input");
        fuzz_assert(item > before && item + len < p && item[len] == ',',
                    "an item outside its netstring");
    }
    free(copy);
}

static void fuzz_round_trip(char **words, int n)
{
    sonde_buf_t text = SONDE_BUF_INIT;
    char **back = NULL;
    int n_back = -1;
    sonde_netstring_put_words(&text, words, n);
    fuzz_assert(sonde_buf_error(&text) == 0, "out of memory");
    int rc = sonde_netstring_get_words(text.data ? text.data : "", &back, &n_back);
    fuzz_assert(rc == 0, "the words encoded could not be read back (%d)", rc);
    fuzz_assert(n_back == n, "%d words encoded, %d read back", n, n_back);
    for (int i = 0; i < n; i++)
        fuzz_assert(strcmp(words[i], back[i]) == 0, "word %d changed", i);
    fuzz_assert(back[n] == NULL, "the word list is not NULL-terminated");
    sonde_netstring_free_words(back);
    sonde_buf_free(&text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_next(data, size);

    char *text = strndup((const char *)data, size);
    if (text == NULL) abort();
    char **words = NULL;
    int n = -1;
    if (sonde_netstring_get_words(text, &words, &n) == 0) {
        fuzz_assert(n >= 0 && words != NULL, "success without words");
        fuzz_round_trip(words, n);
        sonde_netstring_free_words(words);
    } else {
        fuzz_assert(words == NULL && n == 0, "a failed read left words behind");
    }

    /* words of the input's text, cut at '\n' */
    int n_lines = 1;
    for (char *p = text; *p; p++)
        n_lines += *p == '\n';
    char **lines = calloc((size_t)n_lines + 1, sizeof *lines);
    if (lines == NULL) abort();
    int k = 0;
    for (char *save = NULL, *w = strtok_r(text, "\n", &save); w && k < n_lines;
         w = strtok_r(NULL, "\n", &save))
        lines[k++] = w;
    fuzz_round_trip(lines, k);
    free(lines);
    free(text);
    return 0;
}
