/* attach.c — `sonde attach`, `sonde record` and `sonde dump`.
 *
 * Owns: the command lines of the three commands that read a Python process
 * from outside (src/attach/), their Ctrl-C handling and exit statuses.
 *   sonde attach [options] PID          sample a running process
 *   sonde record [options] -- CMD ARGS  start CMD and sample it
 *   sonde dump PID                      print every thread's stack once
 * attach_on_signal is a signal handler (SIGINT, SIGTERM, SIGHUP while
 * sampling): it only records which signal arrived in a sig_atomic_t that
 * the sampling loop polls; the loop ends, the output is written, and the
 * previous handlers come back. Parsing: attach_options.c; output and
 * messages: attach_report.c.
 */
#include "attach_cli.h"

#include "../report/report.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char attach_usage[] =
    "usage: sonde attach [options] PID\n"
    "\n"
    "Samples the Python threads of a running process from outside (nothing is\n"
    "loaded into it) until Ctrl-C, --duration, or the process exits, then writes\n"
    "what it found: a flame graph, folded stacks, speedscope, or the same\n"
    "line-level report as 'sonde run'.\n"
    "\n"
    "options:\n"
    "  -r, --rate HZ        samples per second (default 100, at most 10000)\n"
    "  -d, --duration S     stop after S seconds (default: until Ctrl-C or exit)\n"
    "  -o, --output FILE    write to FILE (the format follows its extension:\n"
    "                       .svg .folded .collapsed .speedscope.json .json .html\n"
    "                       .txt); --outfile is the same option\n"
    "  -f, --format F       text | json | html | folded | svg | speedscope\n"
    "                       (default: from -o's extension, else text)\n"
    "  --threads            keep each thread's stacks apart (flame graphs)\n"
    "  --idle               include threads that are not running (blocked in a\n"
    "                       lock, a sleep, I/O); by default flame graphs show only\n"
    "                       running threads, judged from the kernel's thread state\n"
    "  --gil                only the thread holding the GIL\n"
    "  --subprocesses       also sample the Python processes PID starts\n"
    "  -h, --help           show this help\n"
    "\n"
    "The text and JSON reports charge time as 'sonde run' does (Python, native and\n"
    "system time on the program's own lines, blocked time in sleeps and I/O\n"
    "included); --idle and --threads shape the stacks only. Without -o the output\n"
    "goes to stdout. Attaching needs ptrace access to PID (same user, or root).\n";

static const char record_usage[] =
    "usage: sonde record [options] -- COMMAND [ARGS...]\n"
    "\n"
    "Runs COMMAND (e.g. python3 app.py) and samples it from outside while it\n"
    "runs, at no cost to the program beyond the CPU the sampler takes. Exits\n"
    "with COMMAND's status.\n"
    "\n"
    "options: as 'sonde attach' (--rate, --duration, -o, --format, --threads,\n"
    "--idle, --gil), plus\n"
    "  --subprocesses       also sample the Python processes COMMAND starts\n"
    "                       (COMMAND may then be a shell script or a launcher)\n"
    "\n"
    "Without -o the output goes to stderr, after the program's own output.\n";

static const char dump_usage[] =
    "usage: sonde dump PID\n"
    "\n"
    "Prints the current Python stack of every thread of PID, innermost frame\n"
    "first, with each thread's state (active or idle, the system call it waits\n"
    "in, +gil for the holder of the GIL). The process is not stopped.\n";

/* ---- signals ----------------------------------------------------------------------- */

static volatile sig_atomic_t attach_stop;   /* set by the handler, read by the loop */
static volatile sig_atomic_t attach_signal; /* which signal asked to stop */
static volatile sig_atomic_t attach_sent;   /* it was sent to sonde alone (kill), not
                                               by the terminal to the whole group */
static struct sigaction attach_old[3];
static const int attach_signals[3] = {SIGINT, SIGTERM, SIGHUP};

/* Signal handler: async-signal-safe (three stores). */
static void attach_on_signal(int sig, siginfo_t *info, void *context)
{
    (void)context;
    attach_signal = sig;
    attach_sent = info && info->si_code != SI_KERNEL;
    attach_stop = 1;
}

static void attach_install_signals(void)
{
    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_sigaction = attach_on_signal;
    sigemptyset(&act.sa_mask);
    act.sa_flags = SA_SIGINFO; /* no SA_RESTART: a sleep ends at once */
    attach_stop = 0;
    attach_signal = 0;
    attach_sent = 0;
    for (int i = 0; i < 3; i++)
        sigaction(attach_signals[i], &act, &attach_old[i]);
}

static void attach_restore_signals(void)
{
    for (int i = 0; i < 3; i++)
        sigaction(attach_signals[i], &attach_old[i], NULL);
}

/* ---- options ------------------------------------------------------------------------ */

/* Parses the words after the command name (attach_options.c) and checks
 * that the output can be written. Returns 0, or 2 after printing the
 * error. */
