/* test_prim_fds.c — what sonde keeps inside the profiled process without
 * trusting a descriptor number (src/prim/linux.c, prim.h): the worker
 * threads' wake-up (a futex word, no descriptor) and the descriptors it
 * keeps open (never 0-2, checked before each use).
 *
 * The wake-up: a signal before the wait ends it at once, a wait without
 * one lasts its timeout, a signal is consumed by the wait it ends (a waiter
 * that loops never spins), another thread's signal ends a wait in progress.
 * The descriptors: a file opened while 0 or 2 is closed moves above 2; a
 * kept descriptor the program closed, or closed and reused, is forgotten
 * and never closed by sonde; a kept descriptor leaves the program the
 * numbers it would get without sonde; reserving grows the descriptor table
 * to hold every kept descriptor and leaves no descriptor open, with 0-2
 * open or closed.
 */
#include "prim/prim.h"

#include "check.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MS (1000 * 1000ull)

static sonde_ns_t timed_wait(sonde_prim_wake_t *wake, sonde_ns_t timeout_ns)
{
    sonde_ns_t t0 = sonde_prim_monotonic_ns();
    sonde_prim_wake_wait(wake, timeout_ns);
    return sonde_prim_monotonic_ns() - t0;
}

static void *signal_later(void *arg)
{
    sonde_prim_sleep_ns(20 * MS);
    sonde_prim_wake_signal(arg);
    return NULL;
}

static void test_wake(void)
{
    sonde_prim_wake_t wake = {0};
    sonde_ns_t took = timed_wait(&wake, 30 * MS);
    check(took >= 25 * MS, "wake_wait_lasts_its_timeout", "%.1f ms", (double)took / 1e6);

    sonde_prim_wake_signal(&wake);
    took = timed_wait(&wake, 2000 * MS);
    check(took < 1000 * MS, "wake_signal_before_wait_ends_it", "%.1f ms", (double)took / 1e6);
    /* consumed: the next wait sleeps again (a loop around it cannot spin) */
    took = timed_wait(&wake, 30 * MS);
    check(took >= 25 * MS, "wake_signal_is_consumed", "%.1f ms", (double)took / 1e6);

    pthread_t thread;
    check(pthread_create(&thread, NULL, signal_later, &wake) == 0, "wake_thread_started", "-");
    took = timed_wait(&wake, 5000 * MS);
    pthread_join(thread, NULL);
    check(took < 4000 * MS, "wake_signal_from_another_thread", "%.1f ms", (double)took / 1e6);

    /* a cleared wake-up (after a pause for fork) does not end the next wait */
    sonde_prim_wake_signal(&wake);
    sonde_prim_forget_joined_thread(0, &wake);
    took = timed_wait(&wake, 30 * MS);
    check(took >= 25 * MS, "wake_forget_clears", "%.1f ms", (double)took / 1e6);
}

/* Opens /dev/null through the helper while standard number `closed` is
 * closed; restores it afterwards. */
static void test_above_std(int closed)
{
    int saved = dup(closed);
    close(closed);
    int fd = sonde_prim_fd_above_std(open("/dev/null", O_RDONLY | O_CLOEXEC));
    bool still_closed = fcntl(closed, F_GETFD) < 0 && errno == EBADF;
    int flags = fd >= 0 ? fcntl(fd, F_GETFD) : -1;
    char name[64];
    snprintf(name, sizeof name, "above_std_with_%d_closed", closed);
    check(fd > 2 && still_closed && flags >= 0 && (flags & FD_CLOEXEC), name, "fd %d flags %d", fd,
          flags);
    if (fd >= 0) close(fd);
    dup2(saved, closed);
    close(saved);
    errno = ENOENT;
    check(sonde_prim_fd_above_std(-1) == -ENOENT, "above_std_failed_open_is_errno", "-");
}

