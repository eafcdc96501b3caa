/* prim.h — the operating-system primitives sonde needs, in one place.
 *
 * Owns: the only code that knows it runs on Linux (/proc, clock ids, the
 * syscall a thread is blocked in). Everything else calls these. None of
 * them allocate; sonde_prim_thread_cpu_ns and sonde_prim_monotonic_ns are
 * async-signal-safe.
 */
#ifndef SONDE_PRIM_H
#define SONDE_PRIM_H

#include "../core/atomic.h"
#include "../core/common.h"

#include <signal.h>
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
/* Restricts the calling thread to CPU `cpu` (tests only: the sampler's
 * SONDE_TEST_SAMPLER_CPU). Returns 0 or -errno. */
int sonde_prim_pin_self_to_cpu(int cpu);
/* Kernel id of the calling thread. */
pid_t sonde_prim_gettid(void);
/* Returns once every CPU that runs a thread of this process has taken an
 * interrupt sent by this call: a CPU that a virtual machine's host had
 * stopped has run again by then (membarrier(2), PRIVATE_EXPEDITED; the
 * process is registered for it on first use). Costs each such CPU an
 * interrupt of a few microseconds, and nothing else. Returns 0, or -errno
 * (-ENOSYS, -EINVAL, -EPERM: not available here, as under a seccomp filter
 * that refuses the call). */
int sonde_prim_cpus_resume(void);

/* The wake-up of one of sonde's worker threads (sampler, device readers): the
 * worker sleeps in sonde_prim_wake_wait, anyone may signal it. A futex
 * word, not a descriptor: the program may close any descriptor number
 * (os.closerange) and an eventfd cannot be told from the program's own
 * (they share one inode), while a word in sonde's memory cannot be taken
 * over. Zero-initialised it is ready (not signalled). */
typedef struct sonde_prim_wake {
    _Atomic uint32_t pending; /* 1 once signalled, until a wait returns */
} sonde_prim_wake_t;

/* Makes the wake-up signalled until the next wait returns.
 * Async-signal-safe (an atomic store and one system call); keeps errno. */
void sonde_prim_wake_signal(sonde_prim_wake_t *wake);
/* Sleeps until the wake-up is signalled (at once if it already is) or
 * timeout_ns has passed, and consumes the signal, so that a waiter that
 * goes on looping never spins. May return early on a signal (the workers
 * block all signals). */
void sonde_prim_wake_wait(sonde_prim_wake_t *wake, sonde_ns_t timeout_ns);

/* After joining one of sonde's worker threads before fork(): waits (up to
 * 50 ms) until thread tid of this process has left the kernel's thread
 * list (after pthread_join returns, an exited thread can still be counted
 * for a moment, and CPython 3.12+ counts threads for its fork warning),
 * then clears the thread's wake-up (wake may be NULL) so that a restarted
 * thread does not wake at once. tid <= 0: not known, no wait. */
void sonde_prim_forget_joined_thread(pid_t tid, sonde_prim_wake_t *wake);

/* ---- descriptors sonde keeps inside the profiled process ------------------
 * The program may close any descriptor and reuse its number
 * (os.closerange(3, 1024) before opening log files, daemon code), and may
 * start with 0, 1 or 2 closed. So sonde never takes numbers 0-2 (a file
 * opened there moves up, close-on-exec), and a descriptor kept between uses
 * remembers the file it was opened on (device and inode) and is checked
 * before every use: a number the program took over is forgotten for good,
 * never read, written or closed, and the file is opened again when next
 * needed. */

/* Moves a descriptor sonde has just opened off the standard numbers: returns
 * fd itself when it is above 2, else a close-on-exec duplicate above 2
 * (and closes fd), or -errno (fd closed). fd < 0 (the open that gave it
 * failed): -errno, from errno as that open left it. */
int sonde_prim_fd_above_std(int fd);

/* Whether descriptor fd is open in this process (a standard stream the
 * process was started without is not: `2>&-`). */
bool sonde_prim_fd_is_open(int fd);

