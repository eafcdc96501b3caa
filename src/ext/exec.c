/* exec.c — the profile of what ran is written before os.exec* replaces
 * the process or os._exit ends it.
 *
 * Owns: the wrappers put in place of os.execv and os.execve (every os.exec*
 * function of the os module ends in one of them; os.posix_spawn is not an
 * exec) and of os._exit (no atexit handler runs after it: the session
 * notes its status and writes its report, the tracer writes its
 * statistics, then the real os._exit ends the process; in a forked child
 * it is only the real one) while a `sonde run` session (session.c) or `sonde trace`'s boot
 * profile (src/trace/boot.c) wants them. A wrapper whose target looks
 * runnable (a regular file we may execute: the attempts of os.execvp on
 * the PATH entries where the program is not are let through untouched)
 * has the session and the tracer write their report, then calls the real
 * function; should the exec fail all the same, both go on profiling and
 * the report at the end covers the whole run. The new program inherits
 * nothing of sonde's (the environment was restored at boot and sonde's
 * descriptors are close-on-exec), unless it is this same interpreter
 * running a program: then it gets the launcher's hand-over again in its
 * environment (boot.c, sonde_boot_exec_env_gil; the call is made as
 * execve with that environment) and is profiled as a second run. GIL held throughout; no signal context.
 */
#include "ext.h"

#include "../trace/trace.h"

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

enum { EXEC_V, EXEC_VE, EXEC_EXIT, EXEC_FORK_EXEC, EXEC_SPAWN, EXEC_N };

static const char *const exec_names[EXEC_N] = {"execv", "execve", "_exit", "fork_exec",
                                               "posix_spawn"};
static const char *const exec_modules[EXEC_N] = {"os", "os", "os", "_posixsubprocess", "os"};
/* Set while the real fork_exec runs: a child it forks (which runs the
 * at-fork hooks when there is a preexec_fn) is about to exec, not to be
 * profiled as a fork. */
static _Thread_local int exec_in_fork_exec; /* per thread: another thread's
                                               os.fork() meanwhile is a fork */
static PyObject *exec_real[EXEC_N];         /* owned: the functions found in os */
static PyObject *exec_wrapper[EXEC_N];      /* owned, kept for the process's life */
static int exec_users;                      /* wraps not yet unwrapped */

/* Whether execve() of `path` (an os.exec* path argument: str, bytes, a
 * path-like object or, for execve, a descriptor) can succeed: a regular
 * file with permission to execute. When it cannot be told, true. Never
 * raises. */
static bool exec_target_runs(PyObject *path)
{
    struct stat st;
    bool runs = true;
    PyObject *bytes = NULL;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (PyLong_Check(path)) {
        long fd = PyLong_AsLong(path);
        if (fd >= 0 && fd <= INT_MAX && fstat((int)fd, &st) == 0)
            runs = S_ISREG(st.st_mode) && (st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH));
    } else if (PyUnicode_FSConverter(path, &bytes)) {
        const char *name = PyBytes_AS_STRING(bytes);
        runs = stat(name, &st) == 0 && S_ISREG(st.st_mode) && access(name, X_OK) == 0;
        Py_DECREF(bytes);
    }
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
    return runs;
}

/* Whether path names this interpreter's own executable (the same file). */
static bool exec_same_interpreter(PyObject *path)
{
    struct stat target, self;
    PyObject *bytes = NULL;
    bool same = false;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *exe = PySys_GetObject("executable"); /* borrowed */
    PyObject *exe_bytes = NULL;
    if (!PyLong_Check(path) && PyUnicode_FSConverter(path, &bytes) && exe && PyUnicode_Check(exe) &&
        PyUnicode_FSConverter(exe, &exe_bytes))
        same = stat(PyBytes_AS_STRING(bytes), &target) == 0 &&
               stat(PyBytes_AS_STRING(exe_bytes), &self) == 0 && target.st_dev == self.st_dev &&
               target.st_ino == self.st_ino;
    Py_XDECREF(bytes);
    Py_XDECREF(exe_bytes);
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
    return same;
}

/* os.execv/execve(path, argv[, env]) of this interpreter: the same call
 * made as execve with the environment (a copy of env, or of os.environ)
 * carrying sonde's hand-over, so that the new program is profiled too
 * (boot.c). NULL with *handled false when it does not apply. */
