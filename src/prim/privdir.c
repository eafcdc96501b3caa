/* privdir.c — the private directory where profiled processes hand their
 * profiles over, and writes that a file size limit must not turn fatal.
 *
 * Owns: sonde_prim_private_dir (made in the first usual place where a
 * directory can be made and 64 KiB allocated: a full file system is found
 * when the directory is made, not when profiles are written, and nothing
 * there is ever mapped), its removal, the removal of those left by runs
 * whose root was killed by SIGKILL, and sonde_prim_xfsz_hold/release.
 * Used by the extension (src/ext/children.c, session.c) and the command's
 * collector (src/collect/collect.c). No signal handler.
 */
#include "prim.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PRIVDIR_PROBE_BYTES (64 * 1024) /* allocated once in a new directory */

/* Holds SIGXFSZ back on the calling thread while a file is written: a
 * write past RLIMIT_FSIZE then fails with EFBIG instead of killing a
 * process that plain python would not have killed. *had: it was pending
 * before (then it is left so). */
void sonde_prim_xfsz_hold(sigset_t *old, bool *had)
{
    sigset_t one, pending;
    sigemptyset(&one);
    sigaddset(&one, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &one, old);
    sigpending(&pending);
    *had = sigismember(&pending, SIGXFSZ) == 1;
}

/* Takes back a SIGXFSZ the write raised, then restores the mask. */
void sonde_prim_xfsz_release(const sigset_t *old, bool had)
{
    sigset_t one, pending;
    sigemptyset(&one);
    sigaddset(&one, SIGXFSZ);
    sigpending(&pending);
    if (!had && sigismember(&pending, SIGXFSZ) == 1) {
        struct timespec zero = {0, 0};
        (void)sigtimedwait(&one, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* Allocates PRIVDIR_PROBE_BYTES (or the file size limit, when lower) in
 * a file of dir and removes it: a full file system is found now, and
 * another place tried, rather than when the profiles are written. Returns
 * 0 or -errno. */
static int privdir_probe(const char *dir)
{
    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s/probe", dir) >= sizeof path) return -ENAMETOOLONG;
    off_t bytes = PRIVDIR_PROBE_BYTES;
    struct rlimit fsize;
    if (getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY &&
        fsize.rlim_cur < (rlim_t)bytes)
        bytes = (off_t)fsize.rlim_cur;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return -errno;
    int rc = bytes > 0 ? posix_fallocate(fd, 0, bytes) : 0;
    if (rc == EOPNOTSUPP || rc == EINVAL) rc = 0; /* no fallocate there: trust it */
    close(fd);
    unlink(path);
    return -rc;
}

/* Removes the directories of runs whose root died by SIGKILL (nothing of
 * theirs could remove them): "sonde-run-<pid>-*" in base, ours, with no
 * such process. A pid used again by another process keeps its directory
 * (harmless: it is only not removed). */
static void privdir_remove_stale(const char *base)
{
    DIR *d = opendir(base);
    if (!d) return;
    struct dirent *e;
    char path[PATH_MAX];
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "sonde-run-", 10) != 0) continue;
        char *end = NULL;
        long pid = strtol(e->d_name + 10, &end, 10);
        struct stat st;
        if (pid <= 0 || !end || *end != '-' || pid == (long)getpid() ||
            (kill((pid_t)pid, 0) == 0 || errno != ESRCH) ||
            (size_t)snprintf(path, sizeof path, "%s/%s", base, e->d_name) >= sizeof path ||
            lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
            continue;
        sonde_prim_private_dir_remove(path);
    }
    closedir(d);
}

/* Makes a private directory (mode 0700) in the first of the usual places
 * where one can be made and written. Returns 0 with *out (owned, absolute)
 * or the first failure's -errno. */
int sonde_prim_private_dir(char **out)
{
    const char *bases[] = {getenv("TMPDIR"), "/tmp", "/dev/shm", "/var/tmp",
                           getenv("XDG_RUNTIME_DIR")};
    int first = 0;
    sigset_t old;
    bool had;
    sonde_prim_xfsz_hold(&old, &had);
    for (size_t i = 0; i < SONDE_ARRAY_LEN(bases); i++) {
        const char *base = bases[i];
        if (!base || base[0] != '/') continue;
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = bases[j] && strcmp(bases[j], base) == 0;
        if (seen) continue;
        char path[PATH_MAX];
        if ((size_t)snprintf(path, sizeof path, "%s/sonde-run-%d-XXXXXX", base, (int)getpid()) >=
            sizeof path - 16)
            continue;
        privdir_remove_stale(base);
        int rc = mkdtemp(path) ? privdir_probe(path) : -errno;
        if (rc == 0) {
            *out = realpath(path, NULL);
            if (*out) break;
            rc = -errno;
        }
        rmdir(path);
        if (!first) first = rc;
    }
    sonde_prim_xfsz_release(&old, had);
    return *out ? 0 : (first ? first : -ENOENT);
}

/* Removes the directory and its files (nothing else is made there). */
void sonde_prim_private_dir_remove(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char path[PATH_MAX];
        while ((e = readdir(d)))
            if (e->d_name[0] != '.' &&
                (size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < sizeof path)
                unlink(path);
        closedir(d);
    }
    rmdir(dir);
}
