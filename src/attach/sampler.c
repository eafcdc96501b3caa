/* sampler.c — the attach sampling loop: rate, duration, stop, several processes.
 *
 * Owns: sonde_attach_t (attach.h): the processes being sampled (targets),
 * the processes waiting to become Python (pending: the child of `sonde
 * record` before its interpreter is up, descendants found with
 * --subprocesses, a target that exec'd), and the loop that ticks every
 * target at the requested rate (±25 % jitter, so that sampling never locks
 * onto a periodic pattern of the program) until the stop flag, the
 * duration or the end of every process. Called by the CLI
 * (src/cli/attach.c) on its main thread. The stop flag is set by the
 * CLI's SIGINT handler; the loop only reads it (clock_nanosleep returns
 * early with EINTR when the signal arrives). No signal handler here.
 */
#include "attach.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SAMPLER_PROGRESS_NS (250 * 1000 * 1000ull) /* progress callback period */
#define SAMPLER_POLL_NS (100 * 1000 * 1000ull)     /* child discovery period */
#define SAMPLER_EAGER_NS                                                                           \
    (600 * 1000 * 1000ull)                          /* a new pending process is                    \
                                                       tried every tick this long */
#define SAMPLER_OPEN_RETRIES 5                      /* attach: retries of a refused layout */
#define SAMPLER_OPEN_RETRY_NS (20 * 1000 * 1000ull) /* apart */
#define SAMPLER_SETTLE_NS (500 * 1000 * 1000ull)    /* a refusal must last this long */
#define SAMPLER_GIVE_UP_NS                                                                         \
    (3 *                                                                                           \
     SONDE_NS_PER_SEC) /* not Python after this long                                           \
                              (same executable): stop trying */
#define SAMPLER_FAIL_STREAK                                                                        \
    5                           /* failed thread lists before a                                    \
                                   target is reopened (exec) */
#define SAMPLER_MAX_PROCS 65536 /* processes scanned per poll */

struct sonde_apending {
    pid_t pid;
    sonde_ns_t first_seen_ns;
    char exe[512]; /* executable when last tried ("" unknown) */
    bool given_up; /* not Python: tried again only after an exec */
    bool root;
};

void sonde_attach_opts_default(sonde_attach_opts_t *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->rate_hz = 100;
}

void sonde_attach_init(sonde_attach_t *a, const sonde_attach_opts_t *opts)
{
    memset(a, 0, sizeof *a);
    a->opts = *opts;
    if (a->opts.rate_hz <= 0) a->opts.rate_hz = 100;
    if (a->opts.rate_hz > SONDE_ATTACH_MAX_RATE) a->opts.rate_hz = SONDE_ATTACH_MAX_RATE;
    a->rng = sonde_prim_monotonic_ns() | 1;
}

void sonde_attach_free(sonde_attach_t *a)
{
    for (size_t i = 0; i < a->n_targets; i++) {
        sonde_atarget_free(a->targets[i]);
        free(a->targets[i]);
    }
    free(a->targets);
    free(a->pending);
    free(a->scan_pids);
    free(a->scan_ppids);
    free(a->lost_pids);
    memset(a, 0, sizeof *a);
}

/* ---- targets and pending processes ---------------------------------------------- */

static int sampler_push_target(sonde_attach_t *a, sonde_atarget_t *t)
{
    if (a->n_targets == a->cap_targets) {
        size_t cap = a->cap_targets ? a->cap_targets * 2 : 4;
        sonde_atarget_t **grown = realloc(a->targets, cap * sizeof *grown);
        if (!grown) return -ENOMEM;
        a->targets = grown;
        a->cap_targets = cap;
    }
    a->targets[a->n_targets++] = t;
    return 0;
}

/* Opens pid as a new target. Returns 0 or -errno; *version gets the
 * version found on -ENOTSUP. */
static int sampler_open(sonde_attach_t *a, pid_t pid, char *version, size_t version_len)
{
    sonde_atarget_t *t = calloc(1, sizeof *t);
    if (!t) return -ENOMEM;
    int rc = sonde_atarget_open(t, pid);
    if (rc == 0 && sonde_codefilter_choose(&t->filter, &a->opts.files) < 0) rc = -ENOMEM;
    if (rc == -ENOTSUP && version && t->proc.version_major)
        snprintf(version, version_len, "%d.%d.%d", t->proc.version_major, t->proc.version_minor,
                 t->proc.version_micro);
    if (rc == 0) rc = sampler_push_target(a, t);
    if (rc != 0) {
        sonde_atarget_free(t);
        free(t);
    }
    return rc;
}

