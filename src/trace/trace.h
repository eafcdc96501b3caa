/* trace.h — `sonde trace`: deterministic function profiling (cProfile's
 * interface, pstats files), inside the interpreter.
 *
 * Owns: the interface between the extension module's shared parts
 * (module.c, boot.c) and the tracer. GIL held in both calls.
 */
#ifndef SONDE_TRACE_H
#define SONDE_TRACE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdbool.h>

struct sonde_buf;
struct sonde_trace_opts;

/* Adds the tracer's API to the sonde._sonde module (Profile, run, runctx,
 * ...). Returns 0 or -1 with an exception. */
int sonde_trace_module_init(PyObject *module);

/* What the tracer's boot needs from the module that hosts it, given at
 * boot by src/ext/boot.c (its own functions), so that the tracer calls
 * nothing above it (src/ext/ is above src/trace/; docs/ARCHITECTURE.md,
 * "Layers"). All are called with the GIL held and never raise except
 * exec_wrap_gil.
 *   exec_wrap_gil / exec_unwrap_gil: put and take back the wrappers of
 *     os.exec* that have the boot profile written before the process is
 *     replaced (counted; wrap returns 0 or -1 with an exception);
 *   compress: pprof's gzip through the interpreter's zlib (report.h's
 *     sonde_compress_fn, arg NULL: this thread holds the GIL);
 *   script_failed_gil: true when the interpreter could not start the main
 *     script (a syntax error: Python's traceback is all the output, no
 *     report is written). */
typedef struct sonde_trace_host {
    int (*exec_wrap_gil)(void);
    void (*exec_unwrap_gil)(void);
    int (*compress)(const void *data, size_t len, struct sonde_buf *out, void *arg);
    bool (*script_failed_gil)(void);
} sonde_trace_host_t;

/* Boot of `sonde trace` (called from the sitecustomize hook, before the
 * program's first line, after the environment was restored): host is
 * the module's services (kept by pointer: static storage), opts are
 * the options the CLI parsed, decoded from the hand-over
 * (sonde_trace_opts_decode; borrowed for the call), program is the script
 * path or "-m module". Starts tracing and arranges for the report/file at
 * exit. Returns 0 or -1 with an exception (the boot then prints it as one
 * line and exits 2). */
int sonde_trace_boot_gil(const sonde_trace_host_t *host, const struct sonde_trace_opts *opts,
                         const char *program, const char *outfile_override);
/* The statistics file of `sonde trace` in this process (absolute), NULL
 * when the report is printed or no boot trace runs. */
const char *sonde_trace_boot_outfile(void);

/* Before os.exec* (src/ext/exec.c): `sonde trace`'s boot profile is
 * written (the tracer stops), and after an exec that failed all the same
 * the tracer starts again. No-ops without a boot profile of this process.
 * Never raise. */
void sonde_trace_boot_before_exec_gil(void);
void sonde_trace_boot_after_exec_gil(void);

#endif