typedef struct sonde_prim_kept_fd {
    int fd;     /* -1 = not open */
    bool check; /* checked before each use (inside a program: see above) */
    dev_t dev;  /* the file it was opened on */
    ino_t ino;
} sonde_prim_kept_fd_t;

#define SONDE_PRIM_KEPT_FD_NONE ((sonde_prim_kept_fd_t){.fd = -1})

/* Keeps fd, a descriptor the caller has just opened (any number; it is
 * moved above 2). check: the process runs a program that may close it (the
 * profiled process; the sonde command's own descriptors need no check);
 * such a descriptor is also moved near the top of the descriptor limit
 * (at most 1024), out of the numbers the program's own files get.
 * Returns 0, or -errno with fd closed and kept->fd -1. */
int sonde_prim_kept_adopt(sonde_prim_kept_fd_t *kept, int fd, bool check);
/* Whether another checked descriptor may be kept (at most 256 at once, so
 * that a program with many threads keeps its descriptors); a caller without
 * room opens, uses and closes. */
bool sonde_prim_kept_room(void);
/* True for a while after the program closed or reused one of sonde's
 * checked descriptors (2 s, doubling at each new loss up to 64 s): sonde
 * opens no file in the process meanwhile, since an open races with a
 * program that chooses its own numbers (its dup2 would fail with EBUSY). */
bool sonde_prim_kept_quiet(void);
/* Ends the quiet spell now (the unit tests, which then check the reopening). */
void sonde__prim_kept_quiet_end(void);
/* The descriptor, when it is open and still the file it was opened on;
 * otherwise it is forgotten (not closed: the number is the program's now)
 * and -EBADF is returned. */
int sonde_prim_kept_get(sonde_prim_kept_fd_t *kept);
/* Closes the descriptor if it is still sonde's, and forgets it either way.
 * Safe on one not open. */
void sonde_prim_kept_close(sonde_prim_kept_fd_t *kept);
/* Grows the descriptor table once to hold every kept descriptor (a
 * duplicate at the highest number one may take, closed at once). Call it
 * before the process's first thread of sonde's starts: the kernel grows a
 * table shared by several threads only after an RCU grace period
 * (milliseconds), one it alone uses at once. Nothing to report: a table
 * that could not grow grows later, when a descriptor is kept. */
void sonde_prim_kept_reserve(void);

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
 * /proc/self/task/TID open between calls (checked before each use). */
