/* terminate.c — `sonde trace` writes its statistics when SIGTERM ends the
 * program, which then dies by SIGTERM as it would unprofiled.
 *
 * Owns: the SIGTERM handler of the boot profile (installed only over the
 * default disposition, with sigaction: Python's signal module never sees
 * it, so signal.getsignal() still says SIG_DFL, and a handler the program
 * installs replaces it) and the thread that does the work. The handler
 * (term_on_signal: async-signal-safe, an atomic store and a futex wake; in
 * a forked child it only restores the default and raises again) wakes the
 * thread, which blocks every signal, takes the GIL, has boot.c write the
 * statistics as at exit, and ends the process with SIGTERM's default
 * action. Around os.fork() the thread is joined and started again in the
 * parent once fork() has returned (CPython 3.12+ warns when a
 * multi-threaded process forks, counting the kernel's threads). Called
 * with the GIL from boot.c; the thread takes it itself.
 */
#include "trace_internal.h"

#include "../prim/prim.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#define TERM_IDLE_WAIT_NS (3600 * SONDE_NS_PER_SEC) /* the thread sleeps until woken */

static struct {
    void (*write)(void); /* boot.c's writer, called with the GIL */
    pid_t pid;           /* process whose statistics these are */
    bool installed;      /* our handler is in place */
    struct sigaction old;
    bool thread_started; /* GIL */
    bool paused;         /* joined for a fork; GIL */
    pthread_t thread;
    _Atomic pid_t tid;
    atomic_bool stop_requested;
    atomic_bool term_requested;
    sonde_prim_wake_t wake;
    bool fork_registered;
} term;

/* ---- signal handler (async-signal-safe) ----------------------------------------------- */

static void term_on_signal(int sig)
{
    int saved = errno;
    if (getpid() != term.pid) { /* a forked child: not ours */
        signal(sig, SIG_DFL);
        kill(getpid(), sig);
        errno = saved;
        return;
    }
    atomic_store_explicit(&term.term_requested, true, memory_order_release);
    sonde_prim_wake_signal(&term.wake);
    errno = saved;
}

/* Ends the process as SIGTERM would have. */
static void term_die(void)
{
    signal(SIGTERM, SIG_DFL);
    kill(getpid(), SIGTERM);
    sigset_t term_set;
    sigemptyset(&term_set);
    sigaddset(&term_set, SIGTERM);
    pthread_sigmask(SIG_UNBLOCK, &term_set, NULL);
    for (;;)
        pause();
}

/* ---- the thread ------------------------------------------------------------------------ */

static void *term_main(void *unused)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    atomic_store(&term.tid, sonde_prim_gettid());
    while (!atomic_load_explicit(&term.stop_requested, memory_order_acquire)) {
        if (atomic_load_explicit(&term.term_requested, memory_order_acquire)) {
            PyGILState_Ensure(); /* kept: the process ends holding it */
            term.write();
            term_die();
        }
        sonde_prim_wake_wait(&term.wake, TERM_IDLE_WAIT_NS);
    }
    return NULL;
}

static int term_thread_start(void)
{
    atomic_store(&term.stop_requested, false);
    if (pthread_create(&term.thread, NULL, term_main, NULL) != 0) return -1;
    term.thread_started = true;
    return 0;
}

/* Joins the thread, with the GIL released (the thread may be waiting for
 * it to write the statistics, and then ends the process). */
static void term_thread_join_gil(void)
{
    if (!term.thread_started) return;
    atomic_store_explicit(&term.stop_requested, true, memory_order_release);
    sonde_prim_wake_signal(&term.wake);
    PyThreadState *save = PyEval_SaveThread();
    pthread_join(term.thread, NULL);
    PyEval_RestoreThread(save);
    term.thread_started = false;
}

/* ---- fork ------------------------------------------------------------------------------ */

static PyObject *term_before_fork(PyObject *self, PyObject *unused)
{
    if (term.thread_started && term.pid == getpid()) {
        term_thread_join_gil();
        sonde_prim_forget_joined_thread(atomic_load(&term.tid), NULL);
        term.paused = true;
    }
    Py_RETURN_NONE;
}

static int term_resume(void *unused)
{
    if (term.paused && term.pid == getpid()) {
        term.paused = false;
        if (term_thread_start() < 0) { /* no thread: SIGTERM kills at once, as unprofiled */
            if (term.installed) sigaction(SIGTERM, &term.old, NULL);
            term.installed = false;
        }
    }
    return 0;
}

/* 3.13 counts threads after the after_in_parent hooks: start the thread
 * again from a pending call, once os.fork() has returned. */
static PyObject *term_after_fork_parent(PyObject *self, PyObject *unused)
{
    if (term.paused && term.pid == getpid() && Py_AddPendingCall(term_resume, NULL) != 0)
        term_resume(NULL);
    Py_RETURN_NONE;
}

static PyMethodDef term_before_fork_def = {"_sonde_trace_before_fork", term_before_fork,
                                           METH_NOARGS, NULL};
static PyMethodDef term_after_fork_def = {"_sonde_trace_after_fork_parent", term_after_fork_parent,
                                          METH_NOARGS, NULL};

static int term_register_fork(void)
{
    if (term.fork_registered) return 0;
    PyObject *os = PyImport_ImportModule("os");
    PyObject *reg = os ? PyObject_GetAttrString(os, "register_at_fork") : NULL;
    PyObject *before = PyCFunction_New(&term_before_fork_def, NULL);
    PyObject *after = PyCFunction_New(&term_after_fork_def, NULL);
    PyObject *kwargs = Py_BuildValue("{s:O,s:O}", "before", before, "after_in_parent", after);
    PyObject *args = PyTuple_New(0);
    PyObject *res =
        (reg && before && after && kwargs && args) ? PyObject_Call(reg, args, kwargs) : NULL;
    Py_XDECREF(res);
    Py_XDECREF(args);
    Py_XDECREF(kwargs);
    Py_XDECREF(after);
    Py_XDECREF(before);
    Py_XDECREF(reg);
    Py_XDECREF(os);
    if (!res) return -1;
    term.fork_registered = true;
    return 0;
}

/* ---- public ---------------------------------------------------------------------------- */

int sonde_trace_term_start_gil(void (*write)(void))
{
    struct sigaction old, act;
    if (sigaction(SIGTERM, NULL, &old) != 0) return 0;
    if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) return 0; /* the program's */
    term.write = write;
    term.pid = getpid();
    atomic_store(&term.term_requested, false);
    if (term_register_fork() < 0) return -1;
    if (term_thread_start() < 0) {
        PyErr_SetString(PyExc_RuntimeError, "sonde: cannot start the SIGTERM thread");
        return -1;
    }
    memset(&act, 0, sizeof act);
    act.sa_handler = term_on_signal;
    act.sa_flags = SA_RESTART;
    sigemptyset(&act.sa_mask);
    if (sigaction(SIGTERM, &act, NULL) == 0) {
        term.installed = true;
        term.old = old;
    }
    return 0;
}

void sonde_trace_term_stop_gil(void)
{
    if (term.pid != getpid()) return;
    term_thread_join_gil();
    term.paused = false;
}

void sonde_trace_term_finish_gil(void)
{
    if (term.pid != getpid() || !term.installed) return;
    struct sigaction cur;
    term.installed = false;
    if (sigaction(SIGTERM, NULL, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) &&
        cur.sa_handler == term_on_signal)
        sigaction(SIGTERM, &term.old, NULL);
    if (atomic_load_explicit(&term.term_requested, memory_order_acquire)) term_die();
}
