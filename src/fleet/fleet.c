/* fleet.c — where each period's profile goes: a rotated directory, and a
 * backlog that an upload thread sends to the backend.
 *
 * Owns: sonde_fleet_t (fleet.h). sonde_fleet_submit runs on the caller's
 * sampling thread and only writes files (the period directory, trimmed to
 * --keep; the backlog, trimmed to its count and bytes, oldest dropped
 * first and counted); it never waits for the network. The upload thread
 * sends the backlog oldest first, one request at a time, each with a
 * timeout; while the backend fails it waits (backoff doubling from
 * FLEET_BACKOFF_MIN_NS up to the configured maximum) and the periods wait
 * on disk, so memory does not grow with an outage and the profiled
 * program never waits for it. sonde_fleet_stop sends what is left at once
 * within a deadline. One mutex (lock) serialises the backlog directory
 * between the two threads and protects the stats and flags; the log
 * callback is called without it. No signal handler here; the thread runs
 * with the stop signals blocked so they reach the sampling thread.
 */
#include "fleet.h"
#include "fleet_internal.h"

#include "../prim/prim.h"

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FLEET_BACKOFF_MIN_NS (250 * 1000 * 1000ull)
#define FLEET_BACKOFF_MAX_NS (60 * SONDE_NS_PER_SEC) /* when opts say nothing */
#define FLEET_NS_PER_MS 1000000ull
#define FLEET_DROP_LOG_NS (10 * SONDE_NS_PER_SEC)  /* "backlog full" lines apart */
#define FLEET_CANCEL_POLL_NS (50 * 1000 * 1000ull) /* stop: how often cancel is read */

struct sonde_fleet {
    sonde_fleet_opts_t opts; /* strings borrowed from the caller until stop */
    bool have_dir;
    sonde_spool_t dir; /* --period-dir; used by the submitting thread only */
    bool uploading;
    sonde_spool_t spool;     /* the backlog; listing and trimming under lock */
    struct sonde_upload *up; /* owned; the upload thread's */
    pthread_t thread;
    bool thread_started;
    pthread_mutex_t lock;
    pthread_cond_t wake;       /* a new period, or stop (with lock) */
    bool stopping;             /* protected by lock */
    bool thread_done;          /* protected by lock; the thread's loop ended */
    sonde_ns_t drain_deadline; /* protected by lock; monotonic */
    char in_flight[96];        /* protected by lock; the file being sent ("" none) */
    sonde_fleet_stats_t stats; /* protected by lock */
    sonde_ns_t backoff_max_ns; /* read-only after start */
    sonde_ns_t drop_logged_ns; /* protected by lock; last "backlog full" line */
};

/* ---- helpers ---------------------------------------------------------------------- */

