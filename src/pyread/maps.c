/* maps.c — parsing /proc/PID/maps to find where the interpreter is loaded.
 *
 * Owns: sonde_maps_parse_line, sonde_maps_find_images,
 * sonde_maps_minor_hint. Called by proc.c when it opens another process,
 * and by the unit tests. The text is hostile input: numbers are parsed with
 * digit limits, paths are length-checked, and a malformed line (or one
 * whose path holds a NUL byte) is skipped.
 * No allocation; nothing here runs in a signal handler.
 */
#include "pyread_internal.h"

#include <string.h>

#define MAPS_DELETED " (deleted)"

static bool maps_hex(const char **p, const char *end, uint64_t *out)
{
    uint64_t value = 0;
    int digits = 0;

    for (; *p < end && digits <= 16; (*p)++, digits++) {
        char c = **p;
        int v = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (v < 0) break;
        value = value << 4 | (uint64_t)v;
    }
    *out = value;
    return digits > 0 && digits <= 16;
}

static bool maps_dec(const char **p, const char *end, uint64_t *out)
{
    uint64_t value = 0;
    int digits = 0;

    for (; *p < end && **p >= '0' && **p <= '9' && digits <= 19; (*p)++, digits++)
        value = value * 10 + (uint64_t)(**p - '0');
    *out = value;
    return digits > 0 && digits <= 19;
}

static bool maps_char(const char **p, const char *end, char c)
{
    if (*p >= end || **p != c) return false;
    (*p)++;
    return true;
}

/* Parses one line of /proc/PID/maps (pyread_internal.h). */
int sonde_maps_parse_line(const char *line, size_t len, sonde_maps_line_t *out)
{
    const char *p = line, *end = line + len;
    uint64_t dev = 0;

    memset(out, 0, sizeof *out);
    out->path = "";
    if (!maps_hex(&p, end, &out->start) || !maps_char(&p, end, '-') ||
        !maps_hex(&p, end, &out->end) || !maps_char(&p, end, ' ') || end - p < 5)
        return -EINVAL;
    memcpy(out->perms, p, 4);
    p += 4;
    if (!maps_char(&p, end, ' ') || !maps_hex(&p, end, &out->offset) || !maps_char(&p, end, ' ') ||
        !maps_hex(&p, end, &dev) || !maps_char(&p, end, ':') || !maps_hex(&p, end, &dev) ||
        !maps_char(&p, end, ' ') || !maps_dec(&p, end, &out->inode) || out->start >= out->end)
        return -EINVAL;
    while (p < end && *p == ' ')
        p++;
    out->path = p;
    out->path_len = (size_t)(end - p);
    return 0;
}

/* Minor version named by a libpython3.N / python3.N file name
 * (pyread_internal.h). */
int sonde_maps_minor_hint(const char *path, size_t len)
{
    const char *base = path, *end = path + len;
    static const char *const prefixes[] = {"libpython3.", "python3."};

    for (const char *p = path; p < end; p++)
        if (*p == '/') base = p + 1;
    for (size_t i = 0; i < SONDE_ARRAY_LEN(prefixes); i++) {
        size_t plen = strlen(prefixes[i]);
        if ((size_t)(end - base) <= plen || memcmp(base, prefixes[i], plen) != 0) continue;
        const char *p = base + plen;
        uint64_t minor = 0;
        if (!maps_dec(&p, end, &minor) || minor > 99) return -1;
        return (int)minor;
    }
    return -1;
}

static bool maps_is_libpython(const char *path, size_t len)
{
    const char *base = path;
    for (const char *p = path; p < path + len; p++)
        if (*p == '/') base = p + 1;
    return (size_t)(path + len - base) > 10 && memcmp(base, "libpython3", 10) == 0 &&
           sonde_maps_minor_hint(path, len) >= 0;
}

static bool maps_has_image(const sonde_maps_image_t *images, int count, const char *path,
                           size_t len)
{
    for (int i = 0; i < count; i++)
        if (strlen(images[i].path) == len && memcmp(images[i].path, path, len) == 0) return true;
    return false;
}

/* Finds candidate interpreter images in maps text (pyread_internal.h). */
int sonde_maps_find_images(const char *text, size_t len, const char *exe_path,
                           sonde_maps_image_t *images, int max)
{
    int count = 0;
    size_t exe_len = exe_path ? strlen(exe_path) : 0;
    size_t dlen = strlen(MAPS_DELETED);
    if (exe_len > dlen && memcmp(exe_path + exe_len - dlen, MAPS_DELETED, dlen) == 0)
        exe_len -= dlen;

    /* Pass 0: the executable; pass 1: every libpython. */
    for (int pass = 0; pass < 2; pass++) {
        const char *line = text, *end = text + len;
        while (line < end && count < max) {
            const char *nl = memchr(line, '\n', (size_t)(end - line));
            size_t line_len = nl ? (size_t)(nl - line) : (size_t)(end - line);
            sonde_maps_line_t m;
            const char *next = nl ? nl + 1 : end;

            /* a NUL would cut the path: the file opened would not be the
             * one mapped (the kernel never writes one; the text may) */
            if (sonde_maps_parse_line(line, line_len, &m) != 0 || m.offset != 0 ||
                m.path_len == 0 || m.path[0] != '/' || m.path_len >= SONDE_MAPS_PATH_MAX ||
                memchr(m.path, 0, m.path_len)) {
                line = next;
                continue;
            }
            size_t path_len = m.path_len;
            bool deleted =
                path_len > dlen && memcmp(m.path + path_len - dlen, MAPS_DELETED, dlen) == 0;
            if (deleted) path_len -= dlen;
            bool wanted = pass == 0 ? (exe_path ? path_len == exe_len &&
                                                      memcmp(m.path, exe_path, exe_len) == 0
                                                : count == 0)
                                    : maps_is_libpython(m.path, path_len);
            if (wanted && !maps_has_image(images, count, m.path, path_len)) {
                sonde_maps_image_t *img = &images[count++];
                memcpy(img->path, m.path, path_len);
                img->path[path_len] = 0;
                img->base = m.start;
                img->end = m.end;
                img->inode = m.inode;
                img->deleted = deleted;
                img->is_libpython = pass == 1;
                img->minor_hint = sonde_maps_minor_hint(m.path, path_len);
            }
            line = next;
        }
    }
    return count;
}
