/* boot.c — the start of a `sonde run`, inside the interpreter.
 *
 * Owns: sonde_boot_gil (called by sonde/_boot/sitecustomize.py while the
 * interpreter imports `site`, before the program's first line). The boot
 * undoes every trace of the hand-over so that the program sees exactly
 * what `python3 app.py` would give it: the SONDE_* variables and our PYTHONPATH entries leave
 * os.environ, the C environment and sys.path, and a sitecustomize that ours
 * shadowed is imported in its place. Then it starts the session with the
 * options the command parsed, decoded from the hand-over
 * (sonde_run_opts_decode; nothing is parsed again here), or for `sonde
 * trace` decodes the tracer's (sonde_trace_opts_decode) and hands them to
 * it. The interpreter itself then
 * reads and compiles the script: a syntax error or a NUL byte gets
 * Python's own traceback and exit status, and the exit hooks, asking
 * sonde_boot_script_failed_gil, write no report for a program that never
 * started. No fixed-size
 * buffer: paths and options of any length go through. GIL held
 * throughout; no signal context.
 */
#include "ext.h"

#include "../launch/launch.h"
#include "../launch/trace_options.h"
#include "../prim/file.h"
#include "../trace/trace.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Removes `name` from os.environ (and so from the C environment). */
static int boot_unsetenv(PyObject *os_env, const char *name)
{
    PyObject *key = PyUnicode_FromString(name);
    if (!key) return -1;
    int has = PySequence_Contains(os_env, key);
    int rc = has > 0 ? PyObject_DelItem(os_env, key) : has;
    Py_DECREF(key);
    unsetenv(name);
    return rc < 0 ? -1 : 0;
}

static int boot_setenv(PyObject *os_env, const char *name, const char *value)
{
    PyObject *key = PyUnicode_DecodeFSDefault(name);
    PyObject *val = PyUnicode_DecodeFSDefault(value);
    int rc = (key && val) ? PyObject_SetItem(os_env, key, val) : -1;
    Py_XDECREF(key);
    Py_XDECREF(val);
    return rc;
}

/* --memory: puts the user's LD_PRELOAD back, so that the programs this
 * one starts do not load the allocator shim (it stays loaded here). */
static int boot_restore_preload(PyObject *os_env)
{
    const char *had = getenv(SONDE_ENV_HAD_PRELOAD);
    if (!had) return 0;
    char *orig = strdup(getenv(SONDE_ENV_PRELOAD) ? getenv(SONDE_ENV_PRELOAD) : "");
    bool restore = strcmp(had, "1") == 0;
    if (!orig) {
        PyErr_NoMemory();
        return -1;
    }
    int rc =
        restore ? boot_setenv(os_env, "LD_PRELOAD", orig) : boot_unsetenv(os_env, "LD_PRELOAD");
    free(orig);
    if (rc == 0) rc = boot_unsetenv(os_env, SONDE_ENV_HAD_PRELOAD);
    if (rc == 0) rc = boot_unsetenv(os_env, SONDE_ENV_PRELOAD);
    return rc;
}

/* Puts the environment back as the user had it. */
static int boot_restore_environ(const char *had_pypath, const char *orig_pypath)
{
    PyObject *os = PyImport_ImportModule("os");
    if (!os) return -1;
    PyObject *os_env = PyObject_GetAttrString(os, "environ");
    Py_DECREF(os);
    if (!os_env) return -1;
    int rc = 0;
    if (had_pypath && strcmp(had_pypath, "1") == 0)
        rc = boot_setenv(os_env, "PYTHONPATH", orig_pypath ? orig_pypath : "");
    else
        rc = boot_unsetenv(os_env, "PYTHONPATH");
    const char *ours[] = {SONDE_ENV_OPTIONS,      SONDE_ENV_BOOT_PATHS, SONDE_ENV_PYTHONPATH,
                          SONDE_ENV_HAD_PYPATH,   SONDE_ENV_PROGRAM,    SONDE_ENV_MODE,
                          SONDE_ENV_BLOCKED,      SONDE_ENV_EXEC_GEN,   SONDE_ENV_EXEC_BASE,
                          SONDE_ENV_EXEC_OUTFILE, SONDE_ENV_COLLECT,    SONDE_ENV_CHILD};
    for (size_t i = 0; rc == 0 && i < SONDE_ARRAY_LEN(ours); i++)
        rc = boot_unsetenv(os_env, ours[i]);
    if (rc == 0) rc = boot_restore_preload(os_env);
    Py_DECREF(os_env);
    return rc;
}

