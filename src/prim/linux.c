/* linux.c — Linux implementations of the primitives in prim.h.
 *
 * Owns: clocks (including per-thread CPU clocks built from a kernel thread
 * id), the /proc/self/task/TID/syscall reader that tells a thread blocked
 * on another thread from one blocked on I/O, the kept-open reader of
 * /proc/.../task/TID files and the schedstat parser that remote.c shares
 * (prim_internal.h), the path of the executable,
 * the terminal width, the umask, the interrupt that proves every CPU of the
 * process runs (membarrier), the futex word that wakes sonde's worker
 * threads (sampler, device readers), the descriptors sonde keeps inside the
 * profiled process (never 0-2, and checked (device and inode) before each
 * use, since the program may close and reuse any number), and for the
 * attach reader: its limit of open descriptors, and ending the command by
 * a signal without a core dump (`sonde record`). Called by the sampler
 * thread (src/ext/sampler.c), the session, the file service and the CLI.
 * The clock functions and sonde_prim_wake_signal (called from the SIGTERM
 * handler) are async-signal-safe; the rest are not used from signal
 * handlers.
 */
#include "prim_internal.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define LINUX_STATUS_PATH "/proc/self/status" /* its "Umask:" line */

sonde_ns_t sonde_prim_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
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

void sonde_prim_sleep_ns(sonde_ns_t ns)
{
    struct timespec ts = {(time_t)(ns / SONDE_NS_PER_SEC), (long)(ns % SONDE_NS_PER_SEC)};
    nanosleep(&ts, NULL);
}

int sonde_prim_pin_self_to_cpu(int cpu)
{
    cpu_set_t set;
    if (cpu < 0 || cpu >= CPU_SETSIZE) return -EINVAL;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set) == 0 ? 0 : -errno;
}

void sonde_prim_set_timer_slack(sonde_ns_t ns)
{
    prctl(PR_SET_TIMERSLACK, (unsigned long)ns, 0, 0, 0);
}

#define LINUX_THREAD_GONE_TIMEOUT_NS (50 * 1000 * 1000)

void sonde_prim_forget_joined_thread(pid_t tid, sonde_prim_wake_t *wake)
{
    if (tid > 0) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/task/%d", (int)tid);
        sonde_ns_t end = sonde_prim_monotonic_ns() + LINUX_THREAD_GONE_TIMEOUT_NS;
        while (access(path, F_OK) == 0 && sonde_prim_monotonic_ns() < end)
            sonde_prim_sleep_ns(20000);
    }
    if (wake) sonde_atomic_store_release(&wake->pending, 0);
}

pid_t sonde_prim_gettid(void)
{
    return (pid_t)syscall(SYS_gettid);
}

int sonde_prim_cpus_resume(void)
{
#ifdef SYS_membarrier
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0) return 0;
    if (errno != EPERM) return -errno;
    /* Not registered yet (or no longer: a forked child's address space
     * starts unregistered): registering is idempotent and per process. */
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) != 0)
        return -errno;
    return syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0 ? 0 : -errno;
#else
    return -ENOSYS;
#endif
}

/* ---- wake-ups ------------------------------------------------------------------- */

