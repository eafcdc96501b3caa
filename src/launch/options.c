/* options.c — parser for the options of `sonde run` (see options.h).
 *
 * Owns: sonde_run_opts_parse and the usage text. Called by the CLI
 * (src/cli/) and by the extension's boot (src/ext/boot.c). No signal or
 * hook context.
 */
#include "options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char sonde_run_usage[] =
    "usage: sonde run [options] script.py [args ...]\n"
    "       sonde run [options] -m module [args ...]\n"
    "\n"
    "Runs a Python program exactly as `python3 script.py args` would, samples\n"
    "where its time goes, and prints a line-level report when it exits.\n"
    "Each line's time is split into Python (the interpreter running the\n"
    "line's bytecode), native (C code called from the line) and system\n"
    "(blocked in the kernel: sleep, I/O). Threads are included.\n"
    "\n"
    "options:\n"
    "  -m MODULE                  run a module, as `python3 -m MODULE`\n"
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
    "                             sample (for flame graphs in the JSON/HTML report)\n"
    "  --memory                   also profile memory: per line, how much it\n"
    "                             allocated (Python objects vs native), its\n"
    "                             footprint over time, likely leaks, and how\n"
    "                             many MB/s it copied (preloads an allocator shim)\n"
    "  --malloc-threshold BYTES   take a memory sample whenever a thread's\n"
    "                             allocations move by this much (default\n"
    "                             10485767; suffixes K, M, G)\n"
    "  --gpu, --no-gpu            GPU utilisation and GPU memory per line, read\n"
    "                             through NVML (default: on when an NVIDIA GPU\n"
    "                             and its driver are present)\n"
    "  -v, --verbose              say on stderr at start what is profiled and why\n"
    "                             something is not (no GPU, ...)\n"
    "  --json                     write the report as JSON (docs/json-format.md)\n"
    "  --html                     write the report as one self-contained HTML page\n"
    "                             (to --outfile, default profile.html)\n"
    "  -o, --outfile FILE         write the report to FILE (written atomically)\n"
    "                             instead of standard error\n"
    "  -h, --help                 show this help\n"
    "\n"
    "Time spent in files that are not profiled is charged to the nearest\n"
    "calling line of a profiled file. The colour report is used only on a\n"
    "terminal and never when NO_COLOR is set.\n";

void sonde_run_opts_default(sonde_run_opts_t *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->interval_sec = 0.01;
    opts->cpu_percent_threshold = 1.0;
    opts->malloc_threshold = SONDE_DEFAULT_MALLOC_THRESHOLD;
    opts->gpu = -1;
}

static int opts_error(char *err, size_t err_len, const char *fmt, const char *arg)
{
    if (err && err_len) snprintf(err, err_len, fmt, arg ? arg : "");
    return -EINVAL;
}

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

/* Parses a byte count with an optional K, M or G suffix (powers of 1024)
 * within the memory threshold's bounds. Returns 0 or -EINVAL. */
static int opts_bytes(const char *text, uint64_t *out)
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
    *out = v;
    return 0;
}

/* Splits a comma list into patterns (in place). Returns 0 or -EINVAL. */
static int opts_patterns(char *list, const char **out, int *count)
{
    char *save = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (!*tok) continue;
        if (*count >= SONDE_MAX_PATTERNS) return -EINVAL;
        out[(*count)++] = tok;
    }
    return *count > 0 ? 0 : -EINVAL;
}

/* If argv[*i] is `--name VALUE` or `--name=VALUE`, stores VALUE and
 * advances *i. Returns 1 matched, 0 not this option, -EINVAL missing value. */
static int opts_valued(int argc, char **argv, int *i, const char *name,
                       const char *short_name, char **value)
{
    const char *arg = argv[*i];
    size_t n = strlen(name);
    if (strcmp(arg, name) == 0 || (short_name && strcmp(arg, short_name) == 0)) {
        if (*i + 1 >= argc) return -EINVAL;
        *value = argv[++*i];
        return 1;
    }
    if (strncmp(arg, name, n) == 0 && arg[n] == '=') {
        *value = (char *)arg + n + 1;
        return 1;
    }
    return 0;
}

