/* boot.c — `sonde trace app.py`: start tracing at boot, report at exit.
 *
 * Owns: sonde_trace_boot_gil (called by src/ext/boot.c from the
 * sitecustomize hook, before the program's first line), the root-frame
 * logic and the atexit handler that prints cProfile's report or writes
 * the -o file (a pstats file, or pprof when its name ends in .pb.gz or
 * .pprof: flat, src/trace/pstats_model.c). The interpreter then runs the program natively (argv,
 * __main__, tracebacks and exit status are Python's own); the tracer is
 * enabled at boot but "armed": it ignores every event until the program's
 * main frame starts on the main thread (the script's <module>, or runpy's
 * _run_module_as_main for -m, a directory or a zip), so the rest of
 * site's start-up is not recorded. When that frame returns, the main
 * thread stops recording (threading's shutdown and atexit functions are
 * not the program's calls, as under cProfile); other threads go on until
 * the atexit handler disables the tracer. Before os.exec* replaces the
 * process (src/ext/exec.c wraps it), the statistics are written the same
 * way, and tracing goes on if the exec fails; on SIGTERM, terminate.c's
 * thread has them written before the process dies. sonde_trace_boot_root and
 * sonde_trace_root_done run inside the hooks (GIL held, never raise).
 */
#include "trace_internal.h"

#include "../launch/trace_options.h"
#include "../prim/file.h"
#include "../report/report.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static sonde_trace_prof_t *boot_prof;     /* owned; NULL when not tracing from boot */
static char *boot_outfile;                /* owned; absolute; NULL = print */
static const sonde_format_t *boot_format; /* pprof when -f or -o's ending asks
                                             for it (.pb.gz, .pprof); NULL: pstats */
static sonde_trace_sort_t boot_sort;
static pid_t boot_pid;
static const sonde_trace_host_t *boot_host; /* the module's services (static) */

/* ---- the main frame (inside the hooks) --------------------------------------- */

static bool boot_is_root_code(const sonde_trace_prof_t *p, PyCodeObject *code)
{
    if (PyUnicode_CompareWithASCIIString(code->co_name, "_run_module_as_main") == 0) return true;
    if (!p->root_script || PyUnicode_CompareWithASCIIString(code->co_name, "<module>") != 0)
        return false;
    /* The file system's bytes: a script named with bytes that are not
     * UTF-8 has them as surrogates in co_filename, which UTF-8 refuses. */
    PyObject *file = PyUnicode_EncodeFSDefault(code->co_filename);
    if (!file) return false;
    char *real = realpath(PyBytes_AS_STRING(file), NULL);
    Py_DECREF(file);
    bool same = real && strcmp(real, p->root_script) == 0;
    free(real);
    return same;
}

sonde_trace_thread_t *sonde_trace_boot_root(sonde_trace_prof_t *p, PyObject *code)
{
    if (!p->enabled || PyThread_get_thread_ident() != p->root_ident) return NULL;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    bool root = boot_is_root_code(p, (PyCodeObject *)code);
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
    if (!root) return NULL;
    p->armed = false;
    sonde_trace_new_serial(p);
    sonde_trace_thread_t *th = sonde_trace_thread_attach(p);
    if (th) th->root = true;
    return th;
}

void sonde_trace_root_done(sonde_trace_prof_t *p, sonde_trace_thread_t *th)
{
    th->closed = true;
    sonde_trace_tls.serial = 0; /* this thread's events take the slow path, which ignores them */
}

/* ---- at exit ------------------------------------------------------------------------ */

/* One line on stderr, through Python's sys.stderr when possible. */
static void boot_error(const char *fmt, const char *a, const char *b)
{
    char line[1024];
    snprintf(line, sizeof line, fmt, a, b ? b : "");
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *out = PySys_GetObject("stdout");
    PyObject *res = out && out != Py_None ? PyObject_CallMethod(out, "flush", NULL) : NULL;
    Py_XDECREF(res);
    PyErr_Clear();
    PySys_FormatStderr("%s\n", line);
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
}

/* The message of the current exception (cleared), for one line. */
static void boot_exception_text(char *buf, size_t len)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *text = value ? PyObject_Str(value) : NULL;
    const char *msg = text ? PyUnicode_AsUTF8(text) : NULL;
    snprintf(buf, len, "%s", msg ? msg : "unknown error");
    Py_XDECREF(text);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    PyErr_Clear();
}

