/* profile.c — sonde.Profile, sonde.run and sonde.runctx: cProfile's API.
 *
 * Owns: the Profile type (a drop-in for cProfile.Profile: enable, disable,
 * clear, getstats, create_stats, snapshot_stats, print_stats, dump_stats,
 * run, runctx, runcall, context manager, the `stats` attribute that
 * pstats.Stats(profile) reads), the module-level run/runctx of cProfile,
 * the custom timer path, and sonde_trace_module_init. This is an edge:
 * core error codes become Python exceptions here. GIL held throughout;
 * sonde_trace_timer_now also runs inside the hooks.
 */
#include "trace_internal.h"

#include "../prim/file.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static PyTypeObject *prof_entry_type;    /* owned; getstats() items */
static PyTypeObject *prof_subentry_type; /* owned; their `calls` items */

/* ---- the timer -------------------------------------------------------------- */

sonde_ticks_t sonde_trace_timer_now(sonde_trace_prof_t *p)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    sonde_ticks_t ticks = 0;
    PyObject *res = PyObject_CallObject(p->timer, NULL);
    if (res) {
        if (p->timeunit > 0.0) { /* integer units of timeunit seconds */
            ticks = PyLong_Check(res) ? (sonde_ticks_t)PyLong_AsLongLong(res) : -1;
            if (!PyLong_Check(res) && !PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "timer with a timeunit must return an int");
        } else { /* seconds */
            double seconds = PyFloat_AsDouble(res);
            if (!(seconds == -1.0 && PyErr_Occurred())) ticks = (sonde_ticks_t)floor(seconds * 1e9);
        }
        Py_DECREF(res);
    }
    if (PyErr_Occurred()) {
        PyErr_WriteUnraisable(p->timer);
        ticks = 0;
    }
    PyErr_Restore(type, value, tb);
    return ticks;
}

/* ---- enable / disable -------------------------------------------------------- */

int sonde_trace_enable_gil(sonde_trace_prof_t *p)
{
#ifdef Py_GIL_DISABLED
    /* The tables rely on the GIL: one thread in the profiler at a time. */
    PyErr_SetString(PyExc_RuntimeError,
                    "sonde: tracing a free-threaded Python (no GIL) is not supported");
    return -1;
#endif
    sonde_trace_clock_init();
    if (p->enabled && sonde_trace_hooks_remove_gil(p) < 0) return -1;
    p->enabled = true;
    sonde_trace_new_serial(p);
    if (sonde_trace_hooks_install_gil(p) < 0) {
        p->enabled = false;
        return -1;
    }
    return 0;
}

int sonde_trace_disable_gil(sonde_trace_prof_t *p)
{
    int rc = 0;
    if (p->enabled) {
        rc = sonde_trace_hooks_remove_gil(p);
        p->enabled = false;
        sonde_trace_flush(p, sonde_trace_now(p));
        sonde_trace_new_serial(p);
    }
    if (rc == 0 && p->nomemory) {
        p->nomemory = false;
        PyErr_SetString(PyExc_MemoryError, "memory was exhausted while profiling");
        rc = -1;
    }
    return rc;
}

/* ---- the type ------------------------------------------------------------------ */

static PyObject *prof_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    sonde_trace_prof_t *p = (sonde_trace_prof_t *)type->tp_alloc(type, 0);
    if (!p) return NULL;
    p->subcalls = true;
    p->builtins = true;
    sonde_trace_clear(p); /* serial, reclaim threshold */
    return (PyObject *)p;
}

static int prof_init(sonde_trace_prof_t *p, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"timer", "timeunit", "subcalls", "builtins", NULL};
    PyObject *timer = NULL;
    double timeunit = 0.0;
    int subcalls = 1, builtins = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|Odpp:Profile", kwlist, &timer, &timeunit,
                                     &subcalls, &builtins))
        return -1;
    if (p->enabled) {
        PyErr_SetString(PyExc_RuntimeError, "sonde: cannot re-initialize an enabled Profile");
        return -1;
    }
    if (timer == Py_None) timer = NULL;
    Py_XINCREF(timer);
    Py_XSETREF(p->timer, timer);
    p->timeunit = timeunit;
    p->subcalls = subcalls;
    p->builtins = builtins;
    return 0;
}

