/* protobuf.c — Protocol Buffers' wire format (protobuf.h).
 *
 * Owns: the encoder the pprof writer uses. Callers: src/report/pprof.c,
 * tests/unit/test_protobuf.c. Plain C, no libpython, allocates through
 * sonde_buf_t; never in a signal handler or an allocator hook.
 */
#include "protobuf.h"

#define PB_VARINT_MAX 10 /* bytes of the longest varint (64 bits) */

/* Encodes v into out (at least PB_VARINT_MAX bytes); returns its length. */
static size_t pb_encode_varint(uint8_t *out, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

static size_t pb_varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

void sonde_pb_varint(sonde_buf_t *b, uint64_t v)
{
    uint8_t bytes[PB_VARINT_MAX];
    sonde_buf_append(b, bytes, pb_encode_varint(bytes, v));
}

void sonde_pb_key(sonde_buf_t *b, uint32_t field, int wire_type)
{
    sonde_pb_varint(b, ((uint64_t)field << 3) | (uint64_t)wire_type);
}

void sonde_pb_uint(sonde_buf_t *b, uint32_t field, uint64_t v)
{
    sonde_pb_key(b, field, SONDE_PB_VARINT);
    sonde_pb_varint(b, v);
}

void sonde_pb_int(sonde_buf_t *b, uint32_t field, int64_t v)
{
    sonde_pb_uint(b, field, (uint64_t)v);
}

void sonde_pb_bytes(sonde_buf_t *b, uint32_t field, const void *data, size_t len)
{
    sonde_pb_key(b, field, SONDE_PB_LEN);
    sonde_pb_varint(b, len);
    if (len) sonde_buf_append(b, data, len);
}

void sonde_pb_message(sonde_buf_t *b, uint32_t field, const sonde_buf_t *msg)
{
    if (msg->error) b->error = msg->error;
    sonde_pb_bytes(b, field, msg->data, msg->len);
}

void sonde_pb_packed(sonde_buf_t *b, uint32_t field, const uint64_t *values, size_t n)
{
    size_t len = 0;
    if (!n) return;
    for (size_t i = 0; i < n; i++)
        len += pb_varint_len(values[i]);
    sonde_pb_key(b, field, SONDE_PB_LEN);
    sonde_pb_varint(b, len);
    for (size_t i = 0; i < n; i++)
        sonde_pb_varint(b, values[i]);
}
