/* file.c — writing a file all at once or not at all, or into a stream;
 * reading a regular file whole, within a bound.
 *
 * Owns: sonde_write_file_atomic, sonde_check_writable, sonde_write_output,
 * sonde_check_output, sonde_write_fd and sonde_buf_read_file (file.h).
 * Every file sonde writes goes through here: the reports of `sonde run`,
 * `sonde.start()` and `profile()` (src/ext/session.c), of `attach`/`record`
 * and `view` (src/cli/), the pstats files of `sonde trace` and
 * `Profile.dump_stats` (src/trace/profile.c), and the launcher's early
 * check of -o; and the files it reads back whole (source text, the viewer,
 * `sonde view`'s and `sonde merge`'s input, hand-overs). It lives in
 * src/prim/ because it is the kernel's view of paths (descriptors named
 * through /proc, the umask, sonde's own descriptors kept off 0-2). Ordinary
 * code; never in a signal handler or an allocator hook.
 *
 * Where the bytes go is decided the way the kernel opens the path, one
 * symbolic link at a time (lstat, readlink):
 *  - a regular file, or nothing yet: written atomically in the directory
 *    of the file itself, so a symbolic link stays a link and its target
 *    gets the new file. The data goes to a temporary file there (same file
 *    system), is fsynced, given the permission bits (and, where allowed,
 *    the owner) of the file it replaces (0666 & ~umask for a new one), and
 *    renamed over the file. A reader sees the old file or the whole new
 *    one. A file this process may not write is not replaced (-EACCES).
 *  - a descriptor of this process named through /proc (/dev/stdout,
 *    /dev/fd/N, /proc/self/fd/N; src/prim/proclink.c tells): written into
 *    that descriptor at its offset, as `>&N` would, after what the program
 *    wrote there.
 *  - a character device, FIFO or socket, or another link of /proc: opened
 *    and written directly (a FIFO waits for its reader, as the shell's `>`).
 *  - a directory: -EISDIR. Nothing that is not a regular file is replaced.
 *
 * Temporary files are named ".NAME.sonde-tmp.PID.XXXXXX" (NAME cut at 200
 * bytes) and locked (flock) by their writer until renamed; every error
 * path removes them. One left by a writer that was killed (its PID is gone
 * and nobody holds its lock) is removed the next time the same
 * destination is written.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mkostemp */
#endif
#include "file.h"

#include "prim.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_TEMP_TAG ".sonde-tmp."   /* marks a temporary file as sonde's */
#define FILE_TEMP_BASE_MAX 200        /* bytes of NAME kept (under NAME_MAX) */
#define FILE_TEMP_RANDOM "XXXXXX"     /* mkostemp's part, as long in the name */
#define FILE_MAX_LINKS 40             /* links followed before -ELOOP (the kernel's) */
#define FILE_LINK_TEXT_MAX (1u << 16) /* longest link text read */

/* ---- where the bytes go ------------------------------------------------------ */

typedef enum file_kind {
    FILE_KIND_REGULAR, /* a regular file or nothing yet: atomic write */
    FILE_KIND_STREAM,  /* opened and written directly */
    FILE_KIND_OWN_FD,  /* a descriptor of this process: written into */
} file_kind_t;

typedef struct file_dest {
    file_kind_t kind;
    char *path;  /* owned: the file itself, links followed (REGULAR, STREAM) */
    int fd;      /* OWN_FD: the descriptor; else -1 */
    bool exists; /* REGULAR: a file is there, with permission bits mode */
    mode_t mode; /* and owner uid:gid (kept when allowed) */
    uid_t uid;
    gid_t gid;
    bool append; /* STREAM: a regular file reached through /proc (append to it) */
    bool socket; /* STREAM: a socket's name (open fails with ENXIO) */
} file_dest_t;

/* Reads the text of the link at path into an owned string. Returns 0 or
 * -errno. */
static int file_readlink(const char *path, char **text_out)
{
    *text_out = NULL;
    for (size_t cap = 256; cap <= FILE_LINK_TEXT_MAX; cap *= 2) {
        char *text = malloc(cap);
        if (!text) return -ENOMEM;
        ssize_t n = readlink(path, text, cap);
        if (n < 0) {
            int err = -errno;
            free(text);
            return err;
        }
        if ((size_t)n < cap) {
            text[n] = 0;
            *text_out = text;
            return 0;
        }
        free(text);
    }
    return -ENAMETOOLONG;
}

/* The path a link's text names: the text itself when absolute, else the
 * text in the link's own directory. Returns an owned string or NULL. */
