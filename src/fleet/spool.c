/* spool.c — a directory of period files, oldest first.
 *
 * Owns: sonde_spool_t (fleet.h): the names "sonde-FROM_MS-UNTIL_MS.EXT",
 * atomic writes (sonde_write_file_atomic: a reader never sees half a
 * profile), the listing that finds the oldest file, and the trimming to a
 * count and a byte total. Only files with that name pattern and ending are
 * ever listed or deleted, so a directory the user shares with other files
 * keeps them. Used for --period-dir (the user's rotated history) and for
 * the upload backlog. Called by fleet.c on the sampling thread and the
 * upload thread (fleet.c serialises them); never in a signal handler.
 */
#include "fleet.h"

#include "../prim/file.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SPOOL_PREFIX "sonde-"
#define SPOOL_MS_DIGITS 13      /* unix milliseconds until the year 2286 */
#define SPOOL_MAX_LISTED 100000 /* files considered per listing */

/* ---- names ------------------------------------------------------------------------ */

/* Parses SPOOL_MS_DIGITS digits at s. Returns true and sets *value. */
static bool spool_digits(const char *s, uint64_t *value)
{
    uint64_t v = 0;
    for (int i = 0; i < SPOOL_MS_DIGITS; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *value = v;
    return true;
}

bool sonde_spool_parse_name(const char *name, const char *ext, uint64_t *from_ms,
                            uint64_t *until_ms)
{
    size_t prefix = strlen(SPOOL_PREFIX), ext_len = strlen(ext);
    size_t want = prefix + 2 * SPOOL_MS_DIGITS + 1 + ext_len;
    if (strlen(name) != want || strncmp(name, SPOOL_PREFIX, prefix) != 0) return false;
    const char *p = name + prefix;
    if (!spool_digits(p, from_ms) || p[SPOOL_MS_DIGITS] != '-' ||
        !spool_digits(p + SPOOL_MS_DIGITS + 1, until_ms))
        return false;
    return strcmp(p + 2 * SPOOL_MS_DIGITS + 1, ext) == 0;
}

static int spool_path(const sonde_spool_t *spool, const char *name, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s/%s", spool->dir, name);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* ---- the directory ------------------------------------------------------------------- */

/* mkdir -p dir. Returns 0 or -errno. */
static int spool_mkdirs(const char *dir, unsigned mode)
{
    char path[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof path) return n ? -ENAMETOOLONG : -EINVAL;
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != 0) continue;
        char saved = path[i];
        path[i] = 0;
        if (mkdir(path, (mode_t)mode) != 0 && errno != EEXIST) return -errno;
        path[i] = saved;
    }
    struct stat st;
    if (stat(dir, &st) != 0) return -errno;
    return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

int sonde_spool_init(sonde_spool_t *spool, const char *dir, const char *ext, unsigned max_files,
                     uint64_t max_bytes, unsigned mode)
{
    memset(spool, 0, sizeof *spool);
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--; /* "dir/" names the same directory */
    if (n >= sizeof spool->dir || strlen(ext) >= sizeof spool->ext) return -ENAMETOOLONG;
    memcpy(spool->dir, dir, n);
    spool->dir[n] = 0;
    strcpy(spool->ext, ext);
    spool->max_files = max_files;
    spool->max_bytes = max_bytes;
    return spool_mkdirs(spool->dir, mode);
}

int sonde_spool_write(const sonde_spool_t *spool, uint64_t from_ms, uint64_t until_ms,
                      const void *data, size_t len)
{
    char name[96], path[4096 + 96];
    snprintf(name, sizeof name, SPOOL_PREFIX "%0*llu-%0*llu%s", SPOOL_MS_DIGITS,
             (unsigned long long)from_ms, SPOOL_MS_DIGITS, (unsigned long long)until_ms,
             spool->ext);
    int rc = spool_path(spool, name, path, sizeof path);
    return rc ? rc : sonde_write_file_atomic(path, data, len);
}

/* Calls visit for every period file (in directory order). Returns 0 or
 * -errno. */
static int spool_each(const sonde_spool_t *spool,
                      void (*visit)(const sonde_spool_entry_t *entry, void *arg), void *arg)
{
    DIR *d = opendir(spool->dir);
    if (!d) return -errno;
    struct dirent *de;
    int listed = 0;
    while ((de = readdir(d)) && listed < SPOOL_MAX_LISTED) {
        sonde_spool_entry_t e;
        memset(&e, 0, sizeof e);
        if (strlen(de->d_name) >= sizeof e.name ||
            !sonde_spool_parse_name(de->d_name, spool->ext, &e.from_ms, &e.until_ms))
            continue;
        strcpy(e.name, de->d_name);
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        e.bytes = (uint64_t)st.st_size;
        listed++;
        visit(&e, arg);
    }
    closedir(d);
    return 0;
}

typedef struct spool_tally {
    unsigned files;
    uint64_t bytes;
    const char *skip; /* not considered as the oldest (NULL: none) */
    bool have_oldest;
    sonde_spool_entry_t oldest;
} spool_tally_t;

static void spool_tally_visit(const sonde_spool_entry_t *e, void *arg)
{
    spool_tally_t *t = arg;
    t->files++;
    t->bytes += e->bytes;
    if (t->skip && strcmp(e->name, t->skip) == 0) return;
    if (!t->have_oldest || strcmp(e->name, t->oldest.name) < 0) {
        t->oldest = *e;
        t->have_oldest = true;
    }
}

static int spool_tally(const sonde_spool_t *spool, const char *skip, spool_tally_t *t)
{
    memset(t, 0, sizeof *t);
    t->skip = skip;
    return spool_each(spool, spool_tally_visit, t);
}

int sonde_spool_oldest(const sonde_spool_t *spool, sonde_spool_entry_t *entry)
{
    spool_tally_t t;
    int rc = spool_tally(spool, NULL, &t);
    if (rc < 0) return rc;
    if (t.have_oldest) *entry = t.oldest;
    return t.have_oldest ? 1 : 0;
}

int sonde_spool_count(const sonde_spool_t *spool, unsigned *files, uint64_t *bytes)
{
    spool_tally_t t;
    int rc = spool_tally(spool, NULL, &t);
    *files = t.files;
    *bytes = t.bytes;
    return rc;
}

int sonde_spool_trim(const sonde_spool_t *spool, const char *keep)
{
    int deleted = 0;
    for (;;) {
        spool_tally_t t;
        int rc = spool_tally(spool, keep, &t);
        if (rc < 0) return rc;
        bool over = (spool->max_files && t.files > spool->max_files) ||
                    (spool->max_bytes && t.bytes > spool->max_bytes);
        if (!over || !t.have_oldest) return deleted;
        rc = sonde_spool_remove(spool, &t.oldest);
        if (rc < 0) return rc;
        deleted++;
    }
}

int sonde_spool_read(const sonde_spool_t *spool, const sonde_spool_entry_t *entry, sonde_buf_t *out)
{
    char path[4096 + 96];
    int rc = spool_path(spool, entry->name, path, sizeof path);
    if (rc) return rc;
    sonde_buf_reset(out);
    return sonde_buf_read_file(out, path, SONDE_FLEET_MAX_PROFILE, NULL);
}

int sonde_spool_remove(const sonde_spool_t *spool, const sonde_spool_entry_t *entry)
{
    char path[4096 + 96];
    int rc = spool_path(spool, entry->name, path, sizeof path);
    if (rc) return rc;
    return unlink(path) == 0 || errno == ENOENT ? 0 : -errno;
}
