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
/* CPU time (user + system) consumed by thread `tid` of this process.
 * Returns 0 and sets *ns, or -errno (-ESRCH/-EINVAL when the thread is
 * gone). */
int sonde_prim_thread_cpu_ns(pid_t tid, sonde_ns_t *ns);
/* Sleeps ns nanoseconds (EINTR ends it early). */
void sonde_prim_sleep_ns(sonde_ns_t ns);
/* Lets the calling thread's short sleeps end on time (timer slack, ns). */
void sonde_prim_set_timer_slack(sonde_ns_t ns);
/* After joining one of sonde's worker threads before fork(): waits (up to
 * 50 ms) until thread tid of this process has left the kernel's thread
 * list (after pthread_join returns, an exited thread can still be counted
 * for a moment, and CPython 3.12+ counts threads for its fork warning),
 * then drains the thread's wake-up eventfd (wake_fd: non-blocking, or -1)
 * so that a restarted thread does not wake at once. tid <= 0: not known,
 * no wait. */
void sonde_prim_forget_joined_thread(pid_t tid, int wake_fd);
/* Restricts the calling thread to CPU `cpu` (tests only: the sampler's
 * SONDE_TEST_SAMPLER_CPU). Returns 0 or -errno. */
int sonde_prim_pin_self_to_cpu(int cpu);
/* Kernel id of the calling thread. */
pid_t sonde_prim_gettid(void);

/* A wake-up descriptor for one of sonde's worker threads (an eventfd:
 * non-blocking, close-on-exec): the worker sleeps in sonde_prim_wake_wait,
 * anyone may signal it. Returns the descriptor or -errno. */
int sonde_prim_wake_open(void);
/* Makes wake_fd signalled until it is drained (by
 * sonde_prim_forget_joined_thread). Async-signal-safe; keeps errno; wake_fd
 * < 0 is ignored. */
void sonde_prim_wake_signal(int wake_fd);
/* Sleeps until wake_fd is signalled or timeout_ns has passed (a signal may
 * end it early). Does not drain wake_fd. */
void sonde_prim_wake_wait(int wake_fd, sonde_ns_t timeout_ns);

/* The process's file-creation mask (umask), read without changing it where
 * the kernel reports it (changing it, even briefly, races with other
 * threads creating files). */
mode_t sonde_prim_umask(void);

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
    int sched_fd;      /* schedstat, -1 = not open */
    int syscall_fd;    /* syscall, -1 = not open */
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
/* Classifies the text of a /proc/.../task/TID/syscall file ("running",
 * or the number of the system call the thread is blocked in, which goes
 * to *syscall_nr, -1 when none; syscall_nr may be NULL). Pure. */
sonde_thread_wait_t sonde_prim_parse_syscall(const char *text, long *syscall_nr);

/* Absolute path of the running executable into buf. Returns 0 or -errno. */
int sonde_prim_self_exe(char *buf, size_t len);
/* Whether a report written to fd may use colour: fd is a terminal, NO_COLOR
 * is unset or empty, and TERM is not "dumb". */
bool sonde_prim_terminal_color(int fd);
/* Columns of the terminal on fd, or 0 if fd is not a terminal. */
int sonde_prim_terminal_width(int fd);

/* ---- other processes (remote.c) -------------------------------------------
 * What the attach reader needs to know about another process and its
 * threads, from /proc/PID/... Reading a thread's syscall file needs the same
 * ptrace access as reading the process's memory. */

/* Per-thread handle for a thread of another process; keeps its
 * /proc/PID/task/TID files open between calls. */
typedef struct sonde_prim_task {
    pid_t pid, tid;
    int stat_fd;       /* stat, -1 = not open */
    int sched_fd;      /* schedstat, -1 = not open */
    int syscall_fd;    /* syscall, -1 = not open */
    bool no_schedstat; /* the kernel keeps no schedstat */
} sonde_prim_task_t;

/* Prepares a handle for thread tid of process pid (opens nothing yet). */
void sonde_prim_task_init(sonde_prim_task_t *t, pid_t pid, pid_t tid);
/* The thread's scheduler state letter from its stat file: 'R' running or
 * runnable, 'S' sleeping, 'D' uninterruptible (disk), 'T'/'t' stopped,
 * 'Z'/'X' dead. Returns 0 or -errno (-ESRCH: the thread is gone). */
