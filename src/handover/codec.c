/* codec.c — the hand-over's framing and its one cursor (handover.h).
 *
 * Owns: the header ("SONDEHO\n", u32 version, u32 reserved word, u64 body
 * length) and the records (u32 tag, u64 length, body), fixed widths
 * little-endian; and the field encodings: unsigned integers and counts as
 * LEB128 varints (the shortest form only), ints zigzag-encoded so, doubles
 * one byte 0 for +0.0 else 1 and their 8 IEEE bytes (most figures of a
 * profile are zero), booleans one byte (0 or 1), strings a varint of their
 * length + 1 (0: NULL) and their bytes. sonde_handover_encode and
 * sonde_handover_decode run
 * walk.c's walk of the model with the cursor writing or reading. Reading
 * takes bytes other processes wrote: every length and count is checked
 * against the bytes left before anything is allocated or copied, nothing
 * recurses, and the first problem stops the walk. Writing runs in the
 * profiled process (exit, sampler thread): malloc only, no stdio, no
 * Python API. No signal handler.
 */
#include "handover_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CODEC_MAGIC "SONDEHO\n"
#define CODEC_MAGIC_LEN 8
#define CODEC_HEADER_LEN (CODEC_MAGIC_LEN + 4 + 4 + 8)
#define CODEC_VARINT_MAX 10 /* bytes of a 64-bit varint */

void sonde__ho_fail(sonde__ho_io_t *io, int rc, const char *why)
{
    if (io->rc) return;
    io->rc = rc;
    io->why = why;
}

/* ---- bytes ------------------------------------------------------------------------- */

static void codec_put(sonde__ho_io_t *io, uint64_t v, int width)
{
    unsigned char bytes[8];
    for (int i = 0; i < width; i++)
        bytes[i] = (unsigned char)(v >> (8 * i));
    sonde_buf_append(io->out, bytes, (size_t)width);
}

static size_t codec_left(const sonde__ho_io_t *io)
{
    return (size_t)(io->end - io->at);
}

/* Reads width bytes little-endian; false (and the error) when the record
 * has fewer left. */
static bool codec_get(sonde__ho_io_t *io, uint64_t *v, int width)
{
    if (io->rc) return false;
    if (codec_left(io) < (size_t)width) {
        sonde__ho_fail(io, -EPROTO, "a record ends inside a field (truncated or malformed)");
        return false;
    }
    uint64_t value = 0;
    for (int i = 0; i < width; i++)
        value |= (uint64_t)io->at[i] << (8 * i);
    io->at += width;
    *v = value;
    return true;
}

/* ---- varints -------------------------------------------------------------------- */

static void codec_put_varint(sonde__ho_io_t *io, uint64_t v)
{
    unsigned char bytes[CODEC_VARINT_MAX];
    size_t n = 0;
    do {
        bytes[n] = (unsigned char)(v & 0x7f);
        v >>= 7;
        if (v) bytes[n] |= 0x80;
        n++;
    } while (v);
    sonde_buf_append(io->out, bytes, n);
}

/* Reads a varint of at most max; false (and the error) when the record
 * ends inside it, it is longer than its shortest form, or past max. */
static bool codec_get_varint(sonde__ho_io_t *io, uint64_t *v, uint64_t max)
{
    uint64_t value = 0;
    if (io->rc) return false;
    for (size_t i = 0; i < CODEC_VARINT_MAX; i++) {
        if (io->at >= io->end) {
            sonde__ho_fail(io, -EPROTO, "a record ends inside a field (truncated or malformed)");
            return false;
        }
        unsigned char byte = *io->at++;
        uint64_t bits = (uint64_t)(byte & 0x7f);
        /* the tenth byte holds the 64th bit only */
        if ((i == CODEC_VARINT_MAX - 1 && bits > 1) || (i > 0 && byte == 0)) break;
        value |= bits << (7 * i);
        if (!(byte & 0x80)) {
            if (value > max) {
                sonde__ho_fail(io, -EPROTO, "a number too large for its field");
                return false;
            }
            *v = value;
            return true;
        }
    }
    sonde__ho_fail(io, -EPROTO, "a malformed number (overlong or past 64 bits)");
    return false;
}

/* ---- fields ------------------------------------------------------------------------- */

void sonde__ho_u64(sonde__ho_io_t *io, uint64_t *v)
{
    if (io->rc) return;
    if (!io->reading)
        codec_put_varint(io, *v);
    else
        (void)codec_get_varint(io, v, UINT64_MAX);
}

void sonde__ho_u32(sonde__ho_io_t *io, uint32_t *v)
{
    uint64_t wide = *v;
    if (io->rc) return;
    if (!io->reading)
        codec_put_varint(io, wide);
    else if (codec_get_varint(io, &wide, UINT32_MAX))
        *v = (uint32_t)wide;
}