static int prof_traverse(sonde_trace_prof_t *p, visitproc visit, void *arg)
{
    Py_VISIT(p->dict);
    Py_VISIT(p->timer);
    Py_VISIT(p->hooks);
    Py_VISIT(p->thread_hook);
    Py_VISIT(p->old_thread_hook);
    return 0;
}

static int prof_clear_refs(sonde_trace_prof_t *p)
{
    Py_CLEAR(p->dict);
    Py_CLEAR(p->timer);
    Py_CLEAR(p->hooks);
    Py_CLEAR(p->thread_hook);
    Py_CLEAR(p->old_thread_hook);
    return 0;
}

static void prof_dealloc(sonde_trace_prof_t *p)
{
    PyObject_GC_UnTrack(p);
    if (p->enabled) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        if (sonde_trace_disable_gil(p) < 0) PyErr_WriteUnraisable((PyObject *)p);
        PyErr_Restore(type, value, tb);
    }
    sonde_trace_clear(p);
    free(p->root_script);
    prof_clear_refs(p);
    Py_TYPE(p)->tp_free((PyObject *)p);
}

/* ---- methods ---------------------------------------------------------------------- */

static PyObject *prof_enable(sonde_trace_prof_t *p, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"subcalls", "builtins", NULL};
    int subcalls = -1, builtins = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|pp:enable", kwlist, &subcalls, &builtins))
        return NULL;
    if (subcalls >= 0) p->subcalls = subcalls;
    if (builtins >= 0) p->builtins = builtins;
    if (sonde_trace_enable_gil(p) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *prof_disable(sonde_trace_prof_t *p, PyObject *unused)
{
    if (sonde_trace_disable_gil(p) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *prof_clear(sonde_trace_prof_t *p, PyObject *unused)
{
    sonde_trace_clear(p);
    Py_RETURN_NONE;
}

static double prof_seconds_per_tick(const sonde_trace_prof_t *p)
{
    if (!p->timer) return sonde_trace_clock_seconds_per_tick();
    return p->timeunit > 0.0 ? p->timeunit : 1e-9;
}

/* getstats(): _lsprof's list of profiler_entry(code, callcount,
 * reccallcount, totaltime, inlinetime, calls). */
static PyObject *prof_getstats(sonde_trace_prof_t *p, PyObject *unused)
{
    if (p->nomemory) {
        p->nomemory = false;
        PyErr_SetString(PyExc_MemoryError, "memory was exhausted while profiling");
        return NULL;
    }
    sonde_trace_thread_t *all = sonde_trace_merged_gil(p);
    if (!all) return NULL;
    double factor = prof_seconds_per_tick(p);
    PyObject *result = PyList_New(0);
    PyObject **calls = calloc(all->n_entries ? all->n_entries : 1, sizeof *calls);
    if (!result || !calls) {
        if (!calls) PyErr_NoMemory();
        goto error;
    }
    for (size_t i = 0; i < all->n_entries; i++)
        all->entries[i]->scratch = i;
    for (size_t i = 0; i < all->n_edges; i++) {
        const sonde_trace_edge_t *edge = all->edges[i];
        if (edge->calls == 0) continue;
        size_t caller = edge->caller->scratch;
        if (!calls[caller] && !(calls[caller] = PyList_New(0))) goto error;
        const sonde_trace_entry_t *callee = edge->callee;
        PyObject *sub = PyObject_CallFunction(
            (PyObject *)prof_subentry_type, "((OKKdd))",
            callee->code ? callee->code : callee->label, (unsigned long long)edge->calls,
            (unsigned long long)edge->rec_calls, factor * (double)edge->total_ticks,
            factor * (double)edge->inline_ticks);
        if (!sub || PyList_Append(calls[caller], sub) < 0) {
            Py_XDECREF(sub);
            goto error;
        }
        Py_DECREF(sub);
    }
    for (size_t i = 0; i < all->n_entries; i++) {
        const sonde_trace_entry_t *e = all->entries[i];
        if (e->calls == 0) continue;
        PyObject *entry =
            PyObject_CallFunction((PyObject *)prof_entry_type, "((OKKddO))",
                                  e->code ? e->code : e->label, (unsigned long long)e->calls,
                                  (unsigned long long)e->rec_calls, factor * (double)e->total_ticks,
                                  factor * (double)e->inline_ticks, calls[i] ? calls[i] : Py_None);
        if (!entry || PyList_Append(result, entry) < 0) {
            Py_XDECREF(entry);
            goto error;
        }
        Py_DECREF(entry);
    }
    for (size_t i = 0; i < all->n_entries; i++)
        Py_XDECREF(calls[i]);
    free(calls);
    sonde_trace_thread_free(all);
    return result;
error:
    if (calls)
        for (size_t i = 0; i < all->n_entries; i++)
            Py_XDECREF(calls[i]);
    free(calls);
    Py_XDECREF(result);
    sonde_trace_thread_free(all);
    return NULL;
}

/* A str from our UTF-8 (surrogates passed through). */
static PyObject *prof_str(const char *utf8, size_t len)
{
    return PyUnicode_DecodeUTF8(utf8, (Py_ssize_t)len, "surrogatepass");
}

static PyObject *prof_key(const sonde_trace_row_t *row)
{
    PyObject *file = prof_str(row->file, row->file_len);
    PyObject *name = file ? prof_str(row->name, row->name_len) : NULL;
    PyObject *key = name ? Py_BuildValue("(OlO)", file, row->line, name) : NULL;
    Py_XDECREF(file);
    Py_XDECREF(name);
    return key;
}

/* The pstats dict of s. New reference or NULL with an exception. */
static PyObject *prof_stats_dict(const sonde_trace_stats_t *s)
{
    PyObject *dict = PyDict_New();
    PyObject **keys = calloc(s->n_rows ? s->n_rows : 1, sizeof *keys);
    if (!dict || !keys) {
        if (!keys) PyErr_NoMemory();
        goto error;
    }
    for (size_t i = 0; i < s->n_rows; i++)
        if (!(keys[i] = prof_key(&s->rows[i]))) goto error;
    for (size_t i = 0; i < s->n_rows; i++) {
        const sonde_trace_row_t *row = &s->rows[i];
        PyObject *callers = PyDict_New();
        if (!callers) goto error;
        for (size_t k = 0; k < row->n_callers; k++) {
            const sonde_trace_caller_t *c = &row->callers[k];
            PyObject *v = Py_BuildValue("(KKdd)", (unsigned long long)c->nc,
                                        (unsigned long long)c->cc, c->tt, c->ct);
            if (!v || PyDict_SetItem(callers, keys[c->row], v) < 0) {
                Py_XDECREF(v);
                Py_DECREF(callers);
                goto error;
            }
            Py_DECREF(v);
        }
        PyObject *v = Py_BuildValue("(KKddN)", (unsigned long long)row->cc,
                                    (unsigned long long)row->nc, row->tt, row->ct, callers);
        if (!v || PyDict_SetItem(dict, keys[i], v) < 0) {
            Py_XDECREF(v);
            goto error;
        }
        Py_DECREF(v);
    }
    for (size_t i = 0; i < s->n_rows; i++)
        Py_XDECREF(keys[i]);
    free(keys);
    return dict;
error:
    if (keys)
        for (size_t i = 0; i < s->n_rows; i++)
            Py_XDECREF(keys[i]);
    free(keys);
    Py_XDECREF(dict);
    return NULL;
}

static PyObject *prof_snapshot_stats(sonde_trace_prof_t *p, PyObject *unused)
{
    sonde_trace_stats_t stats;
    if (sonde_trace_stats_build_gil(p, &stats) < 0) return NULL;
    PyObject *dict = prof_stats_dict(&stats);
    sonde_trace_stats_free(&stats);
    if (!dict) return NULL;
    int rc = PyObject_SetAttrString((PyObject *)p, "stats", dict);
    Py_DECREF(dict);
    if (rc < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *prof_create_stats(sonde_trace_prof_t *p, PyObject *unused)
{
    PyObject *res = PyObject_CallMethod((PyObject *)p, "disable", NULL);
    if (!res) return NULL;
    Py_DECREF(res);
    return prof_snapshot_stats(p, NULL);
}

/* The sort order of print_stats(sort): what pstats' sort_stats(*sort)
 * accepts. Returns 0 or -1 with an exception (KeyError, TypeError). */
static int prof_sort(PyObject *arg, sonde_trace_sort_t *sort)
{
    PyObject *fields = PyTuple_Check(arg) ? arg : NULL;
    PyObject *single[1] = {arg};
    Py_ssize_t n = fields ? PyTuple_GET_SIZE(fields) : 1;
    PyObject *const *items = fields ? &PyTuple_GET_ITEM(fields, 0) : single;
    if (n == 0) { /* sort_stats(): no order */
        memset(sort, 0, sizeof *sort);
        return 0;
    }
    if (n == 1 && PyLong_Check(items[0])) {
        long number = PyLong_AsLong(items[0]);
        if (number == -1 && PyErr_Occurred()) return -1;
        if (sonde_trace_sort_number(sort, number) < 0) {
            PyErr_SetObject(PyExc_KeyError, items[0]);
            return -1;
        }
        return 0;
    }
    if (n > SONDE_TRACE_SORT_MAX) n = SONDE_TRACE_SORT_MAX;
    const char *words[SONDE_TRACE_SORT_MAX];
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i > 0 && Py_TYPE(items[i]) != Py_TYPE(items[0])) {
            PyErr_SetString(PyExc_TypeError, "Can't have mixed argument type");
            return -1;
        }
        words[i] = PyUnicode_Check(items[i]) ? PyUnicode_AsUTF8(items[i]) : NULL;
        if (!words[i]) {
            PyErr_Clear();
            PyErr_SetObject(PyExc_KeyError, items[i]);
            return -1;
        }
    }
    char bad[256];
    if (sonde_trace_sort_words(sort, words, (int)n, bad, sizeof bad) < 0) {
        for (Py_ssize_t i = 0; i < n; i++)
            if (strcmp(words[i], bad) == 0) PyErr_SetObject(PyExc_KeyError, items[i]);
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_KeyError, bad);
        return -1;
    }
    return 0;
}

int sonde_trace_stdout_write_gil(const char *text, size_t len)
{
    PyObject *out = PySys_GetObject("stdout"); /* borrowed */
    if (!out || out == Py_None) return 0;
    PyObject *str = PyUnicode_DecodeUTF8(text, (Py_ssize_t)len, "surrogatepass");
    if (!str) return -1;
    PyObject *res = PyObject_CallMethod(out, "write", "(O)", str);
    Py_DECREF(str);
    if (!res) return -1;
    Py_DECREF(res);
    res = PyObject_CallMethod(out, "flush", NULL);
    if (!res) return -1;
    Py_DECREF(res);
    return 0;
}

int sonde_trace_print_gil(sonde_trace_prof_t *p, const sonde_trace_sort_t *sort)
{
    sonde_trace_stats_t stats;
    if (sonde_trace_stats_build_gil(p, &stats) < 0) return -1;
    if (stats.n_rows == 0) { /* what pstats.Stats(profile) says */
        sonde_trace_stats_free(&stats);
        PyErr_Format(PyExc_TypeError,
                     "Cannot create or construct a <class 'pstats.Stats'> object "
                     "from %R (nothing was recorded)",
                     (PyObject *)p);
        return -1;
    }
    sonde_buf_t text = SONDE_BUF_INIT;
    int rc = sonde_trace_text_report(&stats, sort, &text);
    sonde_trace_stats_free(&stats);
    if (rc == 0)
        rc = sonde_trace_stdout_write_gil(text.data, text.len);
    else
        PyErr_NoMemory();
    sonde_buf_free(&text);
    return rc < 0 ? -1 : 0;
}

static PyObject *prof_print_stats(sonde_trace_prof_t *p, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"sort", NULL};
    PyObject *sort_arg = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:print_stats", kwlist, &sort_arg))
        return NULL;
    sonde_trace_sort_t sort;
    if (sort_arg) {
        if (prof_sort(sort_arg, &sort) < 0) return NULL;
    } else {
        sonde_trace_sort_number(&sort, -1);
    }
    PyObject *res = PyObject_CallMethod((PyObject *)p, "disable", NULL);
    if (!res) return NULL;
    Py_DECREF(res);
    if (sonde_trace_print_gil(p, &sort) < 0) return NULL;
    Py_RETURN_NONE;
}

int sonde_trace_write_stats(const char *path, const sonde_trace_stats_t *stats)
{
    sonde_buf_t data = SONDE_BUF_INIT;
    int rc = sonde_trace_pstats_marshal(stats, &data);
    if (rc == 0) rc = sonde_write_output(path, data.data, data.len);
    sonde_buf_free(&data);
    return rc;
}

static PyObject *prof_dump_stats(sonde_trace_prof_t *p, PyObject *file)
{
    PyObject *path = NULL;
    if (!PyUnicode_FSConverter(file, &path)) return NULL;
    PyObject *res = PyObject_CallMethod((PyObject *)p, "create_stats", NULL);
    if (!res) {
        Py_DECREF(path);
        return NULL;
    }
    Py_DECREF(res);
    sonde_trace_stats_t stats;
    if (sonde_trace_stats_build_gil(p, &stats) < 0) {
        Py_DECREF(path);
        return NULL;
    }
    int rc = sonde_trace_write_stats(PyBytes_AS_STRING(path), &stats);
    sonde_trace_stats_free(&stats);
    Py_DECREF(path);
    if (rc == -ENODATA) {
        PyErr_SetString(PyExc_ValueError,
                        "sonde: nothing was recorded; pstats cannot read an empty profile");
        return NULL;
    }
    if (rc < 0) {
        errno = -rc;
        return PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, file);
    }
    Py_RETURN_NONE;
}

