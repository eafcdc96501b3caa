/* collect.c — the period helper of `sonde run --period` (see collect.h),
 * and the pieces the merge at the program's end shares with it.
 *
 * Owns: `sonde _periods`' loop (sonde_collect_periods): the process the
 * command starts detached before it execs the interpreter (src/cli/run.c;
 * two forks, a session of its own), never the program's parent. It makes
 * the period word in the private directory, which every profiled process
 * maps read-only (src/ext/session.c): the number of periods ended. At each
 * period's end the loop counts one more; each process's sampler thread sees
 * it at its next tick and hands what it sampled since the last period over
 * as that period's piece (the names, the format and the merge are
 * src/handover/'s). Once every running process has (or a short wait has
 * passed: a late one's profile goes into the next period), the loop merges
 * those and the final profiles of processes that ended, and hands the merge
 * to the command (sonde_collect_out_t.submit), which encodes and sends it;
 * files are deleted once read, so that nothing grows with time. It watches
 * the root by its pid and its ENDING marker rather than waiting for a
 * child. Also the list of the directory's live markers, the liveness test
 * and the report writer that children.c's merge uses
 * (collect_internal.h).
 *
 * Runs in the `sonde` process only, ordinary code (collect_on_cancel is a
 * signal handler, installed only while the last periods are sent).
 */
#include "collect.h"
#include "collect_internal.h"

#include "../core/buf.h"
#include "../handover/handover.h"
#include "../model/model.h"
#include "../prim/file.h"
#include "../prim/prim.h"
#include "../report/report.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define COLLECT_TICK_NS 20000000L /* the loop's wake-up */

static uint64_t collect_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Removes the directory and what is in it (files only: nothing else is
 * made there). */
void sonde__collect_remove_dir(const char *dir)
{
    sonde_prim_private_dir_remove(dir);
}

/* Whether process pid runs (not a zombie). */
bool sonde__collect_alive(int pid)
{
    char state = 0;
    if (pid <= 0 || kill(pid, 0) != 0) return false;
    return sonde_prim_proc_state(pid, &state, NULL) == 0 && state != 'Z' && state != 'X';
}

/* The profiled processes of the directory: their live markers. */
typedef struct collect_entry {
    char stem[SONDE_HANDOVER_STEM_MAX];
    int pid;
    bool handed; /* its profile is there */
} collect_entry_t;

typedef struct collect_list {
    collect_entry_t *items;
    size_t n, cap;
} collect_list_t;

/* Lists the processes the directory knows: every live marker, whether its
 * profile is there. Returns 0 or -ENOMEM. */
static int collect_list(const char *dirpath, collect_list_t *list)
{
    list->n = 0;
    DIR *d = opendir(dirpath);
    if (!d) return 0;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d))) {
        sonde_handover_name_t name;
        if (!sonde_handover_parse(e->d_name, &name) || name.kind != SONDE_HANDOVER_LIVE) continue;
        if (list->n == list->cap) {
            size_t cap = list->cap ? list->cap * 2 : 16;
            collect_entry_t *items = realloc(list->items, cap * sizeof *items);
            if (!items) {
                rc = -ENOMEM;
                break;
            }
            list->items = items;
            list->cap = cap;
        }
        collect_entry_t *it = &list->items[list->n++];
        memcpy(it->stem, name.stem, sizeof it->stem);
        it->pid = name.pid;
        it->handed = sonde_handover_has(dirpath, it->stem, SONDE_HANDOVER_PROFILE, 0);
    }
    closedir(d);
    return rc;
}

/* Keeps one (moved in: the caller no longer frees it); on failure frees
 * it (the merge has it anyway; pprof then lacks its per-process samples). */
void sonde__collect_parts_keep(sonde__collect_parts_t *parts, sonde_profile_t *one)
{
    if (parts->n == parts->cap) {
        size_t cap = parts->cap ? parts->cap * 2 : 8;
        sonde_profile_t *items = realloc(parts->items, cap * sizeof *items);
        if (!items) {
            sonde_profile_free(one);
            return;
        }
        parts->items = items;
        parts->cap = cap;
    }
    one->pid = one->n_processes == 1 ? one->processes[0].pid : 0;
    parts->items[parts->n++] = *one;
}

