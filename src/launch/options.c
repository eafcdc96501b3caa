/* options.c — the options of `sonde run` (see options.h).
 *
 * Owns: run's option tables (the program, run's own options, the files to
 * profile), their apply functions, sonde_run_opts_parse, the help of
 * `sonde run` and the hand-over encoding (encode/decode). Called by the
 * CLI (src/cli/run.c), by the extension for sonde.start() (src/ext/module.c)
 * and, to decode the hand-over, by its boot (src/ext/boot.c). The grammar
 * is src/core/opt.c's; the format and output options are
 * report_options.c's. The parser reads argv without changing it; patterns
 * and decoded strings are copied into storage the options own. Each
 * option's value is checked by one setter, shared by the parser and the
 * decoder. No signal or hook context.
 */
#include "options.h"

#include "../core/buf.h"
#include "netstring.h"
#include "report_options.h"
#include "../report/report.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One owned string (a pattern, a decoded value). */
struct sonde_run_opts_string {
    struct sonde_run_opts_string *next;
    char text[];
};

void sonde_run_opts_default(sonde_run_opts_t *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->interval_sec = 0.01;
    opts->child_wait_sec = 1.0;
    opts->cpu_percent_threshold = 1.0;
    opts->malloc_threshold = SONDE_DEFAULT_MALLOC_THRESHOLD;
    opts->gpu = -1;
}

void sonde_run_opts_free(sonde_run_opts_t *opts)
{
    struct sonde_run_opts_string *s = opts->owned;
    while (s) {
        struct sonde_run_opts_string *next = s->next;
        free(s);
        s = next;
    }
    opts->owned = NULL;
}

/* A copy of text[0..len-1] that opts owns; NULL when out of memory. */
static char *opts_own(sonde_run_opts_t *opts, const char *text, size_t len)
{
    struct sonde_run_opts_string *s = malloc(sizeof *s + len + 1);
    if (!s) return NULL;
    memcpy(s->text, text, len);
    s->text[len] = 0;
    s->next = opts->owned;
    opts->owned = s;
    return s->text;
}

/* ---- one setter per value (the parser's and the decoder's) -------------------- */

/* Parses a non-negative finite number; returns 0 or -EINVAL. */
static int opts_number(const char *text, double *out)
{
    if (!text || !*text) return -EINVAL;
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || !end || *end || !(v >= 0) || v > 1e9) return -EINVAL;
    *out = v;
    return 0;
}

static int opts_set_interval(sonde_run_opts_t *opts, const char *text)
{
    double v = 0;
    if (opts_number(text, &v) || v < 0.0001 || v > 10) return -EINVAL;
    opts->interval_sec = v;
    return 0;
}

static int opts_set_child_wait(sonde_run_opts_t *opts, const char *text)
{
    double v = 0;
    if (opts_number(text, &v) || v > 3600) return -EINVAL;
    opts->child_wait_sec = v;
    return 0;
}

static int opts_set_threshold(sonde_run_opts_t *opts, const char *text)
{
    double v = 0;
    if (opts_number(text, &v) || v > 100) return -EINVAL;
    opts->cpu_percent_threshold = v;
    return 0;
}

/* A byte count with an optional K, M or G suffix (powers of 1024) within
 * the memory threshold's bounds. Returns 0 or -EINVAL. */
static int opts_set_malloc_threshold(sonde_run_opts_t *opts, const char *text)
{
    if (!text || !*text || *text == '-') return -EINVAL;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || end == text) return -EINVAL;
    unsigned shift = 0;
    if (*end == 'K' || *end == 'k') shift = 10;
    if (*end == 'M' || *end == 'm') shift = 20;
    if (*end == 'G' || *end == 'g') shift = 30;
    if (shift) end++;
    if (*end || v > (SONDE_MAX_MALLOC_THRESHOLD >> shift)) return -EINVAL;
    v <<= shift;
    if (v < SONDE_MIN_MALLOC_THRESHOLD) return -EINVAL;
    opts->malloc_threshold = v;
    return 0;
}

