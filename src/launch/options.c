/* options.c — the options of `sonde run` (see options.h).
 *
 * Owns: sonde_run_opts_parse, the hand-over encoding (encode/decode) and
 * the usage text. Called by the CLI (src/cli/run.c), by the extension for
 * sonde.start() (src/ext/module.c) and, to decode the hand-over, by its
 * boot (src/ext/boot.c). The parser reads argv without changing it;
 * patterns and decoded strings are copied into storage the options own.
 * Each option's value is checked by one setter, shared by the parser and
 * the decoder. No signal or hook context.
 */
#include "options.h"

#include "../core/buf.h"
#include "netstring.h"
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

const char sonde_run_usage[] =
    "usage: sonde run [options] script.py [args ...]\n"
    "       sonde run [options] -m module [args ...]\n"
    "       sonde run [options] -c code [args ...]\n"
    "       sonde run [options] - [args ...] < script.py\n"
    "\n"
    "Runs a Python program exactly as `python3 script.py args` would, samples\n"
    "where its time goes, and prints a line-level report when it exits.\n"
    "Each line's time is split into Python (the interpreter running the\n"
    "line's bytecode), native (C code called from the line) and system\n"
    "(blocked in the kernel: sleep, I/O). Threads are included.\n"
    "\n"
    "options:\n"
    "  -m MODULE                  run a module, as `python3 -m MODULE`\n"
    "  -c CODE                    run CODE, as `python3 -c CODE` (its lines are\n"
    "                             reported as those of the file <string>; a\n"
    "                             script read from standard input with `-`, as\n"
    "                             those of <stdin>)\n"
    "  --python PATH              the interpreter to run (default: $SONDE_PYTHON,\n"
    "                             else python3 as found on PATH, so an\n"
    "                             activated virtual environment's)\n"
    "  --interval SEC             sampling interval in seconds (default 0.01)\n"
    "  --virtual-time             sample CPU time only (no system time)\n"
    "  --profile-all              also profile the standard library and\n"
    "                             site-packages (default: only your files)\n"
    "  --profile-only PAT[,PAT]   profile only files whose path contains a PAT\n"
    "  --profile-exclude PAT[,PAT]  do not profile files whose path contains a PAT\n"
    "  --cpu-percent-threshold PCT  report lines with at least PCT % of the\n"
    "                             time (default 1)\n"
    "  --all-lines                report every line of every profiled file\n"
    "  --stacks                   also record the Python call stack of every\n"
    "                             sample (flame graphs in the JSON and HTML\n"
    "                             reports; the svg, folded and speedscope formats)\n"
    "  --memory                   also profile memory: per line, how much it\n"
    "                             allocated (Python objects vs native), what it\n"
    "                             still holds, likely leaks, and how many MB/s\n"
    "                             it copied (preloads an allocator shim)\n"
    "  --memory-sample BYTES      sample one allocation per this many bytes\n"
    "                             allocated, on average (default 512K; suffixes\n"
    "                             K, M, G; also --malloc-threshold)\n"
    "  --gpu, --no-gpu            GPU utilisation and GPU memory per line, read\n"
    "                             through NVML (default: on when an NVIDIA GPU\n"
    "                             and its driver are present)\n"
    "  --subprocesses, --no-subprocesses  profile the Python processes the\n"
    "                             program starts (fork, multiprocessing,\n"
    "                             subprocess of this interpreter) and merge them\n"
    "                             into one report (default), or only the program\n"
    "  --child-wait SEC           at the program's end, wait at most SEC seconds\n"
    "                             (default 1) for the followed processes of its\n"
    "                             process group that still run; those still\n"
    "                             running then are left out, and counted\n"
    "  -v, --verbose              say on stderr at start what is profiled and why\n"
    "                             something is not (no GPU, ...)\n"
    "  -f, --format FORMAT        the report's format: text (the default), json\n"
    "                             (docs/json-format.md), html (one self-contained\n"
    "                             page; default file profile.html), pprof\n"
    "                             (gzipped profile.proto for go tool pprof and\n"
    "                             Pyroscope-style backends; per line, or from\n"
    "                             call stacks with --stacks; default file\n"
    "                             profile.pb.gz), and, drawn from\n"
    "                             call stacks (which they turn on): svg (a\n"
    "                             flame graph), folded, speedscope\n"
    "  --json, --html             the same as --format json, --format html\n"
    "  -o, --output FILE          write the report to FILE (written atomically)\n"
    "                             instead of standard error; without --format,\n"
    "                             its ending picks the format (.txt .json .html\n"
    "                             .svg .folded .collapsed .speedscope.json .pb.gz\n"
    "                             .pprof);\n"
    "                             --outfile is the same option\n"
    "  --period SEC               continuous profiles, for services: one profile\n"
    "                             (pprof unless --format says) per SEC seconds\n"
    "                             of all the program's processes, instead of a\n"
    "                             report at the end; with one or both of:\n"
    "  --period-dir DIR           write each period's profile to DIR, keeping the\n"
    "                             newest --keep N (default 60)\n"
    "  --upload URL               send each to a Pyroscope-compatible /ingest\n"
    "                             (--app-name NAME, --tag K=V, headers from\n"
    "                             --upload-headers-file FILE or\n"
    "                             $SONDE_UPLOAD_HEADERS, --upload-timeout SEC,\n"
    "                             backlog --spool-dir DIR, --spool-max N,\n"
    "                             --spool-max-bytes B; docs/fleet.md)\n"
    "  -h, --help                 show this help\n"
    "\n"
    "Time spent in files that are not profiled is charged to the nearest\n"
    "calling line of a profiled file. The colour report is used only on a\n"
    "terminal and never when NO_COLOR is set.\n";

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

