/* session.c — one profiling session: start, stop, and the report at the end.
 *
 * Owns: the process's single session (sonde run, or sonde.start()/stop()),
 * its atexit hook, its SIGTERM handler, its report before os._exit and
 * before an os.exec* (exec.c wraps those functions) and the
 * writing of its report, in the format its options chose from the format
 * registry (src/report/format.c), with the text of IPython cells it
 * profiled (cells.c); with `sonde run --period`, the hand-over of each
 * period's profile to the collector, on the sampler thread; an empty terminal report at exit is one line printed
 * by a C exit handler, which knows the exit status.
 * Called with the GIL from module.c and boot.c; the report may also be
 * written on the sampler thread after SIGTERM (without the GIL: building
 * and writing a report needs no Python). session_sigterm is a signal
 * handler: it only calls async-signal-safe functions.
 */
#include "ext.h"

#include "../handover/handover.h"
#include "../report/report.h"
#include "../trace/trace.h"

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

static sonde_session_t session;
static bool session_atexit_registered;
/* sonde_session_set_collector's settings, for the next start */
static char *session_next_collect;
static bool session_next_child;
static int session_next_gen;

const char *sonde_session_outfile(void)
{
    return session.active && session.pid == getpid() ? session.outfile : NULL;
}

bool sonde_session_from_run(void)
{
    return session.active && session.from_run;
}

sonde_sampler_t *sonde_session_sampler_gil(const char **cwd)
{
    if (!session.active || session.pid != getpid() || atomic_load(&session.reported)) return NULL;
    if (cwd) *cwd = session.cwd;
    return &session.sampler;
}

/* ---- the report ---------------------------------------------------------------- */

/* An empty terminal report at the program's exit, when the exit status is
 * unknown (a clean end, or sys.exit(n): Python keeps the status of a
 * SystemExit to itself until it calls exit()): its one line is printed by
 * a C exit handler (glibc's on_exit, which is given the status) once the
 * interpreter has finished, so that it can say the program failed with
 * status n rather than that it was too short to sample. */
static struct {
    bool registered;       /* on_exit done (once per process) */
    pid_t pid;             /* the process whose line it is */
    bool pending;          /* a line to print at exit */
    double elapsed_sec;    /* of the profile */
    double interval_sec;   /* sampling interval */
    sonde_ns_t outside_ns; /* time sampled outside the profiled files */
    bool profile_all;
} session_empty_note;
static bool session_exiting; /* session_stop is called by the atexit hook */

/* C exit handler (after the interpreter finished; no Python API). */
static void session_empty_note_print(int status, void *unused)
{
    if (!session_empty_note.pending || session_empty_note.pid != getpid()) return;
    session_empty_note.pending = false;
    sonde_profile_t prof;
    sonde_profile_init(&prof);
    prof.elapsed_sec = session_empty_note.elapsed_sec;
    prof.interval_sec = session_empty_note.interval_sec;
    prof.unattributed_ns = session_empty_note.outside_ns;
    prof.profile_all = session_empty_note.profile_all;
    if (status != 0) sonde_profile_set_exit(&prof, status & 0xff, "");
    sonde_buf_t out = SONDE_BUF_INIT;
    if (sonde_report_text(&prof, NULL, &out) == 0 && sonde_prim_fd_is_open(STDERR_FILENO))
        (void)sonde_write_fd(STDERR_FILENO, out.data, out.len);
    sonde_buf_free(&out);
    sonde_profile_free(&prof);
}

/* Whether the empty report of prof is left to the exit handler (see
 * session_empty_note); registers it on first use. */
static bool session_defer_empty(const sonde_session_t *s, const sonde_profile_t *prof)
{
    if (!session_exiting || s->outfile || prof->total_ns != 0 || s->exit_known) return false;
    if (!session_empty_note.registered) {
        if (on_exit(session_empty_note_print, NULL) != 0) return false;
        session_empty_note.registered = true;
    }
    session_empty_note.pid = getpid();
    session_empty_note.elapsed_sec = prof->elapsed_sec;
    session_empty_note.interval_sec = prof->interval_sec;
    session_empty_note.outside_ns = prof->unattributed_ns;
    session_empty_note.profile_all = prof->profile_all;
    session_empty_note.pending = true;
    return true;
}

/* ---- following processes ------------------------------------------------------ */

void sonde_session_set_collector(const char *dir, bool child, int gen)
{
    free(session_next_collect);
    session_next_collect = dir && *dir ? strdup(dir) : NULL;
    session_next_child = child && session_next_collect;
    session_next_gen = gen;
}

void sonde_session_note_spawn(void)
{
    sonde_children_note_spawn(true);
}