/* Async-signal-safe: an atomic store and one futex(2), errno restored. */
void sonde_prim_wake_signal(sonde_prim_wake_t *wake)
{
    int saved = errno;
    sonde_atomic_store_release(&wake->pending, 1);
    syscall(SYS_futex, &wake->pending, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
    errno = saved;
}

void sonde_prim_wake_wait(sonde_prim_wake_t *wake, sonde_ns_t timeout_ns)
{
    if (atomic_exchange_explicit(&wake->pending, 0, memory_order_acquire)) return;
    struct timespec timeout = {(time_t)(timeout_ns / SONDE_NS_PER_SEC),
                               (long)(timeout_ns % SONDE_NS_PER_SEC)};
    /* Sleeps while the word is 0: a signal between the exchange and here
     * made it 1, and the kernel then returns at once (EAGAIN). */
    long rc = syscall(SYS_futex, &wake->pending, FUTEX_WAIT_PRIVATE, 0, &timeout, NULL, 0);
    if (rc != 0 && errno != EAGAIN && errno != ETIMEDOUT && errno != EINTR)
        sonde_prim_sleep_ns(timeout_ns); /* no futex (never seen): sleep, never spin */
    atomic_exchange_explicit(&wake->pending, 0, memory_order_acquire);
}

/* ---- descriptors kept inside the profiled process ------------------------------ */

int sonde_prim_fd_above_std(int fd)
{
    if (fd < 0) return errno ? -errno : -EBADF; /* the open that gave fd failed */
    if (fd > STDERR_FILENO) return fd;
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
    int err = moved < 0 ? -errno : 0;
    close(fd); /* sonde's own: it was just opened */
    return moved < 0 ? err : moved;
}

bool sonde_prim_fd_is_open(int fd)
{
    return fd >= 0 && fcntl(fd, F_GETFD) >= 0;
}

/* Descriptors kept inside the profiled program sit just under its limit
 * (capped, so that a huge limit does not grow the descriptor table), where
 * a program that opens files gets the same numbers as without sonde; at
 * most LINUX_KEPT_MAX are kept at once, so a program with many threads
 * does not run out of descriptors because it is profiled. */
#define LINUX_KEPT_MAX 256
#define LINUX_KEPT_HEADROOM 320 /* below the limit: room for LINUX_KEPT_MAX */
#define LINUX_KEPT_LIMIT_CAP 1024

static atomic_int linux_kept_count; /* checked descriptors kept now */

/* A program that closed one of sonde's descriptors manages its descriptor
 * numbers itself (closerange, then opening or dup2-ing onto chosen
 * numbers). Any open() of sonde's then races with it: open takes the
 * lowest free number for a moment, so the program's open gets another
 * number than under Python and its dup2 onto that number fails with EBUSY.
 * So after each such loss sonde opens nothing in the process for a while
 * (2 s, doubling at each new loss, at most 64 s): readings that need a
 * file are unknown meanwhile (a blocked thread's time is not classified). */
#define LINUX_QUIET_FIRST_NS (2 * SONDE_NS_PER_SEC)
#define LINUX_QUIET_MAX_NS (64 * SONDE_NS_PER_SEC)
static _Atomic sonde_ns_t linux_quiet_until; /* monotonic ns; 0: never lost */
static _Atomic sonde_ns_t linux_quiet_span;

static void linux_kept_lost(void)
{
    sonde_ns_t now = sonde_prim_monotonic_ns();
    if (now < sonde_atomic_load_relaxed(&linux_quiet_until)) return; /* same loss */
    sonde_ns_t span = sonde_atomic_load_relaxed(&linux_quiet_span);
    span = span == 0 ? LINUX_QUIET_FIRST_NS : span * 2;
    if (span > LINUX_QUIET_MAX_NS) span = LINUX_QUIET_MAX_NS;
    sonde_atomic_store_relaxed(&linux_quiet_span, span);
    sonde_atomic_store_relaxed(&linux_quiet_until, now + span);
}

void sonde__prim_kept_quiet_end(void)
{
    sonde_atomic_store_relaxed(&linux_quiet_until, 1);
}

bool sonde_prim_kept_quiet(void)
{
    sonde_ns_t until = sonde_atomic_load_relaxed(&linux_quiet_until);
    return until != 0 && sonde_prim_monotonic_ns() < until;
}

/* The lowest number for a kept descriptor: near the top of the soft limit,
 * or 3 where the limit is too small to leave the program room. */
static int linux_kept_base(void)
{
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return STDERR_FILENO + 1;
    rlim_t top = limit.rlim_cur < LINUX_KEPT_LIMIT_CAP ? limit.rlim_cur : LINUX_KEPT_LIMIT_CAP;
    return top >= 2 * LINUX_KEPT_HEADROOM ? (int)(top - LINUX_KEPT_HEADROOM) : STDERR_FILENO + 1;
}

bool sonde_prim_kept_room(void)
{
    return sonde_atomic_load_relaxed(&linux_kept_count) < LINUX_KEPT_MAX;
}

int sonde_prim_kept_adopt(sonde_prim_kept_fd_t *kept, int fd, bool check)
{
    struct stat st;
    *kept = SONDE_PRIM_KEPT_FD_NONE;
    if (fd < 0) return -EBADF;
    if (check) { /* out of the program's way; where there is no room, just above 2 */
        int moved = fcntl(fd, F_DUPFD_CLOEXEC, linux_kept_base());
        if (moved >= 0) {
            close(fd);
            fd = moved;
        }
    }
    if ((fd = sonde_prim_fd_above_std(fd)) < 0) return fd;
    if (fstat(fd, &st) != 0) {
        int err = -errno;
        close(fd);
        return err;
    }
    kept->fd = fd;
    kept->check = check;
    kept->dev = st.st_dev;
    kept->ino = st.st_ino;
    if (check) sonde_atomic_add_relaxed(&linux_kept_count, 1);
    return 0;
}

void sonde_prim_kept_reserve(void)
{
    int base = linux_kept_base();
    if (base <= STDERR_FILENO + 1) return; /* kept just above 2: the table holds them */
    int top = base + LINUX_KEPT_MAX - 1;
    if (fcntl(top, F_GETFD) >= 0) return; /* the table reaches that far already */
    /* any open descriptor serves as the original; the program may have
     * started without 0-2 */
    int fd = -1;
    for (int std = STDIN_FILENO; std <= STDERR_FILENO && fd < 0; std++)
        fd = fcntl(std, F_DUPFD_CLOEXEC, top);
    if (fd < 0) {
        int any = open("/", O_PATH | O_CLOEXEC);
        if (any < 0) return;
        fd = fcntl(any, F_DUPFD_CLOEXEC, top);
        close(any);
    }
    if (fd >= 0) close(fd);
}

int sonde_prim_kept_get(sonde_prim_kept_fd_t *kept)
{
    struct stat st;
    if (kept->fd < 0) return -EBADF;
    if (!kept->check) return kept->fd;
    if (fstat(kept->fd, &st) == 0 && st.st_dev == kept->dev && st.st_ino == kept->ino)
        return kept->fd;
    kept->fd = -1; /* closed by the program, perhaps reused: no longer ours */
    sonde_atomic_add_relaxed(&linux_kept_count, -1);
    linux_kept_lost();
    return -EBADF;
}

void sonde_prim_kept_close(sonde_prim_kept_fd_t *kept)
{
    if (sonde_prim_kept_get(kept) >= 0) {
        close(kept->fd);
        if (kept->check) sonde_atomic_add_relaxed(&linux_kept_count, -1);
    }
    kept->fd = -1;
}

mode_t sonde_prim_umask(void)
{
    int fd = sonde_prim_fd_above_std(open(LINUX_STATUS_PATH, O_RDONLY | O_CLOEXEC));
    if (fd >= 0) {
        char text[2048];
        ssize_t n = read(fd, text, sizeof text - 1);
        close(fd);
        const char *line = n > 0 ? (text[n] = 0, strstr(text, "\nUmask:")) : NULL;
        unsigned mask = 0;
        if (line && sscanf(line + 1, "Umask: %o", &mask) == 1) return (mode_t)mask;
    }
    mode_t mask = umask(022);
    umask(mask);
    return mask;
}

void sonde_prim_thread_init(sonde_prim_thread_t *t, pid_t tid)
{
    t->tid = tid;
    t->sched = SONDE_PRIM_KEPT_FD_NONE;
    t->syscall = SONDE_PRIM_KEPT_FD_NONE;
    t->no_schedstat = false;
}

ssize_t sonde__prim_task_read(pid_t pid, pid_t tid, const char *name, sonde_prim_kept_fd_t *kept,
                              char *buf, size_t len)
{
    int fd = sonde_prim_kept_get(kept);
    bool transient = false; /* opened for this read only (no room to keep it) */
    if (fd < 0) {
        char path[96];
        if (pid <= 0 && sonde_prim_kept_quiet()) return -EAGAIN;
        if (pid > 0)
            snprintf(path, sizeof path, "/proc/%d/task/%d/%s", (int)pid, (int)tid, name);
        else
            snprintf(path, sizeof path, "/proc/self/task/%d/%s", (int)tid, name);
        fd = sonde_prim_fd_above_std(open(path, O_RDONLY | O_CLOEXEC));
        if (fd < 0) return fd == -ENOENT ? -ESRCH : fd;
        /* In this process (pid 0) the profiled program runs: checked, and
         * only so many kept. */
        transient = pid <= 0 && !sonde_prim_kept_room();
        if (!transient) {
            int rc = sonde_prim_kept_adopt(kept, fd, pid <= 0);
            if (rc < 0) return rc;
            fd = kept->fd;
        }
    }
    ssize_t n = pread(fd, buf, len - 1, 0);
    int e = n < 0 ? errno : ESRCH;
    if (transient)
        close(fd);
    else if (n <= 0)
        sonde_prim_kept_close(kept);
    if (n <= 0) return -e;
    buf[n] = 0;
    return n;
}

int sonde__prim_parse_schedstat(const char *text, sonde_ns_t *cpu_ns, sonde_ns_t *runq_ns)
{
    char *end = NULL;
    unsigned long long cpu = strtoull(text, &end, 10);
    if (end == text) return -EINVAL;
    char *end2 = NULL;
    unsigned long long runq = strtoull(end, &end2, 10);
    *cpu_ns = cpu;
    *runq_ns = end2 == end ? 0 : runq;
    return 0;
}

int sonde_prim_thread_times(sonde_prim_thread_t *t, sonde_ns_t *cpu_ns, sonde_ns_t *runq_ns)
{
    if (t->tid <= 0) return -EINVAL;
    /* CPU time from the thread's clock: exact even while it runs (the
     * kernel's schedstat counters only move at scheduler events). */
    int rc = sonde_prim_thread_cpu_ns(t->tid, cpu_ns);
    if (rc < 0) return rc;
    *runq_ns = 0;
    if (t->no_schedstat) return 0;
    char text[128];
    ssize_t n = sonde__prim_task_read(0, t->tid, "schedstat", &t->sched, text, sizeof text);
    sonde_ns_t on_cpu;
    if (n > 0) {
        if (sonde__prim_parse_schedstat(text, &on_cpu, runq_ns) < 0) *runq_ns = 0;
    } else if (n == -ESRCH && access("/proc/self/schedstat", R_OK) != 0) {
        t->no_schedstat = true;
    }
    return 0;
}

sonde_thread_wait_t sonde_prim_parse_syscall(const char *text, long *syscall_nr)
{
    if (syscall_nr) *syscall_nr = -1;
    if (strncmp(text, "running", 7) == 0) return SONDE_WAIT_RUNNING;
    char *end = NULL;
    long nr = strtol(text, &end, 10);
    if (end == text) return SONDE_WAIT_UNKNOWN;
    if (nr < 0) return SONDE_WAIT_RUNNING; /* blocked outside a system call */
    if (syscall_nr) *syscall_nr = nr;
#ifdef SYS_futex
    if (nr == SYS_futex) return SONDE_WAIT_THREAD;
#endif
#ifdef SYS_futex_waitv
    if (nr == SYS_futex_waitv) return SONDE_WAIT_THREAD;
#endif
    return SONDE_WAIT_SYSTEM;
}

sonde_thread_wait_t sonde_prim_thread_wait(sonde_prim_thread_t *t)
{
    char text[256];
    if (sonde__prim_task_read(0, t->tid, "syscall", &t->syscall, text, sizeof text) <= 0)
        return SONDE_WAIT_UNKNOWN;
    return sonde_prim_parse_syscall(text, NULL);
}

void sonde_prim_thread_close(sonde_prim_thread_t *t)
{
    sonde_prim_kept_close(&t->sched);
    sonde_prim_kept_close(&t->syscall);
}

int sonde_prim_self_usage(double *cpu_sec, double *peak_mb)
{
    struct rusage usage;
    if (getrusage(RUSAGE_SELF, &usage) != 0) return -errno;
    *cpu_sec = (double)usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 +
               (double)usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
    *peak_mb = (double)usage.ru_maxrss / 1024.0; /* KiB on Linux */
    return 0;
}

int sonde_prim_self_exe(char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);
    if (n < 0) return -errno;
    if ((size_t)n >= len - 1) return -ENAMETOOLONG;
    buf[n] = 0;
    return 0;
}

bool sonde_prim_terminal_color(int fd)
{
    const char *no_color = getenv("NO_COLOR");
    const char *term = getenv("TERM");
    if (no_color && *no_color) return false;
    if (term && strcmp(term, "dumb") == 0) return false;
    return isatty(fd);
}

int sonde_prim_terminal_width(int fd)
{
    struct winsize ws;
    if (!isatty(fd)) return 0;
    if (ioctl(fd, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0) return 0;
    return ws.ws_col;
}

void sonde_prim_die_by_signal(int sig)
{
    /* The core would be sonde's, not the program's (which dumped its own,
     * if the system keeps them): a pipe in core_pattern ignores
     * RLIMIT_CORE, a process that is not dumpable gets none at all. */
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    fflush(NULL);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL); /* refused for SIGKILL, whose action is fixed */
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, sig);
    raise(sig);
    sigprocmask(SIG_UNBLOCK, &only, NULL); /* a blocked signal arrives here */
}

void sonde_prim_raise_fd_limit(void)
{
    struct rlimit files;
    if (getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur >= files.rlim_max) return;
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
}
