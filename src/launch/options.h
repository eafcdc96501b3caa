/* options.h — the options of `sonde run`, parsed once for every entry.
 *
 * Owns: sonde_run_opts_t, its option tables, parser and help, and its
 * hand-over encoding. The command (`sonde run`, `python3 -m sonde run`)
 * parses the user's words once; the launcher reads the parsed struct
 * (--memory) and hands it to the interpreter encoded in one environment
 * variable, which the boot decodes (src/ext/boot.c). sonde.start() turns
 * its keywords into the same option words and parses them with the same
 * tables (an embedded parse: no program, no --python), so it accepts and
 * refuses the same values with the same messages. The grammar is the one
 * of every command (src/core/opt.c); the parser never modifies its input.
 * Plain C, no libpython, no printing: errors come back as a message in the
 * caller's buffer.
 */
#ifndef SONDE_OPTIONS_H
#define SONDE_OPTIONS_H

#include "../core/common.h"
#include "../core/opt.h"

#define SONDE_MAX_PATTERNS 32
/* Default mean bytes allocated between allocation samples (--memory-sample,
 * alias --malloc-threshold): 512 KiB, as tcmalloc's and Go's heap profilers
 * (the gaps are exponential, so no allocation stride can line up). */
#define SONDE_DEFAULT_MALLOC_THRESHOLD (512ull << 10)
#define SONDE_MIN_MALLOC_THRESHOLD (64ull << 10)
#define SONDE_MAX_MALLOC_THRESHOLD (1ull << 30)

struct sonde_format;
struct sonde_buf;
struct sonde_run_opts_string; /* private to options.c */

typedef struct sonde_run_opts {
    double interval_sec;                          /* sampling interval (--interval), > 0 */
    bool virtual_time;                            /* --virtual-time: CPU time only */
    bool profile_all;                             /* --profile-all */
    const char *profile_only[SONDE_MAX_PATTERNS]; /* in owned storage */
    int n_profile_only;
    const char *profile_exclude[SONDE_MAX_PATTERNS]; /* in owned storage */
    int n_profile_exclude;
    double cpu_percent_threshold; /* --cpu-percent-threshold */
    bool all_lines;               /* --all-lines */
    bool stacks;                  /* --stacks, or a format drawn from stacks:
                                     keep the call stack of each sample */
    bool memory;                  /* --memory: also profile memory (allocator shim) */
    bool no_subprocesses;         /* --no-subprocesses: profile the program alone
                                     (its Python processes are not followed) */
    double child_wait_sec;        /* --child-wait: at the program's end, how long
                                     it waits at most for the followed processes
                                     of its own process group still running */
    uint64_t malloc_threshold;    /* --memory-sample (--malloc-threshold): mean
                                     bytes allocated between memory samples */
    int8_t gpu;                   /* --gpu 1, --no-gpu 0; -1 (default): GPU
                                     figures when a GPU is present */
    bool gc;                      /* --gc: time in garbage collection per line */
    bool verbose;                 /* -v/--verbose: diagnostics on stderr at start */
    bool prior_threads_out;       /* sonde.start(other_threads=False) only (no
                                     option word): leave out the threads already
                                     running at start but the starting one */
    /* The report's format (src/report/format.c): --format, --json, --html,
     * else the output file's ending, else text. Never NULL after a
     * successful parse or decode. */
    const struct sonde_format *format;
    const char *outfile;     /* -o/--output (alias --outfile), borrowed from
                                     argv or owned; NULL = stderr */
    bool format_by_default;  /* after a parse: no option (nor -o's ending)
                                chose the format */
    bool outfile_by_default; /* after a parse: outfile is the format's own
                                file, not -o's */
    bool help;               /* -h/--help was given */
    const char *python;      /* --python PATH (the command's only, never handed
                            over); borrowed from argv; NULL if not given */
    /* What to run: exactly one of script, module and command after a
     * successful parse (unless help). argv of the program:
     * prog_argv[0..prog_argc-1] with prog_argv[0] the script path ("-":
     * standard input), the module name or the code. Borrowed. */
    const char *script;
    const char *module;
    const char *command; /* -c CODE */
    char *const *prog_argv;
    int prog_argc;
    int n_option_tokens; /* argv tokens that were sonde's options */
    /* The command's own options besides these (`sonde run --period` and
     * its options, src/cli/period.c; --live, src/cli/run_live.c; never
     * handed over): a NULL-terminated list of at most 3 families, each
     * parsed into its extra_targets[k] and listed in the help; NULL: none. */
    const sonde_opt_family_t *const *extra_options;
    void *const *extra_targets;
    struct sonde_run_opts_string *owned; /* owned: the copies the fields above
                                            may point into (sonde_run_opts_free) */
} sonde_run_opts_t;

/* Fills opts with the defaults (format NULL until a parse or decode). */
void sonde_run_opts_default(sonde_run_opts_t *opts);
/* Frees what opts owns (pattern copies, decoded strings); opts keeps its
 * flags and numbers. Idempotent. */
void sonde_run_opts_free(sonde_run_opts_t *opts);

/* Parses `argv[0..argc-1]` (the words after `run`) into opts, which must
 * have been set by sonde_run_opts_default (and extra_options, when the
 * command has more). When need_program is false, parsing stops at the end
 * of the options and no script is required (sonde.start(): the program is
 * already running; -m, -c, --python and --help are refused). -h/--help
 * sets help and ends the parse. argv is not modified;
 * opts borrows from it (outfile, script, prog_argv) and owns copies of the
 * patterns. Returns 0, or -EINVAL (-ENOMEM) with a one-line message in err
 * (no "sonde: " prefix, no newline). Call sonde_run_opts_free afterwards
 * in every case. */
int sonde_run_opts_parse(sonde_run_opts_t *opts, int argc, char *const *argv, bool need_program,
                         char *err, size_t err_len);

/* The options that choose the profiled files, shared by `run`, `attach`
 * and `record` (src/cli/attach_options.c): --profile-all, --profile-only
 * PAT[,PAT], --profile-exclude PAT[,PAT], into a sonde_run_opts_t's
 * profile_all / profile_only / profile_exclude (patterns copied, owned by
 * it). */
extern const sonde_opt_family_t sonde_run_file_options;

/* The hand-over of a parsed run to the interpreter (SONDE_RUN_OPTIONS):
 * the options as a sequence of netstrings ("<length>:<bytes>,"), key then
 * value, in this order: interval, virtual_time, profile_all, profile_only
 * (once per pattern), profile_exclude (once per pattern),
 * cpu_percent_threshold, all_lines, stacks, memory, malloc_threshold, gpu, gc,
 * verbose, format, outfile (only when set). Numbers in C's "%.17g" / "%llu"
 * / "%d", flags "0" or "1". Any byte but NUL may appear in a value.
 * Appends to out (check sonde_buf_error). */
void sonde_run_opts_encode(const sonde_run_opts_t *opts, struct sonde_buf *out);
/* Reads what sonde_run_opts_encode wrote into opts (defaults first),
 * owning copies of every string. Returns 0, or -EINVAL (malformed or
 * unknown key: a launcher from another sonde) / -ENOMEM with a message in
 * err. Call sonde_run_opts_free afterwards in every case. */
int sonde_run_opts_decode(sonde_run_opts_t *opts, const char *text, char *err, size_t err_len);

/* Appends the help of `sonde run` (with extra: the command's own options
 * besides run's, as in sonde_run_opts_t.extra_options). */
void sonde_run_help(const sonde_opt_family_t *const *extra, struct sonde_buf *out);

#endif
