/* remote.c — what /proc says about another process and its threads.
 *
 * Owns: the sonde_prim_task_* handles (a thread of another process: its
 * scheduler state, CPU and run-queue time, the system call it is blocked
 * in; their files kept open within a budget of descriptors) and the process-level look-ups of prim.h's "other processes" section
 * (state and parent, executable, working directory, command line, the
 * process list, kernel.yama.ptrace_scope), and the two ways into a
 * process's memory and files that src/pyread uses (process_vm_readv, and
 * /proc/PID/{mem,maps,root/...}), and the one write into another
 * process's memory (process_vm_writev, PEP 768's request). Called by the attach reader (src/attach/),
 * once per thread per sample for the task handles and on attach / child
 * discovery for the rest, and by src/pyread's reader (for this process too:
 * the sampler reads its own interpreter the same way). sonde_prim_proc_state
 * is the one reader of /proc/PID/stat (sonde__prim_parse_stat the one
 * parser): the process tree (proctree.c, on the GPU reader's thread) and the
 * collector (src/collect/, whether a process still runs) use it too.
 * Everything read here comes from another process and is parsed as hostile
 * text (a thread's comm may hold spaces and parentheses). Nothing here runs
 * in a signal handler.
 */
#include "prim_internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define REMOTE_STAT_MAX 1024 /* bytes of a stat file read: state and ppid are early */
#define REMOTE_PATH_MAX 4200 /* /proc/PID/root + a path of up to PATH_MAX */

/* Reads a whole small file into buf (NUL-terminated). Returns the length
 * or -errno (-ESRCH for a missing /proc entry). */
static ssize_t remote_read_file(const char *path, char *buf, size_t len)
{
    int fd = sonde_prim_fd_above_std(open(path, O_RDONLY | O_CLOEXEC));
    if (fd < 0) return fd == -ENOENT ? -ESRCH : fd;
    size_t used = 0;
    while (used + 1 < len) {
        ssize_t n = read(fd, buf + used, len - 1 - used);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            return e == ENOENT ? -ESRCH : -e;
        }
        if (n == 0) break;
        used += (size_t)n;
    }
    close(fd);
    buf[used] = 0;
    return (ssize_t)used;
}

/* Parses "pid (comm) S ppid ..." (prim_internal.h). */
int sonde__prim_parse_stat(const char *text, char *state, pid_t *ppid)
{
    const char *close_paren = strrchr(text, ')');
    if (!close_paren || close_paren[1] != ' ' || !close_paren[2]) return -EINVAL;
    const char *p = close_paren + 2;
    if (state) *state = *p;
    if (ppid) {
        char *end = NULL;
        long value = strtol(p + 1, &end, 10);
        if (end == p + 1 || value < 0 || value > (1L << 22)) return -EINVAL;
        *ppid = (pid_t)value;
    }
    return 0;
}

/* Files kept open by task handles, and how many may be: the descriptor
 * limit less REMOTE_FD_RESERVE for everything else (the output file,
 * /proc reads, the targets' memory files). Past it, a handle opens its
 * file for one read and closes it again, so that a target with more
 * threads than sonde has descriptors is still read whole. Task handles are
 * used by one thread (the attach reader's). */
#define REMOTE_FD_RESERVE 128
static long remote_kept_fds;
static long remote_fd_budget = -1; /* -1 until read */

static bool remote_may_keep_fd(void)
{
    if (remote_fd_budget < 0) {
        struct rlimit files;
        long limit = getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < (1ul << 30)
                         ? (long)files.rlim_cur
                         : 1L << 30;
        remote_fd_budget = limit > REMOTE_FD_RESERVE ? limit - REMOTE_FD_RESERVE : 0;
    }
    return remote_kept_fds < remote_fd_budget;
}

/* Reads a task file through a handle's kept descriptor *fd (opened when
 * the budget allows, else for this read only). As sonde__prim_task_read. */
static ssize_t remote_task_read(sonde_prim_task_t *t, const char *name, sonde_prim_kept_fd_t *kept,
                                char *buf, size_t len)
{
    if (kept->fd < 0 && !remote_may_keep_fd()) {
        sonde_prim_kept_fd_t once = SONDE_PRIM_KEPT_FD_NONE;
        ssize_t n = sonde__prim_task_read(t->pid, t->tid, name, &once, buf, len);
        sonde_prim_kept_close(&once);
        return n;
    }
    bool was_open = kept->fd >= 0;
    ssize_t n = sonde__prim_task_read(t->pid, t->tid, name, kept, buf, len);
    remote_kept_fds += (kept->fd >= 0) - was_open; /* opened, or closed after an error */
    return n;
}

void sonde_prim_task_init(sonde_prim_task_t *t, pid_t pid, pid_t tid)
{
    t->pid = pid;
    t->tid = tid;
    t->stat = t->sched = t->syscall = SONDE_PRIM_KEPT_FD_NONE;
    t->no_schedstat = false;
}

int sonde_prim_task_state(sonde_prim_task_t *t, char *state)
{
    char text[REMOTE_STAT_MAX];
    ssize_t n = remote_task_read(t, "stat", &t->stat, text, sizeof text);
    if (n < 0) return (int)n;
    return sonde__prim_parse_stat(text, state, NULL);
}