/* Stops the tracer and writes the statistics: to the -o file, or as
 * cProfile's report on stdout, through sys.stdout at exit (after the
 * program's own output) or, with direct_fd, straight to descriptor 1
 * before an exec or SIGTERM (the program's buffered output is lost, as
 * unprofiled). */
static void boot_write(sonde_trace_prof_t *p, bool direct_fd)
{
    char msg[512];
    sonde_trace_stats_t stats = {NULL, 0, 0};
    if (sonde_trace_disable_gil(p) < 0) {
        boot_exception_text(msg, sizeof msg);
        boot_error("sonde: %s%s", msg, " (the statistics may be incomplete)");
    }
    if (sonde_trace_stats_build_gil(p, &stats) < 0) {
        boot_exception_text(msg, sizeof msg);
        boot_error("sonde: cannot build the statistics: %s%s", msg, NULL);
        goto done;
    }
    if (boot_host->script_failed_gil()) goto done; /* never started: Python's traceback says it */
    if (stats.n_rows == 0) {
        boot_error("sonde: no function call was recorded%s%s",
                   p->armed ? " (the program's main code never started)" : "", NULL);
        goto done;
    }
    if (boot_outfile && boot_format) {
        /* built with the GIL (the gzip callback calls Python's zlib) */
        sonde_buf_t data = SONDE_BUF_INIT;
        sonde_report_ctx_t ctx;
        sonde_report_ctx_init(&ctx, -1);
        ctx.pprof.compress = boot_host->compress;
        ctx.pprof.count_type = "calls";
        int rc = sonde_trace_report(&stats, boot_format, &ctx, &data);
        if (rc == 0) {
            Py_BEGIN_ALLOW_THREADS rc = sonde_write_output(boot_outfile, data.data, data.len);
            Py_END_ALLOW_THREADS
        }
        if (rc < 0)
            boot_error("sonde: cannot write the statistics to '%s': %s", boot_outfile,
                       strerror(-rc));
        sonde_buf_free(&data);
    } else if (boot_outfile) {
        int rc;
        Py_BEGIN_ALLOW_THREADS rc = sonde_trace_write_stats(boot_outfile, &stats);
        Py_END_ALLOW_THREADS if (rc < 0) boot_error(
            "sonde: cannot write the statistics to '%s': %s", boot_outfile, strerror(-rc));
    } else {
        sonde_buf_t text = SONDE_BUF_INIT;
        if (sonde_trace_text_report(&stats, &boot_sort, &text) < 0) {
            boot_error("sonde: cannot build the report: %s%s", strerror(ENOMEM), NULL);
        } else if (direct_fd) {
            /* a closed stdout: nowhere to go, as for print() */
            PyThreadState *save = PyEval_SaveThread();
            (void)sonde_write_fd(STDOUT_FILENO, text.data, text.len);
            PyEval_RestoreThread(save);
        } else {
            sonde_trace_stdout_write_gil(text.data, text.len);
            /* A closed or broken stdout, as print() would have met. Like
             * cProfile, drop a broken pipe quietly (no "Exception ignored"
             * when the interpreter flushes stdout once more). */
            if (PyErr_Occurred() && PyErr_ExceptionMatches(PyExc_BrokenPipeError))
                PySys_SetObject("stdout", Py_None);
            PyErr_Clear();
        }
        sonde_buf_free(&text);
    }
done:
    sonde_trace_stats_free(&stats);
}

static PyObject *boot_atexit(PyObject *self, PyObject *unused)
{
    sonde_trace_prof_t *p = boot_prof;
    if (!p || getpid() != boot_pid) Py_RETURN_NONE; /* not ours (a forked child) */
    /* a SIGTERM from here on waits for the write */
    sonde_trace_term_stop_gil();
    boot_prof = NULL;
    boot_write(p, false);
    boot_host->exec_unwrap_gil();
    Py_DECREF(p);
    sonde_trace_term_finish_gil();
    Py_RETURN_NONE;
}

/* SIGTERM (terminate.c, on its thread with the GIL): the statistics are
 * written, then the process ends. */
static void boot_write_on_term(void)
{
    sonde_trace_prof_t *p = boot_prof;
    if (!p || getpid() != boot_pid) return;
    boot_prof = NULL;
    boot_write(p, true);
}

/* ---- os.exec* ------------------------------------------------------------------------ */

