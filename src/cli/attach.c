/* attach.c — `sonde attach`, `sonde record` and `sonde dump`.
 *
 * Owns: the command lines of the three commands that read a Python process
 * from outside (src/attach/), their signal handling and exit statuses.
 *   sonde attach [options] PID          sample a running process
 *   sonde record [options] -- CMD ARGS  start CMD and sample it
 *   sonde dump PID                      print every thread's stack once
 * Two signal handlers, each async-signal-safe and confined to its section
 * below: attach_on_signal (attach: SIGINT, SIGTERM, SIGHUP while sampling)
 * only stores which signal arrived in a sig_atomic_t that the sampling
 * loop polls (the loop ends, the output is written, the previous handlers
 * come back); record_on_signal (record: SIGINT, SIGQUIT, SIGTERM, SIGHUP
 * until the command is reaped) passes a signal on to the command unless
 * the command got it already (a signal to the whole process group), and
 * record samples until the command ends, then ends as it did: the same
 * exit status, or death by the same signal. Parsing: attach_options.c;
 * output and messages: attach_report.c.
 */
#include "attach_cli.h"

#include "../prim/prim.h"
#include "../report/report.h"

#include <errno.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The commands' help (attach_options.c's tables). */
static void attach_help(sonde_buf_t *out)
{
    sonde_attach_help(SONDE_ATTACH_MODE_ATTACH, out);
}

static void record_help(sonde_buf_t *out)
{
    sonde_attach_help(SONDE_ATTACH_MODE_RECORD, out);
}

static void dump_help(sonde_buf_t *out)
{
    sonde_attach_help(SONDE_ATTACH_MODE_DUMP, out);
}

/* ---- signals: attach ------------------------------------------------------------ */

static volatile sig_atomic_t attach_stop; /* set by the handler, read by the loop */
static struct sigaction attach_old[3];
static const int attach_signals[3] = {SIGINT, SIGTERM, SIGHUP};

/* Signal handler: async-signal-safe (one store). */
static void attach_on_signal(int sig)
{
    (void)sig;
    attach_stop = 1;
}

static void attach_install_signals(void)
{
    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_handler = attach_on_signal;
    sigemptyset(&act.sa_mask);
    act.sa_flags = 0; /* no SA_RESTART: a sleep ends at once */
    attach_stop = 0;
    for (int i = 0; i < 3; i++)
        sigaction(attach_signals[i], &act, &attach_old[i]);
}

static void attach_restore_signals(void)
{
    for (int i = 0; i < 3; i++)
        sigaction(attach_signals[i], &attach_old[i], NULL);
}

volatile sig_atomic_t *sonde_attach_cli_signals_on(void)
{
    attach_install_signals();
    return &attach_stop;
}

void sonde_attach_cli_signals_off(void)
{
    attach_restore_signals();
}

/* ---- signals: record --------------------------------------------------------------- */

#define RECORD_N_SIGNALS 4
static const int record_signals[RECORD_N_SIGNALS] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};
static volatile sig_atomic_t record_child; /* the command's pid; 0: none */
static struct sigaction record_old[RECORD_N_SIGNALS];
static bool record_caught[RECORD_N_SIGNALS]; /* our handler is installed */

/* Signal handler: async-signal-safe (getpgid, getpgrp, kill; errno kept).
 * When the command is in sonde's process group, a signal sent to the whole
 * group reached it already and is not passed on a second time: SIGINT and
 * SIGQUIT (the terminal's Ctrl-C and Ctrl-\, or a kill of the group),
 * whoever sent them, and a SIGHUP or SIGTERM from the kernel (the terminal
 * hung up). Any other signal sent to sonde is passed on, once. */
static void record_on_signal(int sig, siginfo_t *info, void *context)
{
    int saved_errno = errno;
    pid_t child = record_child;
    (void)context;
    if (child > 0) {
        bool same_group = getpgid(child) == getpgrp();
        bool group_signal = sig == SIGINT || sig == SIGQUIT || (info && info->si_code == SI_KERNEL);
        if (!same_group || !group_signal) kill(child, sig);
    }
    errno = saved_errno;
}

/* The signals record_on_signal handles, for blocking them around the
 * start of the command. */
static void record_signal_set(sigset_t *set)
{
    sigemptyset(set);
    for (int i = 0; i < RECORD_N_SIGNALS; i++)
        sigaddset(set, record_signals[i]);
}

/* Installs record_on_signal for the command child, except for a signal
 * sonde's parent made it ignore (the command ignores it too). Call with
 * the signals blocked. */
