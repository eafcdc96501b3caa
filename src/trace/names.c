/* names.c — how functions are named in pstats keys.
 *
 * Owns: the names of built-ins, spelled exactly as _lsprof spells them so
 * that keys match cProfile's ('~', 0, '<built-in method time.sleep>'),
 * and the UTF-8 form of names that the writers use. The rules (same in
 * 3.8 through 3.13, checked against cProfile's keys on each):
 *  - a function without __self__: "<module.name>", or "<name>" when the
 *    module is builtins or unknown;
 *  - a bound built-in (module functions are bound to their module):
 *    repr(type(self).__mro__ lookup of its name), e.g.
 *    "<method 'append' of 'list' objects>"; when the type has no such
 *    attribute, "<built-in method module.name>" or "<built-in method name>".
 * sonde_trace_builtin_label runs once per built-in per thread, from the
 * slow path of a hook (GIL held; it may run a __repr__).
 */
#include "trace_internal.h"

#include <stdlib.h>
#include <string.h>

PyObject *sonde_trace_builtin_label(PyMethodDef *ml, PyObject *self, PyObject *module)
{
    if (!self) {
        PyObject *modname = NULL;
        if (module && PyUnicode_Check(module)) {
            modname = module;
            Py_INCREF(modname);
        } else if (module && PyModule_Check(module)) {
            modname = PyModule_GetNameObject(module);
            if (!modname) PyErr_Clear();
        }
        if (modname) {
            PyObject *res = NULL;
            if (PyUnicode_CompareWithASCIIString(modname, "builtins") != 0)
                res = PyUnicode_FromFormat("<%U.%s>", modname, ml->ml_name);
            Py_DECREF(modname);
            if (res) return res;
            if (PyErr_Occurred()) return NULL;
        }
        return PyUnicode_FromFormat("<%s>", ml->ml_name);
    }
    PyObject *name = PyUnicode_FromString(ml->ml_name);
    if (!name) return NULL;
    PyObject *attr = _PyType_Lookup(Py_TYPE(self), name); /* borrowed */
    Py_DECREF(name);
    if (attr) {
        Py_INCREF(attr);
        PyObject *res = PyObject_Repr(attr);
        Py_DECREF(attr);
        if (res) return res;
        PyErr_Clear();
    }
    if (module && PyUnicode_Check(module))
        return PyUnicode_FromFormat("<built-in method %S.%s>", module, ml->ml_name);
    return PyUnicode_FromFormat("<built-in method %s>", ml->ml_name);
}

char *sonde_trace_utf8(PyObject *str, size_t *len)
{
    PyObject *bytes = PyUnicode_AsEncodedString(str, "utf-8", "surrogatepass");
    if (!bytes) return NULL;
    Py_ssize_t n = PyBytes_GET_SIZE(bytes);
    char *copy = malloc((size_t)n + 1);
    if (!copy) {
        Py_DECREF(bytes);
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(copy, PyBytes_AS_STRING(bytes), (size_t)n);
    copy[n] = 0;
    Py_DECREF(bytes);
    *len = (size_t)n;
    return copy;
}
