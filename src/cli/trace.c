/* trace.c — `sonde trace`: check the request, then become the interpreter.
 *
 * Owns: the CLI side of `sonde trace` (cProfile's command line). Parses the
 * options (src/launch/trace_options.c), checks the script and the outfile,
 * and execs the interpreter with the hand-over environment
 * (src/launch/launch.c) in mode "trace". The tracing itself happens inside
 * the interpreter (src/trace/). No signal handlers, no libpython.
 */
#include "cli.h"

#include "../launch/launch.h"
#include "../launch/trace_options.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

int sonde_cli_trace(int argc, char **argv)
{
    sonde_trace_opts_t opts;
    char err[512] = "";
    char pkg_dir[4096];

    if (sonde_trace_opts_parse(&opts, argc, argv, true, err, sizeof err) < 0) {
        sonde_cli_error("%s", err);
        return 2;
    }
    if (opts.help) {
        fputs(sonde_trace_usage, stdout);
        return 0;
    }
    sonde_program_t prog = {opts.script, opts.module, opts.prog_argv, opts.prog_argc};
    if (sonde_launch_check(&prog, opts.outfile, err, sizeof err) < 0) {
        sonde_cli_error("%s", err);
        return 2;
    }
    int rc = sonde_cli_pkg_dir(pkg_dir, sizeof pkg_dir);
    if (rc < 0) {
        sonde_cli_error("cannot find the sonde package next to this command: %s", strerror(-rc));
        return 2;
    }
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/_boot/sitecustomize.py", pkg_dir);
    if (access(probe, R_OK) != 0) {
        sonde_cli_error("the sonde package is missing from %s; run 'make' first", pkg_dir);
        return 2;
    }
    /* The option words travel unchanged; the boot parses them again. */
    sonde_launch_exec(sonde_cli_python(), pkg_dir, "trace", &prog, argv, opts.n_option_tokens, err,
                      sizeof err);
    sonde_cli_error("%s", err);
    return 127;
}
