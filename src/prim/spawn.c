/* spawn.c — a helper process the profiled program cannot see.
 *
 * Owns: sonde_prim_spawn_quiet and sonde_prim_wait_quiet (prim.h). The
 * profiled program's root process starts the `sonde` command at its end to
 * merge its followed processes' profiles (src/ext/children.c). A child it
 * forked would end with SIGCHLD, run the program's SIGCHLD handler and
 * could be reaped by the program's own os.wait(). So the helper is a
 * grandchild: a first child, cloned with no exit signal (only a wait with
 * __WCLONE sees it, and it never execs, which would make it an ordinary
 * child again), starts the helper and ends at once; the helper is then
 * nobody's child that the program can see (init's, or the nearest
 * subreaper's). A pipe links it to the caller: the first child writes the
 * helper's pid into it, the helper its result byte, and its end closes it.
 *
 * The children's side (between clone and execve) runs in a copy of a
 * multithreaded process: raw system calls only, no allocation, no locks.
 */
#include "prim.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

void sonde_prim_close_from(int lowest)
{
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)lowest, ~0U, 0U) == 0) return;
#endif
    for (int fd = lowest; fd < 65536; fd++)
        (void)syscall(SYS_close, fd);
}

/* The helper's side: the pipe's write end as descriptor 3, descriptors 4
 * and up closed, every signal unblocked (dispositions the program set to
 * be ignored stay so, as execve keeps them), then the new image.
 * Async-signal-safe. */
static void spawn_helper(int status_fd, const char *path, char *const argv[], char *const envp[])
{
    if (status_fd != 3 && syscall(SYS_dup2, status_fd, 3) < 0) (void)syscall(SYS_exit_group, 127);
    (void)syscall(SYS_fcntl, 3, F_SETFD, 0);
    sonde_prim_close_from(4);
    sigset_t none;
    sigemptyset(&none);
    (void)syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, sizeof(unsigned long));
    (void)syscall(SYS_execve, path, argv, envp);
    (void)syscall(SYS_exit_group, 127);
}

/* The first child's side: starts the helper, tells its pid, ends. */
static void spawn_first(int status_fd, const char *path, char *const argv[], char *const envp[])
{
    long helper = syscall(SYS_clone, (unsigned long)SIGCHLD, NULL, NULL, NULL, NULL);
    if (helper == 0) spawn_helper(status_fd, path, argv, envp);
    int pid = helper > 0 ? (int)helper : -1;
    (void)syscall(SYS_write, status_fd, &pid, sizeof pid);
    (void)syscall(SYS_exit_group, helper > 0 ? 0 : 1);
}

int sonde_prim_spawn_quiet(const char *path, char *const argv[], char *const envp[], int *fd,
                           pid_t *pid)
{
    int pipe_fds[2];
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) return -errno;
    /* flags 0: a copy of the process (as fork) whose end signals nothing;
     * the raw call, so that no fork handler of the program's runs */
    long first = syscall(SYS_clone, 0UL, NULL, NULL, NULL, NULL);
    if (first == 0) spawn_first(pipe_fds[1], path, argv, envp);
    int e = errno;
    close(pipe_fds[1]);
    if (first < 0) {
        close(pipe_fds[0]);
        return -e;
    }
    int status;
    while (waitpid((pid_t)first, &status, __WCLONE) < 0 && errno == EINTR) {
    }
    int helper = -1;
    ssize_t n;
    while ((n = read(pipe_fds[0], &helper, sizeof helper)) < 0 && errno == EINTR) {
    }
    if (n != (ssize_t)sizeof helper || helper <= 0) {
        close(pipe_fds[0]);
        return -ECHILD;
    }
    *fd = pipe_fds[0];
    *pid = (pid_t)helper;
    return 0;
}

int sonde_prim_wait_quiet(int fd, int *result)
{
    unsigned char byte = 0;
    ssize_t n, got = 0;
    *result = -1;
    for (;;) {
        n = read(fd, &byte, 1);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got = n;
        *result = byte;
    }
    int e = n < 0 ? errno : 0;
    close(fd);
    return e ? -e : (got ? 0 : -ECHILD);
}
