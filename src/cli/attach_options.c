/* attach_options.c — the command lines of `sonde attach`, `record`, `dump`.
 *
 * Owns: the option table of the three commands, their help, and
 * sonde_attach_args_parse, a pure parser (no printing, no file system,
 * argv left as it is) so that tests/unit/test_attach_options.c can check
 * every option and message. The grammar is src/core/opt.c's; the files to
 * profile are run's options (src/launch/options.c), the format and output
 * the report options every command shares (src/launch/report_options.c:
 * --format NAME, --json, --html, else -o's ending), the periods
 * period.c's. Called by attach.c on the command's main thread; no signal
 * context.
 */
#include "attach_cli.h"
#include "period.h"

#include "../core/buf.h"
#include "../launch/report_options.h"
#include "../live/live.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    ATTACH_RATE,
    ATTACH_DURATION,
    ATTACH_THREADS,
    ATTACH_IDLE,
    ATTACH_GIL,
    ATTACH_SUB,
    ATTACH_NO_SUB
};

static int aopts_apply(void *target, const sonde_opt_t *opt, const char *word, const char *value,
                       char *err, size_t err_len)
{
    sonde_attach_opts_t *a = target;
    switch (opt->id) {
    case ATTACH_RATE:
        if (!sonde_opt_number(value, &a->rate_hz) || a->rate_hz < 1 ||
            a->rate_hz > SONDE_ATTACH_MAX_RATE)
            return sonde_errf(err, err_len,
                              "--rate must be a number of samples per second from 1 to %.0f, "
                              "not '%s'",
                              SONDE_ATTACH_MAX_RATE, value);
        break;
    case ATTACH_DURATION:
        if (!sonde_opt_number(value, &a->duration_sec) || a->duration_sec <= 0 ||
            a->duration_sec > 1e7)
            return sonde_errf(err, err_len,
                              "--duration must be a positive number of seconds, not '%s'", value);
        break;
    case ATTACH_THREADS:
        a->per_thread = true;
        break;
    case ATTACH_IDLE:
        a->idle = true;
        break;
    case ATTACH_GIL:
        a->gil_only = true;
        break;
    default:
        a->subprocesses = opt->id == ATTACH_SUB;
        break;
    }
    return 0;
}

static const sonde_opt_t aopts_table[] = {
    {"--rate", NULL, 'r', SONDE_OPT_VALUE, ATTACH_RATE, 0, "HZ", NULL,
     "samples per second (default 100, at most 10000)", NULL},
    {"--duration", NULL, 'd', SONDE_OPT_VALUE, ATTACH_DURATION, 0, "S", NULL,
     "stop sampling after S seconds (default: until Ctrl-C or the process ends)", NULL},
    {"--threads", NULL, 0, SONDE_OPT_FLAG, ATTACH_THREADS, 0, NULL, NULL,
     "keep each thread's stacks apart (flame graphs)", NULL},
    {"--idle", NULL, 0, SONDE_OPT_FLAG, ATTACH_IDLE, 0, NULL, NULL,
     "include threads that are not running (blocked in a lock, a sleep, I/O); by default "
     "flame graphs show only running threads, judged from the kernel's thread state",
     NULL},
    {"--gil", NULL, 0, SONDE_OPT_FLAG, ATTACH_GIL, 0, NULL, NULL, "only the thread holding the GIL",
     NULL},
    {"--subprocesses", NULL, 0, SONDE_OPT_FLAG, ATTACH_SUB, 0, NULL, NULL,
     "also sample the Python processes the process starts (default: the process alone)", NULL},
    {"--no-subprocesses", NULL, 0, SONDE_OPT_FLAG, ATTACH_NO_SUB, 0, NULL, NULL, NULL, NULL},
};

static const sonde_opt_family_t aopts_options = {
    NULL, aopts_table, SONDE_ARRAY_LEN(aopts_table), aopts_apply, NULL,
};

/* attach --inject (PEP 768; src/cli/inject.c): into args. */
enum { INJECT_ON, INJECT_WAIT };

static int aopts_inject_apply(void *target, const sonde_opt_t *opt, const char *word,
                              const char *value, char *err, size_t err_len)
{
    (void)word;
    sonde_attach_args_t *args = target;
    if (opt->id == INJECT_ON) {
        args->inject = true;
        return 0;
    }
    if (!sonde_opt_number(value, &args->inject_wait_sec) || args->inject_wait_sec <= 0 ||
        args->inject_wait_sec > 3600)
        return sonde_errf(err, err_len,
                          "--inject-wait must be a positive number of seconds (at most 3600), "
                          "not '%s'",
                          value);
    return 0;
}