/* Calls fn (a C function) as if the interpreter had called it from
 * bytecode: recorded as a built-in call, as cProfile's Python code does
 * for exec and for runcall's function. */
static PyObject *prof_call_builtin(sonde_trace_prof_t *p, PyObject *fn, PyObject *args,
                                   PyObject *kwargs)
{
    bool traced = p->enabled && p->builtins && PyCFunction_Check(fn);
    PyCFunctionObject *cfn = (PyCFunctionObject *)fn;
    if (traced) sonde_trace_on_c_call(p, cfn->m_ml, cfn->m_self, cfn->m_module);
    PyObject *res = PyObject_Call(fn, args, kwargs);
    if (traced) sonde_trace_on_c_return(p, cfn->m_ml);
    return res;
}

/* self.disable() after a body whose result (owned) is result, or NULL
 * with the body's exception set; that exception wins over disable's. */
static PyObject *prof_finish(sonde_trace_prof_t *p, PyObject *result)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *res = PyObject_CallMethod((PyObject *)p, "disable", NULL);
    if (!res) {
        if (type) {
            PyErr_Clear();
        } else {
            Py_XDECREF(result);
            return NULL;
        }
    }
    Py_XDECREF(res);
    PyErr_Restore(type, value, tb);
    return result;
}

static PyObject *prof_runctx(sonde_trace_prof_t *p, PyObject *args)
{
    PyObject *cmd, *globals, *locals;
    if (!PyArg_ParseTuple(args, "OOO:runctx", &cmd, &globals, &locals)) return NULL;
    PyObject *builtins = PyEval_GetBuiltins(); /* borrowed */
    PyObject *exec = builtins ? PyDict_GetItemString(builtins, "exec") : NULL;
    if (!exec) {
        PyErr_SetString(PyExc_RuntimeError, "sonde: builtins.exec is missing");
        return NULL;
    }
    Py_INCREF(exec);
    PyObject *res = PyObject_CallMethod((PyObject *)p, "enable", NULL);
    if (!res) {
        Py_DECREF(exec);
        return NULL;
    }
    Py_DECREF(res);
    PyObject *exec_args = PyTuple_Pack(3, cmd, globals, locals);
    res = exec_args ? prof_call_builtin(p, exec, exec_args, NULL) : NULL;
    Py_XDECREF(exec_args);
    Py_DECREF(exec);
    bool ok = res != NULL;
    Py_XDECREF(res);
    if (ok) Py_INCREF(p);
    return prof_finish(p, ok ? (PyObject *)p : NULL);
}

