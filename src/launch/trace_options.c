/* trace_options.c — the options of `sonde trace` (see trace_options.h).
 *
 * Owns: trace's option table and apply function, sonde_trace_opts_parse,
 * the -s choices, the help of `sonde trace` and the hand-over encoding
 * (encode/decode). Called by the CLI (src/cli/trace.c) and, to decode the
 * hand-over, by the extension's boot (src/ext/boot.c). The grammar is
 * src/core/opt.c's. No signal or hook context.
 */
#include "trace_options.h"

#include "../core/buf.h"
#include "../core/opt.h"
#include "netstring.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const sonde_trace_sort_choices[] = {
    "calls",  "cumtime", "cumulative", "filename", "line", "module",  "name",
    "ncalls", "nfl",     "pcalls",     "stdname",  "time", "tottime", NULL,
};
static const char *const topts_formats[] = {"pstats", "pprof", NULL};

enum { TRACE_OUTFILE, TRACE_FORMAT, TRACE_SORT, TRACE_MODULE, TRACE_PYTHON };

static int topts_apply(void *target, const sonde_opt_t *opt, const char *word, const char *value,
                       char *err, size_t err_len)
{
    sonde_trace_opts_t *opts = target;
    switch (opt->id) {
    case TRACE_OUTFILE:
        opts->outfile = value;
        break;
    case TRACE_FORMAT:
        opts->format = value;
        break;
    case TRACE_SORT:
        opts->sort = value;
        break;
    case TRACE_PYTHON:
        opts->python = value;
        break;
    default:
        opts->module_flag = true;
        break;
    }
    return 0;
}

/* The long names differ in their first letter, so every prefix of one is
 * unique (optparse's rule, which cProfile's command line follows;
 * --python, sonde's own, keeps to it). */
static const sonde_opt_t topts_table[] = {
    {"--outfile", "--output", 'o', SONDE_OPT_VALUE, TRACE_OUTFILE, SONDE_OPT_NONEMPTY, "OUTFILE",
     "a file name",
     "save the statistics to OUTFILE (written atomically) instead of printing the report: a "
     "pstats file, or pprof (gzipped profile.proto) when OUTFILE ends in .pb.gz or .pprof",
     NULL},
    {"--format", NULL, 'f', SONDE_OPT_VALUE, TRACE_FORMAT, 0, "FORMAT", "a format",
     "the -o file's format: {choices} (pprof is flat: each function's calls and own time, no "
     "callers)",
     topts_formats},
    {"--sort", NULL, 's', SONDE_OPT_VALUE, TRACE_SORT, 0, "SORT", "a sort key",
     "sort order of the printed report, one of {choices} (default: as cProfile of this Python: "
     "cumulative from 3.11, stdname before)",
     sonde_trace_sort_choices},
    {NULL, NULL, 'm', SONDE_OPT_FLAG, TRACE_MODULE, 0, NULL, NULL,
     "the first argument is a module to run", NULL},
    {"--python", NULL, 0, SONDE_OPT_VALUE, TRACE_PYTHON, SONDE_OPT_COMMAND | SONDE_OPT_NONEMPTY,
     "PATH", "a path to an interpreter",
     "the interpreter to run (default: $SONDE_PYTHON, else python3 as found on PATH, so an "
     "activated virtual environment's), as 'sonde run --python'",
     NULL},
};

static const sonde_opt_family_t topts_options = {
    NULL, topts_table, SONDE_ARRAY_LEN(topts_table), topts_apply, NULL,
};
static const sonde_opt_family_t *const topts_families[] = {&topts_options, NULL};

