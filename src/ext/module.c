/* module.c — the sonde._sonde extension module: its Python-facing API.
 *
 * Owns: PyInit__sonde and the functions Python code calls: start(), stop(),
 * profile (a context manager), main() (`python3 -m sonde`: the hand-over
 * to the sonde command, which the module does not link), _boot() (the
 * sitecustomize hook), _span_begin/_span_end/_spans_text (per-test figures
 * for sonde/pytest_plugin.py; spans.c). This is an edge: it turns the core's -errno codes
 * into Python exceptions. start()'s keywords are checked by `sonde run`'s
 * option parser (src/launch/options.c), not here. GIL held in every
 * function here.
 */
#include "ext.h"

#include "../report/report.h"
#include "../trace/trace.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char sonde_ext_pkg_dir[4096];

/* ---- start / stop -------------------------------------------------------------- */

/* sonde.start()'s keywords become the words of `sonde run`'s options,
 * parsed by the same C code (src/launch/options.c): the same values are
 * accepted and refused, with the same messages. The words are bytes
 * objects kept alive in a list. */
typedef struct module_words {
    PyObject *keep; /* owned: list of bytes */
    char **argv;    /* owned array; the strings are keep's */
    int argc, cap;
} module_words_t;

/* Appends a word (an str, encoded as a file name; or bytes). Returns 0 or
 * -1 with an exception. */
static int module_word(module_words_t *w, PyObject *word)
{
    PyObject *bytes = NULL;
    if (PyBytes_Check(word)) {
        Py_INCREF(word);
        bytes = word;
    } else if (!PyUnicode_FSConverter(word, &bytes)) {
        return -1;
    }
    int rc = PyList_Append(w->keep, bytes);
    Py_DECREF(bytes);
    if (rc < 0) return -1;
    if (w->argc == w->cap) {
        int cap = w->cap ? 2 * w->cap : 16;
        char **grown = realloc(w->argv, (size_t)cap * sizeof *grown);
        if (!grown) {
            PyErr_NoMemory();
            return -1;
        }
        w->argv = grown;
        w->cap = cap;
    }
    w->argv[w->argc++] = PyBytes_AS_STRING(bytes);
    return 0;
}

static int module_word_text(module_words_t *w, const char *text)
{
    PyObject *word = PyBytes_FromString(text);
    if (!word) return -1;
    int rc = module_word(w, word);
    Py_DECREF(word);
    return rc;
}

/* An option and its value: the value as Python's str() of the object (a
 * number keeps the spelling the user gave it). */
static int module_word_valued(module_words_t *w, const char *option, PyObject *value)
{
    PyObject *text = PyObject_Str(value);
    if (!text) return -1;
    int rc = module_word_text(w, option);
    if (rc == 0) rc = module_word(w, text);
    Py_DECREF(text);
    return rc;
}

/* Whether value is an int (or, with real, a float), as the keyword what
 * needs; if not, raises TypeError. */
static bool module_is_number(PyObject *value, bool real, const char *what)
{
    if (PyLong_Check(value) && !PyBool_Check(value)) return true;
    if (real && PyFloat_Check(value)) return true;
    PyErr_Format(PyExc_TypeError, "sonde: %s must be %s, not %.100s", what,
                 real ? "a number" : "an int", Py_TYPE(value)->tp_name);
    return false;
}

/* profile_only / profile_exclude: a str ("a,b") or a sequence of str; each
 * item becomes one option word (commas separate patterns, as on the
 * command line); empty items are skipped. */