/* At start: the process's marker in the collector's directory says that
 * it is profiled; without its profile beside it at the end, the collector
 * counts the process as lost. Best effort. */
static void session_collect_live(sonde_session_t *s)
{
    /* multiprocessing's forkserver and resource tracker end after the root:
     * SERVICE says not to wait for them */
    bool service = sonde_children_role() == SONDE_CHILDREN_SERVICE;
    (void)sonde_handover_mark(s->collect_dir, s->collect_stem,
                              service ? SONDE_HANDOVER_SERVICE : SONDE_HANDOVER_LIVE, 0);
}

static void session_collect_begin(sonde_session_t *s)
{
    if (sonde_handover_stem(s->collect_stem, sizeof s->collect_stem, (int)getpid(),
                            sonde_prim_monotonic_ns(), session_next_gen) < 0)
        s->collect_stem[0] = 0;
}

/* A process that writes its own report is no business of the collector's. */
static void session_collect_unlink_live(sonde_session_t *s)
{
    if (!s->collect_dir || !s->collect_stem[0]) return;
    sonde_handover_unmark(s->collect_dir, s->collect_stem, SONDE_HANDOVER_LIVE, 0);
    sonde_handover_unmark(s->collect_dir, s->collect_stem, SONDE_HANDOVER_SERVICE, 0);
}

/* Hands the profile to the collector (src/handover/: written atomically).
 * One that fails leaves the FAILED marker with its errno, so that the
 * report can say why this process is missing; nothing is said here.
 * Returns 0 or -errno. */
static int session_hand_over(sonde_session_t *s, const sonde_profile_t *prof, const char **what)
{
    *what = "hand the profile over";
    int rc = sonde_handover_write(s->collect_dir, s->collect_stem, SONDE_HANDOVER_PROFILE, 0, prof);
    if (rc < 0)
        (void)sonde_handover_mark(s->collect_dir, s->collect_stem, SONDE_HANDOVER_FAILED,
                                  (uint64_t)-rc);
    return rc;
}

/* The process's entry of the report (sonde_process_t): this process, its
 * command line (arguments joined by spaces), CPU time and peak RSS now,
 * the profile's wall time; complete when `sonde run` profiled it from its
 * start. Returns 0 or -ENOMEM. */
static int session_process(const sonde_session_t *s, sonde_profile_t *prof)
{
    char cmdline[4096];
    ssize_t n = sonde_prim_proc_cmdline(getpid(), cmdline, sizeof cmdline);
    if (n <= 0) n = 1;
    cmdline[n - 1] = 0;
    for (ssize_t i = 0; i < n - 1; i++)
        if (!cmdline[i]) cmdline[i] = ' ';
    sonde_process_t process = {.pid = (int)getpid(),
                               .ppid = (int)getppid(),
                               .cmdline = cmdline,
                               .wall_sec = prof->elapsed_sec,
                               .followed = (int)sonde_children_spawned(),
                               .complete = s->from_run};
    if (sonde_prim_self_usage(&process.cpu_sec, &process.peak_mb) < 0)
        process.cpu_sec = process.peak_mb = 0;
    return sonde_profile_add_process(prof, &process);
}

/* Whether the profile goes to the collector: a followed child, every
 * process with periods. */
static bool session_to_collector(sonde_session_t *s)
{
    return s->collect_dir && (s->child || s->periods);
}

/* Builds the profile of what was sampled (since the current period began,
 * with periods) into prof (initialised); period: while sampling goes on
 * (the memory profiler keeps counting). No Python API. Returns 0 or
 * -errno. */
static int session_build(sonde_session_t *s, sonde_profile_t *prof, bool period)
{
    int rc = sonde_profile_set_run(prof, s->program ? s->program : "", s->argc,
                                   (const char *const *)s->argv, s->python_version);
    if (rc < 0) return rc;
    if ((rc = sonde_sources_to_profile(&s->sources, s->cwd, prof, period)) < 0) return rc;
    if ((rc = session_process(s, prof)) < 0) return rc;
    if (period) {
        /* a period's hand-over: the collector reads the sources itself */
        sonde_profile_sum(prof);
    } else {
        if ((rc = sonde_profile_finish(prof)) < 0) return rc;
        if ((rc = sonde_cells_apply(&s->cells, prof)) < 0) return rc;
    }
    prof->profile_all = s->opts.profile_all;
    prof->pid = (int)getpid();
    if (s->exit_known) sonde_profile_set_exit(prof, s->exit_status, s->exit_exception);
    return 0;
}

/* Builds and writes the report. No Python API: runs with or without the
 * GIL; python_thread: the caller is a Python thread that released the GIL,
 * which pprof's gzip (Python's zlib) may take back. A report for stderr is
 * not written when the session started with fd 2 closed. Returns 0 or
 * -errno; *what names the failing step. */