/* ---- the parser ------------------------------------------------------------------ */

/* If argv[*i] is one of the spellings of a valued option (`--name VALUE`,
 * `--name=VALUE` for the long names in longs, `-x VALUE` for short_name),
 * stores VALUE and advances *i. Returns 1 matched, 0 not this option,
 * -EINVAL missing value. */
static int opts_valued(int argc, char *const *argv, int *i, const char *const *longs,
                       const char *short_name, const char **value)
{
    const char *arg = argv[*i];
    bool separate = short_name && strcmp(arg, short_name) == 0;
    for (const char *const *name = longs; !separate && *name; name++) {
        size_t n = strlen(*name);
        if (strcmp(arg, *name) == 0) separate = true;
        if (strncmp(arg, *name, n) == 0 && arg[n] == '=') {
            *value = arg + n + 1;
            return 1;
        }
    }
    if (!separate) return 0;
    if (*i + 1 >= argc) return -EINVAL;
    *value = argv[++*i];
    return 1;
}

/* Records a format choice (--format NAME, --json, --html); a second choice
 * naming another format is an error. */
static int opts_choose_format(sonde_run_opts_t *opts, const char *name, const char *word,
                              const char **chosen_by, char *err, size_t err_len)
{
    const sonde_format_t *before = opts->format;
    if (opts_set_format(opts, name) < 0) {
        char names[256];
        sonde_format_list(names, sizeof names, false);
        return sonde_errf(err, err_len, "unknown format '%s' (%s)", name, names);
    }
    if (before && before != opts->format)
        return sonde_errf(err, err_len, "%s and %s ask for different formats (%s, %s); give one",
                          *chosen_by, word, before->name, opts->format->name);
    *chosen_by = word;
    return 0;
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

static const char *const opts_interval[] = {"--interval", NULL};
static const char *const opts_child_wait[] = {"--child-wait", NULL};
static const char *const opts_threshold[] = {"--cpu-percent-threshold", NULL};
static const char *const opts_malloc[] = {"--memory-sample", "--malloc-threshold", NULL};
static const char *const opts_only[] = {"--profile-only", NULL};
static const char *const opts_exclude[] = {"--profile-exclude", NULL};
static const char *const opts_format[] = {"--format", NULL};
static const char *const opts_output[] = {"--output", "--outfile", NULL};
static const char *const opts_python[] = {"--python", NULL};

/* --profile-only / --profile-exclude with its value (found: opts_valued's
 * result). Returns 0 or -errno with the message in err. */
static int opts_patterns_option(sonde_run_opts_t *opts, int found, const char *value, bool only,
                                char *err, size_t err_len)
{
    int rc = found;
    if (rc > 0)
        rc = only ? opts_add_patterns(opts, value, opts->profile_only, &opts->n_profile_only)
                  : opts_add_patterns(opts, value, opts->profile_exclude, &opts->n_profile_exclude);
    if (rc == -ENOMEM) {
        sonde_errf(err, err_len, "out of memory");
        return rc;
    }
    if (rc < 0)
        return sonde_errf(err, err_len, "%s needs a comma-separated list of at most %d patterns",
                          only ? opts_only[0] : opts_exclude[0], SONDE_MAX_PATTERNS);
    return 0;
}

int sonde_run_opts_file_word(sonde_run_opts_t *opts, int argc, char *const *argv, int *i, char *err,
                             size_t err_len)
{
    const char *value = NULL;
    int rc;
    if (strcmp(argv[*i], "--profile-all") == 0) {
        opts->profile_all = true;
    } else if ((rc = opts_valued(argc, argv, i, opts_only, NULL, &value)) != 0) {
        if ((rc = opts_patterns_option(opts, rc, value, true, err, err_len)) < 0) return rc;
    } else if ((rc = opts_valued(argc, argv, i, opts_exclude, NULL, &value)) != 0) {
        if ((rc = opts_patterns_option(opts, rc, value, false, err, err_len)) < 0) return rc;
    } else {
        return 0;
    }
    return 1;
}

/* Handles one option word at argv[*i] (not "--", not -m, not the program).
 * Returns 0 or -errno with the message in err. */
static int opts_one(sonde_run_opts_t *opts, int argc, char *const *argv, int *i,
                    const char **format_word, char *err, size_t err_len)
{
    const char *arg = argv[*i];
    const char *value = NULL;
    int rc = sonde_run_opts_file_word(opts, argc, argv, i, err, err_len);
    if (rc != 0) return rc < 0 ? rc : 0;
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0)
        opts->help = true;
    else if (strcmp(arg, "--virtual-time") == 0)
        opts->virtual_time = true;
    else if (strcmp(arg, "--all-lines") == 0)
        opts->all_lines = true;
    else if (strcmp(arg, "--stacks") == 0)
        opts->stacks = true;
    else if (strcmp(arg, "--memory") == 0)
        opts->memory = true;
    else if (strcmp(arg, "--subprocesses") == 0)
        opts->no_subprocesses = false;
    else if (strcmp(arg, "--no-subprocesses") == 0)
        opts->no_subprocesses = true;
    else if (strcmp(arg, "--gpu") == 0)
        opts->gpu = 1;
    else if (strcmp(arg, "--no-gpu") == 0)
        opts->gpu = 0;
    else if (strcmp(arg, "-v") == 0 || strcmp(arg, "--verbose") == 0)
        opts->verbose = true;
    else if (strcmp(arg, "--json") == 0 || strcmp(arg, "--html") == 0)
        return opts_choose_format(opts, arg + 2, arg, format_word, err, err_len);
    else if ((rc = opts_valued(argc, argv, i, opts_format, "-f", &value)) != 0) {
        if (rc < 0) return sonde_errf(err, err_len, "--format needs a format name");
        return opts_choose_format(opts, value, arg, format_word, err, err_len);
    } else if ((rc = opts_valued(argc, argv, i, opts_malloc, NULL, &value)) != 0) {
        if (rc < 0 || opts_set_malloc_threshold(opts, value) < 0)
            return sonde_errf(err, err_len, "%.*s needs a byte count between 64K and 1G, got '%s'",
                              (int)strcspn(arg, "="), arg, value ? value : "");
    } else if ((rc = opts_valued(argc, argv, i, opts_interval, NULL, &value)) != 0) {
        if (rc < 0 || opts_set_interval(opts, value) < 0)
            return sonde_errf(
                err, err_len,
                "--interval needs a number of seconds between 0.0001 and 10, got '%s'",
                value ? value : "");
    } else if ((rc = opts_valued(argc, argv, i, opts_child_wait, NULL, &value)) != 0) {
        if (rc < 0 || opts_set_child_wait(opts, value) < 0)
            return sonde_errf(err, err_len,
                              "--child-wait needs a number of seconds between 0 and 3600, got '%s'",
                              value ? value : "");
    } else if ((rc = opts_valued(argc, argv, i, opts_threshold, NULL, &value)) != 0) {
        if (rc < 0 || opts_set_threshold(opts, value) < 0)
            return sonde_errf(
                err, err_len,
                "--cpu-percent-threshold needs a percentage between 0 and 100, got '%s'",
                value ? value : "");
    } else if ((rc = opts_valued(argc, argv, i, opts_output, "-o", &value)) != 0) {
        if (rc < 0 || !*value) return sonde_errf(err, err_len, "--output needs a file name");
        opts->outfile = value;
    } else if (opts->extra_word &&
               (rc = opts->extra_word(opts->extra_arg, argc, argv, i, err, err_len)) != 0) {
        return rc < 0 ? rc : 0;
    } else {
        return sonde_errf(err, err_len, "unknown option '%s' (see 'sonde run --help')", arg);
    }
    return 0;
}

