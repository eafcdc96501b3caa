/* atomic.c — writing a report file all at once or not at all.
 *
 * Owns: sonde_write_file_atomic and sonde_check_writable (report.h). Called
 * by the CLI before a run (to fail early on a bad -o path) and by whoever
 * writes the report at exit. Ordinary code; never in a signal handler.
 *
 * A reader of the target path sees either the old file or the whole new
 * one: data goes to a temporary file beside the target (same directory, so
 * the same file system), is fsynced, given the mode a new file would get
 * (0666 & ~umask), and renamed over the target. Every error path removes
 * the temporary file.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mkostemp */
#endif
#include "report_internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ATOMIC_TEMP_SUFFIX ".XXXXXX"
#define ATOMIC_STATUS_PATH "/proc/self/status"

/* Splits path into an owned directory ("." when none) and a pointer to its
 * last component. Returns 0, -EINVAL (empty), -EISDIR (ends in '/') or
 * -ENOMEM. */
static int atomic_split(const char *path, char **dir_out, const char **base_out)
{
    *dir_out = NULL;
    if (!path || !path[0]) return -EINVAL;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (!base[0] || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) return -EISDIR;
    char *dir = NULL;
    if (!slash)
        dir = strdup(".");
    else if (slash == path)
        dir = strdup("/");
    else
        dir = strndup(path, (size_t)(slash - path));
    if (!dir) return -ENOMEM;
    *dir_out = dir;
    *base_out = base;
    return 0;
}

/* The existing target must be a regular file (or absent): renaming over a
 * directory fails anyway, and replacing a device or FIFO (/dev/stdout, a
 * pipe given as -o) with a regular file would be wrong. */
static int atomic_check_target(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) return errno == ENOENT ? 0 : -errno;
    if (S_ISDIR(st.st_mode)) return -EISDIR;
    if (!S_ISREG(st.st_mode)) return -EINVAL;
    return 0;
}

/* Creates "<dir>/.<base>.XXXXXX" (hidden, so a crash between create and
 * rename leaves nothing in an ls). Returns an fd and the owned name in
 * *temp_out, or -errno. */
static int atomic_create_temp(const char *dir, const char *base, char **temp_out)
{
    *temp_out = NULL;
    size_t len = strlen(dir) + strlen(base) + sizeof "/." ATOMIC_TEMP_SUFFIX;
    char *temp = malloc(len);
    if (!temp) return -ENOMEM;
    /* A long name is cut so that the temporary name stays under NAME_MAX. */
    snprintf(temp, len, "%s/.%.200s" ATOMIC_TEMP_SUFFIX, dir, base);
    int fd = mkostemp(temp, O_CLOEXEC);
    if (fd < 0) {
        int err = -errno;
        free(temp);
        return err;
    }
    *temp_out = temp;
    return fd;
}

/* The process's umask, read without changing it when the kernel tells it
 * (changing it, even briefly, races with other threads creating files). */
static mode_t atomic_umask(void)
{
    FILE *status = fopen(ATOMIC_STATUS_PATH, "re");
    if (status) {
        char line[128];
        unsigned mask = 0;
        bool found = false;
        while (!found && fgets(line, sizeof line, status))
            found = sscanf(line, "Umask: %o", &mask) == 1;
        fclose(status);
        if (found) return (mode_t)mask;
    }
    mode_t mask = umask(022);
    umask(mask);
    return mask;
}

/* Makes the directory entry of a rename durable; best effort. */
static void atomic_sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    (void)fsync(fd);
    close(fd);
}

int sonde_write_file_atomic(const char *path, const void *data, size_t len)
{
    char *dir = NULL, *temp = NULL;
    const char *base = NULL;
    int fd = -1;
    int rc = atomic_split(path, &dir, &base);
    if (rc) goto error;
    if ((rc = atomic_check_target(path))) goto error;
    if ((fd = atomic_create_temp(dir, base, &temp)) < 0) {
        rc = fd;
        goto error;
    }
    if ((rc = sonde_write_fd(fd, data, len))) goto error;
    if (fsync(fd) != 0 || fchmod(fd, 0666 & ~atomic_umask()) != 0) {
        rc = -errno;
        goto error;
    }
    rc = close(fd) == 0 ? 0 : -errno;
    fd = -1;
    if (rc) goto error;
    if (rename(temp, path) != 0) {
        rc = -errno;
        goto error;
    }
    atomic_sync_dir(dir);
    free(temp);
    free(dir);
    return 0;

error:
    if (fd >= 0) close(fd);
    if (temp) unlink(temp);
    free(temp);
    free(dir);
    return rc;
}

int sonde_check_writable(const char *path)
{
    char *dir = NULL, *temp = NULL;
    const char *base = NULL;
    int rc = atomic_split(path, &dir, &base);
    if (rc) goto done;
    if ((rc = atomic_check_target(path))) goto done;
    int fd = atomic_create_temp(dir, base, &temp);
    if (fd < 0) {
        rc = fd;
        goto done;
    }
    close(fd);
    if (unlink(temp) != 0) rc = -errno;

done:
    free(temp);
    free(dir);
    return rc;
}