static bool sampler_is_root(const sonde_attach_t *a, pid_t pid)
{
    for (int i = 0; i < a->n_roots; i++)
        if (a->roots[i] == pid) return true;
    return false;
}

int sonde_attach_add_root(sonde_attach_t *a, pid_t pid)
{
    if (a->n_roots >= (int)SONDE_ARRAY_LEN(a->roots)) return -E2BIG;
    a->root_error_version[0] = 0;
    int rc = sampler_open(a, pid, a->root_error_version, sizeof a->root_error_version);
    /* A process caught in the middle of its start fails the layout check
     * for a moment: look again a few times before believing it. */
    for (int retry = 0; rc == -ENOTSUP && retry < SAMPLER_OPEN_RETRIES; retry++) {
        sonde_prim_sleep_ns(SAMPLER_OPEN_RETRY_NS);
        rc = sampler_open(a, pid, a->root_error_version, sizeof a->root_error_version);
    }
    if (rc == 0) a->roots[a->n_roots++] = pid;
    return rc;
}

static bool sampler_known(const sonde_attach_t *a, pid_t pid)
{
    for (size_t i = 0; i < a->n_targets; i++)
        if (a->targets[i]->pid == pid && !a->targets[i]->retired) return true;
    for (size_t i = 0; i < a->n_pending; i++)
        if (a->pending[i].pid == pid) return true;
    return false;
}

static int sampler_add_pending(sonde_attach_t *a, pid_t pid, bool root, sonde_ns_t now)
{
    if (a->n_pending == a->cap_pending) {
        size_t cap = a->cap_pending ? a->cap_pending * 2 : 8;
        struct sonde_apending *grown = realloc(a->pending, cap * sizeof *grown);
        if (!grown) return -ENOMEM;
        a->pending = grown;
        a->cap_pending = cap;
    }
    struct sonde_apending *p = &a->pending[a->n_pending++];
    memset(p, 0, sizeof *p);
    p->pid = pid;
    p->first_seen_ns = now;
    p->root = root;
    return 0;
}

int sonde_attach_add_pending_root(sonde_attach_t *a, pid_t pid)
{
    if (a->n_roots >= (int)SONDE_ARRAY_LEN(a->roots)) return -E2BIG;
    int rc = sampler_add_pending(a, pid, true, sonde_prim_monotonic_ns());
    if (rc == 0) a->roots[a->n_roots++] = pid;
    return rc;
}

/* Counts pid as a process lost to the profile (once per pid): a child
 * not followed, or a Python process that cannot be read. */
static void sampler_lose(sonde_attach_t *a, pid_t pid)
{
    for (size_t i = 0; i < a->n_lost; i++)
        if (a->lost_pids[i] == pid) return;
    if (a->n_lost == a->cap_lost) {
        size_t cap = a->cap_lost ? a->cap_lost * 2 : 16;
        pid_t *grown = realloc(a->lost_pids, cap * sizeof *grown);
        if (!grown) {
            a->partial.processes_lost++; /* counted, perhaps twice */
            return;
        }
        a->lost_pids = grown;
        a->cap_lost = cap;
    }
    a->lost_pids[a->n_lost++] = pid;
    a->partial.processes_lost++;
}

/* Tries to open a pending process. Returns true when it is settled (now a
 * target, gone, or a Python that cannot be sampled) and leaves the list. */
static bool sampler_try_pending(sonde_attach_t *a, struct sonde_apending *p, sonde_ns_t now)
{
    char state = 0, exe[sizeof p->exe];
    int rc = sonde_prim_proc_state(p->pid, &state, NULL);
    if (rc == -ESRCH || state == 'Z' || state == 'X') return true;
    if (sonde_prim_proc_exe(p->pid, exe, sizeof exe) != 0) exe[0] = 0;
    bool exec_seen = strcmp(exe, p->exe) != 0;
    if (exec_seen) {
        memcpy(p->exe, exe, sizeof exe);
        p->given_up = false;
        p->first_seen_ns = now;
    }
    if (p->given_up) return false;
    /* Young processes every tick (the interpreter appears within
     * milliseconds of the exec), older ones at the poll period. */
    if (now - p->first_seen_ns > SAMPLER_EAGER_NS && now < a->next_poll_ns && !exec_seen)
        return false;
    char version[32] = "";
    rc = sampler_open(a, p->pid, version, sizeof version);
    if (rc == 0) return true;
    if (rc == -ENOTSUP || rc == -EPERM || rc == -EACCES) {
        /* An interpreter caught in the middle of starting (or of an exec)
         * fails the layout check for a millisecond or so: only a verdict
         * that holds for a while counts. */
        if (now - p->first_seen_ns < SAMPLER_SETTLE_NS) return false;
        if (p->root && !a->root_error) {
            a->root_error = rc;
            snprintf(a->root_error_version, sizeof a->root_error_version, "%s", version);
        }
        if (!p->root) sampler_lose(a, p->pid); /* a root's refusal is an error of its own */
        return true;
    }
    if (rc == -ESRCH) return true;
    if (now - p->first_seen_ns > SAMPLER_GIVE_UP_NS) p->given_up = true;
    return false;
}