static int session_report(sonde_session_t *s, bool python_thread, const char **what)
{
    sonde_profile_t prof;
    int rc;

    bool to_collector = session_to_collector(s);
    if (!to_collector && !s->outfile && !s->stderr_open) return 0; /* nowhere to go */
    sonde_profile_init(&prof);
    *what = "build the report";
    if ((rc = session_build(s, &prof, false)) < 0) goto done;
    if (to_collector) {
        rc = session_hand_over(s, &prof, what);
        if (s->periods && !s->child)
            sonde_children_periods_end(s->exit_known && s->exit_status == 128 + SIGTERM);
        goto done;
    }
    session_collect_unlink_live(s);
    if (s->from_run && sonde_children_merges()) {
        /* the root of followed processes: the report of all of them */
        if (sonde_children_dir() && sonde_children_finish(&prof, s->outfile) == 0) goto done;
        sonde_children_account_alone(&prof);
    }
    if (session_defer_empty(s, &prof)) goto done;
    /* The terminal decides colour and width only when the report goes to
     * stderr; a file gets the defaults. */
    sonde_report_ctx_t ctx;
    sonde_report_ctx_init(&ctx, s->outfile ? -1 : 2);
    ctx.text.cpu_percent_threshold = s->opts.cpu_percent_threshold;
    ctx.text.all_lines = s->opts.all_lines;
    ctx.viewer_dir = s->viewer_dir;
    ctx.pprof.compress = sonde_ext_gzip; /* plain protobuf off Python's threads */
    ctx.pprof.compress_arg = python_thread ? SONDE_EXT_GZIP_TAKE_GIL : NULL;
    sigset_t old;
    bool had;
    sonde_prim_xfsz_hold(&old, &had);
    rc = sonde_report_emit(s->opts.format ? s->opts.format : sonde_format_default(), &prof, &ctx,
                           s->outfile, 2, what);
    sonde_prim_xfsz_release(&old, had);
done:
    sonde_profile_free(&prof);
    return rc;
}

/* Prints a one-line error without stdio buffering surprises. */
static void session_report_error(sonde_session_t *s, const char *what, int rc)
{
    if (!s->stderr_open || session_to_collector(s)) return;
    sonde_buf_t line = SONDE_BUF_INIT;
    sonde_buf_printf(&line, "sonde: cannot %s%s%s: %s\n", what, s->outfile ? " to " : "",
                     s->outfile ? s->outfile : "", strerror(-rc));
    if (!sonde_buf_error(&line)) sonde_write_fd(2, line.data, line.len);
    sonde_buf_free(&line);
}

/* ---- periods (sonde run --period) ------------------------------------------------- */

/* What session_period_piece does, for sonde_shim_guarded. */
typedef struct session_piece {
    sonde_session_t *s;
    const char *stem;
    uint64_t period;
    int rc;
} session_piece_t;

static void session_piece_work(void *arg)
{
    session_piece_t *p = arg;
    sonde_session_t *s = p->s;
    sonde_profile_t prof;
    sonde_profile_init(&prof);
    p->rc = session_build(s, &prof, true);
    if (p->rc == 0)
        p->rc =
            sonde_handover_write(s->collect_dir, p->stem, SONDE_HANDOVER_PERIOD, p->period, &prof);
    /* emptied only once handed over: else the next period has it too */
    if (p->rc == 0) sonde_sampler_period_reset(&s->sampler);
    sonde_profile_free(&prof);
}

/* Hands what was sampled since the last period over as period `period`
 * of stem (src/handover/) and starts a new period (the counts are kept when it fails, so that the
 * next period has them). With the memory profiler counting, all of it
 * runs with the allocator shim's guard set: what it allocates and frees
 * is neither sampled nor counted in the program's footprint. Sampler
 * thread (on_period), or a Python thread with the sampler paused (before
 * an exec). Returns 0 or -errno. */
static int session_period_piece(sonde_session_t *s, const char *stem, uint64_t period)
{
    session_piece_t piece = {s, stem, period, 0};
    sonde_sources_guarded(&s->sources, session_piece_work, &piece);
    return piece.rc;
}

/* Runs on the sampler thread when the collector's period count moved to
 * count: what was sampled since the last period is handed over as period
 * count, and a new period starts. A profile that cannot be written stays
 * in the counts, for the next period; sampling goes on. */
static void session_on_period(uint64_t count)
{
    (void)session_period_piece(&session, session.collect_stem, count);
}

/* Maps the collector's period count when its directory has one (the
 * period word: the collector of `sonde run --period` made it) and hands it
 * to the sampler. Best effort: without it the process hands one profile
 * over at its end, which the collector takes as its last period. */