static const sonde_opt_t aopts_inject_table[] = {
    {"--inject", NULL, 0, SONDE_OPT_FLAG, INJECT_ON, 0, NULL, NULL,
     "Python 3.14+: load sonde's own profiler into the process (PEP 768) for the line-level "
     "split of 'sonde run' (Python, native, system time per line, threads), then take it out; "
     "a process it cannot be loaded into is sampled from outside, with one line saying why",
     NULL},
    {"--inject-wait", NULL, 0, SONDE_OPT_VALUE, INJECT_WAIT, 0, "S", NULL,
     "--inject: how long to wait for the process to run Python code, where it loads the "
     "profiler and later lets it go (default 5)",
     NULL},
};

static const sonde_opt_family_t aopts_inject_options = {
    NULL, aopts_inject_table, SONDE_ARRAY_LEN(aopts_inject_table), aopts_inject_apply, NULL,
};

/* top --refresh: into args. */
static int aopts_top_apply(void *target, const sonde_opt_t *opt, const char *word,
                           const char *value, char *err, size_t err_len)
{
    (void)opt;
    (void)word;
    sonde_attach_args_t *args = target;
    if (!sonde_opt_number(value, &args->refresh_sec) ||
        args->refresh_sec < SONDE_LIVE_REFRESH_MIN || args->refresh_sec > SONDE_LIVE_REFRESH_MAX)
        return sonde_errf(err, err_len,
                          "--refresh must be a number of seconds from %g to %g, not '%s'",
                          SONDE_LIVE_REFRESH_MIN, SONDE_LIVE_REFRESH_MAX, value);
    return 0;
}

static const sonde_opt_t aopts_top_table[] = {
    {"--refresh", NULL, 0, SONDE_OPT_VALUE, 0, 0, "S", NULL,
     "redraw every S seconds, the length of the view's last interval (default 1)", NULL},
};

static const sonde_opt_family_t aopts_top_options = {
    NULL, aopts_top_table, SONDE_ARRAY_LEN(aopts_top_table), aopts_top_apply, NULL,
};

/* The families of attach (record: the first four; top: the first four
 * and its own, at the place of the periods), in the order of
 * aopts_targets. */
static const sonde_opt_family_t *const aopts_attach_families[] = {
    &aopts_options,
    &sonde_run_file_options,
    &sonde_report_format_options,
    &sonde_report_output_options,
    &sonde_cli_period_options,
    &aopts_inject_options,
    NULL,
};
static const sonde_opt_family_t *const aopts_record_families[] = {
    &aopts_options,
    &sonde_run_file_options,
    &sonde_report_format_options,
    &sonde_report_output_options,
    NULL,
};
static const sonde_opt_family_t *const aopts_dump_families[] = {NULL};
static const sonde_opt_family_t *const aopts_top_families[] = {
    &aopts_options,
    &sonde_run_file_options,
    &sonde_report_format_options,
    &sonde_report_output_options,
    &aopts_top_options,
    NULL,
};

static const sonde_opt_cmd_t aopts_commands[];

/* attach, dump, top: the one process id, anywhere among the options. */
typedef struct aopts_pid_word {
    sonde_attach_mode_t mode;
    const char *word; /* borrowed; NULL until given */
} aopts_pid_word_t;

static int aopts_positional(void *arg, const char *word, char *err, size_t err_len)
{
    aopts_pid_word_t *pid = arg;
    if (pid->word)
        return sonde_errf(err, err_len, "%s takes one process id, not '%s'",
                          aopts_commands[pid->mode].name, word);
    pid->word = word;
    return 1;
}