/* Removes the first occurrence of each of our ':'-separated entries from
 * sys.path. */
static void boot_restore_sys_path(const char *boot_paths)
{
    PyObject *path = PySys_GetObject("path"); /* borrowed */
    if (!path || !PyList_Check(path) || !boot_paths) return;
    for (const char *entry = boot_paths; *entry;) {
        size_t n = strcspn(entry, ":");
        for (Py_ssize_t i = 0; n && i < PyList_GET_SIZE(path); i++) {
            PyObject *item = PyList_GET_ITEM(path, i);
            Py_ssize_t len = 0;
            const char *text = PyUnicode_Check(item) ? PyUnicode_AsUTF8AndSize(item, &len) : NULL;
            if (!text) {
                PyErr_Clear();
                continue;
            }
            if ((size_t)len == n && memcmp(text, entry, n) == 0) {
                PySequence_DelItem(path, i);
                break;
            }
        }
        entry += n;
        if (*entry == ':') entry++;
    }
}

/* Imports the sitecustomize module that ours shadowed, as site.py would
 * have, reporting its errors the way site.py does. Returns true if there
 * was one (it is then sys.modules["sitecustomize"]). It finds and loads it
 * through the import system's own frozen modules, always in sys.modules
 * (importlib.machinery's PathFinder and importlib.util's module_from_spec
 * are theirs): importing importlib.util would import contextlib,
 * collections and functools into every program, milliseconds at start. */
static bool boot_chain_sitecustomize(void)
{
    bool found = false;
    PyObject *external = NULL, *bootstrap = NULL, *spec = NULL, *module = NULL, *res = NULL;
    PyObject *modules = PySys_GetObject("modules"); /* borrowed */
    PyObject *path = PySys_GetObject("path");       /* borrowed */
    external = PyImport_ImportModule("_frozen_importlib_external");
    if (!external || !path) goto error;
    PyObject *finder = PyObject_GetAttrString(external, "PathFinder");
    if (!finder) goto error;
    spec = PyObject_CallMethod(finder, "find_spec", "sO", "sitecustomize", path);
    Py_DECREF(finder);
    if (!spec) goto error;
    if (spec == Py_None) goto done;
    found = true;
    bootstrap = PyImport_ImportModule("_frozen_importlib");
    if (!bootstrap) goto error;
    module = PyObject_CallMethod(bootstrap, "module_from_spec", "O", spec);
    if (!module) goto error;
    if (PyDict_SetItemString(modules, "sitecustomize", module) < 0) goto error;
    PyObject *loader = PyObject_GetAttrString(spec, "loader");
    if (!loader) goto error;
    res = PyObject_CallMethod(loader, "exec_module", "O", module);
    Py_DECREF(loader);
    if (!res) goto error;
    goto done;
error:
    if (PyErr_Occurred()) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_NormalizeException(&type, &value, &tb);
        if (type && PyErr_GivenExceptionMatches(type, PyExc_ImportError) == 0) {
            PyObject *text = value ? PyObject_Str(value) : NULL;
            const char *msg = text ? PyUnicode_AsUTF8(text) : NULL;
            PySys_FormatStderr("Error in sitecustomize; set PYTHONVERBOSE for traceback:\n%s: %s\n",
                               ((PyTypeObject *)type)->tp_name, msg ? msg : "");
            Py_XDECREF(text);
        }
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        PyErr_Clear();
    }
done:
    Py_XDECREF(res);
    Py_XDECREF(module);
    Py_XDECREF(spec);
    Py_XDECREF(bootstrap);
    Py_XDECREF(external);
    return found;
}

