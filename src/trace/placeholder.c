/* placeholder.c — temporary: lets the module build until the tracer lands
 * (replaced by the tracer's own files; `sonde trace` is not available yet). */
#include "trace.h"

int sonde_trace_module_init(PyObject *module) { return 0; }

int sonde_trace_boot_gil(int n_tokens, char **tokens, const char *program)
{
    PyErr_SetString(PyExc_RuntimeError, "sonde trace is not available in this build");
    return -1;
}
