/* setprofile.c — events from the C profile function (Python 3.8 to 3.11).
 *
 * Owns: setprofile_hook, the Py_tracefunc that receives call/return and
 * c_call/c_return/c_exception events, and its installation on every
 * thread: the calling thread, the threads that already run (3.9+: through
 * _PyEval_SetProfile(tstate, ...), the function PyEval_SetProfileAllThreads
 * of 3.12 is built on; 3.8: the same fields set directly), and threads
 * started later through threading.setprofile, whose hook (a C function)
 * replaces itself with setprofile_hook on the new thread's first event.
 * threading is not imported for this: while it is not, the slow path of
 * new entries checks for it (sonde_trace_hooks_threading_gil).
 * setprofile_hook runs inside the interpreter's profiling hook with the
 * GIL held: it never raises and returns 0.
 */
#include "trace_internal.h"

#if !SONDE_TRACE_MONITORING

#include <frameobject.h>

#if PY_VERSION_HEX >= 0x030B0000
/* The start of 3.11's PyFrameObject and _PyInterpreterFrame (internal
 * headers, Include/internal/pycore_frame.h; fixed within 3.11): reading
 * f_code directly saves PyFrame_GetCode's call and reference counting on
 * every event. */
typedef struct {
    PyObject_HEAD
    void *f_back;
    struct {
        void *f_func, *f_globals, *f_builtins, *f_locals;
        PyCodeObject *f_code;
    } * f_frame;
} setprofile_frame_t;
#endif

static inline __attribute__((always_inline)) PyObject *setprofile_code(PyFrameObject *frame)
{
#if PY_VERSION_HEX >= 0x030B0000
    return (PyObject *)((setprofile_frame_t *)frame)->f_frame->f_code;
#else
    return (PyObject *)frame->f_code;
#endif
}

static int setprofile_hook(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    sonde_trace_prof_t *p = (sonde_trace_prof_t *)obj;
    switch (what) {
    case PyTrace_CALL:
        sonde_trace_on_start(p, setprofile_code(frame));
        break;
    case PyTrace_RETURN:
        sonde_trace_on_return(p, setprofile_code(frame));
        break;
    case PyTrace_C_CALL:
        if (p->builtins && PyCFunction_Check(arg)) {
            PyCFunctionObject *fn = (PyCFunctionObject *)arg;
            sonde_trace_on_c_call(p, fn->m_ml, fn->m_self, fn->m_module);
        }
        break;
    case PyTrace_C_RETURN:
    case PyTrace_C_EXCEPTION:
        if (p->builtins && PyCFunction_Check(arg))
            sonde_trace_on_c_return(p, ((PyCFunctionObject *)arg)->m_ml);
        break;
    default:
        break;
    }
    return 0;
}

/* Sets (hook) or clears (NULL) the profile function of another thread. */
static int setprofile_set(PyThreadState *ts, Py_tracefunc hook, PyObject *obj)
{
#if PY_VERSION_HEX >= 0x03090000
    return _PyEval_SetProfile(ts, hook, obj);
#else
    PyObject *old = ts->c_profileobj;
    Py_XINCREF(obj);
    ts->c_profilefunc = NULL;
    ts->c_profileobj = NULL;
    ts->use_tracing = ts->c_tracefunc != NULL;
    Py_XDECREF(old);
    ts->c_profileobj = obj;
    ts->c_profilefunc = hook;
    ts->use_tracing = hook != NULL || ts->c_tracefunc != NULL;
    return 0;
#endif
}

/* ---- threads started later ----------------------------------------------- */

/* threading.setprofile's hook: threading installs it with sys.setprofile
 * on each new thread; its first event replaces it with setprofile_hook. */
static PyObject *setprofile_thread_start(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    sonde_trace_prof_t *p = (sonde_trace_prof_t *)self;
    if (!p->enabled) {
        PyEval_SetProfile(NULL, NULL);
        Py_RETURN_NONE;
    }
    PyEval_SetProfile(setprofile_hook, (PyObject *)p);
    if (nargs == 3 && PyFrame_Check(args[0]) && PyUnicode_Check(args[1]) &&
        PyUnicode_CompareWithASCIIString(args[1], "call") == 0)
        sonde_trace_on_start(p, setprofile_code((PyFrameObject *)args[0]));
    Py_RETURN_NONE;
}

