/* monitoring.c — events from sys.monitoring (Python 3.12 and later).
 *
 * Owns: the hook objects registered with sys.monitoring under tool id 2
 * (PROFILER) and their installation. There is no C API to consume events,
 * so, like _lsprof, we register callables; ours are minimal objects whose
 * vectorcall slot is the C callback (no bound-method layer, no recursion
 * check). Events used, as _lsprof uses them:
 *   PY_START, PY_RESUME, PY_THROW     -> a call starts (a generator resume
 *                                        counts as a call, as in cProfile)
 *   PY_RETURN, PY_YIELD, PY_UNWIND    -> it ends
 *   CALL + C_RETURN/C_RAISE           -> a built-in (C function or method
 *                                        descriptor called with a self)
 * C_RETURN and C_RAISE are enabled together, as sys.monitoring requires,
 * and only with builtins=True. sys.monitoring covers every thread; each
 * event goes to the calling thread's own stack. The callbacks run inside
 * the interpreter's instrumentation with the GIL held; they never raise
 * and always return None (never DISABLE: a call site that calls a Python
 * function now may call a built-in later).
 */
#include "trace_internal.h"

#if SONDE_TRACE_MONITORING

#define MON_TOOL_ID 2 /* sys.monitoring.PROFILER_ID */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    sonde_trace_prof_t *prof; /* owned */
} mon_hook_t;

static PyObject *mon_missing; /* sys.monitoring.MISSING; owned */

static PyObject *mon_py_start(PyObject *self, PyObject *const *args, size_t nargsf,
                              PyObject *kwnames)
{
    if (SONDE_LIKELY(PyVectorcall_NARGS(nargsf) >= 1 && PyCode_Check(args[0])))
        sonde_trace_on_start(((mon_hook_t *)self)->prof, args[0]);
    Py_RETURN_NONE;
}

static PyObject *mon_py_return(PyObject *self, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames)
{
    if (SONDE_LIKELY(PyVectorcall_NARGS(nargsf) >= 1))
        sonde_trace_on_return(((mon_hook_t *)self)->prof, args[0]);
    Py_RETURN_NONE;
}

/* The built-in a CALL/C_RETURN event is about, as _lsprof picks it: a
 * C function, or a method descriptor called with a self of its type (the
 * bound function the interpreter would have made has the descriptor's
 * PyMethodDef, that self and no module). */
static inline __attribute__((always_inline)) PyMethodDef *
mon_builtin(PyObject *const *args, size_t nargsf, PyObject **self, PyObject **module)
{
    if (SONDE_UNLIKELY(PyVectorcall_NARGS(nargsf) < 4)) return NULL;
    PyObject *callable = args[2];
    PyTypeObject *type = Py_TYPE(callable);
    if (type == &PyFunction_Type || type == &PyMethod_Type) return NULL; /* most calls */
    if (type == &PyMethodDescr_Type) {
        PyObject *arg0 = args[3];
        PyMethodDescrObject *descr = (PyMethodDescrObject *)callable;
        if (arg0 == mon_missing || !PyObject_TypeCheck(arg0, PyDescr_TYPE(descr))) return NULL;
        *self = arg0;
        *module = NULL;
        return descr->d_method;
    }
    if (type == &PyCFunction_Type || type == &PyCMethod_Type || PyCFunction_Check(callable)) {
        PyCFunctionObject *fn = (PyCFunctionObject *)callable;
        *self = fn->m_self;
        *module = fn->m_module;
        return fn->m_ml;
    }
    return NULL;
}

static PyObject *mon_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyObject *bound_self = NULL, *module = NULL;
    PyMethodDef *ml = mon_builtin(args, nargsf, &bound_self, &module);
    if (ml) sonde_trace_on_c_call(((mon_hook_t *)self)->prof, ml, bound_self, module);
    Py_RETURN_NONE;
}

static PyObject *mon_c_return(PyObject *self, PyObject *const *args, size_t nargsf,
                              PyObject *kwnames)
{
    PyObject *bound_self = NULL, *module = NULL;
    PyMethodDef *ml = mon_builtin(args, nargsf, &bound_self, &module);
    if (ml) sonde_trace_on_c_return(((mon_hook_t *)self)->prof, ml);
    Py_RETURN_NONE;
}

static void mon_hook_dealloc(PyObject *self)
{
    Py_XDECREF(((mon_hook_t *)self)->prof);
    PyObject_Free(self);
}

static PyTypeObject mon_hook_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sonde._trace_hook",
    .tp_basicsize = sizeof(mon_hook_t),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(mon_hook_t, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_dealloc = mon_hook_dealloc,
    .tp_doc = "A sys.monitoring callback of sonde's tracer (internal).",
};

/* The callbacks and the events each one receives. */
enum { MON_START, MON_RETURN, MON_CALL, MON_C_RETURN, MON_N_HOOKS };

static const struct {
    const char *event;
    int hook;
    bool builtin; /* only with builtins=True */
} mon_events[] = {
    {"PY_START", MON_START, false},  {"PY_RESUME", MON_START, false},
    {"PY_THROW", MON_START, false},  {"PY_RETURN", MON_RETURN, false},
    {"PY_YIELD", MON_RETURN, false}, {"PY_UNWIND", MON_RETURN, false},
    {"CALL", MON_CALL, true},        {"C_RETURN", MON_C_RETURN, true},
    {"C_RAISE", MON_C_RETURN, true},
};