static PyObject *prof_run(sonde_trace_prof_t *p, PyObject *cmd)
{
    PyObject *main = PyImport_ImportModule("__main__");
    if (!main) return NULL;
    PyObject *dict = PyModule_GetDict(main); /* borrowed */
    PyObject *res = PyObject_CallMethod((PyObject *)p, "runctx", "OOO", cmd, dict, dict);
    Py_DECREF(main);
    return res;
}

static PyObject *prof_runcall(sonde_trace_prof_t *p, PyObject *args, PyObject *kwargs)
{
    if (PyTuple_GET_SIZE(args) < 1) {
        PyErr_SetString(PyExc_TypeError, "runcall expected at least 1 positional argument, got 0");
        return NULL;
    }
    PyObject *func = PyTuple_GET_ITEM(args, 0);
    PyObject *rest = PyTuple_GetSlice(args, 1, PyTuple_GET_SIZE(args));
    if (!rest) return NULL;
    PyObject *res = PyObject_CallMethod((PyObject *)p, "enable", NULL);
    if (!res) {
        Py_DECREF(rest);
        return NULL;
    }
    Py_DECREF(res);
    res = prof_call_builtin(p, func, rest, kwargs);
    Py_DECREF(rest);
    return prof_finish(p, res);
}

static PyObject *prof_enter(sonde_trace_prof_t *p, PyObject *unused)
{
    PyObject *res = PyObject_CallMethod((PyObject *)p, "enable", NULL);
    if (!res) return NULL;
    Py_DECREF(res);
    Py_INCREF(p);
    return (PyObject *)p;
}

