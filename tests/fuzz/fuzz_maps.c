/* fuzz_maps.c — libFuzzer target: the /proc text the attach reader parses
 * (another process writes it, and a path in /proc/PID/maps can hold any
 * byte but NUL and newline): the /proc/PID/maps parser
 * (src/pyread/maps.c: one line, the images of an interpreter, the minor
 * version in a file name) and the task-file parsers of src/prim
 * (stat, whose comm may hold anything; schedstat; syscall).
 *
 * Input: the executable's path (up to the first newline; an empty one
 * means unknown), then the text of a maps file. Checked: a parsed line has
 * start < end and a path inside the line; the images found are at most
 * the maximum, distinct, absolute, NUL-terminated paths from the text
 * (" (deleted)" cut), each from a line at file offset 0, the executable
 * first when it is mapped, every other one a libpython3.N; minor hints are
 * -1 or 0..99. Reads stay inside the input (a heap copy of its length).
 */
#include "prim/prim_internal.h"
#include "pyread/pyread_internal.h"

#include "fuzz.h"

#define FUZZ_MAX_IMAGES 8

static void check_lines(const char *text, size_t len)
{
    for (const char *line = text, *end = text + len; line < end;) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        size_t line_len = nl ? (size_t)(nl - line) : (size_t)(end - line);
        sonde_maps_line_t m;
        if (sonde_maps_parse_line(line, line_len, &m) == 0) {
            fuzz_assert(m.start < m.end, "a mapping that ends before it starts");
            fuzz_assert(m.path >= line && m.path + m.path_len == line + line_len,
                        "the path is not the rest of the line");
            int hint = sonde_maps_minor_hint(m.path, m.path_len);
            fuzz_assert(hint >= -1 && hint <= 99, "minor hint %d", hint);
        }
        line = nl ? nl + 1 : end;
    }
}

static void check_images(const char *text, size_t len, const char *exe)
{
    sonde_maps_image_t *images = calloc(FUZZ_MAX_IMAGES, sizeof *images);
    if (images == NULL) abort();
    int n = sonde_maps_find_images(text, len, exe, images, FUZZ_MAX_IMAGES);
    fuzz_assert(n >= 0 && n <= FUZZ_MAX_IMAGES, "%d images", n);
    for (int i = 0; i < n; i++) {
        const sonde_maps_image_t *img = &images[i];
        size_t plen = strnlen(img->path, sizeof img->path);
        fuzz_assert(plen > 0 && plen < sizeof img->path && img->path[0] == '/',
                    "image %d: not an absolute, terminated path", i);
        fuzz_assert(memmem(text, len, img->path, plen) != NULL, "image %d: a path not in the text",
                    i);
        fuzz_assert(img->minor_hint >= -1 && img->minor_hint <= 99, "minor hint %d",
                    img->minor_hint);
        if (img->is_libpython)
            fuzz_assert(strstr(img->path, "libpython3") && img->minor_hint >= 0,
                        "image %d: a libpython without its version", i);
        else
            fuzz_assert(i == 0, "image %d: an executable after the first", i);
        if (!img->is_libpython && exe) { /* readlink's " (deleted)" is cut, as in the text */
            size_t elen = strlen(exe), dlen = strlen(" (deleted)");
            if (elen > dlen && strcmp(exe + elen - dlen, " (deleted)") == 0) elen -= dlen;
            fuzz_assert(strlen(img->path) == elen && memcmp(img->path, exe, elen) == 0,
                        "not the exe");
        }
        for (int k = 0; k < i; k++)
            fuzz_assert(strcmp(images[k].path, img->path) != 0, "image %d twice", i);
    }
    free(images);
}

static void check_task_text(const char *text)
{
    sonde_ns_t cpu = 0, runq = 0;
    long nr = 0;
    if (sonde__prim_parse_schedstat(text, &cpu, &runq) != 0)
        fuzz_assert(cpu == 0 && runq == 0, "a failed parse wrote figures");
    char state = 0;
    pid_t ppid = -1;
    if (sonde__prim_parse_stat(text, &state, &ppid) == 0) {
        const char *paren = strrchr(text, ')');
        fuzz_assert(paren && state == paren[2] && state != 0, "state '%c' is not after the comm",
                    state);
        fuzz_assert(ppid >= 0 && ppid <= (1 << 22), "ppid %d", (int)ppid);
    }
    sonde_thread_wait_t wait = sonde_prim_parse_syscall(text, &nr);
    fuzz_assert(wait >= SONDE_WAIT_RUNNING && wait <= SONDE_WAIT_UNKNOWN, "wait %d", (int)wait);
    fuzz_assert(wait == SONDE_WAIT_THREAD || wait == SONDE_WAIT_SYSTEM || nr == -1,
                "a system call number without a blocked thread");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size);
    size_t exe_len = nl ? (size_t)(nl - data) : 0;
    size_t text_len = nl ? size - exe_len - 1 : size;
    char *exe = strndup((const char *)data, exe_len); /* stops at a NUL */
    char *text = malloc(text_len ? text_len : 1);     /* exactly its length */
    if (exe == NULL || text == NULL) abort();
    memcpy(text, nl ? (const char *)nl + 1 : (const char *)data, text_len);

    check_lines(text, text_len);
    check_images(text, text_len, exe[0] ? exe : NULL);
    char *terminated = strndup(text, text_len);
    if (terminated == NULL) abort();
    check_task_text(terminated);
    free(terminated);
    free(text);
    free(exe);
    return 0;
}