void sonde__ho_int(sonde__ho_io_t *io, int *v)
{
    /* zigzag: 0, -1, 1, -2 ... as 0, 1, 2, 3 ... */
    int64_t value = *v;
    uint64_t zigzag = ((uint64_t)value << 1) ^ (uint64_t)(value >> 63);
    if (io->rc) return;
    if (!io->reading) {
        codec_put_varint(io, zigzag);
    } else if (codec_get_varint(io, &zigzag, UINT32_MAX)) {
        int64_t decoded = (int64_t)(zigzag >> 1) ^ -(int64_t)(zigzag & 1);
        *v = (int)decoded;
    }
}

void sonde__ho_bool(sonde__ho_io_t *io, bool *v)
{
    uint64_t byte = *v ? 1 : 0;
    if (io->rc) return;
    if (!io->reading) {
        codec_put(io, byte, 1);
    } else if (codec_get(io, &byte, 1)) {
        if (byte > 1) sonde__ho_fail(io, -EPROTO, "a boolean that is neither 0 nor 1");
        *v = byte == 1;
    }
}

void sonde__ho_f64(sonde__ho_io_t *io, double *v)
{
    uint64_t bits = 0, tag = 0;
    if (io->rc) return;
    if (!io->reading) {
        memcpy(&bits, v, sizeof bits);
        codec_put(io, bits ? 1 : 0, 1);
        if (bits) codec_put(io, bits, 8);
        return;
    }
    if (!codec_get(io, &tag, 1)) return;
    if (tag > 1) {
        sonde__ho_fail(io, -EPROTO, "a number of an unknown form");
        return;
    }
    if (tag == 0) {
        *v = 0;
        return;
    }
    if (!codec_get(io, &bits, 8)) return;
    double value;
    memcpy(&value, &bits, sizeof value);
    if (!bits || !isfinite(value) || fabs(value) > SONDE__HO_MAX_NUMBER)
        sonde__ho_fail(io, -EPROTO, "a number that is not finite, out of bounds, or overlong");
    else
        *v = value;
}

/* A string's length + 1 (0: NULL) and its bytes; reading, the length
 * checked against the record and the bytes against NUL. Returns the bytes
 * (in the file) and their length, NULL for a NULL string or an error. */
static const unsigned char *codec_string(sonde__ho_io_t *io, const char *s, size_t max_len,
                                         size_t *len_out)
{
    if (!io->reading) {
        size_t len = s ? strlen(s) : 0;
        codec_put_varint(io, s ? (uint64_t)len + 1 : 0);
        if (s) sonde_buf_append(io->out, s, len);
        return NULL;
    }
    uint64_t stored = 0;
    if (!codec_get_varint(io, &stored, UINT64_MAX) || stored == 0) return NULL;
    uint64_t len = stored - 1;
    if (len > max_len || len > codec_left(io)) {
        sonde__ho_fail(io, -EPROTO, "a string longer than its record or its field");
        return NULL;
    }
    const unsigned char *bytes = io->at;
    if (memchr(bytes, 0, (size_t)len)) {
        sonde__ho_fail(io, -EPROTO, "a string holding a NUL byte");
        return NULL;
    }
    io->at += len;
    *len_out = (size_t)len;
    return bytes;
}

void sonde__ho_str(sonde__ho_io_t *io, char **s, bool nullable)
{
    if (io->rc) return;
    if (!io->reading) {
        if (!*s && !nullable) {
            sonde__ho_fail(io, -EINVAL, "a string the model never leaves NULL");
            return;
        }
        (void)codec_string(io, *s, SIZE_MAX, NULL);
        return;
    }
    size_t len = 0;
    const unsigned char *bytes = codec_string(io, NULL, SIZE_MAX, &len);
    if (io->rc) return;
    if (!bytes) {
        if (!nullable) sonde__ho_fail(io, -EPROTO, "a NULL where the model needs a string");
        return;
    }
    char *copy = malloc(len + 1);
    if (!copy) {
        sonde__ho_fail(io, -ENOMEM, "out of memory");
        return;
    }
    memcpy(copy, bytes, len);
    copy[len] = 0;
    *s = copy;
}

void sonde__ho_chars(sonde__ho_io_t *io, char *s, size_t size)
{
    if (io->rc) return;
    if (!io->reading) {
        if (strnlen(s, size) >= size) {
            sonde__ho_fail(io, -EINVAL, "a fixed string without its NUL");
            return;
        }
        (void)codec_string(io, s, size - 1, NULL);
        return;
    }
    size_t len = 0;
    const unsigned char *bytes = codec_string(io, NULL, size - 1, &len);
    if (io->rc) return;
    if (!bytes) {
        sonde__ho_fail(io, -EPROTO, "a NULL where the model needs a string");
        return;
    }
    memcpy(s, bytes, len);
    memset(s + len, 0, size - len);
}

bool sonde__ho_count(sonde__ho_io_t *io, size_t *n, size_t min_bytes)
{
    if (io->rc) return false;
    if (!io->reading) {
        if (*n > UINT32_MAX) {
            sonde__ho_fail(io, -EOVERFLOW, "a count past the format's 32 bits");
            return false;
        }
        codec_put_varint(io, *n);
        return true;
    }
    uint64_t count = 0;
    if (!codec_get_varint(io, &count, UINT32_MAX)) return false;
    if (min_bytes && count > codec_left(io) / min_bytes) {
        sonde__ho_fail(io, -EPROTO, "a count larger than its record can hold");
        return false;
    }
    *n = (size_t)count;
    return true;
}