static PyObject *prof_exit(sonde_trace_prof_t *p, PyObject *args)
{
    PyObject *res = PyObject_CallMethod((PyObject *)p, "disable", NULL);
    if (!res) return NULL;
    Py_DECREF(res);
    Py_RETURN_NONE;
}

static PyMethodDef prof_methods[] = {
    {"enable", (PyCFunction)(void (*)(void))prof_enable, METH_VARARGS | METH_KEYWORDS,
     "enable(subcalls=True, builtins=True)\n\nStart collecting profiling information (every "
     "thread,\neach on its own stack). 'subcalls' records callers, 'builtins'\ncalls of "
     "built-in functions."},
    {"disable", (PyCFunction)prof_disable, METH_NOARGS,
     "disable()\n\nStop collecting profiling information."},
    {"clear", (PyCFunction)prof_clear, METH_NOARGS,
     "clear()\n\nClear all profiling information collected so far."},
    {"getstats", (PyCFunction)prof_getstats, METH_NOARGS,
     "getstats() -> list of profiler_entry objects, as _lsprof.Profiler.getstats()."},
    {"create_stats", (PyCFunction)prof_create_stats, METH_NOARGS,
     "create_stats()\n\nDisable and set self.stats to the pstats dict."},
    {"snapshot_stats", (PyCFunction)prof_snapshot_stats, METH_NOARGS,
     "snapshot_stats()\n\nSet self.stats to the pstats dict."},
    {"print_stats", (PyCFunction)(void (*)(void))prof_print_stats, METH_VARARGS | METH_KEYWORDS,
     "print_stats(sort=-1)\n\nPrint the report python -m cProfile prints, sorted by sort\n(a "
     "pstats sort key, a number -1..2, or a tuple of keys)."},
    {"dump_stats", (PyCFunction)prof_dump_stats, METH_O,
     "dump_stats(file)\n\nWrite the pstats file (atomically)."},
    {"run", (PyCFunction)prof_run, METH_O, "run(cmd)\n\nProfile exec(cmd) in __main__."},
    {"runctx", (PyCFunction)prof_runctx, METH_VARARGS,
     "runctx(cmd, globals, locals)\n\nProfile exec(cmd, globals, locals)."},
    {"runcall", (PyCFunction)(void (*)(void))prof_runcall, METH_VARARGS | METH_KEYWORDS,
     "runcall(func, /, *args, **kw)\n\nProfile func(*args, **kw) and return its result."},
    {"__enter__", (PyCFunction)prof_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)prof_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

bool sonde_trace_own_method(const PyMethodDef *ml)
{
    return ml >= prof_methods && ml < prof_methods + SONDE_ARRAY_LEN(prof_methods);
}

static PyGetSetDef prof_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject sonde_trace_prof_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sonde.Profile",
    .tp_basicsize = sizeof(sonde_trace_prof_t),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Profile(timer=None, timeunit=0.0, subcalls=True, builtins=True)\n\n"
              "A drop-in for cProfile.Profile: deterministic profiling of every\n"
              "function call, at a fraction of cProfile's overhead. Each thread is\n"
              "traced on its own stack. pstats.Stats(profile) reads it; dump_stats()\n"
              "writes the pstats file. timer: a callable returning seconds (or\n"
              "integer units of timeunit seconds); the default is a fast clock.",
    .tp_dictoffset = offsetof(sonde_trace_prof_t, dict),
    .tp_new = prof_new,
    .tp_init = (initproc)prof_init,
    .tp_dealloc = (destructor)prof_dealloc,
    .tp_traverse = (traverseproc)prof_traverse,
    .tp_clear = (inquiry)prof_clear_refs,
    .tp_methods = prof_methods,
    .tp_getset = prof_getset,
};

