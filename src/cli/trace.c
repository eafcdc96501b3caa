/* trace.c — `sonde trace`: check the request, then become the interpreter.
 *
 * Owns: the CLI side of `sonde trace` (cProfile's command line). Parses the
 * options once (src/launch/trace_options.c), checks the script and the
 * outfile, and execs the interpreter with the parsed options encoded in
 * the hand-over environment (src/launch/launch.c) in mode "trace". The
 * tracing itself happens inside the interpreter (src/trace/). No signal
 * handlers, no libpython.
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

    if (sonde_trace_opts_parse(&opts, argc, argv, err, sizeof err) < 0) {
        sonde_cli_error("%s", err);
        return 2;
    }
    if (opts.help) return sonde_cli_help(sonde_trace_help);
    sonde_cli_choose_python(opts.python);
    /* The parsed options travel encoded; the tracer's boot decodes them
     * (src/ext/boot.c, src/trace/boot.c). */
    sonde_buf_t words = SONDE_BUF_INIT;
    sonde_trace_opts_encode(&opts, &words);
    if (sonde_buf_error(&words)) {
        sonde_buf_free(&words);
        sonde_cli_error("out of memory");
        return 2;
    }
    sonde_program_t prog = {opts.script, opts.module, opts.prog_argv, opts.prog_argc};
    int status =
        sonde_cli_launch("trace", &prog, opts.outfile, words.data ? words.data : "", false, NULL);
    sonde_buf_free(&words);
    return status;
}