static const sonde_opt_cmd_t aopts_commands[] = {
    [SONDE_ATTACH_MODE_ATTACH] =
        {
            "attach",
            "usage: sonde attach [options] PID\n"
            "\n"
            "Samples the Python threads of a running process from outside (nothing is\n"
            "loaded into it) until Ctrl-C, --duration, or the process exits, then writes\n"
            "what it found in any of the formats below: the stack formats (flame\n"
            "graphs), or the same line-level report as 'sonde run'. Without -o the\n"
            "output goes to standard output. With --inject (Python 3.14+) sonde's own\n"
            "profiler is loaded into the process for the run instead, then taken out.\n",
            "The text and JSON reports charge time as 'sonde run' does (Python, native and\n"
            "system time on the program's own lines, blocked time in sleeps and I/O\n"
            "included); --idle and --threads shape the stacks only. Attaching needs\n"
            "ptrace access to PID (same user, or root).\n",
            aopts_attach_families,
            false,
            aopts_positional,
        },
    [SONDE_ATTACH_MODE_RECORD] =
        {
            "record",
            "usage: sonde record [options] -- COMMAND [ARGS...]\n"
            "\n"
            "Runs COMMAND (e.g. python3 app.py) and samples it from outside while it\n"
            "runs, at no cost to the program beyond the CPU the sampler takes, until it\n"
            "ends; then ends as COMMAND ended: with its exit status, or killed by the\n"
            "same signal. Ctrl-C and Ctrl-\\ reach COMMAND from the terminal; other\n"
            "signals sent to sonde alone (kill PID) are passed on to it. Without -o the\n"
            "output goes to standard error, after the program's own output.\n",
            "With --subprocesses, COMMAND may be a shell script or a launcher: the Python\n"
            "processes it starts are sampled.\n",
            aopts_record_families,
            false,
            NULL,
        },
    [SONDE_ATTACH_MODE_DUMP] =
        {
            "dump",
            "usage: sonde dump PID\n"
            "\n"
            "Prints the current Python stack of every thread of PID, innermost frame\n"
            "first, with each thread's state (active or idle, the system call it waits\n"
            "in, +gil for the holder of the GIL). The process is not stopped.\n",
            NULL,
            aopts_dump_families,
            false,
            aopts_positional,
        },
    [SONDE_ATTACH_MODE_TOP] =
        {
            "top",
            "usage: sonde top [options] PID\n"
            "\n"
            "Watches a running Python process from outside (nothing is loaded into it):\n"
            "a full-screen view, redrawn every second, of its lines and functions with\n"
            "their Python, native and system time over the last interval and since the\n"
            "start. Keys sort by each column, switch between the line and function\n"
            "tables, show one thread, pause; h shows them all, q detaches (the process\n"
            "runs on). When standard output is not a terminal, a plain table is printed\n"
            "every interval instead. With -o, what was seen since the start is written\n"
            "there on leaving, in any of the formats below.\n",
            "Attaching needs ptrace access to PID (same user, or root). Colours only on a\n"
            "terminal that has them, never when NO_COLOR is set.\n",
            aopts_top_families,
            false,
            aopts_positional,
        },
};

void sonde_attach_help(sonde_attach_mode_t mode, sonde_buf_t *out)
{
    sonde_opt_help(&aopts_commands[mode], out);
}

static bool aopts_pid(const char *text, pid_t *pid)
{
    char *end = NULL;
    long value = strtol(text, &end, 10);
    if (!text[0] || *end || value <= 0 || value > (1L << 22)) return false;
    *pid = (pid_t)value;
    return true;
}

/* After the words: the process or the command, and the format. */
static int aopts_settle(sonde_attach_mode_t mode, int argc, char *const *argv,
                        const sonde_opt_ctx_t *ctx, const char *pid_word, sonde_attach_args_t *args,
                        char *err, size_t err_len)
{
    if (mode == SONDE_ATTACH_MODE_RECORD) {
        if (ctx->program < 0)
            return sonde_errf(err, err_len,
                              "record needs a command to run, e.g. 'sonde record -o out.svg -- "
                              "python3 app.py'");
        args->command = argv + ctx->program;
    } else {
        const char *what = aopts_commands[mode].name;
        if (!pid_word)
            return sonde_errf(err, err_len, "%s needs the id of a process, e.g. 'sonde %s 4242'",
                              what, what);
        if (!aopts_pid(pid_word, &args->pid))
            return sonde_errf(err, err_len, "'%s' is not a process id", pid_word);
    }
    if (args->inject && args->period.period_sec > 0)
        return sonde_errf(err, err_len, "--inject does not take --period yet");
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
    sonde_report_choice_t report = {0};
    aopts_pid_word_t pid = {mode, NULL};
    void *targets[] = {&args->opts, &args->files, &report, &report, &args->period, args};
    if (mode == SONDE_ATTACH_MODE_TOP) targets[4] = args; /* its own at the periods' place */
    sonde_opt_ctx_t ctx = {.targets = targets, .arg = &pid};
    memset(args, 0, sizeof *args);
    sonde_attach_opts_default(&args->opts);
    sonde_run_opts_default(&args->files);
    args->inject_wait_sec = 5;
    args->refresh_sec = 1;
    int rc = sonde_opt_parse(&aopts_commands[mode], &ctx, argc, argv, err, err_len);
    if (rc < 0) return rc;
    /* the patterns stay in args->files, which owns them */
    const sonde_run_opts_t *f = &args->files;
    args->opts.files = (sonde_filechoice_t){f->profile_all, f->profile_only, f->n_profile_only,
                                            f->profile_exclude, f->n_profile_exclude};
    args->help = ctx.help;
    if (args->help) return 0;
    args->format = report.format;
    args->outfile = report.outfile;
    return aopts_settle(mode, argc, argv, &ctx, pid.word, args, err, err_len);
}
