/* hostile_stacks.h — a profile with call stacks whose names try to break
 * the stack writers (folded, flame graph SVG, speedscope), shared by their
 * unit tests (header only). Names hold markup ("</script><img onerror>"),
 * XML's CDATA end ("]]>"), the folded separators (';', newline), control
 * characters, bytes that are not UTF-8, a non-character (U+FFFE), non-ASCII
 * text and a 5000-character name. */
#ifndef SONDE_TEST_HOSTILE_STACKS_H
#define SONDE_TEST_HOSTILE_STACKS_H

#include "model/model.h"

#include <stdlib.h>
#include <string.h>

#define HOSTILE_MARKUP_FUNC "</script><img src=x onerror=alert(1)>"
#define HOSTILE_MARKUP_FILE "/app/<evil>&\"'.py"
#define HOSTILE_SEMI_FUNC "semi;colon\nnew\tline\x01"
#define HOSTILE_SEMI_FILE "/app/a;b.py"
#define HOSTILE_BAD_FUNC "bad\xff\xfeutf8"
#define HOSTILE_UNICODE_FILE "/app/caf\xc3\xa9 \xe2\x98\x95 \xe6\x97\xa5\xe6\x9c\xac.py"
#define HOSTILE_CDATA_FUNC "]]><script>alert(2)</script>"
#define HOSTILE_NONCHAR_FUNC "\xef\xbf\xbe nonchar"
#define HOSTILE_THREAD "evil </g><script>alert(3)</script>"
#define HOSTILE_LONG 5000
#define HOSTILE_TOTAL_SAMPLES 21

/* Fills prof (initialised) with five stacks under "<module>" (merged when
 * per_thread is false; else split between "MainThread" and a thread with
 * a hostile name). Samples: 10, 5, 3, 2, 1; ns: 1 ms per sample. */
static inline void hostile_profile(sonde_profile_t *prof, bool per_thread)
{
    static char long_name[HOSTILE_LONG + 1];
    memset(long_name, 'x', HOSTILE_LONG);
    long_name[HOSTILE_LONG] = 0;
    sonde_stack_frame_t root = {"<module>", "/app/main.py", 1};
    sonde_stack_frame_t markup = {HOSTILE_MARKUP_FUNC, HOSTILE_MARKUP_FILE, 12};
    sonde_stack_frame_t semi = {HOSTILE_SEMI_FUNC, HOSTILE_SEMI_FILE, 0};
    sonde_stack_frame_t bad = {HOSTILE_BAD_FUNC, HOSTILE_UNICODE_FILE, 7};
    sonde_stack_frame_t cdata = {HOSTILE_CDATA_FUNC, "/app/x.py", 3};
    sonde_stack_frame_t lng = {long_name, "/app/long.py", 9};
    sonde_stack_frame_t nonchar = {HOSTILE_NONCHAR_FUNC, "/app/y.py", 4};
    int main_thread = per_thread ? sonde_profile_thread(prof, "MainThread") : -1;
    int evil_thread = per_thread ? sonde_profile_thread(prof, HOSTILE_THREAD) : -1;
    sonde_stack_frame_t s1[] = {root, markup};
    sonde_stack_frame_t s2[] = {root, markup, semi};
    sonde_stack_frame_t s3[] = {root, bad};
    sonde_stack_frame_t s4[] = {root, cdata, lng};
    sonde_stack_frame_t s5[] = {root, nonchar};
    sonde_profile_add_stack(prof, s1, 2, main_thread, 10, 10000000);
    sonde_profile_add_stack(prof, s2, 3, main_thread, 5, 5000000);
    sonde_profile_add_stack(prof, s3, 2, evil_thread, 3, 3000000);
    sonde_profile_add_stack(prof, s4, 3, evil_thread, 2, 2000000);
    sonde_profile_add_stack(prof, s5, 2, main_thread, 1, 1000000);
    const char *argv[] = {"app.py", "--flag", "<b>&"};
    sonde_profile_set_run(prof, "app.py", 3, argv, "3.11.7");
    prof->interval_sec = 0.01;
    prof->elapsed_sec = 0.21;
    prof->samples = HOSTILE_TOTAL_SAMPLES;
}

/* Whether the len bytes at s are valid UTF-8. */
static inline bool hostile_valid_utf8(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        unsigned c = p[i];
        size_t n = c < 0x80             ? 1
                   : (c & 0xe0) == 0xc0 ? 2
                   : (c & 0xf0) == 0xe0 ? 3
                   : (c & 0xf8) == 0xf0 ? 4
                                        : 0;
        if (n == 0 || i + n > len) return false;
        for (size_t k = 1; k < n; k++)
            if ((p[i + k] & 0xc0) != 0x80) return false;
        i += n;
    }
    return true;
}

/* Runs `python3 script path` and returns its stdout (owned), or NULL when
 * it failed; writes data to path first. */
static inline char *hostile_run_python(const char *dir, const char *script_text, const char *data,
                                       size_t len)
{
    char *path = check_path(dir, "doc.out");
    char *script = check_path(dir, "check.py");
    char *result = check_path(dir, "result.txt");
    check_write_file(path, data, len);
    check_write_file(script, script_text, strlen(script_text));
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' > '%s'", check_python(), script, path, result);
    int status = system(cmd);
    char *text = status == 0 ? check_read_file(result, NULL) : NULL;
    unlink(path);
    unlink(script);
    unlink(result);
    free(path);
    free(script);
    free(result);
    return text;
}

#endif
