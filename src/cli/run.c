/* run.c — `sonde run`: check the request, then become the interpreter.
 *
 * Owns: the CLI side of `sonde run`. Parses the options once
 * (src/launch/options.c; argv is left as it is), checks the script and the
 * output file, and starts the interpreter with the parsed options encoded
 * in the hand-over environment (src/launch/launch.c): as a child of the
 * collector (src/collect/), or, with --no-subprocesses, by exec. The profiling itself
 * happens inside the interpreter (src/ext/). With --period (period.c's
 * options), the collector hands one merged profile per period to the
 * fleet pipeline instead of writing a report at the end. No signal
 * handlers.
 */
#include "cli.h"
#include "period.h"

#include "../core/buf.h"
#include "../launch/launch.h"
#include "../report/report.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The period options among run's words (sonde_run_opts_t.extra_word). */
static int run_period_word(void *arg, int argc, char *const *argv, int *i, char *err,
                           size_t err_len)
{
    return sonde_cli_period_word(argc, argv, i, arg, err, err_len);
}

/* Checks --period against the other options and settles the format (pprof
 * unless one was chosen; no report file at the end). Returns 0 or -EINVAL
 * with the message in err. */
static int run_period_settle(sonde_run_opts_t *opts, sonde_period_args_t *period, char *err,
                             size_t err_len)
{
    const sonde_format_t *format = opts->format_by_default ? NULL : opts->format;
    int rc = sonde_cli_period_settle(period, opts->outfile_by_default ? NULL : opts->outfile,
                                     &format, err, err_len);
    if (rc < 0 || !period->period_sec) return rc;
    if (opts->no_subprocesses)
        return sonde_errf(err, err_len,
                          "--period needs the collector process that --no-subprocesses leaves "
                          "out");
    opts->format = format;
    opts->outfile = NULL;
    if (format->needs_stacks) opts->stacks = true;
    return 0;
}

int sonde_cli_run(int argc, char **argv)
{
    sonde_run_opts_t opts;
    sonde_period_args_t period;
    sonde_buf_t encoded = SONDE_BUF_INIT;
    char err[512] = "";
    int status = 2;

    memset(&period, 0, sizeof period);
    sonde_run_opts_default(&opts);
    opts.extra_word = run_period_word;
    opts.extra_arg = &period;
    if (sonde_run_opts_parse(&opts, argc, argv, true, err, sizeof err) < 0 ||
        (!opts.help && run_period_settle(&opts, &period, err, sizeof err) < 0)) {
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
    status = sonde_cli_launch("run", &prog, opts.outfile, encoded.data, opts.memory, &opts,
                              period.period_sec ? &period : NULL);
done:
    sonde_buf_free(&encoded);
    sonde_run_opts_free(&opts);
    return status;
}