void sonde__collect_parts_free(sonde__collect_parts_t *parts)
{
    for (size_t i = 0; i < parts->n; i++)
        sonde_profile_free(&parts->items[i]);
    free(parts->items);
    memset(parts, 0, sizeof *parts);
}

/* ---- periods ------------------------------------------------------------------------ */

#define COLLECT_PERIOD_WAIT_MIN_NS 20000000ull   /* for the processes' periods, at least */
#define COLLECT_PERIOD_WAIT_MAX_NS 2000000000ull /* ... and at most */

typedef struct collect_periods {
    const sonde_collect_out_t *out; /* NULL: no periods */
    _Atomic uint64_t *word;         /* the shared count of periods ended */
    uint64_t count;                 /* == *word */
    uint64_t period_ns;
    uint64_t from_ns;                     /* the current period's start (unix ns) */
    uint64_t end_mono;                    /* ... and its end (monotonic) */
    bool pending;                         /* period `count` ended: its profiles are awaited */
    uint64_t pending_from, pending_until; /* its span (unix ns) */
    uint64_t wait_until;                  /* monotonic: the wait's end */
    bool memory;                          /* --memory: every period has the memory sample types */
    bool terminated;                      /* the root ended by SIGTERM (its ENDING says so) */
    bool virtual_time;                    /* --virtual-time: every period's time is CPU time */
} collect_periods_t;

static uint64_t collect_unix_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Makes the period word in the directory and maps it. Returns 0 or
 * -errno. */
