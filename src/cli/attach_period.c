/* attach_period.c — `sonde attach PID --period S`: one profile per period.
 *
 * Owns: the loop that samples one period at a time (the attach sampler
 * returns at the period's end, src/attach/sampler.c), renders the
 * period's profile in the chosen format (pprof once the registry has it,
 * else JSON) and hands the bytes to src/fleet/ (the period directory, the
 * upload backlog and its thread); the reading of the upload's headers
 * (--upload-headers-file or SONDE_UPLOAD_HEADERS, never the command line);
 * the closing line. The accumulators are emptied between periods with
 * their memory kept, so memory stays what the busiest period needed. The
 * stop flag (attach.c's SIGINT/SIGTERM/SIGHUP handler) ends the current
 * period early: that partial period is written and sent like the others.
 * Runs on the command's main thread; the upload runs on fleet.c's thread.
 */
#include "attach_cli.h"

#include "../prim/prim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PERIOD_DRAIN_MAX_SEC 30.0 /* at the end: time given to the backlog */

/* Unix time in nanoseconds. */
static uint64_t period_unix_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * SONDE_NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* The fleet's log: one line on stderr. Called from the upload thread too,
 * so it keeps no state: on a terminal it clears the progress line, which
 * the next progress call writes again. */
static void period_log(void *arg, const char *message)
{
    (void)arg;
    fprintf(stderr, "%ssonde: %s\n", isatty(2) ? "\r\033[K" : "", message);
}

/* The header lines into headers (file, else the environment). Returns 0,
 * or 1 after printing why. */
static int period_headers(const sonde_attach_period_args_t *p, sonde_buf_t *headers)
{
    char err[256] = "";
    const char *from = p->headers_file ? p->headers_file : "SONDE_UPLOAD_HEADERS";
    if (p->headers_file) {
        int rc = sonde_buf_read_file(headers, p->headers_file, SONDE_FLEET_MAX_HEADER_BYTES, NULL);
        if (rc < 0) {
            sonde_cli_error("cannot read --upload-headers-file %s: %s", p->headers_file,
                            rc == -EFBIG ? "more than 8 KiB" : strerror(-rc));
            return 1;
        }
    } else if (getenv("SONDE_UPLOAD_HEADERS")) {
        sonde_buf_puts(headers, getenv("SONDE_UPLOAD_HEADERS"));
    }
    if (sonde_buf_error(headers)) return 1;
    if (sonde_upload_check_headers(headers->data, err, sizeof err) < 0) {
        sonde_cli_error("%s: %s (one 'Name: value' per line)", from, err);
        return 1;
    }
    return 0;
}

