/* attach_options.c — the command lines of `sonde attach`, `record`, `dump`.
 *
 * Owns: sonde_attach_args_parse, a pure parser (no printing, no file
 * system, argv left as it is) so that tests/unit/test_attach_options.c can
 * check every option and message. Formats come from the registry
 * (src/report/format.c): --format NAME, else -o's ending. Called by
 * attach.c on the command's main thread; no signal context.
 */
#include "attach_cli.h"

#include "../core/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool aopts_pid(const char *text, pid_t *pid)
{
    char *end = NULL;
    long value = strtol(text, &end, 10);
    if (!text[0] || *end || value <= 0 || value > (1L << 22)) return false;
    *pid = (pid_t)value;
    return true;
}

static bool aopts_number(const char *text, double *value)
{
    char *end = NULL;
    *value = strtod(text, &end);
    return text[0] && !*end && *value == *value;
}

/* Whether option word `word` is `name` (or "name=..."), its alias, or its
 * short form; *eq points at the '=' of the "=" form. */
static bool aopts_is(const char *word, const char *name, const char *alias, const char *short_name,
                     const char **eq)
{
    *eq = NULL;
    if (short_name && strcmp(word, short_name) == 0) return true;
    for (int k = 0; k < 2; k++) {
        const char *n = k ? alias : name;
        size_t len = n ? strlen(n) : 0;
        if (!n || strncmp(word, n, len) != 0 || (word[len] && word[len] != '=')) continue;
        if (word[len] == '=') *eq = word + len;
        return true;
    }
    return false;
}

/* The value of option argv[*i] ("--rate 5" or "--rate=5"). Returns NULL
 * when it is missing. */
static const char *aopts_value(int argc, char *const *argv, int *i, const char *eq)
{
    if (eq) return eq + 1;
    if (*i + 1 >= argc) return NULL;
    return argv[++*i];
}

/* An unsigned count in [lo, hi]. */
static bool aopts_count(const char *text, double lo, double hi, uint64_t *value)
{
    double v = 0;
    if (!aopts_number(text, &v) || v < lo || v > hi || v != (double)(uint64_t)v) return false;
    *value = (uint64_t)v;
    return true;
}

/* The continuous-profile options of attach (argv[*i]). Returns non-zero
 * when the word is one of them, with *rc 0 or -EINVAL (message in err);
 * 0 when it is not. */
static int aopts_period(int argc, char *const *argv, int *i, sonde_attach_period_args_t *p,
                        char *err, size_t err_len, int *rc)
{
    const char *w = argv[*i], *eq = NULL, *value = NULL;
    static const char *const names[] = {"--period",
                                        "--period-dir",
                                        "--keep",
                                        "--upload",
                                        "--app-name",
                                        "--tag",
                                        "--upload-headers-file",
                                        "--spool-dir",
                                        "--spool-max",
                                        "--spool-max-bytes",
                                        "--upload-timeout"};
    size_t which = SONDE_ARRAY_LEN(names);
    uint64_t count = 0;
    for (size_t k = 0; k < SONDE_ARRAY_LEN(names) && which == SONDE_ARRAY_LEN(names); k++)
        if (aopts_is(w, names[k], NULL, NULL, &eq)) which = k;
    if (which == SONDE_ARRAY_LEN(names)) return 0;
    *rc = 0;
    if (!(value = aopts_value(argc, argv, i, eq)) || !value[0]) {
        *rc = sonde_errf(err, err_len, "option %s needs a value", names[which]);
        return 1;
    }
    switch (which) {
    case 0:
        if (!aopts_number(value, &p->period_sec) || p->period_sec < 0.01 || p->period_sec > 86400)
            *rc = sonde_errf(err, err_len,
                             "--period must be a number of seconds from 0.01 to 86400, not '%s'",
                             value);
        break;
    case 1:
        p->period_dir = value;
        break;
    case 2:
        if (!aopts_count(value, 1, 1e6, &count))
            *rc = sonde_errf(err, err_len, "--keep must be a count from 1 to 1000000, not '%s'",
                             value);
        p->keep = (unsigned)count;
        break;
    case 3:
        p->upload_url = value;
        break;
    case 4:
        p->app_name = value;
        break;
    case 5:
        if (p->n_tags >= SONDE_FLEET_MAX_TAGS)
            *rc = sonde_errf(err, err_len, "at most %d --tag options", SONDE_FLEET_MAX_TAGS);
        else
            p->tags[p->n_tags++] = value;
        break;
    case 6:
        p->headers_file = value;
        break;
    case 7:
        p->spool_dir = value;
        break;
    case 8:
        if (!aopts_count(value, 1, 1e6, &count))
            *rc = sonde_errf(err, err_len,
                             "--spool-max must be a count from 1 to 1000000, not '%s'", value);
        p->spool_max = (unsigned)count;
        break;
    case 9:
        if (!aopts_count(value, 1024, 1e15, &p->spool_max_bytes))
            *rc = sonde_errf(err, err_len,
                             "--spool-max-bytes must be a number of bytes, at least 1024, not "
                             "'%s'",
                             value);
        break;
    default:
        if (!aopts_number(value, &p->upload_timeout) || p->upload_timeout < 0.1 ||
            p->upload_timeout > 3600)
            *rc = sonde_errf(err, err_len,
                             "--upload-timeout must be a number of seconds from 0.1 to 3600, "
                             "not '%s'",
                             value);
        break;
    }
    return 1;
}