static int module_word_patterns(module_words_t *w, const char *option, PyObject *arg,
                                const char *what)
{
    if (!arg || arg == Py_None) return 0;
    PyObject *items = PyUnicode_Check(arg) ? PyList_New(0) : PySequence_List(arg);
    if (items && PyUnicode_Check(arg) && PyList_Append(items, arg) < 0) Py_CLEAR(items);
    if (!items) {
        PyErr_Format(PyExc_TypeError, "sonde: %s must be a string or a list of strings", what);
        return -1;
    }
    int rc = 0;
    for (Py_ssize_t i = 0; rc == 0 && i < PyList_GET_SIZE(items); i++) {
        PyObject *item = PyList_GET_ITEM(items, i);
        if (!PyUnicode_Check(item)) {
            PyErr_Format(PyExc_TypeError, "sonde: %s must be a string or a list of strings", what);
            rc = -1;
        } else if (PyUnicode_GetLength(item) > 0) {
            rc = module_word_text(w, option);
            if (rc == 0) rc = module_word(w, item);
        }
    }
    Py_DECREF(items);
    return rc;
}

/* options: `sonde run`'s options as the words of a command line (a
 * sequence of str, ["--memory", "--interval", "0.005"]), after those the
 * keywords gave. Returns 0 or -1 with an exception. */
static int module_word_options(module_words_t *w, PyObject *options)
{
    if (options == Py_None) return 0;
    PyObject *items = PyUnicode_Check(options) ? NULL : PySequence_List(options);
    if (!items) {
        PyErr_Clear();
        PyErr_SetString(PyExc_TypeError, "sonde: options must be a list of strings");
        return -1;
    }
    int rc = 0;
    for (Py_ssize_t i = 0; rc == 0 && i < PyList_GET_SIZE(items); i++) {
        PyObject *item = PyList_GET_ITEM(items, i);
        if (!PyUnicode_Check(item)) {
            PyErr_SetString(PyExc_TypeError, "sonde: options must be a list of strings");
            rc = -1;
        } else {
            rc = module_word(w, item);
        }
    }
    Py_DECREF(items);
    return rc;
}

/* Parses the words gathered in w as `sonde run`'s options into opts.
 * Returns 0, or -1 with ValueError (MemoryError). */
static int module_parse_words(const module_words_t *w, sonde_run_opts_t *opts)
{
    char err[512] = "";
    int rc = sonde_run_opts_parse(opts, w->argc, w->argv, false, err, sizeof err);
    if (rc == -ENOMEM) {
        PyErr_NoMemory();
        return -1;
    }
    if (rc < 0 || w->argc > opts->n_option_tokens) {
        PyErr_Format(PyExc_ValueError, "sonde: %s", rc < 0 ? err : "unexpected argument");
        return -1;
    }
    return 0;
}

