/* period.c — continuous profiles on the command line: `--period S` and its
 * options, shared by `sonde attach` and `sonde run`.
 *
 * Owns: the table of the period options (sonde_period_args_t,
 * src/fleet/fleet.h; the grammar is src/core/opt.c's) and their checks,
 * pure so that the unit tests can check every message; and the command's side of a run of periods:
 * the upload's headers (--upload-headers-file or SONDE_UPLOAD_HEADERS,
 * never the command line), the application name, the start of the
 * pipeline (src/fleet/), the rendering of each period's profile in the
 * chosen format (pprof gzipped with zlib), and the closing line. Callers:
 * attach_period.c (the attach loop) and, for `sonde run --period`, the
 * collector process (src/collect/) through sonde_collect_periods_t. Runs
 * in the `sonde` process only, ordinary code (the fleet's upload thread
 * calls period_log).
 */
#include "period.h"

#include "../core/buf.h"
#include "../prim/file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PERIOD_DRAIN_MAX_SEC 30.0 /* at the end: time given to the backlog */

/* ---- the period options ---------------------------------------------------------- */

enum {
    PERIOD_SEC,
    PERIOD_DIR,
    PERIOD_KEEP,
    PERIOD_UPLOAD,
    PERIOD_APP_NAME,
    PERIOD_TAG,
    PERIOD_HEADERS_FILE,
    PERIOD_UPLOAD_TIMEOUT,
    PERIOD_SPOOL_DIR,
    PERIOD_SPOOL_MAX,
    PERIOD_SPOOL_MAX_BYTES,
};

static int period_apply(void *target, const sonde_opt_t *opt, const char *word, const char *value,
                        char *err, size_t err_len)
{
    sonde_period_args_t *p = target;
    uint64_t count = 0;
    switch (opt->id) {
    case PERIOD_SEC:
        if (!sonde_opt_number(value, &p->period_sec) || p->period_sec < 0.01 ||
            p->period_sec > 86400)
            return sonde_errf(err, err_len,
                              "--period must be a number of seconds from 0.01 to 86400, not '%s'",
                              value);
        break;
    case PERIOD_DIR:
        p->period_dir = value;
        break;
    case PERIOD_KEEP:
        if (!sonde_opt_count(value, 1, 1e6, &count))
            return sonde_errf(err, err_len, "--keep must be a count from 1 to 1000000, not '%s'",
                              value);
        p->keep = (unsigned)count;
        break;
    case PERIOD_UPLOAD:
        p->upload_url = value;
        break;
    case PERIOD_APP_NAME:
        p->app_name = value;
        break;
    case PERIOD_TAG:
        if (p->n_tags >= SONDE_FLEET_MAX_TAGS)
            return sonde_errf(err, err_len, "at most %d --tag options", SONDE_FLEET_MAX_TAGS);
        p->tags[p->n_tags++] = value;
        break;
    case PERIOD_HEADERS_FILE:
        p->headers_file = value;
        break;
    case PERIOD_SPOOL_DIR:
        p->spool_dir = value;
        break;
    case PERIOD_SPOOL_MAX:
        if (!sonde_opt_count(value, 1, 1e6, &count))
            return sonde_errf(err, err_len,
                              "--spool-max must be a count from 1 to 1000000, not '%s'", value);
        p->spool_max = (unsigned)count;
        break;
    case PERIOD_SPOOL_MAX_BYTES:
        if (!sonde_opt_count(value, 1024, 1e15, &p->spool_max_bytes))
            return sonde_errf(err, err_len,
                              "--spool-max-bytes must be a number of bytes, at least 1024, not "
                              "'%s'",
                              value);
        break;
    default:
        if (!sonde_opt_number(value, &p->upload_timeout) || p->upload_timeout < 0.1 ||
            p->upload_timeout > 3600)
            return sonde_errf(err, err_len,
                              "--upload-timeout must be a number of seconds from 0.1 to 3600, "
                              "not '%s'",
                              value);
        break;
    }
    return 0;
}