static const vectorcallfunc mon_functions[MON_N_HOOKS] = {mon_py_start, mon_py_return, mon_call,
                                                          mon_c_return};

int sonde_trace_hooks_init(void)
{
    if (PyType_Ready(&mon_hook_type) < 0) return -1;
    return 0;
}

/* sys.monitoring (borrowed) or NULL with an exception. */
static PyObject *mon_module(void)
{
    PyObject *mon = PySys_GetObject("monitoring");
    if (!mon) PyErr_SetString(PyExc_RuntimeError, "sonde: sys.monitoring is not available");
    return mon;
}

/* The bit of sys.monitoring.events.<name>, or -1 with an exception. */
static long mon_event_bit(PyObject *mon, const char *name)
{
    PyObject *events = PyObject_GetAttrString(mon, "events");
    PyObject *bit = events ? PyObject_GetAttrString(events, name) : NULL;
    Py_XDECREF(events);
    long value = bit ? PyLong_AsLong(bit) : -1;
    Py_XDECREF(bit);
    return value;
}

/* Registers `callback` (None to unregister) for every event we use. */
static int mon_register_all(PyObject *mon, PyObject *const *hooks, bool builtins)
{
    for (size_t i = 0; i < SONDE_ARRAY_LEN(mon_events); i++) {
        if (mon_events[i].builtin && !builtins) continue;
        long bit = mon_event_bit(mon, mon_events[i].event);
        if (bit < 0) return -1;
        PyObject *res = PyObject_CallMethod(mon, "register_callback", "ilO", MON_TOOL_ID, bit,
                                            hooks ? hooks[mon_events[i].hook] : Py_None);
        if (!res) return -1;
        Py_DECREF(res);
    }
    return 0;
}

int sonde_trace_hooks_install_gil(sonde_trace_prof_t *p)
{
    PyObject *mon = mon_module();
    if (!mon) return -1;
    if (!mon_missing && !(mon_missing = PyObject_GetAttrString(mon, "MISSING"))) return -1;
    PyObject *res = PyObject_CallMethod(mon, "use_tool_id", "is", MON_TOOL_ID, "sonde");
    if (!res) {
        PyErr_Clear();
        PyObject *owner = PyObject_CallMethod(mon, "get_tool", "i", MON_TOOL_ID);
        if (owner && owner != Py_None)
            PyErr_Format(PyExc_ValueError,
                         "sonde: cannot trace: another profiler (%R) holds sys.monitoring tool "
                         "id %d (PROFILER); disable it first",
                         owner, MON_TOOL_ID);
        else if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError,
                         "sonde: cannot trace: sys.monitoring tool id %d (PROFILER) is in use",
                         MON_TOOL_ID);
        Py_XDECREF(owner);
        return -1;
    }
    Py_DECREF(res);
    PyObject *hooks = PyTuple_New(MON_N_HOOKS);
    if (!hooks) goto error;
    for (int i = 0; i < MON_N_HOOKS; i++) {
        mon_hook_t *hook = PyObject_New(mon_hook_t, &mon_hook_type);
        if (!hook) goto error;
        hook->vectorcall = mon_functions[i];
        hook->prof = p;
        Py_INCREF(p);
        PyTuple_SET_ITEM(hooks, i, (PyObject *)hook);
    }
    long mask = 0;
    for (size_t i = 0; i < SONDE_ARRAY_LEN(mon_events); i++) {
        if (mon_events[i].builtin && !p->builtins) continue;
        long bit = mon_event_bit(mon, mon_events[i].event);
        if (bit < 0) goto error;
        mask |= bit;
    }
    if (mon_register_all(mon, &PyTuple_GET_ITEM(hooks, 0), p->builtins) < 0) goto error;
    p->hooks = hooks;
    res = PyObject_CallMethod(mon, "set_events", "il", MON_TOOL_ID, mask);
    if (!res) {
        p->hooks = NULL;
        goto error;
    }
    Py_DECREF(res);
    return 0;
error:
    Py_XDECREF(hooks);
    {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        mon_register_all(mon, NULL, true);
        PyErr_Clear();
        PyObject *freed = PyObject_CallMethod(mon, "free_tool_id", "i", MON_TOOL_ID);
        Py_XDECREF(freed);
        PyErr_Clear();
        PyErr_Restore(type, value, tb);
    }
    return -1;
}

int sonde_trace_hooks_remove_gil(sonde_trace_prof_t *p)
{
    if (!p->hooks) return 0;
    PyObject *mon = mon_module();
    if (!mon) return -1;
    PyObject *res = PyObject_CallMethod(mon, "set_events", "ii", MON_TOOL_ID, 0);
    int rc = res ? 0 : -1;
    Py_XDECREF(res);
    if (rc == 0) rc = mon_register_all(mon, NULL, true);
    if (rc == 0) {
        res = PyObject_CallMethod(mon, "free_tool_id", "i", MON_TOOL_ID);
        rc = res ? 0 : -1;
        Py_XDECREF(res);
    }
    Py_CLEAR(p->hooks);
    return rc;
}

void sonde_trace_hooks_threading_gil(sonde_trace_prof_t *p)
{
    p->thread_hook_pending = false;
}

#endif /* SONDE_TRACE_MONITORING */
