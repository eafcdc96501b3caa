/* html.c — the HTML report: one self-contained page (sonde_report_html).
 *
 * Owns: the page around the viewer (viewer/ in the repository, installed
 * as <package>/viewer/): the profile JSON in a <script type=
 * "application/json"> element, the viewer's CSS and JS read from the
 * viewer directory at run time and inlined, and a Content-Security-Policy
 * that forbids every network request and allows only the page's own
 * inline scripts (by hash). Called by the extension's session (`sonde run
 * --html`) and by `sonde view` (html_json.c); never in a signal handler.
 *
 * Safety of the embedding: every '<', '>' and '&' of the JSON text is
 * written as \u003c, \u003e, \u0026 — valid inside JSON strings, and in
 * valid JSON those bytes cannot occur outside strings — so no text of the
 * profiled program can end the data element or open a tag. The viewer
 * then inserts profile text as text nodes only. Viewer files are checked
 * too: one that contains "</script", "<!--" or "</style" is refused.
 */
#include "html_internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define HTML_MAX_VIEWER_FILES 32
#define HTML_MAX_VIEWER_BYTES ((size_t)8 << 20) /* per file */
#define HTML_DATA_ID "sonde-profile"

typedef struct html_part {
    char name[256];   /* file name within the viewer directory */
    bool is_js;       /* .js (a script); else .css (a style sheet) */
    sonde_buf_t text; /* owned; the file, line endings normalised to \n */
} html_part_t;

typedef struct html_viewer {
    html_part_t parts[HTML_MAX_VIEWER_FILES]; /* sorted by name */
    size_t n;
} html_viewer_t;

static void html_viewer_free(html_viewer_t *v)
{
    for (size_t i = 0; i < v->n; i++)
        sonde_buf_free(&v->parts[i].text);
    v->n = 0;
}

static bool html_has_suffix(const char *name, const char *suffix)
{
    size_t n = strlen(name), s = strlen(suffix);
    return n > s && strcmp(name + n - s, suffix) == 0;
}

/* Case-insensitive search for needle in data[0..len-1]. */
static bool html_contains_ci(const char *data, size_t len, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= len; i++)
        if (strncasecmp(data + i, needle, n) == 0) return true;
    return false;
}

/* Reads a viewer file into out, turning "\r\n" and "\r" into "\n" (as an
 * HTML parser would, so that the CSP hash matches what the browser hashes).
 * Returns 0 or -errno; -EFBIG past HTML_MAX_VIEWER_BYTES. */
static int html_read_part(const char *path, sonde_buf_t *out)
{
    sonde_buf_t raw = SONDE_BUF_INIT;
    int rc = sonde_buf_read_file(&raw, path, HTML_MAX_VIEWER_BYTES, NULL);
    for (size_t i = 0; rc == 0 && i < raw.len; i++) {
        if (raw.data[i] != '\r') {
            sonde_buf_putc(out, raw.data[i]);
        } else {
            sonde_buf_putc(out, '\n');
            if (i + 1 < raw.len && raw.data[i + 1] == '\n') i++;
        }
    }
    if (rc == 0 && !out->data) sonde_buf_puts(out, ""); /* an empty file is still a part */
    if (rc == 0) rc = sonde_buf_error(out);
    sonde_buf_free(&raw);
    return rc;
}

static int html_cmp_parts(const void *a, const void *b)
{
    return strcmp(((const html_part_t *)a)->name, ((const html_part_t *)b)->name);
}

/* Loads every *.css and *.js of dir (hidden files skipped), sorted by name.
 * Returns 0 or -errno: -ENOENT when dir has no .js file, -EINVAL when a
 * file could end its element early, -E2BIG past HTML_MAX_VIEWER_FILES. */
