/* run_live.c — `sonde run --live`: the program runs while sonde draws its
 * profile on the terminal.
 *
 * Owns: the one mode where sonde keeps the terminal for itself and a
 * process between the program and its launcher. The command forks the
 * program (its child, in the same process group: the terminal's Ctrl-C
 * reaches both), whose standard output and error go to a file (--live-output,
 * else sonde-live-PID.out, named on exit) and whose standard input is
 * /dev/null when it was the terminal; the program is started as `sonde run
 * --period` starts it (sonde_cli_launch, the hand-over directory in
 * SONDE_RUN_COLLECT), and this process runs the collector's period loop
 * (src/collect/collect.c) itself, one period per refresh, handing each
 * merged period to the live view (src/live/). q closes the view: the
 * program runs on to its end, its profile still collected. At the end the
 * cumulated profile is written to -o when given, and sonde ends as the
 * program did (its exit status, or death by its signal).
 * The child runs the launcher's checks with the terminal still sonde's, so
 * that their one-line errors are seen, and tells the parent (a byte on a
 * pipe) before it waits for the collector and redirects its output.
 * Main thread, but for two threads: the screen's (src/live/screen.c) and
 * one that passes signals sent to sonde on to the program (sigtimedwait:
 * no signal handler). Every thread keeps SIGINT, SIGTERM, SIGHUP and
 * SIGQUIT blocked, as the collector's loop wants them.
 */
#include "run_live.h"

#include "attach_cli.h"
#include "cli.h"

#include "../collect/collect.h"
#include "../launch/launch.h"
#include "../live/live.h"
#include "../prim/file.h"
#include "../prim/prim.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LIVE_ENDING_LINGER_SEC 3.0 /* the ending line stays this long, or until a key */

/* ---- the options ------------------------------------------------------------------- */

enum { LIVE_ON, LIVE_REFRESH, LIVE_OUTPUT };

static int live_apply(void *target, const sonde_opt_t *opt, const char *word, const char *value,
                      char *err, size_t err_len)
{
    (void)word;
    sonde_live_args_t *l = target;
    switch (opt->id) {
    case LIVE_ON:
        l->live = true;
        break;
    case LIVE_REFRESH:
        if (!sonde_opt_number(value, &l->refresh_sec) || l->refresh_sec < SONDE_LIVE_REFRESH_MIN ||
            l->refresh_sec > SONDE_LIVE_REFRESH_MAX)
            return sonde_errf(err, err_len,
                              "--refresh must be a number of seconds from %g to %g, not '%s'",
                              SONDE_LIVE_REFRESH_MIN, SONDE_LIVE_REFRESH_MAX, value);
        break;
    default:
        l->output = value;
        break;
    }
    return 0;
}

static const sonde_opt_t live_table[] = {
    {"--live", NULL, 0, SONDE_OPT_FLAG, LIVE_ON, SONDE_OPT_COMMAND, NULL, NULL,
     "watch the profile while the program runs: a full-screen view of its lines and functions "
     "(Python, native, system time, memory with --memory), redrawn every second; the "
     "program's output goes to a file (--live-output), q closes the view and lets the "
     "program finish, -o writes the report at its end",
     NULL},
    {"--refresh", NULL, 0, SONDE_OPT_VALUE, LIVE_REFRESH, SONDE_OPT_COMMAND, "S", NULL,
     "--live: redraw every S seconds (default 1)", NULL},
    {"--live-output", NULL, 0, SONDE_OPT_VALUE, LIVE_OUTPUT, SONDE_OPT_COMMAND | SONDE_OPT_NONEMPTY,
     "FILE", "a file name",
     "--live: where the program's standard output and error go (default: sonde-live-PID.out in "
     "the current directory, named when the program ends)",
     NULL},
};

const sonde_opt_family_t sonde_cli_live_options = {
    "live view", live_table, SONDE_ARRAY_LEN(live_table), live_apply, NULL,
};

