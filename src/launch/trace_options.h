/* trace_options.h — the options of `sonde trace`, parsed once.
 *
 * Owns: sonde_trace_opts_t, its option table, parser and help, and its
 * hand-over encoding. The parser accepts what `python3 -m cProfile`
 * accepts: [-o OUTFILE] [-s SORT] (script | -m module), and -f/--format
 * pstats|pprof for the -o file, with optparse's spellings (-oFILE,
 * --outfile=FILE, unique prefixes of the long names; --output is the same
 * as --outfile, as in every command) and options ending at the program.
 * The command parses the user's words once and hands the parsed options
 * to the interpreter encoded in one environment variable, which the
 * tracer's boot decodes (src/ext/boot.c, src/trace/boot.c) with the
 * parser's own value checks: nothing is parsed twice. The grammar is
 * src/core/opt.c's; the parser never modifies argv and copies nothing
 * (values are borrowed). Plain C, no libpython, no printing: errors come
 * back as a message in the caller's buffer.
 */
#ifndef SONDE_TRACE_OPTIONS_H
#define SONDE_TRACE_OPTIONS_H

#include "../core/common.h"

struct sonde_buf;

typedef struct sonde_trace_opts {
    const char *outfile; /* -o/--outfile, borrowed; NULL = print the report */
    const char *format;  /* -f/--format: "pstats" or "pprof", borrowed; NULL =
                            by -o's ending (.pb.gz, .pprof: pprof), else pstats */
    const char *sort;    /* -s/--sort, borrowed; NULL = the interpreter's
                            cProfile default (stdname before 3.11, then
                            cumulative) */
    bool module_flag;    /* -m was given: the first argument is a module */
    const char *python;  /* --python PATH (the command only, as run's), borrowed */
    bool help;           /* -h/--help (the parse stopped there) */
    /* What to run after a successful parse (unless help): exactly one of
     * script and module. prog_argv[0] is the script path or the module
     * name. Borrowed from argv. */
    const char *script;
    const char *module;
    char *const *prog_argv;
    int prog_argc;
    int n_option_tokens; /* argv words that were options (argv[0..n-1]) */
    char **owned;        /* owned: the decoded words the values point into
                            (sonde_trace_opts_decode); NULL after a parse */
} sonde_trace_opts_t;

/* cProfile's -s choices (pstats.Stats.sort_arg_dict_default, sorted),
 * NULL-terminated. */
extern const char *const sonde_trace_sort_choices[];

/* Parses argv[0..argc-1] (the words after `trace`) into opts (which it
 * clears first). argv is not modified. Returns 0, or -EINVAL with a
 * one-line message in err (no "sonde: " prefix). */
int sonde_trace_opts_parse(sonde_trace_opts_t *opts, int argc, char *const *argv, char *err,
                           size_t err_len);

/* The hand-over of parsed options to the tracer's boot: netstrings, key
 * then value, for outfile, format and sort, each only when set (any byte
 * but NUL may appear in a value). Appends to out (check sonde_buf_error). */
void sonde_trace_opts_encode(const sonde_trace_opts_t *opts, struct sonde_buf *out);
/* Reads what sonde_trace_opts_encode wrote into opts (cleared first),
 * owning copies of the values, checked as the parser checks them. Returns
 * 0, or -EINVAL (malformed, an unknown key or a refused value: a command
 * from another build) / -ENOMEM with a message in err. Call
 * sonde_trace_opts_free afterwards in every case. */
int sonde_trace_opts_decode(sonde_trace_opts_t *opts, const char *text, char *err, size_t err_len);
/* Frees what opts owns (decoded values). Idempotent. */
void sonde_trace_opts_free(sonde_trace_opts_t *opts);

/* Appends the help of `sonde trace`. */
void sonde_trace_help(struct sonde_buf *out);

#endif
