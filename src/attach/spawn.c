/* spawn.c — `sonde record`: starting the command to sample.
 *
 * Owns: sonde_attach_spawn. Called by the CLI before sampling. The command
 * is looked up in $PATH before the fork; the child takes the signal mask
 * the caller gives (sonde's own from before it blocked the signals it
 * forwards), keeps every disposition sonde was started with (a signal
 * ignored by sonde's parent stays ignored, as for the command run
 * directly) but SIGPIPE's, which goes back to the default, then execs; a
 * close-on-exec pipe tells the
 * parent whether the exec succeeded (EOF) or failed (the child writes its
 * errno and exits 127), so "no such command" is an error of `sonde
 * record` itself, not of the command. Between fork and exec the child
 * only calls async-signal-safe functions. No signal handler here.
 */
#include "attach.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Finds the command as execvp would (a name with a '/' as it is, else the
 * first executable file of that name in $PATH), before the fork: between
 * fork and exec the child may only call async-signal-safe functions.
 * Returns 0 or -ENOENT / -EACCES / -ENAMETOOLONG. */
static int spawn_resolve(const char *name, char *path, size_t len)
{
    if (strchr(name, '/')) {
        if ((size_t)snprintf(path, len, "%s", name) >= len) return -ENAMETOOLONG;
        return 0;
    }
    const char *search = getenv("PATH");
    int rc = -ENOENT;
    if (!search || !*search) search = "/usr/local/bin:/usr/bin:/bin";
    for (const char *dir = search; dir; dir = strchr(dir, ':') ? strchr(dir, ':') + 1 : NULL) {
        size_t n = strcspn(dir, ":");
        if ((size_t)snprintf(path, len, "%.*s%s%s", (int)n, n ? dir : ".", "/", name) >= len)
            continue;
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        if (access(path, X_OK) == 0) return 0;
        rc = -EACCES;
    }
    return rc;
}

int sonde_attach_spawn(char *const *argv, const sigset_t *mask, pid_t *pid)
{
    int fds[2];
    char path[4096];
    if (!argv || !argv[0] || !argv[0][0]) return -ENOENT;
    int rc = spawn_resolve(argv[0], path, sizeof path);
    if (rc < 0) return rc;
    if (pipe2(fds, O_CLOEXEC) != 0) return -errno;
    pid_t child = fork();
    if (child < 0) {
        int e = errno;
        close(fds[0]);
        close(fds[1]);
        return -e;
    }
    if (child == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, mask ? mask : &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        close(fds[0]);
        execv(path, argv);
        int e = errno;
        ssize_t unused = write(fds[1], &e, sizeof e);
        (void)unused;
        _exit(127);
    }
    close(fds[1]);
    int child_errno = 0;
    ssize_t n;
    do
        n = read(fds[0], &child_errno, sizeof child_errno);
    while (n < 0 && errno == EINTR);
    close(fds[0]);
    if (n == (ssize_t)sizeof child_errno) {
        waitpid(child, NULL, 0); /* it exits at once */
        return -child_errno;
    }
    *pid = child;
    return 0;
}