int sonde_cli_live_settle(sonde_live_args_t *l, sonde_run_opts_t *opts,
                          const sonde_period_args_t *period, char *err, size_t err_len)
{
    if (!l->live) {
        if (l->refresh_sec > 0 || l->output)
            return sonde_errf(err, err_len, "%s goes with --live",
                              l->output ? "--live-output" : "--refresh");
        return 0;
    }
    if (!l->refresh_sec) l->refresh_sec = 1;
    if (period->period_sec > 0)
        return sonde_errf(err, err_len,
                          "--live and --period do not go together: the view is drawn from "
                          "sonde's own periods");
    if (opts->no_subprocesses)
        return sonde_errf(err, err_len,
                          "--live merges the program's processes, which --no-subprocesses "
                          "leaves out");
    opts->stacks = true; /* the view's thread filter reads the stacks */
    return 0;
}

/* ---- the child ---------------------------------------------------------------------- */

/* What the child needs between the fork and the exec (set before the
 * fork; the child's copy only). */
static struct {
    int checked_w;        /* the launcher's checks passed: one byte */
    int go_r;             /* the collector is ready: one byte, 1 */
    const char *out_path; /* the program's standard output and error */
    const char *dir;
} live_child;

/* sonde_cli_launch's step before the exec, in the child: opens the
 * output file (the terminal is still sonde's: an error is seen), tells
 * the parent, waits for the collector. Returns 0, or 2 when the file
 * cannot be written (said here) or the parent gave up (it said why). */
static int live_child_before_exec(void)
{
    int out_fd =
        open(live_child.out_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (out_fd < 0) {
        sonde_cli_error("cannot write the program's output to %s: %s", live_child.out_path,
                        strerror(errno));
        return 2;
    }
    unsigned char byte = 1;
    (void)sonde_write_fd(live_child.checked_w, &byte, 1);
    close(live_child.checked_w);
    byte = 0;
    while (read(live_child.go_r, &byte, 1) < 0 && errno == EINTR) {
    }
    close(live_child.go_r);
    if (byte != 1) return 2;
    if (isatty(0)) {
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null >= 0 && null != 0) {
            dup2(null, 0);
            close(null);
        }
    }
    if (dup2(out_fd, 1) < 0 || dup2(out_fd, 2) < 0) return 2;
    close(out_fd);
    if (setenv(SONDE_ENV_COLLECT, live_child.dir, 1) != 0) return 2;
    return 0;
}

/* ---- signals ------------------------------------------------------------------------- */

/* SIGINT, SIGTERM, SIGHUP and SIGQUIT stay blocked in every thread of
 * sonde's (the collector's loop wants them so, and the screen's thread
 * inherits the mask); a thread of its own takes them with sigtimedwait
 * and passes each on to the program, as `sonde record` does, unless the
 * program got it already: the terminal's Ctrl-C and Ctrl-\ and a hang-up
 * reach the whole foreground group, the program included. */
#define LIVE_SIGNAL_WAKE_NS 100000000L

static struct {
    pthread_t thread;
    pid_t child;
    atomic_bool stop;
} live_signals;

static void live_signal_set(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
    sigaddset(set, SIGQUIT);
}

static void *live_signal_main(void *arg)
{
    (void)arg;
    sigset_t set;
    live_signal_set(&set);
    while (!atomic_load_explicit(&live_signals.stop, memory_order_acquire)) {
        struct timespec wake = {0, LIVE_SIGNAL_WAKE_NS};
        siginfo_t info;
        int sig = sigtimedwait(&set, &info, &wake);
        if (sig <= 0) continue;
        /* from the kernel: the terminal's keys and a hang-up reach the
         * foreground group, the program included; but when sonde leads
         * the session (a terminal that runs it directly), a hang-up is
         * sent to sonde alone */
        bool leader = getsid(0) == getpid();
        bool group = sig == SIGINT || sig == SIGQUIT ||
                     (info.si_code == SI_KERNEL && !(sig == SIGHUP && leader));
        if (!group) kill(live_signals.child, sig);
    }
    return NULL;
}

