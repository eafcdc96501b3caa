/* children.c — the program's followed processes, and their merge at its end.
 *
 * Owns: which part this process plays when `sonde run` follows the
 * program's Python processes (the default), the private directory where
 * the followed processes hand their profiles over, and the root's end.
 *
 * The process `sonde run` started is the root: it is the program, with
 * the parent, group, session and descriptors `python3 prog.py` would have
 * (no process of sonde's stands between it and its launcher). It makes the
 * directory only when it first starts a followed process ($TMPDIR, else
 * /tmp, /dev/shm, /var/tmp, $XDG_RUNTIME_DIR: the first where a directory
 * can be made and 64 KiB allocated in it). Every followed process (a child)
 * leaves its live marker there at its start and its profile at its end, or
 * a marker of the errno that stopped it (session.c; the names and the
 * format are src/handover/'s). At its own
 * end the root writes its profile there too and starts the `sonde` command
 * (`sonde _children`, src/collect/children.c) in a child the program cannot
 * see end (sonde_prim_spawn_quiet): it waits, at most --child-wait, for the
 * followed processes of the root's group still running, merges, writes the
 * one report, says in one line what is missing and why, and removes the
 * directory. The root waits for it, so the report is whole when the
 * program's exit status reaches its launcher. Without followed processes
 * nothing of this happens: the root writes its report itself.
 *
 * Called with the GIL from boot.c, session.c and exec.c, or from the
 * sampler thread (the report after SIGTERM); sonde_children_on_sigterm is
 * async-signal-safe (it runs in session.c's SIGTERM handler).
 */
#include "ext.h"

#include "../handover/handover.h"
#include "../prim/file.h"

#include <limits.h>
#include <dirent.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static struct {
    bool follow;                  /* the run follows the program's Python processes */
    int role;                     /* SONDE_CHILDREN_ROOT, _CHILD or _SERVICE */
    char *dir;                    /* owned; the private directory; NULL: none (yet) */
    bool made_here;               /* the root made dir (else it was handed over) */
    char *options;                /* owned; the run's options as handed over (encoded) */
    int dir_errno;                /* why no directory could be made; 0: none tried or made */
    unsigned removed;             /* times the directory was found removed by the program */
    unsigned spawned;             /* followed processes this process started */
    unsigned lost;                /* processes started but not followed: no directory */
    pid_t pid;                    /* the process these settings are for */
    volatile sig_atomic_t helper; /* the merging command while the root waits; 0 */
} children;

void sonde_children_init(bool follow, const char *dir, int role, const char *options)
{
    free(children.dir);
    free(children.options);
    memset(&children, 0, sizeof children);
    children.follow = follow;
    children.role = role;
    children.dir = dir && *dir ? strdup(dir) : NULL;
    children.options = options ? strdup(options) : NULL;
    children.pid = getpid();
}

bool sonde_children_follow(void)
{
    return children.follow && children.pid == getpid();
}

int sonde_children_role(void)
{
    return children.role;
}

const char *sonde_children_dir(void)
{
    return children.pid == getpid() ? children.dir : NULL;
}

const char *sonde_children_dir_handed(void)
{
    return children.pid == getpid() && !children.made_here ? children.dir : NULL;
}

void sonde_children_forked(void)
{
    /* the child of a fork: a followed process of the same directory */
    children.role = SONDE_CHILDREN_CHILD;
    children.made_here = false;
    children.spawned = children.lost = children.removed = 0;
    children.dir_errno = 0;
    children.helper = 0;
    children.pid = getpid();
}

void sonde_children_note_spawn(bool followed)
{
    if (!sonde_children_follow()) return;
    if (followed)
        children.spawned++;
    else
        children.lost++;
}

unsigned sonde_children_spawned(void)
{
    return children.pid == getpid() ? children.spawned : 0;
}

/* ---- the directory ---------------------------------------------------------------- */

const char *sonde_children_dir_ensure(void)
{
    if (!sonde_children_follow()) return NULL;
    if (children.dir) {
        struct stat st;
        if (children.role != SONDE_CHILDREN_ROOT || !children.made_here ||
            (stat(children.dir, &st) == 0 && S_ISDIR(st.st_mode)))
            return children.dir;
        /* the program removed it: a new one for the processes to come;
         * those that had the old one are counted missing at the end */
        children.removed++;
        free(children.dir);
        children.dir = NULL;
    }
    if (children.role != SONDE_CHILDREN_ROOT) return NULL;
    char *dir = NULL;
    int rc = sonde_prim_private_dir(&dir);
    if (rc < 0) {
        children.dir_errno = -rc;
        return NULL;
    }
    children.dir = dir;
    children.made_here = true; /* dir_errno stays: why earlier ones were not followed */
    return children.dir;
}

/* ---- the root's end with --period ------------------------------------------------- */

