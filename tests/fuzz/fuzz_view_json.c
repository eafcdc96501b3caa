/* fuzz_view_json.c — libFuzzer target: `sonde view`'s reading of a JSON
 * profile (sonde_report_html_from_json, src/report/html_json.c, with
 * cJSON) and the page it embeds the file in (src/report/html.c).
 *
 * Input: the file. The viewer directory is a small one made at start
 * (one script, one style sheet). Checked: a file is refused with
 * -EBADMSG or -EPROTO and a reason, or gives a page that holds exactly one
 * data element and the viewer's one script; no '<', '>' or '&' inside the
 * data element (nothing in the file can end it or open a tag); and the
 * data element, its \u003c / \u003e / \u0026 escapes undone, is the file
 * itself (a UTF-8 byte order mark dropped).
 */
#include "report/report.h"

#include "fuzz.h"

#include <sys/stat.h>
#include <unistd.h>

#define DATA_OPEN "<script type=\"application/json\" id=\"sonde-profile\">"
#define DATA_CLOSE "</script>"

static char viewer_dir[64];

static void remove_viewer(void)
{
    char path[128];
    snprintf(path, sizeof path, "%s/app.js", viewer_dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/app.css", viewer_dir);
    unlink(path);
    rmdir(viewer_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    snprintf(viewer_dir, sizeof viewer_dir, "/tmp/sonde-fuzz-viewer-%d", (int)getpid());
    char path[128];
    if (mkdir(viewer_dir, 0700) != 0 && errno != EEXIST) abort();
    atexit(remove_viewer);
    snprintf(path, sizeof path, "%s/app.js", viewer_dir);
    FILE *f = fopen(path, "w");
    if (f == NULL || fputs("document.title = 'sonde';\n", f) < 0 || fclose(f) != 0) abort();
    snprintf(path, sizeof path, "%s/app.css", viewer_dir);
    f = fopen(path, "w");
    if (f == NULL || fputs("body { margin: 0 }\n", f) < 0 || fclose(f) != 0) abort();
    return 0;
}

static size_t count(const char *hay, size_t len, const char *needle)
{
    size_t n = 0, k = strlen(needle);
    for (const char *p = hay; (p = memmem(p, len - (size_t)(p - hay), needle, k)) != NULL; p += k)
        n++;
    return n;
}

/* Checks the data element against the file (BOM dropped). */
static void check_data(const sonde_buf_t *page, const uint8_t *json, size_t len)
{
    fuzz_assert(count(page->data, page->len, DATA_OPEN) == 1, "not one data element");
    fuzz_assert(count(page->data, page->len, "<script") == 2, "%zu script elements",
                count(page->data, page->len, "<script"));
    const char *start = strstr(page->data, DATA_OPEN) + strlen(DATA_OPEN);
    const char *end =
        memmem(start, page->len - (size_t)(start - page->data), DATA_CLOSE, strlen(DATA_CLOSE));
    fuzz_assert(end != NULL, "the data element does not end");
    size_t at = 0;
    for (const char *p = start; p < end; p++) {
        fuzz_assert(*p != '<' && *p != '>' && *p != '&', "a raw '%c' in the data element", *p);
        char want = at < len ? (char)json[at] : 0;
        if (strncmp(p, "\\u003c", 6) == 0 && want == '<') {
            p += 5;
        } else if (strncmp(p, "\\u003e", 6) == 0 && want == '>') {
            p += 5;
        } else if (strncmp(p, "\\u0026", 6) == 0 && want == '&') {
            p += 5;
        } else {
            fuzz_assert(at < len && *p == want, "the data element differs at byte %zu", at);
        }
        at++;
    }
    fuzz_assert(at == len, "the data element holds %zu of %zu bytes", at, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* exactly size bytes: a read past the end is caught */
    char *text = malloc(size ? size : 1);
    if (text == NULL) abort();
    memcpy(text, data, size);
    sonde_buf_t page = SONDE_BUF_INIT;
    char why[256] = "";

    int rc = sonde_report_html_from_json(text, size, viewer_dir, &page, why, sizeof why);
    if (rc == 0) {
        fuzz_assert(page.data != NULL && page.len > 0, "an empty page");
        bool bom = size >= 3 && memcmp(data, "\xef\xbb\xbf", 3) == 0;
        check_data(&page, bom ? data + 3 : data, bom ? size - 3 : size);
    } else {
        fuzz_assert(rc == -EBADMSG || rc == -EPROTO || rc == -ENOMEM, "rc %d", rc);
        fuzz_assert(rc == -ENOMEM || why[0], "refused without a reason");
        fuzz_assert(page.len == 0, "a refused file left a page");
    }
    sonde_buf_free(&page);
    free(text);
    return 0;
}
