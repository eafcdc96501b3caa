/* options.h — the options of `sonde run`, parsed once for every entry.
 *
 * Owns: sonde_run_opts_t and its parser. The command-line tool parses the
 * user's arguments with it; the extension module parses the same tokens
 * again at boot, when the launcher hands them over in the environment, and
 * for `python3 -m sonde run ...`. Plain C, no libpython, no printing: errors
 * come back as a message in the caller's buffer.
 */
#ifndef SONDE_OPTIONS_H
#define SONDE_OPTIONS_H

#include "../core/common.h"

#define SONDE_MAX_PATTERNS 32
/* Default bytes of net allocation change per memory sample: a prime just
 * above 10 MiB (seed 000 §3.2), so that no allocation stride lines up. */
#define SONDE_DEFAULT_MALLOC_THRESHOLD 10485767ull
#define SONDE_MIN_MALLOC_THRESHOLD (64ull << 10)
#define SONDE_MAX_MALLOC_THRESHOLD (1ull << 30)

typedef struct sonde_run_opts {
    double interval_sec;          /* sampling interval (--interval), > 0 */
    bool virtual_time;            /* --virtual-time: CPU time only */
    bool profile_all;             /* --profile-all */
    const char *profile_only[SONDE_MAX_PATTERNS];    /* borrowed from argv */
    int n_profile_only;
    const char *profile_exclude[SONDE_MAX_PATTERNS]; /* borrowed from argv */
    int n_profile_exclude;
    double cpu_percent_threshold; /* --cpu-percent-threshold */
    bool all_lines;               /* --all-lines */
    bool stacks;                  /* --stacks: keep the call stack of each sample */
    bool memory;                  /* --memory: also profile memory (allocator shim) */
    uint64_t malloc_threshold;    /* --malloc-threshold: bytes of net allocation
                                     change per memory sample */
    int8_t gpu;                   /* --gpu 1, --no-gpu 0; -1 (default): GPU
                                     figures when a GPU is present */
    bool verbose;                 /* -v/--verbose: diagnostics on stderr at start */
    bool json;                    /* --json */
    bool html;                    /* --html: a self-contained HTML report */
    const char *outfile;          /* -o/--outfile, borrowed; NULL = stderr */
    bool help;                    /* -h/--help was given */
    /* What to run: exactly one of script and module after a successful parse
     * (unless help). argv of the program: prog_argv[0..prog_argc-1] with
     * prog_argv[0] the script path or the module name. Borrowed. */
    const char *script;
    const char *module;
    char **prog_argv;
    int prog_argc;
    int n_option_tokens;          /* argv tokens that were sonde's options */
} sonde_run_opts_t;

void sonde_run_opts_default(sonde_run_opts_t *opts);

/* Parses `argv[0..argc-1]` (the words after `run`). When need_program is
 * false, parsing stops at the end of the options and no script is
 * required (the boot path: the program is already in sys.argv).
 * Returns 0, or -EINVAL with a one-line message in err (no "sonde: "
 * prefix, no newline). Pattern lists split on ',' in place: the argv
 * strings are modified. */
int sonde_run_opts_parse(sonde_run_opts_t *opts, int argc, char **argv,
                         bool need_program, char *err, size_t err_len);

/* The usage text of `sonde run`. */
extern const char sonde_run_usage[];

#endif
