/* collect.h — the collector of `sonde run`: the program's parent, which
 * merges the profiles of every Python process the program starts.
 *
 * Owns: the interface between the CLI (src/cli/main.c) and the collector
 * (collect.c). Runs in the `sonde` process only (separate from the
 * program); never in the interpreter.
 */
#ifndef SONDE_COLLECT_H
#define SONDE_COLLECT_H

#include "../launch/launch.h"
#include "../model/model.h"
#include "../report/report.h"

#include <signal.h>

/* How long the collector waits, once the program has ended, for the
 * Python processes it started that are still running to hand their
 * profiles over (they are counted as lost after that). */
#define SONDE_COLLECT_GRACE_NS 5000000000ull

/* What the collector gives the command besides the report at the end. */
typedef struct sonde_collect_out {
    sonde_compress_fn compress; /* pprof's gzip (the command's); NULL: plain protobuf */
    /* Continuous profiles (`sonde run --period`; period_sec 0: none).
     * Every period_sec, every followed process hands over what it sampled
     * since the last period (src/ext/session.c) and submit gets their
     * merge, finished (and the profiles it was made of, one per process
 * hand-over, for pprof's per-process samples), with the period's span in
 * unix ns; there is no
     * report at the end. start runs once this process's signal mask is
     * set, before the program starts (threads it starts inherit the mask,
     * so that signals reach the collector's loop): non-zero, after it
     * printed why, and the program is not started. finish runs after the
     * last period (the partial one at the end), before this process ends
     * like the program; *cancel becomes non-zero on a second SIGINT or
     * SIGTERM meanwhile. */
    double period_sec;
    int (*start)(void *arg);
    int (*submit)(void *arg, const sonde_profile_t *prof, const sonde_profile_t *parts,
                  size_t n_parts, uint64_t from_ns, uint64_t until_ns);
    void (*finish)(void *arg, volatile sig_atomic_t *cancel);
    void *arg;
} sonde_collect_out_t;

/* Runs the program as a child (the interpreter, exec'd with the
 * hand-over plus SONDE_RUN_COLLECT: src/launch/launch.c) and stays its
 * parent: forwards the signals sent to this process, waits for the
 * program and then, up to SONDE_COLLECT_GRACE_NS, for the followed
 * processes still running; merges the profiles handed over (when the
 * program handed one over, or any other process did; a program that
 * started no followed process writes its own report) and writes the
 * report as opts asks; removes its directory. Then ends as the program
 * did: returns its exit status, or kills this process with the signal
 * that killed it. With periods (out->period_sec), hands each period's
 * merge to out->submit instead of writing a report. On a failure before
 * the program starts, returns a negative errno with a message in err (the
 * caller prints it; "" when out->start printed it). */
/* `sonde _children DIR ROOT_STEM OPTIONS OUTFILE PKG_DIR NOT_FOLLOWED
 * REMOVED DIR_ERRNO ROOT_PID ROOT_FOLLOWED` (argv from DIR on): the report of a program and its
 * followed processes, at the program's end (children.c). Returns the exit
 * status: 0, or 2 when the root's profile cannot be read. */
int sonde_collect_children_main(int argc, char **argv, sonde_compress_fn compress);

int sonde_collect_run(const char *python, const char *pkg_dir, const sonde_program_t *prog,
                      const char *options, bool preload_shim, const sonde_run_opts_t *opts,
                      const sonde_collect_out_t *out, char *err, size_t err_len);

#endif