static PyObject *module_start(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"interval",
                             "outfile",
                             "json",
                             "virtual_time",
                             "profile_all",
                             "profile_only",
                             "profile_exclude",
                             "cpu_percent_threshold",
                             "all_lines",
                             "stacks",
                             "memory",
                             "malloc_threshold",
                             "gpu",
                             "verbose",
                             "format",
                             "options",
                             "other_threads",
                             "gc",
                             "program",
                             NULL};
    PyObject *interval = NULL, *threshold = NULL, *malloc_threshold = NULL;
    PyObject *outfile = Py_None, *only = Py_None, *exclude = Py_None, *gpu = Py_None;
    PyObject *format = Py_None, *options = Py_None;
    const char *program = NULL;
    int json = 0, virtual_time = 0, profile_all = 0, all_lines = 0, stacks = 0, memory = 0;
    int verbose = 0, other_threads = 1, gc = 0;
    if (!PyArg_ParseTupleAndKeywords(
            args, kwargs, "|OOpppOOOpppOOpOOppz:start", kwlist, &interval, &outfile, &json,
            &virtual_time, &profile_all, &only, &exclude, &threshold, &all_lines, &stacks, &memory,
            &malloc_threshold, &gpu, &verbose, &format, &options, &other_threads, &gc, &program))
        return NULL;
    if ((interval && !module_is_number(interval, true, "interval")) ||
        (threshold && !module_is_number(threshold, true, "cpu_percent_threshold")) ||
        (malloc_threshold && !module_is_number(malloc_threshold, false, "malloc_threshold")))
        return NULL;
    if (sonde_session_from_run()) Py_RETURN_NONE; /* `sonde run` already profiles */

    module_words_t w = {PyList_New(0), NULL, 0, 0};
    sonde_run_opts_t opts;
    PyObject *result = NULL;
    sonde_run_opts_default(&opts);
    if (!w.keep) return NULL;
    if ((interval && module_word_valued(&w, "--interval", interval) < 0) ||
        (outfile != Py_None &&
         (module_word_text(&w, "--output") < 0 || module_word(&w, outfile) < 0)) ||
        (json && module_word_text(&w, "--json") < 0) ||
        (format != Py_None && module_word_valued(&w, "--format", format) < 0) ||
        (virtual_time && module_word_text(&w, "--virtual-time") < 0) ||
        (profile_all && module_word_text(&w, "--profile-all") < 0) ||
        module_word_patterns(&w, "--profile-only", only, "profile_only") < 0 ||
        module_word_patterns(&w, "--profile-exclude", exclude, "profile_exclude") < 0 ||
        (threshold && module_word_valued(&w, "--cpu-percent-threshold", threshold) < 0) ||
        (all_lines && module_word_text(&w, "--all-lines") < 0) ||
        (stacks && module_word_text(&w, "--stacks") < 0) ||
        (memory && module_word_text(&w, "--memory") < 0) ||
        (malloc_threshold && module_word_valued(&w, "--malloc-threshold", malloc_threshold) < 0) ||
        (verbose && module_word_text(&w, "--verbose") < 0) ||
        (gc && module_word_text(&w, "--gc") < 0))
        goto done;
    if (gpu != Py_None) {
        int on = PyObject_IsTrue(gpu);
        if (on < 0 || module_word_text(&w, on ? "--gpu" : "--no-gpu") < 0) goto done;
    }
    if (module_word_options(&w, options) < 0 || module_parse_words(&w, &opts) < 0) goto done;
    int rc = 0;
    if (opts.outfile && (rc = sonde_check_output(opts.outfile)) < 0) {
        PyErr_Format(PyExc_OSError, "sonde: cannot write the report to '%s': %s", opts.outfile,
                     strerror(-rc));
        goto done;
    }
    opts.prior_threads_out = !other_threads;
    if (sonde_session_start_gil(&opts, false, program && *program ? program : NULL) < 0) goto done;
    Py_INCREF(Py_None);
    result = Py_None;
done:
    sonde_run_opts_free(&opts);
    free(w.argv);
    Py_DECREF(w.keep);
    return result;
}

/* _option_words(words): how many leading words of the list are `sonde run`'s
 * options (a "--" that ends them included), for `%sonde OPTIONS STATEMENT`
 * (sonde/_ipython.py), which runs the rest. Raises ValueError with the
 * parser's message when the options are wrong. */
static PyObject *module_option_words(PyObject *self, PyObject *words)
{
    module_words_t w = {PyList_New(0), NULL, 0, 0};
    sonde_run_opts_t opts;
    PyObject *result = NULL;
    char err[512] = "";
    sonde_run_opts_default(&opts);
    if (!w.keep) return NULL;
    if (module_word_options(&w, words) < 0) goto done;
    int rc = sonde_run_opts_parse(&opts, w.argc, w.argv, false, err, sizeof err);
    if (rc == -ENOMEM)
        PyErr_NoMemory();
    else if (rc < 0)
        PyErr_Format(PyExc_ValueError, "sonde: %s", err);
    else
        result = PyLong_FromLong(opts.n_option_tokens);
done:
    sonde_run_opts_free(&opts);
    free(w.argv);
    Py_DECREF(w.keep);
    return result;
}

static PyObject *module_stop(PyObject *self, PyObject *unused)
{
    if (sonde_session_from_run()) Py_RETURN_NONE;
    if (sonde_session_stop_gil() < 0) return NULL;
    Py_RETURN_NONE;
}

/* ---- spans: per-test figures for the pytest plugin ---------------------------- */