static int collect_periods_open(const char *dirpath, collect_periods_t *cp)
{
    char path[PATH_MAX];
    int rc = sonde_handover_dir_path(path, sizeof path, dirpath, SONDE_HANDOVER_PERIOD_WORD);
    if (rc < 0) return rc;
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return -errno;
    void *map = MAP_FAILED;
    /* allocated, not only sized: a page of a full file system, mapped and
     * touched, would be SIGBUS */
    int e = posix_fallocate(fd, 0, (off_t)sysconf(_SC_PAGESIZE));
    if (e == 0) {
        map = mmap(NULL, sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        e = errno;
    }
    close(fd);
    if (map == MAP_FAILED) return -e;
    cp->word = map;
    atomic_store(cp->word, 0);
    cp->period_ns = (uint64_t)(cp->out->period_sec * 1e9);
    cp->from_ns = collect_unix_ns();
    cp->end_mono = collect_now_ns() + cp->period_ns;
    return 0;
}

/* Reads the hand-over of process pid, its stem's file of kind (PROFILE,
 * or PERIOD number), into merged and deletes it. Returns 0, or -errno
 * after one line saying why it is left out. */
static int collect_load_into(const char *dirpath, const char *stem, sonde_handover_kind_t kind,
                             uint64_t number, int pid, sonde_profile_t *merged,
                             sonde__collect_parts_t *parts)
{
    char path[PATH_MAX];
    const char *why = NULL;
    sonde_profile_t one;
    sonde_profile_init(&one);
    int rc = sonde_handover_path(path, sizeof path, dirpath, stem, kind, number);
    if (rc == 0) rc = sonde_handover_take(merged, path, &one, &why);
    if (rc < 0)
        fprintf(stderr, "sonde: a profile of process %d is left out: %s\n", pid,
                why ? why : strerror(-rc));
    else
        sonde__collect_parts_keep(parts, &one);
    sonde_handover_unmark(dirpath, stem, kind, number);
    return rc;
}

/* Whether every profiled process still running has handed period `count`
 * over (or its end). */
static bool collect_period_ready(const char *dirpath, uint64_t count, uint64_t until_ns,
                                 collect_list_t *list)
{
    if (collect_list(dirpath, list) < 0) return true;
    for (size_t i = 0; i < list->n; i++) {
        collect_entry_t *it = &list->items[i];
        char path[PATH_MAX];
        struct stat st;
        /* a process that started after the period ended has none of it */
        if (sonde_handover_path(path, sizeof path, dirpath, it->stem, SONDE_HANDOVER_LIVE, 0) ==
                0 &&
            stat(path, &st) == 0 &&
            (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec > until_ns)
            continue;
        if (!it->handed && !sonde_handover_has(dirpath, it->stem, SONDE_HANDOVER_PERIOD, count) &&
            sonde__collect_alive(it->pid))
            return false;
    }
    return true;
}

/* Merges what the processes handed over for the periods up to cp->count
 * (every period file when final) and the final profiles of the processes
 * that ended, deletes those files, and submits the merge as [from_ns,
 * until_ns). A process that ended without a profile is counted lost once;
 * when final, so is one still running, and a final period with nothing in
 * it (every process had ended in the one before) is not submitted. */
static void collect_period_finish(const char *dirpath, collect_periods_t *cp, collect_list_t *list,
                                  uint64_t from_ns, uint64_t until_ns, bool final)
{
    sonde_profile_t merged;
    sonde_profile_init(&merged);
    sonde__collect_parts_t parts = {0};
    uint64_t lost = 0;
    unsigned pieces = 0; /* profiles read */
    DIR *d = opendir(dirpath);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            sonde_handover_name_t name;
            if (!sonde_handover_parse(e->d_name, &name) || name.kind != SONDE_HANDOVER_PERIOD)
                continue;
            if (!final && name.number > cp->count) continue;
            (void)collect_load_into(dirpath, name.stem, SONDE_HANDOVER_PERIOD, name.number,
                                    name.pid, &merged, &parts);
            pieces++;
        }
        closedir(d);
    }
    if (collect_list(dirpath, list) == 0) {
        for (size_t i = 0; i < list->n; i++) {
            collect_entry_t *it = &list->items[i];
            if (it->handed) {
                if (collect_load_into(dirpath, it->stem, SONDE_HANDOVER_PROFILE, 0, it->pid,
                                      &merged, &parts) < 0)
                    lost++;
                sonde_handover_unmark(dirpath, it->stem, SONDE_HANDOVER_LIVE, 0);
                pieces++;
            } else if (final || !sonde__collect_alive(it->pid)) {
                /* ended without a profile (killed), or still running at
                 * the end: its file is read again after a last look */
                if (sonde_handover_has(dirpath, it->stem, SONDE_HANDOVER_PROFILE, 0)) {
                    if (collect_load_into(dirpath, it->stem, SONDE_HANDOVER_PROFILE, 0, it->pid,
                                          &merged, &parts) < 0)
                        lost++;
                    pieces++;
                } else {
                    lost++;
                }
                sonde_handover_unmark(dirpath, it->stem, SONDE_HANDOVER_LIVE, 0);
            }
        }
    }
    merged.partial.processes_lost += lost;
    merged.elapsed_sec = until_ns > from_ns ? (double)(until_ns - from_ns) / 1e9 : 0;
    merged.exit_known = false;
    merged.has_memory = merged.has_memory || cp->memory;
    /* a period no process handed anything over for has the run's types too */
    merged.virtual_time = merged.virtual_time || cp->virtual_time;
    /* the last period, after every process ended, holds nothing: not sent */
    if (!(final && pieces == 0 && lost == 0) && sonde_profile_finish(&merged) == 0)
        (void)cp->out->submit(cp->out->arg, &merged, parts.items, parts.n, from_ns, until_ns);
    sonde__collect_parts_free(&parts);
    sonde_profile_free(&merged);
}

/* The loop's work for periods at monotonic time now: ends the current
 * period when its time came (the count moves on), and finishes the one
 * ended when its profiles are in or the wait is over. */
