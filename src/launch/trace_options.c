/* trace_options.c — parser for the options of `sonde trace` (see trace_options.h).
 *
 * Owns: sonde_trace_opts_parse, the -s choices and the usage text. Called
 * by the CLI (src/cli/trace.c) and by the tracer's boot (src/trace/). No
 * signal or hook context.
 */
#include "trace_options.h"

#include "../core/buf.h"

#include <stdio.h>
#include <string.h>

const char *const sonde_trace_sort_choices[] = {
    "calls",  "cumtime", "cumulative", "filename", "line", "module",  "name",
    "ncalls", "nfl",     "pcalls",     "stdname",  "time", "tottime", NULL,
};

const char sonde_trace_usage[] =
    "usage: sonde trace [-o OUTFILE [-f FORMAT]] [-s SORT] script.py [args ...]\n"
    "       sonde trace [-o OUTFILE [-f FORMAT]] [-s SORT] -m module [args ...]\n"
    "\n"
    "Runs a Python program exactly as `python3 script.py args` would and\n"
    "records every function call, as `python3 -m cProfile` does, at a fraction\n"
    "of its overhead. At exit it prints cProfile's report, or with -o writes\n"
    "a pstats file that `pstats.Stats(OUTFILE)` and `python3 -m pstats` read.\n"
    "Each thread is traced on its own stack.\n"
    "\n"
    "options:\n"
    "  -o, --outfile OUTFILE  save the statistics to OUTFILE (written atomically)\n"
    "                         instead of printing the report: a pstats file, or\n"
    "                         pprof (gzipped profile.proto) when OUTFILE ends in\n"
    "                         .pb.gz or .pprof\n"
    "  -f, --format FORMAT    the -o file's format: pstats or pprof (flat: each\n"
    "                         function's calls and own time, no callers)\n"
    "  -s, --sort SORT        sort order of the printed report, one of calls,\n"
    "                         cumtime, cumulative, filename, line, module, name,\n"
    "                         ncalls, nfl, pcalls, stdname, time, tottime\n"
    "                         (default: as cProfile of this Python: cumulative\n"
    "                         from 3.11, stdname before)\n"
    "  -m                     the first argument is a module to run\n"
    "  -h, --help             show this help\n"
    "\n"
    "In code: sonde.Profile is a drop-in for cProfile.Profile, and\n"
    "sonde.run(...) / sonde.runctx(...) for cProfile.run / cProfile.runctx.\n";

/* Matches a long option as optparse does: the full name or an unambiguous
 * prefix of it (at least "--" plus one letter), optionally followed by
 * "=value". The long options here (--outfile, --format, --sort, --help) start with
 * different letters, so every prefix is unambiguous. Returns the length of
 * the name part of arg when it names `name`, else 0. */
static size_t topts_long(const char *arg, const char *name)
{
    if (strncmp(arg, "--", 2) != 0 || !arg[2]) return 0;
    const char *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    if (len > strlen(name) || strncmp(arg, name, len) != 0) return 0;
    return len;
}

/* An option taking a value: `-x VALUE`, `-xVALUE`, `--name VALUE`,
 * `--name=VALUE` (or a prefix of --name). Returns 1 matched, 0 not this
 * option, -EINVAL value missing. */
static int topts_valued(int argc, char *const *argv, int *i, char short_name, const char *long_name,
                        const char **value)
{
    const char *arg = argv[*i];
    if (arg[0] == '-' && arg[1] == short_name) {
        if (arg[2]) {
            *value = arg + 2;
            return 1;
        }
        if (*i + 1 >= argc) return -EINVAL;
        *value = argv[++*i];
        return 1;
    }
    size_t len = topts_long(arg, long_name);
    if (!len) return 0;
    if (arg[len] == '=') {
        *value = arg + len + 1;
        return 1;
    }
    if (*i + 1 >= argc) return -EINVAL;
    *value = argv[++*i];
    return 1;
}

static bool topts_valid_sort(const char *key)
{
    for (int k = 0; sonde_trace_sort_choices[k]; k++)
        if (strcmp(key, sonde_trace_sort_choices[k]) == 0) return true;
    return false;
}

int sonde_trace_opts_parse(sonde_trace_opts_t *opts, int argc, char *const *argv, bool need_program,
                           char *err, size_t err_len)
{
    memset(opts, 0, sizeof *opts);
    int i = 0;
    for (; i < argc; i++) {
        const char *arg = argv[i];
        const char *value = NULL;
        int rc;
        if (strcmp(arg, "--") == 0) {
            i++;
            break;
        }
        if (arg[0] != '-' || arg[1] == 0) break; /* the program */
        if (strcmp(arg, "-h") == 0 || topts_long(arg, "--help") == strlen(arg)) {
            opts->help = true;
            continue;
        }
        if (strcmp(arg, "-m") == 0) {
            opts->module_flag = true;
            continue;
        }
        if ((rc = topts_valued(argc, argv, &i, 'o', "--outfile", &value)) != 0) {
            if (rc < 0 || !*value)
                return sonde_errf(err, err_len, "option -o needs a file name%s", "");
            opts->outfile = value;
            continue;
        }
        if ((rc = topts_valued(argc, argv, &i, 'f', "--format", &value)) != 0) {
            if (rc < 0 || (strcmp(value, "pstats") != 0 && strcmp(value, "pprof") != 0))
                return sonde_errf(err, err_len, "option -f needs a format: pstats or pprof%s", "");
            opts->format = value;
            continue;
        }
        if ((rc = topts_valued(argc, argv, &i, 's', "--sort", &value)) != 0) {
            if (rc < 0) return sonde_errf(err, err_len, "option -s needs a sort key%s", "");
            if (!topts_valid_sort(value))
                return sonde_errf(err, err_len,
                                  "invalid sort key '%s' for -s (choose from calls, cumtime, "
                                  "cumulative, filename, line, module, name, ncalls, nfl, pcalls, "
                                  "stdname, time, tottime)",
                                  value);
            opts->sort = value;
            continue;
        }
        return sonde_errf(err, err_len, "unknown option '%s' (see 'sonde trace --help')", arg);
    }
    opts->n_option_tokens = i;
    if (opts->format && strcmp(opts->format, "pprof") == 0 && !opts->outfile)
        return sonde_errf(err, err_len, "-f pprof needs -o OUTFILE (pprof is binary)%s", "");
    if (!need_program) {
        if (i < argc)
            return sonde_errf(err, err_len, "unexpected argument '%s' among the options", argv[i]);
        return 0;
    }
    if (opts->help) return 0;
    if (i >= argc) {
        return sonde_errf(err, err_len,
                          opts->module_flag
                              ? "option -m needs a module name (see 'sonde trace --help')%s"
                              : "no program given: sonde trace [-o OUTFILE] [-s SORT] script.py "
                                "[args] (see 'sonde trace --help')%s",
                          "");
    }
    if (opts->module_flag)
        opts->module = argv[i];
    else
        opts->script = argv[i];
    opts->prog_argv = argv + i;
    opts->prog_argc = argc - i;
    return 0;
}