/* Unblocks the signals the launcher blocked (src/launch/launch.c; `list`
 * as in SONDE_RUN_BLOCKED_SIGNALS), once sonde's handlers are in place: a
 * SIGTERM that came during start-up reaches the session's or the tracer's
 * handler now (a report, or the tracer's one-line note, then death by
 * SIGTERM). A SIGINT would become a KeyboardInterrupt inside Python's
 * start-up (site), so it gets a one-line note and its default action: the
 * process dies by SIGINT, as plain python does before its main code. */
static void boot_release_signals(const char *list)
{
    sigset_t blocked, pending;
    sigemptyset(&blocked);
    for (const char *p = list; *p;) {
        char *end = NULL;
        long sig = strtol(p, &end, 10);
        if (end == p) break;
        if (sig == SIGINT || sig == SIGTERM) sigaddset(&blocked, (int)sig);
        p = *end == ',' ? end + 1 : end;
    }
    struct sigaction cur;
    if (sigismember(&blocked, SIGINT) && sigpending(&pending) == 0 &&
        sigismember(&pending, SIGINT) && sigaction(SIGINT, NULL, &cur) == 0 &&
        ((cur.sa_flags & SA_SIGINFO) || cur.sa_handler != SIG_IGN)) {
        static const char note[] = "sonde: interrupted while the program was starting (SIGINT); "
                                   "no profile\n";
        PyObject *out = PySys_GetObject("stdout"); /* borrowed; the program's output first */
        PyObject *res = out && out != Py_None ? PyObject_CallMethod(out, "flush", NULL) : NULL;
        Py_XDECREF(res);
        PyErr_Clear();
        if (sonde_prim_fd_is_open(STDERR_FILENO))
            (void)sonde_write_fd(STDERR_FILENO, note, sizeof note - 1);
        signal(SIGINT, SIG_DFL);
    }
    pthread_sigmask(SIG_UNBLOCK, &blocked, NULL);
}

static bool boot_module_main; /* the program runs as -m MODULE */

struct boot_env_ctx {
    PyObject *dict; /* borrowed: the new program's environment */
    PyObject *keep; /* owned list: the bytes whose text get returned */
};

/* Whether a file name is the import machinery's (runpy, importlib). */
static bool boot_import_file(const char *file)
{
    size_t n = strlen(file);
    return strncmp(file, "<frozen ", 8) == 0 || strstr(file, "/importlib/") ||
           (n >= 9 && strcmp(file + n - 9, "/runpy.py") == 0);
}

/* Whether every frame of traceback tb runs the import machinery (-m
 * MODULE whose source does not compile: runpy's frames only). Never
 * raises. */
static bool boot_import_frames_only(PyObject *tb)
{
    bool only = tb && tb != Py_None;
    Py_XINCREF(tb);
    while (only && tb && tb != Py_None) {
        PyObject *frame = PyObject_GetAttrString(tb, "tb_frame");
        PyObject *code = frame ? PyObject_GetAttrString(frame, "f_code") : NULL;
        PyObject *name = code ? PyObject_GetAttrString(code, "co_filename") : NULL;
        const char *file = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
        only = file && boot_import_file(file);
        Py_XDECREF(name);
        Py_XDECREF(code);
        Py_XDECREF(frame);
        PyObject *next = PyObject_GetAttrString(tb, "tb_next");
        Py_DECREF(tb);
        tb = next;
    }
    Py_XDECREF(tb);
    PyErr_Clear();
    return only;
}

/* ---- the same interpreter again after os.exec* ----------------------------- */

/* What this process's boot was handed (kept for a program that runs this
 * interpreter again: sonde_boot_exec_env_gil). */
static struct {
    pid_t pid;            /* the process booted; 0: no `sonde run`/`trace` boot */
    char *pkg_dir;        /* the package directory (holding _boot/) */
    char *mode, *options; /* as handed over */
    bool preload;         /* --memory: the shim was preloaded */
    int gen;              /* how many execs of the interpreter led here (0: the launcher's) */
    char *base;           /* the first run's report file (absolute); NULL: the terminal */
    char *collect;        /* the collector's directory; NULL: processes not followed */
    bool child;           /* this process hands its profile to the collector */
} boot_handover;

