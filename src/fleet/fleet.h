/* fleet.h — continuous profiles: one encoded profile per period, kept in a
 * rotated directory and/or pushed to a Pyroscope-compatible /ingest.
 *
 * Owns the pieces of the `sonde` process (never the extension module nor
 * the preloaded shim: libcurl is loaded by the command only) that take
 * a finished period's bytes and get them to their destinations:
 *   spool.c   a directory of period files named by their time span,
 *             written atomically (src/prim/file.c), listed oldest first,
 *             trimmed to a count and a byte total (oldest dropped first);
 *             used for --period-dir and for the upload backlog
 *   upload.c  one POST to /ingest with libcurl (loaded at run time by
 *             curl_load.c, fleet_internal.h): the query (name with tags,
 *             from, until, format, spyName, sampleRate), the profile as the
 *             `profile` part of a multipart form, the user's headers, and
 *             a timeout on every request
 *   fleet.c   sonde_fleet_t: submit (called on the sampling thread; writes
 *             files, never waits for the network) and the upload thread
 *             that sends the backlog oldest first, with backoff while the
 *             backend is down or slow
 * A caller gives it encoded bytes and the period's from/until, through
 * src/cli/period.c: `sonde attach --period` (src/cli/attach_period.c) and
 * the collector process of `sonde run --period` (src/collect/). Errors are 0 / -errno; the few things
 * worth telling the user while running (drops, a backend that went down or
 * came back) go through the log callback, from either thread. Nothing here
 * runs in a signal handler.
 */
#ifndef SONDE_FLEET_H
#define SONDE_FLEET_H

#include "../core/buf.h"
#include "../core/common.h"

#include <signal.h>
#include <stdint.h>

#define SONDE_FLEET_MAX_TAGS 32                     /* --tag k=v given at most */
#define SONDE_FLEET_MAX_HEADERS 32                  /* header lines accepted */
#define SONDE_FLEET_MAX_HEADER_BYTES 8192           /* headers file or variable, at most */
#define SONDE_FLEET_MAX_PROFILE ((size_t)256 << 20) /* one period's bytes, at most */

/* ---- the command-line options (parsed by src/cli/period.c) ------------------------ */

/* Continuous profiles: `--period S` and what goes with it, in `sonde
 * attach` and `sonde run` (strings borrowed from argv). period_sec 0: one
 * profile at the end. */
typedef struct sonde_period_args {
    double period_sec;
    const char *period_dir;                 /* --period-dir; NULL: none */
    unsigned keep;                          /* --keep: period files kept there */
    const char *upload_url;                 /* --upload; NULL: none */
    const char *app_name;                   /* --app-name; NULL: "python" */
    const char *tags[SONDE_FLEET_MAX_TAGS]; /* --tag k=v */
    int n_tags;
    const char *headers_file; /* --upload-headers-file; NULL: $SONDE_UPLOAD_HEADERS */
    const char *spool_dir;    /* --spool-dir; NULL: $TMPDIR/sonde-spool-PID */
    unsigned spool_max;       /* --spool-max: periods waiting, at most */
    uint64_t spool_max_bytes; /* --spool-max-bytes */
    double upload_timeout;    /* --upload-timeout: seconds per request */
} sonde_period_args_t;

#define SONDE_PERIOD_DEFAULT_KEEP 60
#define SONDE_PERIOD_DEFAULT_SPOOL_MAX 1000
#define SONDE_PERIOD_DEFAULT_SPOOL_BYTES ((uint64_t)256 << 20)
#define SONDE_PERIOD_DEFAULT_UPLOAD_TIMEOUT 10.0

/* ---- the period files (spool.c) ------------------------------------------------ */

/* A directory of period files "sonde-FROM_MS-UNTIL_MS.EXT" (unix
 * milliseconds, 13 digits, so that the name order is the time order).
 * Plain data; the caller serialises access to one directory. */
typedef struct sonde_spool {
    char dir[4096];
    char ext[32];       /* ".pb.gz", ".json": the format's file ending */
    unsigned max_files; /* kept at most (0: no bound) */
    uint64_t max_bytes; /* kept at most, all files (0: no bound) */
} sonde_spool_t;

/* One period file. */
typedef struct sonde_spool_entry {
    char name[96]; /* the file's name in the directory */
    uint64_t from_ms, until_ms;
    uint64_t bytes;
} sonde_spool_entry_t;

/* Fills spool and creates dir (and its parents) if missing, with mode
 * (less the umask). Returns 0 or -errno (-ENAMETOOLONG, or mkdir's). */
int sonde_spool_init(sonde_spool_t *spool, const char *dir, const char *ext, unsigned max_files,
                     uint64_t max_bytes, unsigned mode);
/* Writes one period's bytes atomically as its file. Returns 0 or -errno. */
int sonde_spool_write(const sonde_spool_t *spool, uint64_t from_ms, uint64_t until_ms,
                      const void *data, size_t len);
/* Deletes the oldest files until at most max_files and max_bytes remain,
 * never the one named keep (NULL: none; a file being sent). Returns the
 * number deleted, or -errno. */
int sonde_spool_trim(const sonde_spool_t *spool, const char *keep);
/* The oldest period file into *entry. Returns 1, 0 when there is none, or
 * -errno. */
int sonde_spool_oldest(const sonde_spool_t *spool, sonde_spool_entry_t *entry);
/* Number of period files and their bytes. Returns 0 or -errno. */
int sonde_spool_count(const sonde_spool_t *spool, unsigned *files, uint64_t *bytes);
/* Reads an entry's file into out (reset first). Returns 0 or -errno. */
int sonde_spool_read(const sonde_spool_t *spool, const sonde_spool_entry_t *entry,
                     sonde_buf_t *out);