/* Ends the forwarding thread and drops the signals still pending (the
 * program's end is what sonde ends by), then restores old_mask. */
static void live_signals_end(bool started, const sigset_t *old_mask)
{
    if (started) {
        atomic_store_explicit(&live_signals.stop, true, memory_order_release);
        pthread_join(live_signals.thread, NULL);
    }
    sigset_t set;
    live_signal_set(&set);
    struct timespec none = {0, 0};
    while (sigtimedwait(&set, NULL, &none) > 0) {
    }
    sigprocmask(SIG_SETMASK, old_mask, NULL);
}

/* ---- the parent ---------------------------------------------------------------------- */

/* The collector's periods (sonde_collect_out_t) into the view. */
static int live_submit(void *arg, const sonde_profile_t *prof, const sonde_profile_t *parts,
                       size_t n_parts, uint64_t from_ns, uint64_t until_ns)
{
    (void)parts;
    (void)n_parts;
    sonde_live_t *view = arg;
    static uint64_t first_ns;
    if (!first_ns) first_ns = from_ns;
    sonde_profile_t copy;
    sonde_profile_init(&copy);
    int rc = sonde_profile_merge(&copy, prof);
    copy.elapsed_sec = (double)(until_ns - from_ns) / 1e9;
    if (rc == 0)
        rc = sonde_live_feed(view, &copy, (double)(from_ns - first_ns) / 1e9,
                             (double)(until_ns - first_ns) / 1e9);
    sonde_profile_free(&copy);
    return rc;
}

/* The program's title: its script (or module, or -c) and arguments. */
static void live_title(const sonde_program_t *prog, char *buf, size_t len)
{
    size_t at = 0;
    const char *first = prog->script ? prog->script : prog->module ? prog->module : "-c";
    int n = snprintf(buf, len, "%s%s", prog->module ? "-m " : "", first);
    at = n > 0 && (size_t)n < len ? (size_t)n : len - 1;
    for (int i = 1; i < prog->argc && at + 2 < len; i++) {
        n = snprintf(buf + at, len - at, " %s", prog->argv[i]);
        if (n < 0) break;
        at += (size_t)n < len - at ? (size_t)n : len - at - 1;
    }
}

