/* attach_options.c — the command lines of `sonde attach`, `record`, `dump`.
 *
 * Owns: sonde_attach_args_parse, a pure parser (no printing, no file
 * system, argv left as it is) so that tests/unit/test_attach_options.c can
 * check every option and message. Formats come from the registry
 * (src/report/format.c): --format NAME, else -o's ending. Called by
 * attach.c on the command's main thread; no signal context.
 */
#include "attach_cli.h"
#include "period.h"

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
    if (sonde_cli_opt_is(w, "--rate", NULL, "-r", &eq)) {
        if (!(value = sonde_cli_opt_value(argc, argv, i, eq)))
            return sonde_errf(err, err_len, "option %s needs a value", w);
        if (!sonde_cli_opt_number(value, &args->opts.rate_hz) || args->opts.rate_hz < 1 ||
            args->opts.rate_hz > SONDE_ATTACH_MAX_RATE)
            return sonde_errf(err, err_len,
                              "--rate must be a number of samples per second from 1 to %.0f, "
                              "not '%s'",
                              SONDE_ATTACH_MAX_RATE, value);
    } else if (sonde_cli_opt_is(w, "--duration", NULL, "-d", &eq)) {
        if (!(value = sonde_cli_opt_value(argc, argv, i, eq)))
            return sonde_errf(err, err_len, "option %s needs a value", w);
        if (!sonde_cli_opt_number(value, &args->opts.duration_sec) ||
            args->opts.duration_sec <= 0 || args->opts.duration_sec > 1e7)
            return sonde_errf(err, err_len,
                              "--duration must be a positive number of seconds, not '%s'", value);
    } else if (sonde_cli_opt_is(w, "--output", "--outfile", "-o", &eq)) {
        if (!(args->outfile = sonde_cli_opt_value(argc, argv, i, eq)) || !args->outfile[0])
            return sonde_errf(err, err_len, "option %s needs a file name", w);
    } else if (sonde_cli_opt_is(w, "--format", NULL, "-f", &eq)) {
        if (!(value = sonde_cli_opt_value(argc, argv, i, eq)))
            return sonde_errf(err, err_len, "option %s needs a value", w);
        if (!(args->format = sonde_format_named(value))) {
            char names[256];
            sonde_format_list(names, sizeof names, false);
            return sonde_errf(err, err_len, "unknown format '%s' (%s)", value, names);
        }
    } else if (mode == SONDE_ATTACH_MODE_ATTACH &&
               (taken = sonde_cli_period_word(argc, argv, i, &args->period, err, err_len)) != 0) {
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
    int rc = sonde_cli_period_settle(&args->period, args->outfile, &args->format, err, err_len);
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
