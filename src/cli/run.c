/* run.c — `sonde run`: check the request, then become the interpreter.
 *
 * Owns: the CLI side of `sonde run`. Parses the options once
 * (src/launch/options.c; argv is left as it is), checks the script and the
 * output file, and starts the interpreter with the parsed options encoded
 * in the hand-over environment (src/launch/launch.c): as a child of the
 * collector (src/collect/), or, with --no-subprocesses, by exec. The profiling itself
 * happens inside the interpreter (src/ext/). No signal handlers.
 */
#include "cli.h"

#include "../core/buf.h"
#include "../launch/launch.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

int sonde_cli_run(int argc, char **argv)
{
    sonde_run_opts_t opts;
    sonde_buf_t encoded = SONDE_BUF_INIT;
    char err[512] = "";
    int status = 2;

    sonde_run_opts_default(&opts);
    if (sonde_run_opts_parse(&opts, argc, argv, true, err, sizeof err) < 0) {
        sonde_cli_error("%s", err);
        goto done;
    }
    if (opts.help) {
        fputs(sonde_run_usage, stdout);
        status = 0;
        goto done;
    }
    sonde_run_opts_encode(&opts, &encoded);
    if (sonde_buf_error(&encoded)) {
        sonde_cli_error("out of memory");
        goto done;
    }
    sonde_cli_choose_python(opts.python);
    sonde_program_t prog = {opts.script, opts.module, opts.prog_argv, opts.prog_argc, opts.command};
    status = sonde_cli_launch("run", &prog, opts.outfile, encoded.data, opts.memory, &opts);
done:
    sonde_buf_free(&encoded);
    sonde_run_opts_free(&opts);
    return status;
}