static void session_period_open(sonde_session_t *s)
{
    char path[PATH_MAX];
    if (!s->collect_dir ||
        sonde_handover_dir_path(path, sizeof path, s->collect_dir, SONDE_HANDOVER_PERIOD_WORD) < 0)
        return;
    /* periods whether or not it can be mapped: every profile then goes to
     * the collector (never in pprof to stderr) */
    if (access(path, F_OK) != 0) return;
    s->periods = true;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    void *map = mmap(NULL, sizeof(uint64_t), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return;
    s->period_map = map;
    s->sampler.period_word = s->period_map;
    s->sampler.period_seen = atomic_load(s->period_map);
    s->sampler.on_period = session_on_period;
}

/* ---- SIGTERM -------------------------------------------------------------------- */

/* Signal handler (async-signal-safe): SIGTERM in the profiled process asks
 * the sampler thread to write the report and then end the process the way
 * SIGTERM would have. In a forked child it just restores the default. */
static volatile sig_atomic_t session_sigterm_deferred;

/* A SIGTERM that came to a forked child before its own session started
 * (a Pool's terminate() right after the fork): raised again once it has. */
static volatile sig_atomic_t session_sigterm_in_fork;
/* The directory the child of the fork under way hands its profile over in
 * (borrowed from children.c; NULL: not followed); set before the fork, back
 * to NULL after it in both processes. */
static const char *volatile session_fork_dir;

static void session_sigterm(int sig)
{
    if (getpid() != session.pid && session_fork_dir) {
        /* a child being followed: its session starts in a moment */
        session_sigterm_in_fork = 1;
        return;
    }
    if (getpid() != session.pid || !session.active) {
        signal(sig, SIG_DFL);
        kill(getpid(), sig);
        return;
    }
    sonde_children_on_sigterm(); /* a helper the root waits for stops waiting */
    if (atomic_load(&session.stopping)) {
        session_sigterm_deferred = 1;
        return;
    }
    sonde_sampler_signal_terminate(&session.sampler);
}

/* Runs on the sampler thread after SIGTERM. */
static void session_on_terminate(void)
{
    int expected = 0;
    int crash = sonde_crash_signal(); /* a fatal signal (crash.c), else SIGTERM */
    if (atomic_compare_exchange_strong(&session.reported, &expected, 1)) {
        const char *what = "";
        /* it ends by the signal: an empty report says so */
        session.exit_known = true;
        session.exit_status = 128 + (crash ? crash : SIGTERM);
        snprintf(session.exit_exception, sizeof session.exit_exception, "%s",
                 crash ? sonde_crash_signal_name() : "SIGTERM");
        int rc = session_report(&session, false, &what);
        if (rc < 0) session_report_error(&session, what, rc);
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
static void session_on_orphaned(void)
{
    int expected = 0;
    if (atomic_compare_exchange_strong(&session.reported, &expected, 1)) {
        const char *what = "";
        int rc = session_report(&session, false, &what);
        if (rc < 0) session_report_error(&session, what, rc);
    }
    _exit(0);
}

static void session_install_sigterm(sonde_session_t *s)
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

static void session_remove_sigterm(sonde_session_t *s)
{
    struct sigaction cur;
    if (!s->sigterm_installed) return;
    s->sigterm_installed = false;
    if (sigaction(SIGTERM, NULL, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) &&
        cur.sa_handler == session_sigterm)
        sigaction(SIGTERM, &s->old_sigterm, NULL);
}

/* ---- atexit ------------------------------------------------------------------------ */

static int session_stop(bool flush_streams, bool write_report);

/* At exit (GIL held): an exception the interpreter's top level printed
 * (sys.last_exc on 3.12+, sys.last_type before) ended the program with
 * exit status 1, or by SIGINT for KeyboardInterrupt. A clean exit or
 * sys.exit(n) leaves no trace here: the exit stays unknown. */
static void session_note_exit_gil(sonde_session_t *s)
{
    PyObject *type = PySys_GetObject("last_exc"); /* borrowed; NULL without error */
    type = type && type != Py_None ? (PyObject *)Py_TYPE(type) : PySys_GetObject("last_type");
    if (!type || !PyType_Check(type)) return;
    const char *name = ((PyTypeObject *)type)->tp_name;
    const char *dot = strrchr(name, '.');
    s->exit_known = true;
    s->exit_status = PyErr_GivenExceptionMatches(type, PyExc_KeyboardInterrupt) ? 128 + SIGINT : 1;
    snprintf(s->exit_exception, sizeof s->exit_exception, "%s", dot ? dot + 1 : name);
}

static PyObject *session_atexit(PyObject *self, PyObject *unused)
{
    /* A script that never started (a syntax error) gets Python's
     * traceback alone, as under plain python. */
    bool write_report = !(session.from_run && sonde_boot_script_failed_gil());
    if (session.active && session.pid == getpid()) session_note_exit_gil(&session);
    session_exiting = true;
    if (session.active && session.pid == getpid() && session_stop(true, write_report) < 0) {
        /* the report could not be written; say so, never raise at exit */
        PyErr_Clear();
    }
    session_exiting = false;
    Py_RETURN_NONE;
}

static PyMethodDef session_atexit_def = {"_sonde_atexit", session_atexit, METH_NOARGS, NULL};

/* ---- fork ---------------------------------------------------------------------------- */

/* os.register_at_fork hooks: the program forks with no thread of ours, as
 * it would unprofiled; the child never restarts it (the session belongs to
 * the parent). */
/* Whether the fork under way was made by the thread that started the
 * session (the main one); copied into the child with the memory. A child
 * forked from another thread is not followed: that thread may end there
 * as a thread, leaving a process that plain python would have ended. */
static bool session_fork_from_start_thread;

/* Whether the fork under way makes a process to follow: os.fork() from the
 * thread that started the session, not a C-level fork before an exec. */
static bool session_fork_follows(void)
{
    return session.active && session.pid == getpid() && session_fork_from_start_thread &&
           !sonde_exec_in_fork_exec() && sonde_children_follow();
}

static PyObject *session_before_fork(PyObject *self, PyObject *unused)
{
    session_fork_from_start_thread = session.start_ident == PyThread_get_thread_ident();
    session_fork_dir = session_fork_follows() ? sonde_children_dir_ensure() : NULL;
    if (session.active && session.pid == getpid()) sonde_sources_pause_gil(&session.sources);
    Py_RETURN_NONE;
}

static void session_resume_threads(void)
{
    sonde_sources_resume_gil(&session.sources);
}

static int session_resume_pending(void *unused)
{
    if (session.active && session.pid == getpid()) session_resume_threads();
    return 0;
}

/* From 3.13 the interpreter counts threads for its fork warning after the
 * after_in_parent hooks have run, so the sampler restarts a moment later,
 * from a pending call, once os.fork() has returned. */
static PyObject *session_after_fork_parent(PyObject *self, PyObject *unused)
{
    if (session_fork_follows()) sonde_children_note_spawn(session_fork_dir != NULL);
    session_fork_dir = NULL;
    if (session.active && session.pid == getpid() &&
        Py_AddPendingCall(session_resume_pending, NULL) != 0)
        session_resume_threads();
    Py_RETURN_NONE;
}

/* In the child: when the run follows processes, it is profiled too
 * (boot.c restarts the session for it); a C-level fork that runs these
 * hooks before an exec (subprocess's preexec_fn) is left alone. */
static PyObject *session_after_fork_child(PyObject *self, PyObject *unused)
{
    if (session.active && session_fork_dir && !sonde_exec_in_fork_exec() &&
        session_fork_from_start_thread) {
        /* SIGTERM waits while the session starts (its handler is replaced) */
        sigset_t term, old;
        sigemptyset(&term);
        sigaddset(&term, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &term, &old);
        sonde_children_forked();
        if (sonde_boot_fork_child_gil() < 0) PyErr_Clear(); /* the child runs unprofiled */
        session_fork_dir = NULL;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        /* one that came before: now to the new session's handler (a report,
         * then the end by SIGTERM), or the default when it did not start */
        if (session_sigterm_in_fork) {
            session_sigterm_in_fork = 0;
            if (!session.active || session.pid != getpid()) signal(SIGTERM, SIG_DFL);
            kill(getpid(), SIGTERM);
        }
    }
    session_fork_dir = NULL;
    Py_RETURN_NONE;
}

static PyMethodDef session_before_fork_def = {"_sonde_before_fork", session_before_fork,
                                              METH_NOARGS, NULL};
static PyMethodDef session_after_fork_def = {"_sonde_after_fork_parent", session_after_fork_parent,
                                             METH_NOARGS, NULL};
static PyMethodDef session_after_child_def = {"_sonde_after_fork_child", session_after_fork_child,
                                              METH_NOARGS, NULL};
static bool session_fork_registered;

/* Registers the fork hooks once per process. Returns 0 or -1 with an
 * exception. */
static int session_register_fork(void)
{
    if (session_fork_registered) return 0;
    PyObject *os = PyImport_ImportModule("os");
    PyObject *reg = os ? PyObject_GetAttrString(os, "register_at_fork") : NULL;
    PyObject *before = PyCFunction_New(&session_before_fork_def, NULL);
    PyObject *after = PyCFunction_New(&session_after_fork_def, NULL);
    PyObject *child = PyCFunction_New(&session_after_child_def, NULL);
    PyObject *kwargs = child ? Py_BuildValue("{s:O,s:O,s:O}", "before", before, "after_in_parent",
                                             after, "after_in_child", child)
                             : NULL;
    PyObject *args = PyTuple_New(0);
    PyObject *res =
        (reg && before && after && kwargs && args) ? PyObject_Call(reg, args, kwargs) : NULL;
    Py_XDECREF(res);
    Py_XDECREF(args);
    Py_XDECREF(kwargs);
    Py_XDECREF(after);
    Py_XDECREF(child);
    Py_XDECREF(before);
    Py_XDECREF(reg);
    Py_XDECREF(os);
    if (!res) return -1;
    session_fork_registered = true;
    return 0;
}

static int session_register_atexit(void)
{
    if (session_atexit_registered) return 0;
    PyObject *atexit = PyImport_ImportModule("atexit");
    if (!atexit) return -1;
    PyObject *func = PyCFunction_New(&session_atexit_def, NULL);
    PyObject *res = func ? PyObject_CallMethod(atexit, "register", "O", func) : NULL;
    Py_XDECREF(res);
    Py_XDECREF(func);
    Py_DECREF(atexit);
    if (!res) return -1;
    session_atexit_registered = true;
    return 0;
}

/* ---- os._exit ---------------------------------------------------------------------- */

/* os._exit() ends the process without atexit handlers; the program's own
 * buffered output is lost as it would be unprofiled, but the profile of
 * what ran is not: exec.c's wrapper of os._exit calls this first. In the
 * session's process it notes the exit status and writes the report
 * (without flushing the program's streams); elsewhere (a forked child)
 * nothing. */
void sonde_session_before_os_exit_gil(PyObject *status)
{
    if (!session.active || session.pid != getpid()) return;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (status && PyLong_Check(status)) {
        long code = PyLong_AsLong(status);
        if (!(code == -1 && PyErr_Occurred())) {
            session.exit_known = true;
            session.exit_status = (int)(code & 0xff);
            session.exit_exception[0] = 0;
        }
    }
    PyErr_Clear();
    if (session_stop(false, true) < 0) PyErr_Clear();
    PyErr_Restore(type, value, tb);
}

/* ---- os.exec* ------------------------------------------------------------------------ */

void sonde_session_before_exec_gil(void)
{
    sonde_session_t *s = &session;
    if (!s->active || s->pid != getpid() || s->exec_paused || atomic_load(&s->reported)) return;
    /* The program's buffered output is lost by the exec, as unprofiled;
     * the report is not. The threads stay paused across the exec. */
    sonde_sources_pause_gil(&s->sources);
    s->exec_paused = true;
    const char *what = "";
    PyThreadState *save = PyEval_SaveThread();
    int rc = 0;
    if (s->periods) {
        /* With periods, what was sampled so far goes in as a piece of the
         * period under way (under a stem of its own: this process may
         * write that period's file too if the exec fails), and its live
         * marker goes: the new image is a process of its own for the
         * collector, and this one comes back only if the exec fails. */
        char stem[SONDE_HANDOVER_STEM_MAX];
        rc = sonde_handover_exec_stem(stem, sizeof stem, s->collect_stem, ++s->exec_pieces);
        if (rc == 0) rc = session_period_piece(s, stem, s->sampler.period_seen);
        session_collect_unlink_live(s);
        what = "hand the profile over";
    } else {
        rc = session_report(s, true, &what);
    }
    PyEval_RestoreThread(save);
    if (rc < 0) session_report_error(s, what, rc);
}

void sonde_session_after_exec_gil(void)
{
    sonde_session_t *s = &session;
    if (!s->exec_paused) return;
    s->exec_paused = false;
    if (s->active && s->pid == getpid() && s->periods)
        session_collect_live(s); /* the exec failed */
    if (s->active && s->pid == getpid()) session_resume_threads();
}

/* ---- start / stop ---------------------------------------------------------------- */

static void session_clear(sonde_session_t *s)
{
    sonde_spans_clear_gil();
    if (s->exec_wrapped) sonde_exec_unwrap_gil();
    s->exec_wrapped = false;
    sonde_sources_release_gil(&s->sources);
    sonde_filter_free(&s->filter);
    sonde_cells_free(&s->cells);
    free(s->outfile);
    free(s->program);
    free(s->cwd);
    free(s->viewer_dir);
    free(s->collect_dir);
    s->collect_dir = NULL;
    s->collect_stem[0] = 0;
    if (s->period_map) munmap((void *)s->period_map, sizeof(uint64_t));
    s->period_map = NULL;
    s->periods = false;
    s->child = false;
    s->cwd = s->viewer_dir = NULL;
    for (int i = 0; i < s->argc; i++)
        free(s->argv[i]);
    free(s->argv);
    s->outfile = s->program = NULL;
    s->argv = NULL;
    s->argc = 0;
    s->active = false;
}

/* Copies sys.argv into the session (best effort; every argument, of any
 * length). */
static void session_copy_argv(sonde_session_t *s)
{
    PyObject *argv = PySys_GetObject("argv"); /* borrowed */
    if (!argv || !PyList_Check(argv)) return;
    Py_ssize_t n = PyList_GET_SIZE(argv);
    s->argv = calloc((size_t)n + 1, sizeof *s->argv);
    if (!s->argv) return;
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *text = PyUnicode_Check(PyList_GET_ITEM(argv, i))
                               ? PyUnicode_AsUTF8(PyList_GET_ITEM(argv, i))
                               : NULL;
        if (!text) {
            PyErr_Clear();
            text = "";
        }
        s->argv[i] = strdup(text);
        if (!s->argv[i]) break;
        s->argc = (int)i + 1;
    }
}

int sonde_session_start_gil(const sonde_run_opts_t *opts, bool from_run, const char *program)
{
    sonde_session_t *s = &session;
    int rc;
    if (s->active) {
        PyErr_SetString(PyExc_RuntimeError, "sonde: a profiling session is already running");
        return -EBUSY;
    }
    /* The copy keeps numbers, flags and the format; the caller's strings
     * are used during start only (the filter copies the patterns). */
    s->opts = *opts;
    memset(s->opts.profile_only, 0, sizeof s->opts.profile_only);
    memset(s->opts.profile_exclude, 0, sizeof s->opts.profile_exclude);
    s->opts.n_profile_only = s->opts.n_profile_exclude = 0;
    s->opts.outfile = s->opts.script = s->opts.module = NULL;
    s->opts.prog_argv = NULL;
    s->opts.owned = NULL;
    if (!s->opts.format) s->opts.format = sonde_format_default();
    s->from_run = from_run;
    s->pid = getpid();
    s->stderr_open = sonde_prim_fd_is_open(STDERR_FILENO);
    atomic_store(&s->reported, 0);
    atomic_store(&s->stopping, false);
    session_sigterm_deferred = 0;
    s->exit_known = false;
    s->start_ident = PyThread_get_thread_ident();
    if (session_next_collect && !(s->collect_dir = strdup(session_next_collect))) goto nomem;
    s->child = session_next_child && s->collect_dir;
    if (s->collect_dir) session_collect_begin(s);
    session_copy_argv(s);
    if (!program && s->argc > 0) program = s->argv[0];
    if (!(s->program = strdup(program ? program : ""))) goto nomem;
    snprintf(s->python_version, sizeof s->python_version, "%s", Py_GetVersion());
    char *space = strchr(s->python_version, ' ');
    if (space) *space = 0;
    s->cwd = getcwd(NULL, 0);
    if (!s->cwd && !(s->cwd = strdup(""))) goto nomem;
    if (opts->outfile) {
        /* The program may chdir before the report is written: a relative
         * name is joined to the current directory, unless that would pass
         * the system's path limit (then it stays relative). */
        bool relative = opts->outfile[0] != '/' && s->cwd[0] &&
                        strlen(s->cwd) + 1 + strlen(opts->outfile) < PATH_MAX;
        size_t len = strlen(opts->outfile) + (relative ? strlen(s->cwd) + 1 : 0) + 1;
        if (!(s->outfile = malloc(len))) goto nomem;
        snprintf(s->outfile, len, "%s%s%s", relative ? s->cwd : "", relative ? "/" : "",
                 opts->outfile);
        s->opts.outfile = s->outfile;
    }
    size_t viewer_len = strlen(sonde_ext_pkg_dir) + sizeof "/viewer";
    if (!(s->viewer_dir = malloc(viewer_len))) goto nomem;
    snprintf(s->viewer_dir, viewer_len, "%s/viewer", sonde_ext_pkg_dir);

    if ((rc = sonde_filter_init_gil(&s->filter, opts, sonde_ext_pkg_dir, s->program)) < 0)
        goto nomem;
    memset(&s->sampler, 0, sizeof s->sampler);
    s->sampler.interval_ns = (sonde_ns_t)(opts->interval_sec * 1e9);
    s->sampler.virtual_time = opts->virtual_time;
    s->sampler.record_stacks = opts->stacks;
    s->sampler.prior_threads_out = opts->prior_threads_out;
    s->sampler.filter = &s->filter;
    s->sampler.on_terminate = session_on_terminate;
    session_period_open(s);
    if (session_register_atexit() < 0 || session_register_fork() < 0 || sonde_exec_wrap_gil() < 0) {
        session_collect_unlink_live(s);
        session_clear(s);
        return -1;
    }
    s->exec_wrapped = true;
    if ((rc = sonde_sources_start_gil(&s->sources, &s->sampler, opts, &s->filter)) < 0) {
        /* the failing source's exception survives the clearing */
        PyObject *type = NULL, *value = NULL, *tb = NULL;
        PyErr_Fetch(&type, &value, &tb);
        session_collect_unlink_live(s);
        session_clear(s);
        PyErr_Restore(type, value, tb);
        return rc;
    }
    s->active = true;
    session_install_sigterm(s);
    if (from_run) sonde_crash_install(&s->sampler);
    /* said once a SIGTERM gets a report: a process killed before has no
     * profile to lose (none of the program's code ran in it yet) */
    if (s->collect_dir) session_collect_live(s);
    return 0;
nomem:
    session_collect_unlink_live(s);
    session_clear(s);
    PyErr_NoMemory();
    return -ENOMEM;
}

int sonde_session_restart_in_child_gil(const sonde_run_opts_t *opts, const char *dir)
{
    sonde_session_t *s = &session;
    if (!s->active || !s->from_run) return 0;
    char *program = strdup(s->program ? s->program : "");
    if (!program) {
        PyErr_NoMemory();
        return -ENOMEM;
    }
    /* The parent's session: its threads were stopped for the fork; its
     * figures are the parent's to report. */
    s->pid = getpid();
    session_remove_sigterm(s);
    sonde_crash_remove();
    sonde_sources_halt(&s->sources);
    session_clear(s);
    sonde_session_set_collector(dir, true, 0);
    int rc = sonde_session_start_gil(opts, true, program);
    free(program);
    /* the forking thread may end as a thread (os.fork() in a thread other
     * than the main one): the process must not live on for the sampler */
    if (rc == 0) s->sampler.on_orphaned = session_on_orphaned;
    return rc;
}

/* Flushes sys.stdout and sys.stderr so the report follows the program's
 * own output. */
static void session_flush_python_streams(void)
{
    const char *names[] = {"stdout", "stderr"};
    for (size_t i = 0; i < SONDE_ARRAY_LEN(names); i++) {
        PyObject *stream = PySys_GetObject(names[i]); /* borrowed */
        if (!stream || stream == Py_None) continue;
        PyObject *res = PyObject_CallMethod(stream, "flush", NULL);
        if (!res) PyErr_Clear();
        Py_XDECREF(res);
    }
}

int sonde_session_stop_gil(void)
{
    return session_stop(true, true);
}

/* Stops the session and, if write_report, writes the report;
 * flush_streams: flush sys.stdout and sys.stderr first (not for
 * os._exit). */
static int session_stop(bool flush_streams, bool write_report)
{
    sonde_session_t *s = &session;
    if (!s->active) return 0;
    if (s->pid != getpid()) {
        /* A forked child: the sampler and its tables belong to the parent
         * (its thread does not exist here); the child has nothing to stop
         * or report. */
        s->active = false;
        return 0;
    }
    /* The SIGTERM handler stays until the report is written: a SIGTERM
     * meanwhile (a Pool's terminate() as its worker ends) would otherwise
     * kill the process halfway through it */
    atomic_store(&s->stopping, true);
    sonde_crash_remove(); /* from here, a crash ends the process as it would */
    sonde_sources_halt(&s->sources);
    int rc = 0;
    int expected = 0;
    if (write_report && atomic_compare_exchange_strong(&s->reported, &expected, 1)) {
        const char *what = "";
        if (flush_streams) session_flush_python_streams();
        /* without the cells' text the report still names their lines */
        if (sonde_cells_collect_gil(&s->cells, &s->filter) < 0) sonde_cells_free(&s->cells);
        Py_BEGIN_ALLOW_THREADS rc = session_report(s, true, &what);
        Py_END_ALLOW_THREADS if (rc < 0)
        {
            if (s->from_run)
                session_report_error(s, what, rc);
            else
                PyErr_Format(PyExc_OSError, "sonde: cannot %s%s%s: %s", what,
                             s->outfile ? " to " : "", s->outfile ? s->outfile : "", strerror(-rc));
        }
    }
    session_remove_sigterm(s);
    atomic_store(&s->stopping, false);
    session_clear(s);
    if (session_sigterm_deferred) {
        session_sigterm_deferred = 0;
        kill(getpid(), SIGTERM); /* now with the program's own disposition */
    }
    return (rc < 0 && !PyErr_Occurred()) ? 0 : rc;
}
