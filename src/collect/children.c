/* children.c — `sonde _children`: the report of a program and the Python
 * processes it started, made at the program's end.
 *
 * Owns: the merge that the program's root process asks for when it ends
 * (src/ext/children.c starts this command in a child the program cannot
 * see end, and waits for it). Its private directory (src/handover/ names
 * its files and reads them) holds the root's profile (ROOT_STEM) and, for
 * each followed process, its live marker (a service marker for
 * multiprocessing's forkserver and resource tracker, which end after the
 * root) with its profile or the errno that stopped it (it could not write
 * it) beside it. This command waits, at most the run's
 * --child-wait, for the followed processes still running that belong to
 * the root's process group and session (a Pool's workers, a subprocess it
 * did not wait for); those of another group or session (a daemon) are not
 * waited for. Then it merges the root's profile first (the
 * header names the program) and the others, counts what is missing in the
 * report's "partial" (processes_lost, processes_running), says it in one
 * line on stderr, writes the report as the run's options ask, and removes
 * the directory.
 *
 *   sonde _children DIR ROOT_STEM OPTIONS OUTFILE PKG_DIR NOT_FOLLOWED
 *                   REMOVED DIR_ERRNO ROOT_PID ROOT_FOLLOWED
 *
 * OPTIONS: the run's hand-over (src/launch/options.c); OUTFILE "" for
 * stderr; NOT_FOLLOWED: processes the root could not follow (no directory
 * could be made, DIR_ERRNO says why); REMOVED: times the root found the
 * directory removed; ROOT_PID: the root; ROOT_FOLLOWED: the followed
 * processes it started (one not listed yet is still starting: waited for). The result, also written as one
 * byte to descriptor 3 when it is open (the root waits for it there:
 * sonde_prim_spawn_quiet), and the exit status: 0, the report is written
 * or a line said why not; 2, the root's profile could not be read (the
 * root then writes its own report).
 *
 * Runs in the `sonde` process only; children_on_signal is a signal handler
 * (it sets a flag).
 */
#include "collect.h"
#include "collect_internal.h"

#include "../core/buf.h"
#include "../handover/handover.h"
#include "../prim/file.h"
#include "../prim/prim.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHILDREN_POLL_NS 5000000L  /* the wait's look again */
#define CHILDREN_MAX_ENTRIES 65536 /* processes listed, at most */

/* One followed process the directory knows. */
typedef struct children_entry {
    char stem[SONDE_HANDOVER_STEM_MAX];
    int pid;
    bool service; /* its service marker: not waited for, not missed */
    bool handed;  /* its profile is there */
    int error;    /* the errno that stopped its hand-over; 0 none */
} children_entry_t;

typedef struct children_list {
    children_entry_t *items;
    size_t n, cap;
} children_list_t;

static volatile sig_atomic_t children_stop;

/* Signal handler: SIGTERM, SIGINT or SIGHUP ends the wait (the report is
 * written with what was handed over). */
static void children_on_signal(int sig)
{
    (void)sig;
    children_stop = 1;
}

static children_entry_t *children_find(children_list_t *list, const sonde_handover_name_t *name)
{
    for (size_t i = 0; i < list->n; i++)
        if (strcmp(list->items[i].stem, name->stem) == 0) return &list->items[i];
    if (list->n == list->cap) {
        if (list->cap >= CHILDREN_MAX_ENTRIES) return NULL;
        size_t cap = list->cap ? list->cap * 2 : 16;
        children_entry_t *items = realloc(list->items, cap * sizeof *items);
        if (!items) return NULL;
        list->items = items;
        list->cap = cap;
    }
    children_entry_t *it = &list->items[list->n++];
    memset(it, 0, sizeof *it);
    memcpy(it->stem, name->stem, sizeof it->stem);
    it->pid = name->pid;
    return it;
}

/* Lists the directory's followed processes (not the root's stem). Returns
 * 0, or -errno when the directory cannot be read. */
static int children_scan(const char *dir, const char *root_stem, children_list_t *list)
{
    list->n = 0;
    DIR *d = opendir(dir);
    if (!d) return -errno;
    struct dirent *e;
    while ((e = readdir(d))) {
        sonde_handover_name_t name;
        /* temporary files and period files are not processes' */
        if (!sonde_handover_parse(e->d_name, &name) || name.kind == SONDE_HANDOVER_PERIOD ||
            strcmp(name.stem, root_stem) == 0)
            continue;
        children_entry_t *it = children_find(list, &name);
        if (!it) continue;
        it->service |= name.kind == SONDE_HANDOVER_SERVICE;
        it->handed |= name.kind == SONDE_HANDOVER_PROFILE;
        if (name.kind == SONDE_HANDOVER_FAILED && !it->error) it->error = (int)name.number;
    }
    closedir(d);
    return 0;
}

/* Whether the root waits for process pid: one of its process group and
 * session (a daemon that left them, or a child started in a session of
 * its own, is not waited for: `timeout` and supervisors wait for the
 * group). */
