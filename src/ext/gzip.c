/* gzip.c — gzip for the module's pprof output, through Python's zlib.
 *
 * Owns: sonde_ext_gzip (ext.h), the compress callback the session and
 * `sonde trace` (through its host, trace.h) give the report context. The extension module must not
 * link zlib (a second copy beside the program's own), so it calls the
 * interpreter's zlib module: zlib.compressobj(6, DEFLATED, 31), whose
 * window bits 16 + 15 write a gzip header and trailer. Runs with the GIL:
 * the caller's, or taken back for a Python thread that released it (the
 * session writes its report without the GIL); never in a signal handler.
 */
#include "ext.h"

#define GZIP_LEVEL 6
#define GZIP_DEFLATED 8            /* zlib.DEFLATED */
#define GZIP_WINDOW_BITS (15 + 16) /* the largest window, with a gzip header */

/* Appends a bytes object's contents to out; false when obj is no bytes. */
static bool gzip_append_bytes(sonde_buf_t *out, PyObject *obj)
{
    if (!obj || !PyBytes_Check(obj)) return false;
    sonde_buf_append(out, PyBytes_AS_STRING(obj), (size_t)PyBytes_GET_SIZE(obj));
    return true;
}

/* The work, GIL held. */
static int gzip_with_gil(const void *data, size_t len, sonde_buf_t *out)
{
    size_t before = out->len;
    int rc = -ENOSYS;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *zlib = PyImport_ImportModule("zlib");
    PyObject *comp = zlib ? PyObject_CallMethod(zlib, "compressobj", "iii", GZIP_LEVEL,
                                                GZIP_DEFLATED, GZIP_WINDOW_BITS)
                          : NULL;
    PyObject *view =
        comp ? PyMemoryView_FromMemory((char *)data, (Py_ssize_t)len, PyBUF_READ) : NULL;
    PyObject *body = view ? PyObject_CallMethod(comp, "compress", "O", view) : NULL;
    PyObject *tail = body ? PyObject_CallMethod(comp, "flush", NULL) : NULL;
    if (gzip_append_bytes(out, body) && gzip_append_bytes(out, tail))
        rc = sonde_buf_error(out) ? -ENOMEM : 0;
    else if (PyErr_Occurred() && PyErr_ExceptionMatches(PyExc_MemoryError))
        rc = -ENOMEM;
    if (rc < 0 && !sonde_buf_error(out)) out->len = before;
    Py_XDECREF(tail);
    Py_XDECREF(body);
    Py_XDECREF(view);
    Py_XDECREF(comp);
    Py_XDECREF(zlib);
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
    return rc;
}

int sonde_ext_gzip(const void *data, size_t len, sonde_buf_t *out, void *arg)
{
    if (!Py_IsInitialized() || len > PY_SSIZE_T_MAX) return -ENOSYS;
    if (PyGILState_Check()) return gzip_with_gil(data, len, out);
    if (arg != SONDE_EXT_GZIP_TAKE_GIL) return -ENOSYS;
    PyGILState_STATE state = PyGILState_Ensure();
    int rc = gzip_with_gil(data, len, out);
    PyGILState_Release(state);
    return rc;
}