static char *file_link_target(const char *link, const char *text)
{
    const char *slash = strrchr(link, '/');
    if (text[0] == '/' || !slash) return strdup(text);
    size_t dir_len = (size_t)(slash - link) + 1;
    char *target = malloc(dir_len + strlen(text) + 1);
    if (!target) return NULL;
    memcpy(target, link, dir_len);
    strcpy(target + dir_len, text);
    return target;
}

/* Decides where data for path goes (see the banner). Returns 0 with *d
 * filled (free d->path), or -errno: -EINVAL for an empty path, -EISDIR for
 * a directory, -EBADF for a closed descriptor of this process, -ELOOP. */
static int file_resolve(const char *path, file_dest_t *d)
{
    memset(d, 0, sizeof *d);
    d->fd = -1;
    if (!path || !path[0]) return -EINVAL;
    char *cur = strdup(path);
    if (!cur) return -ENOMEM;
    int rc = 0;
    for (int links = 0;; links++) {
        struct stat st;
        int fd = -1;
        if (lstat(cur, &st) != 0) {
            if (errno != ENOENT) {
                rc = -errno;
                break;
            }
            /* Nothing there: a new file, unless it names a closed
             * descriptor of this process. */
            rc = sonde_prim_proc_link(cur, &fd) == SONDE_PRIM_LINK_OWN_FD ? -EBADF : 0;
            break;
        }
        if (S_ISLNK(st.st_mode)) {
            if ((rc = sonde_prim_proc_link(cur, &fd)) < 0) break;
            if (rc == SONDE_PRIM_LINK_OWN_FD) {
                d->kind = FILE_KIND_OWN_FD;
                d->fd = fd;
                rc = 0;
                break;
            }
            if (rc == SONDE_PRIM_LINK_PROC) {
                rc = stat(cur, &st) == 0 ? 0 : -errno;
                if (rc == 0 && S_ISDIR(st.st_mode)) rc = -EISDIR;
                d->kind = FILE_KIND_STREAM;
                d->append = S_ISREG(st.st_mode);
                break;
            }
            char *text = NULL, *next = NULL;
            if (links >= FILE_MAX_LINKS) {
                rc = -ELOOP;
                break;
            }
            if ((rc = file_readlink(cur, &text)) < 0) break;
            next = file_link_target(cur, text);
            free(text);
            if (!next) {
                rc = -ENOMEM;
                break;
            }
            free(cur);
            cur = next;
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            rc = -EISDIR;
        } else if (S_ISREG(st.st_mode)) {
            /* A file the user may not write is not replaced either (the
             * shell's '>' would fail): -EACCES. */
            rc = faccessat(AT_FDCWD, cur, W_OK, AT_EACCESS) == 0 ? 0 : -errno;
            d->exists = true;
            d->mode = st.st_mode & 0777;
            d->uid = st.st_uid;
            d->gid = st.st_gid;
        } else {
            d->kind = FILE_KIND_STREAM; /* device, FIFO, socket */
            d->socket = S_ISSOCK(st.st_mode);
        }
        break;
    }
    if (rc < 0) {
        free(cur);
        return rc;
    }
    d->path = cur;
    return 0;
}

/* ---- regular files: temporary file and rename ---------------------------------- */

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

/* Writes "." NAME ".sonde-tmp." (NAME: base cut at FILE_TEMP_BASE_MAX
 * bytes), the prefix of every temporary file for base, into buf. */
static void file_temp_prefix(char *buf, size_t len, const char *base)
{
    snprintf(buf, len, ".%.*s" FILE_TEMP_TAG, FILE_TEMP_BASE_MAX, base);
}

/* Creates "<dir>/.<base>.sonde-tmp.<pid>.XXXXXX" (hidden) and locks it
 * until it is closed. Returns an fd and the owned name in *temp_out, or
 * -errno. */
static int file_create_temp(const char *dir, const char *base, char **temp_out)
{
    char prefix[FILE_TEMP_BASE_MAX + sizeof "." FILE_TEMP_TAG];
    *temp_out = NULL;
    file_temp_prefix(prefix, sizeof prefix, base);
    size_t len = strlen(dir) + strlen(prefix) + 32 + sizeof FILE_TEMP_RANDOM;
    char *temp = malloc(len);
    if (!temp) return -ENOMEM;
    snprintf(temp, len, "%s/%s%ld." FILE_TEMP_RANDOM, dir, prefix, (long)getpid());
    /* Never on 0-2: a program thread still running may write to its
     * closed stderr, and must not write into the report. */
    int fd = sonde_prim_fd_above_std(mkostemp(temp, O_CLOEXEC));
    if (fd < 0) {
        unlink(temp); /* (created, if only the move failed) */
        free(temp);
        return fd;
    }
    /* Held until close: tells a live writer from a killed one's leftover
     * (file systems without flock go without; the PID still tells). */
    (void)flock(fd, LOCK_EX | LOCK_NB);
    *temp_out = temp;
    return fd;
}

