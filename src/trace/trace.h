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

/* Boot of `sonde trace` (called from the sitecustomize hook, before the
 * program's first line, after the environment was restored): opts are
 * the options the CLI parsed, decoded from the hand-over
 * (sonde_trace_opts_decode; borrowed for the call), program is the script
 * path or "-m module". Starts tracing and arranges for the report/file at
 * exit. Returns 0 or -1 with an exception (the boot then prints it as one
 * line and exits 2). */
int sonde_trace_boot_gil(const struct sonde_trace_opts *opts, const char *program,
                         const char *outfile_override);
/* The statistics file of `sonde trace` in this process (absolute), NULL
 * when the report is printed or no boot trace runs. */
const char *sonde_trace_boot_outfile(void);

/* Before os.exec* (src/ext/exec.c): `sonde trace`'s boot profile is
 * written (the tracer stops), and after an exec that failed all the same
 * the tracer starts again. No-ops without a boot profile of this process.
 * Never raise. */
void sonde_trace_boot_before_exec_gil(void);
void sonde_trace_boot_after_exec_gil(void);

/* ---- provided by the extension's shared parts (src/ext/) ---------------------------- */

/* (src/ext/exec.c) Puts wrappers in place of os.execv and os.execve that
 * have the session and the boot profile write their reports before the
 * process is replaced; counted: the last unwrap gives the functions back
 * (if they are still the wrappers). Wrap returns 0 or -1 with an
 * exception; unwrap never fails. */
int sonde_exec_wrap_gil(void);
void sonde_exec_unwrap_gil(void);

/* (src/ext/gzip.c) The module's compress callback for pprof
 * (sonde_compress_fn, report.h): gzip through the interpreter's own zlib
 * module (compressobj with wbits 31), so that the module links no zlib.
 * Runs when this thread holds the GIL, or takes it back (PyGILState) when
 * arg is SONDE_EXT_GZIP_TAKE_GIL (a Python thread that released it);
 * elsewhere (the report after SIGTERM, on the sampler thread), or without
 * a zlib module, it returns -ENOSYS and the writer leaves the protobuf
 * uncompressed. Never raises (a pending exception is kept). Returns 0,
 * -ENOSYS or -ENOMEM. */
int sonde_ext_gzip(const void *data, size_t len, struct sonde_buf *out, void *arg);
#define SONDE_EXT_GZIP_TAKE_GIL ((void *)1)

/* (src/ext/boot.c) True when the interpreter could not start the program's
 * main script: it reported (sys.last_value) an exception that no frame
 * raised (sys.last_traceback is None), other than KeyboardInterrupt: a
 * syntax error, a NUL byte or undecodable source met while compiling the
 * script. Python's traceback is then all the output; the exit hooks of
 * `sonde run` and `sonde trace` write no report. Never raises. */
bool sonde_boot_script_failed_gil(void);

#endif