/* ---- sonde.run / sonde.runctx ---------------------------------------------------- */

/* profile._Utils: run, ignore SystemExit, then print or dump. */
static PyObject *trace_run_and_show(PyObject *method_args, const char *method, PyObject *filename,
                                    PyObject *sort)
{
    PyObject *prof = PyObject_CallObject((PyObject *)&sonde_trace_prof_type, NULL);
    if (!prof) return NULL;
    PyObject *meth = PyObject_GetAttrString(prof, method);
    PyObject *res = meth ? PyObject_CallObject(meth, method_args) : NULL;
    Py_XDECREF(meth);
    Py_XDECREF(res);
    PyObject *type = NULL, *value = NULL, *tb = NULL;
    if (!res) {
        if (PyErr_ExceptionMatches(PyExc_SystemExit)) PyErr_Clear();
        PyErr_Fetch(&type, &value, &tb);
    }
    PyObject *shown = filename && filename != Py_None
                          ? PyObject_CallMethod(prof, "dump_stats", "(O)", filename)
                          : PyObject_CallMethod(prof, "print_stats", "(O)", sort ? sort : Py_None);
    Py_DECREF(prof);
    if (!shown) {
        if (type) { /* the program's exception wins */
            PyErr_Clear();
            PyErr_Restore(type, value, tb);
        }
        return NULL;
    }
    Py_DECREF(shown);
    if (type) {
        PyErr_Restore(type, value, tb);
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *trace_run(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"statement", "filename", "sort", NULL};
    PyObject *statement, *filename = Py_None, *sort = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO:run", kwlist, &statement, &filename,
                                     &sort))
        return NULL;
    PyObject *default_sort = sort ? NULL : PyLong_FromLong(-1);
    PyObject *call_args = PyTuple_Pack(1, statement);
    PyObject *res = call_args
                        ? trace_run_and_show(call_args, "run", filename, sort ? sort : default_sort)
                        : NULL;
    Py_XDECREF(call_args);
    Py_XDECREF(default_sort);
    return res;
}

