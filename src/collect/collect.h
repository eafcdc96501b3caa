/* collect.h — the merges of `sonde run`: the report of a program and its
 * followed processes at its end (children.c), and the periods of
 * `sonde run --period` (collect.c).
 *
 * Owns: the interface between the CLI (src/cli/main.c, run.c) and the merges
 * (collect.c). Runs in the `sonde` process only (separate from the
 * program); never in the interpreter.
 */
#ifndef SONDE_COLLECT_H
#define SONDE_COLLECT_H

#include "../launch/launch.h"
#include "../model/model.h"
#include "../report/report.h"

#include <signal.h>

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
     * SIGTERM meanwhile; terminated: the program was stopped by SIGTERM
     * (the drain then fits in a container's stop). */
    double period_sec;
    int (*start)(void *arg);
    int (*submit)(void *arg, const sonde_profile_t *prof, const sonde_profile_t *parts,
                  size_t n_parts, uint64_t from_ns, uint64_t until_ns);
    void (*finish)(void *arg, volatile sig_atomic_t *cancel, bool terminated);
    void *arg;
} sonde_collect_out_t;

/* `sonde _children DIR ROOT_STEM OPTIONS OUTFILE PKG_DIR NOT_FOLLOWED
 * REMOVED DIR_ERRNO ROOT_PID ROOT_FOLLOWED` (argv from DIR on): the report
 * of a program and its followed processes, at the program's end
 * (children.c). Returns the exit status: 0, or 2 when the root's profile
 * cannot be read. */
int sonde_collect_children_main(int argc, char **argv, sonde_compress_fn compress);

/* The period helper of `sonde run --period` (`sonde _periods`, started
 * detached by the command before it execs the interpreter): makes the
 * period page in dirpath, opens out (out->start), writes one byte to
 * ready_fd (1 ready, 0 not: the program is then not started) and closes
 * it, then ends each period (every out->period_sec) as the collector did,
 * watching the root (pid root) rather than waiting for a child: when the
 * root says it ended (SONDE_HANDOVER_ENDING, after its last hand-over) or is
 * gone, it waits at most opts->child_wait_sec for the followed processes
 * still running, submits the last period, runs out->finish (SIGINT or
 * SIGTERM cancel it), writes SONDE_HANDOVER_DRAINED (the root waits for it), and once
 * the root is gone removes the directory. Returns the exit status. */
int sonde_collect_periods(const char *dirpath, pid_t root, const sonde_run_opts_t *opts,
                          const sonde_collect_out_t *out, int ready_fd);

#endif