/* _span_begin(name): opens a span of the running session (closing the
 * open one). Returns True, or False when no session runs. */
static PyObject *module_span_begin(PyObject *self, PyObject *arg)
{
    PyObject *bytes = NULL;
    if (!PyUnicode_FSConverter(arg, &bytes)) return NULL;
    int rc = sonde_spans_begin_gil(PyBytes_AS_STRING(bytes));
    Py_DECREF(bytes);
    if (rc < 0) return NULL;
    return PyBool_FromLong(rc);
}

static PyObject *module_span_end(PyObject *self, PyObject *unused)
{
    sonde_spans_end_gil();
    Py_RETURN_NONE;
}

/* _spans_text(n_spans, n_lines, width): the summary of the n_spans
 * longest spans, lines clipped to width columns (src/report/spans.c), ""
 * without a session or spans. */
static PyObject *module_spans_text(PyObject *self, PyObject *args)
{
    int n_spans = 0, n_lines = 0, width = 0;
    if (!PyArg_ParseTuple(args, "iii:_spans_text", &n_spans, &n_lines, &width)) return NULL;
    sonde_buf_t out = SONDE_BUF_INIT;
    int rc = sonde_spans_text_gil(&out, n_spans, n_lines, width);
    PyObject *text = NULL;
    if (rc < 0 || sonde_buf_error(&out))
        PyErr_NoMemory();
    else
        text = PyUnicode_DecodeFSDefaultAndSize(out.data ? out.data : "", (Py_ssize_t)out.len);
    sonde_buf_free(&out);
    return text;
}

/* ---- profile: `with sonde.profile(outfile=...):` ---------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *kwargs; /* owned; the arguments for start() */
    bool started;
} module_profile_t;