static bool children_waitable(int pid, pid_t root)
{
    pid_t group = getpgid(pid), session = getsid(pid);
    return group >= 0 && session >= 0 && group == getpgid(root) && session == getsid(root);
}

/* How many processes the list has (an os.exec* leaves two stems of one). */
static unsigned children_count_pids(const children_list_t *list)
{
    unsigned seen = 0;
    for (size_t i = 0; i < list->n; i++) {
        bool first = true;
        for (size_t j = 0; j < i && first; j++)
            first = list->items[j].pid != list->items[i].pid;
        seen += first;
    }
    return seen;
}

/* Whether a followed process of the root's group still runs without
 * having handed its profile over, or one the root started has not
 * started its session yet. */
static bool children_waiting(const children_list_t *list, pid_t root, unsigned root_followed)
{
    if (children_count_pids(list) < root_followed) return true;
    for (size_t i = 0; i < list->n; i++) {
        const children_entry_t *it = &list->items[i];
        if (!it->handed && !it->error && !it->service && sonde__collect_alive(it->pid) &&
            children_waitable(it->pid, root))
            return true;
    }
    return false;
}

static uint64_t children_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Waits while a followed process of the root's group runs, until
 * wait_sec passed or a signal asked to stop. */
static void children_wait(const char *dir, const char *root_stem, pid_t root,
                          unsigned root_followed, double wait_sec, children_list_t *list)
{
    uint64_t until = children_now_ns() + (uint64_t)(wait_sec * 1e9);
    while (!children_stop && children_scan(dir, root_stem, list) == 0 &&
           children_waiting(list, root, root_followed) && children_now_ns() < until) {
        struct timespec tick = {0, CHILDREN_POLL_NS};
        nanosleep(&tick, NULL);
    }
}

/* Reads the profile stem handed over and merges it. Returns 0 or -errno;
 * *err says why. */
static int children_load(const char *dir, const char *stem, sonde_profile_t *merged,
                         sonde__collect_parts_t *parts, sonde_profile_t **root_copy, char *err,
                         size_t err_len)
{
    char path[PATH_MAX];
    const char *why = NULL;
    sonde_profile_t one;
    sonde_profile_init(&one);
    int rc = sonde_handover_path(path, sizeof path, dir, stem, SONDE_HANDOVER_PROFILE, 0);
    if (rc == 0) rc = sonde_handover_take(merged, path, &one, &why);
    if (rc == 0) {
        size_t at = parts->n;
        sonde__collect_parts_keep(parts, &one);
        if (root_copy && parts->n > at) *root_copy = &parts->items[at];
    }
    snprintf(err, err_len, "%s", why ? why : rc < 0 ? strerror(-rc) : "");
    return rc;
}

/* What is missing, counted while merging. */
typedef struct children_missing {
    unsigned running, ended, failed, unreadable, vanished, not_followed;
    int running_pid, ended_pid, failed_errno;
} children_missing_t;

static void children_part(sonde_buf_t *line, bool *first, unsigned count, const char *text)
{
    if (!count) return;
    sonde_buf_printf(line, "%s%u %s", *first ? ": " : ", ", count, text);
    *first = false;
}

/* The one line saying which processes are missing and why. */
static void children_say(const children_missing_t *m, unsigned total, unsigned removed,
                         int dir_errno, const char *dir)
{
    unsigned missing =
        m->running + m->ended + m->failed + m->unreadable + m->vanished + m->not_followed;
    if (!missing) return;
    sonde_buf_t line = SONDE_BUF_INIT;
    char text[512];
    bool first = true;
    sonde_buf_printf(&line, "sonde: %u of the %u processes of the program %s not in the report",
                     missing, total, missing == 1 ? "is" : "are");
    snprintf(text, sizeof text, "still running at its end (pid %d%s)", m->running_pid,
             m->running > 1 ? ", ..." : "");
    children_part(&line, &first, m->running, text);
    snprintf(text, sizeof text, "ended before handing its profile over (killed? pid %d%s)",
             m->ended_pid, m->ended > 1 ? ", ..." : "");
    children_part(&line, &first, m->ended, text);
    snprintf(text, sizeof text, "could not write its profile (%s)", strerror(m->failed_errno));
    children_part(&line, &first, m->failed, text);
    children_part(&line, &first, m->unreadable, "wrote a profile that cannot be read");
    snprintf(text, sizeof text,
             "left no profile: the program removed the directory of the profiles (%s)", dir);
    children_part(&line, &first, m->vanished, text);
    snprintf(text, sizeof text, "could not be followed (no directory for their profiles: %s)",
             strerror(dir_errno ? dir_errno : ENOENT));
    children_part(&line, &first, m->not_followed, text);
    sonde_buf_putc(&line, '\n');
    if (!sonde_buf_error(&line)) (void)sonde_write_fd(STDERR_FILENO, line.data, line.len);
    sonde_buf_free(&line);
}

/* Reads one whole number argument. */
static bool children_number(const char *text, long max, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < 0 || v > max) return false;
    *out = v;
    return true;
}

