/* fuzz.h — what every libFuzzer target of tests/fuzz/ shares (header only).
 *
 * Each tests/fuzz/fuzz_<name>.c is one target: libFuzzer calls
 * LLVMFuzzerTestOneInput with one input at a time (built by `make fuzz`
 * with clang -fsanitize=fuzzer,address,undefined into build/fuzz/bin/;
 * its seed corpus is tests/fuzz/corpus/<name>/). A target returns 0 and
 * reports a broken invariant with fuzz_fail, which aborts: libFuzzer then
 * saves the input as a crash. The cursor below cuts an input into the
 * fields a target needs; reading past the end gives zeros, so every input
 * is a valid one.
 */
#ifndef SONDE_FUZZ_H
#define SONDE_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_UNUSED __attribute__((unused))

/* Aborts with a message: the input broke an invariant of the target. */
#define fuzz_fail(...)                                                                             \
    do {                                                                                           \
        fprintf(stderr, "fuzz invariant broken (%s:%d): ", __FILE__, __LINE__);                    \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                       \
        abort();                                                                                   \
    } while (0)

#define fuzz_assert(cond, ...)                                                                     \
    do {                                                                                           \
        if (!(cond)) fuzz_fail(__VA_ARGS__);                                                       \
    } while (0)

/* Reads an input front to back. */
typedef struct fuzz_cursor {
    const uint8_t *data;
    size_t size, pos;
} fuzz_cursor_t;

static FUZZ_UNUSED fuzz_cursor_t fuzz_cursor(const uint8_t *data, size_t size)
{
    fuzz_cursor_t c = {data, size, 0};
    return c;
}

static FUZZ_UNUSED size_t fuzz_left(const fuzz_cursor_t *c)
{
    return c->size - c->pos;
}

/* The next n bytes as a little-endian number (zeros past the end). */
static FUZZ_UNUSED uint64_t fuzz_uint(fuzz_cursor_t *c, int n)
{
    uint64_t value = 0;
    for (int i = 0; i < n; i++) {
        uint64_t byte = c->pos < c->size ? c->data[c->pos++] : 0;
        value |= byte << (8 * i);
    }
    return value;
}

/* The next bytes, at most max of them, as a pointer into the input. */
static FUZZ_UNUSED const uint8_t *fuzz_bytes(fuzz_cursor_t *c, size_t max, size_t *len)
{
    size_t n = fuzz_left(c) < max ? fuzz_left(c) : max;
    const uint8_t *p = c->data + c->pos;
    c->pos += n;
    *len = n;
    return p;
}

/* Splits data into NUL-terminated words at each NUL byte (a last word
 * without a NUL counts too): a heap block holding argv[0..n-1] and
 * argv[n] = NULL, then the words. At most max words. Free with free(). */
static FUZZ_UNUSED char **fuzz_words(const uint8_t *data, size_t size, int max, int *n_out)
{
    int n = 0;
    for (size_t i = 0; i < size && n < max; i++)
        if (data[i] == 0 || i + 1 == size) n++;
    char **argv = malloc((size_t)(n + 1) * sizeof *argv + size + 1);
    if (argv == NULL) abort();
    char *text = (char *)(argv + n + 1);
    memcpy(text, data, size);
    text[size] = 0;
    int k = 0;
    for (size_t start = 0, i = 0; i < size && k < n; i++) {
        if (data[i] == 0 || i + 1 == size) {
            argv[k++] = text + start;
            start = i + 1;
        }
    }
    argv[k] = NULL;
    *n_out = k;
    return argv;
}

#endif
