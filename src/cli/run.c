/* run.c — `sonde run`: check the request, then become the interpreter.
 *
 * Owns: the CLI side of `sonde run`. Parses the options once
 * (src/launch/options.c; argv is left as it is), checks the script and the
 * output file, and becomes the interpreter (exec) with the parsed options
 * encoded in the hand-over environment (src/launch/launch.c). The
 * profiling itself happens inside the interpreter (src/ext/). With
 * --period (period.c's options), it first starts the period helper
 * (`sonde _periods`, sonde_cli_run_periods_main: src/collect/collect.c's
 * loop), detached: in a session of its own, nobody's child the program can
 * see, with standard error only; it hands one merged profile per period to
 * the fleet pipeline instead of a report at the end. No signal handlers.
 */
#include "cli.h"
#include "period.h"
#include "run_live.h"

#include "../collect/collect.h"
#include "../core/buf.h"
#include "../launch/launch.h"
#include "../prim/prim.h"
#include "../report/report.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The words of `sonde run` (after "run"), for its period helper. */
static int run_argc;
static char **run_argv;

/* Checks --period against the other options and settles the format (pprof
 * unless one was chosen; no report file at the end). Returns 0 or -EINVAL
 * with the message in err. */
static int run_period_settle(sonde_run_opts_t *opts, sonde_period_args_t *period, char *err,
                             size_t err_len)
{
    const sonde_format_t *format = opts->format_by_default ? NULL : opts->format;
    int rc = sonde_cli_period_settle(period, opts->outfile_by_default ? NULL : opts->outfile,
                                     &format, err, err_len);
    if (rc < 0 || !period->period_sec) return rc;
    if (opts->no_subprocesses)
        return sonde_errf(err, err_len,
                          "--period merges the program's processes, which --no-subprocesses "
                          "leaves out");
    opts->format = format;
    opts->outfile = NULL;
    if (format->needs_stacks) opts->stacks = true;
    return 0;
}

/* The command's own options besides run's: the periods, the live view. */
static const sonde_opt_family_t *const run_extra_options[] = {&sonde_cli_period_options,
                                                              &sonde_cli_live_options, NULL};

/* Parses run's words into opts, period and live (all initialised here).
 * Returns 0 or -EINVAL with the message in err. */
static int run_parse(int argc, char **argv, sonde_run_opts_t *opts, sonde_period_args_t *period,
                     sonde_live_args_t *live, char *err, size_t err_len)
{
    memset(period, 0, sizeof *period);
    memset(live, 0, sizeof *live);
    sonde_run_opts_default(opts);
    void *const targets[] = {period, live};
    opts->extra_options = run_extra_options;
    opts->extra_targets = targets;
    int rc = sonde_run_opts_parse(opts, argc, argv, true, err, err_len);
    opts->extra_targets = NULL; /* the targets lived on this stack */
    if (rc < 0 || (!opts->help && (run_period_settle(opts, period, err, err_len) < 0 ||
                                   sonde_cli_live_settle(live, opts, period, err, err_len) < 0)))
        return -EINVAL;
    return 0;
}

/* The periods of the helper (sonde_collect_out_t) on a sonde_cli_period_t. */
typedef struct run_periods {
    sonde_cli_period_t run;
    const sonde_period_args_t *args;
    const sonde_format_t *format;
    double rate_hz;
} run_periods_t;

static int run_periods_start(void *arg)
{
    run_periods_t *m = arg;
    return sonde_cli_period_open(&m->run, m->args, m->format, m->rate_hz);
}

static int run_periods_submit(void *arg, const sonde_profile_t *prof, const sonde_profile_t *parts,
                              size_t n_parts, uint64_t from_ns, uint64_t until_ns)
{
    run_periods_t *m = arg;
    return sonde_cli_period_submit_profile(&m->run, prof, parts, n_parts, from_ns, until_ns);
}

static void run_periods_finish(void *arg, volatile sig_atomic_t *cancel, bool terminated)
{
    run_periods_t *m = arg;
    (void)sonde_cli_period_close(&m->run, "the program", cancel,
                                 terminated ? SONDE_PERIOD_DRAIN_TERM_SEC : 0);
}

/* run's help: its options and the period options. */
static void run_help(sonde_buf_t *out)
{
    sonde_run_help(run_extra_options, out);
}

int sonde_cli_run_periods_main(int argc, char **argv)
{
    char err[512] = "", *end = NULL;
    if (argc < 2) return 2;
    const char *dir = argv[0];
    long root = strtol(argv[1], &end, 10);
    if (!end || *end || root <= 0) return 2;
    sonde_run_opts_t opts;
    sonde_period_args_t period;
    sonde_live_args_t live;
    if (run_parse(argc - 2, argv + 2, &opts, &period, &live, err, sizeof err) < 0 ||
        !period.period_sec) {
        sonde_cli_error("%s", err[0] ? err : "the period helper needs --period");
        sonde_run_opts_free(&opts);
        return 2;
    }
    run_periods_t periods = {.args = &period, .format = opts.format};
    periods.rate_hz = opts.interval_sec > 0 ? 1.0 / opts.interval_sec : 100;
    sonde_collect_out_t out = {.compress = sonde_cli_gzip,
                               .period_sec = period.period_sec,
                               .start = run_periods_start,
                               .submit = run_periods_submit,
                               .finish = run_periods_finish,
                               .arg = &periods};
    int status = sonde_collect_periods(dir, (pid_t)root, &opts, &out, 3);
    sonde_run_opts_free(&opts);
    return status;
}

