/* trace_options.h — the options of `sonde trace`, parsed once for every entry.
 *
 * Owns: sonde_trace_opts_t and its parser, which accepts what
 * `python3 -m cProfile` accepts: [-o OUTFILE] [-s SORT] (script | -m module),
 * and -f/--format pstats|pprof for the -o file,
 * with optparse's spellings (-oFILE, --outfile=FILE, unique prefixes of the
 * long names) and options ending at the program. The command-line tool
 * parses the user's words with it to check them; the launcher hands the
 * option words over as netstrings and the tracer's boot reads its options
 * from them with the same parser. The parser never modifies argv and
 * copies nothing (values are borrowed). Plain C, no libpython, no
 * printing: errors come back as a message in the caller's buffer.
 */
#ifndef SONDE_TRACE_OPTIONS_H
#define SONDE_TRACE_OPTIONS_H

#include "../core/common.h"

typedef struct sonde_trace_opts {
    const char *outfile; /* -o/--outfile, borrowed; NULL = print the report */
    const char *format;  /* -f/--format: "pstats" or "pprof", borrowed; NULL =
                            by -o's ending (.pb.gz, .pprof: pprof), else pstats */
    const char *sort;    /* -s/--sort, borrowed; NULL = the interpreter's
                            cProfile default (stdname before 3.11, then
                            cumulative) */
    bool module_flag;    /* -m was given: the first argument is a module */
    bool help;           /* -h/--help */
    /* What to run after a successful parse with need_program (unless
     * help): exactly one of script and module. prog_argv[0] is the script
     * path or the module name. Borrowed from argv. */
    const char *script;
    const char *module;
    char *const *prog_argv;
    int prog_argc;
    int n_option_tokens; /* argv words that were options (argv[0..n-1]) */
} sonde_trace_opts_t;

/* cProfile's -s choices (pstats.Stats.sort_arg_dict_default, sorted),
 * NULL-terminated. */
extern const char *const sonde_trace_sort_choices[];

/* Parses argv[0..argc-1] (the words after `trace`). When need_program is
 * false (the boot: the program already runs), every word must be an
 * option. argv is not modified. Returns 0, or -EINVAL with a one-line message in err (no
 * "sonde: " prefix). */
int sonde_trace_opts_parse(sonde_trace_opts_t *opts, int argc, char *const *argv, bool need_program,
                           char *err, size_t err_len);

/* The usage text of `sonde trace`. */
extern const char sonde_trace_usage[];

#endif
