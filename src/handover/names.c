/* names.c — the private directory's vocabulary (handover.h).
 *
 * Owns: every name the hand-over uses in its directory: a process's stem
 * and the suffixes of its files (".live", ".svc", ".sonde", ".p<N>.sonde",
 * ".e<errno>"), the directory's own files ("period", "helper", "ending",
 * "drained"), making and parsing them, and the empty markers. Nothing else
 * in sonde spells one of them. Called by the profiled processes
 * (src/ext/session.c, children.c: at start, at exit, on the sampler
 * thread) and by the collectors (src/collect/). No stdio, no allocation,
 * no signal handler.
 */
#include "handover.h"

#include "../prim/file.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NAMES_LIVE ".live"
#define NAMES_SERVICE ".svc"
#define NAMES_PROFILE ".sonde"
#define NAMES_PERIOD ".p" /* ".p<N>" then NAMES_PROFILE */
#define NAMES_FAILED ".e" /* ".e<errno>" */
#define NAMES_TEMP ".tmp" /* after a whole name: being written */
#define NAMES_ERRNO_MAX 4095

static const char *const names_dirfiles[] = {
    [SONDE_HANDOVER_PERIOD_WORD] = "period",
    [SONDE_HANDOVER_HELPER] = "helper",
    [SONDE_HANDOVER_ENDING] = "ending",
    [SONDE_HANDOVER_DRAINED] = "drained",
};

/* snprintf's result as 0 or -ENAMETOOLONG. */
static int names_fit(int n, size_t len)
{
    return n >= 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

int sonde_handover_stem(char *stem, size_t len, int pid, uint64_t ns, int gen)
{
    return names_fit(snprintf(stem, len, "%d-%llu-g%d", pid, (unsigned long long)ns, gen), len);
}

int sonde_handover_root_stem(char *stem, size_t len, int pid)
{
    return names_fit(snprintf(stem, len, "%d-root", pid), len);
}

int sonde_handover_exec_stem(char *out, size_t len, const char *stem, unsigned piece)
{
    return names_fit(snprintf(out, len, "%s-x%u", stem, piece), len);
}

/* Whether stem can start a name: not empty, no '.' (the suffix's start)
 * nor '/', shorter than SONDE_HANDOVER_STEM_MAX. */
static bool names_stem_ok(const char *stem)
{
    size_t n = stem ? strlen(stem) : 0;
    return n > 0 && n < SONDE_HANDOVER_STEM_MAX && !strpbrk(stem, "./");
}

int sonde_handover_path(char *path, size_t len, const char *dir, const char *stem,
                        sonde_handover_kind_t kind, uint64_t number)
{
    if (!dir || !names_stem_ok(stem)) return -EINVAL;
    int n = -1;
    switch (kind) {
    case SONDE_HANDOVER_LIVE:
        n = snprintf(path, len, "%s/%s" NAMES_LIVE, dir, stem);
        break;
    case SONDE_HANDOVER_SERVICE:
        n = snprintf(path, len, "%s/%s" NAMES_SERVICE, dir, stem);
        break;
    case SONDE_HANDOVER_PROFILE:
        n = snprintf(path, len, "%s/%s" NAMES_PROFILE, dir, stem);
        break;
    case SONDE_HANDOVER_PERIOD:
        n = snprintf(path, len, "%s/%s" NAMES_PERIOD "%llu" NAMES_PROFILE, dir, stem,
                     (unsigned long long)number);
        break;
    case SONDE_HANDOVER_FAILED:
        if (number < 1 || number > NAMES_ERRNO_MAX) number = EIO;
        n = snprintf(path, len, "%s/%s" NAMES_FAILED "%llu", dir, stem, (unsigned long long)number);
        break;
    default:
        return -EINVAL;
    }
    return names_fit(n, len);
}

int sonde_handover_dir_path(char *path, size_t len, const char *dir, sonde_handover_dirfile_t which)
{
    if (!dir || (unsigned)which >= SONDE_ARRAY_LEN(names_dirfiles)) return -EINVAL;
    return names_fit(snprintf(path, len, "%s/%s", dir, names_dirfiles[which]), len);
}

/* A decimal number of at least one digit, exactly text[0..end) (no sign,
 * no leading '+' or space); *out. */
static bool names_number(const char *text, const char *end, uint64_t *out)
{
    uint64_t v = 0;
    if (text >= end) return false;
    for (const char *p = text; p < end; p++) {
        if (*p < '0' || *p > '9') return false;
        unsigned digit = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - digit) / 10) return false;
        v = v * 10 + digit;
    }
    *out = v;
    return true;
}