static bool boot_exec_pending; /* written before an exec still in progress */

void sonde_trace_boot_before_exec_gil(void)
{
    sonde_trace_prof_t *p = boot_prof;
    if (!p || getpid() != boot_pid || boot_exec_pending) return;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    boot_write(p, true);
    boot_exec_pending = true;
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
}

void sonde_trace_boot_after_exec_gil(void)
{
    sonde_trace_prof_t *p = boot_prof;
    if (!boot_exec_pending) return;
    boot_exec_pending = false;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    /* The main thread's stack was emptied by the write: its return to
     * depth 0 no longer means the main frame returned. */
    for (sonde_trace_thread_t *th = p ? p->threads : NULL; th; th = th->next)
        th->root = false;
    if (p && getpid() == boot_pid && sonde_trace_enable_gil(p) < 0) {
        char msg[512];
        boot_exception_text(msg, sizeof msg);
        boot_error("sonde: cannot trace on after a failed exec: %s%s", msg, NULL);
    }
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
}

static PyMethodDef boot_atexit_def = {"_sonde_trace_atexit", boot_atexit, METH_NOARGS,
                                      "Writes sonde trace's report (internal)."};

/* ---- boot -------------------------------------------------------------------------------- */

/* An absolute copy of path (relative to the current directory). */
static char *boot_absolute(const char *path)
{
    if (path[0] == '/') return strdup(path);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return strdup(path);
    size_t len = strlen(cwd) + strlen(path) + 2;
    char *abs = malloc(len);
    if (abs) snprintf(abs, len, "%s/%s", cwd, path);
    return abs;
}

const char *sonde_trace_boot_outfile(void)
{
    return boot_prof && getpid() == boot_pid ? boot_outfile : NULL;
}

int sonde_trace_boot_gil(const sonde_trace_host_t *host, const sonde_trace_opts_t *handed,
                         const char *program, const char *outfile_override)
{
    sonde_trace_opts_t opts = *handed;
    char err[512] = "";
    if (boot_prof) {
        PyErr_SetString(PyExc_RuntimeError, "sonde: sonde trace is already running");
        return -1;
    }
    if (outfile_override) opts.outfile = outfile_override; /* after an exec: see exec.c */
    if (opts.sort) {
        const char *words[1] = {opts.sort};
        if (sonde_trace_sort_words(&boot_sort, words, 1, err, sizeof err) < 0) {
            PyErr_Format(PyExc_RuntimeError, "sonde: invalid sort key '%s' for -s", opts.sort);
            return -1;
        }
    } else {
        sonde_trace_sort_default(&boot_sort);
    }
    free(boot_outfile);
    boot_outfile = NULL;
    if (opts.outfile && !(boot_outfile = boot_absolute(opts.outfile))) {
        PyErr_NoMemory();
        return -1;
    }
    boot_format = NULL;
    const sonde_format_t *asked = opts.format    ? sonde_format_named(opts.format)
                                  : opts.outfile ? sonde_format_of_path(opts.outfile)
                                                 : NULL;
    if (asked && strcmp(asked->name, "pprof") == 0) boot_format = asked;
    sonde_trace_prof_t *p =
        (sonde_trace_prof_t *)PyObject_CallObject((PyObject *)&sonde_trace_prof_type, NULL);
    if (!p) return -1;
    p->armed = true;
    p->root_ident = PyThread_get_thread_ident();
    if (strncmp(program, "-m ", 3) != 0) p->root_script = realpath(program, NULL);

    PyObject *atexit = PyImport_ImportModule("atexit");
    PyObject *func = atexit ? PyCFunction_New(&boot_atexit_def, NULL) : NULL;
    PyObject *res = func ? PyObject_CallMethod(atexit, "register", "O", func) : NULL;
    Py_XDECREF(res);
    Py_XDECREF(func);
    Py_XDECREF(atexit);
    boot_host = host;
    if (!res || host->exec_wrap_gil() < 0) {
        Py_DECREF(p);
        return -1;
    }
    if (sonde_trace_enable_gil(p) < 0 || sonde_trace_term_start_gil(boot_write_on_term) < 0) {
        if (sonde_trace_disable_gil(p) < 0) PyErr_Clear();
        boot_host->exec_unwrap_gil();
        Py_DECREF(p);
        return -1;
    }
    boot_pid = getpid();
    boot_prof = p;
    return 0;
}
