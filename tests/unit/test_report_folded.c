/* test_report_folded.c — unit tests of the folded-stacks writer
 * (src/report/folded.c): the line format (frames root first, ';' between
 * them, one space and the count), sorting and merging, thread roots, and
 * names that try to break the format (';' and newlines inside names,
 * control characters, bytes that are not UTF-8). */
#include "report/report.h"

#include "check.h"
#include "hostile_stacks.h"

#include <stdio.h>
#include <string.h>

static char *render(const sonde_profile_t *prof)
{
    sonde_buf_t out = SONDE_BUF_INIT;
    int rc = sonde_report_folded(prof, &out);
    if (rc != 0) {
        sonde_buf_free(&out);
        return NULL;
    }
    return out.data ? out.data : strdup("");
}

/* Checks every line: "frames count", frames non-empty, no control bytes. */
static bool well_formed(const char *text, int *lines, unsigned long long *total, char *why,
                        size_t why_len)
{
    *lines = 0;
    *total = 0;
    for (const char *p = text; *p;) {
        const char *end = strchr(p, '\n');
        if (!end) {
            snprintf(why, why_len, "last line has no newline");
            return false;
        }
        const char *space = end;
        while (space > p && space[-1] != ' ')
            space--;
        if (space == p || space == end) {
            snprintf(why, why_len, "line %d has no count", *lines + 1);
            return false;
        }
        char *num_end = NULL;
        unsigned long long count = strtoull(space, &num_end, 10);
        if (num_end != end || count == 0) {
            snprintf(why, why_len, "line %d: bad count", *lines + 1);
            return false;
        }
        for (const char *c = p; c < space - 1; c++) {
            if ((unsigned char)*c < 0x20 || *c == 0x7f) {
                snprintf(why, why_len, "line %d: control byte 0x%02x", *lines + 1, *c);
                return false;
            }
            if (*c == ';' && (c == p || c[1] == ';' || c + 1 == space - 1)) {
                snprintf(why, why_len, "line %d: empty frame", *lines + 1);
                return false;
            }
        }
        *total += count;
        (*lines)++;
        p = end + 1;
    }
    return true;
}

static int count_char(const char *s, const char *end, char c)
{
    int n = 0;
    for (; s < end; s++)
        n += *s == c;
    return n;
}

int main(void)
{
    char why[256] = "";
    int lines = 0;
    unsigned long long total = 0;

    /* An empty profile gives an empty document. */
    sonde_profile_t empty;
    sonde_profile_init(&empty);
    char *text = render(&empty);
    check(text && text[0] == 0, "empty_profile_empty_output", "%s", text ? text : "(null)");
    free(text);
    sonde_profile_free(&empty);

    /* A plain profile: exact output. */
    sonde_profile_t plain;
    sonde_profile_init(&plain);
    sonde_stack_frame_t a[] = {{"main", "/app/x.py", 30}, {"work", "/app/x.py", 12}};
    sonde_stack_frame_t b[] = {{"main", "/app/x.py", 30}};
    sonde_profile_add_stack(&plain, a, 2, -1, 57, 1);
    sonde_profile_add_stack(&plain, b, 1, -1, 3, 1);
    text = render(&plain);
    check(text && strcmp(text, "main (/app/x.py:30) 3\n"
                               "main (/app/x.py:30);work (/app/x.py:12) 57\n") == 0,
          "plain_exact", "%s", text ? text : "(null)");
    free(text);
    sonde_profile_free(&plain);

    /* Hostile names, merged stacks. */
    sonde_profile_t prof;
    sonde_profile_init(&prof);
    hostile_profile(&prof, false);
    text = render(&prof);
    check(text != NULL, "hostile_renders", "failed");
    if (!text) return check_exit_code();
    check(well_formed(text, &lines, &total, why, sizeof why), "hostile_well_formed", "%s: %s", why,
          text);
    check(lines == 5 && total == HOSTILE_TOTAL_SAMPLES, "hostile_all_stacks", "%d lines, %llu",
          lines, total);
    check(hostile_valid_utf8(text, strlen(text)), "hostile_valid_utf8", "%s", text);
    check(strstr(text, ";semi,colon new line  (/app/a,b.py) 5\n") != NULL, "separators_replaced",
          "%s", text);
    check(strstr(text, "<module> (/app/main.py:1);" HOSTILE_MARKUP_FUNC " (" HOSTILE_MARKUP_FILE
                       ":12) 10\n") != NULL,
          "markup_kept_as_text", "%s", text);
    check(strstr(text, ";bad\xef\xbf\xbd\xef\xbf\xbdutf8 (" HOSTILE_UNICODE_FILE ":7) 3\n") != NULL,
          "invalid_utf8_replaced", "%s", text);
    /* each line has exactly depth-1 separators */
    bool depths_ok = true;
    for (const char *p = text; *p;) {
        const char *end = strchr(p, '\n');
        int seps = count_char(p, end, ';');
        if (seps < 1 || seps > 2) depths_ok = false;
        p = end + 1;
    }
    check(depths_ok, "one_separator_per_call", "%s", text);
    /* sorted */
    bool sorted = true;
    for (const char *p = text, *prev = NULL; *p;) {
        const char *end = strchr(p, '\n');
        if (prev && strncmp(prev, p, 40) > 0) sorted = false;
        prev = p;
        p = end + 1;
    }
    check(sorted, "lines_sorted", "%s", text);
    free(text);
    sonde_profile_free(&prof);

    /* Per thread: the thread's name is the root frame. */
    sonde_profile_init(&prof);
    hostile_profile(&prof, true);
    text = render(&prof);
    check(text && well_formed(text, &lines, &total, why, sizeof why) && lines == 5,
          "threads_well_formed", "%s", why);
    check(text && strstr(text, "MainThread;<module> (/app/main.py:1);") != NULL,
          "thread_root_first", "%s", text ? text : "");
    check(text && strstr(text, "\n" HOSTILE_THREAD ";<module>") != NULL, "hostile_thread_root",
          "%s", text ? text : "");
    free(text);

    /* Two stacks that differ only in a character made safe print once. */
    sonde_profile_t twins;
    sonde_profile_init(&twins);
    sonde_stack_frame_t t1[] = {{"f;g", "/a.py", 1}};
    sonde_stack_frame_t t2[] = {{"f,g", "/a.py", 1}};
    sonde_profile_add_stack(&twins, t1, 1, -1, 2, 1);
    sonde_profile_add_stack(&twins, t2, 1, -1, 3, 1);
    text = render(&twins);
    check(text && strcmp(text, "f,g (/a.py:1) 5\n") == 0, "twins_merged", "%s", text ? text : "");
    free(text);
    sonde_profile_free(&twins);

    /* Out of memory: an error, never a crash. */
    sonde_buf_t out = {NULL, 0, 0, -ENOMEM};
    check(sonde_report_folded(&prof, &out) == -ENOMEM, "sticky_buffer_error", "not reported");
    sonde_profile_free(&prof);
    return check_exit_code();
}
