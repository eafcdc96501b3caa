/* collect.c — the collector of `sonde run` (see collect.h).
 *
 * Owns: the process that stays the program's parent when `sonde run`
 * follows the program's Python processes (the default): its private
 * directory, where every profiled process leaves "<pid>-<ns>.live" at its
 * start and "<pid>-<ns>.json" (its profile, written atomically) at its end
 * (src/ext/session.c); signal forwarding; the wait for the program and for
 * the processes it left running; the merge of the profiles handed over
 * (src/model/merge.c, read back with src/report/json_load.c) into one
 * report; and ending the way the program ended.
 *
 * Signals: SIGCHLD and the forwarded signals are blocked and taken with
 * sigtimedwait in the loop; no handler runs. A signal sent to this process
 * alone (kill, a supervisor, `timeout`) is sent on to the program; one the
 * terminal sends to the whole foreground group (Ctrl-C) reached the
 * program already and is not sent twice. This process is a child
 * subreaper, so that the processes the program leaves behind become its
 * children and it can tell whether any Python one still runs.
 *
 * Continuous profiles (`sonde run --period`): the directory also holds
 * "period", a word this process maps and every profiled process maps
 * read-only (session.c): the number of periods ended. At each period's
 * end the loop counts one more; each process's sampler thread sees it at
 * its next tick and hands what it sampled since the last period over as
 * "<stem>.p<count>.json". Once every running process has (or a short wait
 * has passed: a late one's profile goes into the next period), the loop
 * merges those and the final profiles of processes that ended, and hands
 * the merge to the command (sonde_collect_out_t.submit), which encodes and
 * sends it; files are deleted once read, so that nothing grows with time.
 *
 * Runs in the `sonde` process only, ordinary code (collect_on_cancel is a
 * signal handler, installed only while the last periods are sent).
 */
#include "collect.h"
#include "collect_internal.h"

#include "../core/buf.h"
#include "../core/file.h"
#include "../model/model.h"
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
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define COLLECT_TICK_NS 20000000L             /* the loop's wake-up */
#define COLLECT_MAX_PROFILE ((size_t)1 << 30) /* a profile file read back, at most */

/* Signals sent on to the program when sent to this process alone. */
static const int collect_forwarded[] = {SIGTERM, SIGINT,  SIGHUP, SIGQUIT,
                                        SIGUSR1, SIGUSR2, SIGALRM};

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

/* /proc/PID/exe's target into out (NUL-terminated). Returns its length or
 * -1. */
static ssize_t readlink_proc_exe(pid_t pid, char *out, size_t size)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    ssize_t len = readlink(path, out, size - 1);
    if (len <= 0) return -1;
    out[len] = 0;
    return len;
}

/* Whether process pid runs (not a zombie). */
bool sonde__collect_alive(int pid)
{
    char path[64], stat[512];
    if (pid <= 0 || kill(pid, 0) != 0) return false;
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "re");
    if (!f) return false;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = 0;
    const char *close = strrchr(stat, ')');
    return close && close[1] == ' ' && close[2] != 'Z' && close[2] != 'X';
}

/* Whether a child of this process (the processes the program left behind
 * become ours) runs the interpreter `exe` (a real path): one forked an
 * instant before the program ended may not have said it is profiled yet. */
static bool collect_python_child(const char *exe)
{
    DIR *d = opendir("/proc");
    if (!d) return false;
    bool found = false;
    pid_t me = getpid();
    struct dirent *e;
    while (!found && (e = readdir(d))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0) continue;
        char path[64], stat[512], link[PATH_MAX];
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        FILE *f = fopen(path, "re");
        if (!f) continue;
        size_t n = fread(stat, 1, sizeof stat - 1, f);
        fclose(f);
        stat[n] = 0;
        const char *close = strrchr(stat, ')');
        int ppid = 0;
        char state = 0;
        if (!close || sscanf(close + 1, " %c %d", &state, &ppid) != 2 || ppid != me || state == 'Z')
            continue;
        snprintf(path, sizeof path, "/proc/%ld/exe", pid);
        ssize_t len = readlink(path, link, sizeof link - 1);
        if (len <= 0) continue;
        link[len] = 0;
        found = strcmp(link, exe) == 0;
    }
    closedir(d);
    return found;
}

/* The profiles of the directory: names of "<stem>.live" files. */
typedef struct collect_entry {
    char stem[64];
    int pid;
    bool handed; /* "<stem>.json" is there */
} collect_entry_t;