static PyMethodDef setprofile_thread_start_def = {
    "_sonde_thread_profile", (PyCFunction)(void (*)(void))setprofile_thread_start, METH_FASTCALL,
    "Starts sonde's tracer on a new thread (internal)."};

/* threading.setprofile(hook); remembers what was there. Returns 0 or -1
 * with an exception. */
static int setprofile_threading_install(sonde_trace_prof_t *p, PyObject *threading)
{
    if (!p->thread_hook) {
        p->thread_hook = PyCFunction_New(&setprofile_thread_start_def, (PyObject *)p);
        if (!p->thread_hook) return -1;
    }
    PyObject *old = PyObject_GetAttrString(threading, "_profile_hook");
    if (!old) {
        PyErr_Clear();
        old = Py_None;
        Py_INCREF(old);
    }
    PyObject *res = PyObject_CallMethod(threading, "setprofile", "O", p->thread_hook);
    if (!res) {
        Py_DECREF(old);
        return -1;
    }
    Py_DECREF(res);
    Py_XSETREF(p->old_thread_hook, old);
    p->thread_hook_set = true;
    return 0;
}

/* sys.modules["threading"] once its setprofile exists (new reference), or
 * NULL (no exception). */
static PyObject *setprofile_threading_module(void)
{
    PyObject *modules = PySys_GetObject("modules"); /* borrowed */
    PyObject *threading = modules ? PyDict_GetItemString(modules, "threading") : NULL;
    if (!threading) return NULL;
    if (!PyObject_HasAttrString(threading, "setprofile") ||
        !PyObject_HasAttrString(threading, "_profile_hook"))
        return NULL;
    Py_INCREF(threading);
    return threading;
}

void sonde_trace_hooks_threading_gil(sonde_trace_prof_t *p)
{
    PyObject *threading = setprofile_threading_module();
    if (!threading) return;
    p->thread_hook_pending = false;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (setprofile_threading_install(p, threading) < 0) PyErr_Clear();
    PyErr_Restore(type, value, tb);
    Py_DECREF(threading);
}

/* ---- install / remove -------------------------------------------------------- */

int sonde_trace_hooks_init(void)
{
    return 0;
}

int sonde_trace_hooks_install_gil(sonde_trace_prof_t *p)
{
    PyThreadState *self = PyThreadState_Get();
    PyEval_SetProfile(setprofile_hook, (PyObject *)p);
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(self->interp); ts;
         ts = PyThreadState_Next(ts)) {
        if (ts == self || ts->c_profilefunc) continue; /* leave other profilers alone */
        if (setprofile_set(ts, setprofile_hook, (PyObject *)p) < 0) PyErr_Clear();
    }
    PyObject *threading = setprofile_threading_module();
    if (threading) {
        int rc = setprofile_threading_install(p, threading);
        Py_DECREF(threading);
        if (rc < 0) {
            sonde_trace_hooks_remove_gil(p);
            return -1;
        }
    } else {
        p->thread_hook_pending = true;
    }
    return 0;
}

int sonde_trace_hooks_remove_gil(sonde_trace_prof_t *p)
{
    PyThreadState *self = PyThreadState_Get();
    p->thread_hook_pending = false;
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(self->interp); ts;
         ts = PyThreadState_Next(ts)) {
        bool ours = (ts->c_profilefunc == setprofile_hook && ts->c_profileobj == (PyObject *)p) ||
                    (p->thread_hook && ts->c_profileobj == p->thread_hook);
        if (!ours) continue;
        if (ts == self)
            PyEval_SetProfile(NULL, NULL);
        else if (setprofile_set(ts, NULL, NULL) < 0)
            PyErr_Clear();
    }
    if (!p->thread_hook_set) return 0;
    p->thread_hook_set = false;
    int rc = 0;
    PyObject *threading = setprofile_threading_module();
    if (threading) {
        PyObject *current = PyObject_GetAttrString(threading, "_profile_hook");
        if (!current) PyErr_Clear();
        if (current == p->thread_hook) { /* still ours: put back what was there */
            PyObject *res = PyObject_CallMethod(threading, "setprofile", "O",
                                                p->old_thread_hook ? p->old_thread_hook : Py_None);
            rc = res ? 0 : -1;
            Py_XDECREF(res);
        }
        Py_XDECREF(current);
        Py_DECREF(threading);
    }
    Py_CLEAR(p->old_thread_hook);
    return rc;
}

#endif /* !SONDE_TRACE_MONITORING */
