/* output.c — where a finished report goes: a file, or a stream the user
 * named (/dev/stdout, /dev/stderr, a FIFO).
 *
 * Owns: sonde_check_output, sonde_write_output, sonde_write_fd. A regular (or not yet
 * existing) file is written atomically (atomic.c); a character device,
 * FIFO or socket cannot be replaced by rename, and writing it directly is
 * what the user asked for. Called by the session and the CLI; no signal
 * context.
 */
#include "report.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* True when path names an existing stream-like file. */
static bool output_is_stream(const char *path)
{
    struct stat st;
    if (!path || stat(path, &st) != 0) return false;
    return S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
}

int sonde_check_output(const char *path)
{
    if (output_is_stream(path)) return access(path, W_OK) == 0 ? 0 : -errno;
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
    if (!output_is_stream(path)) return sonde_write_file_atomic(path, data, len);
    int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return -errno;
    int rc = sonde_write_fd(fd, data, len);
    if (close(fd) != 0 && rc == 0) rc = -errno;
    return rc;
}