static PyObject *module_profile_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    if (PyTuple_GET_SIZE(args) != 0) {
        PyErr_SetString(PyExc_TypeError, "sonde.profile() takes keyword arguments only");
        return NULL;
    }
    module_profile_t *self = (module_profile_t *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->kwargs = kwargs ? PyDict_Copy(kwargs) : PyDict_New();
    if (!self->kwargs) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static void module_profile_dealloc(module_profile_t *self)
{
    Py_XDECREF(self->kwargs);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *module_profile_enter(module_profile_t *self, PyObject *unused)
{
    PyObject *args = PyTuple_New(0);
    if (!args) return NULL;
    PyObject *res = module_start(NULL, args, self->kwargs);
    Py_DECREF(args);
    if (!res) return NULL;
    Py_DECREF(res);
    self->started = true;
    Py_INCREF(self);
    return (PyObject *)self;
}

static PyObject *module_profile_exit(module_profile_t *self, PyObject *args)
{
    if (self->started) {
        self->started = false;
        PyObject *res = module_stop(NULL, NULL);
        if (!res) return NULL;
        Py_DECREF(res);
    }
    Py_RETURN_FALSE;
}

static PyMethodDef module_profile_methods[] = {
    {"__enter__", (PyCFunction)module_profile_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)module_profile_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject module_profile_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sonde.profile",
    .tp_basicsize = sizeof(module_profile_t),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "profile(**options): a context manager that profiles its block.\n\n"
              "Takes the keyword arguments of sonde.start(); the report is written\n"
              "when the block ends (to outfile, else to standard error).",
    .tp_new = module_profile_new,
    .tp_dealloc = (destructor)module_profile_dealloc,
    .tp_methods = module_profile_methods,
};

/* ---- main and boot --------------------------------------------------------------------- */

/* The command sonde/__main__.py hands over to: <prefix>/bin/sonde, the
 * package lying two, three or four levels below <prefix>, as the command
 * looks for it (src/cli/start.c): <prefix>/lib/sonde (the build tree),
 * <prefix>/lib/sonde/sonde (`make install`, and Debian's
 * lib/python3/dist-packages), <prefix>/lib/python3.N/site-packages/sonde
 * (`pip install`: a venv, ~/.local). */
#define MODULE_COMMAND_REL "/bin/sonde"
#define MODULE_COMMAND_UP_MIN 2
#define MODULE_COMMAND_UP_MAX 4

int sonde_ext_command_path(char *buf, size_t len)
{
    char nearest[sizeof sonde_ext_pkg_dir + sizeof MODULE_COMMAND_REL] = "";
    if ((size_t)snprintf(buf, len, "%s", sonde_ext_pkg_dir) >= len) return -ENAMETOOLONG;
    for (int up = 1; up <= MODULE_COMMAND_UP_MAX; up++) {
        char *slash = strrchr(buf, '/');
        if (!slash || slash == buf) break;
        *slash = 0;
        if (up < MODULE_COMMAND_UP_MIN) continue;
        size_t used = strlen(buf);
        if ((size_t)snprintf(buf + used, len - used, MODULE_COMMAND_REL) >= len - used)
            return -ENAMETOOLONG;
        if (access(buf, X_OK) == 0) return 0;
        if (!nearest[0]) snprintf(nearest, sizeof nearest, "%s", buf);
        buf[used] = 0;
    }
    snprintf(buf, len, "%s", nearest[0] ? nearest : "<prefix>" MODULE_COMMAND_REL);
    return -ENOENT;
}

/* Flushes sys.stdout and sys.stderr: exec replaces this process. */
static void module_flush_std_streams(void)
{
    static const char *const names[] = {"stdout", "stderr"};
    for (size_t i = 0; i < SONDE_ARRAY_LEN(names); i++) {
        PyObject *stream = PySys_GetObject(names[i]); /* borrowed */
        PyObject *res =
            stream && stream != Py_None ? PyObject_CallMethod(stream, "flush", NULL) : NULL;
        if (!res) PyErr_Clear();
        Py_XDECREF(res);
    }
}

/* main(argv), for `python3 -m sonde ...`: the module links no command
 * line; it replaces this process with the sonde command installed beside
 * the package, told to use this interpreter (`sonde --python
 * sys.executable ...`), so that `python3 -m sonde run app.py` is `sonde run
 * app.py` with this python. Returns (exit status 2, after one line on
 * stderr) only when the command is missing or cannot be started. */
static PyObject *module_main(PyObject *self, PyObject *arg)
{
    char command[sizeof sonde_ext_pkg_dir + sizeof MODULE_COMMAND_REL];
    PyObject *list = PySequence_List(arg);
    if (!list) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(list);
    /* command, --python, exe, argv[1..n-1], NULL */
    char **argv = calloc((size_t)n + 4, sizeof *argv);
    PyObject *keep = PyList_New(0);
    PyObject *result = NULL;
    if (!argv || !keep) {
        PyErr_NoMemory();
        goto done;
    }
    int found = sonde_ext_command_path(command, sizeof command);
    int argc = 0;
    argv[argc++] = command;
    PyObject *exe = PySys_GetObject("executable"); /* borrowed */
    if (exe && PyUnicode_Check(exe) && PyUnicode_GetLength(exe) > 0) {
        PyObject *bytes = NULL;
        if (!PyUnicode_FSConverter(exe, &bytes)) goto done;
        int rc = PyList_Append(keep, bytes);
        Py_DECREF(bytes);
        if (rc < 0) goto done;
        argv[argc++] = "--python";
        argv[argc++] = PyBytes_AS_STRING(bytes);
    }
    for (Py_ssize_t i = 1; i < n; i++) {
        PyObject *bytes = NULL;
        if (!PyUnicode_FSConverter(PyList_GET_ITEM(list, i), &bytes)) goto done;
        int rc = PyList_Append(keep, bytes);
        argv[argc++] = PyBytes_AS_STRING(bytes);
        Py_DECREF(bytes);
        if (rc < 0) goto done;
    }
    module_flush_std_streams();
    int err = found < 0 ? -found : (execv(command, argv), errno);
    fprintf(stderr,
            "sonde: cannot run the sonde command %s: %s (`python3 -m sonde` hands over to the "
            "command installed beside the package %s; build it with 'make')\n",
            command, strerror(err), sonde_ext_pkg_dir);
    result = PyLong_FromLong(2);
done:
    free(argv);
    Py_XDECREF(keep);
    Py_DECREF(list);
    return result;
}

/* Called by sonde/_boot/sitecustomize.py. When no other sitecustomize
 * exists, raises ImportError(name="sitecustomize") so that site.py leaves
 * sys.modules exactly as plain Python would. A failure to start profiling
 * is one line on stderr and exit status 2, before the program runs. */
static PyObject *module_boot(PyObject *self, PyObject *unused)
{
    int rc = sonde_boot_gil();
    if (rc < 0) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyObject *text = value ? PyObject_Str(value) : NULL;
        const char *msg = text ? PyUnicode_AsUTF8(text) : NULL;
        if (!msg) msg = "cannot start profiling";
        fflush(stdout);
        fprintf(stderr, "%s%s\n", strncmp(msg, "sonde: ", 7) == 0 ? "" : "sonde: ", msg);
        fflush(stderr);
        exit(2);
    }
    if (rc == 0) {
        PyObject *name = PyUnicode_FromString("sitecustomize");
        PyObject *msg = PyUnicode_FromString("No module named 'sitecustomize'");
        if (name && msg) PyErr_SetImportError(msg, name, Py_None);
        Py_XDECREF(name);
        Py_XDECREF(msg);
        return NULL;
    }
    Py_RETURN_NONE;
}

/* _inject_start(dir, options, pid): `sonde attach --inject`'s file, run
 * by the target at a safe point (PEP 768), starts a session whose profile
 * goes to dir (the command's private directory) at _inject_stop() or at
 * the target's exit; once the command (pid) is gone, the session samples
 * no more. options: `sonde run`'s options as words. Raises RuntimeError
 * when a session already runs here. */
static PyObject *module_inject_start(PyObject *self, PyObject *args)
{
    (void)self;
    const char *dir = NULL;
    PyObject *options = NULL;
    int watch = 0;
    if (!PyArg_ParseTuple(args, "sOi:_inject_start", &dir, &options, &watch)) return NULL;
    if (sonde_session_injected_into(dir)) Py_RETURN_NONE; /* started already */
    sonde_session_drop_abandoned_gil();                   /* a session whose command was killed */
    module_words_t w = {PyList_New(0), NULL, 0, 0};
    sonde_run_opts_t opts;
    PyObject *result = NULL;
    sonde_run_opts_default(&opts);
    if (!w.keep) return NULL;
    if (module_word_options(&w, options) < 0 || module_parse_words(&w, &opts) < 0) goto done;
    sonde_session_set_collector(dir, true, 0);
    sonde_session_set_injected((pid_t)watch);
    if (sonde_session_start_gil(&opts, false, NULL) < 0) {
        sonde_session_set_collector(NULL, false, 0);
        goto done;
    }
    sonde_session_set_collector(NULL, false, 0);
    Py_INCREF(Py_None);
    result = Py_None;
done:
    sonde_run_opts_free(&opts);
    free(w.argv);
    Py_DECREF(w.keep);
    return result;
}

/* _inject_stop(dir): the end of the session _inject_start(dir) began: its
 * profile is handed to dir. Nothing when that session does not run here
 * (stopped already, or a session of the program's own). */
static PyObject *module_inject_stop(PyObject *self, PyObject *args)
{
    (void)self;
    const char *dir = NULL;
    if (!PyArg_ParseTuple(args, "s:_inject_stop", &dir)) return NULL;
    if (sonde_session_injected_into(dir) && sonde_session_stop_gil() < 0) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"start", (PyCFunction)(void (*)(void))module_start, METH_VARARGS | METH_KEYWORDS,
     "start(interval=0.01, outfile=None, json=False, virtual_time=False,\n"
     "      profile_all=False, profile_only=None, profile_exclude=None,\n"
     "      cpu_percent_threshold=1.0, all_lines=False, stacks=False,\n"
     "      memory=False, malloc_threshold=524288, gpu=None, verbose=False,\n"
     "      format=None, options=None, other_threads=True, gc=False, program=None)\n\n"
     "Starts profiling this process. Under `sonde run` it does nothing.\n"
     "The keywords are `sonde run`'s options, checked by the same code:\n"
     "format is one of text, json, html, svg, folded, speedscope (the last\n"
     "three record call stacks); without it, outfile's ending picks it.\n"
     "memory=True needs the allocator shim, which only `sonde run --memory`\n"
     "loads (it raises RuntimeError otherwise). gpu=None reports GPU\n"
     "utilisation and memory per line when an NVIDIA GPU is present, True\n"
     "asks for them (saying on stderr why there are none), False turns them\n"
     "off; gc=True adds each line's share of its time spent in the garbage\n"
     "collections it started; verbose=True says on stderr what is profiled.\n"
     "options takes the same options as words of a command line, after the\n"
     "keywords': options=[\"--profile-all\", \"--interval\", \"0.005\"].\n"
     "other_threads=False\n"
     "leaves out the threads already running, but the caller (those a Jupyter\n"
     "kernel runs for itself); threads started later are profiled. program names\n"
     "what the report's header shows (default: sys.argv, the process's command line)."},
    {"_option_words", module_option_words, METH_O,
     "_option_words(words): how many leading words are `sonde run`'s options."},
    {"stop", module_stop, METH_NOARGS,
     "stop(): stops profiling and writes the report (to outfile, else stderr)."},
    {"main", module_main, METH_O,
     "main(argv): runs the sonde command beside this package with this interpreter\n"
     "(python3 -m sonde)."},
    {"_boot", module_boot, METH_NOARGS, "Start-up hook of `sonde run` (internal)."},
    {"_inject_start", module_inject_start, METH_VARARGS,
     "_inject_start(dir, options, pid): `sonde attach --inject` starts profiling here.\n"
     "Internal."},
    {"_inject_stop", module_inject_stop, METH_VARARGS,
     "_inject_stop(dir): `sonde attach --inject` ends it; the profile goes to dir. Internal."},
    {"_span_begin", module_span_begin, METH_O,
     "_span_begin(name): time from now on is also charged to the span `name` (a test;\n"
     "the pytest plugin's --sonde-per-test). False when no session runs. Internal."},
    {"_span_end", module_span_end, METH_NOARGS, "_span_end(): closes the open span. Internal."},
    {"_spans_text", module_spans_text, METH_VARARGS,
     "_spans_text(n_spans, n_lines, width): the n_spans longest spans, each with its\n"
     "n_lines lines of most time, as text of width columns. Internal."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "sonde._sonde",
    "sonde's implementation: a line-level sampling profiler for Python.",
    -1,
    module_methods,
};

/* Finds the package directory from the path of this shared object. */
static void module_find_pkg_dir(void)
{
    Dl_info info;
    if (dladdr((void *)module_find_pkg_dir, &info) && info.dli_fname) {
        snprintf(sonde_ext_pkg_dir, sizeof sonde_ext_pkg_dir, "%s", info.dli_fname);
        char *slash = strrchr(sonde_ext_pkg_dir, '/');
        if (slash) *slash = 0;
    }
}

SONDE_EXPORT PyMODINIT_FUNC PyInit__sonde(void);

SONDE_EXPORT PyMODINIT_FUNC PyInit__sonde(void)
{
    module_find_pkg_dir();
    if (PyType_Ready(&module_profile_type) < 0) return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    Py_INCREF(&module_profile_type);
    if (PyModule_AddObject(m, "profile", (PyObject *)&module_profile_type) < 0 ||
        PyModule_AddStringConstant(m, "__version__", SONDE_VERSION) < 0 ||
        sonde_trace_module_init(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