static const char *boot_env_get(void *ctx, const char *name)
{
    struct boot_env_ctx *c = ctx;
    PyObject *key = PyUnicode_DecodeFSDefault(name);
    PyObject *value = key ? PyDict_GetItemWithError(c->dict, key) : NULL; /* borrowed */
    Py_XDECREF(key);
    PyObject *bytes = value && PyUnicode_Check(value) ? PyUnicode_EncodeFSDefault(value) : NULL;
    if (!bytes || PyList_Append(c->keep, bytes) < 0) {
        Py_XDECREF(bytes);
        PyErr_Clear();
        return NULL;
    }
    Py_DECREF(bytes);
    return PyBytes_AS_STRING(bytes); /* alive in c->keep */
}

static int boot_env_set(void *ctx, const char *name, const char *value)
{
    struct boot_env_ctx *c = ctx;
    PyObject *key = PyUnicode_DecodeFSDefault(name);
    PyObject *val = PyUnicode_DecodeFSDefault(value);
    int rc = key && val ? PyDict_SetItem(c->dict, key, val) : -1;
    Py_XDECREF(key);
    Py_XDECREF(val);
    if (rc < 0) PyErr_Clear();
    return rc < 0 ? -ENOMEM : 0;
}

/* Whether a command line's interpreter options keep sonde's boot from
 * running: -I (isolated), -E (no PYTHON* variables) or -S (no site). Such
 * a process gets no hand-over, so that its environment is the program's. */
static bool boot_no_site(int argc, char *const *argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!a || a[0] != '-' || a[1] == '-' || !a[1]) return false;
        for (const char *c = a + 1; *c; c++) {
            if (*c == 'I' || *c == 'E' || *c == 'S') return true;
            if (*c == 'c' || *c == 'm') return false;
            if (*c == 'W' || *c == 'X') {
                if (!c[1]) i++;
                break;
            }
        }
    }
    return false;
}

/* The program word of a child that runs multiprocessing's start-up code. */
#define BOOT_MP_PROGRAM "<multiprocessing>"

/* Whether a command line runs `-c CODE` with CODE multiprocessing's own
 * ("from multiprocessing..." on every version: spawn, forkserver and the
 * resource tracker start so). */
static bool boot_multiprocessing_code(int argc, char *const *argv)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "-c") == 0)
            return strncmp(argv[i + 1], "from multiprocessing", 20) == 0;
    return false;
}

/* Whether a command line starts one of multiprocessing's helpers that end
 * after the program (the forkserver, the resource tracker). */
static bool boot_multiprocessing_service(int argc, char *const *argv)
{
    static const char *const services[] = {"from multiprocessing.forkserver",
                                           "from multiprocessing.resource_tracker",
                                           "from multiprocessing.semaphore_tracker"};
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "-c") == 0) {
            for (size_t k = 0; k < SONDE_ARRAY_LEN(services); k++)
                if (strncmp(argv[i + 1], services[k], strlen(services[k])) == 0) return true;
            return false;
        }
    return false;
}