int sonde_run_opts_parse(sonde_run_opts_t *opts, int argc, char **argv,
                         bool need_program, char *err, size_t err_len)
{
    int i = 0;
    for (; i < argc; i++) {
        char *arg = argv[i];
        char *value = NULL;
        int rc;
        if (strcmp(arg, "--") == 0) {
            i++;
            break;
        }
        if (arg[0] != '-' || arg[1] == 0) break; /* the script */
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            opts->help = true;
            continue;
        }
        if (strcmp(arg, "-m") == 0 || (strncmp(arg, "-m", 2) == 0 && arg[2])) {
            if (!need_program) return opts_error(err, err_len, "unexpected option '%s'", arg);
            opts->n_option_tokens = i;
            if (arg[2]) {
                opts->module = arg + 2;
            } else {
                if (i + 1 >= argc) return opts_error(err, err_len, "option -m needs a module name%s", "");
                opts->module = argv[++i];
            }
            /* prog_argv[0] is the module name; the rest are its arguments */
            opts->prog_argv = argv + i;
            opts->prog_argc = argc - i;
            return 0;
        }
        if (strcmp(arg, "--virtual-time") == 0) { opts->virtual_time = true; continue; }
        if (strcmp(arg, "--profile-all") == 0) { opts->profile_all = true; continue; }
        if (strcmp(arg, "--all-lines") == 0) { opts->all_lines = true; continue; }
        if (strcmp(arg, "--stacks") == 0) { opts->stacks = true; continue; }
        if (strcmp(arg, "--json") == 0) { opts->json = true; continue; }
        if (strcmp(arg, "--html") == 0) { opts->html = true; continue; }
        if (strcmp(arg, "--memory") == 0) { opts->memory = true; continue; }
        if (strcmp(arg, "--gpu") == 0) { opts->gpu = 1; continue; }
        if (strcmp(arg, "--no-gpu") == 0) { opts->gpu = 0; continue; }
        if (strcmp(arg, "-v") == 0 || strcmp(arg, "--verbose") == 0) { opts->verbose = true; continue; }
        if ((rc = opts_valued(argc, argv, &i, "--malloc-threshold", NULL, &value)) != 0) {
            if (rc < 0 || opts_bytes(value, &opts->malloc_threshold))
                return opts_error(err, err_len,
                                  "--malloc-threshold needs a byte count between 64K and 1G, got '%s'",
                                  value);
            continue;
        }

        if ((rc = opts_valued(argc, argv, &i, "--interval", NULL, &value)) != 0) {
            if (rc < 0 || opts_number(value, &opts->interval_sec) || opts->interval_sec < 0.0001 ||
                opts->interval_sec > 10)
                return opts_error(err, err_len,
                                  "--interval needs a number of seconds between 0.0001 and 10, got '%s'",
                                  value);
            continue;
        }
        if ((rc = opts_valued(argc, argv, &i, "--cpu-percent-threshold", NULL, &value)) != 0) {
            if (rc < 0 || opts_number(value, &opts->cpu_percent_threshold) ||
                opts->cpu_percent_threshold > 100)
                return opts_error(err, err_len,
                                  "--cpu-percent-threshold needs a percentage between 0 and 100, got '%s'",
                                  value);
            continue;
        }
        if ((rc = opts_valued(argc, argv, &i, "--profile-only", NULL, &value)) != 0) {
            if (rc < 0 || opts_patterns(value, opts->profile_only, &opts->n_profile_only))
                return opts_error(err, err_len, "--profile-only needs a comma-separated list of patterns%s", "");
            continue;
        }
        if ((rc = opts_valued(argc, argv, &i, "--profile-exclude", NULL, &value)) != 0) {
            if (rc < 0 || opts_patterns(value, opts->profile_exclude, &opts->n_profile_exclude))
                return opts_error(err, err_len, "--profile-exclude needs a comma-separated list of patterns%s", "");
            continue;
        }
        if ((rc = opts_valued(argc, argv, &i, "--outfile", "-o", &value)) != 0) {
            if (rc < 0 || !value || !*value)
                return opts_error(err, err_len, "--outfile needs a file name%s", "");
            opts->outfile = value;
            continue;
        }
        return opts_error(err, err_len, "unknown option '%s' (see 'sonde run --help')", arg);
    }
    opts->n_option_tokens = i;
    if (opts->json && opts->html)
        return opts_error(err, err_len, "--json and --html exclude each other%s", "");
    if (opts->html && !opts->outfile) opts->outfile = "profile.html";
    if (!need_program || opts->help) return 0;
    if (i >= argc) return opts_error(err, err_len, "no program given: sonde run [options] script.py [args] (see 'sonde run --help')", NULL);
    opts->script = argv[i];
    opts->prog_argv = argv + i;
    opts->prog_argc = argc - i;
    return 0;
}
