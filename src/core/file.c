/* file.c — writing a file all at once or not at all, or to a stream.
 *
 * Owns: sonde_write_file_atomic, sonde_check_writable, sonde_write_output,
 * sonde_check_output and sonde_write_fd (file.h). Called by the launcher
 * before a run (to fail early on a bad -o path), and by whoever writes a
 * report or a pstats file at exit (the session, the tracer, attach, view).
 * Ordinary code; never in a signal handler.
 *
 * A reader of the target path sees either the old file or the whole new
 * one: data goes to a temporary file beside the target (same directory, so
 * the same file system), is fsynced, given the mode a new file would get
 * (0666 & ~umask), and renamed over the target. Every error path removes
 * the temporary file. A character device, FIFO or socket the user named
 * (/dev/stdout, a pipe) cannot be replaced by rename; it is written
 * directly, as the user asked.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mkostemp */
#endif
#include "file.h"

#include "../prim/prim.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_TEMP_SUFFIX ".XXXXXX"

/* Splits path into an owned directory ("." when none) and a pointer to its
 * last component. Returns 0, -EINVAL (empty), -EISDIR (ends in '/') or
 * -ENOMEM. */
static int file_split(const char *path, char **dir_out, const char **base_out)
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
static int file_check_target(const char *path)
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
static int file_create_temp(const char *dir, const char *base, char **temp_out)
{
    *temp_out = NULL;
    size_t len = strlen(dir) + strlen(base) + sizeof "/." FILE_TEMP_SUFFIX;
    char *temp = malloc(len);
    if (!temp) return -ENOMEM;
    /* A long name is cut so that the temporary name stays under NAME_MAX. */
    snprintf(temp, len, "%s/.%.200s" FILE_TEMP_SUFFIX, dir, base);
    /* Never on 0-2: a program thread still running may write to its
     * closed stderr, and must not write into the report. */
    int fd = sonde_prim_fd_above_std(mkostemp(temp, O_CLOEXEC));
    if (fd < 0) {
        unlink(temp); /* (created, if only the move failed) */
        free(temp);
        return fd;
    }
    *temp_out = temp;
    return fd;
}

/* Makes the directory entry of a rename durable; best effort. */
static void file_sync_dir(const char *dir)
{
    int fd = sonde_prim_fd_above_std(open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (fd < 0) return;
    (void)fsync(fd);
    close(fd);
}

int sonde_write_file_atomic(const char *path, const void *data, size_t len)
{
    char *dir = NULL, *temp = NULL;
    const char *base = NULL;
    int fd = -1;
    int rc = file_split(path, &dir, &base);
    if (rc) goto error;
    if ((rc = file_check_target(path))) goto error;
    if ((fd = file_create_temp(dir, base, &temp)) < 0) {
        rc = fd;
        goto error;
    }
    if ((rc = sonde_write_fd(fd, data, len))) goto error;
    if (fsync(fd) != 0 || fchmod(fd, 0666 & ~sonde_prim_umask()) != 0) {
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
    file_sync_dir(dir);
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
    int rc = file_split(path, &dir, &base);
    if (rc) goto done;
    if ((rc = file_check_target(path))) goto done;
    int fd = file_create_temp(dir, base, &temp);
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

/* ---- streams the user named ----------------------------------------------- */

/* True when path names an existing stream-like file. */
static bool file_is_stream(const char *path)
{
    struct stat st;
    if (!path || stat(path, &st) != 0) return false;
    return S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
}

int sonde_check_output(const char *path)
{
    if (file_is_stream(path)) return access(path, W_OK) == 0 ? 0 : -errno;
    return sonde_check_writable(path);
}

int sonde_write_fd(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -errno;
        }
        if (n == 0) return -EIO;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int sonde_write_output(const char *path, const void *data, size_t len)
{
    if (!file_is_stream(path)) return sonde_write_file_atomic(path, data, len);
    int fd = sonde_prim_fd_above_std(open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY));
    if (fd < 0) return fd;
    int rc = sonde_write_fd(fd, data, len);
    if (close(fd) != 0 && rc == 0) rc = -errno;
    return rc;
}
