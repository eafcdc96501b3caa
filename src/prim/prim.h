/* prim.h — the operating-system primitives sonde needs, in one place.
 *
 * Owns: the only code that knows it runs on Linux (/proc, clock ids, the
 * syscall a thread is blocked in). Everything else calls these. None of
 * them allocate; sonde_prim_thread_cpu_ns and sonde_prim_monotonic_ns are
 * async-signal-safe.
 */
#ifndef SONDE_PRIM_H
#define SONDE_PRIM_H

#include "../core/common.h"

#include <sys/types.h>

/* CLOCK_MONOTONIC in ns. */
sonde_ns_t sonde_prim_monotonic_ns(void);
/* CPU time of the whole process in ns. */
sonde_ns_t sonde_prim_process_cpu_ns(void);
/* CPU time (user + system) consumed by thread `tid` of this process.
 * Returns 0 and sets *ns, or -errno (-ESRCH/-EINVAL when the thread is
 * gone). */
int sonde_prim_thread_cpu_ns(pid_t tid, sonde_ns_t *ns);
/* Sleeps ns nanoseconds (EINTR ends it early). */
void sonde_prim_sleep_ns(sonde_ns_t ns);
/* Lets the calling thread's short sleeps end on time (timer slack, ns). */
void sonde_prim_set_timer_slack(sonde_ns_t ns);
/* Kernel id of the calling thread. */
pid_t sonde_prim_gettid(void);

/* What a thread that is off CPU is doing. */
typedef enum sonde_thread_wait {
    SONDE_WAIT_RUNNING = 0, /* on CPU or runnable */
    SONDE_WAIT_THREAD,      /* blocked waiting for another thread (futex:
                               lock, condition, join, the GIL) */
    SONDE_WAIT_SYSTEM,      /* blocked in any other system call (sleep, I/O,
                               select/poll, wait for a child) */
    SONDE_WAIT_UNKNOWN,
} sonde_thread_wait_t;

/* Per-thread handle for the two readings below; keeps files of
 * /proc/self/task/TID open between calls. */
typedef struct sonde_prim_thread {
    pid_t tid;
    int sched_fd;   /* schedstat, -1 = not open */
    int syscall_fd; /* syscall, -1 = not open */
    bool no_schedstat; /* the kernel has no schedstat: CPU clock only */
} sonde_prim_thread_t;

/* Prepares a handle for thread tid (opens nothing yet). */
void sonde_prim_thread_init(sonde_prim_thread_t *t, pid_t tid);
/* Time the thread has spent on CPU and waiting on a run queue (runnable
 * but preempted) since it started, in ns. *runq_ns is 0 when the kernel
 * does not keep the figure. Returns 0 or -errno (-ESRCH: thread gone). */
int sonde_prim_thread_times(sonde_prim_thread_t *t, sonde_ns_t *cpu_ns, sonde_ns_t *runq_ns);
/* Classifies what the thread is blocked in right now. */
sonde_thread_wait_t sonde_prim_thread_wait(sonde_prim_thread_t *t);
void sonde_prim_thread_close(sonde_prim_thread_t *t);

/* Absolute path of the running executable into buf. Returns 0 or -errno. */
int sonde_prim_self_exe(char *buf, size_t len);
/* Columns of the terminal on fd, or 0 if fd is not a terminal. */
int sonde_prim_terminal_width(int fd);

#endif