int sonde_boot_exec_env_gil(PyObject *argv, PyObject *env, bool spawn)
{
    if (!boot_handover.pid || boot_handover.pid != getpid() || !PyDict_Check(env)) return 0;
    if (spawn && !sonde_children_follow()) return 0; /* --no-subprocesses */
    /* a new process, or an exec in a child: its profile goes to the collector */
    bool child = spawn || boot_handover.child;
    /* the new program's word, from its command line */
    Py_ssize_t n = PySequence_Check(argv) ? PySequence_Size(argv) : -1;
    if (n < 1 || n > INT_MAX - 1) {
        PyErr_Clear();
        return 0;
    }
    PyObject *words = PyList_New(0);
    char **cargv = calloc((size_t)n + 1, sizeof *cargv);
    sonde_buf_t program = SONDE_BUF_INIT, file = SONDE_BUF_INIT, gen = SONDE_BUF_INIT;
    struct boot_env_ctx ctx = {env, PyList_New(0)};
    int rc = -1;
    if (!words || !cargv || !ctx.keep) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_GetItem(argv, i), *bytes = NULL;
        bool ok = item && PyUnicode_FSConverter(item, &bytes) && PyList_Append(words, bytes) == 0;
        Py_XDECREF(item);
        Py_XDECREF(bytes);
        if (!ok) { /* not a command line os.execv takes: its own error follows */
            PyErr_Clear();
            rc = 0;
            goto done;
        }
        cargv[i] = PyBytes_AS_STRING(PyList_GET_ITEM(words, i));
    }
    if (boot_no_site((int)n, cargv)) { /* sonde's boot could not run there */
        rc = 0;
        goto done;
    }
    int word_rc = sonde_launch_program_word((int)n, cargv, &program);
    if (word_rc == -ENOMEM) {
        PyErr_NoMemory();
        goto done;
    }
    if (word_rc < 0) { /* no program (the prompt, --version): not profiled */
        rc = 0;
        goto done;
    }
    if (spawn && boot_multiprocessing_code((int)n, cargv)) {
        /* multiprocessing's own start-up code (spawn_main, the forkserver,
         * the resource tracker) is not the program's: "<string>" is not
         * profiled there, so a worker's idle time is not charged to it */
        sonde_buf_reset(&program);
        sonde_buf_puts(&program, BOOT_MP_PROGRAM);
        if (sonde_buf_error(&program)) {
            PyErr_NoMemory();
            goto done;
        }
    }
    /* the directory the new process hands its profile over in: a new
     * process's, made now if need be; an exec keeps its process's handed
     * one (a child's, or --period's), and the root's own goes with the
     * root's report before the exec (session.c) */
    const char *dir = spawn ? sonde_children_dir_ensure() : sonde_children_dir_handed();
    if (spawn && !dir) { /* not followed: counted once it started */
        rc = 2;
        goto done;
    }
    const char *role = spawn && boot_multiprocessing_service((int)n, cargv) ? "2"
                       : boot_handover.child && sonde_children_role() == SONDE_CHILDREN_SERVICE
                           ? "2"
                           : "1";
    int next = boot_handover.gen + 1;
    if (!child && boot_handover.base &&
        sonde_launch_exec_name(boot_handover.base, next, &file) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    sonde_buf_printf(&gen, "%d", next);
    if (sonde_buf_error(&gen)) {
        PyErr_NoMemory();
        goto done;
    }
    const sonde_launch_env_t target = {boot_env_get, boot_env_set, &ctx};
    char err[256] = "";
    if (sonde_launch_handover(&target, boot_handover.pkg_dir, boot_handover.mode, program.data,
                              boot_handover.options, boot_handover.preload, err, sizeof err) < 0 ||
        (!child && (boot_env_set(&ctx, SONDE_ENV_EXEC_GEN, gen.data) < 0 ||
                    boot_env_set(&ctx, SONDE_ENV_EXEC_BASE,
                                 boot_handover.base ? boot_handover.base : "") < 0 ||
                    boot_env_set(&ctx, SONDE_ENV_EXEC_OUTFILE, file.data ? file.data : "") < 0)) ||
        (dir && boot_env_set(&ctx, SONDE_ENV_COLLECT, dir) < 0) ||
        (child && boot_env_set(&ctx, SONDE_ENV_CHILD, role) < 0)) {
        rc = 0; /* the new program runs unprofiled, as it would anyway */
        goto done;
    }
    rc = 1;
done:
    Py_XDECREF(words);
    Py_XDECREF(ctx.keep);
    free(cargv);
    sonde_buf_free(&program);
    sonde_buf_free(&file);
    sonde_buf_free(&gen);
    return rc;
}

/* Keeps what the boot was handed, for sonde_boot_exec_env_gil; NULL on out
 * of memory (then the interpreter's execs are simply not followed). */