/* Checks the continuous-profile options together. Returns 0 or -EINVAL. */
static int aopts_period_settle(sonde_attach_args_t *args, char *err, size_t err_len)
{
    sonde_attach_period_args_t *p = &args->period;
    bool any = p->period_dir || p->keep || p->upload_url || p->app_name || p->n_tags ||
               p->headers_file || p->spool_dir || p->spool_max || p->spool_max_bytes ||
               p->upload_timeout;
    if (!p->period_sec) {
        if (any)
            return sonde_errf(err, err_len,
                              "--period-dir, --upload and their options need --period SECONDS");
        return 0;
    }
    if (!p->period_dir && !p->upload_url)
        return sonde_errf(err, err_len,
                          "--period needs somewhere to put the profiles: --period-dir DIR "
                          "and/or --upload URL");
    if (args->outfile)
        return sonde_errf(err, err_len,
                          "--period writes one profile per period (--period-dir, --upload), "
                          "not -o");
    if (!p->upload_url && (p->app_name || p->n_tags || p->headers_file || p->spool_dir ||
                           p->spool_max || p->spool_max_bytes || p->upload_timeout))
        return sonde_errf(err, err_len,
                          "--app-name, --tag, --upload-headers-file, --spool-* and "
                          "--upload-timeout need --upload URL");
    if (!p->period_dir && p->keep) return sonde_errf(err, err_len, "--keep needs --period-dir");
    if (!p->keep) p->keep = SONDE_ATTACH_DEFAULT_KEEP;
    if (!p->spool_max) p->spool_max = SONDE_ATTACH_DEFAULT_SPOOL_MAX;
    if (!p->spool_max_bytes) p->spool_max_bytes = SONDE_ATTACH_DEFAULT_SPOOL_BYTES;
    if (!p->upload_timeout) p->upload_timeout = SONDE_ATTACH_DEFAULT_UPLOAD_TIMEOUT;
    /* Backends take pprof; before the registry has it, JSON. */
    if (!args->format) args->format = sonde_format_named("pprof");
    if (!args->format) args->format = sonde_format_named("json");
    return 0;
}

/* One option word of attach or record at argv[*i]. Returns 0 or -EINVAL
 * with the message in err. */
static int aopts_one(sonde_attach_mode_t mode, int argc, char *const *argv, int *i,
                     sonde_attach_args_t *args, char *err, size_t err_len)
{
    const char *w = argv[*i], *eq = NULL, *value = NULL;
    int taken = sonde_run_opts_file_word(&args->files, argc, argv, i, err, err_len);
    if (taken < 0) return taken;
    if (taken > 0) {
        const sonde_run_opts_t *f = &args->files;
        sonde_filechoice_t files = {f->profile_all, f->profile_only, f->n_profile_only,
                                    f->profile_exclude, f->n_profile_exclude};
        args->opts.files = files;
        return 0;
    }
    if (aopts_is(w, "--rate", NULL, "-r", &eq)) {
        if (!(value = aopts_value(argc, argv, i, eq)))
            return sonde_errf(err, err_len, "option %s needs a value", w);
        if (!aopts_number(value, &args->opts.rate_hz) || args->opts.rate_hz < 1 ||
            args->opts.rate_hz > SONDE_ATTACH_MAX_RATE)
            return sonde_errf(err, err_len,
                              "--rate must be a number of samples per second from 1 to %.0f, "
                              "not '%s'",
                              SONDE_ATTACH_MAX_RATE, value);
    } else if (aopts_is(w, "--duration", NULL, "-d", &eq)) {
        if (!(value = aopts_value(argc, argv, i, eq)))
            return sonde_errf(err, err_len, "option %s needs a value", w);
        if (!aopts_number(value, &args->opts.duration_sec) || args->opts.duration_sec <= 0 ||
            args->opts.duration_sec > 1e7)
            return sonde_errf(err, err_len,
                              "--duration must be a positive number of seconds, not '%s'", value);
    } else if (aopts_is(w, "--output", "--outfile", "-o", &eq)) {
        if (!(args->outfile = aopts_value(argc, argv, i, eq)) || !args->outfile[0])
            return sonde_errf(err, err_len, "option %s needs a file name", w);
    } else if (aopts_is(w, "--format", NULL, "-f", &eq)) {
        if (!(value = aopts_value(argc, argv, i, eq)))
            return sonde_errf(err, err_len, "option %s needs a value", w);
        if (!(args->format = sonde_format_named(value))) {
            char names[256];
            sonde_format_list(names, sizeof names, false);
            return sonde_errf(err, err_len, "unknown format '%s' (%s)", value, names);
        }
    } else if (mode == SONDE_ATTACH_MODE_ATTACH && strncmp(w, "--", 2) == 0 &&
               aopts_period(argc, argv, i, &args->period, err, err_len, &taken) != 0) {
        return taken < 0 ? taken : 0;
    } else if (strcmp(w, "--threads") == 0) {
        args->opts.per_thread = true;
    } else if (strcmp(w, "--idle") == 0) {
        args->opts.idle = true;
    } else if (strcmp(w, "--gil") == 0) {
        args->opts.gil_only = true;
    } else if (strcmp(w, "--subprocesses") == 0) {
        args->opts.subprocesses = true;
    } else if (strcmp(w, "--no-subprocesses") == 0) {
        args->opts.subprocesses = false;
    } else {
        return sonde_errf(err, err_len, "unknown option '%s' (see 'sonde %s --help')", w,
                          mode == SONDE_ATTACH_MODE_RECORD ? "record" : "attach");
    }
    return 0;
}