int sonde_collect_children_main(int argc, char **argv, sonde_compress_fn compress)
{
    long not_followed = 0, removed = 0, dir_errno = 0, root_pid = 0, root_followed = 0;
    if (argc != 10 || !children_number(argv[5], INT_MAX, &not_followed) ||
        !children_number(argv[6], INT_MAX, &removed) ||
        !children_number(argv[7], 4095, &dir_errno) ||
        !children_number(argv[8], INT_MAX, &root_pid) ||
        !children_number(argv[9], INT_MAX, &root_followed)) {
        fputs("sonde: _children is sonde's own command (the end of `sonde run`)\n", stderr);
        return 2;
    }
    const char *dir = argv[0], *root_stem = argv[1], *pkg_dir = argv[4];
    sonde_run_opts_t opts;
    char err[512] = "";
    if (sonde_run_opts_decode(&opts, argv[2], err, sizeof err) < 0) {
        fprintf(stderr, "sonde: cannot read the run's options: %s\n", err);
        sonde_run_opts_free(&opts);
        return 2;
    }
    opts.outfile = argv[3][0] ? argv[3] : NULL;
    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_handler = children_on_signal;
    sigemptyset(&act.sa_mask);
    sigaction(SIGTERM, &act, NULL);
    sigaction(SIGINT, &act, NULL);
    sigaction(SIGHUP, &act, NULL);
    signal(SIGPIPE, SIG_IGN); /* the report to a closed pipe fails with EPIPE */

    children_list_t list = {0};
    children_wait(dir, root_stem, (pid_t)root_pid, (unsigned)root_followed, opts.child_wait_sec,
                  &list);

    sonde_profile_t merged;
    sonde_profile_init(&merged);
    sonde__collect_parts_t parts = {0};
    sonde_profile_t *root = NULL;
    int status = 0;
    if (children_load(dir, root_stem, &merged, &parts, &root, err, sizeof err) < 0 || !root) {
        fprintf(stderr, "sonde: the program's own profile cannot be read back: %s\n",
                err[0] ? err : strerror(errno));
        status = 2;
        goto done;
    }
    bool exit_known = root->exit_known;
    int exit_status = root->exit_status;
    char exit_exception[64];
    snprintf(exit_exception, sizeof exit_exception, "%s", root->exit_exception);

    children_missing_t m = {.not_followed = (unsigned)not_followed};
    (void)children_scan(dir, root_stem, &list);
    unsigned seen = children_count_pids(&list);
    for (size_t i = 0; i < list.n; i++) {
        children_entry_t *it = &list.items[i];
        if (it->handed) {
            err[0] = 0;
            if (children_load(dir, it->stem, &merged, &parts, NULL, err, sizeof err) < 0) {
                fprintf(stderr, "sonde: the profile of process %d is left out: %s\n", it->pid,
                        err[0] ? err : strerror(errno));
                m.unreadable++;
            }
        } else if (it->service) {
            /* ends after the program: nothing of its own to miss */
        } else if (it->error) {
            if (!m.failed) m.failed_errno = it->error;
            m.failed++;
        } else if (sonde__collect_alive(it->pid)) {
            if (!m.running) m.running_pid = it->pid;
            m.running++;
        } else {
            if (!m.ended) m.ended_pid = it->pid;
            m.ended++;
        }
    }
    unsigned expected = 0;
    for (size_t i = 0; i < parts.n; i++)
        for (size_t k = 0; k < parts.items[i].n_processes; k++)
            expected += (unsigned)parts.items[i].processes[k].followed;
    /* processes started as followed but with no trace here: when the
     * program removed the directory, theirs went with it; otherwise they
     * were killed before their profiling started (a Pool's terminate()
     * right after starting them), before any of the program's code ran
     * there: no profile was lost */
    if (expected > seen && removed) m.vanished = expected - seen;
    unsigned total = 1 + (expected > seen ? expected : seen) + m.not_followed;
    merged.partial.processes_lost +=
        m.ended + m.failed + m.unreadable + m.vanished + m.not_followed;
    merged.partial.processes_running += m.running;
    /* how the program ended, never a child's (a Pool's workers end by
     * SIGTERM): as the root's profile saw it */
    merged.exit_known = false;
    merged.exit_status = 0;
    merged.exit_exception[0] = 0;
    if (exit_known) sonde_profile_set_exit(&merged, exit_status, exit_exception);
    children_say(&m, total, (unsigned)removed, (int)dir_errno, dir);
    (void)sonde__collect_report(&merged, &parts, &opts, pkg_dir, 0, compress);
done:
    sonde__collect_parts_free(&parts);
    sonde_profile_free(&merged);
    free(list.items);
    if (status == 0) sonde__collect_remove_dir(dir);
    sonde_run_opts_free(&opts);
    if (fcntl(3, F_GETFD) >= 0) {
        unsigned char result = (unsigned char)status;
        (void)sonde_write_fd(3, &result, 1);
    }
    return status;
}
