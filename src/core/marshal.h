/* marshal.h — writing values in CPython's marshal format.
 *
 * Owns: an encoder for the handful of marshal types sonde writes (dict,
 * tuple, str, int, float), enough for the pstats files that `sonde trace`
 * produces (`marshal.load` of every Python 3 version reads them). The
 * caller emits a value as a sequence of calls in the order marshal expects:
 * a tuple header followed by its items, dict_begin followed by key, value,
 * key, value, ... and dict_end. Appends to a sonde_buf_t, so errors are
 * sticky (-ENOMEM from sonde_buf_error). Plain C, no libpython, allocates.
 */
#ifndef SONDE_MARSHAL_H
#define SONDE_MARSHAL_H

#include "buf.h"

/* A dict: dict_begin, then key/value pairs, then dict_end. */
void sonde_marshal_dict_begin(sonde_buf_t *b);
void sonde_marshal_dict_end(sonde_buf_t *b);
/* A tuple of n items; the n items follow. */
void sonde_marshal_tuple(sonde_buf_t *b, uint32_t n);
/* A str from UTF-8 bytes (lone surrogates encoded as by "surrogatepass"
 * are accepted by the reader). len bytes of utf8; need not be
 * NUL-terminated. */
void sonde_marshal_str(sonde_buf_t *b, const char *utf8, size_t len);
/* An int of any int64 value (small ones as TYPE_INT, others as TYPE_LONG). */
void sonde_marshal_int(sonde_buf_t *b, int64_t v);
/* A float (TYPE_BINARY_FLOAT, IEEE 754 little-endian). */
void sonde_marshal_float(sonde_buf_t *b, double v);

#endif
