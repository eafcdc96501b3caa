/* filter.c — which files are profiled, learnt from the running interpreter.
 *
 * Owns: sonde_filter_init_gil, which fills the sampling core's rule
 * (sonde_codefilter_t, src/sample/filter.c) with the GIL at session start:
 * it asks the interpreter where its standard library and site-packages
 * are, and adds sonde's own package and the options' patterns. The rule
 * itself (and the per-code-id cache the sampler thread and the memory
 * callback ask) lives in the sampling core, shared with the attach reader.
 * By default a file is profiled unless it lies in the standard library,
 * a site-packages/dist-packages directory or sonde itself, or is not a
 * real file ("<frozen ...>", "<string>"; but the code of `-c CODE` is
 * "<string>" and a script read from standard input "<stdin>": the
 * program's own, so that name is profiled; so is an IPython cell,
 * "<ipython-input-N-...>"); --profile-only replaces that rule
 * by "the path contains one of the patterns"; --profile-exclude removes
 * files whose path contains a pattern; --profile-all profiles everything
 * that is a real file.
 */
#include "ext.h"

#include "../core/pathrule.h"

#include <stdlib.h>
#include <string.h>

/* Adds the directory of module `name`'s __file__ (os → the stdlib). */
static int filter_add_module_dir(sonde_filter_t *f, const char *name)
{
    PyObject *mod = PyImport_ImportModule(name);
    if (!mod) {
        PyErr_Clear();
        return 0;
    }
    PyObject *file = PyObject_GetAttrString(mod, "__file__");
    Py_DECREF(mod);
    if (!file) {
        PyErr_Clear();
        return 0;
    }
    int rc = 0;
    const char *text = PyUnicode_Check(file) ? PyUnicode_AsUTF8(file) : NULL;
    if (text) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", text);
        char *slash = strrchr(dir, '/');
        if (slash) {
            *slash = 0;
            rc = sonde_codefilter_add_lib_dir(f, dir);
        }
    } else {
        PyErr_Clear();
    }
    Py_DECREF(file);
    return rc;
}

int sonde_filter_init_gil(sonde_filter_t *f, const sonde_run_opts_t *opts,
                          const char *sonde_pkg_dir, const char *program)
{
    sonde_filechoice_t choice = {opts->profile_all, opts->profile_only, opts->n_profile_only,
                                 opts->profile_exclude, opts->n_profile_exclude};
    memset(f, 0, sizeof *f);
    if (program && strcmp(program, "-c") == 0) f->program_pseudo = "<string>";
    if (program && strcmp(program, "-") == 0) f->program_pseudo = "<stdin>";
    int rc = filter_add_module_dir(f, "os");
    if (rc == 0) rc = sonde_codefilter_add_lib_dir(f, sonde_pkg_dir);
    PyObject *path = PySys_GetObject("path"); /* borrowed */
    if (rc == 0 && path && PyList_Check(path)) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(path) && rc == 0; i++) {
            PyObject *item = PyList_GET_ITEM(path, i);
            const char *text = PyUnicode_Check(item) ? PyUnicode_AsUTF8(item) : NULL;
            if (!text) {
                PyErr_Clear();
                continue;
            }
            if (sonde_path_is_site_dir(text)) rc = sonde_codefilter_add_lib_dir(f, text);
        }
    }
    if (rc == 0) rc = sonde_codefilter_choose(f, &choice);
    if (rc < 0) sonde_filter_free(f);
    return rc;
}

void sonde_filter_free(sonde_filter_t *f)
{
    sonde_codefilter_free(f);
}