static int attach_parse(sonde_attach_mode_t mode, int argc, char **argv, sonde_attach_args_t *args)
{
    char err[512] = "";
    if (sonde_attach_args_parse(mode, argc, argv, args, err, sizeof err) < 0) {
        sonde_cli_error("%s", err);
        return 2;
    }
    if (!args->help && args->outfile) {
        int rc = sonde_check_output(args->outfile);
        if (rc < 0) {
            sonde_cli_error("cannot write %s: %s", args->outfile, strerror(-rc));
            return 2;
        }
    }
    return 0;
}

/* ---- the commands ---------------------------------------------------------------------- */

/* Prints the closing line of a sampling run. */
static void attach_summary(const sonde_attach_t *a, const char *what,
                           const sonde_attach_args_t *args)
{
    sonde_attach_progress_t p;
    sonde_attach_get_progress(a, &p);
    sonde_attach_cli_progress_end();
    fprintf(stderr, "sonde: %llu sample%s of %s in %.1f s", (unsigned long long)p.samples,
            p.samples == 1 ? "" : "s", what, p.elapsed_sec);
    if (p.errors) fprintf(stderr, " (%llu unreadable)", (unsigned long long)p.errors);
    if (args->outfile)
        fprintf(stderr, "; %s written to %s\n", args->format->name, args->outfile);
    else
        fputc('\n', stderr);
}

int sonde_cli_attach(int argc, char **argv)
{
    sonde_attach_args_t args;
    sonde_attach_t a;
    char what[64];
    int rc = attach_parse(SONDE_ATTACH_MODE_ATTACH, argc, argv, &args);
    if (rc) return rc;
    if (args.help) {
        fputs(attach_usage, stdout);
        return 0;
    }
    sonde_attach_init(&a, &args.opts);
    rc = sonde_attach_add_root(&a, args.pid);
    if (rc < 0) {
        sonde_attach_cli_open_error(args.pid, rc, a.root_error_version);
        sonde_attach_free(&a);
        return 1;
    }
    if (args.opts.duration_sec > 0)
        fprintf(stderr, "sonde: sampling pid %d at %.0f Hz for %g s; Ctrl-C to stop sooner\n",
                (int)args.pid, a.opts.rate_hz, args.opts.duration_sec);
    else
        fprintf(stderr, "sonde: sampling pid %d at %.0f Hz; Ctrl-C to stop\n", (int)args.pid,
                a.opts.rate_hz);
    attach_install_signals();
    rc = sonde_attach_run(&a, &attach_stop, sonde_attach_cli_progress, NULL);
    attach_restore_signals();
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
    attach_summary(&a, what, &args);
    rc = sonde_attach_cli_write(&a, args.format, args.outfile, 1);
    sonde_attach_free(&a);
    return rc;
}

/* Waits for the recorded command; returns its exit status as a shell
 * reports it (128 + signal when killed). */
static int attach_wait_child(pid_t child)
{
    int status = 0;
    while (waitpid(child, &status, 0) < 0)
        if (errno != EINTR) return 1;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return 1;
}

int sonde_cli_record(int argc, char **argv)
{
    sonde_attach_args_t args;
    sonde_attach_t a;
    pid_t child = 0;
    char what[64];
    int rc = attach_parse(SONDE_ATTACH_MODE_RECORD, argc, argv, &args);
    if (rc) return rc;
    if (args.help) {
        fputs(record_usage, stdout);
        return 0;
    }
    fflush(NULL);
    rc = sonde_attach_spawn(args.command, &child);
    if (rc < 0) {
        sonde_cli_error("cannot run '%s': %s", args.command[0], strerror(-rc));
        return rc == -ENOENT ? 127 : 126;
    }
    sonde_attach_init(&a, &args.opts);
    attach_install_signals();
    rc = sonde_attach_add_pending_root(&a, child);
    if (rc == 0) rc = sonde_attach_run(&a, &attach_stop, sonde_attach_cli_progress, NULL);
    attach_restore_signals();
    /* A Ctrl-C at the terminal reached the command too; a signal sent to
     * sonde alone is passed on, so that the command ends as asked. */
    if (attach_stop && attach_sent) kill(child, attach_signal);
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
        attach_summary(&a, what, &args);
        write_rc = sonde_attach_cli_write(&a, args.format, args.outfile, 2);
    }
    sonde_attach_free(&a);
    int status = attach_wait_child(child);
    return write_rc ? (status ? status : write_rc) : status;
}

int sonde_cli_dump(int argc, char **argv)
{
    sonde_attach_args_t args;
    sonde_buf_t out = SONDE_BUF_INIT;
    char version[32] = "";
    int rc = attach_parse(SONDE_ATTACH_MODE_DUMP, argc, argv, &args);
    if (rc) return rc;
    if (args.help) {
        fputs(dump_usage, stdout);
        return 0;
    }
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
