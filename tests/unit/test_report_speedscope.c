/* test_report_speedscope.c — unit tests of the speedscope writer
 * (src/report/speedscope.c). Python's json module reads each document back
 * strictly: the schema URL, shared frames with names, files and lines
 * unchanged (bytes that are not UTF-8 as U+FFFD), one sampled profile per
 * thread (one when stacks are merged), stacks root first with indices in
 * range, weights as long as the samples and adding up to endValue. */
#include "report/report.h"

#include "check.h"
#include "hostile_stacks.h"

#include <stdio.h>
#include <string.h>

static const char reader_py[] =
    "import json, sys\n"
    "def strict(pairs):\n"
    "    keys = [k for k, _ in pairs]\n"
    "    if len(keys) != len(set(keys)): sys.exit('duplicate key')\n"
    "    return dict(pairs)\n"
    "doc = json.load(open(sys.argv[1], encoding='utf-8'), object_pairs_hook=strict)\n"
    "if doc['$schema'] != 'https://www.speedscope.app/file-format-schema.json': "
    "sys.exit('schema')\n"
    "frames = doc['shared']['frames']\n"
    "out = []\n"
    "for p in doc['profiles']:\n"
    "    if p['type'] != 'sampled' or len(p['samples']) != len(p['weights']): sys.exit('shape')\n"
    "    if p['startValue'] != 0 or p['endValue'] != sum(p['weights']): sys.exit('values')\n"
    "    for s in p['samples']:\n"
    "        if not all(isinstance(i, int) and 0 <= i < len(frames) for i in s): "
    "sys.exit('index')\n"
    "    out.append('profile %s %s %d %d' % (p['name'].encode().hex(), p['unit'],\n"
    "               len(p['samples']), p['endValue']))\n"
    "    for s, w in zip(p['samples'], p['weights']):\n"
    "        out.append('stack %d %s' % (w, ' '.join(frames[i]['name'].encode().hex() for i in "
    "s)))\n"
    "for f in frames:\n"
    "    out.append('frame %s %s %s' % (f['name'].encode().hex(), f['file'].encode().hex(),\n"
    "               f.get('line', '-')))\n"
    "print('\\n'.join(out))\n";

static void hex(const char *s, char *buf, size_t len)
{
    size_t at = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && at + 3 < len; p++)
        at += (size_t)snprintf(buf + at, len - at, "%02x", *p);
    buf[at] = 0;
}

static char *read_back(const char *dir, const sonde_profile_t *prof)
{
    sonde_buf_t out = SONDE_BUF_INIT;
    if (sonde_report_speedscope(prof, &out) != 0 || !out.data) {
        sonde_buf_free(&out);
        return NULL;
    }
    char *result = hostile_run_python(dir, reader_py, out.data, out.len);
    sonde_buf_free(&out);
    return result;
}

/* Whether the reader printed "frame NAME FILE LINE" for these. */
static bool has_frame(const char *result, const char *name, const char *file, const char *line)
{
    static char want[40000];
    char name_hex[12000], file_hex[1000];
    hex(name, name_hex, sizeof name_hex);
    hex(file, file_hex, sizeof file_hex);
    snprintf(want, sizeof want, "frame %s %s %s\n", name_hex, file_hex, line);
    return strstr(result, want) != NULL;
}

int main(void)
{
    char *dir = check_tempdir();

    sonde_profile_t empty;
    sonde_profile_init(&empty);
    char *result = read_back(dir, &empty);
    check(result != NULL, "empty_profile_valid", "rejected");
    free(result);
    sonde_profile_free(&empty);

    sonde_profile_t prof;
    sonde_profile_init(&prof);
    hostile_profile(&prof, false);
    result = read_back(dir, &prof);
    check(result != NULL, "hostile_parses", "rejected");
    if (result) {
        char name_hex[64];
        hex("app.py", name_hex, sizeof name_hex);
        char want[256];
        snprintf(want, sizeof want, "profile %s nanoseconds 5 21000000\n", name_hex);
        check(strncmp(result, want, strlen(want)) == 0, "one_profile_when_merged", "%s", result);
        check(has_frame(result, HOSTILE_MARKUP_FUNC, HOSTILE_MARKUP_FILE, "12"),
              "markup_round_trips", "%s", result);
        check(has_frame(result, HOSTILE_SEMI_FUNC, HOSTILE_SEMI_FILE, "-"),
              "controls_escaped_no_line", "%s", result);
        check(has_frame(result, "bad\xef\xbf\xbd\xef\xbf\xbdutf8", HOSTILE_UNICODE_FILE, "7"),
              "invalid_utf8_replaced", "%s", result);
        check(has_frame(result, HOSTILE_CDATA_FUNC, "/app/x.py", "3"), "cdata_end", "%s", result);
        /* root first: every stack starts with <module> */
        char module_hex[32];
        hex("<module>", module_hex, sizeof module_hex);
        int stacks = 0, rooted = 0;
        for (const char *p = strstr(result, "\nstack "); p; p = strstr(p + 1, "\nstack ")) {
            const char *names = strchr(p + 7, ' ');
            stacks++;
            rooted += names && strncmp(names + 1, module_hex, strlen(module_hex)) == 0;
        }
        check(stacks == 5 && rooted == 5, "stacks_root_first", "%d of %d", rooted, stacks);
        free(result);
    }
    sonde_profile_free(&prof);

    sonde_profile_init(&prof);
    hostile_profile(&prof, true);
    result = read_back(dir, &prof);
    check(result != NULL, "threads_parse", "rejected");
    if (result) {
        char main_hex[64], evil_hex[256], want[512];
        hex("MainThread", main_hex, sizeof main_hex);
        hex(HOSTILE_THREAD, evil_hex, sizeof evil_hex);
        snprintf(want, sizeof want, "profile %s nanoseconds 3 16000000\n", main_hex);
        check(strstr(result, want) != NULL, "main_thread_profile", "%s", result);
        snprintf(want, sizeof want, "profile %s nanoseconds 2 5000000\n", evil_hex);
        check(strstr(result, want) != NULL, "hostile_thread_profile", "%s", result);
        free(result);
    }
    /* Without times, weights are sample counts. */
    for (size_t i = 0; i < prof.n_stacks; i++)
        prof.stacks[i].ns = 0;
    result = read_back(dir, &prof);
    check(result && strstr(result, " none 3 16\n") != NULL, "counts_without_times", "%s",
          result ? result : "");
    free(result);

    sonde_buf_t out = {NULL, 0, 0, -ENOMEM};
    check(sonde_report_speedscope(&prof, &out) == -ENOMEM, "sticky_buffer_error", "not reported");
    sonde_profile_free(&prof);
    check_rm_rf(dir);
    free(dir);
    return check_exit_code();
}
