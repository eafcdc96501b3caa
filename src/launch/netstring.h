/* netstring.h — the encoding of the hand-over's lists (netstring.c).
 *
 * Owns: netstrings ("<length>:<bytes>,", D. J. Bernstein's format), the
 * one encoding the launcher uses to put a list of strings into one
 * environment variable and the boot uses to read it back: any byte but NUL
 * may appear in an item, and a list is unambiguous. Plain C, no printing,
 * no signal context.
 */
#ifndef SONDE_NETSTRING_H
#define SONDE_NETSTRING_H

#include "../core/buf.h"

/* Appends s[0..len-1] as one netstring to out (check sonde_buf_error). */
void sonde_netstring_put(sonde_buf_t *out, const char *s, size_t len);

/* Reads the netstring at *p, which must end before end: on success *item
 * points at its bytes inside the input (not NUL-terminated), *len is their
 * count and *p moves past it. Returns 0 or -EINVAL (malformed, or running
 * past end); nothing moves on error. */
int sonde_netstring_next(const char **p, const char *end, const char **item, size_t *len);

/* Encodes words[0..n-1] as consecutive netstrings into out. */
void sonde_netstring_put_words(sonde_buf_t *out, char *const *words, int n);

/* Decodes a whole text of netstrings into a NULL-terminated array of owned,
 * NUL-terminated copies (*words_out, free with sonde_netstring_free_words)
 * and their count. An item containing NUL is refused. Returns 0, -EINVAL
 * or -ENOMEM (then *words_out is NULL). */
int sonde_netstring_get_words(const char *text, char ***words_out, int *n_out);
void sonde_netstring_free_words(char **words);

#endif