/* Adds the patterns of a comma list (empty items skipped), as owned
 * copies. Returns 0, -EINVAL (none, or too many) or -ENOMEM. */
static int opts_add_patterns(sonde_run_opts_t *opts, const char *list, const char **out, int *count)
{
    int before = *count;
    for (const char *p = list ? list : ""; *p;) {
        size_t n = strcspn(p, ",");
        if (n > 0) {
            if (*count >= SONDE_MAX_PATTERNS) return -EINVAL;
            const char *copy = opts_own(opts, p, n);
            if (!copy) return -ENOMEM;
            out[(*count)++] = copy;
        }
        p += n;
        if (*p == ',') p++;
    }
    return *count > before ? 0 : -EINVAL;
}

static int opts_set_format(sonde_run_opts_t *opts, const char *name)
{
    const sonde_format_t *format = sonde_format_named(name);
    if (!format) return -EINVAL;
    opts->format = format;
    return 0;
}

/* ---- the tables ------------------------------------------------------------------ */

enum {
    RUN_MODULE,
    RUN_CODE,
    RUN_PYTHON,
    RUN_INTERVAL,
    RUN_VIRTUAL_TIME,
    RUN_THRESHOLD,
    RUN_ALL_LINES,
    RUN_STACKS,
    RUN_MEMORY,
    RUN_MALLOC,
    RUN_GPU,
    RUN_NO_GPU,
    RUN_GC,
    RUN_SUBPROCESSES,
    RUN_NO_SUBPROCESSES,
    RUN_CHILD_WAIT,
    RUN_VERBOSE,
    RUN_PROFILE_ALL,
    RUN_PROFILE_ONLY,
    RUN_PROFILE_EXCLUDE,
};

static int opts_apply(void *target, const sonde_opt_t *opt, const char *word, const char *value,
                      char *err, size_t err_len)
{
    sonde_run_opts_t *opts = target;
    int rc = 0;
    switch (opt->id) {
    case RUN_MODULE:
        opts->module = value;
        break;
    case RUN_CODE:
        opts->command = value;
        break;
    case RUN_PYTHON:
        opts->python = value;
        break;
    case RUN_INTERVAL:
        return opts_set_interval(opts, value);
    case RUN_VIRTUAL_TIME:
        opts->virtual_time = true;
        break;
    case RUN_THRESHOLD:
        return opts_set_threshold(opts, value);
    case RUN_ALL_LINES:
        opts->all_lines = true;
        break;
    case RUN_STACKS:
        opts->stacks = true;
        break;
    case RUN_MEMORY:
        opts->memory = true;
        break;
    case RUN_MALLOC:
        return opts_set_malloc_threshold(opts, value);
    case RUN_GPU:
    case RUN_NO_GPU:
        opts->gpu = opt->id == RUN_GPU;
        break;
    case RUN_GC:
        opts->gc = true;
        break;
    case RUN_SUBPROCESSES:
    case RUN_NO_SUBPROCESSES:
        opts->no_subprocesses = opt->id == RUN_NO_SUBPROCESSES;
        break;
    case RUN_CHILD_WAIT:
        return opts_set_child_wait(opts, value);
    case RUN_VERBOSE:
        opts->verbose = true;
        break;
    case RUN_PROFILE_ALL:
        opts->profile_all = true;
        break;
    case RUN_PROFILE_ONLY:
        rc = opts_add_patterns(opts, value, opts->profile_only, &opts->n_profile_only);
        break;
    default:
        rc = opts_add_patterns(opts, value, opts->profile_exclude, &opts->n_profile_exclude);
        break;
    }
    if (rc == -ENOMEM) sonde_errf(err, err_len, "out of memory");
    return rc;
}