int sonde_attach_cli_periods(sonde_attach_t *a, const sonde_attach_args_t *args,
                             volatile sig_atomic_t *stop)
{
    const sonde_attach_period_args_t *p = &args->period;
    sonde_buf_t headers = SONDE_BUF_INIT, name = SONDE_BUF_INIT, body = SONDE_BUF_INIT;
    char spool_dir[4096], err[512] = "";
    sonde_fleet_t *fleet = NULL;
    sonde_fleet_stats_t stats;
    int status = 1, rc = 0;
    sonde_fleet_opts_t fo = {
        .extension = args->format->extensions[0] ? args->format->extensions[0] : ".profile",
        .period_dir = p->period_dir,
        .keep = p->keep,
        .spool_max_files = p->spool_max,
        .spool_max_bytes = p->spool_max_bytes,
        /* no longer than a period (one request per period is the load
         * anyway), and at least a second */
        .backoff_max_sec = p->period_sec < 1    ? 1
                           : p->period_sec > 60 ? 60
                                                : p->period_sec,
        .log = period_log,
    };
    if (p->upload_url) {
        if (period_headers(p, &headers)) goto done;
        if (sonde_upload_app_name(p->app_name ? p->app_name : "python", p->tags, p->n_tags, &name,
                                  err, sizeof err) < 0) {
            sonde_cli_error("%s", err);
            goto done;
        }
        const char *tmp = getenv("TMPDIR");
        if (p->spool_dir)
            snprintf(spool_dir, sizeof spool_dir, "%s", p->spool_dir);
        else
            snprintf(spool_dir, sizeof spool_dir, "%s/sonde-spool-%d", tmp && tmp[0] ? tmp : "/tmp",
                     (int)getpid());
        fo.upload = (sonde_upload_opts_t){
            .url = p->upload_url,
            .name = name.data,
            .format = args->format->name,
            .headers = headers.data,
            .sample_rate = (unsigned)(a->opts.rate_hz + 0.5),
            .timeout_sec = p->upload_timeout,
        };
        fo.spool_dir = spool_dir;
    }
    if (sonde_fleet_start(&fo, &fleet, err, sizeof err) < 0) {
        sonde_cli_error("%s", err);
        goto done;
    }
    fprintf(stderr, "sonde: one %s profile every %g s%s%s%s%s\n", args->format->name, p->period_sec,
            p->period_dir ? " to " : "", p->period_dir ? p->period_dir : "",
            p->upload_url ? ", uploaded to " : "", p->upload_url ? p->upload_url : "");

    sonde_ns_t period_ns = (sonde_ns_t)(p->period_sec * 1e9);
    for (;;) {
        sonde_ns_t mono = sonde_prim_monotonic_ns();
        uint64_t from_ns = period_unix_ns();
        sonde_attach_period_begin(a, mono, mono + period_ns);
        rc = sonde_attach_run(a, stop, sonde_attach_cli_progress, NULL);
        uint64_t until_ns = period_unix_ns();
        if (rc < 0) break;
        sonde_buf_reset(&body);
        rc = sonde_attach_cli_render(a, args->format, &body);
        if (rc == 0)
            rc = sonde_fleet_submit(fleet, body.data ? body.data : "", body.len, from_ns, until_ns);
        if (rc < 0) {
            period_log(NULL, "a period's profile was lost");
            sonde_cli_error("cannot keep the period's profile: %s", strerror(-rc));
            rc = 0; /* the next period may fare better (a full disk) */
        }
        if (!a->period_reached) break; /* stopped, duration, the process ended */
    }
    sonde_attach_cli_progress_end();
    if (a->all_exited)
        fprintf(stderr, "sonde: pid %d exited; its last period is kept\n", (int)args->pid);
    if (rc < 0) {
        sonde_cli_error("sampling failed: %s", strerror(-rc));
        goto done;
    }
    status = 0;
done:
    if (fleet) {
        double drain = 2 * p->upload_timeout;
        sonde_fleet_stats_t now;
        sonde_fleet_get_stats(fleet, &now);
        if (now.backlog)
            fprintf(stderr,
                    "sonde: sending the %u period%s waiting (up to %.0f s; Ctrl-C again to "
                    "leave them in the spool directory)\n",
                    now.backlog, now.backlog == 1 ? "" : "s",
                    drain < PERIOD_DRAIN_MAX_SEC ? drain : PERIOD_DRAIN_MAX_SEC);
        if (stop) *stop = 0; /* a second signal cancels the drain */
        sonde_fleet_stop(fleet, drain < PERIOD_DRAIN_MAX_SEC ? drain : PERIOD_DRAIN_MAX_SEC, stop,
                         &stats);
        fprintf(stderr, "sonde: %llu period%s of pid %d", (unsigned long long)stats.periods,
                stats.periods == 1 ? "" : "s", (int)args->pid);
        if (p->period_dir)
            fprintf(stderr, "; %llu written to %s", (unsigned long long)stats.written,
                    p->period_dir);
        if (p->upload_url)
            fprintf(stderr, "; %llu uploaded, %u waiting in %s, %llu dropped, %llu refused",
                    (unsigned long long)stats.sent, stats.backlog, spool_dir,
                    (unsigned long long)stats.dropped, (unsigned long long)stats.rejected);
        fputc('\n', stderr);
        if (stats.write_errors) status = 1;
        if (p->upload_url && !p->spool_dir && stats.backlog == 0) rmdir(spool_dir);
    }
    sonde_buf_free(&headers);
    sonde_buf_free(&name);
    sonde_buf_free(&body);
    return status;
}
