/* unicode.c — reading a str object of the target as UTF-8.
 *
 * Owns: sonde_pystr_read. Called by code.c when it resolves a code object
 * (file and function names), never per sample. Handles every layout CPython
 * 3.8-3.13 uses: compact ASCII (data right after PyASCIIObject), compact
 * UCS1/UCS2/UCS4 (after PyCompactUnicodeObject), non-compact strings
 * (data.any pointer) and, up to 3.11, strings not yet "ready" (only the
 * wchar_t *wstr). Lengths are hostile: at most SONDE_PY_MAX_STRING
 * characters are read. No allocation; nothing here runs in a signal
 * handler.
 */
#include "pyread_internal.h"

#include <string.h>

/* Characters read per system call when converting. */
#define STR_CHUNK_CHARS 512
#define STR_HEADER_MAX SONDE_PYREAD_STR_HEADER_MAX

#define STR_REPLACEMENT 0xFFFDu

static uint32_t str_state_bit(uint32_t state, int32_t shift)
{
    return shift < 0 ? 1u : (state >> shift) & 1u;
}

static int64_t str_field_i64(const uint8_t *header, int32_t at)
{
    int64_t value = 0;
    memcpy(&value, header + at, sizeof value);
    return value;
}

/* Appends code point cp as UTF-8 if it fits in out[*used .. limit). */
static bool str_put_utf8(char *out, size_t *used, size_t limit, uint32_t cp)
{
    uint8_t enc[4];
    size_t n = 0;

    if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) cp = STR_REPLACEMENT;
    if (cp < 0x80) {
        enc[n++] = (uint8_t)cp;
    } else if (cp < 0x800) {
        enc[n++] = (uint8_t)(0xC0 | (cp >> 6));
        enc[n++] = (uint8_t)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        enc[n++] = (uint8_t)(0xE0 | (cp >> 12));
        enc[n++] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        enc[n++] = (uint8_t)(0x80 | (cp & 0x3F));
    } else {
        enc[n++] = (uint8_t)(0xF0 | (cp >> 18));
        enc[n++] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
        enc[n++] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        enc[n++] = (uint8_t)(0x80 | (cp & 0x3F));
    }
    if (*used + n > limit) return false;
    memcpy(out + *used, enc, n);
    *used += n;
    return true;
}

/* Converts `chars` characters of `kind` bytes each at data into out. */
static int str_convert(sonde_mem_t *mem, uint64_t data, int kind, bool ascii, int64_t chars,
                       char *out, size_t limit)
{
    uint8_t chunk[STR_CHUNK_CHARS * 4];
    size_t used = 0;

    for (int64_t done = 0; done < chars;) {
        int64_t n = chars - done < STR_CHUNK_CHARS ? chars - done : STR_CHUNK_CHARS;
        int rc = sonde_mem_read(mem, data + (uint64_t)(done * kind), chunk, (size_t)(n * kind));
        if (rc != 0) return rc;
        for (int64_t i = 0; i < n; i++) {
            uint32_t cp;
            if (kind == 1) {
                cp = chunk[i];
                if (ascii && cp >= 0x80) cp = STR_REPLACEMENT;
            } else if (kind == 2) {
                uint16_t unit;
                memcpy(&unit, chunk + 2 * i, 2);
                cp = unit;
            } else {
                memcpy(&cp, chunk + 4 * i, 4);
            }
            if (!str_put_utf8(out, &used, limit, cp)) goto full;
        }
        done += n;
    }
full:
    out[used] = 0;
    return (int)used;
}

/* Whether field `at` (`size` bytes) lies in the first `within` bytes. */
static bool str_inside(int32_t at, int32_t size, int32_t within)
{
    return at >= 0 && at + size <= within;
}

static bool str_shift_ok(int32_t shift, int32_t bits)
{
    return shift < 0 || (shift + bits <= 32);
}

bool sonde__pystr_layout_ok(const sonde_pyoffsets_t *off)
{
    int32_t full = off->unicode_data_any + 8;
    return off->unicode_ascii_size > 0 && off->unicode_ascii_size <= STR_HEADER_MAX &&
           off->unicode_compact_size >= 0 && off->unicode_compact_size <= STR_HEADER_MAX &&
           str_inside(off->unicode_data_any, 8, STR_HEADER_MAX) &&
           str_inside(off->unicode_state, 4, off->unicode_ascii_size) &&
           str_inside(off->unicode_length, 8, off->unicode_ascii_size) &&
           (off->unicode_wstr < 0 || str_inside(off->unicode_wstr, 8, full)) &&
           (off->unicode_wstr_length < 0 || str_inside(off->unicode_wstr_length, 8, full)) &&
           str_shift_ok(off->unicode_kind_shift, 3) &&
           str_shift_ok(off->unicode_compact_shift, 1) &&
           str_shift_ok(off->unicode_ascii_shift, 1) && str_shift_ok(off->unicode_ready_shift, 1);
}

/* Reads the str object at addr as UTF-8 (see pyread_internal.h). */
int sonde_pystr_read(sonde_mem_t *mem, const sonde_pyoffsets_t *off, uint64_t addr, char *out,
                     size_t cap)
{
    uint8_t header[STR_HEADER_MAX];
    uint64_t data = 0;
    int kind = 0;
    int rc = 0;

    if (cap == 0) return -EINVAL;
    out[0] = 0;
    if (!sonde__pystr_layout_ok(off)) return -EINVAL;
    rc = sonde_mem_read(mem, addr, header, (size_t)off->unicode_ascii_size);
    if (rc != 0) return rc;

    uint32_t state = 0;
    memcpy(&state, header + off->unicode_state, sizeof state);
    int64_t length = str_field_i64(header, off->unicode_length);
    bool compact = str_state_bit(state, off->unicode_compact_shift);
    bool ascii = str_state_bit(state, off->unicode_ascii_shift);
    bool ready = str_state_bit(state, off->unicode_ready_shift);
    kind = (int)((state >> off->unicode_kind_shift) & 7);
    if (length < 0) return -EINVAL;

    if (compact && ascii) {
        data = addr + (uint64_t)off->unicode_ascii_size;
        kind = 1;
    } else if (compact) {
        data = addr + (uint64_t)off->unicode_compact_size;
    } else {
        /* The rest of the header: a PyUnicodeObject is the largest. */
        size_t full = (size_t)off->unicode_data_any + 8;
        rc = sonde_mem_read(mem, addr, header, full);
        if (rc != 0) return rc;
        if (ready) {
            data = (uint64_t)str_field_i64(header, off->unicode_data_any);
        } else if (off->unicode_wstr >= 0) {
            data = (uint64_t)str_field_i64(header, off->unicode_wstr);
            length = str_field_i64(header, off->unicode_wstr_length);
            kind = off->wchar_size;
            ascii = false;
        }
    }
    if (kind != 1 && kind != 2 && kind != 4) return -EINVAL;
    if (length < 0) return -EINVAL;
    if (length > SONDE_PY_MAX_STRING) length = SONDE_PY_MAX_STRING;

    size_t limit = cap - 1 < SONDE_PY_MAX_STRING ? cap - 1 : SONDE_PY_MAX_STRING;
    rc = str_convert(mem, data, kind, ascii, length, out, limit);
    if (rc < 0) out[0] = 0;
    return rc;
}