static const sonde_opt_t run_program_table[] = {
    {NULL, NULL, 'm', SONDE_OPT_PROGRAM, RUN_MODULE, 0, "MODULE", "a module name",
     "run a module, as `python3 -m MODULE`", NULL},
    {NULL, NULL, 'c', SONDE_OPT_PROGRAM, RUN_CODE, 0, "CODE", "the code to run",
     "run CODE, as `python3 -c CODE` (its lines are reported as those of the file <string>; a "
     "script read from standard input with `-`, as those of <stdin>)",
     NULL},
    {"--python", NULL, 0, SONDE_OPT_VALUE, RUN_PYTHON, SONDE_OPT_COMMAND | SONDE_OPT_NONEMPTY,
     "PATH", "a path to an interpreter",
     "the interpreter to run (default: $SONDE_PYTHON, else python3 as found on PATH, so an "
     "activated virtual environment's)",
     NULL},
};

static const sonde_opt_t run_table[] = {
    {"--interval", NULL, 0, SONDE_OPT_VALUE, RUN_INTERVAL, 0, "SEC",
     "a number of seconds between 0.0001 and 10", "sampling interval in seconds (default 0.01)",
     NULL},
    {"--virtual-time", NULL, 0, SONDE_OPT_FLAG, RUN_VIRTUAL_TIME, 0, NULL, NULL,
     "sample CPU time only (no system time)", NULL},
    {"--cpu-percent-threshold", NULL, 0, SONDE_OPT_VALUE, RUN_THRESHOLD, 0, "PCT",
     "a percentage between 0 and 100", "report lines with at least PCT % of the time (default 1)",
     NULL},
    {"--all-lines", NULL, 0, SONDE_OPT_FLAG, RUN_ALL_LINES, 0, NULL, NULL,
     "report every line of every profiled file", NULL},
    {"--stacks", NULL, 0, SONDE_OPT_FLAG, RUN_STACKS, 0, NULL, NULL,
     "also record the Python call stack of every sample (flame graphs in the JSON and HTML "
     "reports; the formats drawn from call stacks record them anyway)",
     NULL},
    {"--memory", NULL, 0, SONDE_OPT_FLAG, RUN_MEMORY, 0, NULL, NULL,
     "also profile memory: per line, how much it allocated (Python objects vs native), what it "
     "still holds, likely leaks, and how many MB/s it copied (preloads an allocator shim)",
     NULL},
    {"--memory-sample", "--malloc-threshold", 0, SONDE_OPT_VALUE, RUN_MALLOC, 0, "BYTES",
     "a byte count between 64K and 1G",
     "sample one allocation per this many bytes allocated, on average (default 512K; suffixes "
     "K, M, G)",
     NULL},
    {"--gpu", NULL, 0, SONDE_OPT_FLAG, RUN_GPU, 0, NULL, NULL,
     "GPU utilisation and GPU memory per line, read through NVML (default: on when an NVIDIA "
     "GPU and its driver are present)",
     NULL},
    {"--no-gpu", NULL, 0, SONDE_OPT_FLAG, RUN_NO_GPU, 0, NULL, NULL, NULL, NULL},
    {"--gc", NULL, 0, SONDE_OPT_FLAG, RUN_GC, 0, NULL, NULL,
     "also time Python's garbage collection: per line, the share of its time spent in the "
     "collections it started (its allocations, or its gc.collect())",
     NULL},
    {"--subprocesses", NULL, 0, SONDE_OPT_FLAG, RUN_SUBPROCESSES, 0, NULL, NULL,
     "profile the Python processes the program starts (fork, multiprocessing, subprocess of "
     "this interpreter) and merge them into one report (default), or only the program",
     NULL},
    {"--no-subprocesses", NULL, 0, SONDE_OPT_FLAG, RUN_NO_SUBPROCESSES, 0, NULL, NULL, NULL, NULL},
    {"--child-wait", NULL, 0, SONDE_OPT_VALUE, RUN_CHILD_WAIT, 0, "SEC",
     "a number of seconds between 0 and 3600",
     "at the program's end, wait at most SEC seconds (default 1) for the followed processes of "
     "its process group that still run; those still running then are left out, and counted",
     NULL},
    {"--verbose", NULL, 'v', SONDE_OPT_FLAG, RUN_VERBOSE, 0, NULL, NULL,
     "say on stderr at start what is profiled and why something is not (no GPU, ...)", NULL},
};