bool sonde_handover_parse(const char *name, sonde_handover_name_t *out)
{
    memset(out, 0, sizeof *out);
    const char *dot = name ? strchr(name, '.') : NULL;
    size_t stem_len = dot ? (size_t)(dot - name) : 0;
    if (!dot || stem_len == 0 || stem_len >= sizeof out->stem) return false;
    const char *end = dot + strlen(dot);
    uint64_t number = 0;
    if (strcmp(dot, NAMES_LIVE) == 0) {
        out->kind = SONDE_HANDOVER_LIVE;
    } else if (strcmp(dot, NAMES_SERVICE) == 0) {
        out->kind = SONDE_HANDOVER_SERVICE;
    } else if (strcmp(dot, NAMES_PROFILE) == 0) {
        out->kind = SONDE_HANDOVER_PROFILE;
    } else if (strncmp(dot, NAMES_FAILED, 2) == 0 && names_number(dot + 2, end, &number) &&
               number >= 1 && number <= NAMES_ERRNO_MAX) {
        out->kind = SONDE_HANDOVER_FAILED;
    } else if (strncmp(dot, NAMES_PERIOD, 2) == 0) {
        /* ".p<N>.sonde" */
        const char *suffix = strchr(dot + 2, '.');
        if (!suffix || strcmp(suffix, NAMES_PROFILE) != 0 ||
            !names_number(dot + 2, suffix, &number))
            return false;
        out->kind = SONDE_HANDOVER_PERIOD;
    } else {
        return false; /* ".sonde.tmp" and the like */
    }
    memcpy(out->stem, name, stem_len);
    out->stem[stem_len] = 0;
    out->number = number;
    out->pid = atoi(out->stem);
    return true;
}

/* ---- markers ------------------------------------------------------------------------ */

int sonde_handover_mark(const char *dir, const char *stem, sonde_handover_kind_t kind,
                        uint64_t number)
{
    char path[PATH_MAX];
    if (kind != SONDE_HANDOVER_LIVE && kind != SONDE_HANDOVER_SERVICE &&
        kind != SONDE_HANDOVER_FAILED)
        return -EINVAL;
    int rc = sonde_handover_path(path, sizeof path, dir, stem, kind, number);
    if (rc < 0) return rc;
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return -errno;
    close(fd);
    return 0;
}

void sonde_handover_unmark(const char *dir, const char *stem, sonde_handover_kind_t kind,
                           uint64_t number)
{
    char path[PATH_MAX];
    if (sonde_handover_path(path, sizeof path, dir, stem, kind, number) == 0) unlink(path);
}

bool sonde_handover_has(const char *dir, const char *stem, sonde_handover_kind_t kind,
                        uint64_t number)
{
    char path[PATH_MAX];
    return sonde_handover_path(path, sizeof path, dir, stem, kind, number) == 0 &&
           access(path, F_OK) == 0;
}

int sonde_handover_dir_mark(const char *dir, sonde_handover_dirfile_t which, const char *text)
{
    char path[PATH_MAX], tmp[PATH_MAX];
    int rc = sonde_handover_dir_path(path, sizeof path, dir, which);
    if (rc < 0) return rc;
    if ((rc = names_fit(snprintf(tmp, sizeof tmp, "%s" NAMES_TEMP, path), sizeof tmp)) < 0)
        return rc;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return -errno;
    if (text) rc = sonde_write_fd(fd, text, strlen(text));
    if (close(fd) != 0 && rc == 0) rc = -errno;
    if (rc == 0 && rename(tmp, path) != 0) rc = -errno;
    if (rc < 0) unlink(tmp);
    return rc;
}

bool sonde_handover_dir_has(const char *dir, sonde_handover_dirfile_t which)
{
    char path[PATH_MAX];
    return sonde_handover_dir_path(path, sizeof path, dir, which) == 0 && access(path, F_OK) == 0;
}

ssize_t sonde_handover_dir_read(const char *dir, sonde_handover_dirfile_t which, char *text,
                                size_t len)
{
    char path[PATH_MAX];
    if (!len) return -EINVAL;
    text[0] = 0;
    int rc = sonde_handover_dir_path(path, sizeof path, dir, which);
    if (rc < 0) return rc;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return -errno;
    ssize_t n = read(fd, text, len - 1);
    if (n < 0) n = -errno;
    close(fd);
    text[n > 0 ? n : 0] = 0;
    return n;
}
