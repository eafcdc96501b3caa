/* session_hooks.c — the interpreter's hooks into the session.
 *
 * Owns: the atexit hook (the report at the program's end, with how it
 * ended), the os.register_at_fork hooks (the program forks with no thread
 * of ours; a followed child starts its own session), and what happens
 * before os._exit and around os.exec* (exec.c wraps those functions). All
 * with the GIL.
 */
#include "session_internal.h"

/* ---- atexit ------------------------------------------------------------------------ */

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
    bool write_report = !(sonde__session.from_run && sonde_boot_script_failed_gil());
    if (sonde__session.active && sonde__session.pid == getpid())
        session_note_exit_gil(&sonde__session);
    sonde__session_exiting = true;
    if (sonde__session.active && sonde__session.pid == getpid() &&
        sonde__session_stop(true, write_report) < 0) {
        /* the report could not be written; say so, never raise at exit */
        PyErr_Clear();
    }
    sonde__session_exiting = false;
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
    return sonde__session.active && sonde__session.pid == getpid() &&
           session_fork_from_start_thread && !sonde_exec_in_fork_exec() && sonde_children_follow();
}

static PyObject *session_before_fork(PyObject *self, PyObject *unused)
{
    session_fork_from_start_thread = sonde__session.start_ident == PyThread_get_thread_ident();
    sonde__session_fork_dir = session_fork_follows() ? sonde_children_dir_ensure() : NULL;
    if (sonde__session.active && sonde__session.pid == getpid())
        sonde_sources_pause_gil(&sonde__session.sources);
    Py_RETURN_NONE;
}

static void session_resume_threads(void)
{
    sonde_sources_resume_gil(&sonde__session.sources);
}

static int session_resume_pending(void *unused)
{
    if (sonde__session.active && sonde__session.pid == getpid()) session_resume_threads();
    return 0;
}

/* From 3.13 the interpreter counts threads for its fork warning after the
 * after_in_parent hooks have run, so the sampler restarts a moment later,
 * from a pending call, once os.fork() has returned. */
static PyObject *session_after_fork_parent(PyObject *self, PyObject *unused)
{
    if (session_fork_follows()) sonde_children_note_spawn(sonde__session_fork_dir != NULL);
    sonde__session_fork_dir = NULL;
    if (sonde__session.active && sonde__session.pid == getpid() &&
        Py_AddPendingCall(session_resume_pending, NULL) != 0)
        session_resume_threads();
    Py_RETURN_NONE;
}

/* In the child: when the run follows processes, it is profiled too
 * (boot.c restarts the session for it); a C-level fork that runs these
 * hooks before an exec (subprocess's preexec_fn) is left alone. */
static PyObject *session_after_fork_child(PyObject *self, PyObject *unused)
{
    if (sonde__session.active && sonde__session_fork_dir && !sonde_exec_in_fork_exec() &&
        session_fork_from_start_thread) {
        /* SIGTERM waits while the session starts (its handler is replaced) */
        sigset_t term, old;
        sigemptyset(&term);
        sigaddset(&term, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &term, &old);
        sonde_children_forked();
        if (sonde_boot_fork_child_gil() < 0) PyErr_Clear(); /* the child runs unprofiled */
        sonde__session_fork_dir = NULL;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        /* one that came before: now to the new session's handler (a report,
         * then the end by SIGTERM), or the default when it did not start */
        if (sonde__session_sigterm_in_fork) {
            sonde__session_sigterm_in_fork = 0;
            if (!sonde__session.active || sonde__session.pid != getpid()) signal(SIGTERM, SIG_DFL);
            kill(getpid(), SIGTERM);
        }
    }
    sonde__session_fork_dir = NULL;
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
int sonde__session_register_fork(void)
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

int sonde__session_register_atexit(void)
{
    if (sonde__session_atexit_registered) return 0;
    PyObject *atexit = PyImport_ImportModule("atexit");
    if (!atexit) return -1;
    PyObject *func = PyCFunction_New(&session_atexit_def, NULL);
    PyObject *res = func ? PyObject_CallMethod(atexit, "register", "O", func) : NULL;
    Py_XDECREF(res);
    Py_XDECREF(func);
    Py_DECREF(atexit);
    if (!res) return -1;
    sonde__session_atexit_registered = true;
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
    if (!sonde__session.active || sonde__session.pid != getpid()) return;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (status && PyLong_Check(status)) {
        long code = PyLong_AsLong(status);
        if (!(code == -1 && PyErr_Occurred())) {
            sonde__session.exit_known = true;
            sonde__session.exit_status = (int)(code & 0xff);
            sonde__session.exit_exception[0] = 0;
        }
    }
    PyErr_Clear();
    if (sonde__session_stop(false, true) < 0) PyErr_Clear();
    PyErr_Restore(type, value, tb);
}

/* ---- os.exec* ------------------------------------------------------------------------ */

void sonde_session_before_exec_gil(void)
{
    sonde_session_t *s = &sonde__session;
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
        if (rc == 0) rc = sonde__session_period_piece(s, stem, s->sampler.period_seen);
        sonde__session_collect_unlink_live(s);
        what = "hand the profile over";
    } else {
        rc = sonde__session_report(s, true, &what);
    }
    PyEval_RestoreThread(save);
    if (rc < 0) sonde__session_report_error(s, what, rc);
}

void sonde_session_after_exec_gil(void)
{
    sonde_session_t *s = &sonde__session;
    if (!s->exec_paused) return;
    s->exec_paused = false;
    if (s->active && s->pid == getpid() && s->periods)
        sonde__session_collect_live(s); /* the exec failed */
    if (s->active && s->pid == getpid()) session_resume_threads();
}