static const sonde_opt_t period_table[] = {
    {"--period", NULL, 0, SONDE_OPT_VALUE, PERIOD_SEC, SONDE_OPT_NONEMPTY, "S", NULL,
     "one profile every S seconds (pprof, or --format) instead of a report at the end; Ctrl-C "
     "or SIGTERM writes and sends the last, partial period; with one or both of:",
     NULL},
    {"--period-dir", NULL, 0, SONDE_OPT_VALUE, PERIOD_DIR, SONDE_OPT_NONEMPTY, "DIR", NULL,
     "... into DIR as sonde-FROM-UNTIL.EXT (unix ms)", NULL},
    {"--upload", NULL, 0, SONDE_OPT_VALUE, PERIOD_UPLOAD, SONDE_OPT_NONEMPTY, "URL", NULL,
     "... POSTed to a Pyroscope-compatible server (URL: the server, e.g. "
     "http://localhost:4040, or its /ingest endpoint)",
     NULL},
    {"--keep", NULL, 0, SONDE_OPT_VALUE, PERIOD_KEEP, SONDE_OPT_NONEMPTY, "N", NULL,
     "keep the newest N in --period-dir (default 60)", NULL},
    {"--app-name", NULL, 0, SONDE_OPT_VALUE, PERIOD_APP_NAME, SONDE_OPT_NONEMPTY, "NAME", NULL,
     "the application name on the server (default python)", NULL},
    {"--tag", NULL, 0, SONDE_OPT_VALUE, PERIOD_TAG, SONDE_OPT_NONEMPTY, "KEY=VALUE", NULL,
     "a label on every profile (repeatable)", NULL},
    {"--upload-headers-file", NULL, 0, SONDE_OPT_VALUE, PERIOD_HEADERS_FILE, SONDE_OPT_NONEMPTY,
     "FILE", NULL,
     "'Name: value' lines sent with every request (else $SONDE_UPLOAD_HEADERS, one per line)",
     NULL},
    {"--upload-timeout", NULL, 0, SONDE_OPT_VALUE, PERIOD_UPLOAD_TIMEOUT, SONDE_OPT_NONEMPTY, "S",
     NULL, "limit of each request (default 10)", NULL},
    {"--spool-dir", NULL, 0, SONDE_OPT_VALUE, PERIOD_SPOOL_DIR, SONDE_OPT_NONEMPTY, "DIR", NULL,
     "periods waiting to be sent (default $TMPDIR/sonde-spool-PID); a backend that is down or "
     "slow is retried with backoff, never holding sampling",
     NULL},
    {"--spool-max", NULL, 0, SONDE_OPT_VALUE, PERIOD_SPOOL_MAX, SONDE_OPT_NONEMPTY, "N", NULL,
     "periods waiting at most, oldest dropped (default 1000)", NULL},
    {"--spool-max-bytes", NULL, 0, SONDE_OPT_VALUE, PERIOD_SPOOL_MAX_BYTES, SONDE_OPT_NONEMPTY, "B",
     NULL, "bytes waiting at most (default 256 MiB)", NULL},
};

const sonde_opt_family_t sonde_cli_period_options = {
    "continuous profiles (one profile per period; see docs/fleet.md)",
    period_table,
    SONDE_ARRAY_LEN(period_table),
    period_apply,
    NULL,
};

int sonde_cli_period_settle(sonde_period_args_t *p, const char *outfile,
                            const sonde_format_t **format, char *err, size_t err_len)
{
    bool any = p->period_dir || p->keep || p->upload_url || p->app_name || p->n_tags ||
               p->headers_file || p->spool_dir || p->spool_max || p->spool_max_bytes ||
               p->upload_timeout;
    if (!p->period_sec) {
        if (any)
            return sonde_errf(err, err_len,
                              "--period-dir, --upload and their options need --period SECONDS");
        return 0;
    }
    if (!p->period_dir && !p->upload_url)
        return sonde_errf(err, err_len,
                          "--period needs somewhere to put the profiles: --period-dir DIR "
                          "and/or --upload URL");
    if (outfile)
        return sonde_errf(err, err_len,
                          "--period writes one profile per period (--period-dir, --upload), "
                          "not -o");
    if (!p->upload_url && (p->app_name || p->n_tags || p->headers_file || p->spool_dir ||
                           p->spool_max || p->spool_max_bytes || p->upload_timeout))
        return sonde_errf(err, err_len,
                          "--app-name, --tag, --upload-headers-file, --spool-* and "
                          "--upload-timeout need --upload URL");
    if (!p->period_dir && p->keep) return sonde_errf(err, err_len, "--keep needs --period-dir");
    if (!p->keep) p->keep = SONDE_PERIOD_DEFAULT_KEEP;
    if (!p->spool_max) p->spool_max = SONDE_PERIOD_DEFAULT_SPOOL_MAX;
    if (!p->spool_max_bytes) p->spool_max_bytes = SONDE_PERIOD_DEFAULT_SPOOL_BYTES;
    if (!p->upload_timeout) p->upload_timeout = SONDE_PERIOD_DEFAULT_UPLOAD_TIMEOUT;
    /* Backends take pprof. */
    if (!*format) *format = sonde_format_named("pprof");
    return 0;
}

/* ---- a run of periods ------------------------------------------------------------- */

/* The fleet's log: one line on stderr. Called from the upload thread too,
 * so it keeps no state: on a terminal it clears a progress line, which
 * the next progress call writes again. */
static void period_log(void *arg, const char *message)
{
    (void)arg;
    fprintf(stderr, "%ssonde: %s\n", isatty(2) ? "\r\033[K" : "", message);
}

/* The header lines into headers (file, else the environment). Returns 0,
 * or 1 after printing why. */
static int period_headers(const sonde_period_args_t *p, sonde_buf_t *headers)
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