/* After the words: the process or the command, and the format. */
static int aopts_settle(sonde_attach_mode_t mode, int argc, char *const *argv, int i,
                        const char *pid_word, sonde_attach_args_t *args, char *err, size_t err_len)
{
    if (mode == SONDE_ATTACH_MODE_RECORD) {
        if (i >= argc)
            return sonde_errf(err, err_len,
                              "record needs a command to run, e.g. 'sonde record -o out.svg -- "
                              "python3 app.py'");
        args->command = argv + i;
    } else {
        const char *what = mode == SONDE_ATTACH_MODE_DUMP ? "dump" : "attach";
        if (!pid_word && i < argc) pid_word = argv[i++]; /* after "--" */
        if (!pid_word)
            return sonde_errf(err, err_len, "%s needs the id of a process, e.g. 'sonde %s 4242'",
                              what, what);
        if (i < argc)
            return sonde_errf(err, err_len, "%s takes one process id, not '%s'", what, argv[i]);
        if (!aopts_pid(pid_word, &args->pid))
            return sonde_errf(err, err_len, "'%s' is not a process id", pid_word);
    }
    int rc = aopts_period_settle(args, err, err_len);
    if (rc < 0) return rc;
    if (args->outfile && !args->format && !(args->format = sonde_format_of_path(args->outfile))) {
        char endings[256];
        sonde_format_list(endings, sizeof endings, true);
        return sonde_errf(err, err_len,
                          "cannot tell the format from the name '%s'; use an extension (%s) or "
                          "--format",
                          args->outfile, endings);
    }
    if (!args->format) args->format = sonde_format_default();
    return 0;
}

void sonde_attach_args_free(sonde_attach_args_t *args)
{
    sonde_run_opts_free(&args->files);
    memset(&args->opts.files, 0, sizeof args->opts.files);
}

int sonde_attach_args_parse(sonde_attach_mode_t mode, int argc, char *const *argv,
                            sonde_attach_args_t *args, char *err, size_t err_len)
{
    const char *pid_word = NULL; /* attach, dump: options may follow the pid */
    int i = 0;
    memset(args, 0, sizeof *args);
    sonde_attach_opts_default(&args->opts);
    sonde_run_opts_default(&args->files);
    for (; i < argc; i++) {
        const char *w = argv[i];
        if (strcmp(w, "--") == 0) {
            i++;
            break;
        }
        if (w[0] != '-' || !w[1]) {
            if (mode == SONDE_ATTACH_MODE_RECORD) break;
            if (pid_word)
                return sonde_errf(err, err_len, "%s takes one process id, not '%s'",
                                  mode == SONDE_ATTACH_MODE_DUMP ? "dump" : "attach", w);
            pid_word = w;
            continue;
        }
        if (strcmp(w, "-h") == 0 || strcmp(w, "--help") == 0) {
            args->help = true;
            return 0;
        }
        if (mode == SONDE_ATTACH_MODE_DUMP)
            return sonde_errf(err, err_len,
                              "unknown option '%s' for dump (see 'sonde dump --help')", w);
        int rc = aopts_one(mode, argc, argv, &i, args, err, err_len);
        if (rc < 0) return rc;
    }
    return aopts_settle(mode, argc, argv, i, pid_word, args, err, err_len);
}