static void boot_keep_handover(const char *boot_paths, const char *mode, const char *options,
                               bool preload, const char *gen, const char *base, const char *collect,
                               bool child)
{
    size_t n = strlen(boot_paths);
    if (n < 6 || strcmp(boot_paths + n - 6, "/_boot") != 0 || strchr(boot_paths, ':')) return;
    free(boot_handover.pkg_dir);
    free(boot_handover.mode);
    free(boot_handover.options);
    free(boot_handover.base);
    free(boot_handover.collect);
    boot_handover.collect = collect && *collect ? strdup(collect) : NULL;
    boot_handover.child = child && boot_handover.collect;
    boot_handover.pkg_dir = strndup(boot_paths, n - 6);
    boot_handover.mode = strdup(mode);
    boot_handover.options = strdup(options);
    boot_handover.base = base && *base ? strdup(base) : NULL;
    boot_handover.preload = preload;
    boot_handover.gen = gen && *gen ? atoi(gen) : 0;
    boot_handover.pid =
        boot_handover.pkg_dir && boot_handover.mode && boot_handover.options ? getpid() : 0;
}

bool sonde_boot_script_failed_gil(void)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *last_value = PySys_GetObject("last_value");         /* borrowed */
    PyObject *last_traceback = PySys_GetObject("last_traceback"); /* borrowed */
    /* The script's source never compiled (no frame ran), or under -m the
     * module's: a SyntaxError (a ValueError for a NUL byte before 3.12)
     * raised with runpy's frames alone. */
    bool no_compile = last_value && (PyErr_GivenExceptionMatches(last_value, PyExc_SyntaxError) ||
                                     PyErr_GivenExceptionMatches(last_value, PyExc_ValueError));
    bool failed = last_value &&
                  (last_traceback == Py_None ||
                   (boot_module_main && no_compile && boot_import_frames_only(last_traceback))) &&
                  !PyErr_GivenExceptionMatches(last_value, PyExc_KeyboardInterrupt);
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
    return failed;
}

/* After os.exec* of this interpreter (exec_gen set): one line saying that
 * the profile from here on is a second report, and where it goes. */
static void boot_exec_note(const char *exec_gen, const char *exec_outfile)
{
    if (!*exec_gen || !sonde_prim_fd_is_open(STDERR_FILENO)) return;
    sonde_buf_t line = SONDE_BUF_INIT;
    sonde_buf_printf(&line,
                     "sonde: the program started this interpreter again (os.exec*, pid %d); "
                     "what runs from here is profiled as a second run, ",
                     (int)getpid());
    if (*exec_outfile)
        sonde_buf_printf(&line, "written to %s\n", exec_outfile);
    else
        sonde_buf_puts(&line, "reported when it ends\n");
    if (!sonde_buf_error(&line)) (void)sonde_write_fd(STDERR_FILENO, line.data, line.len);
    sonde_buf_free(&line);
}