typedef struct collect_list {
    collect_entry_t *items;
    size_t n, cap;
} collect_list_t;

/* Lists the processes the directory knows: every "<stem>.live", whether
 * its "<stem>.json" is there. Returns 0 or -ENOMEM. */
static int collect_list(const char *dirpath, collect_list_t *list)
{
    list->n = 0;
    DIR *d = opendir(dirpath);
    if (!d) return 0;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || len - 5 >= sizeof list->items[0].stem ||
            strcmp(e->d_name + len - 5, ".live") != 0)
            continue;
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
        memcpy(it->stem, e->d_name, len - 5);
        it->stem[len - 5] = 0;
        it->pid = atoi(it->stem);
        char json[PATH_MAX];
        snprintf(json, sizeof json, "%s/%s.json", dirpath, it->stem);
        it->handed = access(json, F_OK) == 0;
    }
    closedir(d);
    return rc;
}

/* Whether to wait on: a profiled process that has not handed its profile
 * over and still runs, or a Python child not yet known. */
static bool collect_waiting(const char *dirpath, const char *exe, collect_list_t *list)
{
    if (collect_list(dirpath, list) < 0) return false;
    for (size_t i = 0; i < list->n; i++)
        if (!list->items[i].handed && sonde__collect_alive(list->items[i].pid)) return true;
    /* no child of ours left (the usual end): no need to look through /proc */
    siginfo_t info;
    memset(&info, 0, sizeof info);
    if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0) return false;
    return collect_python_child(exe);
}

/* Root first, then by pid and stem (the order of the processes table). */
static int collect_root_pid;
static int collect_cmp(const void *a, const void *b)
{
    const collect_entry_t *x = a, *y = b;
    bool rx = x->pid == collect_root_pid, ry = y->pid == collect_root_pid;
    if (rx != ry) return rx ? -1 : 1;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    return strcmp(x->stem, y->stem);
}

/* What the program itself handed over: its exit as its profile saw it,
 * and the generation of its images (os.exec* of the interpreter) that did. */
typedef struct collect_root {
    bool exit_known;
    int exit_status;
    char exit_exception[64];
    int first_gen; /* the lowest generation that handed over; -1 none */
} collect_root_t;

