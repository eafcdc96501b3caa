/* session_internal.h — shared by the files of the profiling session only.
 *
 * Owns: the session's state (sonde_session_t, one per process:
 * sonde__session) and the calls between its files, each of which owns one
 * concern: session.c the start and the stop; session_report.c the report
 * and the hand-over of profiles (to the collector, each period's); 
 * session_signals.c SIGTERM (a signal handler: async-signal-safe only) and
 * what the sampler thread does after it; session_hooks.c the interpreter's
 * hooks into the session (atexit, fork, os._exit, os.exec*).
 */
#ifndef SONDE_SESSION_INTERNAL_H
#define SONDE_SESSION_INTERNAL_H

#include "ext.h"

#include "../handover/handover.h"
#include "../report/report.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct sonde_session {
    bool active;           /* between start and stop (GIL) */
    bool from_run;         /* started by `sonde run` */
    bool injected;         /* started by `sonde attach --inject` (PEP 768):
                              the target's signals and os.exec* are left
                              as they are; the profile goes to the
                              command's directory */
    atomic_int reported;   /* 0 until the report was claimed */
    pid_t pid;             /* process that owns the session */
    sonde_run_opts_t opts; /* copy: numbers, flags and the format; its
                                    string fields are NULL but outfile, which
                                    points to the owned copy below */
    char *outfile;         /* owned; absolute when the session started */
    char *program;         /* owned */
    char **argv;           /* owned */
    int argc;
    char python_version[32];
    char *cwd;        /* owned; "" when unknown */
    char *viewer_dir; /* owned; <package>/viewer, for html */
    sonde_filter_t filter;
    sonde_cells_t cells; /* IPython cells' text, copied at stop (cells.c) */
    sonde_sampler_t sampler;
    sonde_sources_t sources; /* what is sampled (sources.c): the sampler above
                                is the CPU source, the sampling core */
    bool stderr_open;        /* fd 2 was open when the session started: if not
                              (`2>&-`), the number may later be a file of the
                              program's, and sonde writes nothing there */
    bool sigterm_installed;
    struct sigaction old_sigterm;
    /* session_stop has begun (its sampler thread is going): a SIGTERM
     * meanwhile waits until the report is written (sigterm_deferred), then
     * ends the process as it would have */
    atomic_bool stopping;
    /* How the program ended, when seen (atexit: an uncaught exception;
     * os._exit(n)); the empty report says the program failed. */
    bool exit_known;
    int exit_status;
    char exit_exception[64]; /* the exception's type name; "" none */
    bool exec_wrapped;       /* os.execv/execve wrapped for this session (exec.c) */
    /* Following processes (children.c): the directory a followed child
     * hands its profile over in, or the collector's of `sonde run --period`
     * (owned; NULL: none), this process's stem there (src/handover/: its
     * marker made at start, its profile at its end), and whether it is a
     * child (its profile always goes there). The root's own directory,
     * made when it first starts a followed process, is children.c's. */
    char *collect_dir;
    char collect_stem[SONDE_HANDOVER_STEM_MAX];
    bool child;
    /* `sonde run --period`: the collector's period count, mapped from
     * the period word in its directory (NULL: no periods). Every period's
     * profile goes to the collector, the process's own included. */
    const _Atomic uint64_t *period_map;
    bool periods;         /* the directory has the period word (even when it could not be mapped) */
    unsigned exec_pieces; /* pieces handed over before an os.exec* (periods) */
    unsigned long start_ident; /* the thread that started the session */
    bool exec_paused;          /* threads paused for an os.exec* in progress */
} sonde_session_t;

/* The process's session (session.c). */
extern sonde_session_t sonde__session;
/* sonde_session_set_collector's generation, for the next start (session.c). */
extern int sonde__session_next_gen;
/* The atexit hook is registered in this process (session_hooks.c). */
extern bool sonde__session_atexit_registered;
/* sonde__session_stop is called by the atexit hook (session_hooks.c). */
extern bool sonde__session_exiting;
/* SIGTERM while the session stops: raised once the report is written
 * (session_signals.c). */
extern volatile sig_atomic_t sonde__session_sigterm_deferred;
/* A SIGTERM that came to a forked child before its own session started:
 * raised again once it has (session_signals.c, session_hooks.c). */
extern volatile sig_atomic_t sonde__session_sigterm_in_fork;
/* The directory the child of the fork under way hands its profile over
 * in (NULL: not followed); set before the fork, back to NULL after it. */
extern const char *volatile sonde__session_fork_dir;

/* ---- start and stop (session.c) ---- */

/* Stops the session and, if write_report, writes the report;
 * flush_streams: flush sys.stdout and sys.stderr first (not for
 * os._exit). Returns 0, or -errno with a Python exception set. */
int sonde__session_stop(bool flush_streams, bool write_report);

/* ---- the report and the hand-over (session_report.c) ---- */

/* Builds and writes the report, or hands the profile over (a followed
 * child, periods). No Python API; python_thread: the caller is a Python
 * thread that released the GIL. Returns 0 or -errno; *what names the
 * failing step. */
int sonde__session_report(sonde_session_t *s, bool python_thread, const char **what);
/* One line on stderr saying the report could not be written. */
void sonde__session_report_error(sonde_session_t *s, const char *what, int rc);
/* The process's marker in the collector's directory: its stem, made at
 * start, removed when it writes its own report. Best effort. */
void sonde__session_collect_begin(sonde_session_t *s);
void sonde__session_collect_live(sonde_session_t *s);
void sonde__session_collect_unlink_live(sonde_session_t *s);
/* Hands what was sampled since the last period over under stem, as
 * period's piece. Returns 0 or -errno. */
int sonde__session_period_piece(sonde_session_t *s, const char *stem, uint64_t period);
/* Maps the collector's period count when its directory has one. */
void sonde__session_period_open(sonde_session_t *s);

/* ---- SIGTERM (session_signals.c) ---- */

void sonde__session_install_sigterm(sonde_session_t *s);
void sonde__session_remove_sigterm(sonde_session_t *s);
/* The sampler thread's callbacks: after SIGTERM or a fatal signal; when no
 * Python thread is left in a restarted child. */
void sonde__session_on_terminate(void);
void sonde__session_on_orphaned(void);
void sonde__session_on_abandoned(void);

/* ---- the interpreter's hooks (session_hooks.c) ---- */

/* Register the atexit and fork hooks once per process. Return 0 or -1
 * with an exception. */
int sonde__session_register_fork(void);
int sonde__session_register_atexit(void);

#endif