static void sampler_pending_tick(sonde_attach_t *a, sonde_ns_t now)
{
    size_t k = 0;
    for (size_t i = 0; i < a->n_pending; i++) {
        struct sonde_apending p = a->pending[i];
        if (!sampler_try_pending(a, &p, now)) a->pending[k++] = p;
    }
    a->n_pending = k;
}

/* Whether a root is still waiting to become Python. (Other pending
 * processes do not keep sampling going once every root and every Python
 * process has ended: a daemon the program left behind would hold it open.) */
static bool sampler_root_pending(const sonde_attach_t *a)
{
    for (size_t i = 0; i < a->n_pending; i++)
        if (a->pending[i].root) return true;
    return false;
}

/* Whether pid is a root or one of the processes followed (family). */
static bool sampler_in_family(const sonde_attach_t *a, pid_t pid)
{
    return sampler_is_root(a, pid) || sampler_known(a, pid);
}

/* Finds descendants of the followed processes (--subprocesses) and adds
 * the new ones to the pending list. */
static void sampler_find_children(sonde_attach_t *a, sonde_ns_t now)
{
    if (!a->scan_pids) {
        a->scan_pids = malloc(SAMPLER_MAX_PROCS * sizeof *a->scan_pids);
        a->scan_ppids = malloc(SAMPLER_MAX_PROCS * sizeof *a->scan_ppids);
        if (!a->scan_pids || !a->scan_ppids) return;
    }
    int n = sonde_prim_proc_list(a->scan_pids, a->scan_ppids, SAMPLER_MAX_PROCS);
    /* Each pass adds the children of what the previous passes found; the
     * depth of a process tree bounds the passes. */
    for (int pass = 0, added = 1; added && pass < 64; pass++) {
        added = 0;
        for (int i = 0; i < n; i++) {
            pid_t pid = a->scan_pids[i];
            if (pid <= 0 || !sampler_in_family(a, a->scan_ppids[i]) || sampler_in_family(a, pid))
                continue;
            if (a->n_targets + a->n_pending >= SONDE_ATTACH_MAX_TARGETS) {
                sampler_lose(a, pid);
                continue;
            }
            if (sampler_add_pending(a, pid, false, now) < 0) return;
            added = 1;
        }
    }
}

/* A target whose thread list keeps failing while it lives has most likely
 * exec'd: stop reading it (its figures stay) and open it afresh. */
static void sampler_retire(sonde_attach_t *a, sonde_atarget_t *t, sonde_ns_t now)
{
    t->retired = true;
    if (!sampler_known(a, t->pid)) sampler_add_pending(a, t->pid, sampler_is_root(a, t->pid), now);
}

/* ---- the loop -------------------------------------------------------------------- */

static sonde_ns_t sampler_next_interval(sonde_attach_t *a, sonde_ns_t interval_ns)
{
    a->rng ^= a->rng << 13;
    a->rng ^= a->rng >> 7;
    a->rng ^= a->rng << 17;
    sonde_ns_t quarter = interval_ns / 4;
    if (quarter == 0) return interval_ns;
    return interval_ns - quarter + a->rng % (2 * quarter + 1);
}

void sonde_attach_period_begin(sonde_attach_t *a, sonde_ns_t now, sonde_ns_t until_ns)
{
    size_t k = 0;
    for (size_t i = 0; i < a->n_targets; i++) {
        sonde_atarget_t *t = a->targets[i];
        if (t->exited || t->retired) {
            sonde_atarget_free(t);
            free(t);
            continue;
        }
        sonde_accum_clear(&t->acc);
        a->targets[k++] = t;
    }
    a->n_targets = k;
    memset(&a->partial, 0, sizeof a->partial);
    a->period_start_ns = now;
    a->period_until_ns = until_ns;
    a->period_ticks0 = a->ticks;
}