static int html_load_viewer(const char *dir, html_viewer_t *v)
{
    int rc = 0;
    bool any_js = false;
    v->n = 0;
    DIR *d = opendir(dir);
    if (!d) return -errno;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *name = e->d_name;
        bool js = html_has_suffix(name, ".js"), css = html_has_suffix(name, ".css");
        if (name[0] == '.' || (!js && !css)) continue;
        if (v->n == HTML_MAX_VIEWER_FILES) {
            rc = -E2BIG;
            goto done;
        }
        html_part_t *part = &v->parts[v->n];
        if ((size_t)snprintf(part->name, sizeof part->name, "%s", name) >= sizeof part->name)
            continue;
        part->is_js = js;
        part->text = (sonde_buf_t)SONDE_BUF_INIT;
        char path[4096];
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path) {
            rc = -ENAMETOOLONG;
            goto done;
        }
        v->n++;
        if ((rc = html_read_part(path, &part->text)) < 0) goto done;
        const char *text = part->text.data;
        size_t len = part->text.len;
        if (html_contains_ci(text, len, "<!--") ||
            html_contains_ci(text, len, js ? "</script" : "</style")) {
            rc = -EINVAL;
            goto done;
        }
        any_js |= js;
    }
    if (!any_js) rc = -ENOENT;
    qsort(v->parts, v->n, sizeof v->parts[0], html_cmp_parts);
done:
    closedir(d);
    if (rc < 0) html_viewer_free(v);
    return rc;
}

/* Appends json with every '<', '>', '&' byte as a JSON \u escape. */
static void html_put_json(sonde_buf_t *out, const char *json, size_t len)
{
    size_t start = 0;
    for (size_t i = 0; i < len; i++) {
        const char *esc = json[i] == '<'   ? "\\u003c"
                          : json[i] == '>' ? "\\u003e"
                          : json[i] == '&' ? "\\u0026"
                                           : NULL;
        if (!esc) continue;
        sonde_buf_append(out, json + start, i - start);
        sonde_buf_puts(out, esc);
        start = i + 1;
    }
    sonde_buf_append(out, json + start, len - start);
}

int sonde_report_html_page(const char *json_text, size_t len, const char *viewer_dir,
                           sonde_buf_t *out)
{
    size_t start = out->len;
    html_viewer_t *v = calloc(1, sizeof *v);
    if (!v) return -ENOMEM;
    int rc = html_load_viewer(viewer_dir, v);
    if (rc < 0) goto done;

    sonde_buf_puts(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
                        "'none'; script-src");
    for (size_t i = 0; i < v->n; i++) {
        if (!v->parts[i].is_js) continue;
        sonde_buf_putc(out, ' ');
        sonde__csp_hash_source(out, v->parts[i].text.data, v->parts[i].text.len);
    }
    sonde_buf_puts(out, "; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
                        "form-action 'none'\">\n"
                        "<meta name=\"generator\" content=\"sonde " SONDE_VERSION "\">\n"
                        "<title>sonde profile</title>\n");
    for (size_t i = 0; i < v->n; i++) {
        if (v->parts[i].is_js) continue;
        sonde_buf_puts(out, "<style>");
        sonde_buf_append(out, v->parts[i].text.data, v->parts[i].text.len);
        sonde_buf_puts(out, "</style>\n");
    }
    sonde_buf_puts(out, "</head>\n<body>\n<noscript><p>This sonde report needs JavaScript. "
                        "The profile is also in this file as JSON (element #" HTML_DATA_ID
                        ").</p></noscript>\n<div id=\"sonde-app\"></div>\n"
                        "<script type=\"application/json\" id=\"" HTML_DATA_ID "\">");
    html_put_json(out, json_text, len);
    sonde_buf_puts(out, "</script>\n");
    for (size_t i = 0; i < v->n; i++) {
        if (!v->parts[i].is_js) continue;
        sonde_buf_puts(out, "<script>");
        sonde_buf_append(out, v->parts[i].text.data, v->parts[i].text.len);
        sonde_buf_puts(out, "</script>\n");
    }
    sonde_buf_puts(out, "</body>\n</html>\n");
    rc = sonde_buf_error(out);
done:
    if (rc < 0 && out->data && !sonde_buf_error(out)) { /* leave out as it was */
        out->len = start;
        out->data[start] = 0;
    }
    html_viewer_free(v);
    free(v);
    return rc;
}

int sonde_report_html(const sonde_profile_t *prof, const char *viewer_dir, sonde_buf_t *out)
{
    sonde_buf_t json = SONDE_BUF_INIT;
    int rc = sonde_report_json(prof, &json);
    if (rc == 0) rc = sonde_report_html_page(json.data ? json.data : "", json.len, viewer_dir, out);
    sonde_buf_free(&json);
    return rc;
}