int sonde_prim_task_times(sonde_prim_task_t *t, sonde_ns_t *cpu_ns, sonde_ns_t *runq_ns)
{
    char text[128];
    if (t->no_schedstat) return -ENOTSUP;
    ssize_t n = remote_task_read(t, "schedstat", &t->sched, text, sizeof text);
    if (n == -ESRCH && access("/proc/self/schedstat", R_OK) != 0) {
        t->no_schedstat = true;
        return -ENOTSUP;
    }
    if (n < 0) return (int)n;
    return sonde__prim_parse_schedstat(text, cpu_ns, runq_ns);
}

sonde_thread_wait_t sonde_prim_task_wait(sonde_prim_task_t *t, long *syscall_nr)
{
    char text[256];
    if (syscall_nr) *syscall_nr = -1;
    if (remote_task_read(t, "syscall", &t->syscall, text, sizeof text) <= 0)
        return SONDE_WAIT_UNKNOWN;
    return sonde_prim_parse_syscall(text, syscall_nr);
}

void sonde_prim_task_close(sonde_prim_task_t *t)
{
    sonde_prim_kept_fd_t *kept[] = {&t->stat, &t->sched, &t->syscall};
    for (size_t i = 0; i < SONDE_ARRAY_LEN(kept); i++) {
        if (kept[i]->fd < 0) continue;
        sonde_prim_kept_close(kept[i]);
        remote_kept_fds--;
    }
}

/* The system calls a blocked Python thread is usually found in. */
static const struct remote_syscall {
    long nr;
    const char *name;
} remote_syscalls[] = {
#define REMOTE_SYSCALL(name) {SYS_##name, #name},
#ifdef SYS_read
    REMOTE_SYSCALL(read)
#endif
#ifdef SYS_write
        REMOTE_SYSCALL(write)
#endif
#ifdef SYS_readv
            REMOTE_SYSCALL(readv)
#endif
#ifdef SYS_pread64
                REMOTE_SYSCALL(pread64)
#endif
#ifdef SYS_poll
                    REMOTE_SYSCALL(poll)
#endif
#ifdef SYS_ppoll
                        REMOTE_SYSCALL(ppoll)
#endif
#ifdef SYS_select
                            REMOTE_SYSCALL(select)
#endif
#ifdef SYS_pselect6
                                REMOTE_SYSCALL(pselect6)
#endif
#ifdef SYS_epoll_wait
                                    REMOTE_SYSCALL(epoll_wait)
#endif
#ifdef SYS_epoll_pwait
                                        REMOTE_SYSCALL(epoll_pwait)
#endif
#ifdef SYS_epoll_pwait2
                                            REMOTE_SYSCALL(epoll_pwait2)
#endif
#ifdef SYS_nanosleep
                                                REMOTE_SYSCALL(nanosleep)
#endif
#ifdef SYS_clock_nanosleep
                                                    REMOTE_SYSCALL(clock_nanosleep)
#endif
#ifdef SYS_futex
                                                        REMOTE_SYSCALL(futex)
#endif
#ifdef SYS_futex_waitv
                                                            REMOTE_SYSCALL(futex_waitv)
#endif
#ifdef SYS_wait4
                                                                REMOTE_SYSCALL(wait4)
#endif
#ifdef SYS_waitid
                                                                    REMOTE_SYSCALL(waitid)
#endif
#ifdef SYS_accept
                                                                        REMOTE_SYSCALL(accept)
#endif
#ifdef SYS_accept4
                                                                            REMOTE_SYSCALL(accept4)
#endif
#ifdef SYS_connect
                                                                                REMOTE_SYSCALL(
                                                                                    connect)
#endif
#ifdef SYS_recvfrom
                                                                                    REMOTE_SYSCALL(
                                                                                        recvfrom)
#endif
#ifdef SYS_recvmsg
                                                                                        REMOTE_SYSCALL(
                                                                                            recvmsg)
#endif
#ifdef SYS_sendto
                                                                                            REMOTE_SYSCALL(
                                                                                                sendto)
#endif
#ifdef SYS_sendmsg
                                                                                                REMOTE_SYSCALL(
                                                                                                    sendmsg)
#endif
#ifdef SYS_pause
                                                                                                    REMOTE_SYSCALL(
                                                                                                        pause)
#endif
#ifdef SYS_rt_sigtimedwait
                                                                                                        REMOTE_SYSCALL(
                                                                                                            rt_sigtimedwait)
#endif
#ifdef SYS_rt_sigsuspend
                                                                                                            REMOTE_SYSCALL(
                                                                                                                rt_sigsuspend)
#endif
#ifdef SYS_flock
                                                                                                                REMOTE_SYSCALL(
                                                                                                                    flock)
#endif
#ifdef SYS_fsync
                                                                                                                    REMOTE_SYSCALL(
                                                                                                                        fsync)
#endif
#ifdef SYS_openat
                                                                                                                        REMOTE_SYSCALL(
                                                                                                                            openat)
#endif
#ifdef SYS_ioctl
                                                                                                                            REMOTE_SYSCALL(
                                                                                                                                ioctl)
#endif
#undef REMOTE_SYSCALL
};