static const sonde_opt_t run_file_table[] = {
    {"--profile-all", NULL, 0, SONDE_OPT_FLAG, RUN_PROFILE_ALL, 0, NULL, NULL,
     "also profile the standard library and site-packages (default: only your files)", NULL},
    {"--profile-only", NULL, 0, SONDE_OPT_VALUE, RUN_PROFILE_ONLY, 0, "PAT[,PAT]",
     "a comma-separated list of at most 32 patterns",
     "profile only files whose path contains a PAT", NULL},
    {"--profile-exclude", NULL, 0, SONDE_OPT_VALUE, RUN_PROFILE_EXCLUDE, 0, "PAT[,PAT]",
     "a comma-separated list of at most 32 patterns",
     "do not profile files whose path contains a PAT", NULL},
};

static const sonde_opt_family_t run_program_options = {
    NULL, run_program_table, SONDE_ARRAY_LEN(run_program_table), opts_apply, NULL,
};
static const sonde_opt_family_t run_options = {
    NULL, run_table, SONDE_ARRAY_LEN(run_table), opts_apply, NULL,
};
const sonde_opt_family_t sonde_run_file_options = {
    NULL, run_file_table, SONDE_ARRAY_LEN(run_file_table), opts_apply, NULL,
};

static const char run_usage[] =
    "usage: sonde run [options] script.py [args ...]\n"
    "       sonde run [options] -m module [args ...]\n"
    "       sonde run [options] -c code [args ...]\n"
    "       sonde run [options] - [args ...] < script.py\n"
    "\n"
    "Runs a Python program exactly as `python3 script.py args` would, samples\n"
    "where its time goes, and prints a line-level report on standard error when\n"
    "it exits (or writes it to -o's file). Each line's time is split into\n"
    "Python (the interpreter running the line's bytecode), native (C code\n"
    "called from the line) and system (blocked in the kernel: sleep, I/O).\n"
    "Threads are included.\n";

static const char run_epilog[] =
    "Time spent in files that are not profiled is charged to the nearest\n"
    "calling line of a profiled file. The colour report is used only on a\n"
    "terminal and never when NO_COLOR is set.\n";

/* Run's command: its families (extra: the command's own, a NULL-terminated
 * list, or NULL) in families[], one target per family in targets[]
 * (report: the format and output options'; extra_targets: one per extra
 * family). */
#define RUN_MAX_EXTRA 3
#define RUN_MAX_FAMILIES (6 + RUN_MAX_EXTRA)
static void run_command(sonde_opt_cmd_t *cmd, const sonde_opt_family_t **families, void **targets,
                        sonde_run_opts_t *opts, sonde_report_choice_t *report,
                        const sonde_opt_family_t *const *extra, void *const *extra_targets)
{
    const sonde_opt_family_t *all[] = {&run_program_options, &run_options, &sonde_run_file_options,
                                       &sonde_report_format_options, &sonde_report_output_options};
    void *to[] = {opts, opts, opts, report, report};
    size_t n = 0;
    for (size_t k = 0; k < SONDE_ARRAY_LEN(all); k++, n++) {
        families[n] = all[k];
        targets[n] = to[k];
    }
    for (size_t k = 0; extra && extra[k] && k < RUN_MAX_EXTRA; k++, n++) {
        families[n] = extra[k];
        targets[n] = extra_targets ? extra_targets[k] : NULL;
    }
    families[n] = NULL;
    *cmd = (sonde_opt_cmd_t){"run", run_usage, run_epilog, families, false, NULL};
}

void sonde_run_help(const sonde_opt_family_t *const *extra, sonde_buf_t *out)
{
    const sonde_opt_family_t *families[RUN_MAX_FAMILIES];
    void *targets[RUN_MAX_FAMILIES];
    sonde_opt_cmd_t cmd;
    run_command(&cmd, families, targets, NULL, NULL, extra, NULL);
    sonde_opt_help(&cmd, out);
}