static PyObject *trace_runctx(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"statement", "globals", "locals", "filename", "sort", NULL};
    PyObject *statement, *globals, *locals, *filename = Py_None, *sort = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|OO:runctx", kwlist, &statement, &globals,
                                     &locals, &filename, &sort))
        return NULL;
    PyObject *default_sort = sort ? NULL : PyLong_FromLong(-1);
    PyObject *call_args = PyTuple_Pack(3, statement, globals, locals);
    PyObject *res =
        call_args ? trace_run_and_show(call_args, "runctx", filename, sort ? sort : default_sort)
                  : NULL;
    Py_XDECREF(call_args);
    Py_XDECREF(default_sort);
    return res;
}

static PyMethodDef trace_functions[] = {
    {"run", (PyCFunction)(void (*)(void))trace_run, METH_VARARGS | METH_KEYWORDS,
     "run(statement, filename=None, sort=-1)\n\nAs cProfile.run: profile exec(statement) in "
     "__main__, then print\nthe report sorted by sort, or write the pstats file filename."},
    {"runctx", (PyCFunction)(void (*)(void))trace_runctx, METH_VARARGS | METH_KEYWORDS,
     "runctx(statement, globals, locals, filename=None, sort=-1)\n\nAs cProfile.runctx."},
    {NULL, NULL, 0, NULL},
};