static void collect_periods_tick(const char *dirpath, collect_periods_t *cp, collect_list_t *list,
                                 uint64_t now)
{
    if (!cp->out) return;
    if (!cp->pending && now >= cp->end_mono) {
        cp->pending_from = cp->from_ns;
        cp->pending_until = collect_unix_ns();
        cp->from_ns = cp->pending_until;
        cp->count++;
        atomic_store(cp->word, cp->count);
        cp->pending = true;
        uint64_t wait = cp->period_ns / 2;
        if (wait < COLLECT_PERIOD_WAIT_MIN_NS) wait = COLLECT_PERIOD_WAIT_MIN_NS;
        if (wait > COLLECT_PERIOD_WAIT_MAX_NS) wait = COLLECT_PERIOD_WAIT_MAX_NS;
        cp->wait_until = now + wait;
        cp->end_mono += cp->period_ns;
        if (cp->end_mono <= now) cp->end_mono = now + cp->period_ns; /* fell behind */
    }
    if (cp->pending && (now >= cp->wait_until ||
                        collect_period_ready(dirpath, cp->count, cp->pending_until, list))) {
        collect_period_finish(dirpath, cp, list, cp->pending_from, cp->pending_until, false);
        cp->pending = false;
    }
}

/* How long the loop may sleep: until the next thing periods need. */
static long collect_periods_sleep(const collect_periods_t *cp, uint64_t now, long tick_ns)
{
    if (!cp->out) return tick_ns;
    uint64_t next = cp->pending ? now + 2000000ull : cp->end_mono; /* poll while waiting */
    if (next <= now) return 1000;
    return next - now < (uint64_t)tick_ns ? (long)(next - now) : tick_ns;
}

static volatile sig_atomic_t collect_cancel;

/* Signal handler (async-signal-safe): a second SIGINT or SIGTERM while
 * the last periods are sent. */
static void collect_on_cancel(int sig)
{
    (void)sig;
    collect_cancel = 1;
}

/* After the program: the period under way (partial) and the one awaited,
 * then the command's finish, with SIGINT and SIGTERM cancelling it. */
static void collect_periods_end(const char *dirpath, collect_periods_t *cp, collect_list_t *list)
{
    if (cp->pending)
        collect_period_finish(dirpath, cp, list, cp->pending_from, cp->pending_until, false);
    cp->pending = false;
    collect_period_finish(dirpath, cp, list, cp->from_ns, collect_unix_ns(), true);
    struct sigaction act, old_int, old_term;
    memset(&act, 0, sizeof act);
    act.sa_handler = collect_on_cancel;
    sigemptyset(&act.sa_mask);
    sigaction(SIGINT, &act, &old_int);
    sigaction(SIGTERM, &act, &old_term);
    sigset_t two;
    sigemptyset(&two);
    sigaddset(&two, SIGINT);
    sigaddset(&two, SIGTERM);
    collect_cancel = 0;
    sigprocmask(SIG_UNBLOCK, &two, NULL);
    if (cp->out->finish) cp->out->finish(cp->out->arg, &collect_cancel, cp->terminated);
    sigprocmask(SIG_BLOCK, &two, NULL);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    munmap((void *)cp->word, sizeof(uint64_t));
    cp->word = NULL;
}

/* ---- the report at the end ------------------------------------------------------------ */

/* Writes the merged report as opts asks. Prints a one-line error on
 * failure. */
int sonde__collect_report(sonde_profile_t *prof, const sonde__collect_parts_t *parts,
                          const sonde_run_opts_t *opts, const char *pkg_dir, int gen,
                          sonde_compress_fn compress)
{
    /* The program's image that handed over was the one an os.exec* of the
     * interpreter started: its report goes where the boot said it would
     * (FILE.execN.EXT; the terminal stays the terminal). */
    sonde_buf_t exec_name = SONDE_BUF_INIT;
    const char *outfile = opts->outfile;
    if (outfile && gen > 0 && sonde_launch_exec_name(outfile, gen, &exec_name) == 0)
        outfile = exec_name.data;
    sonde_buf_t viewer = SONDE_BUF_INIT;
    sonde_buf_printf(&viewer, "%s/viewer", pkg_dir);
    sonde_report_ctx_t ctx;
    sonde_report_ctx_init(&ctx, outfile ? -1 : 2);
    ctx.text.cpu_percent_threshold = opts->cpu_percent_threshold;
    ctx.text.all_lines = opts->all_lines;
    ctx.viewer_dir = sonde_buf_error(&viewer) ? NULL : viewer.data;
    ctx.pprof.compress = compress;
    ctx.pprof.parts = parts->n > 1 ? parts->items : NULL;
    ctx.pprof.n_parts = parts->n > 1 ? parts->n : 0;
    const char *what = "write the report";
    int rc = sonde_profile_finish(prof);
    if (rc == 0)
        rc = sonde_report_emit(opts->format ? opts->format : sonde_format_default(), prof, &ctx,
                               outfile, 2, &what);
    if (rc < 0)
        fprintf(stderr, "sonde: cannot %s%s%s: %s\n", what, outfile ? " to " : "",
                outfile ? outfile : "", strerror(-rc));
    sonde_buf_free(&viewer);
    sonde_buf_free(&exec_name);
    return rc;
}

