/* marshal.c — the marshal encoder (see marshal.h).
 *
 * Owns: the byte layout of the marshal types sonde writes. Written from
 * the format's description (Python/marshal.c is the reference reader):
 * every multi-byte number is little-endian; a type code byte precedes each
 * value; no back-references are written (FLAG_REF never set), so the
 * output is what marshal version 2 produces and every Python 3 reads it.
 * Called by the pstats writer of `sonde trace` at report time; ordinary
 * code, never in a hook or signal handler.
 */
#include "marshal.h"

#include <string.h>

#define MARSHAL_TYPE_NULL '0'
#define MARSHAL_TYPE_INT 'i'          /* int32 */
#define MARSHAL_TYPE_LONG 'l'         /* int32 digit count (sign = sign), 15-bit digits */
#define MARSHAL_TYPE_BINARY_FLOAT 'g' /* 8 bytes IEEE 754 */
#define MARSHAL_TYPE_UNICODE 'u'      /* int32 length, UTF-8 bytes */
#define MARSHAL_TYPE_TUPLE '('        /* int32 count, items */
#define MARSHAL_TYPE_DICT '{'         /* key, value, ..., TYPE_NULL */

#define MARSHAL_LONG_SHIFT 15
#define MARSHAL_LONG_MASK 0x7fff
#define MARSHAL_LONG_MAX_DIGITS 5 /* 64 bits / 15 bits, rounded up */

static void marshal_u8(sonde_buf_t *b, uint8_t v)
{
    sonde_buf_append(b, &v, 1);
}

static void marshal_u32(sonde_buf_t *b, uint32_t v)
{
    uint8_t bytes[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    sonde_buf_append(b, bytes, sizeof bytes);
}

void sonde_marshal_dict_begin(sonde_buf_t *b)
{
    marshal_u8(b, MARSHAL_TYPE_DICT);
}

void sonde_marshal_dict_end(sonde_buf_t *b)
{
    marshal_u8(b, MARSHAL_TYPE_NULL);
}

void sonde_marshal_tuple(sonde_buf_t *b, uint32_t n)
{
    marshal_u8(b, MARSHAL_TYPE_TUPLE);
    marshal_u32(b, n);
}

void sonde_marshal_str(sonde_buf_t *b, const char *utf8, size_t len)
{
    if (len > INT32_MAX) { /* marshal cannot hold it; keep the stream valid */
        len = 0;
    }
    marshal_u8(b, MARSHAL_TYPE_UNICODE);
    marshal_u32(b, (uint32_t)len);
    if (len) sonde_buf_append(b, utf8, len);
}

void sonde_marshal_int(sonde_buf_t *b, int64_t v)
{
    if (v >= INT32_MIN && v <= INT32_MAX) {
        marshal_u8(b, MARSHAL_TYPE_INT);
        marshal_u32(b, (uint32_t)(int32_t)v);
        return;
    }
    /* Magnitude in 15-bit digits, least significant first; the most
     * significant digit written is never zero (the reader checks). */
    uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    uint16_t digits[MARSHAL_LONG_MAX_DIGITS];
    int n = 0;
    while (mag) {
        digits[n++] = (uint16_t)(mag & MARSHAL_LONG_MASK);
        mag >>= MARSHAL_LONG_SHIFT;
    }
    marshal_u8(b, MARSHAL_TYPE_LONG);
    marshal_u32(b, (uint32_t)(int32_t)(v < 0 ? -n : n));
    for (int i = 0; i < n; i++) {
        uint8_t bytes[2] = {(uint8_t)digits[i], (uint8_t)(digits[i] >> 8)};
        sonde_buf_append(b, bytes, sizeof bytes);
    }
}

void sonde_marshal_float(sonde_buf_t *b, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    uint8_t bytes[8];
    for (int i = 0; i < 8; i++)
        bytes[i] = (uint8_t)(bits >> (8 * i));
    marshal_u8(b, MARSHAL_TYPE_BINARY_FLOAT);
    sonde_buf_append(b, bytes, sizeof bytes);
}