void sonde_attach_get_progress(const sonde_attach_t *a, sonde_attach_progress_t *progress)
{
    memset(progress, 0, sizeof *progress);
    progress->samples = a->ticks;
    for (size_t i = 0; i < a->n_targets; i++) {
        progress->errors += a->targets[i]->acc.partial.failed_reads;
        if (!a->targets[i]->exited && !a->targets[i]->retired) progress->processes++;
    }
    sonde_ns_t end = a->stop_ns ? a->stop_ns : sonde_prim_monotonic_ns();
    progress->elapsed_sec = a->start_ns ? (double)(end - a->start_ns) / 1e9 : 0;
}

/* One tick of every live target; watching running threads (Python or
 * native) ends by watch_until, all targets together. Returns the number
 * still alive. */
static int sampler_tick(sonde_attach_t *a, sonde_ns_t now, sonde_ns_t watch_until)
{
    int alive = 0;
    bool counted = false;
    for (size_t i = 0; i < a->n_targets; i++) {
        sonde_atarget_t *t = a->targets[i];
        if (t->exited || t->retired) continue;
        bool baseline = t->last_tick_ns == 0;
        if (sonde_atarget_tick(t, &a->opts, now, watch_until) == -ESRCH) continue;
        if (!baseline) counted = true;
        if (t->fail_streak >= SAMPLER_FAIL_STREAK)
            sampler_retire(a, t, now);
        else
            alive++;
    }
    if (counted) a->ticks++;
    return alive;
}

/* Sleeps until the absolute monotonic time `until` (a signal ends it early). */
static void sampler_sleep_until(sonde_ns_t until)
{
    struct timespec ts = {(time_t)(until / SONDE_NS_PER_SEC), (long)(until % SONDE_NS_PER_SEC)};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

int sonde_attach_run(sonde_attach_t *a, volatile sig_atomic_t *stop,
                     sonde_attach_progress_fn progress, void *arg)
{
    sonde_ns_t interval_ns = (sonde_ns_t)(1e9 / a->opts.rate_hz);
    sonde_ns_t duration_ns = (sonde_ns_t)(a->opts.duration_sec * 1e9);
    sonde_prim_set_timer_slack(interval_ns / 50 > 1000 ? interval_ns / 50 : 1000);
    sonde_ns_t now = sonde_prim_monotonic_ns();
    if (!a->start_ns) a->start_ns = now;
    sonde_ns_t next = now, next_progress = now + SAMPLER_PROGRESS_NS;
    a->next_poll_ns = now;
    a->stop_ns = 0;
    a->period_reached = false;

    for (;;) {
        now = sonde_prim_monotonic_ns();
        if (stop && *stop) {
            a->stopped_by_flag = true;
            break;
        }
        if (duration_ns && now - a->start_ns >= duration_ns) {
            a->duration_reached = true;
            break;
        }
        if (a->period_until_ns && now >= a->period_until_ns) {
            a->period_reached = true;
            break;
        }
        if (now < next) {
            sonde_ns_t until = next;
            if (duration_ns && a->start_ns + duration_ns < until) until = a->start_ns + duration_ns;
            if (a->period_until_ns && a->period_until_ns < until) until = a->period_until_ns;
            sampler_sleep_until(until);
            continue;
        }
        /* The next tick's time is drawn first: the watches of this one end
         * SONDE_ATTACH_WATCH_MARGIN of an interval before it, so that ticks
         * keep their times (and their rate) whatever the threads do. */
        sonde_ns_t following = next + sampler_next_interval(a, interval_ns);
        sonde_ns_t margin = (sonde_ns_t)((double)interval_ns * SONDE_ATTACH_WATCH_MARGIN);
        int alive = sampler_tick(a, now, following > now + margin ? following - margin : 0);
        if (a->n_pending) sampler_pending_tick(a, now);
        if (a->opts.subprocesses && now >= a->next_poll_ns) sampler_find_children(a, now);
        if (now >= a->next_poll_ns) a->next_poll_ns = now + SAMPLER_POLL_NS;
        for (size_t i = 0; i < a->n_targets; i++)
            if (!a->targets[i]->exited && !a->targets[i]->retired &&
                a->targets[i]->last_tick_ns == 0)
                alive++; /* opened just now: ticks from the next round */
        if (alive == 0 && !sampler_root_pending(a)) {
            a->all_exited = true;
            break;
        }
        if (a->root_error && alive == 0 && !a->opts.subprocesses) break;
        if (progress && now >= next_progress) {
            sonde_attach_progress_t p;
            sonde_attach_get_progress(a, &p);
            progress(&p, arg);
            next_progress = now + SAMPLER_PROGRESS_NS;
        }
        next = following;
        now = sonde_prim_monotonic_ns();
        if (next < now) next = now + sampler_next_interval(a, interval_ns) / 2; /* fell behind */
    }
    a->stop_ns = sonde_prim_monotonic_ns();
    return 0;
}
