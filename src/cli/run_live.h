/* run_live.h — `sonde run --live` (run_live.c): its options and its run.
 *
 * Owns: the interface between `sonde run` (run.c) and the live mode. The
 * `sonde` process only.
 */
#ifndef SONDE_CLI_RUN_LIVE_H
#define SONDE_CLI_RUN_LIVE_H

#include "period.h"

#include "../core/opt.h"
#include "../launch/launch.h"
#include "../launch/options.h"

/* --live, --refresh S, --live-output FILE. */
typedef struct sonde_live_args {
    bool live;
    double refresh_sec; /* 0 until settled (then 1 by default) */
    const char *output; /* borrowed from argv; NULL: sonde-live-PID.out */
} sonde_live_args_t;

/* The options' family (run's extra options), into a sonde_live_args_t. */
extern const sonde_opt_family_t sonde_cli_live_options;

/* Checks the live options against the others after the words (period:
 * run's --period options) and sets what --live needs in opts (stacks).
 * Returns 0 or -EINVAL with the message in err. */
int sonde_cli_live_settle(sonde_live_args_t *l, sonde_run_opts_t *opts,
                          const sonde_period_args_t *period, char *err, size_t err_len);

/* Runs the program (prog, with run's encoded options) under the live
 * view. Returns the exit status (sonde ends as the program did: a program
 * killed by a signal kills sonde with it), or 2 after one line saying why
 * the program was not started. */
int sonde_cli_run_live(sonde_run_opts_t *opts, const sonde_live_args_t *live,
                       const sonde_program_t *prog, const char *encoded);

#endif