static void record_install_signals(pid_t child)
{
    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_sigaction = record_on_signal;
    sigemptyset(&act.sa_mask);
    act.sa_flags = SA_SIGINFO | SA_RESTART; /* the report's writes go on */
    record_child = child;
    for (int i = 0; i < RECORD_N_SIGNALS; i++) {
        record_caught[i] = false;
        if (sigaction(record_signals[i], NULL, &record_old[i]) != 0 ||
            record_old[i].sa_handler == SIG_IGN)
            continue;
        record_caught[i] = sigaction(record_signals[i], &act, NULL) == 0;
    }
}

static void record_restore_signals(void)
{
    record_child = 0;
    for (int i = 0; i < RECORD_N_SIGNALS; i++)
        if (record_caught[i]) sigaction(record_signals[i], &record_old[i], NULL);
}

/* ---- options ------------------------------------------------------------------------ */

/* Parses the words after the command name (attach_options.c) and checks
 * that the output can be written. Returns 0, or 2 after printing the
 * error. On error and for --help, args owns nothing afterwards; otherwise
 * the caller frees it (sonde_attach_args_free) once sampling is over. */
static int attach_parse(sonde_attach_mode_t mode, int argc, char **argv, sonde_attach_args_t *args)
{
    char err[512] = "";
    if (sonde_attach_args_parse(mode, argc, argv, args, err, sizeof err) < 0) {
        sonde_attach_args_free(args);
        sonde_cli_error("%s", err);
        return 2;
    }
    if (args->help) sonde_attach_args_free(args);
    if (!args->help && args->outfile) {
        int rc = sonde_check_output(args->outfile);
        if (rc < 0) {
            sonde_attach_args_free(args);
            sonde_cli_error("cannot write %s: %s", args->outfile, strerror(-rc));
            return 2;
        }
    }
    return 0;
}

/* ---- the commands ---------------------------------------------------------------------- */

/* Prints the closing line of a sampling run; "FORMAT written to FILE" is
 * added when written (the output file was written). */
static void attach_summary(const sonde_attach_t *a, const char *what,
                           const sonde_attach_args_t *args, bool written)
{
    sonde_attach_progress_t p;
    sonde_attach_get_progress(a, &p);
    sonde_attach_cli_progress_end();
    fprintf(stderr, "sonde: %llu sample%s of %s in %.1f s", (unsigned long long)p.samples,
            p.samples == 1 ? "" : "s", what, p.elapsed_sec);
    if (p.errors) fprintf(stderr, " (%llu unreadable)", (unsigned long long)p.errors);
    if (written)
        fprintf(stderr, "; %s written to %s\n", args->format->name, args->outfile);
    else
        fputc('\n', stderr);
}

/* Writes what was sampled (to the output file, else to fd) with the
 * closing line: before a report that goes to fd, after the file is
 * written, so that it says "written" only of a file that was. Returns 0,
 * or 1 after printing why the output could not be written. */
static int attach_finish(const sonde_attach_t *a, const char *what, const sonde_attach_args_t *args,
                         int fd)
{
    if (!args->outfile) {
        attach_summary(a, what, args, false);
        return sonde_attach_cli_write(a, args->format, NULL, fd);
    }
    sonde_attach_cli_progress_end();
    int rc = sonde_attach_cli_write(a, args->format, args->outfile, fd);
    attach_summary(a, what, args, rc == 0);
    return rc;
}

int sonde_cli_attach(int argc, char **argv)
{
    sonde_attach_args_t args;
    sonde_attach_t a;
    char what[64];
    int rc = attach_parse(SONDE_ATTACH_MODE_ATTACH, argc, argv, &args);
    if (rc) return rc;
    if (args.help) return sonde_cli_help(attach_help);
    sonde_prim_raise_fd_limit(); /* a few files per thread of the target */
    if (args.inject) {
        attach_install_signals();
        rc = sonde_attach_cli_inject(&args, &attach_stop);
        attach_restore_signals();
        if (rc != SONDE_INJECT_OUTSIDE || attach_stop) {
            sonde_attach_args_free(&args);
            return rc == SONDE_INJECT_OUTSIDE ? 1 : rc;
        }
    }
    sonde_attach_init(&a, &args.opts);
    rc = sonde_attach_add_root(&a, args.pid);
    if (rc < 0) {
        sonde_attach_cli_open_error(args.pid, rc, a.root_error_version);
        sonde_attach_free(&a);
        sonde_attach_args_free(&args);
        return 1;
    }
    if (args.opts.duration_sec > 0)
        fprintf(stderr, "sonde: sampling pid %d at %.0f Hz for %g s; Ctrl-C to stop sooner\n",
                (int)args.pid, a.opts.rate_hz, args.opts.duration_sec);
    else
        fprintf(stderr, "sonde: sampling pid %d at %.0f Hz; Ctrl-C to stop\n", (int)args.pid,
                a.opts.rate_hz);
    attach_install_signals();
    if (args.period.period_sec > 0) {
        rc = sonde_attach_cli_periods(&a, &args, &attach_stop);
        attach_restore_signals();
        sonde_attach_args_free(&args);
        sonde_attach_free(&a);
        return rc;
    }
    rc = sonde_attach_run(&a, &attach_stop, sonde_attach_cli_progress, NULL);
    attach_restore_signals();
    sonde_attach_args_free(&args); /* the targets copied the patterns */
    snprintf(what, sizeof what, "pid %d", (int)args.pid);
    if (a.all_exited) {
        sonde_attach_cli_progress_end();
        fprintf(stderr, "sonde: pid %d exited; writing what was sampled until then\n",
                (int)args.pid);
    }
    if (rc < 0) {
        sonde_cli_error("sampling failed: %s", strerror(-rc));
        sonde_attach_free(&a);
        return 1;
    }
    rc = attach_finish(&a, what, &args, 1);
    sonde_attach_free(&a);
    return rc;
}