/* ---- module init ------------------------------------------------------------------- */

static PyStructSequence_Field prof_entry_fields[] = {
    {"code", "code object or built-in function name"},
    {"callcount", "how many times this was called"},
    {"reccallcount", "how many times called recursively"},
    {"totaltime", "total time in this entry"},
    {"inlinetime", "inline time in this entry (not in subcalls)"},
    {"calls", "details of the calls"},
    {NULL, NULL},
};

static PyStructSequence_Field prof_subentry_fields[] = {
    {"code", "called code object or built-in function name"},
    {"callcount", "how many times this is called"},
    {"reccallcount", "how many times this is called recursively"},
    {"totaltime", "total time spent in this call"},
    {"inlinetime", "inline time (not in further subcalls)"},
    {NULL, NULL},
};

/* A doc string is required: 3.8's PyStructSequence_NewType reads it. */
static PyStructSequence_Desc prof_entry_desc = {
    "sonde.profiler_entry", "One function's statistics, as _lsprof.profiler_entry.",
    prof_entry_fields, 6};
static PyStructSequence_Desc prof_subentry_desc = {
    "sonde.profiler_subentry", "Calls to one callee, as _lsprof.profiler_subentry.",
    prof_subentry_fields, 5};

int sonde_trace_module_init(PyObject *module)
{
    sonde_trace_clock_init();
    if (sonde_trace_hooks_init() < 0) return -1;
    if (PyType_Ready(&sonde_trace_prof_type) < 0) return -1;
    if (!prof_entry_type && !(prof_entry_type = PyStructSequence_NewType(&prof_entry_desc)))
        return -1;
    if (!prof_subentry_type &&
        !(prof_subentry_type = PyStructSequence_NewType(&prof_subentry_desc)))
        return -1;
    Py_INCREF(&sonde_trace_prof_type);
    if (PyModule_AddObject(module, "Profile", (PyObject *)&sonde_trace_prof_type) < 0) {
        Py_DECREF(&sonde_trace_prof_type);
        return -1;
    }
    if (PyModule_AddFunctions(module, trace_functions) < 0) return -1;
    return 0;
}
