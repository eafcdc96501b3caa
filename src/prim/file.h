/* file.h — writing a file all at once or not at all, writing to a stream
 * the user named, and reading a regular file whole within a bound.
 *
 * Owns: the one file service every part uses (reports of `sonde
 * run`/`attach`/`view`, pstats files of `sonde trace`, the launcher's early
 * check of -o; source text, the viewer and profiles read back). In
 * src/prim/ because it follows paths as the kernel does (descriptors named
 * through /proc, the umask). Plain C, no libpython, never in a signal
 * handler or an allocator hook. Every function returns 0 or -errno and
 * prints nothing.
 */
#ifndef SONDE_FILE_H
#define SONDE_FILE_H

#include "../core/buf.h"
#include "../core/common.h"

/* Writes data to the regular file path names (or a new one there)
 * atomically: a temporary file ".NAME.sonde-tmp.PID.XXXXXX" in the same
 * directory, fsync, rename. A symbolic link is followed: its target is
 * written (created if missing) and the link stays. The file keeps its
 * permission bits (and its owner, where allowed); a new one gets 0666 &
 * ~umask; one this process may not write is refused (-EACCES). Temporary files of this
 * destination that killed writers left are removed first. On error nothing
 * is left beside the file, which keeps its old contents. Returns 0 or
 * -errno: -EISDIR when path is a directory (or ends in '/'), -EINVAL when
 * it is not a regular file (a device such as /dev/stdout, a FIFO: see
 * sonde_write_output), -ELOOP. */
int sonde_write_file_atomic(const char *path, const void *data, size_t len);

/* Checks, before a run, that path can be written atomically later (the
 * directory of its file exists and accepts a new file: one is created and
 * removed). Returns 0 or -errno, with the same -EISDIR / -EINVAL cases as
 * sonde_write_file_atomic. */
int sonde_check_writable(const char *path);

/* Writes a report to path, never replacing anything but a regular file:
 * atomically for a regular or new file (through symbolic links, as
 * sonde_write_file_atomic); into the descriptor itself for one of this
 * process's descriptors named through /proc (/dev/stdout, /dev/fd/N,
 * /proc/self/fd/N: at its offset, after what was written there); directly
 * for a character device, FIFO (waiting for a reader) or socket. Returns 0
 * or -errno (-EBADF for a descriptor that is closed or read-only). */
int sonde_write_output(const char *path, const void *data, size_t len);

/* Checks, before a run, that sonde_write_output(path) can succeed.
 * Returns 0 or -errno. */
int sonde_check_output(const char *path);

/* Writes all of data to fd, retrying after EINTR and short writes, and
 * waiting while a non-blocking fd is full. Returns 0 or -errno (-EIO when
 * write makes no progress). */
int sonde_write_fd(int fd, const void *data, size_t len);

/* Appends the contents of the regular file at path to b, at most max bytes
 * of it. A file holding more sets *truncated (the first max bytes are kept)
 * or, with truncated NULL, fails with -EFBIG (at once, before reading,
 * when the file's size says so). Opened non-blocking and
 * without becoming a controlling terminal, so a FIFO or device named by
 * an untrusted path never blocks: it fails with -EINVAL (-EISDIR for a
 * directory). Returns 0 or -errno; on failure b may hold part of the
 * file. */
int sonde_buf_read_file(sonde_buf_t *b, const char *path, size_t max, bool *truncated);

#endif