/* Deletes an entry's file (gone already: 0). Returns 0 or -errno. */
int sonde_spool_remove(const sonde_spool_t *spool, const sonde_spool_entry_t *entry);
/* Parses a period file's name. Returns true when it is one. Pure. */
bool sonde_spool_parse_name(const char *name, const char *ext, uint64_t *from_ms,
                            uint64_t *until_ms);

/* ---- one request (upload.c) ------------------------------------------------------- */

struct sonde_upload; /* private to upload.c: a libcurl handle, reused */

/* What every request of a run shares. Strings are copied. */
typedef struct sonde_upload_opts {
    const char *url;      /* the server's base URL or its /ingest URL */
    const char *name;     /* "app{k=v,...}", as Pyroscope's name= takes it */
    const char *format;   /* format= ("pprof") */
    const char *headers;  /* "Name: value" lines ('\n'-separated); NULL: none */
    unsigned sample_rate; /* sampleRate=, samples per second */
    double timeout_sec;   /* each request's limit, connecting included */
} sonde_upload_opts_t;

/* Checks the options and prepares a handle (sonde__curl_load must have
 * succeeded). Returns 0 or -errno (-EINVAL: a header line without "Name:", too
 * many headers, a URL that is not http:// or https://). */
int sonde_upload_new(const sonde_upload_opts_t *opts, struct sonde_upload **out);
/* POSTs one profile of [from_sec, until_sec). Returns 0 when the server
 * took it (2xx); -EAGAIN when it should be sent again later (no
 * connection, a timeout, 408, 429, 5xx); -EBADMSG when the server refused
 * it for good (another 4xx); -ENOMEM. *status gets the HTTP status (0
 * without an answer); why (may be NULL) a few words on the failure. */
int sonde_upload_post(struct sonde_upload *u, const void *data, size_t len, uint64_t from_sec,
                      uint64_t until_sec, long *status, char *why, size_t why_len);
void sonde_upload_free(struct sonde_upload *u);
/* Builds Pyroscope's application name: "app{k=v,k=v}" ("app" without
 * tags). Tags are "k=v" words. Returns 0 or -EINVAL with a message in err
 * (a name or tag with characters the query language would misread). */
int sonde_upload_app_name(const char *app, const char *const *tags, int n_tags, sonde_buf_t *out,
                          char *err, size_t err_len);
/* Checks header lines ("Name: value", '\n'-separated; blank lines and
 * lines starting with '#' skipped). Returns the number of headers, or
 * -EINVAL with a message in err. Pure. */
int sonde_upload_check_headers(const char *headers, char *err, size_t err_len);

/* ---- the pipeline (fleet.c) -------------------------------------------------------- */

typedef void (*sonde_fleet_log_fn)(void *arg, const char *message);

typedef struct sonde_fleet_opts {
    const char *extension;      /* the format's file ending (".pb.gz") */
    const char *period_dir;     /* NULL: no directory of periods */
    unsigned keep;              /* period files kept there (oldest deleted) */
    sonde_upload_opts_t upload; /* upload.url NULL: no upload */
    const char *spool_dir;      /* the upload backlog (created if missing) */
    unsigned spool_max_files;
    uint64_t spool_max_bytes;
    double backoff_max_sec; /* longest wait between tries (0: 60 s) */
    sonde_fleet_log_fn log; /* may be NULL; called from either thread */
    void *log_arg;
} sonde_fleet_opts_t;

/* What happened so far. */
typedef struct sonde_fleet_stats {
    uint64_t periods;         /* submitted */
    uint64_t written;         /* period files written to period_dir */
    uint64_t sent;            /* uploads the server took */
    uint64_t attempts_failed; /* uploads tried again later */
    uint64_t rejected;        /* refused for good by the server (dropped) */
    uint64_t dropped;         /* backlog full: oldest dropped unsent */
    uint64_t write_errors;    /* period files that could not be written */
    unsigned backlog;         /* periods waiting to be sent */
} sonde_fleet_stats_t;

typedef struct sonde_fleet sonde_fleet_t;

/* Creates the directories and, with an upload URL, starts the upload
 * thread (with SIGINT, SIGTERM, SIGHUP and SIGPIPE blocked, so that they
 * reach the sampling thread). Periods left in spool_dir by an earlier run
 * are sent too. Returns 0 with *out set, or -errno (message in err). */
int sonde_fleet_start(const sonde_fleet_opts_t *opts, sonde_fleet_t **out, char *err,
                      size_t err_len);
/* Hands over one period [from_ns, until_ns) (unix time): written to the
 * period directory and, for upload, to the backlog (trimmed to its bounds,
 * oldest first) and the upload thread is woken. Never waits for the
 * network. Returns 0 or -errno (the period could not be kept anywhere). */
int sonde_fleet_submit(sonde_fleet_t *f, const void *data, size_t len, uint64_t from_ns,
                       uint64_t until_ns);
void sonde_fleet_get_stats(sonde_fleet_t *f, sonde_fleet_stats_t *stats);
/* Sends what is left (at once, no backoff) for at most drain_sec (plus
 * the request under way), or until *cancel becomes non-zero (cancel may
 * be NULL; a second Ctrl-C), then stops the thread and frees f. Periods
 * still unsent stay in spool_dir. final_stats (may be NULL) gets the last
 * figures. NULL f is a no-op. hard: the request under way is not waited
 * for past the deadline (SONDE_FLEET_HARD_GRACE_SEC after it): the thread
 * is left in it and f is not freed, for a caller that exits next (its
 * period stays in the spool and is counted waiting). */
#define SONDE_FLEET_HARD_GRACE_SEC 0.5
void sonde_fleet_stop(sonde_fleet_t *f, double drain_sec, bool hard, volatile sig_atomic_t *cancel,
                      sonde_fleet_stats_t *final_stats);

#endif