/* The generation in a stem "<pid>-<ns>-g<gen>" (0 without one). */
static int collect_stem_gen(const char *stem)
{
    const char *g = strstr(stem, "-g");
    return g ? atoi(g + 2) : 0;
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

/* Reads every profile handed over into merged. Returns how many were
 * read (0: nothing to report); *lost counts processes that handed nothing
 * over (killed, or still running); a profile that cannot be read is
 * counted too, with one line saying why. */
static int collect_merge(const char *dirpath, collect_list_t *list, sonde_profile_t *merged,
                         sonde__collect_parts_t *parts, uint64_t *lost, collect_root_t *root)
{
    int n = 0;
    *lost = 0;
    root->exit_known = false;
    root->first_gen = -1;
    if (collect_list(dirpath, list) < 0) return 0;
    if (list->n > 1) qsort(list->items, list->n, sizeof *list->items, collect_cmp);
    sonde_buf_t path = SONDE_BUF_INIT, text = SONDE_BUF_INIT;
    for (size_t i = 0; i < list->n; i++) {
        collect_entry_t *it = &list->items[i];
        if (!it->handed) {
            (*lost)++;
            continue;
        }
        sonde_buf_reset(&path);
        sonde_buf_reset(&text);
        sonde_buf_printf(&path, "%s/%s.json", dirpath, it->stem);
        sonde_profile_t one;
        sonde_profile_init(&one);
        char err[256] = "";
        int rc = sonde_buf_error(&path)
                     ? -ENOMEM
                     : sonde_buf_read_file(&text, path.data, COLLECT_MAX_PROFILE, NULL);
        if (rc == 0) rc = sonde_profile_load_json(&one, text.data, text.len, err, sizeof err);
        if (rc == 0 && it->pid == collect_root_pid) {
            int gen = collect_stem_gen(it->stem);
            if (root->first_gen < 0 || gen < root->first_gen) root->first_gen = gen;
            if (one.exit_known) {
                root->exit_known = true;
                root->exit_status = one.exit_status;
                snprintf(root->exit_exception, sizeof root->exit_exception, "%s",
                         one.exit_exception);
            }
        }
        if (rc == 0) rc = sonde_profile_merge(merged, &one);
        if (rc < 0) {
            fprintf(stderr, "sonde: the profile of process %d is left out: %s\n", it->pid,
                    err[0] ? err : strerror(-rc));
            (*lost)++;
            sonde_profile_free(&one);
        } else {
            n++;
            sonde__collect_parts_keep(parts, &one);
        }
    }
    sonde_buf_free(&path);
    sonde_buf_free(&text);
    return n;
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
} collect_periods_t;

static uint64_t collect_unix_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Makes "period" in the directory and maps it. Returns 0 or -errno. */
static int collect_periods_open(const char *dirpath, collect_periods_t *cp)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/period", dirpath);
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

/* Reads a profile file into merged. Returns 0, or -errno after one line
 * saying why it is left out. */
static int collect_load_into(const char *path, int pid, sonde_profile_t *merged,
                             sonde__collect_parts_t *parts)
{
    sonde_buf_t text = SONDE_BUF_INIT;
    sonde_profile_t one;
    char err[256] = "";
    sonde_profile_init(&one);
    int rc = sonde_buf_read_file(&text, path, COLLECT_MAX_PROFILE, NULL);
    if (rc == 0) rc = sonde_profile_load_json(&one, text.data, text.len, err, sizeof err);
    if (rc == 0) rc = sonde_profile_merge(merged, &one);
    if (rc < 0) {
        fprintf(stderr, "sonde: a profile of process %d is left out: %s\n", pid,
                err[0] ? err : strerror(-rc));
        sonde_profile_free(&one);
    } else {
        sonde__collect_parts_keep(parts, &one);
    }
    sonde_buf_free(&text);
    return rc;
}

/* "<stem>.p<count>.json": the stem (into stem) and the count. */
static bool collect_period_name(const char *name, char *stem, size_t stem_len, uint64_t *count)
{
    const char *p = strstr(name, ".p");
    size_t len = strlen(name);
    if (!p || p == name || (size_t)(p - name) >= stem_len || len < 7 ||
        strcmp(name + len - 5, ".json") != 0)
        return false;
    char *end = NULL;
    errno = 0;
    unsigned long long n = strtoull(p + 2, &end, 10);
    if (end == p + 2 || errno || strcmp(end, ".json") != 0) return false;
    memcpy(stem, name, (size_t)(p - name));
    stem[p - name] = 0;
    *count = n;
    return true;
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
        snprintf(path, sizeof path, "%s/%s.live", dirpath, it->stem);
        /* a process that started after the period ended has none of it */
        if (stat(path, &st) == 0 &&
            (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec > until_ns)
            continue;
        snprintf(path, sizeof path, "%s/%s.p%llu.json", dirpath, it->stem,
                 (unsigned long long)count);
        if (!it->handed && access(path, F_OK) != 0 && sonde__collect_alive(it->pid)) return false;
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
    char path[PATH_MAX], stem[64];
    DIR *d = opendir(dirpath);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            uint64_t count = 0;
            if (!collect_period_name(e->d_name, stem, sizeof stem, &count)) continue;
            if (!final && count > cp->count) continue;
            snprintf(path, sizeof path, "%s/%s", dirpath, e->d_name);
            (void)collect_load_into(path, atoi(stem), &merged, &parts);
            unlink(path);
            pieces++;
        }
        closedir(d);
    }
    if (collect_list(dirpath, list) == 0) {
        for (size_t i = 0; i < list->n; i++) {
            collect_entry_t *it = &list->items[i];
            char live[PATH_MAX];
            snprintf(live, sizeof live, "%s/%s.live", dirpath, it->stem);
            if (it->handed) {
                snprintf(path, sizeof path, "%s/%s.json", dirpath, it->stem);
                if (collect_load_into(path, it->pid, &merged, &parts) < 0) lost++;
                unlink(path);
                unlink(live);
                pieces++;
            } else if (final || !sonde__collect_alive(it->pid)) {
                /* ended without a profile (killed), or still running at
                 * the end: its file is read again after a last look */
                snprintf(path, sizeof path, "%s/%s.json", dirpath, it->stem);
                if (access(path, F_OK) == 0) {
                    if (collect_load_into(path, it->pid, &merged, &parts) < 0) lost++;
                    unlink(path);
                    pieces++;
                } else {
                    lost++;
                }
                unlink(live);
            }
        }
    }
    merged.partial.processes_lost += lost;
    merged.elapsed_sec = until_ns > from_ns ? (double)(until_ns - from_ns) / 1e9 : 0;
    merged.exit_known = false;
    merged.has_memory = merged.has_memory || cp->memory;
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
    if (cp->out->finish) cp->out->finish(cp->out->arg, &collect_cancel);
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

/* Ends this process the way the program's wait status says. */
static int collect_end_like(int status, const sigset_t *set, const sigset_t *old_mask)
{
    /* signals that came while the report was written were for the
     * program, which has ended: they must not end this process instead */
    struct timespec zero = {0, 0};
    while (sigtimedwait(set, NULL, &zero) > 0) {
    }
    for (size_t i = 0; i < SONDE_ARRAY_LEN(collect_forwarded); i++)
        signal(collect_forwarded[i], SIG_IGN);
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (!WIFSIGNALED(status)) return 1;
    int sig = WTERMSIG(status);
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core); /* the program dumped its own, if any */
    signal(sig, SIG_DFL);
    fflush(NULL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    sigprocmask(SIG_SETMASK, old_mask, NULL);
    sigprocmask(SIG_UNBLOCK, &one, NULL);
    raise(sig);
    return 128 + sig;
}

/* A signal taken by the loop: sent on to the program when it was sent to
 * this process alone (by a process other than the program). */
static void collect_forward(int sig, const siginfo_t *info, pid_t root, bool root_done)
{
    bool sent = info->si_code == SI_USER || info->si_code == SI_QUEUE || info->si_code == SI_TKILL;
    if (!sent || info->si_pid == root || root_done) return;
    kill(root, sig);
}

int sonde_collect_run(const char *python, const char *pkg_dir, const sonde_program_t *prog,
                      const char *options, bool preload_shim, const sonde_run_opts_t *opts,
                      const sonde_collect_out_t *out, char *err, size_t err_len)
{
    sonde_buf_t dir = SONDE_BUF_INIT;
    char *made = NULL;
    int rc = sonde_prim_private_dir(&made);
    if (rc == 0) {
        sonde_buf_puts(&dir, made);
        if (sonde_buf_error(&dir)) {
            sonde__collect_remove_dir(made);
            rc = -ENOMEM;
        }
        free(made);
    }
    if (rc < 0) {
        snprintf(err, err_len,
                 "cannot make a directory for the profiles of the program's processes: %s",
                 strerror(-rc));
        sonde_buf_free(&dir);
        return rc;
    }
    char exe[PATH_MAX];
    if (!realpath(python, exe)) snprintf(exe, sizeof exe, "%s", python);

    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    for (size_t i = 0; i < SONDE_ARRAY_LEN(collect_forwarded); i++)
        sigaddset(&set, collect_forwarded[i]);
    sigprocmask(SIG_BLOCK, &set, &old);
    collect_periods_t periods = {0};
    if (out && out->period_sec > 0) {
        periods.out = out;
        periods.memory = opts->memory;
        rc = collect_periods_open(dir.data, &periods);
        if (rc == 0 && out->start && out->start(out->arg) != 0) {
            err[0] = 0;
            rc = -ECANCELED;
        } else if (rc < 0) {
            snprintf(err, err_len, "cannot make the period file of the collector: %s",
                     strerror(-rc));
        }
        if (rc < 0) {
            if (periods.word) munmap((void *)periods.word, sizeof(uint64_t));
            sigprocmask(SIG_SETMASK, &old, NULL);
            sonde__collect_remove_dir(dir.data);
            sonde_buf_free(&dir);
            return rc;
        }
    }
    (void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    fflush(NULL);
    pid_t root = fork();
    if (root < 0) {
        rc = -errno;
        if (periods.out) {
            collect_list_t none = {0};
            collect_periods_end(dir.data, &periods, &none);
            free(none.items);
        }
        sigprocmask(SIG_SETMASK, &old, NULL);
        sonde__collect_remove_dir(dir.data);
        sonde_buf_free(&dir);
        snprintf(err, err_len, "cannot start the program: %s", strerror(-rc));
        return rc;
    }
    if (root == 0) {
        /* killed with the collector (kill -9 of `sonde run` ended the
         * program when both were one process) */
        (void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (getppid() == 1) _exit(127);
        sigprocmask(SIG_SETMASK, &old, NULL);
        char why[512] = "";
        if (setenv(SONDE_ENV_COLLECT, dir.data, 1) != 0)
            snprintf(why, sizeof why, "cannot set the environment: %s", strerror(errno));
        else
            sonde_launch_exec(python, pkg_dir, "run", prog, options, preload_shim, why, sizeof why);
        fprintf(stderr, "sonde: %s\n", why);
        _exit(127);
    }
    signal(SIGPIPE, SIG_IGN); /* the report to a closed pipe fails with EPIPE */
    /* the program's standard input is its own: a writer into it sees the
     * end when the program closes it */
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull >= 0) {
        if (devnull != STDIN_FILENO) {
            dup2(devnull, STDIN_FILENO);
            close(devnull);
        }
    }

    bool root_done = false;
    int root_status = 0;
    uint64_t root_end = 0;
    collect_list_t list = {0};
    for (;;) {
        struct timespec tick = {0,
                                collect_periods_sleep(&periods, collect_now_ns(), COLLECT_TICK_NS)};
        siginfo_t info;
        int sig = sigtimedwait(&set, &info, &tick);
        if (sig > 0 && sig != SIGCHLD) {
            if (root_done && (sig == SIGINT || sig == SIGTERM || sig == SIGHUP))
                root_end = 0; /* asked to stop waiting: report now */
            else
                collect_forward(sig, &info, root, root_done);
        }
        int status;
        pid_t w;
        while ((w = waitpid(-1, &status, WNOHANG)) > 0) {
            if (w == root) {
                root_done = true;
                root_status = status;
                root_end = collect_now_ns();
            }
        }
        if (w < 0 && errno == ECHILD && !root_done) { /* cannot be: the program is ours */
            root_done = true;
            root_end = collect_now_ns();
        }
        collect_periods_tick(dir.data, &periods, &list, collect_now_ns());
        if (!root_done) {
            /* the interpreter's real file, once the program runs it (a
             * pyenv shim execs it in turn): a child forked an instant
             * before the end is recognised by it */
            char link[PATH_MAX], self[PATH_MAX];
            ssize_t len = readlink_proc_exe(root, link, sizeof link);
            ssize_t self_len = readlink_proc_exe(getpid(), self, sizeof self);
            if (len > 0 && (self_len <= 0 || strcmp(link, self) != 0))
                snprintf(exe, sizeof exe, "%s", link);
            continue;
        }
        uint64_t now = collect_now_ns();
        if (root_end == 0 || now - root_end >= SONDE_COLLECT_GRACE_NS) break;
        if (!collect_waiting(dir.data, exe, &list)) break;
    }

    sonde_profile_t merged;
    sonde_profile_init(&merged);
    sonde__collect_parts_t parts = {0};
    uint64_t lost = 0;
    collect_root_pid = (int)root;
    collect_root_t from_root;
    if (periods.out) {
        collect_periods_end(dir.data, &periods, &list);
    } else if (collect_merge(dir.data, &list, &merged, &parts, &lost, &from_root) > 0) {
        merged.partial.processes_lost += lost;
        /* how the program ended, never a child (a Pool's workers end by
         * SIGTERM): as its profile saw it, else its wait status */
        merged.exit_known = false;
        merged.exit_status = 0;
        merged.exit_exception[0] = 0;
        if (from_root.exit_known) {
            sonde_profile_set_exit(&merged, from_root.exit_status, from_root.exit_exception);
        } else if (WIFEXITED(root_status) && WEXITSTATUS(root_status) != 0) {
            sonde_profile_set_exit(&merged, WEXITSTATUS(root_status), "");
        } else if (WIFSIGNALED(root_status)) {
            char name[32];
            const char *abbrev = sigabbrev_np(WTERMSIG(root_status));
            snprintf(name, sizeof name, "SIG%s", abbrev ? abbrev : "?");
            sonde_profile_set_exit(&merged, 128 + WTERMSIG(root_status), name);
        }
        (void)sonde__collect_report(&merged, &parts, opts, pkg_dir,
                                    from_root.first_gen > 0 ? from_root.first_gen : 0,
                                    out ? out->compress : NULL);
    }
    sonde__collect_parts_free(&parts);
    sonde_profile_free(&merged);
    free(list.items);
    sonde__collect_remove_dir(dir.data);
    sonde_buf_free(&dir);
    return collect_end_like(root_status, &set, &old);
}