int sonde_boot_gil(void)
{
    char *options = NULL, *boot_paths = NULL, *had = NULL, *orig = NULL, *program = NULL;
    char *mode = NULL, *exec_gen = NULL, *exec_base = NULL, *exec_outfile = NULL;
    char *collect = NULL, *child = NULL;
    sonde_trace_opts_t trace_opts = {0};
    int rc = -1;
    const char *env = getenv(SONDE_ENV_OPTIONS);
    if (!env) /* not a `sonde run`: our _boot directory is on someone's path */
        return boot_chain_sitecustomize() ? 1 : 0;
    char blocked[32] = "";
    const char *blocked_env = getenv(SONDE_ENV_BLOCKED);
    snprintf(blocked, sizeof blocked, "%s", blocked_env ? blocked_env : "");
#define BOOT_DUP(var, name)                                                                        \
    do {                                                                                           \
        const char *v_ = getenv(name);                                                             \
        var = strdup(v_ ? v_ : "");                                                                \
        if (!var) {                                                                                \
            PyErr_NoMemory();                                                                      \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)
    BOOT_DUP(options, SONDE_ENV_OPTIONS);
    BOOT_DUP(boot_paths, SONDE_ENV_BOOT_PATHS);
    BOOT_DUP(had, SONDE_ENV_HAD_PYPATH);
    BOOT_DUP(orig, SONDE_ENV_PYTHONPATH);
    BOOT_DUP(program, SONDE_ENV_PROGRAM);
    BOOT_DUP(mode, SONDE_ENV_MODE);
    BOOT_DUP(exec_gen, SONDE_ENV_EXEC_GEN);
    BOOT_DUP(exec_base, SONDE_ENV_EXEC_BASE);
    BOOT_DUP(exec_outfile, SONDE_ENV_EXEC_OUTFILE);
    BOOT_DUP(collect, SONDE_ENV_COLLECT);
    BOOT_DUP(child, SONDE_ENV_CHILD);
#undef BOOT_DUP
    bool is_child = *collect && (strcmp(child, "1") == 0 || strcmp(child, "2") == 0);
    bool preload = getenv(SONDE_ENV_HAD_PRELOAD) != NULL;
    boot_module_main = strncmp(program, "-m ", 3) == 0;
    if (boot_restore_environ(had, orig) < 0) goto done;
    boot_restore_sys_path(boot_paths);
    bool chained = boot_chain_sitecustomize();

    char err[512] = "";
    if (strcmp(mode, "trace") == 0) {
        int trace_rc = sonde_trace_opts_decode(&trace_opts, options, err, sizeof err);
        if (trace_rc == -ENOMEM) {
            PyErr_NoMemory();
            goto done;
        }
        if (trace_rc < 0) {
            PyErr_Format(PyExc_RuntimeError, "sonde: %s", err);
            goto done;
        }
        static const sonde_trace_host_t host = {sonde_exec_wrap_gil, sonde_exec_unwrap_gil,
                                                sonde_ext_gzip, sonde_boot_script_failed_gil};
        if (sonde_trace_boot_gil(&host, &trace_opts, program, *exec_outfile ? exec_outfile : NULL) <
            0)
            goto done;
        boot_keep_handover(boot_paths, mode, options, preload, exec_gen,
                           *exec_gen ? exec_base : sonde_trace_boot_outfile(), NULL, false);
        boot_exec_note(exec_gen, exec_outfile);
        rc = chained ? 1 : 0;
        goto done;
    }
    sonde_run_opts_t opts;
    int decode_rc = sonde_run_opts_decode(&opts, options, err, sizeof err);
    if (decode_rc == 0) {
        const char *shown = strncmp(program, "-m ", 3) == 0 ? program + 3 : program;
        if (*exec_outfile) opts.outfile = exec_outfile;
        if (is_child) opts.outfile = NULL;
        sonde_children_init(!opts.no_subprocesses, collect,
                            !is_child                 ? SONDE_CHILDREN_ROOT
                            : strcmp(child, "2") == 0 ? SONDE_CHILDREN_SERVICE
                                                      : SONDE_CHILDREN_CHILD,
                            options);
        sonde_session_set_collector(*collect ? collect : NULL, is_child,
                                    *exec_gen ? atoi(exec_gen) : 0);
        if (sonde_session_start_gil(&opts, true, shown) == 0) {
            rc = chained ? 1 : 0;
            boot_keep_handover(boot_paths, mode, options, preload, exec_gen,
                               *exec_gen ? exec_base : sonde_session_outfile(), collect, is_child);
            if (!is_child) boot_exec_note(exec_gen, exec_outfile);
        }
    } else if (decode_rc == -ENOMEM) {
        PyErr_NoMemory();
    } else {
        PyErr_Format(PyExc_RuntimeError, "sonde: %s", err);
    }
    sonde_run_opts_free(&opts);
done:
    boot_release_signals(blocked);
    sonde_trace_opts_free(&trace_opts);
    free(options);
    free(boot_paths);
    free(had);
    free(orig);
    free(program);
    free(mode);
    free(exec_gen);
    free(exec_base);
    free(exec_outfile);
    free(collect);
    free(child);
    return rc;
}

int sonde_boot_fork_child_gil(void)
{
    const char *dir = sonde_children_dir();
    if (!boot_handover.pid || !dir || !boot_handover.options) return 0;
    boot_handover.pid = getpid();
    boot_handover.child = true;
    boot_handover.gen = 0;
    if (strcmp(boot_handover.mode, "run") != 0) return 0;
    sonde_run_opts_t opts;
    char err[512] = "";
    if (sonde_run_opts_decode(&opts, boot_handover.options, err, sizeof err) < 0) return 0;
    opts.outfile = NULL;
    int rc = sonde_session_restart_in_child_gil(&opts, dir);
    sonde_run_opts_free(&opts);
    return rc;
}
