/* run.c — `sonde run`: check the request, then become the interpreter.
 *
 * Owns: the CLI side of `sonde run`. Parses the options (src/launch/
 * options.c), checks the script and the outfile, and execs the interpreter
 * with the hand-over environment (src/launch/launch.c). The profiling
 * itself happens inside the interpreter (src/ext/). No signal handlers.
 */
#include "cli.h"

#include "../launch/launch.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

int sonde_cli_run(int argc, char **argv)
{
    sonde_run_opts_t opts;
    char err[512] = "";

    sonde_run_opts_default(&opts);
    /* The parser splits pattern lists in place; hand the interpreter the
     * tokens as the user wrote them. */
    char *tokens[256];
    int n_tokens = argc < 256 ? argc : 256;
    char copies[256][1024];
    for (int i = 0; i < n_tokens; i++) {
        snprintf(copies[i], sizeof copies[i], "%s", argv[i]);
        tokens[i] = copies[i];
    }
    if (sonde_run_opts_parse(&opts, argc, argv, true, err, sizeof err) < 0) {
        sonde_cli_error("%s", err);
        return 2;
    }
    if (opts.help) {
        fputs(sonde_run_usage, stdout);
        return 0;
    }
    if (opts.n_option_tokens > n_tokens) {
        sonde_cli_error("too many options");
        return 2;
    }
    sonde_program_t prog = {opts.script, opts.module, opts.prog_argv, opts.prog_argc};
    return sonde_cli_launch("run", &prog, opts.outfile, tokens, opts.n_option_tokens);
}