static void test_kept(void)
{
    int saved = dup(0);
    close(0);
    sonde_prim_kept_fd_t kept = SONDE_PRIM_KEPT_FD_NONE;
    int rc = sonde_prim_kept_adopt(&kept, open("/dev/null", O_RDONLY | O_CLOEXEC), true);
    check(rc == 0 && kept.fd > 2 && fcntl(0, F_GETFD) < 0, "kept_never_std", "rc %d fd %d", rc,
          kept.fd);
    dup2(saved, 0);
    close(saved);
    check(sonde_prim_kept_get(&kept) == kept.fd, "kept_get_own", "fd %d", kept.fd);

    /* the program closes it and opens a file that takes the number */
    int number = kept.fd;
    close(number);
    char path[] = "/tmp/sonde-test-kept-XXXXXX";
    int program_fd = mkstemp(path);
    if (program_fd != number && program_fd >= 0) {
        dup2(program_fd, number);
        close(program_fd);
    }
    check(sonde_prim_kept_get(&kept) == -EBADF && kept.fd == -1, "kept_taken_over_forgotten",
          "fd %d", kept.fd);
    sonde_prim_kept_close(&kept);
    check(write(number, "ok", 2) == 2, "kept_close_leaves_program_file", "fd %d", number);
    close(number);
    unlink(path);

    /* closed and not reused: forgotten, nothing closed */
    rc = sonde_prim_kept_adopt(&kept, open("/dev/null", O_RDONLY | O_CLOEXEC), true);
    number = kept.fd;
    close(number);
    check(rc == 0 && sonde_prim_kept_get(&kept) == -EBADF, "kept_closed_forgotten", "rc %d", rc);

    /* out of the way of the program's own numbers: its next file gets the
     * number it would have got without sonde (when the limit leaves room) */
    struct rlimit limit;
    int lowest = open("/dev/null", O_RDONLY | O_CLOEXEC);
    close(lowest);
    rc = sonde_prim_kept_adopt(&kept, open("/dev/null", O_RDONLY | O_CLOEXEC), true);
    int next = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur >= 1024)
        check(rc == 0 && next == lowest && kept.fd > lowest, "kept_leaves_program_numbers",
              "program's %d (%d without sonde), kept %d", next, lowest, kept.fd);
    close(next);
    sonde_prim_kept_close(&kept);

    /* unchecked (the sonde command's own): returned as it is */
    rc = sonde_prim_kept_adopt(&kept, open("/dev/null", O_RDONLY | O_CLOEXEC), false);
    check(rc == 0 && sonde_prim_kept_get(&kept) == kept.fd, "kept_unchecked", "rc %d", rc);
    sonde_prim_kept_close(&kept);
    check(kept.fd == -1, "kept_close_forgets", "fd %d", kept.fd);
}

/* The descriptor table's size (FDSize in /proc/self/status), or -1. */
static int fd_table_size(void)
{
    char text[4096];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
    if (fd >= 0) close(fd);
    const char *line = n > 0 ? (text[n] = 0, strstr(text, "\nFDSize:")) : NULL;
    return line ? atoi(line + sizeof "\nFDSize:" - 1) : -1;
}

/* The lowest free descriptor number (as open would give it). */
static int lowest_free(void)
{
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) close(fd);
    return fd;
}

typedef struct reserve_result {
    int size_before, size_after, free_before, free_after;
} reserve_result_t;

/* In a fresh child (a table of its own, grown by nothing yet) with a limit
 * of 1024 descriptors and, if close_std, 0-2 closed: the table's size and
 * the lowest free number before and after sonde_prim_kept_reserve. */
static void test_kept_reserve(bool close_std)
{
    int pipe_fds[2];
    reserve_result_t res = {-1, -1, -1, -1};
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_max < 1024 || pipe(pipe_fds) != 0) {
        check(true, "kept_reserve_skipped", "hard descriptor limit below 1024");
        return;
    }
    pid_t pid = fork();
    if (pid == 0) {
        limit.rlim_cur = 1024;
        setrlimit(RLIMIT_NOFILE, &limit);
        if (close_std)
            for (int std = 0; std <= 2; std++)
                close(std);
        res.size_before = fd_table_size();
        res.free_before = lowest_free();
        sonde_prim_kept_reserve();
        res.size_after = fd_table_size();
        res.free_after = lowest_free();
        _exit(write(pipe_fds[1], &res, sizeof res) == sizeof res ? 0 : 1);
    }
    close(pipe_fds[1]);
    int status = 0;
    bool got = pid > 0 && read(pipe_fds[0], &res, sizeof res) == sizeof res;
    close(pipe_fds[0]);
    if (pid > 0) waitpid(pid, &status, 0);
    char name[64];
    /* kept descriptors go from 1024 - 320 up, at most 256 of them */
    snprintf(name, sizeof name, "kept_reserve_grows_table%s", close_std ? "_std_closed" : "");
    check(got && res.size_before < 960 && res.size_after >= 960, name, "FDSize %d -> %d",
          res.size_before, res.size_after);
    snprintf(name, sizeof name, "kept_reserve_leaves_nothing_open%s",
             close_std ? "_std_closed" : "");
    check(got && res.free_before == res.free_after, name, "lowest free %d -> %d", res.free_before,
          res.free_after);
}

int main(void)
{
    test_kept_reserve(false);
    test_kept_reserve(true);
    test_wake();
    test_above_std(0);
    test_above_std(2);
    test_kept();
    return check_exit_code();
}