static const sonde_opt_cmd_t topts_command = {
    "trace",
    "usage: sonde trace [-o OUTFILE [-f FORMAT]] [-s SORT] script.py [args ...]\n"
    "       sonde trace [-o OUTFILE [-f FORMAT]] [-s SORT] -m module [args ...]\n"
    "\n"
    "Runs a Python program exactly as `python3 script.py args` would and\n"
    "records every function call, as `python3 -m cProfile` does, at a fraction\n"
    "of its overhead. At exit it prints cProfile's report, or with -o writes\n"
    "a pstats file that `pstats.Stats(OUTFILE)` and `python3 -m pstats` read.\n"
    "Each thread is traced on its own stack.\n",
    "In code: sonde.Profile is a drop-in for cProfile.Profile, and\n"
    "sonde.run(...) / sonde.runctx(...) for cProfile.run / cProfile.runctx.\n",
    topts_families,
    true,
    NULL,
};

void sonde_trace_help(sonde_buf_t *out)
{
    sonde_opt_help(&topts_command, out);
}

/* What the options say together. Returns 0 or -EINVAL. */
static int topts_check(const sonde_trace_opts_t *opts, char *err, size_t err_len)
{
    if (opts->format && strcmp(opts->format, "pprof") == 0 && !opts->outfile)
        return sonde_errf(err, err_len, "-f pprof needs -o OUTFILE (pprof is binary)");
    return 0;
}

int sonde_trace_opts_parse(sonde_trace_opts_t *opts, int argc, char *const *argv, char *err,
                           size_t err_len)
{
    void *targets[] = {opts};
    sonde_opt_ctx_t ctx = {.targets = targets};
    memset(opts, 0, sizeof *opts);
    int rc = sonde_opt_parse(&topts_command, &ctx, argc, argv, err, err_len);
    if (rc < 0) return rc;
    opts->help = ctx.help;
    opts->n_option_tokens = ctx.end;
    if (opts->help) return 0;
    if ((rc = topts_check(opts, err, err_len)) < 0) return rc;
    if (ctx.program < 0)
        return sonde_errf(err, err_len,
                          opts->module_flag
                              ? "option -m needs a module name (see 'sonde trace --help')"
                              : "no program given: sonde trace [-o OUTFILE] [-s SORT] script.py "
                                "[args] (see 'sonde trace --help')");
    *(opts->module_flag ? &opts->module : &opts->script) = argv[ctx.program];
    opts->prog_argv = argv + ctx.program;
    opts->prog_argc = argc - ctx.program;
    return 0;
}

/* ---- the hand-over ----------------------------------------------------------------- */

static void topts_put(sonde_buf_t *out, const char *key, const char *value)
{
    if (!value) return;
    sonde_netstring_put(out, key, strlen(key));
    sonde_netstring_put(out, value, strlen(value));
}

void sonde_trace_opts_encode(const sonde_trace_opts_t *opts, sonde_buf_t *out)
{
    topts_put(out, "outfile", opts->outfile);
    topts_put(out, "format", opts->format);
    topts_put(out, "sort", opts->sort);
}

int sonde_trace_opts_decode(sonde_trace_opts_t *opts, const char *text, char *err, size_t err_len)
{
    char **words = NULL, why[256] = "";
    int n = 0;
    memset(opts, 0, sizeof *opts);
    int rc = sonde_netstring_get_words(text ? text : "", &words, &n);
    if (rc == -ENOMEM) {
        sonde_errf(err, err_len, "out of memory");
        return rc;
    }
    opts->owned = words;
    if (rc == 0 && n % 2) rc = -EINVAL;
    for (int k = 0; rc == 0 && k < n; k += 2)
        rc = sonde_opt_set(&topts_options, opts, words[k], words[k + 1], why, sizeof why);
    if (rc == 0) rc = topts_check(opts, why, sizeof why);
    if (rc == -ENOMEM) {
        sonde_errf(err, err_len, "out of memory");
        return rc;
    }
    if (rc < 0)
        return sonde_errf(err, err_len,
                          "the options handed over by the sonde command cannot be read%s%s%s "
                          "(a command and a package from different builds?)",
                          why[0] ? " (" : "", why, why[0] ? ")" : "");
    return 0;
}

void sonde_trace_opts_free(sonde_trace_opts_t *opts)
{
    sonde_netstring_free_words(opts->owned);
    opts->owned = NULL;
}