int sonde_prim_task_state(sonde_prim_task_t *t, char *state);
/* Time on CPU and waiting on a run queue since the thread started, in ns,
 * from its schedstat file (updated by the kernel at scheduler ticks and
 * switches, so a running thread's figure lags by up to one tick). Returns
 * 0, -ENOTSUP when the kernel keeps no schedstat, or -errno. */
int sonde_prim_task_times(sonde_prim_task_t *t, sonde_ns_t *cpu_ns, sonde_ns_t *runq_ns);
/* Classifies what a thread that is off CPU is blocked in, from its syscall
 * file; *syscall_nr (may be NULL) gets the system call number, or -1. */
sonde_thread_wait_t sonde_prim_task_wait(sonde_prim_task_t *t, long *syscall_nr);
void sonde_prim_task_close(sonde_prim_task_t *t);

/* Name of system call nr on this architecture ("clock_nanosleep"), or NULL
 * when it is not one the table knows. */
const char *sonde_prim_syscall_name(long nr);

/* State letter (as sonde_prim_task_state) and parent of process pid.
 * Returns 0 or -errno (-ESRCH: no such process). Either out may be NULL. */
int sonde_prim_proc_state(pid_t pid, char *state, pid_t *ppid);
/* The executable (/proc/PID/exe) or working directory (/proc/PID/cwd) of
 * process pid into buf. Returns 0 or -errno. */
int sonde_prim_proc_exe(pid_t pid, char *buf, size_t len);
int sonde_prim_proc_cwd(pid_t pid, char *buf, size_t len);
/* The command line of process pid: its arguments, each NUL-terminated,
 * into buf (cut at len, the last one terminated). Returns the number of
 * bytes used or -errno. */
ssize_t sonde_prim_proc_cmdline(pid_t pid, char *buf, size_t len);
/* Every process of the system with its parent, at most max. Returns the
 * count or -errno. */
int sonde_prim_proc_list(pid_t *pids, pid_t *ppids, int max);
/* The value of kernel.yama.ptrace_scope, or -1 when there is no Yama. */
int sonde_prim_ptrace_scope(void);

/* Copies len bytes at addr of process pid (this one included) into buf
 * with one system call (process_vm_readv), never touching addr itself.
 * Returns the number of bytes copied (fewer than len: the range runs into
 * unmapped memory) or -errno: -EFAULT (unmapped), -ESRCH (gone), -EPERM
 * (not permitted, or refused wholesale by a seccomp filter), -ENOSYS (no
 * such system call). Allocates nothing, takes no lock. */
ssize_t sonde_prim_mem_read(pid_t pid, uint64_t addr, void *buf, size_t len);
/* Opens /proc/PID/<name> read-only and close-on-exec: "mem" (whose offsets
 * are addresses, for pread), "maps", or "root/<absolute path>" (a file as
 * the process's mount namespace sees it). Returns the descriptor or -errno
 * (-ENOENT for a missing entry, also when the process is gone). */
int sonde_prim_proc_open(pid_t pid, const char *name);

/* ---- this process among the others (proctree.c) --------------------------- */

/* Whether process pid is ancestor itself or one of its descendants (its
 * parent chain, at most 64 links, reaches ancestor). Returns 1, 0, or
 * -errno when a process of the chain could not be read (-ESRCH: gone). */
int sonde_prim_descends_from(pid_t pid, pid_t ancestor);
/* Whether this process lives in the initial pid namespace, where its ids
 * are the kernel's global ones (not in a container with its own pid
 * namespace). Returns 1, 0 or -errno. */
int sonde_prim_in_initial_pid_ns(void);

/* ---- paths through /proc (proclink.c) -------------------------------------- */

/* What the file service should make of the symbolic link (or missing
 * entry) at path, before it follows it. */
typedef enum sonde_prim_link {
    SONDE_PRIM_LINK_PLAIN = 0, /* not in /proc: its text is a path to follow */
    SONDE_PRIM_LINK_OWN_FD,    /* a descriptor of this process, /proc/<this pid>/fd/N
                                  (also as /proc/self/fd/N, /dev/fd/N, /dev/stdout,
                                  a thread's task/TID/fd/N): *fd is N */
    SONDE_PRIM_LINK_PROC,      /* another link of /proc (another process's
                                  descriptor): opened as it is, never followed */
} sonde_prim_link_t;

/* Classifies path (its directory is looked at; the entry itself need not
 * exist: a closed descriptor of this process is still OWN_FD). Returns a
 * sonde_prim_link_t and sets *fd (-1 unless OWN_FD), or -errno. Allocates
 * nothing. */
int sonde_prim_proc_link(const char *path, int *fd);

#endif
