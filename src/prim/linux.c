/* linux.c — Linux implementations of the primitives in prim.h.
 *
 * Owns: clocks (including per-thread CPU clocks built from a kernel thread
 * id), the /proc/self/task/TID/syscall reader that tells a thread blocked
 * on another thread from one blocked on I/O, the path of the executable,
 * the terminal width. Called by the sampler thread (src/ext/sampler.c) and
 * the CLI. The clock functions are async-signal-safe; the rest are not
 * used from signal handlers.
 */
#include "prim.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

sonde_ns_t sonde_prim_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (sonde_ns_t)ts.tv_sec * SONDE_NS_PER_SEC + (sonde_ns_t)ts.tv_nsec;
}

sonde_ns_t sonde_prim_process_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (sonde_ns_t)ts.tv_sec * SONDE_NS_PER_SEC + (sonde_ns_t)ts.tv_nsec;
}

/* The kernel's encoding of a per-thread CPU clock id (include/linux/
 * posix-timers.h): ~tid << 3, CPUCLOCK_PERTHREAD_MASK (4), CPUCLOCK_SCHED (2). */
static clockid_t linux_thread_clock(pid_t tid)
{
    return (clockid_t)((~(unsigned)tid) << 3) | 4 | 2;
}

int sonde_prim_thread_cpu_ns(pid_t tid, sonde_ns_t *ns)
{
    struct timespec ts;
    if (tid <= 0) return -EINVAL;
    if (clock_gettime(linux_thread_clock(tid), &ts) != 0) return -errno;
    *ns = (sonde_ns_t)ts.tv_sec * SONDE_NS_PER_SEC + (sonde_ns_t)ts.tv_nsec;
    return 0;
}

pid_t sonde_prim_gettid(void) { return (pid_t)syscall(SYS_gettid); }

sonde_thread_wait_t sonde_prim_thread_wait(sonde_prim_waitfd_t *w, pid_t tid)
{
    if (w->fd >= 0 && w->tid != tid) sonde_prim_waitfd_close(w);
    if (w->fd < 0) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
        w->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (w->fd < 0) return SONDE_WAIT_UNKNOWN;
        w->tid = tid;
    }
    char text[256];
    ssize_t n = pread(w->fd, text, sizeof text - 1, 0);
    if (n <= 0) {
        sonde_prim_waitfd_close(w);
        return SONDE_WAIT_UNKNOWN;
    }
    text[n] = 0;
    if (strncmp(text, "running", 7) == 0) return SONDE_WAIT_RUNNING;
    char *end = NULL;
    long nr = strtol(text, &end, 10);
    if (end == text) return SONDE_WAIT_UNKNOWN;
    if (nr < 0) return SONDE_WAIT_RUNNING; /* blocked outside a system call */
#ifdef SYS_futex
    if (nr == SYS_futex) return SONDE_WAIT_THREAD;
#endif
#ifdef SYS_futex_waitv
    if (nr == SYS_futex_waitv) return SONDE_WAIT_THREAD;
#endif
    return SONDE_WAIT_SYSTEM;
}

void sonde_prim_waitfd_close(sonde_prim_waitfd_t *w)
{
    if (w->fd >= 0) close(w->fd);
    w->fd = -1;
    w->tid = 0;
}

int sonde_prim_self_exe(char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);
    if (n < 0) return -errno;
    if ((size_t)n >= len - 1) return -ENAMETOOLONG;
    buf[n] = 0;
    return 0;
}

int sonde_prim_terminal_width(int fd)
{
    struct winsize ws;
    if (!isatty(fd)) return 0;
    if (ioctl(fd, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0) return 0;
    return ws.ws_col;
}