const char *sonde_prim_syscall_name(long nr)
{
    for (size_t i = 0; i < SONDE_ARRAY_LEN(remote_syscalls); i++)
        if (remote_syscalls[i].nr == nr) return remote_syscalls[i].name;
    return NULL;
}

int sonde_prim_proc_state(pid_t pid, char *state, pid_t *ppid)
{
    char path[64], text[REMOTE_STAT_MAX];
    if (pid <= 0) return -ESRCH;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    ssize_t n = remote_read_file(path, text, sizeof text);
    if (n < 0) return (int)n;
    if (n == 0) return -ESRCH;
    return sonde__prim_parse_stat(text, state, ppid);
}

/* readlink of /proc/PID/<name> into buf. */
static int remote_proc_link(pid_t pid, const char *name, char *buf, size_t len)
{
    char path[64];
    if (len == 0) return -EINVAL;
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
    ssize_t n = readlink(path, buf, len - 1);
    if (n < 0) return errno == ENOENT ? -ESRCH : -errno;
    if ((size_t)n >= len - 1) return -ENAMETOOLONG;
    buf[n] = 0;
    return 0;
}

int sonde_prim_proc_owner(pid_t pid, uid_t *uid, gid_t *gid)
{
    char path[64];
    struct stat st;
    snprintf(path, sizeof path, "/proc/%d", (int)pid);
    if (stat(path, &st) != 0) return errno == ENOENT ? -ESRCH : -errno;
    *uid = st.st_uid;
    *gid = st.st_gid;
    return 0;
}

int sonde_prim_proc_same_root(pid_t pid)
{
    char path[64];
    struct stat theirs, ours;
    snprintf(path, sizeof path, "/proc/%d/root/", (int)pid);
    if (stat(path, &theirs) != 0) return errno == ENOENT ? -ESRCH : -errno;
    if (stat("/", &ours) != 0) return -errno;
    return theirs.st_dev == ours.st_dev && theirs.st_ino == ours.st_ino;
}

int sonde_prim_proc_exe(pid_t pid, char *buf, size_t len)
{
    return remote_proc_link(pid, "exe", buf, len);
}

int sonde_prim_proc_cwd(pid_t pid, char *buf, size_t len)
{
    return remote_proc_link(pid, "cwd", buf, len);
}

int sonde_prim_proc_open(pid_t pid, const char *name)
{
    char path[REMOTE_PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name) >= sizeof path)
        return -ENAMETOOLONG;
    return sonde_prim_fd_above_std(open(path, O_RDONLY | O_CLOEXEC));
}

ssize_t sonde_prim_mem_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
    struct iovec local = {buf, len};
    struct iovec remote = {(void *)(uintptr_t)addr, len};
    ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    return n < 0 ? -errno : n;
}

int sonde_prim_mem_write(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
    struct iovec local = {(void *)(uintptr_t)buf, len};
    struct iovec remote = {(void *)(uintptr_t)addr, len};
    ssize_t n = process_vm_writev(pid, &local, 1, &remote, 1, 0);
    if (n == (ssize_t)len) return 0;
    if (n >= 0) return -EIO;
    if (errno != ENOSYS && errno != EPERM) return -errno;
    /* a seccomp filter refuses process_vm_writev wholesale (EPERM), or the
     * kernel lacks it: /proc/PID/mem, which ptrace rules also guard */
    int first = -errno;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? -ESRCH : first;
    n = pwrite(fd, buf, len, (off_t)addr);
    int err = n < 0 ? -errno : n == (ssize_t)len ? 0 : -EIO;
    close(fd);
    return err;
}

ssize_t sonde_prim_proc_cmdline(pid_t pid, char *buf, size_t len)
{
    char path[64];
    if (len < 2) return -EINVAL;
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    ssize_t n = remote_read_file(path, buf, len);
    if (n < 0) return n;
    if (n > 0 && buf[n - 1] != 0) buf[n++] = 0; /* cut: terminate the last one */
    return n;
}

int sonde_prim_proc_list(pid_t *pids, pid_t *ppids, int max)
{
    DIR *dir = opendir("/proc");
    if (!dir) return -errno;
    int count = 0;
    struct dirent *entry;
    while (count < max && (entry = readdir(dir)) != NULL) {
        const char *name = entry->d_name;
        if (name[0] < '1' || name[0] > '9') continue;
        char *end = NULL;
        long pid = strtol(name, &end, 10);
        if (*end || pid <= 0 || pid > (1L << 22)) continue;
        pid_t ppid = 0;
        if (sonde_prim_proc_state((pid_t)pid, NULL, &ppid) != 0) continue; /* gone meanwhile */
        pids[count] = (pid_t)pid;
        ppids[count] = ppid;
        count++;
    }
    closedir(dir);
    return count;
}

int sonde_prim_ptrace_scope(void)
{
    char text[32];
    ssize_t n = remote_read_file("/proc/sys/kernel/yama/ptrace_scope", text, sizeof text);
    if (n <= 0) return -1;
    return atoi(text);
}