static PyObject *exec_same_python(int which, PyObject *args, PyObject *kwargs, bool *handled)
{
    *handled = false;
    if (kwargs || PyTuple_GET_SIZE(args) != (which == EXEC_VE ? 3 : 2) || !exec_real[EXEC_VE])
        return NULL;
    PyObject *source = NULL; /* owned */
    if (which == EXEC_VE) {
        source = PyTuple_GET_ITEM(args, 2);
        Py_INCREF(source);
    } else {
        PyObject *os = PyImport_ImportModule("os");
        source = os ? PyObject_GetAttrString(os, "environ") : NULL;
        Py_XDECREF(os);
    }
    PyObject *env = source ? PyDict_New() : NULL;
    if (!env || PyDict_Merge(env, source, 1) < 0) {
        PyErr_Clear(); /* not a mapping: the real call reports it */
        Py_XDECREF(env);
        Py_XDECREF(source);
        return NULL;
    }
    Py_DECREF(source);
    int rc = sonde_boot_exec_env_gil(PyTuple_GET_ITEM(args, 1), env, false);
    PyObject *res = NULL;
    if (rc < 0) {
        *handled = true;
    } else if (rc > 0) {
        *handled = true;
        res = PyObject_CallFunctionObjArgs(exec_real[EXEC_VE], PyTuple_GET_ITEM(args, 0),
                                           PyTuple_GET_ITEM(args, 1), env, NULL);
    }
    Py_DECREF(env);
    return res;
}

static PyObject *exec_call(int which, PyObject *args, PyObject *kwargs)
{
    if (which == EXEC_EXIT) {
        PyObject *status = PyTuple_GET_SIZE(args) == 1 && !kwargs ? PyTuple_GET_ITEM(args, 0)
                           : kwargs ? PyDict_GetItemString(kwargs, "status")
                                    : NULL; /* borrowed */
        sonde_session_before_os_exit_gil(status);
        sonde_trace_boot_before_exec_gil();
        return PyObject_Call(exec_real[which], args, kwargs);
    }
    PyObject *path = NULL; /* borrowed */
    if (PyTuple_GET_SIZE(args) > 0)
        path = PyTuple_GET_ITEM(args, 0);
    else if (kwargs)
        path = PyDict_GetItemString(kwargs, "path");
    bool runs = path && exec_target_runs(path);
    if (runs) {
        sonde_session_before_exec_gil();
        sonde_trace_boot_before_exec_gil();
    }
    bool handled = false;
    PyObject *res = NULL;
    if (runs && exec_same_interpreter(path)) res = exec_same_python(which, args, kwargs, &handled);
    if (!handled) res = PyObject_Call(exec_real[which], args, kwargs);
    if (runs) { /* it failed: profiling goes on */
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        sonde_trace_boot_after_exec_gil();
        sonde_session_after_exec_gil();
        PyErr_Clear();
        PyErr_Restore(type, value, tb);
    }
    return res;
}

bool sonde_exec_in_fork_exec(void)
{
    return exec_in_fork_exec != 0;
}

/* Adds "NAME=value" (len bytes) to dict as str; entries without a name
 * are left out, as execve would see them. Returns 0 or -1 (exception). */
static int exec_env_add_entry(PyObject *dict, const char *text, Py_ssize_t len)
{
    const char *eq = memchr(text, '=', (size_t)len);
    if (!eq || eq == text) return 0;
    PyObject *k = PyUnicode_DecodeFSDefaultAndSize(text, eq - text);
    PyObject *v = PyUnicode_DecodeFSDefaultAndSize(eq + 1, len - (eq + 1 - text));
    int rc = k && v ? PyDict_SetItem(dict, k, v) : -1;
    Py_XDECREF(k);
    Py_XDECREF(v);
    return rc;
}

/* A str from a str or bytes (filesystem encoding); NULL with an exception. */
static PyObject *exec_env_str(PyObject *o)
{
    if (PyUnicode_Check(o)) {
        Py_INCREF(o);
        return o;
    }
    if (PyBytes_Check(o)) return PyUnicode_DecodeFSDefault(PyBytes_AS_STRING(o));
    PyErr_SetString(PyExc_TypeError, "not str or bytes");
    return NULL;
}

/* The new process's environment as a new dict of str: env is None (the
 * current C environment, as execve is given it: what os.putenv and C
 * code set included), a sequence of b"NAME=value" (fork_exec) or a
 * mapping of str or bytes (posix_spawn). NULL without an exception when
 * it is none of those (the real call then says what is wrong). */