bool sonde__ho_alloc(sonde__ho_io_t *io, void **items, size_t n, size_t elem)
{
    if (io->rc) return false;
    if (!io->reading) return true;
    *items = NULL;
    if (n == 0) return true;
    *items = calloc(n, elem);
    if (!*items) sonde__ho_fail(io, -ENOMEM, "out of memory");
    return *items != NULL;
}

/* ---- records ------------------------------------------------------------------------ */

void sonde__ho_record_begin(sonde__ho_io_t *io, uint32_t tag, uintptr_t *mark)
{
    *mark = 0;
    if (io->rc) return;
    if (!io->reading) {
        codec_put(io, tag, 4);
        *mark = io->out->len; /* where the length goes */
        codec_put(io, 0, 8);
        return;
    }
    uint64_t got = 0, len = 0;
    if (!codec_get(io, &got, 4) || !codec_get(io, &len, 8)) return;
    if (got != tag) {
        sonde__ho_fail(io, -EPROTO, "a record missing, out of order, or unknown");
        return;
    }
    if (len > codec_left(io)) {
        sonde__ho_fail(io, -EPROTO, "a record longer than the file (truncated)");
        return;
    }
    *mark = (uintptr_t)io->end; /* the outer end, back at the record's end */
    io->end = io->at + len;
}

void sonde__ho_record_end(sonde__ho_io_t *io, uintptr_t mark)
{
    if (io->rc) return;
    if (!io->reading) {
        if (sonde_buf_error(io->out)) return;
        uint64_t len = io->out->len - (size_t)mark - 8;
        for (int i = 0; i < 8; i++)
            io->out->data[mark + (size_t)i] = (char)(unsigned char)(len >> (8 * i));
        return;
    }
    if (io->at != io->end) {
        sonde__ho_fail(io, -EPROTO, "a record longer than its fields");
        return;
    }
    io->end = (const unsigned char *)mark;
}

/* ---- the whole -------------------------------------------------------------------- */

int sonde_handover_encode(const sonde_profile_t *prof, sonde_buf_t *out)
{
    size_t start = out->len;
    sonde__ho_io_t io = {.reading = false, .out = out};
    sonde_buf_append(out, CODEC_MAGIC, CODEC_MAGIC_LEN);
    codec_put(&io, SONDE_HANDOVER_VERSION, 4);
    codec_put(&io, 0, 4); /* reserved */
    size_t body_at = out->len;
    codec_put(&io, 0, 8); /* the body's length, below */
    /* The walk reads and writes through one pointer; writing never
     * changes the profile. */
    sonde__ho_walk(&io, (sonde_profile_t *)prof);
    int rc = io.rc ? io.rc : sonde_buf_error(out);
    if (rc == 0) {
        uint64_t body = out->len - body_at - 8;
        for (int i = 0; i < 8; i++)
            out->data[body_at + (size_t)i] = (char)(unsigned char)(body >> (8 * i));
    } else if (!sonde_buf_error(out)) {
        out->len = start; /* nothing of a failed encoding stays */
        if (out->data) out->data[start] = 0;
    }
    return rc;
}

int sonde_handover_decode(sonde_profile_t *prof, const void *data, size_t len, const char **why)
{
    const unsigned char *bytes = data;
    sonde__ho_io_t io = {.reading = true, .at = bytes, .end = bytes + len};
    uint64_t version = 0, reserved = 0, body = 0;
    if (why) *why = NULL;
    if (!data || len < CODEC_MAGIC_LEN || memcmp(bytes, CODEC_MAGIC, CODEC_MAGIC_LEN) != 0) {
        if (why) *why = "not a hand-over file (no magic)";
        return -EINVAL;
    }
    io.at += CODEC_MAGIC_LEN;
    if (len < CODEC_HEADER_LEN) sonde__ho_fail(&io, -EPROTO, "truncated in its header");
    if (codec_get(&io, &version, 4) && version != SONDE_HANDOVER_VERSION)
        sonde__ho_fail(&io, -EPROTO, "a hand-over of another version of sonde");
    if (codec_get(&io, &reserved, 4) && reserved != 0)
        sonde__ho_fail(&io, -EPROTO, "a reserved word that is not 0");
    if (codec_get(&io, &body, 8) && body != codec_left(&io))
        sonde__ho_fail(&io, -EPROTO, body < codec_left(&io) ? "bytes after the end" : "truncated");
    if (io.rc == 0) sonde__ho_walk(&io, prof);
    if (io.rc == 0 && io.at != io.end) sonde__ho_fail(&io, -EPROTO, "bytes after the last record");
    if (io.rc) {
        sonde_profile_free(prof);
        if (why) *why = io.why;
    }
    return io.rc;
}
