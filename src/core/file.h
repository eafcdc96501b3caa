/* file.h — writing a file all at once or not at all, and writing to a
 * stream the user named.
 *
 * Owns: the one file-writing service every part uses (reports of `sonde
 * run`/`attach`/`view`, pstats files of `sonde trace`, the launcher's early
 * check of -o). The bounded reader of regular files is sonde_buf_read_file
 * (buf.h). Plain C, no libpython, never in a signal handler or an allocator
 * hook. Every function returns 0 or -errno and prints nothing.
 */
#ifndef SONDE_FILE_H
#define SONDE_FILE_H

#include "common.h"

/* Writes data to path atomically: a temporary file in the same directory,
 * fsync, rename. On error nothing is left at path or beside it.
 * Returns 0 or -errno. The new file gets mode 0666 & ~umask; -EISDIR when
 * path is a directory (or ends in '/'), -EINVAL when it exists and is not a
 * regular file (a device such as /dev/stdout, a FIFO: write those
 * directly). A symbolic link at path is replaced, not followed. */
int sonde_write_file_atomic(const char *path, const void *data, size_t len);

/* Checks, before a run, that path can be written atomically later (its
 * directory exists and accepts a new file: one is created and removed).
 * Returns 0 or -errno, with the same -EISDIR / -EINVAL cases as
 * sonde_write_file_atomic. */
int sonde_check_writable(const char *path);

/* Writes a report to path: atomically for a regular or new file, directly
 * for an existing character device, FIFO or socket (/dev/stdout, a pipe).
 * Returns 0 or -errno. */
int sonde_write_output(const char *path, const void *data, size_t len);

/* Checks, before a run, that sonde_write_output(path) can succeed.
 * Returns 0 or -errno. */
int sonde_check_output(const char *path);

/* Writes all of data to fd, retrying after EINTR and short writes.
 * Returns 0 or -errno (-EIO when write makes no progress). */
int sonde_write_fd(int fd, const void *data, size_t len);

#endif
