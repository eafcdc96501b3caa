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

/* How long the collector waits, once the program has ended, for the
 * Python processes it started that are still running to hand their
 * profiles over (they are counted as lost after that). */
#define SONDE_COLLECT_GRACE_NS 5000000000ull

/* Runs the program as a child (the interpreter, exec'd with the
 * hand-over plus SONDE_RUN_COLLECT: src/launch/launch.c) and stays its
 * parent: forwards the signals sent to this process, waits for the
 * program and then, up to SONDE_COLLECT_GRACE_NS, for the followed
 * processes still running; merges the profiles handed over (when the
 * program handed one over, or any other process did; a program that
 * started no followed process writes its own report) and writes the
 * report as opts asks; removes its directory. Then ends as the program
 * did: returns its exit status, or kills this process with the signal
 * that killed it. On a failure before the program starts, returns a
 * negative errno with a message in err (the caller prints it). */
int sonde_collect_run(const char *python, const char *pkg_dir, const sonde_program_t *prog,
                      const char *options, bool preload_shim, const sonde_run_opts_t *opts,
                      char *err, size_t err_len);

#endif