/* Whether the process that named a temporary file may still be writing
 * it: it exists (kill reaches it, or would but for permission). This
 * process's own PID says nothing (a thread may write the same
 * destination); the lock decides then. */
static bool file_writer_alive(long pid)
{
    if (pid <= 0 || (pid_t)pid != pid) return false;
    if ((pid_t)pid == getpid()) return false;
    return kill((pid_t)pid, 0) == 0 || errno != ESRCH;
}

/* Removes the entry name of directory dirfd when it is a regular file of
 * this user that nobody holds locked. */
static void file_remove_if_abandoned(int dir_fd, const char *name)
{
    int fd = sonde_prim_fd_above_std(
        openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    if (fd < 0) return;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
        flock(fd, LOCK_EX | LOCK_NB) == 0)
        (void)unlinkat(dir_fd, name, 0);
    close(fd);
}

/* Removes the temporary files for base in dir that killed writers left:
 * ".<base>.sonde-tmp.<pid>.XXXXXX" whose PID is gone and whose lock is
 * free. Best effort: errors leave files in place. */
static void file_remove_stale(const char *dir, const char *base)
{
    char prefix[FILE_TEMP_BASE_MAX + sizeof "." FILE_TEMP_TAG];
    file_temp_prefix(prefix, sizeof prefix, base);
    size_t prefix_len = strlen(prefix);
    DIR *listing = opendir(dir);
    if (!listing) return;
    struct dirent *entry;
    while ((entry = readdir(listing)) != NULL) {
        const char *name = entry->d_name;
        if (strncmp(name, prefix, prefix_len) != 0) continue;
        const char *digits = name + prefix_len, *end = digits;
        while (*end >= '0' && *end <= '9')
            end++;
        if (end == digits || end - digits > 10 || *end != '.' ||
            strlen(end + 1) != sizeof FILE_TEMP_RANDOM - 1)
            continue;
        if (file_writer_alive(strtol(digits, NULL, 10))) continue;
        file_remove_if_abandoned(dirfd(listing), name);
    }
    closedir(listing);
}

/* Makes the directory entry of a rename durable; best effort. */
static void file_sync_dir(const char *dir)
{
    int fd = sonde_prim_fd_above_std(open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (fd < 0) return;
    (void)fsync(fd);
    close(fd);
}

/* Writes data to the regular file (or new file) d names, atomically.
 * Returns 0 or -errno; on error the temporary file is gone. */
static int file_write_regular(const file_dest_t *d, const void *data, size_t len)
{
    char *dir = NULL, *temp = NULL;
    const char *base = NULL;
    int fd = -1;
    int rc = file_split(d->path, &dir, &base);
    if (rc) goto done;
    file_remove_stale(dir, base);
    if ((fd = file_create_temp(dir, base, &temp)) < 0) {
        rc = fd;
        goto done;
    }
    mode_t mode = d->exists ? d->mode : (0666 & ~sonde_prim_umask());
    if ((rc = sonde_write_fd(fd, data, len))) goto done;
    /* The replaced file's owner, where this process may give it (root). */
    if (d->exists && (d->uid != geteuid() || d->gid != getegid())) (void)fchown(fd, d->uid, d->gid);
    if (fchmod(fd, mode) != 0 || fsync(fd) != 0) {
        rc = -errno;
        goto done;
    }
    /* Renamed while still open and locked: no cleaner takes it before. */
    if (rename(temp, d->path) != 0) {
        rc = -errno;
        goto done;
    }
    free(temp);
    temp = NULL; /* it is the destination now */
    close(fd);   /* (its data was fsynced: nothing left to report) */
    fd = -1;
    file_sync_dir(dir);

done:
    if (temp) unlink(temp);
    if (fd >= 0) close(fd);
    free(temp);
    free(dir);
    return rc;
}

/* Checks that the directory of the file d names accepts a new file (one is
 * created and removed). Returns 0 or -errno. */
static int file_check_regular(const file_dest_t *d)
{
    char *dir = NULL, *temp = NULL;
    const char *base = NULL;
    int rc = file_split(d->path, &dir, &base);
    if (rc == 0) {
        int fd = file_create_temp(dir, base, &temp);
        if (fd < 0) {
            rc = fd;
        } else {
            if (unlink(temp) != 0) rc = -errno;
            close(fd);
        }
    }
    free(temp);
    free(dir);
    return rc;
}

int sonde_write_file_atomic(const char *path, const void *data, size_t len)
{
    file_dest_t d;
    int rc = file_resolve(path, &d);
    if (rc == 0) rc = d.kind == FILE_KIND_REGULAR ? file_write_regular(&d, data, len) : -EINVAL;
    free(d.path);
    return rc;
}

int sonde_check_writable(const char *path)
{
    file_dest_t d;
    int rc = file_resolve(path, &d);
    if (rc == 0) rc = d.kind == FILE_KIND_REGULAR ? file_check_regular(&d) : -EINVAL;
    free(d.path);
    return rc;
}

/* ---- streams and descriptors the user named ------------------------------------ */

/* Whether this process's descriptor fd is open for writing. Returns 0,
 * -EBADF (closed, or open for reading only). */
static int file_fd_writable(int fd)
{
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0) return -errno;
    int mode = flags & O_ACCMODE;
    return mode == O_WRONLY || mode == O_RDWR ? 0 : -EBADF;
}