typedef struct sonde_prim_thread {
    pid_t tid;
    sonde_prim_kept_fd_t sched;   /* schedstat */
    sonde_prim_kept_fd_t syscall; /* syscall */
    bool no_schedstat;            /* the kernel has no schedstat: CPU clock only */
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

/* Ends this process by signal sig with the signal's default action, as a
 * command that died by sig would end (`sonde record` ending like its
 * command): output flushed, sig's disposition set to the default and
 * unblocked, no core dump of this process (RLIMIT_CORE 0, not dumpable),
 * then the signal raised. Returns only when sig's default action does not
 * end a process (the caller then exits with 128 + sig). */
void sonde_prim_die_by_signal(int sig);
/* Raises this process's soft limit of open descriptors to its hard limit
 * (the attach reader keeps a few files open per thread of its targets).
 * Children inherit it: start a command that should run with the limit
 * sonde was given before. */
void sonde_prim_raise_fd_limit(void);

/* ---- other processes (remote.c) -------------------------------------------
 * What the attach reader needs to know about another process and its
 * threads, from /proc/PID/... Reading a thread's syscall file needs the same
 * ptrace access as reading the process's memory. */

/* Per-thread handle for a thread of another process; keeps its
 * /proc/PID/task/TID files open between calls. */
typedef struct sonde_prim_task {
    pid_t pid, tid;
    sonde_prim_kept_fd_t stat;    /* stat */
    sonde_prim_kept_fd_t sched;   /* schedstat */
    sonde_prim_kept_fd_t syscall; /* syscall */
    bool no_schedstat;            /* the kernel keeps no schedstat */
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
/* The real user and group that own process pid (those of /proc/PID).
 * Returns 0 or -errno (-ESRCH: no such process). */
int sonde_prim_proc_owner(pid_t pid, uid_t *uid, gid_t *gid);
/* Whether process pid sees the file system as this one does: its root
 * directory (/proc/PID/root) is this process's root. Returns 1, 0 (another
 * mount namespace or a chroot), or -errno (-EACCES/-EPERM: not permitted). */
int sonde_prim_proc_same_root(pid_t pid);
/* The executable (/proc/PID/exe) or working directory (/proc/PID/cwd) of
 * process pid into buf. Returns 0 or -errno. */
int sonde_prim_proc_exe(pid_t pid, char *buf, size_t len);
int sonde_prim_proc_cwd(pid_t pid, char *buf, size_t len);
/* The command line of process pid: its arguments, each NUL-terminated,
 * into buf (cut at len, the last one terminated). Returns the number of
 * bytes used or -errno. */
ssize_t sonde_prim_proc_cmdline(pid_t pid, char *buf, size_t len);
/* This process's CPU time (user + system, all threads, seconds) and peak
 * resident set (ru_maxrss, the kernel's VmHWM, in MB). Returns 0 or -errno. */
int sonde_prim_self_usage(double *cpu_sec, double *peak_mb);
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
/* Writes len bytes of buf at addr of process pid, whole or not at all as
 * far as the kernel allows: process_vm_writev, else (a kernel or seccomp
 * filter without it) pwrite on /proc/PID/mem. For PEP 768's request into a
 * live interpreter (src/pyread/remote_exec.c), the one write into another
 * process's memory. Returns 0, or -errno: -EFAULT (unmapped or read-only),
 * -ESRCH (gone), -EPERM/-EACCES (not permitted), -EIO (a short write). */
int sonde_prim_mem_write(pid_t pid, uint64_t addr, const void *buf, size_t len);
/* Opens /proc/PID/<name> read-only and close-on-exec: "mem" (whose offsets
 * are addresses, for pread), "maps", or "root/<absolute path>" (a file as
 * the process's mount namespace sees it). Returns the descriptor (never
 * 0-2) or -errno (-ENOENT for a missing entry, also when the process is
 * gone). */
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

/* ---- the private directory of hand-overs (privdir.c) ------------------------- */

/* Makes "sonde-run-<pid>-XXXXXX" (mode 0700) in $TMPDIR, else /tmp,
 * /dev/shm, /var/tmp, $XDG_RUNTIME_DIR: the first where it can be made
 * and 64 KiB allocated in it; removes there the directories of runs whose
 * root no longer exists. Returns 0 with *out (malloc'd, absolute) or the
 * first failure's -errno. */
int sonde_prim_private_dir(char **out);
/* Removes such a directory and its files (nothing else is made there). */
void sonde_prim_private_dir_remove(const char *dir);
/* Holds SIGXFSZ back on the calling thread around a write, so that a write
 * past RLIMIT_FSIZE fails with EFBIG instead of killing a process plain
 * python would not have killed; release takes back a SIGXFSZ the write
 * raised (not one pending before: *had) and restores the mask. */
void sonde_prim_xfsz_hold(sigset_t *old, bool *had);
void sonde_prim_xfsz_release(const sigset_t *old, bool had);

/* ---- a helper process the program cannot see (spawn.c) ---------------------- */

/* Starts path (argv, envp: prepared by the caller, nothing is allocated in
 * the children) as a process that is nobody's child the program can see:
 * the program's SIGCHLD handlers, wait() and waitpid(-1) never see it. It
 * has descriptors 0-2 and 3, the write end of a pipe whose read end is
 * *fd (close-on-exec), and no signal blocked. No fork handler runs.
 * Returns 0 with *fd and its pid in *pid, or -errno. */
int sonde_prim_spawn_quiet(const char *path, char *const argv[], char *const envp[], int *fd,
                           pid_t *pid);
/* Waits until the helper closes its descriptor 3 (it ended), and sets
 * *result to the last byte it wrote there (-1: none). Closes fd. Returns 0,
 * -ECHILD when it wrote nothing (it died first), or -errno. */
int sonde_prim_wait_quiet(int fd, int *result);
/* Closes every descriptor from lowest up. Async-signal-safe. */
void sonde_prim_close_from(int lowest);

#endif
