/* period.h — continuous profiles on the command line (period.c):
 * `--period` and its options, and a run of periods handed to src/fleet/.
 *
 * Owns: the interface between the commands (`sonde attach --period`,
 * `sonde run --period` through its collector) and the fleet pipeline, and
 * the period options' table.
 * The `sonde` process only; part of the command's edge (period.c prints
 * one line "sonde: ..." per error).
 */
#ifndef SONDE_CLI_PERIOD_H
#define SONDE_CLI_PERIOD_H

#include "cli.h"

#include "../core/buf.h"
#include "../core/opt.h"
#include "../fleet/fleet.h"
#include "../model/model.h"
#include "../report/report.h"

#include <signal.h>

/* ---- the period options (pure) ---- */

/* --period, --period-dir, --keep, --upload, --app-name, --tag,
 * --upload-headers-file, --upload-timeout, --spool-dir, --spool-max,
 * --spool-max-bytes into a sonde_period_args_t (src/core/opt.h): `sonde
 * attach`'s and, through its extra options, `sonde run`'s. */
extern const sonde_opt_family_t sonde_cli_period_options;

/* Checks the period options together, after the words (outfile: -o's
 * value, NULL none) and fills the defaults; *format becomes pprof unless
 * one was chosen. Without --period, only checks that no period option was
 * given. Returns 0 or -EINVAL with the message in err. */
int sonde_cli_period_settle(sonde_period_args_t *p, const char *outfile,
                            const sonde_format_t **format, char *err, size_t err_len);

/* ---- a run of periods ---- */

typedef struct sonde_cli_period {
    const sonde_period_args_t *args; /* borrowed */
    const sonde_format_t *format;    /* of each period's profile */
    sonde_fleet_t *fleet;
    char spool_dir[4096]; /* the upload backlog (with --upload) */
    sonde_buf_t body;     /* one period's bytes, reused */
} sonde_cli_period_t;

/* Starts the pipeline (period directory, upload thread) for args (settled)
 * and says so on stderr. rate_hz: the sampling rate (sampleRate=).
 * Returns 0, or 1 after printing why. */
int sonde_cli_period_open(sonde_cli_period_t *run, const sonde_period_args_t *args,
                          const sonde_format_t *format, double rate_hz);
/* Hands one period's encoded bytes over [from_ns, until_ns) (unix ns).
 * Never waits for the network. Returns 0, or -errno after printing that
 * the period was lost. */
int sonde_cli_period_submit(sonde_cli_period_t *run, const void *data, size_t len, uint64_t from_ns,
                            uint64_t until_ns);
/* Renders prof (finished) in the run's format (pprof gzipped, its
 * time_nanos from_ns; parts: the single-process profiles it merges, or
 * NULL, sonde_pprof_opts_t.parts) and hands it over as
 * sonde_cli_period_submit does. Same returns. */
int sonde_cli_period_submit_profile(sonde_cli_period_t *run, const sonde_profile_t *prof,
                                    const sonde_profile_t *parts, size_t n_parts, uint64_t from_ns,
                                    uint64_t until_ns);
/* Sends what waits (at most twice --upload-timeout, 30 s at most, and at
 * most drain_max_sec when it is > 0, or until *cancel becomes non-zero:
 * cancel may be NULL; a caller whose first signal set it clears it first),
 * stops the pipeline and prints the closing line: "N periods of <whose>;
 * ...". Returns 0, or 1 when period files could not be written. */
int sonde_cli_period_close(sonde_cli_period_t *run, const char *whose,
                           volatile sig_atomic_t *cancel, double drain_max_sec);
/* The drain's bound when the program was stopped by SIGTERM: a container
 * stop gives 10 s before SIGKILL. */
#define SONDE_PERIOD_DRAIN_TERM_SEC 7.0

#endif