static PyObject *exec_env_dict(PyObject *env)
{
    extern char **environ;
    PyObject *dict = PyDict_New();
    if (!dict) return NULL;
    if (env == Py_None) {
        for (char **e = environ; e && *e; e++)
            if (exec_env_add_entry(dict, *e, (Py_ssize_t)strlen(*e)) < 0) goto fail;
        return dict;
    }
    if (PyMapping_Check(env) && !PyList_Check(env) && !PyTuple_Check(env)) {
        PyObject *items = PyMapping_Items(env);
        if (!items) goto fail;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
            PyObject *kv = PyList_GET_ITEM(items, i);
            PyObject *k = PyTuple_Check(kv) && PyTuple_GET_SIZE(kv) == 2
                              ? exec_env_str(PyTuple_GET_ITEM(kv, 0))
                              : NULL;
            PyObject *v = k ? exec_env_str(PyTuple_GET_ITEM(kv, 1)) : NULL;
            int rc = k && v ? PyDict_SetItem(dict, k, v) : -1;
            Py_XDECREF(k);
            Py_XDECREF(v);
            if (rc < 0) {
                Py_DECREF(items);
                goto fail;
            }
        }
        Py_DECREF(items);
        return dict;
    }
    PyObject *seq = PySequence_Fast(env, "");
    if (!seq) goto fail;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyBytes_Check(item) ||
            exec_env_add_entry(dict, PyBytes_AS_STRING(item), PyBytes_GET_SIZE(item)) < 0) {
            Py_DECREF(seq);
            goto fail;
        }
    }
    Py_DECREF(seq);
    return dict;
fail:
    PyErr_Clear();
    Py_DECREF(dict);
    return NULL;
}

/* The dict back as a list of b"NAME=value"; NULL with an exception. */
static PyObject *exec_env_list(PyObject *dict)
{
    PyObject *list = PyList_New(0);
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (list && PyDict_Next(dict, &pos, &key, &value)) {
        PyObject *text = PyUnicode_FromFormat("%U=%U", key, value);
        PyObject *bytes = text ? PyUnicode_EncodeFSDefault(text) : NULL;
        Py_XDECREF(text);
        if (!bytes || PyList_Append(list, bytes) < 0) {
            Py_XDECREF(bytes);
            Py_CLEAR(list);
            break;
        }
        Py_DECREF(bytes);
    }
    return list;
}

/* Whether fork_exec's executable list runs this interpreter: the first
 * entry that execve could run is it. */
static bool exec_list_is_us(PyObject *executables)
{
    PyObject *seq = PySequence_Fast(executables, "");
    bool us = false;
    if (!seq) {
        PyErr_Clear();
        return false;
    }
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *path = PySequence_Fast_GET_ITEM(seq, i);
        if (!exec_target_runs(path)) continue;
        us = exec_same_interpreter(path);
        break;
    }
    Py_DECREF(seq);
    return us;
}

/* _posixsubprocess.fork_exec(args, executable_list, close_fds, pass_fds,
 * cwd, env, ...) (the same first six on every version): subprocess and
 * multiprocessing's spawn and forkserver start processes with it. One
 * that runs this interpreter gets the hand-over in its environment (boot.c,
 * spawn) and is profiled as a child of the collector. */
static PyObject *exec_fork_exec(PyObject *self, PyObject *args, PyObject *kwargs)
{
    PyObject *call_args = args, *owned = NULL, *env = NULL;
    bool followed = false, unfollowed = false;
    if ((!kwargs || PyDict_GET_SIZE(kwargs) == 0) && PyTuple_GET_SIZE(args) > 5 &&
        exec_list_is_us(PyTuple_GET_ITEM(args, 1)) &&
        (env = exec_env_dict(PyTuple_GET_ITEM(args, 5)))) {
        int rc = sonde_boot_exec_env_gil(PyTuple_GET_ITEM(args, 0), env, true);
        unfollowed = rc == 2;
        PyObject *list = rc == 1 ? exec_env_list(env) : NULL;
        if (rc < 0 || (rc == 1 && !list)) {
            Py_DECREF(env);
            return NULL;
        }
        if (list && (owned = PyTuple_GetSlice(args, 0, PyTuple_GET_SIZE(args)))) {
            PyObject *old = PyTuple_GET_ITEM(owned, 5);
            PyTuple_SET_ITEM(owned, 5, list);
            Py_DECREF(old);
            call_args = owned;
            followed = true;
        } else {
            Py_XDECREF(list);
        }
        Py_DECREF(env);
        if (PyErr_Occurred()) return NULL;
    }
    exec_in_fork_exec++;
    PyObject *res = PyObject_Call(exec_real[EXEC_FORK_EXEC], call_args, kwargs);
    exec_in_fork_exec--;
    if (res && (followed || unfollowed)) sonde_children_note_spawn(followed);
    Py_XDECREF(owned);
    return res;
}

/* os.posix_spawn(path, argv, env, ...): subprocess uses it from 3.13 when
 * it can (close_fds by POSIX_SPAWN_CLOSEFROM). A path naming this
 * interpreter gets the hand-over in env, as fork_exec above. */
