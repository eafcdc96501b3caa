/* session_report.c — the session's report, and its hand-over to a collector.
 *
 * Owns: building the profile from the sampling sources (the run's, or one
 * period's), writing it in the format its options chose from the format
 * registry (src/report/format.c), with the text of IPython cells it
 * profiled (cells.c); an empty terminal report at exit (one line printed by
 * a C exit handler, which knows the exit status); the hand-over of a
 * followed child's profile and, with `sonde run --period`, of each
 * period's, on the sampler thread (src/handover/). No Python API: the
 * report may be written on the sampler thread after SIGTERM.
 */
#include "session_internal.h"

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
bool sonde__session_exiting; /* sonde__session_stop is called by the atexit hook */

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
    if (!sonde__session_exiting || s->outfile || prof->total_ns != 0 || s->exit_known) return false;
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

/* At start: the process's marker in the collector's directory says that
 * it is profiled; without its profile beside it at the end, the collector
 * counts the process as lost. Best effort. */
void sonde__session_collect_live(sonde_session_t *s)
{
    /* multiprocessing's forkserver and resource tracker end after the root:
     * SERVICE says not to wait for them */
    bool service = sonde_children_role() == SONDE_CHILDREN_SERVICE;
    (void)sonde_handover_mark(s->collect_dir, s->collect_stem,
                              service ? SONDE_HANDOVER_SERVICE : SONDE_HANDOVER_LIVE, 0);
}

void sonde__session_collect_begin(sonde_session_t *s)
{
    if (sonde_handover_stem(s->collect_stem, sizeof s->collect_stem, (int)getpid(),
                            sonde_prim_monotonic_ns(), sonde__session_next_gen) < 0)
        s->collect_stem[0] = 0;
}

/* A process that writes its own report is no business of the collector's. */
void sonde__session_collect_unlink_live(sonde_session_t *s)
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
int sonde__session_report(sonde_session_t *s, bool python_thread, const char **what)
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
    sonde__session_collect_unlink_live(s);
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
void sonde__session_report_error(sonde_session_t *s, const char *what, int rc)
{
    if (!s->stderr_open || session_to_collector(s)) return;
    sonde_buf_t line = SONDE_BUF_INIT;
    sonde_buf_printf(&line, "sonde: cannot %s%s%s: %s\n", what, s->outfile ? " to " : "",
                     s->outfile ? s->outfile : "", strerror(-rc));
    if (!sonde_buf_error(&line)) sonde_write_fd(2, line.data, line.len);
    sonde_buf_free(&line);
}

/* ---- periods (sonde run --period) ------------------------------------------------- */

/* What sonde__session_period_piece does, for sonde_shim_guarded. */
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
int sonde__session_period_piece(sonde_session_t *s, const char *stem, uint64_t period)
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
    (void)sonde__session_period_piece(&sonde__session, sonde__session.collect_stem, count);
}

/* Maps the collector's period count when its directory has one (the
 * period word: the collector of `sonde run --period` made it) and hands it
 * to the sampler. Best effort: without it the process hands one profile
 * over at its end, which the collector takes as its last period. */
void sonde__session_period_open(sonde_session_t *s)
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