void sonde_children_periods_end(bool terminated)
{
    const char *dir = sonde_children_dir_handed();
    if (!dir || children.role != SONDE_CHILDREN_ROOT) return;
    char text[32] = "";
    ssize_t n = sonde_handover_dir_read(dir, SONDE_HANDOVER_HELPER, text, sizeof text);
    pid_t helper = n > 0 ? (pid_t)atoi(text) : 0;
    /* the last hand-over is in: the helper ends the last period (stopped by
     * SIGTERM: the helper's drain fits in a container's stop) */
    (void)sonde_handover_dir_mark(dir, SONDE_HANDOVER_ENDING, terminated ? "SIGTERM\n" : NULL);
    if (helper <= 0) return;
    /* and sends what waits; a SIGTERM meanwhile cuts that short
     * (sonde_children_on_sigterm) */
    children.helper = helper;
    while (!sonde_handover_dir_has(dir, SONDE_HANDOVER_DRAINED) && kill(helper, 0) == 0) {
        struct timespec tick = {0, 10000000L};
        nanosleep(&tick, NULL);
    }
    children.helper = 0;
    /* the helper is done with it: gone before the program's end is seen
     * (the helper removes it too when the root dies first) */
    if (sonde_handover_dir_has(dir, SONDE_HANDOVER_DRAINED)) sonde_prim_private_dir_remove(dir);
}

/* ---- the root's end ------------------------------------------------------------------ */

void sonde_children_on_sigterm(void)
{
    pid_t helper = (pid_t)children.helper;
    if (helper > 0) kill(helper, SIGTERM);
}

bool sonde_children_merges(void)
{
    return children.pid == getpid() && children.role == SONDE_CHILDREN_ROOT && children.follow &&
           (children.dir || children.lost);
}

/* One line on stderr (when it is open) without stdio. */
static void children_say(const char *fmt, ...)
{
    if (!sonde_prim_fd_is_open(STDERR_FILENO)) return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n > sizeof line - 2) n = sizeof line - 2;
    line[n++] = '\n';
    (void)sonde_write_fd(STDERR_FILENO, line, (size_t)n);
}

void sonde_children_account_alone(sonde_profile_t *prof)
{
    /* the followed processes it started: their profiles stay in a
     * directory no one merges (sonde_children_finish said why in its line);
     * the ones they started in turn are not known here */
    if (children.dir && children.pid == getpid()) prof->partial.processes_lost += children.spawned;
    if (!children.lost) return;
    prof->partial.processes_lost += children.lost;
    children_say("sonde: %u process%s the program started %s not in the report: no directory "
                 "for their profiles could be made in $TMPDIR, /tmp, /dev/shm or /var/tmp (%s)",
                 children.lost, children.lost == 1 ? "" : "es", children.lost == 1 ? "is" : "are",
                 strerror(children.dir_errno ? children.dir_errno : ENOENT));
}

int sonde_children_finish(const sonde_profile_t *prof, const char *outfile)
{
    if (!children.dir) return -ENOENT;
    char stem[SONDE_HANDOVER_STEM_MAX], path[PATH_MAX], command[PATH_MAX], numbers[5][24];
    int rc = sonde_handover_root_stem(stem, sizeof stem, (int)getpid());
    if (rc == 0)
        rc = sonde_handover_path(path, sizeof path, children.dir, stem, SONDE_HANDOVER_PROFILE, 0);
    if (rc == 0) rc = sonde_handover_write(children.dir, stem, SONDE_HANDOVER_PROFILE, 0, prof);
    if (rc < 0) {
        /* the directory is gone, or cannot take it: the root reports alone */
        children_say("sonde: the profiles of the processes the program started are left out: "
                     "cannot write into %s: %s",
                     children.dir, strerror(-rc));
        return rc;
    }
    if (sonde_ext_command_path(command, sizeof command) < 0) {
        unlink(path);
        children_say("sonde: the profiles of the processes the program started are left out: "
                     "the sonde command is not at %s",
                     command);
        return -ENOENT;
    }
    snprintf(numbers[0], sizeof numbers[0], "%u", children.lost);
    snprintf(numbers[1], sizeof numbers[1], "%u", children.removed);
    snprintf(numbers[2], sizeof numbers[2], "%d", children.dir_errno);
    snprintf(numbers[3], sizeof numbers[3], "%d", (int)getpid());
    snprintf(numbers[4], sizeof numbers[4], "%u", children.spawned);
    char *argv[] = {command,
                    "_children",
                    children.dir,
                    stem,
                    children.options ? children.options : "",
                    outfile ? (char *)outfile : "",
                    sonde_ext_pkg_dir,
                    numbers[0],
                    numbers[1],
                    numbers[2],
                    numbers[3],
                    numbers[4],
                    NULL};
    extern char **environ;
    pid_t pid = 0;
    int fd = -1;
    rc = sonde_prim_spawn_quiet(command, argv, environ, &fd, &pid);
    if (rc < 0) {
        unlink(path);
        children_say("sonde: the profiles of the processes the program started are left out: "
                     "cannot start %s: %s",
                     command, strerror(-rc));
        return rc;
    }
    children.helper = pid;
    int result = -1;
    rc = sonde_prim_wait_quiet(fd, &result);
    children.helper = 0;
    if (rc == 0 && result == 0) {
        /* merged and written: the next followed processes (after an
         * os.exec* that failed) start a new directory */
        free(children.dir);
        children.dir = NULL;
        children.made_here = false;
        children.lost = children.removed = 0;
        return 0;
    }
    /* it said why (or died): the root's own profile is still in memory,
     * the directory goes */
    sonde_prim_private_dir_remove(children.dir);
    return -ECHILD;
}
