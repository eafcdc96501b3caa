/* floor.c — benchmark-only: the cost sys.monitoring itself puts on a call.
 *
 * Owns: nothing of sonde. bench/trace.py builds this file as a small
 * extension module (sonde_bench_floor) for each interpreter 3.12+ and
 * registers its callbacks for exactly the events sonde.Profile uses
 * (PY_START, PY_RESUME, PY_THROW, PY_RETURN, PY_YIELD, PY_UNWIND, CALL,
 * C_RETURN, C_RAISE). Two kinds of callback:
 *   hook(0)  does nothing and returns None: what the interpreter's event
 *            delivery costs with the cheapest possible profiler;
 *   hook(1)  also reads the time stamp counter once per event, as a
 *            profiler must to time anything;
 *   hook(2)  for CALL: reads it only when the callable is not a Python
 *            function or method (whose time PY_START/PY_RETURN measure),
 *            the fewest reads a profiler of built-ins can make.
 * The callbacks are objects whose vectorcall slot is the C function, as in
 * sonde (no bound-method layer). No profiling logic lives here.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define FLOOR_NOW() ((uint64_t)__rdtsc())
#else
#include <time.h>
static uint64_t floor_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#define FLOOR_NOW() floor_now()
#endif

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
} floor_hook_t;

static volatile uint64_t floor_sink; /* keeps the clock reads */

static PyObject *floor_noop(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_RETURN_NONE;
}

static PyObject *floor_clock(PyObject *self, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames)
{
    floor_sink = FLOOR_NOW();
    Py_RETURN_NONE;
}

static PyObject *floor_call_clock(PyObject *self, PyObject *const *args, size_t nargsf,
                                  PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) >= 3) {
        PyTypeObject *type = Py_TYPE(args[2]);
        if (type != &PyFunction_Type && type != &PyMethod_Type) floor_sink = FLOOR_NOW();
    }
    Py_RETURN_NONE;
}

static PyTypeObject floor_hook_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sonde_bench_floor.hook",
    .tp_basicsize = sizeof(floor_hook_t),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(floor_hook_t, vectorcall),
    .tp_call = PyVectorcall_Call,
};

/* hook(kind) -> a new callback object (kind 0, 1 or 2 as above). */
static PyObject *floor_make(PyObject *module, PyObject *arg)
{
    static const vectorcallfunc kinds[] = {floor_noop, floor_clock, floor_call_clock};
    long kind = PyLong_AsLong(arg);
    if (kind == -1 && PyErr_Occurred()) return NULL;
    if (kind < 0 || kind > 2) {
        PyErr_SetString(PyExc_ValueError, "hook kind must be 0, 1 or 2");
        return NULL;
    }
    floor_hook_t *hook = PyObject_New(floor_hook_t, &floor_hook_type);
    if (!hook) return NULL;
    hook->vectorcall = kinds[kind];
    return (PyObject *)hook;
}

static PyMethodDef floor_methods[] = {
    {"hook", floor_make, METH_O,
     "hook(kind) -> a sys.monitoring callback that does nothing "
     "(0) or only reads the clock (1; 2: for CALL)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef floor_module = {
    PyModuleDef_HEAD_INIT,
    "sonde_bench_floor",
    "Benchmark-only no-op sys.monitoring callbacks.",
    -1,
    floor_methods,
};

PyMODINIT_FUNC PyInit_sonde_bench_floor(void)
{
    if (PyType_Ready(&floor_hook_type) < 0) return NULL;
    return PyModule_Create(&floor_module);
}
