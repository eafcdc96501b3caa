/* filter.c — decides which files are profiled.
 *
 * Owns: sonde_filter_t. Built with the GIL at session start (it asks the
 * interpreter where its standard library and site-packages are); queried
 * by the sampler thread once per code object (pure string work, no GIL).
 * By default a file is profiled unless it lies in the standard library,
 * a site-packages/dist-packages directory or sonde itself, or is not a
 * real file ("<frozen ...>", "<string>"); --profile-only replaces that rule
 * by "the path contains one of the patterns"; --profile-exclude removes
 * files whose path contains a pattern; --profile-all profiles everything
 * that is a real file. The pure path tests live in src/core/pathrule.c,
 * shared with the attach reader.
 */
#include "ext.h"

#include "../core/pathrule.h"

#include <stdlib.h>
#include <string.h>

static int filter_add_prefix(sonde_filter_t *f, const char *dir)
{
    if (!dir || !*dir || f->n_lib_prefixes >= SONDE_MAX_LIB_PREFIXES) return 0;
    char *copy = sonde_path_dir_prefix(dir);
    if (!copy) return -ENOMEM;
    for (int i = 0; i < f->n_lib_prefixes; i++)
        if (strcmp(f->lib_prefixes[i], copy) == 0) {
            free(copy);
            return 0;
        }
    f->lib_prefixes[f->n_lib_prefixes++] = copy;
    return 0;
}

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
            rc = filter_add_prefix(f, dir);
        }
    } else {
        PyErr_Clear();
    }
    Py_DECREF(file);
    return rc;
}

static int filter_copy_patterns(char **dst, int *n_dst, const char *const *src, int n_src)
{
    for (int i = 0; i < n_src; i++) {
        dst[i] = strdup(src[i]);
        if (!dst[i]) return -ENOMEM;
        *n_dst = i + 1;
    }
    return 0;
}

int sonde_filter_init_gil(sonde_filter_t *f, const sonde_run_opts_t *opts,
                          const char *sonde_pkg_dir)
{
    memset(f, 0, sizeof *f);
    f->profile_all = opts->profile_all;
    int rc = filter_add_module_dir(f, "os");
    if (rc == 0) rc = filter_add_prefix(f, sonde_pkg_dir);
    PyObject *path = PySys_GetObject("path"); /* borrowed */
    if (rc == 0 && path && PyList_Check(path)) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(path) && rc == 0; i++) {
            PyObject *item = PyList_GET_ITEM(path, i);
            const char *text = PyUnicode_Check(item) ? PyUnicode_AsUTF8(item) : NULL;
            if (!text) {
                PyErr_Clear();
                continue;
            }
            if (sonde_path_is_site_dir(text)) rc = filter_add_prefix(f, text);
        }
    }
    if (rc == 0)
        rc = filter_copy_patterns(f->only, &f->n_only, opts->profile_only, opts->n_profile_only);
    if (rc == 0)
        rc = filter_copy_patterns(f->exclude, &f->n_exclude, opts->profile_exclude,
                                  opts->n_profile_exclude);
    if (rc < 0) sonde_filter_free(f);
    return rc;
}

void sonde_filter_free(sonde_filter_t *f)
{
    for (int i = 0; i < f->n_lib_prefixes; i++) free(f->lib_prefixes[i]);
    for (int i = 0; i < f->n_only; i++) free(f->only[i]);
    for (int i = 0; i < f->n_exclude; i++) free(f->exclude[i]);
    memset(f, 0, sizeof *f);
}

bool sonde_filter_wants(const sonde_filter_t *f, const char *path)
{
    if (sonde_path_is_pseudo(path)) return false;
    for (int i = 0; i < f->n_exclude; i++)
        if (strstr(path, f->exclude[i])) return false;
    if (f->n_only > 0) {
        for (int i = 0; i < f->n_only; i++)
            if (strstr(path, f->only[i])) return true;
        return false;
    }
    if (f->profile_all) return true;
    return !sonde_path_has_prefix(path, f->lib_prefixes, f->n_lib_prefixes);
}
