/* session.c — one profiling session: its start and its stop.
 *
 * Owns: the process's single session (sonde run, or sonde.start()/stop()):
 * copying its options and the program's description, starting the filter
 * and the sampling sources (sources.c), the collector's settings for the
 * next start (a followed child, periods), and the stop that writes the
 * report (session_report.c). The other concerns of the session are in
 * session_report.c, session_signals.c and session_hooks.c
 * (session_internal.h). Called with the GIL from module.c and boot.c.
 */
#include "session_internal.h"

sonde_session_t sonde__session;
bool sonde__session_atexit_registered;
/* sonde_session_set_collector's settings, for the next start */
static char *session_next_collect;
static bool session_next_child;
static bool session_next_injected;
static pid_t session_next_watch;
int sonde__session_next_gen;

const char *sonde_session_outfile(void)
{
    return sonde__session.active && sonde__session.pid == getpid() ? sonde__session.outfile : NULL;
}

bool sonde_session_from_run(void)
{
    return sonde__session.active && sonde__session.from_run;
}

sonde_sampler_t *sonde_session_sampler_gil(const char **cwd)
{
    if (!sonde__session.active || sonde__session.pid != getpid() ||
        atomic_load(&sonde__session.reported))
        return NULL;
    if (cwd) *cwd = sonde__session.cwd;
    return &sonde__session.sampler;
}

/* ---- following processes ------------------------------------------------------ */

void sonde_session_set_collector(const char *dir, bool child, int gen)
{
    free(session_next_collect);
    session_next_collect = dir && *dir ? strdup(dir) : NULL;
    session_next_child = child && session_next_collect;
    sonde__session_next_gen = gen;
}

bool sonde_session_injected_into(const char *dir)
{
    const sonde_session_t *s = &sonde__session;
    return s->active && s->injected && s->pid == getpid() && s->collect_dir &&
           strcmp(s->collect_dir, dir) == 0;
}

void sonde_session_set_injected(pid_t watch_pid)
{
    session_next_injected = true;
    session_next_watch = watch_pid;
}

void sonde_session_drop_abandoned_gil(void)
{
    sonde_session_t *s = &sonde__session;
    if (s->active && s->injected && s->pid == getpid() && atomic_load(&s->sampler.abandoned))
        (void)sonde__session_stop(false, false);
}

void sonde_session_note_spawn(void)
{
    sonde_children_note_spawn(true);
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
    s->injected = false;
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
    sonde_session_t *s = &sonde__session;
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
    sonde__session_sigterm_deferred = 0;
    s->exit_known = false;
    s->start_ident = PyThread_get_thread_ident();
    if (session_next_collect && !(s->collect_dir = strdup(session_next_collect))) goto nomem;
    s->child = session_next_child && s->collect_dir;
    s->injected = session_next_injected && s->child;
    session_next_injected = false;
    if (s->collect_dir) sonde__session_collect_begin(s);
    session_copy_argv(s);
    if (program && !from_run && !s->injected) {
        /* sonde.start(program=...): the header names that alone (a
         * notebook cell), not the process's command line */
        for (int i = 0; i < s->argc; i++)
            free(s->argv[i]);
        s->argc = 0;
    }
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
    s->sampler.on_terminate = sonde__session_on_terminate;
    if (s->injected) {
        s->sampler.watch_pid = session_next_watch;
        s->sampler.on_abandoned = sonde__session_on_abandoned;
    }
    session_next_watch = 0;
    sonde__session_period_open(s);
    if (sonde__session_register_atexit() < 0 || sonde__session_register_fork() < 0 ||
        (!s->injected && sonde_exec_wrap_gil() < 0)) {
        sonde__session_collect_unlink_live(s);
        session_clear(s);
        return -1;
    }
    s->exec_wrapped = !s->injected;
    if ((rc = sonde_sources_start_gil(&s->sources, &s->sampler, opts, &s->filter)) < 0) {
        /* the failing source's exception survives the clearing */
        PyObject *type = NULL, *value = NULL, *tb = NULL;
        PyErr_Fetch(&type, &value, &tb);
        sonde__session_collect_unlink_live(s);
        session_clear(s);
        PyErr_Restore(type, value, tb);
        return rc;
    }
    s->active = true;
    if (!s->injected) sonde__session_install_sigterm(s);
    if (from_run) sonde_crash_install(&s->sampler);
    /* said once a SIGTERM gets a report: a process killed before has no
     * profile to lose (none of the program's code ran in it yet) */
    if (s->collect_dir) sonde__session_collect_live(s);
    return 0;
nomem:
    sonde__session_collect_unlink_live(s);
    session_clear(s);
    PyErr_NoMemory();
    return -ENOMEM;
}

int sonde_session_restart_in_child_gil(const sonde_run_opts_t *opts, const char *dir)
{
    sonde_session_t *s = &sonde__session;
    if (!s->active || !s->from_run) return 0;
    char *program = strdup(s->program ? s->program : "");
    if (!program) {
        PyErr_NoMemory();
        return -ENOMEM;
    }
    /* The parent's session: its threads were stopped for the fork; its
     * figures are the parent's to report. */
    s->pid = getpid();
    sonde__session_remove_sigterm(s);
    sonde_crash_remove();
    sonde_sources_halt(&s->sources);
    session_clear(s);
    sonde_session_set_collector(dir, true, 0);
    int rc = sonde_session_start_gil(opts, true, program);
    free(program);
    /* the forking thread may end as a thread (os.fork() in a thread other
     * than the main one): the process must not live on for the sampler */
    if (rc == 0) s->sampler.on_orphaned = sonde__session_on_orphaned;
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
    return sonde__session_stop(true, true);
}

/* Stops the session and, if write_report, writes the report;
 * flush_streams: flush sys.stdout and sys.stderr first (not for
 * os._exit). */
int sonde__session_stop(bool flush_streams, bool write_report)
{
    sonde_session_t *s = &sonde__session;
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
        Py_BEGIN_ALLOW_THREADS rc = sonde__session_report(s, true, &what);
        Py_END_ALLOW_THREADS if (rc < 0)
        {
            if (s->from_run)
                sonde__session_report_error(s, what, rc);
            else
                PyErr_Format(PyExc_OSError, "sonde: cannot %s%s%s: %s", what,
                             s->outfile ? " to " : "", s->outfile ? s->outfile : "", strerror(-rc));
        }
    }
    sonde__session_remove_sigterm(s);
    atomic_store(&s->stopping, false);
    session_clear(s);
    if (sonde__session_sigterm_deferred) {
        sonde__session_sigterm_deferred = 0;
        kill(getpid(), SIGTERM); /* now with the program's own disposition */
    }
    return (rc < 0 && !PyErr_Occurred()) ? 0 : rc;
}