int sonde_run_opts_parse(sonde_run_opts_t *opts, int argc, char *const *argv, bool need_program,
                         char *err, size_t err_len)
{
    const char *format_word = NULL;
    int i = 0;
    for (; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--") == 0) {
            i++;
            break;
        }
        if (arg[0] != '-' || arg[1] == 0) break; /* the script */
        const char *python = NULL;
        int found = need_program ? opts_valued(argc, argv, &i, opts_python, NULL, &python) : 0;
        if (found < 0 || (found > 0 && !*python))
            return sonde_errf(err, err_len, "--python needs a path to an interpreter");
        if (found > 0) {
            opts->python = python;
            continue;
        }
        if (strncmp(arg, "-m", 2) == 0 || strncmp(arg, "-c", 2) == 0) {
            if (!need_program) return sonde_errf(err, err_len, "unexpected option '%s'", arg);
            bool module = arg[1] == 'm';
            const char *value = arg + 2;
            opts->n_option_tokens = i;
            if (!*value) {
                if (i + 1 >= argc)
                    return sonde_errf(err, err_len, "option %.2s needs %s", arg,
                                      module ? "a module name" : "the code to run");
                value = argv[++i];
            }
            *(module ? &opts->module : &opts->command) = value;
            /* prog_argv[0] is the module name (the code); the rest are its
             * arguments */
            opts->prog_argv = argv + i;
            opts->prog_argc = argc - i;
            opts_settle_format(opts);
            return 0;
        }
        int rc = opts_one(opts, argc, argv, &i, &format_word, err, err_len);
        if (rc < 0) return rc;
    }
    opts->n_option_tokens = i;
    opts_settle_format(opts);
    if (!need_program || opts->help) return 0;
    if (i >= argc)
        return sonde_errf(err, err_len,
                          "no program given: sonde run [options] script.py [args] (see 'sonde run "
                          "--help')");
    opts->script = argv[i];
    opts->prog_argv = argv + i;
    opts->prog_argc = argc - i;
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
