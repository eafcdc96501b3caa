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

#include <stdio.h>
#include <unistd.h>

#define PROCTREE_MAX_DEPTH 64 /* parent links followed, at most */
/* The inode number of the initial pid namespace (the kernel's
 * PROC_PID_INIT_INO): fixed since Linux 3.8. */
#define PROCTREE_INIT_PID_NS_INO 0xEFFFFFFCu

int sonde_prim_descends_from(pid_t pid, pid_t ancestor)
{
    if (pid <= 0 || ancestor <= 0) return 0;
    for (int depth = 0; depth < PROCTREE_MAX_DEPTH; depth++) {
        if (pid == ancestor) return 1;
        if (pid <= 1) return 0;
        pid_t parent = 0;
        int rc = sonde_prim_proc_state(pid, NULL, &parent);
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
