/* html_json.c — the HTML page from a JSON file (`sonde view`).
 *
 * Owns: sonde_report_html_from_json (report.h): checks that a file handed
 * to `sonde view` really is a profile before html.c embeds it. The file may
 * come from anywhere, so it is parsed with a real JSON parser (cJSON,
 * Debian's libcjson-dev) and its shape checked: an object whose "files" is
 * an object of file entries, each with "lines" / "functions" arrays of
 * entries that carry a numeric "lineno", and an optional "call_stacks"
 * object; its text UTF-8 (as JSON must be) and every number finite (a
 * number beyond a double's range is no profile's). Profiles written by
 * Scalene pass too. The original text is
 * embedded, not a re-serialisation, so numbers and strings reach the viewer
 * exactly as written.
 *
 * Linked into the command only (Makefile: CMD_ONLY_SRCS), so neither the
 * extension module nor the shared core loads libcjson. Never in a signal
 * handler.
 */
#include "report_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int hj_fail(char *why, size_t why_len, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int hj_fail(char *why, size_t why_len, int rc, const char *fmt, ...)
{
    if (why && why_len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, why_len, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* Checks the entries of files[path].lines or .functions. */
static bool hj_entries_ok(const cJSON *file, const char *field)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(file, field);
    if (!list) return true;
    if (!cJSON_IsArray(list)) return false;
    const cJSON *entry;
    cJSON_ArrayForEach(entry, list)
    {
        if (!cJSON_IsObject(entry)) return false;
        if (!cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(entry, "lineno"))) return false;
    }
    return true;
}

size_t sonde__utf8_bad_at(const unsigned char *text, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned char c = text[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t need;
        unsigned lo = 0x80, hi = 0xbf; /* bounds of the second byte */
        if (c >= 0xc2 && c <= 0xdf) {
            need = 1;
        } else if (c >= 0xe0 && c <= 0xef) {
            need = 2;
            if (c == 0xe0) lo = 0xa0;
            if (c == 0xed) hi = 0x9f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            need = 3;
            if (c == 0xf0) lo = 0x90;
            if (c == 0xf4) hi = 0x8f;
        } else {
            return i;
        }
        if (len - i <= need) return i;
        if (text[i + 1] < lo || text[i + 1] > hi) return i;
        for (size_t k = 2; k <= need; k++)
            if ((text[i + k] & 0xc0) != 0x80) return i;
        i += need + 1;
    }
    return len;
}

/* True when every number in node and below it is finite. The depth is
 * bounded by cJSON's nesting limit (CJSON_NESTING_LIMIT). */
static bool hj_numbers_finite(const cJSON *node)
{
    if (cJSON_IsNumber(node)) return isfinite(node->valuedouble);
    for (const cJSON *child = node->child; child; child = child->next)
        if (!hj_numbers_finite(child)) return false;
    return true;
}

/* Checks the document's shape; returns 0 or -EPROTO with a reason. */
static int hj_check_profile(const cJSON *root, char *why, size_t why_len)
{
    if (!cJSON_IsObject(root))
        return hj_fail(why, why_len, -EPROTO, "the JSON document is not an object");
    if (!hj_numbers_finite(root))
        return hj_fail(why, why_len, -EPROTO, "it holds a number too large for a profile");
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(root, "files");
    if (!cJSON_IsObject(files)) return hj_fail(why, why_len, -EPROTO, "it has no \"files\" object");
    const cJSON *file;
    size_t i = 0;
    cJSON_ArrayForEach(file, files)
    {
        i++;
        if (!cJSON_IsObject(file))
            return hj_fail(why, why_len, -EPROTO, "file entry %zu of \"files\" is not an object",
                           i);
        if (!hj_entries_ok(file, "lines") || !hj_entries_ok(file, "functions"))
            return hj_fail(why, why_len, -EPROTO,
                           "file entry %zu has \"lines\" or \"functions\" that are not lists of "
                           "entries with a \"lineno\"",
                           i);
    }
    const cJSON *stacks = cJSON_GetObjectItemCaseSensitive(root, "call_stacks");
    if (stacks && (!cJSON_IsObject(stacks) ||
                   !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(stacks, "frames")) ||
                   !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(stacks, "samples"))))
        return hj_fail(why, why_len, -EPROTO,
                       "its \"call_stacks\" is not an object with \"frames\" and \"samples\"");
    return 0;
}

/* Line and column (1-based) of at within text. */
static void hj_position(const char *text, const char *at, size_t *line, size_t *col)
{
    *line = 1;
    *col = 1;
    for (const char *p = text; p < at; p++) {
        if (*p == '\n') {
            ++*line;
            *col = 1;
        } else {
            ++*col;
        }
    }
}

int sonde_report_html_from_json(const char *json_text, size_t len, const char *viewer_dir,
                                sonde_buf_t *out, char *why, size_t why_len)
{
    int rc = 0;
    char *copy = NULL;
    cJSON *root = NULL;
    if (why && why_len) why[0] = 0;

    if (len >= 3 && memcmp(json_text, "\xef\xbb\xbf", 3) == 0) { /* UTF-8 BOM */
        json_text += 3;
        len -= 3;
    }
    if (memchr(json_text, 0, len))
        return hj_fail(why, why_len, -EBADMSG, "it contains NUL bytes (a binary file?)");
    size_t bad = sonde__utf8_bad_at((const unsigned char *)json_text, len);
    if (bad < len) {
        size_t line, col;
        hj_position(json_text, json_text + bad, &line, &col);
        return hj_fail(why, why_len, -EBADMSG,
                       "it is not UTF-8 text (line %zu, column %zu): not a JSON file", line, col);
    }
    /* cJSON wants the terminating NUL inside the length it is given to
     * check that nothing follows the value. */
    copy = malloc(len + 1);
    if (!copy) return -ENOMEM;
    memcpy(copy, json_text, len);
    copy[len] = 0;
    const char *end = NULL;
    root = cJSON_ParseWithLengthOpts(copy, len + 1, &end, 1);
    if (!root) {
        if (!end) end = cJSON_GetErrorPtr();
        if (end && end >= copy && end <= copy + len) {
            size_t line, col;
            hj_position(copy, end, &line, &col);
            rc = hj_fail(why, why_len, -EBADMSG, "it is not valid JSON (line %zu, column %zu)",
                         line, col);
        } else {
            rc = hj_fail(why, why_len, -EBADMSG, "it is not valid JSON");
        }
        goto done;
    }
    if ((rc = hj_check_profile(root, why, why_len)) < 0) goto done;
    rc = sonde_report_html_page(json_text, len, viewer_dir, out);
done:
    cJSON_Delete(root);
    free(copy);
    return rc;
}