/* `sonde run --period`: makes the private directory (*dir, malloc'd) and
 * starts the period helper, detached, and waits until it is ready. Returns
 * 0, or 2 after a line saying why (nothing is left then). */
static int run_start_periods(char **dir)
{
    char self[PATH_MAX], root[24];
    int rc = sonde_prim_private_dir(dir);
    if (rc < 0) {
        sonde_cli_error("cannot make a directory for the program's profiles in $TMPDIR, /tmp, "
                        "/dev/shm or /var/tmp: %s",
                        strerror(-rc));
        return 2;
    }
    if ((rc = sonde_prim_self_exe(self, sizeof self)) < 0) {
        sonde_cli_error("cannot find the sonde command itself: %s", strerror(-rc));
        goto fail;
    }
    snprintf(root, sizeof root, "%d", (int)getpid());
    char **words = calloc((size_t)run_argc + 5, sizeof *words);
    int fds[2] = {-1, -1};
    if (!words || pipe2(fds, O_CLOEXEC) != 0) {
        sonde_cli_error("cannot start the period helper: %s", strerror(errno));
        free(words);
        goto fail;
    }
    words[0] = self;
    words[1] = "_periods";
    words[2] = *dir;
    words[3] = root;
    for (int i = 0; i < run_argc; i++)
        words[4 + i] = run_argv[i];
    fflush(NULL);
    pid_t first = fork();
    if (first == 0) {
        /* nobody's child the program can see, in a session of its own,
         * holding none of its descriptors but standard error */
        if (setsid() < 0 || fork() != 0) _exit(0);
        int null = open("/dev/null", O_RDWR);
        if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(fds[1], 3) < 0) _exit(127);
        sonde_prim_close_from(4);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execv(self, words);
        _exit(127);
    }
    int e = errno;
    close(fds[1]);
    free(words);
    unsigned char ready = 0;
    if (first > 0) {
        while (waitpid(first, NULL, 0) < 0 && errno == EINTR) {
        }
        while (read(fds[0], &ready, 1) < 0 && errno == EINTR) {
        }
    } else {
        sonde_cli_error("cannot start the period helper: %s", strerror(e));
    }
    close(fds[0]);
    if (ready == 1) return 0;
fail:
    sonde_prim_private_dir_remove(*dir);
    free(*dir);
    *dir = NULL;
    return 2;
}

/* sonde_cli_launch's step before the exec under --period: the helper, and
 * the directory's name handed to the program. Returns 0, or 2 after a
 * line saying why. */
static int run_periods_before_exec(void)
{
    char *dir = NULL;
    if (run_start_periods(&dir) != 0) return 2;
    int set = setenv(SONDE_ENV_COLLECT, dir, 1);
    free(dir);
    if (set != 0) {
        sonde_cli_error("cannot set the environment: %s", strerror(errno));
        return 2;
    }
    return 0;
}

int sonde_cli_run(int argc, char **argv)
{
    sonde_run_opts_t opts;
    sonde_period_args_t period;
    sonde_live_args_t live;
    sonde_buf_t encoded = SONDE_BUF_INIT;
    char err[512] = "";
    int status = 2;

    run_argc = argc;
    run_argv = argv;
    if (run_parse(argc, argv, &opts, &period, &live, err, sizeof err) < 0) {
        sonde_cli_error("%s", err);
        goto done;
    }
    if (opts.help) {
        status = sonde_cli_help(run_help);
        goto done;
    }
    /* --live: the report at the end is the command's (from the view's
     * sum), none from the program */
    const char *outfile = opts.outfile;
    if (live.live) opts.outfile = NULL;
    sonde_run_opts_encode(&opts, &encoded);
    opts.outfile = outfile;
    if (sonde_buf_error(&encoded)) {
        sonde_cli_error("out of memory");
        goto done;
    }
    sonde_cli_choose_python(opts.python);
    sonde_program_t prog = {opts.script, opts.module, opts.prog_argv, opts.prog_argc, opts.command};
    if (live.live) {
        status = sonde_cli_run_live(&opts, &live, &prog, encoded.data);
        goto done;
    }
    status = sonde_cli_launch("run", &prog, opts.outfile, encoded.data, opts.memory,
                              period.period_sec ? run_periods_before_exec : NULL);
done:
    sonde_buf_free(&encoded);
    sonde_run_opts_free(&opts);
    return status;
}