/* After the options: the format from the output's name when none was
 * given, stacks for the formats drawn from them, the format's own file
 * when no output was named. */
static void opts_settle_format(sonde_run_opts_t *opts)
{
    if (!opts->format && opts->outfile) opts->format = sonde_format_of_path(opts->outfile);
    opts->format_by_default = !opts->format;
    if (!opts->format) opts->format = sonde_format_default();
    if (opts->format->needs_stacks) opts->stacks = true;
    opts->outfile_by_default = !opts->outfile && opts->format->default_file;
    if (!opts->outfile) opts->outfile = opts->format->default_file;
}

int sonde_run_opts_parse(sonde_run_opts_t *opts, int argc, char *const *argv, bool need_program,
                         char *err, size_t err_len)
{
    const sonde_opt_family_t *families[RUN_MAX_FAMILIES];
    void *targets[RUN_MAX_FAMILIES];
    sonde_report_choice_t report = {0};
    sonde_opt_cmd_t cmd;
    run_command(&cmd, families, targets, opts, &report, opts->extra_options, opts->extra_targets);
    sonde_opt_ctx_t ctx = {.targets = targets, .embedded = !need_program};
    int rc = sonde_opt_parse(&cmd, &ctx, argc, argv, err, err_len);
    if (rc < 0) return rc;
    opts->help = ctx.help;
    opts->n_option_tokens = ctx.end;
    opts->format = report.format;
    if (report.outfile) opts->outfile = report.outfile;
    opts_settle_format(opts);
    if (!need_program || opts->help) return 0;
    if (ctx.program < 0)
        return sonde_errf(err, err_len,
                          "no program given: sonde run [options] script.py [args] (see 'sonde run "
                          "--help')");
    /* prog_argv[0] is the script, the module name or the code (its
     * option's word when attached: -mpkg); the rest are its arguments */
    if (!ctx.program_opt) opts->script = argv[ctx.program];
    opts->prog_argv = argv + ctx.program;
    opts->prog_argc = argc - ctx.program;
    return 0;
}

/* ---- the hand-over ----------------------------------------------------------------- */

static void enc_field(sonde_buf_t *out, const char *key, const char *value)
{
    sonde_netstring_put(out, key, strlen(key));
    sonde_netstring_put(out, value, strlen(value));
}