/* Whether to wait on: a profiled process that has not handed its profile
 * over and still runs. */
static bool collect_waiting(const char *dirpath, collect_list_t *list)
{
    if (collect_list(dirpath, list) < 0) return false;
    for (size_t i = 0; i < list->n; i++)
        if (!list->items[i].handed && sonde__collect_alive(list->items[i].pid)) return true;
    return false;
}

/* Whether the root has ended: gone, or its end handed over (ENDING). */
static bool collect_root_done(const char *dirpath, pid_t root)
{
    return sonde_handover_dir_has(dirpath, SONDE_HANDOVER_ENDING) ||
           !sonde__collect_alive((int)root);
}

int sonde_collect_periods(const char *dirpath, pid_t root, const sonde_run_opts_t *opts,
                          const sonde_collect_out_t *out, int ready_fd)
{
    collect_periods_t periods = {0};
    periods.out = out;
    periods.memory = opts->memory;
    periods.virtual_time = opts->virtual_time;
    /* SIGINT and SIGTERM wait for the last periods' drain (collect_periods_end) */
    sigset_t two;
    sigemptyset(&two);
    sigaddset(&two, SIGINT);
    sigaddset(&two, SIGTERM);
    sigprocmask(SIG_BLOCK, &two, NULL);
    signal(SIGPIPE, SIG_IGN);
    int rc = collect_periods_open(dirpath, &periods);
    if (rc < 0)
        fprintf(stderr, "sonde: cannot make the period file in %s: %s\n", dirpath, strerror(-rc));
    else if (out->start && out->start(out->arg) != 0)
        rc = -ECANCELED;
    char pid_text[32];
    snprintf(pid_text, sizeof pid_text, "%d\n", (int)getpid());
    if (rc == 0) (void)sonde_handover_dir_mark(dirpath, SONDE_HANDOVER_HELPER, pid_text);
    unsigned char ready = rc == 0 ? 1 : 0;
    (void)sonde_write_fd(ready_fd, &ready, 1);
    close(ready_fd);
    if (rc < 0) {
        if (periods.word) munmap((void *)periods.word, sizeof(uint64_t));
        return 2;
    }

    uint64_t root_end = 0;
    uint64_t grace = (uint64_t)(opts->child_wait_sec * 1e9);
    collect_list_t list = {0};
    for (;;) {
        struct timespec tick = {0,
                                collect_periods_sleep(&periods, collect_now_ns(), COLLECT_TICK_NS)};
        nanosleep(&tick, NULL);
        collect_periods_tick(dirpath, &periods, &list, collect_now_ns());
        if (!root_end && collect_root_done(dirpath, root)) root_end = collect_now_ns();
        if (!root_end) continue;
        /* the processes still running may hand their end over a little
         * after the root's (a Pool's workers) */
        if (collect_now_ns() - root_end >= grace || !collect_waiting(dirpath, &list)) break;
    }
    char why[16] = "";
    (void)sonde_handover_dir_read(dirpath, SONDE_HANDOVER_ENDING, why, sizeof why);
    periods.terminated = strncmp(why, "SIGTERM", 7) == 0;
    collect_periods_end(dirpath, &periods, &list);
    free(list.items);
    (void)sonde_handover_dir_mark(dirpath, SONDE_HANDOVER_DRAINED, NULL);
    /* the root reads DRAINED and ends; then the directory goes */
    for (int i = 0; i < 3000 && sonde__collect_alive((int)root); i++) {
        struct timespec wait = {0, 10000000L};
        nanosleep(&wait, NULL);
    }
    sonde__collect_remove_dir(dirpath);
    return 0;
}