static void fleet_log(const sonde_fleet_t *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void fleet_log(const sonde_fleet_t *f, const char *fmt, ...)
{
    char message[512];
    va_list ap;
    if (!f->opts.log) return;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    f->opts.log(f->opts.log_arg, message);
}

/* Waits on wake until the monotonic time deadline (0: no deadline) or a
 * signal of the condition. Call with lock held. */
static void fleet_wait_unlocked(sonde_fleet_t *f, sonde_ns_t deadline)
{
    if (!deadline) {
        pthread_cond_wait(&f->wake, &f->lock);
        return;
    }
    struct timespec ts = {(time_t)(deadline / SONDE_NS_PER_SEC),
                          (long)(deadline % SONDE_NS_PER_SEC)};
    pthread_cond_timedwait(&f->wake, &f->lock, &ts);
}

/* ---- the upload thread -------------------------------------------------------------- */

/* Sends the oldest period. Returns 1 when one was taken (sent or refused
 * for good), 0 when the backlog is empty, -EAGAIN when the backend failed.
 * Call with lock held; it is released during the request. */
static int fleet_send_one_unlocked(sonde_fleet_t *f, sonde_buf_t *body, bool *down)
{
    sonde_spool_entry_t e;
    char why[256] = "";
    long status = 0;
    int rc = sonde_spool_oldest(&f->spool, &e);
    if (rc <= 0) return rc < 0 ? -EAGAIN : 0;
    snprintf(f->in_flight, sizeof f->in_flight, "%s", e.name);
    pthread_mutex_unlock(&f->lock);

    rc = sonde_spool_read(&f->spool, &e, body);
    if (rc == 0) {
        rc = sonde_upload_post(f->up, body->data, body->len, e.from_ms / 1000, e.until_ms / 1000,
                               &status, why, sizeof why);
        if (rc == -ENOMEM) {
            snprintf(why, sizeof why, "out of memory");
            rc = -EAGAIN; /* the period waits on disk */
        }
    } else if (rc != -ENOENT) { /* ENOENT: trimmed away meanwhile */
        snprintf(why, sizeof why, "cannot read %s/%s: %s", f->spool.dir, e.name, strerror(-rc));
    }
    if (rc != -EAGAIN) sonde_spool_remove(&f->spool, &e);
    if (rc == 0 && *down)
        fleet_log(f, "upload: %s answers again; sending the backlog", f->opts.upload.url);
    if (rc == -EAGAIN && !*down)
        fleet_log(f, "upload to %s failed (%s); keeping periods in %s and retrying with backoff",
                  f->opts.upload.url, why, f->spool.dir);
    if (rc < 0 && rc != -EAGAIN && rc != -ENOENT)
        fleet_log(f, "upload: period %s dropped: %s", e.name, why);
    *down = rc == -EAGAIN;

    pthread_mutex_lock(&f->lock);
    f->in_flight[0] = 0;
    if (rc == 0) f->stats.sent++;
    if (rc == -EAGAIN) f->stats.attempts_failed++;
    if (rc < 0 && rc != -EAGAIN && rc != -ENOENT) f->stats.rejected++;
    return rc == -EAGAIN ? -EAGAIN : 1;
}

static void *fleet_thread(void *arg)
{
    sonde_fleet_t *f = arg;
    sonde_buf_t body = SONDE_BUF_INIT; /* reused: grows to the largest period */
    sonde_ns_t backoff = FLEET_BACKOFF_MIN_NS;
    bool down = false;
    pthread_mutex_lock(&f->lock);
    for (;;) {
        if (f->stopping && sonde_prim_monotonic_ns() >= f->drain_deadline) break;
        int rc = fleet_send_one_unlocked(f, &body, &down);
        if (rc > 0) {
            backoff = FLEET_BACKOFF_MIN_NS;
            continue;
        }
        if (f->stopping) break; /* empty, or the backend still fails */
        if (rc == 0) {
            fleet_wait_unlocked(f, 0);
            continue;
        }
        /* The backend failed: wait (new periods do not cut it short; stop
         * does), then try the oldest again. */
        sonde_ns_t until = sonde_prim_monotonic_ns() + backoff;
        while (!f->stopping && sonde_prim_monotonic_ns() < until)
            fleet_wait_unlocked(f, until);
        backoff = backoff * 2 < f->backoff_max_ns ? backoff * 2 : f->backoff_max_ns;
    }
    f->thread_done = true;
    pthread_cond_broadcast(&f->wake);
    pthread_mutex_unlock(&f->lock);
    sonde_buf_free(&body);
    return NULL;
}

/* ---- the API ------------------------------------------------------------------------- */

static void fleet_free(sonde_fleet_t *f)
{
    sonde_upload_free(f->up);
    pthread_cond_destroy(&f->wake);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

/* Starts the upload thread with the stop signals blocked. Returns 0 or
 * -errno. */
static int fleet_start_thread(sonde_fleet_t *f)
{
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    sigaddset(&block, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    int rc = pthread_create(&f->thread, NULL, fleet_thread, f);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) return -rc;
    f->thread_started = true;
    return 0;
}

int sonde_fleet_start(const sonde_fleet_opts_t *opts, sonde_fleet_t **out, char *err,
                      size_t err_len)
{
    sonde_fleet_t *f = calloc(1, sizeof *f);
    pthread_condattr_t attr;
    int rc = 0;
    *out = NULL;
    if (!f) return -ENOMEM;
    f->opts = *opts;
    pthread_mutex_init(&f->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&f->wake, &attr);
    pthread_condattr_destroy(&attr);
    f->backoff_max_ns = opts->backoff_max_sec > 0 ? (sonde_ns_t)(opts->backoff_max_sec * 1e9)
                                                  : FLEET_BACKOFF_MAX_NS;
    if (f->backoff_max_ns < FLEET_BACKOFF_MIN_NS) f->backoff_max_ns = FLEET_BACKOFF_MIN_NS;
    if (opts->period_dir) {
        rc = sonde_spool_init(&f->dir, opts->period_dir, opts->extension, opts->keep, 0, 0777);
        if (rc < 0) {
            sonde_errf(err, err_len, "cannot use %s for --period-dir: %s", opts->period_dir,
                       strerror(-rc));
            goto error;
        }
        f->have_dir = true;
    }
    if (opts->upload.url) {
        /* Before any thread of ours (libcurl's global set-up is not
         * thread-safe); once per process. */
        if ((rc = sonde__curl_load(err, err_len)) < 0) goto error;
        /* the backlog is sonde's own: private to its user */
        rc = sonde_spool_init(&f->spool, opts->spool_dir, opts->extension, opts->spool_max_files,
                              opts->spool_max_bytes, 0700);
        if (rc < 0) {
            sonde_errf(err, err_len, "cannot use %s for the upload backlog (--spool-dir): %s",
                       opts->spool_dir, strerror(-rc));
            goto error;
        }
        rc = sonde_upload_new(&opts->upload, &f->up);
        if (rc < 0) {
            sonde_errf(err, err_len, "cannot upload to %s: %s", opts->upload.url,
                       rc == -EINVAL ? "not an http:// or https:// URL" : strerror(-rc));
            goto error;
        }
        f->uploading = true;
        rc = sonde_spool_trim(&f->spool, NULL);
        if (rc > 0) f->stats.dropped += (uint64_t)rc;
        rc = fleet_start_thread(f);
        if (rc < 0) {
            sonde_errf(err, err_len, "cannot start the upload thread: %s", strerror(-rc));
            goto error;
        }
    }
    *out = f;
    return 0;
error:
    fleet_free(f);
    return rc;
}

int sonde_fleet_submit(sonde_fleet_t *f, const void *data, size_t len, uint64_t from_ns,
                       uint64_t until_ns)
{
    uint64_t from_ms = from_ns / FLEET_NS_PER_MS, until_ms = until_ns / FLEET_NS_PER_MS;
    int kept = 0, last_error = 0, dropped = 0;
    unsigned backlog = 0;
    uint64_t backlog_bytes = 0, dropped_total = 0;
    if (f->have_dir) {
        int rc = sonde_spool_write(&f->dir, from_ms, until_ms, data, len);
        if (rc == 0) rc = sonde_spool_trim(&f->dir, NULL);
        pthread_mutex_lock(&f->lock);
        if (rc >= 0)
            f->stats.written++;
        else
            f->stats.write_errors++;
        pthread_mutex_unlock(&f->lock);
        if (rc >= 0)
            kept++;
        else
            last_error = rc;
    }
    if (f->uploading) {
        int rc = sonde_spool_write(&f->spool, from_ms, until_ms, data, len);
        pthread_mutex_lock(&f->lock);
        if (rc == 0) {
            kept++;
            dropped = sonde_spool_trim(&f->spool, f->in_flight[0] ? f->in_flight : NULL);
            if (dropped > 0) {
                f->stats.dropped += (uint64_t)dropped;
                dropped_total = f->stats.dropped;
                sonde_spool_count(&f->spool, &backlog, &backlog_bytes);
                /* one line at the first drop, then one per FLEET_DROP_LOG_NS */
                sonde_ns_t now = sonde_prim_monotonic_ns();
                if (f->drop_logged_ns && now - f->drop_logged_ns < FLEET_DROP_LOG_NS)
                    dropped = 0;
                else
                    f->drop_logged_ns = now;
            }
            pthread_cond_signal(&f->wake);
        } else {
            f->stats.write_errors++;
            last_error = rc;
        }
        pthread_mutex_unlock(&f->lock);
        if (dropped > 0)
            fleet_log(f,
                      "upload backlog full (%u periods, %llu bytes in %s): dropping the "
                      "oldest (%llu dropped so far)",
                      backlog, (unsigned long long)backlog_bytes, f->spool.dir,
                      (unsigned long long)dropped_total);
    }
    pthread_mutex_lock(&f->lock);
    f->stats.periods++;
    pthread_mutex_unlock(&f->lock);
    return kept || !last_error ? 0 : last_error;
}

void sonde_fleet_get_stats(sonde_fleet_t *f, sonde_fleet_stats_t *stats)
{
    uint64_t bytes = 0;
    pthread_mutex_lock(&f->lock);
    *stats = f->stats;
    stats->backlog = 0;
    if (f->uploading) sonde_spool_count(&f->spool, &stats->backlog, &bytes);
    pthread_mutex_unlock(&f->lock);
}

void sonde_fleet_stop(sonde_fleet_t *f, double drain_sec, bool hard, volatile sig_atomic_t *cancel,
                      sonde_fleet_stats_t *final_stats)
{
    if (!f) return;
    if (f->thread_started) {
        pthread_mutex_lock(&f->lock);
        f->stopping = true;
        sonde_ns_t now = sonde_prim_monotonic_ns();
        f->drain_deadline = now + (sonde_ns_t)(drain_sec * 1e9);
        sonde_ns_t give_up = f->drain_deadline + (sonde_ns_t)(SONDE_FLEET_HARD_GRACE_SEC * 1e9);
        pthread_cond_broadcast(&f->wake);
        /* Wait for the thread, looking at cancel now and then (a signal
         * handler sets it; it cannot wake a condition variable). */
        while (!f->thread_done) {
            if (cancel && *cancel) {
                f->drain_deadline = 0; /* ends after the request under way */
                pthread_cond_broadcast(&f->wake);
            }
            if (hard && sonde_prim_monotonic_ns() >= give_up) {
                /* a request stuck in the network: its period stays in the
                 * spool; the caller exits with the thread in it */
                pthread_mutex_unlock(&f->lock);
                if (final_stats) sonde_fleet_get_stats(f, final_stats);
                return;
            }
            fleet_wait_unlocked(f, sonde_prim_monotonic_ns() + FLEET_CANCEL_POLL_NS);
        }
        pthread_mutex_unlock(&f->lock);
        pthread_join(f->thread, NULL);
    }
    if (final_stats) sonde_fleet_get_stats(f, final_stats);
    fleet_free(f);
}
