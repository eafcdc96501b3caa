/* proctree.c — this process's place among the system's processes.
 *
 * Owns: whether another process descends from this one (its parent chain
 * in /proc/PID/stat) and whether this process sees the system's own
 * process ids (the initial pid namespace). Used by device readers
 * (src/ext/), on their own thread, to pick this process tree's entries
 * out of the lists NVML keeps, which carry the kernel's global ids. No
 * signal handler or allocator hook calls these; they do not allocate.
 */
#include "prim.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROCTREE_MAX_DEPTH 64  /* parent links followed, at most */
#define PROCTREE_STAT_MAX 1024 /* bytes of /proc/PID/stat read */
/* The inode number of the initial pid namespace (the kernel's
 * PROC_PID_INIT_INO): fixed since Linux 3.8. */
#define PROCTREE_INIT_PID_NS_INO 0xEFFFFFFCu

/* The parent of pid from /proc/PID/stat. Returns 0 or -errno. */
static int proctree_parent(pid_t pid, pid_t *ppid)
{
    char path[64], text[PROCTREE_STAT_MAX];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = sonde_prim_fd_above_std(open(path, O_RDONLY | O_CLOEXEC));
    if (fd < 0) return fd == -ENOENT ? -ESRCH : fd;
    ssize_t n = read(fd, text, sizeof text - 1);
    int saved = errno;
    close(fd);
    if (n <= 0) return n < 0 ? -saved : -ESRCH;
    text[n] = 0;
    /* "pid (comm) state ppid ...": comm may hold anything, even ")". */
    char *close_paren = strrchr(text, ')');
    if (!close_paren || close_paren[1] != ' ' || !close_paren[2] || close_paren[3] != ' ')
        return -EINVAL;
    char *end = NULL;
    long parent = strtol(close_paren + 4, &end, 10);
    if (end == close_paren + 4 || parent < 0) return -EINVAL;
    *ppid = (pid_t)parent;
    return 0;
}

int sonde_prim_descends_from(pid_t pid, pid_t ancestor)
{
    if (pid <= 0 || ancestor <= 0) return 0;
    for (int depth = 0; depth < PROCTREE_MAX_DEPTH; depth++) {
        if (pid == ancestor) return 1;
        if (pid <= 1) return 0;
        pid_t parent = 0;
        int rc = proctree_parent(pid, &parent);
        if (rc < 0) return rc;
        if (parent == pid) return 0;
        pid = parent;
    }
    return 0;
}

int sonde_prim_in_initial_pid_ns(void)
{
    char link[64];
    ssize_t n = readlink("/proc/self/ns/pid", link, sizeof link - 1);
    if (n < 0) return -errno;
    link[n] = 0;
    unsigned long ino = 0;
    if (sscanf(link, "pid:[%lu]", &ino) != 1) return -EINVAL;
    return ino == PROCTREE_INIT_PID_NS_INO;
}
