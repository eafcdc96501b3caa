/* protobuf.h — writing Protocol Buffers' wire format.
 *
 * Owns: a small encoder for the parts of the wire format sonde writes
 * (varints, 64-bit integers as varints, length-delimited fields: strings,
 * bytes, nested messages and packed repeated integers), enough for pprof's
 * profile.proto (src/report/pprof.c). A message is built into its own
 * sonde_buf_t and appended to its parent with sonde_pb_message. Appends to
 * a sonde_buf_t, so errors are sticky (-ENOMEM from sonde_buf_error).
 * Plain C, no libpython, allocates; never in a signal handler.
 */
#ifndef SONDE_PROTOBUF_H
#define SONDE_PROTOBUF_H

#include "buf.h"

/* Wire types. */
#define SONDE_PB_VARINT 0
#define SONDE_PB_LEN 2

/* A bare varint (7 bits a byte, low group first, high bit = more). */
void sonde_pb_varint(sonde_buf_t *b, uint64_t v);
/* A field's key: (field << 3) | wire_type, as a varint. */
void sonde_pb_key(sonde_buf_t *b, uint32_t field, int wire_type);
/* A varint field (uint64, or int64 as its two's complement: a negative
 * value takes ten bytes, as protobuf's int64 does). Always written, even 0. */
void sonde_pb_uint(sonde_buf_t *b, uint32_t field, uint64_t v);
void sonde_pb_int(sonde_buf_t *b, uint32_t field, int64_t v);
/* A length-delimited field of len bytes (string, bytes). */
void sonde_pb_bytes(sonde_buf_t *b, uint32_t field, const void *data, size_t len);
/* A nested message already encoded in msg (sticky errors carried over). */
void sonde_pb_message(sonde_buf_t *b, uint32_t field, const sonde_buf_t *msg);
/* A packed repeated integer field of n values (nothing when n is 0).
 * Signed values go as their two's complement (int64). */
void sonde_pb_packed(sonde_buf_t *b, uint32_t field, const uint64_t *values, size_t n);

#endif