/* Waits for the child: its exit status, or 128+N with *sig set. */
static int live_wait(pid_t child, int *sig)
{
    int status = 0;
    *sig = 0;
    while (waitpid(child, &status, 0) < 0)
        if (errno != EINTR) return 1;
    if (WIFSIGNALED(status)) {
        *sig = WTERMSIG(status);
        return 128 + *sig;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int sonde_cli_run_live(sonde_run_opts_t *opts, const sonde_live_args_t *live,
                       const sonde_program_t *prog, const char *encoded)
{
    if (!isatty(1)) {
        sonde_cli_error("--live draws on a terminal, and standard output is not one (for a "
                        "profile every few seconds without a terminal: --period S)");
        return 2;
    }
    const char *outfile = opts->outfile_by_default ? NULL : opts->outfile;
    char out_name[64];
    const char *out_path = live->output;
    if (!out_path) {
        snprintf(out_name, sizeof out_name, "sonde-live-%d.out", (int)getpid());
        out_path = out_name;
    }
    char *dir = NULL;
    int rc = sonde_prim_private_dir(&dir);
    if (rc < 0) {
        sonde_cli_error("cannot make a directory for the program's profiles in $TMPDIR, /tmp, "
                        "/dev/shm or /var/tmp: %s",
                        strerror(-rc));
        return 2;
    }
    int checked[2] = {-1, -1}, go[2] = {-1, -1};
    if (pipe2(checked, O_CLOEXEC) != 0 || pipe2(go, O_CLOEXEC) != 0) {
        sonde_cli_error("cannot start the program: %s", strerror(errno));
        rc = 2;
        goto out;
    }
    /* every thread of sonde's keeps the signals blocked (see "signals");
     * the child, forked before, starts the program with the mask sonde had */
    sigset_t blocked, old_mask;
    live_signal_set(&blocked);
    fflush(NULL);
    pid_t child = fork();
    if (child == 0) {
        close(checked[0]);
        close(go[1]);
        live_child.checked_w = checked[1];
        live_child.go_r = go[0];
        live_child.out_path = out_path;
        live_child.dir = dir;
        _exit(sonde_cli_launch("run", prog, NULL, encoded, opts->memory, live_child_before_exec));
    }
    close(checked[1]);
    close(go[0]);
    checked[1] = go[0] = -1;
    if (child < 0) {
        sonde_cli_error("cannot start the program: %s", strerror(errno));
        rc = 2;
        goto out;
    }
    sigprocmask(SIG_BLOCK, &blocked, &old_mask);
    live_signals.child = child;
    bool forwarding = pthread_create(&live_signals.thread, NULL, live_signal_main, NULL) == 0;
    unsigned char byte = 0;
    while (read(checked[0], &byte, 1) < 0 && errno == EINTR) {
    }
    int sig = 0;
    if (byte != 1) { /* the launcher's checks failed; it said why */
        rc = live_wait(child, &sig);
        live_signals_end(forwarding, &old_mask);
        goto out;
    }
    char title[512], quit_line[sizeof title + 4096 + 128];
    live_title(prog, title, sizeof title);
    snprintf(quit_line, sizeof quit_line,
             "sonde: the view is closed; %s runs on (pid %d), its output going to %s\n", title,
             (int)child, out_path);
    sonde_live_opts_t vopts = {.title = title,
                               .quit_say = "close the view (the program runs on)",
                               .quit_line = quit_line,
                               .refresh_sec = live->refresh_sec,
                               .fd = 1};
    sonde_live_t *view = NULL;
    rc = sonde_live_open(&view, &vopts);
    if (rc < 0) {
        sonde_cli_error("cannot draw on the terminal: %s", strerror(-rc));
        close(go[1]); /* the child ends without running the program */
        go[1] = -1;
        live_wait(child, &sig);
        live_signals_end(forwarding, &old_mask);
        rc = 2;
        goto out;
    }
    sonde_collect_out_t cout = {
        .period_sec = live->refresh_sec, .submit = live_submit, .arg = view};
    int go_w = go[1];
    go[1] = -1;
    (void)sonde_collect_periods(dir, child, opts, &cout, go_w); /* closes go_w */
    rc = live_wait(child, &sig);
    char ending[256];
    if (sig)
        snprintf(ending, sizeof ending, "%.160s was killed by signal %d (any key to leave now)",
                 title, sig);
    else
        snprintf(ending, sizeof ending, "%.160s exited with status %d (any key to leave now)",
                 title, rc);
    sonde_live_ending(view, ending, LIVE_ENDING_LINGER_SEC);
    sonde_live_close(view);
    live_signals_end(forwarding, &old_mask);
    if (sig)
        fprintf(stderr, "sonde: %s was killed by signal %d; its output is in %s\n", title, sig,
                out_path);
    else
        fprintf(stderr, "sonde: %s exited with status %d; its output is in %s\n", title, rc,
                out_path);
    if (outfile &&
        sonde_attach_cli_write_profile(sonde_live_cumulated(view), opts->format, outfile, 1) == 0)
        fprintf(stderr, "sonde: %s written to %s\n", opts->format->name, outfile);
    sonde_live_free(view);
    free(dir);
    if (sig) {
        sonde_prim_die_by_signal(sig);
        return 128 + sig;
    }
    return rc;
out:
    for (int i = 0; i < 2; i++) {
        if (checked[i] >= 0) close(checked[i]);
        if (go[i] >= 0) close(go[i]);
    }
    sonde_prim_private_dir_remove(dir);
    free(dir);
    return rc;
}