int sonde_write_fd(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                /* A non-blocking pipe or socket the user named: wait until
                 * it takes more (poll ends on a reader gone, too). */
                struct pollfd pfd = {fd, POLLOUT, 0};
                if (poll(&pfd, 1, -1) < 0 && errno != EINTR) return -errno;
                continue;
            }
            return -errno;
        }
        if (n == 0) return -EIO;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Opens the stream d names and writes data into it. Returns 0 or -errno. */
static int file_write_stream(const file_dest_t *d, const void *data, size_t len)
{
    int fd = sonde_prim_fd_above_std(
        open(d->path, O_WRONLY | O_CLOEXEC | O_NOCTTY | (d->append ? O_APPEND : 0)));
    if (fd < 0) return fd;
    int rc = sonde_write_fd(fd, data, len);
    if (close(fd) != 0 && rc == 0 && errno != EINTR) rc = -errno;
    return rc;
}

int sonde_write_output(const char *path, const void *data, size_t len)
{
    file_dest_t d;
    int rc = file_resolve(path, &d);
    if (rc == 0) {
        switch (d.kind) {
        case FILE_KIND_REGULAR:
            rc = file_write_regular(&d, data, len);
            break;
        case FILE_KIND_STREAM:
            rc = file_write_stream(&d, data, len);
            break;
        case FILE_KIND_OWN_FD:
            rc = file_fd_writable(d.fd);
            if (rc == 0) rc = sonde_write_fd(d.fd, data, len);
            break;
        }
    }
    free(d.path);
    return rc;
}

int sonde_check_output(const char *path)
{
    file_dest_t d;
    int rc = file_resolve(path, &d);
    if (rc == 0) {
        switch (d.kind) {
        case FILE_KIND_REGULAR:
            rc = file_check_regular(&d);
            break;
        case FILE_KIND_STREAM:
            /* A socket's name cannot be opened (the shell's '>' fails too). */
            rc = d.socket ? -ENXIO : access(d.path, W_OK) == 0 ? 0 : -errno;
            break;
        case FILE_KIND_OWN_FD:
            rc = file_fd_writable(d.fd);
            break;
        }
    }
    free(d.path);
    return rc;
}

/* ---- reading a regular file whole ---------------------------------------------- */

int sonde_buf_read_file(sonde_buf_t *b, const char *path, size_t max, bool *truncated)
{
    if (truncated) *truncated = false;
    int fd = sonde_prim_fd_above_std(open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
    if (fd < 0) return fd;
    int rc = 0;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        rc = -errno;
    } else if (!S_ISREG(st.st_mode)) {
        rc = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
    } else if (!truncated && (uint64_t)st.st_size > max) {
        rc = -EFBIG; /* refused before a byte is read */
    } else {
        /* Reads at most max + 1 bytes: one byte past max tells a file at
         * the cap from a longer one. The first read asks for the size fstat
         * gave and one byte more, so a file that has not changed takes one
         * read and a read of 0; one that grew since is read on in pages. */
        size_t start = b->len, limit = max + 1;
        size_t expected = (size_t)st.st_size < max ? (size_t)st.st_size : max;
        for (;;) {
            size_t have = b->len - start;
            if (have >= limit) break;
            size_t chunk = have < expected ? expected - have + 1 : 4096;
            if (chunk > limit - have) chunk = limit - have;
            if ((rc = sonde_buf_reserve(b, chunk)) < 0) break;
            ssize_t got = read(fd, b->data + b->len, chunk);
            if (got < 0) {
                if (errno == EINTR) continue;
                rc = -errno;
                break;
            }
            if (got == 0) break;
            b->len += (size_t)got;
            b->data[b->len] = 0;
        }
        if (rc == 0 && b->len - start > max) {
            if (!truncated) {
                rc = -EFBIG;
            } else {
                *truncated = true;
                b->len = start + max;
                b->data[b->len] = 0;
            }
        }
    }
    close(fd);
    return rc;
}