static void enc_number(sonde_buf_t *out, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void enc_number(sonde_buf_t *out, const char *key, const char *fmt, ...)
{
    char text[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    enc_field(out, key, text);
}

void sonde_run_opts_encode(const sonde_run_opts_t *opts, sonde_buf_t *out)
{
    enc_number(out, "interval", "%.17g", opts->interval_sec);
    enc_number(out, "virtual_time", "%d", opts->virtual_time);
    enc_number(out, "profile_all", "%d", opts->profile_all);
    for (int k = 0; k < opts->n_profile_only; k++)
        enc_field(out, "profile_only", opts->profile_only[k]);
    for (int k = 0; k < opts->n_profile_exclude; k++)
        enc_field(out, "profile_exclude", opts->profile_exclude[k]);
    enc_number(out, "cpu_percent_threshold", "%.17g", opts->cpu_percent_threshold);
    enc_number(out, "all_lines", "%d", opts->all_lines);
    enc_number(out, "stacks", "%d", opts->stacks);
    enc_number(out, "memory", "%d", opts->memory);
    enc_number(out, "malloc_threshold", "%llu", (unsigned long long)opts->malloc_threshold);
    enc_number(out, "gpu", "%d", opts->gpu);
    enc_number(out, "gc", "%d", opts->gc);
    enc_number(out, "verbose", "%d", opts->verbose);
    enc_number(out, "subprocesses", "%d", !opts->no_subprocesses);
    enc_number(out, "child_wait", "%.17g", opts->child_wait_sec);
    enc_field(out, "format", opts->format ? opts->format->name : sonde_format_default()->name);
    if (opts->outfile) enc_field(out, "outfile", opts->outfile);
}

/* Reads one netstring at *p (before end) into an owned copy. Returns 0 or
 * -EINVAL / -ENOMEM. */
static int dec_netstring(sonde_run_opts_t *opts, const char **p, const char *end, char **text)
{
    const char *item = NULL;
    size_t len = 0;
    if (sonde_netstring_next(p, end, &item, &len) < 0 || memchr(item, 0, len)) return -EINVAL;
    return (*text = opts_own(opts, item, len)) ? 0 : -ENOMEM;
}

/* A flag's value: "0" or "1". */
static int dec_flag(const char *text, bool *out)
{
    if (strcmp(text, "0") != 0 && strcmp(text, "1") != 0) return -EINVAL;
    *out = text[0] == '1';
    return 0;
}

/* Applies one decoded field. Returns 0, -EINVAL or -ENOMEM. */
static int dec_field(sonde_run_opts_t *opts, const char *key, const char *value)
{
    if (strcmp(key, "interval") == 0) return opts_set_interval(opts, value);
    if (strcmp(key, "virtual_time") == 0) return dec_flag(value, &opts->virtual_time);
    if (strcmp(key, "profile_all") == 0) return dec_flag(value, &opts->profile_all);
    if (strcmp(key, "profile_only") == 0 || strcmp(key, "profile_exclude") == 0) {
        bool only = strcmp(key, "profile_only") == 0;
        if (!*value || strchr(value, ',')) return -EINVAL; /* one pattern per field */
        return only ? opts_add_patterns(opts, value, opts->profile_only, &opts->n_profile_only)
                    : opts_add_patterns(opts, value, opts->profile_exclude,
                                        &opts->n_profile_exclude);
    }
    if (strcmp(key, "cpu_percent_threshold") == 0) return opts_set_threshold(opts, value);
    if (strcmp(key, "all_lines") == 0) return dec_flag(value, &opts->all_lines);
    if (strcmp(key, "stacks") == 0) return dec_flag(value, &opts->stacks);
    if (strcmp(key, "memory") == 0) return dec_flag(value, &opts->memory);
    if (strcmp(key, "malloc_threshold") == 0) return opts_set_malloc_threshold(opts, value);
    if (strcmp(key, "gpu") == 0) {
        if (strcmp(value, "-1") != 0 && strcmp(value, "0") != 0 && strcmp(value, "1") != 0)
            return -EINVAL;
        opts->gpu = (int8_t)atoi(value);
        return 0;
    }
    if (strcmp(key, "gc") == 0) return dec_flag(value, &opts->gc);
    if (strcmp(key, "verbose") == 0) return dec_flag(value, &opts->verbose);
    if (strcmp(key, "subprocesses") == 0) {
        bool follow = true;
        int rc = dec_flag(value, &follow);
        opts->no_subprocesses = !follow;
        return rc;
    }
    if (strcmp(key, "child_wait") == 0) return opts_set_child_wait(opts, value);
    if (strcmp(key, "format") == 0) return opts_set_format(opts, value);
    if (strcmp(key, "outfile") == 0) {
        if (!*value) return -EINVAL;
        opts->outfile = value;
        return 0;
    }
    return -EINVAL;
}

int sonde_run_opts_decode(sonde_run_opts_t *opts, const char *text, char *err, size_t err_len)
{
    const char *p = text ? text : "", *end = p + strlen(p);
    sonde_run_opts_default(opts);
    while (p < end) {
        char *key = NULL, *value = NULL;
        int rc = dec_netstring(opts, &p, end, &key);
        if (rc == 0) rc = dec_netstring(opts, &p, end, &value);
        if (rc == 0) rc = dec_field(opts, key, value);
        if (rc == -ENOMEM) {
            sonde_errf(err, err_len, "out of memory");
            return rc;
        }
        if (rc < 0)
            return sonde_errf(err, err_len,
                              "the options handed over by the sonde command cannot be read%s%s%s "
                              "(a command and a package from different builds?)",
                              key ? " (at '" : "", key ? key : "", key ? "')" : "");
    }
    if (!opts->format) opts->format = sonde_format_default();
    return 0;
}
