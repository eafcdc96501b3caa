/* codec.c — the hand-over's framing and its one cursor (handover.h).
 *
 * Owns: the header ("SONDEHO\n", version, reserved word, body length), the
 * records (u32 tag, u64 length, body) and the field encodings: integers
 * little-endian in fixed widths, doubles as their IEEE bits, booleans one
 * byte (0 or 1), strings a u32 length (0xffffffff: NULL) and their bytes,
 * counts a u32. sonde_handover_encode and sonde_handover_decode run
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
#define CODEC_RECORD_HEAD_LEN (4 + 8)
#define CODEC_NULL_STR UINT32_MAX

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

/* ---- fields ------------------------------------------------------------------------- */

void sonde__ho_u64(sonde__ho_io_t *io, uint64_t *v)
{
    if (io->rc) return;
    if (!io->reading)
        codec_put(io, *v, 8);
    else
        (void)codec_get(io, v, 8);
}

void sonde__ho_u32(sonde__ho_io_t *io, uint32_t *v)
{
    uint64_t wide = *v;
    if (io->rc) return;
    if (!io->reading)
        codec_put(io, wide, 4);
    else if (codec_get(io, &wide, 4))
        *v = (uint32_t)wide;
}

void sonde__ho_int(sonde__ho_io_t *io, int *v)
{
    uint32_t bits = (uint32_t)*v;
    sonde__ho_u32(io, &bits);
    if (io->reading && !io->rc) *v = (int)(int32_t)bits;
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
    uint64_t bits = 0;
    if (io->rc) return;
    if (!io->reading) {
        memcpy(&bits, v, sizeof bits);
        codec_put(io, bits, 8);
    } else if (codec_get(io, &bits, 8)) {
        double value;
        memcpy(&value, &bits, sizeof value);
        if (!isfinite(value) || fabs(value) > SONDE__HO_MAX_NUMBER)
            sonde__ho_fail(io, -EPROTO, "a number that is not finite or out of bounds");
        else
            *v = value;
    }
}

void sonde__ho_str(sonde__ho_io_t *io, char **s, bool nullable)
{
    if (io->rc) return;
    if (!io->reading) {
        if (!*s) {
            if (!nullable) sonde__ho_fail(io, -EINVAL, "a string the model never leaves NULL");
            codec_put(io, CODEC_NULL_STR, 4);
            return;
        }
        size_t len = strlen(*s);
        if (len >= CODEC_NULL_STR) {
            sonde__ho_fail(io, -EOVERFLOW, "a string longer than the format's 32 bits");
            return;
        }
        codec_put(io, len, 4);
        sonde_buf_append(io->out, *s, len);
        return;
    }
    uint64_t len = 0;
    if (!codec_get(io, &len, 4)) return;
    if (len == CODEC_NULL_STR) {
        if (!nullable) sonde__ho_fail(io, -EPROTO, "a NULL where the model needs a string");
        return;
    }
    if (len > codec_left(io)) {
        sonde__ho_fail(io, -EPROTO, "a string longer than its record");
        return;
    }
    if (memchr(io->at, 0, (size_t)len)) {
        sonde__ho_fail(io, -EPROTO, "a string holding a NUL byte");
        return;
    }
    char *copy = malloc((size_t)len + 1);
    if (!copy) {
        sonde__ho_fail(io, -ENOMEM, "out of memory");
        return;
    }
    memcpy(copy, io->at, (size_t)len);
    copy[len] = 0;
    io->at += len;
    *s = copy;
}

void sonde__ho_chars(sonde__ho_io_t *io, char *s, size_t size)
{
    if (io->rc) return;
    if (!io->reading) {
        size_t len = strnlen(s, size);
        if (len >= size) {
            sonde__ho_fail(io, -EINVAL, "a fixed string without its NUL");
            return;
        }
        codec_put(io, len, 4);
        sonde_buf_append(io->out, s, len);
        return;
    }
    uint64_t len = 0;
    if (!codec_get(io, &len, 4)) return;
    if (len >= size || len > codec_left(io) || memchr(io->at, 0, (size_t)len)) {
        sonde__ho_fail(io, -EPROTO, "a fixed string too long for its field, or holding a NUL");
        return;
    }
    memcpy(s, io->at, (size_t)len);
    memset(s + len, 0, size - (size_t)len);
    io->at += len;
}

bool sonde__ho_count(sonde__ho_io_t *io, size_t *n, size_t min_bytes)
{
    if (io->rc) return false;
    if (!io->reading) {
        if (*n > UINT32_MAX) {
            sonde__ho_fail(io, -EOVERFLOW, "a count past the format's 32 bits");
            return false;
        }
        codec_put(io, *n, 4);
        return true;
    }
    uint64_t count = 0;
    if (!codec_get(io, &count, 4)) return false;
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