static PyObject *exec_posix_spawn(PyObject *self, PyObject *args, PyObject *kwargs)
{
    PyObject *call_args = args, *owned = NULL, *env = NULL;
    bool followed = false, unfollowed = false;
    if (PyTuple_GET_SIZE(args) == 3 && exec_target_runs(PyTuple_GET_ITEM(args, 0)) &&
        exec_same_interpreter(PyTuple_GET_ITEM(args, 0)) &&
        (env = exec_env_dict(PyTuple_GET_ITEM(args, 2)))) {
        int rc = sonde_boot_exec_env_gil(PyTuple_GET_ITEM(args, 1), env, true);
        if (rc < 0) {
            Py_DECREF(env);
            return NULL;
        }
        unfollowed = rc == 2;
        if (rc == 1 &&
            (owned = PyTuple_Pack(3, PyTuple_GET_ITEM(args, 0), PyTuple_GET_ITEM(args, 1), env))) {
            call_args = owned;
            followed = true;
        }
        Py_DECREF(env);
        if (PyErr_Occurred()) return NULL;
    }
    PyObject *res = PyObject_Call(exec_real[EXEC_SPAWN], call_args, kwargs);
    if (res && (followed || unfollowed)) sonde_children_note_spawn(followed);
    Py_XDECREF(owned);
    return res;
}

static PyObject *exec_execv(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return exec_call(EXEC_V, args, kwargs);
}

static PyObject *exec_execve(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return exec_call(EXEC_VE, args, kwargs);
}

static PyObject *exec_exit(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return exec_call(EXEC_EXIT, args, kwargs);
}

static PyMethodDef exec_defs[EXEC_N] = {
    {"execv", (PyCFunction)(void (*)(void))exec_execv, METH_VARARGS | METH_KEYWORDS,
     "Execute an executable path with arguments, replacing current process.\n\n"
     "(sonde: writes the profile first, then calls os.execv.)"},
    {"execve", (PyCFunction)(void (*)(void))exec_execve, METH_VARARGS | METH_KEYWORDS,
     "Execute an executable path with arguments, replacing current process.\n\n"
     "(sonde: writes the profile first, then calls os.execve.)"},
    {"_exit", (PyCFunction)(void (*)(void))exec_exit, METH_VARARGS | METH_KEYWORDS,
     "Exit to the system with specified status, without normal exit processing.\n\n"
     "(sonde: writes the profile first, then calls os._exit.)"},
    {"fork_exec", (PyCFunction)(void (*)(void))exec_fork_exec, METH_VARARGS | METH_KEYWORDS,
     "Spawn a fresh new child process.\n\n"
     "(sonde: a child running this interpreter is profiled too.)"},
    {"posix_spawn", (PyCFunction)(void (*)(void))exec_posix_spawn, METH_VARARGS | METH_KEYWORDS,
     "Execute the program specified by path in a new process.\n\n"
     "(sonde: a child running this interpreter is profiled too.)"},
};

int sonde_exec_wrap_gil(void)
{
    if (exec_users++ > 0) return 0;
    for (int i = 0; i < EXEC_N; i++) {
        PyObject *os = PyImport_ImportModule(exec_modules[i]);
        if (!os) {
            if (i < EXEC_FORK_EXEC) goto error;
            PyErr_Clear(); /* no _posixsubprocess here */
            continue;
        }
        PyObject *current = PyObject_GetAttrString(os, exec_names[i]);
        if (!current) {
            PyErr_Clear(); /* no such function here: nothing to wrap */
            Py_DECREF(os);
            continue;
        }
        if (!exec_wrapper[i]) { /* bound like the real one: profilers name it the same */
            PyObject *self = PyCFunction_Check(current) ? PyCFunction_GET_SELF(current) : NULL;
            PyObject *module = PyObject_GetAttrString(current, "__module__");
            if (!module) PyErr_Clear();
            exec_wrapper[i] = PyCFunction_NewEx(&exec_defs[i], self, module);
            Py_XDECREF(module);
        }
        if (!exec_wrapper[i]) {
            Py_DECREF(current);
            Py_DECREF(os);
            goto error;
        }
        if (current != exec_wrapper[i])
            Py_XSETREF(exec_real[i], current);
        else
            Py_DECREF(current);
        if (PyObject_SetAttrString(os, exec_names[i], exec_wrapper[i]) < 0) {
            Py_DECREF(os);
            goto error;
        }
        Py_DECREF(os);
    }
    return 0;
error:
    exec_users--;
    return -1;
}

void sonde_exec_unwrap_gil(void)
{
    if (exec_users == 0 || --exec_users > 0) return;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    for (int i = 0; i < EXEC_N; i++) {
        PyObject *os = exec_real[i] ? PyImport_ImportModule(exec_modules[i]) : NULL;
        PyObject *current = os ? PyObject_GetAttrString(os, exec_names[i]) : NULL;
        if (current == exec_wrapper[i] &&
            PyObject_SetAttrString(os, exec_names[i], exec_real[i]) < 0)
            PyErr_Clear();
        Py_XDECREF(current);
        Py_XDECREF(os);
        PyErr_Clear();
    }
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
}
