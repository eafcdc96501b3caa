/* session_signals.c — SIGTERM in a profiled process.
 *
 * Owns: the session's SIGTERM handler (a signal handler: async-signal-safe
 * calls only), which asks the sampler thread to write the report and then
 * end the process the way SIGTERM would have, and the sampler thread's
 * callbacks after SIGTERM or a fatal signal (crash.c) and in a restarted
 * child left without Python threads.
 */
#include "session_internal.h"

#include <dirent.h>

/* ---- SIGTERM -------------------------------------------------------------------- */

/* Signal handler (async-signal-safe): SIGTERM in the profiled process asks
 * the sampler thread to write the report and then end the process the way
 * SIGTERM would have. In a forked child it just restores the default. */
volatile sig_atomic_t sonde__session_sigterm_deferred;

/* A SIGTERM that came to a forked child before its own session started
 * (a Pool's terminate() right after the fork): raised again once it has. */
volatile sig_atomic_t sonde__session_sigterm_in_fork;
/* The directory the child of the fork under way hands its profile over in
 * (borrowed from children.c; NULL: not followed); set before the fork, back
 * to NULL after it in both processes. */
const char *volatile sonde__session_fork_dir;

static void session_sigterm(int sig)
{
    if (getpid() != sonde__session.pid && sonde__session_fork_dir) {
        /* a child being followed: its session starts in a moment */
        sonde__session_sigterm_in_fork = 1;
        return;
    }
    if (getpid() != sonde__session.pid || !sonde__session.active) {
        signal(sig, SIG_DFL);
        kill(getpid(), sig);
        return;
    }
    sonde_children_on_sigterm(); /* a helper the root waits for stops waiting */
    if (atomic_load(&sonde__session.stopping)) {
        sonde__session_sigterm_deferred = 1;
        return;
    }
    sonde_sampler_signal_terminate(&sonde__session.sampler);
}

/* Runs on the sampler thread after SIGTERM. */
void sonde__session_on_terminate(void)
{
    int expected = 0;
    int crash = sonde_crash_signal(); /* a fatal signal (crash.c), else SIGTERM */
    if (atomic_compare_exchange_strong(&sonde__session.reported, &expected, 1)) {
        const char *what = "";
        /* it ends by the signal: an empty report says so */
        sonde__session.exit_known = true;
        sonde__session.exit_status = 128 + (crash ? crash : SIGTERM);
        snprintf(sonde__session.exit_exception, sizeof sonde__session.exit_exception, "%s",
                 crash ? sonde_crash_signal_name() : "SIGTERM");
        int rc = sonde__session_report(&sonde__session, false, &what);
        if (rc < 0) sonde__session_report_error(&sonde__session, what, rc);
    }
    if (crash) {
        sonde_crash_reported(); /* the handler lets the signal end the process */
        return;
    }
    signal(SIGTERM, SIG_DFL);
    kill(getpid(), SIGTERM);
}

/* Runs on the sampler thread when no Python thread is left in a
 * restarted child (sonde_sampler_t.on_orphaned): the report, then the
 * end plain python would have had, exit status 0 when its last thread
 * ended. */
void sonde__session_on_orphaned(void)
{
    int expected = 0;
    if (atomic_compare_exchange_strong(&sonde__session.reported, &expected, 1)) {
        const char *what = "";
        int rc = sonde__session_report(&sonde__session, false, &what);
        if (rc < 0) sonde__session_report_error(&sonde__session, what, rc);
    }
    _exit(0);
}

/* The sampler thread of an injected session whose command is gone: no
 * report (no one reads it), and the command's directory removed (its
 * scripts, the live marker). No Python API, no GIL. */
void sonde__session_on_abandoned(void)
{
    sonde_session_t *s = &sonde__session;
    int expected = 0;
    (void)atomic_compare_exchange_strong(&s->reported, &expected, 1);
    if (!s->collect_dir) return;
    DIR *d = opendir(s->collect_dir);
    if (!d) return;
    struct dirent *e;
    char path[PATH_MAX];
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (snprintf(path, sizeof path, "%s/%s", s->collect_dir, e->d_name) < (int)sizeof path)
            unlink(path);
    }
    closedir(d);
    rmdir(s->collect_dir);
}

void sonde__session_install_sigterm(sonde_session_t *s)
{
    struct sigaction old, act;
    if (sigaction(SIGTERM, NULL, &old) != 0) return;
    if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler != SIG_DFL) return; /* the program's */
    memset(&act, 0, sizeof act);
    act.sa_handler = session_sigterm;
    act.sa_flags = SA_RESTART;
    sigemptyset(&act.sa_mask);
    if (sigaction(SIGTERM, &act, NULL) == 0) {
        s->sigterm_installed = true;
        s->old_sigterm = old;
    }
}

void sonde__session_remove_sigterm(sonde_session_t *s)
{
    struct sigaction cur;
    if (!s->sigterm_installed) return;
    s->sigterm_installed = false;
    if (sigaction(SIGTERM, NULL, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) &&
        cur.sa_handler == session_sigterm)
        sigaction(SIGTERM, &s->old_sigterm, NULL);
}