int sonde_cli_period_open(sonde_cli_period_t *run, const sonde_period_args_t *p,
                          const sonde_format_t *format, double rate_hz)
{
    sonde_buf_t headers = SONDE_BUF_INIT, name = SONDE_BUF_INIT;
    char err[512] = "";
    int status = 1;
    memset(run, 0, sizeof *run);
    run->args = p;
    run->format = format;
    sonde_fleet_opts_t fo = {
        .extension = format->extensions[0] ? format->extensions[0] : ".profile",
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
            snprintf(run->spool_dir, sizeof run->spool_dir, "%s", p->spool_dir);
        else
            snprintf(run->spool_dir, sizeof run->spool_dir, "%s/sonde-spool-%d",
                     tmp && tmp[0] ? tmp : "/tmp", (int)getpid());
        fo.upload = (sonde_upload_opts_t){
            .url = p->upload_url,
            .name = name.data,
            .format = format->name,
            .headers = headers.data,
            .sample_rate = (unsigned)(rate_hz + 0.5),
            .timeout_sec = p->upload_timeout,
        };
        fo.spool_dir = run->spool_dir;
    }
    if (sonde_fleet_start(&fo, &run->fleet, err, sizeof err) < 0) {
        sonde_cli_error("%s", err);
        goto done;
    }
    fprintf(stderr, "sonde: one %s profile every %g s%s%s%s%s\n", format->name, p->period_sec,
            p->period_dir ? " to " : "", p->period_dir ? p->period_dir : "",
            p->upload_url ? ", uploaded to " : "", p->upload_url ? p->upload_url : "");
    status = 0;
done:
    sonde_buf_free(&headers);
    sonde_buf_free(&name);
    return status;
}

int sonde_cli_period_submit(sonde_cli_period_t *run, const void *data, size_t len, uint64_t from_ns,
                            uint64_t until_ns)
{
    int rc = sonde_fleet_submit(run->fleet, data ? data : "", len, from_ns, until_ns);
    if (rc < 0) {
        period_log(NULL, "a period's profile was lost");
        sonde_cli_error("cannot keep the period's profile: %s", strerror(-rc));
    }
    return rc;
}

int sonde_cli_period_submit_profile(sonde_cli_period_t *run, const sonde_profile_t *prof,
                                    const sonde_profile_t *parts, size_t n_parts, uint64_t from_ns,
                                    uint64_t until_ns)
{
    sonde_report_ctx_t ctx;
    sonde_buf_t viewer = SONDE_BUF_INIT;
    char pkg_dir[4096];
    sonde_report_ctx_init(&ctx, -1);
    ctx.pprof.compress = sonde_cli_gzip;
    ctx.pprof.time_nanos = (int64_t)from_ns;
    ctx.pprof.parts = n_parts > 1 ? parts : NULL;
    ctx.pprof.n_parts = n_parts > 1 ? n_parts : 0;
    if (sonde_cli_pkg_dir(pkg_dir, sizeof pkg_dir) == 0) {
        sonde_buf_printf(&viewer, "%s/viewer", pkg_dir);
        if (!sonde_buf_error(&viewer)) ctx.viewer_dir = viewer.data;
    }
    sonde_buf_reset(&run->body);
    int rc = run->format->write(prof, &ctx, &run->body);
    if (rc == 0) rc = sonde_buf_error(&run->body);
    sonde_buf_free(&viewer);
    if (rc < 0) {
        period_log(NULL, "a period's profile was lost");
        sonde_cli_error("cannot build the period's profile: %s", strerror(-rc));
        return rc;
    }
    return sonde_cli_period_submit(run, run->body.data, run->body.len, from_ns, until_ns);
}

int sonde_cli_period_close(sonde_cli_period_t *run, const char *whose,
                           volatile sig_atomic_t *cancel, double drain_max_sec)
{
    const sonde_period_args_t *p = run->args;
    int status = 0;
    if (run->fleet) {
        double drain = 2 * p->upload_timeout;
        if (drain > PERIOD_DRAIN_MAX_SEC) drain = PERIOD_DRAIN_MAX_SEC;
        if (drain_max_sec > 0 && drain > drain_max_sec) drain = drain_max_sec;
        sonde_fleet_stats_t now, stats;
        sonde_fleet_get_stats(run->fleet, &now);
        if (now.backlog)
            fprintf(stderr,
                    "sonde: sending the %u period%s waiting (up to %.0f s; Ctrl-C again to "
                    "leave them in the spool directory)\n",
                    now.backlog, now.backlog == 1 ? "" : "s", drain);
        /* bounded for a container's stop: the request under way is not
         * waited for past it (the helper exits next) */
        sonde_fleet_stop(run->fleet, drain, drain_max_sec > 0, cancel, &stats);
        run->fleet = NULL;
        fprintf(stderr, "sonde: %llu period%s of %s", (unsigned long long)stats.periods,
                stats.periods == 1 ? "" : "s", whose);
        if (p->period_dir)
            fprintf(stderr, "; %llu written to %s", (unsigned long long)stats.written,
                    p->period_dir);
        if (p->upload_url)
            fprintf(stderr, "; %llu uploaded, %u waiting in %s, %llu dropped, %llu refused",
                    (unsigned long long)stats.sent, stats.backlog, run->spool_dir,
                    (unsigned long long)stats.dropped, (unsigned long long)stats.rejected);
        fputc('\n', stderr);
        if (stats.write_errors) status = 1;
        if (p->upload_url && !p->spool_dir && stats.backlog == 0) rmdir(run->spool_dir);
    }
    sonde_buf_free(&run->body);
    return status;
}
