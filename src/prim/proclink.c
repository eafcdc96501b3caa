/* proclink.c — whether a path is one of /proc's descriptor links.
 *
 * Owns: sonde_prim_proc_link. The file service (file.c) asks it
 * before following a symbolic link it is about to write through: the links
 * of /proc/PID/fd (reached as /dev/stdout, /dev/fd/N, /proc/self/fd/N, ...)
 * are no ordinary links. Their text ("pipe:[1234]", "socket:[99]", a file
 * that was deleted) is no path to follow, and a descriptor of this process
 * is written into as that descriptor (at its offset, after what the
 * program wrote), never replaced. Ordinary code; never in a signal handler
 * or an allocator hook; allocates nothing.
 */
#include "prim.h"

#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

/* Parses a decimal number that makes up all of text[0..len). Returns it,
 * or -1 when text is not one (empty, other characters, over INT_MAX). */
static long proclink_number(const char *text, size_t len)
{
    long value = 0;
    if (len == 0 || len > 10) return -1;
    for (size_t i = 0; i < len; i++) {
        if (text[i] < '0' || text[i] > '9') return -1;
        value = value * 10 + (text[i] - '0');
    }
    return value <= INT_MAX ? value : -1;
}

/* The component of dir[0..len) before position len: sets *start to it and
 * returns its length (0 at the root). */
static size_t proclink_last(const char *dir, size_t len, const char **start)
{
    const char *p = dir + len;
    while (p > dir && p[-1] != '/')
        p--;
    *start = p;
    return (size_t)(dir + len - p);
}

/* Whether dir (resolved, absolute) ends in "/PID/fd" or "/PID/task/TID/fd"
 * with PID this process. */
static bool proclink_own_fd_dir(const char *dir)
{
    const char *part = NULL;
    size_t len = strlen(dir);
    size_t n = proclink_last(dir, len, &part);
    if (n != 2 || strncmp(part, "fd", 2) != 0 || part == dir) return false;
    len = (size_t)(part - dir) - 1; /* the process, or a thread of it */
    n = proclink_last(dir, len, &part);
    if (proclink_number(part, n) < 0 || part == dir) return false;
    const char *task = NULL;
    size_t task_len = proclink_last(dir, (size_t)(part - dir) - 1, &task);
    if (task_len == 4 && strncmp(task, "task", 4) == 0 && task != dir)
        n = proclink_last(dir, (size_t)(task - dir) - 1, &part);
    long pid = proclink_number(part, n);
    return pid >= 0 && (pid_t)pid == getpid();
}

int sonde_prim_proc_link(const char *path, int *fd)
{
    char dir[PATH_MAX], real[PATH_MAX];
    *fd = -1;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else if ((size_t)(slash - path) < sizeof dir)
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    else
        return -ENAMETOOLONG;
    struct statfs fs;
    if (statfs(dir, &fs) != 0) return errno == ENOENT ? SONDE_PRIM_LINK_PLAIN : -errno;
    if (fs.f_type != PROC_SUPER_MAGIC) return SONDE_PRIM_LINK_PLAIN;
    long number = proclink_number(base, strlen(base));
    if (number >= 0 && realpath(dir, real) && proclink_own_fd_dir(real)) {
        *fd = (int)number;
        return SONDE_PRIM_LINK_OWN_FD;
    }
    return SONDE_PRIM_LINK_PROC;
}