/* Waits for the recorded command: returns its exit status, or 0 with
 * *signal set when a signal ended it. */
static int record_wait_child(pid_t child, int *signal)
{
    int status = 0;
    *signal = 0;
    while (waitpid(child, &status, 0) < 0)
        if (errno != EINTR) return 1;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) *signal = WTERMSIG(status);
    return WIFSIGNALED(status) ? 0 : 1;
}

int sonde_cli_record(int argc, char **argv)
{
    sonde_attach_args_t args;
    sonde_attach_t a;
    sigset_t forwarded, old_mask;
    pid_t child = 0;
    char what[64];
    int rc = attach_parse(SONDE_ATTACH_MODE_RECORD, argc, argv, &args);
    if (rc) return rc;
    if (args.help) return sonde_cli_help(record_help);
    fflush(NULL);
    /* Signals wait until the handler knows the command's pid; the command
     * starts with the mask sonde had. */
    record_signal_set(&forwarded);
    sigprocmask(SIG_BLOCK, &forwarded, &old_mask);
    rc = sonde_attach_spawn(args.command, &old_mask, &child);
    if (rc < 0) {
        sigprocmask(SIG_SETMASK, &old_mask, NULL);
        sonde_cli_error("cannot run '%s': %s", args.command[0], strerror(-rc));
        sonde_attach_args_free(&args);
        return rc == -ENOENT ? 127 : 126;
    }
    record_install_signals(child);
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
    sonde_prim_raise_fd_limit(); /* once the command runs with the limit sonde had */
    sonde_attach_init(&a, &args.opts);
    /* No stop flag: sampling ends with the command (or --duration); a
     * signal is the command's to act on. */
    rc = sonde_attach_add_pending_root(&a, child);
    if (rc == 0) rc = sonde_attach_run(&a, NULL, sonde_attach_cli_progress, NULL);
    sonde_attach_args_free(&args); /* the targets copied the patterns */
    snprintf(what, sizeof what, "'%s'", args.command[0]);
    int write_rc = 0;
    if (rc < 0) {
        sonde_cli_error("sampling failed: %s", strerror(-rc));
        write_rc = 1;
    } else if (a.n_targets == 0) {
        sonde_attach_cli_progress_end();
        if (a.root_error)
            sonde_attach_cli_open_error(child, a.root_error, a.root_error_version);
        else
            sonde_cli_error("'%s' never ran a Python interpreter sonde could read, so nothing "
                            "was sampled%s",
                            args.command[0],
                            args.opts.subprocesses ? ""
                                                   : " (to follow the Python processes it "
                                                     "starts, add --subprocesses)");
        write_rc = 1;
    } else {
        write_rc = attach_finish(&a, what, &args, 2);
    }
    sonde_attach_free(&a);
    int signal = 0;
    int status = record_wait_child(child, &signal);
    record_restore_signals();
    if (signal) {
        /* End as the command ended (a shell then reports the signal, and a
         * parent waiting for sonde sees WIFSIGNALED). */
        sonde_prim_die_by_signal(signal);
        return 128 + signal;
    }
    return write_rc && !status ? write_rc : status;
}

int sonde_cli_dump(int argc, char **argv)
{
    sonde_attach_args_t args;
    sonde_buf_t out = SONDE_BUF_INIT;
    char version[32] = "";
    int rc = attach_parse(SONDE_ATTACH_MODE_DUMP, argc, argv, &args);
    if (rc) return rc;
    if (args.help) return sonde_cli_help(dump_help);
    sonde_prim_raise_fd_limit();
    rc = sonde_attach_dump(args.pid, &out, version, sizeof version);
    if (rc < 0) {
        sonde_attach_cli_open_error(args.pid, rc, version);
        sonde_buf_free(&out);
        return 1;
    }
    fputs(out.data ? out.data : "", stdout);
    fflush(stdout);
    sonde_buf_free(&out);
    return 0;
}
