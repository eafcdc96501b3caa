/* cells.c — the source text of profiled code that has no file: IPython cells.
 *
 * Owns: sonde_cells_collect_gil, sonde_cells_apply, sonde_cells_free. IPython
 * compiles a cell under a name that is no file on disk ("<ipython-input-
 * N-...>" in a terminal, /tmp/ipykernel_PID/HASH.py in a Jupyter kernel)
 * and keeps its text in Python's linecache. At the end of a session (GIL
 * held) session.c copies the linecache entries with no regular file behind
 * them that the session's filter profiles; the report (without the GIL)
 * gives them to the files that finish found no source for on disk.
 * Ordinary code: never in a signal handler or an allocator hook.
 */
#include "ext.h"

#include "../core/buf.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Bounds on what is copied from linecache: a long notebook session keeps
 * every cell it ran. */
#define CELLS_MAX_ENTRIES 4096
#define CELLS_MAX_BYTES ((size_t)16 << 20)

/* Appends one entry: path and the joined lines. Returns 0, 1 (not an entry
 * of that kind, or past the bounds: skipped) or -ENOMEM. */
static int cells_add_gil(sonde_cells_t *cells, const sonde_filter_t *filter, PyObject *key,
                         PyObject *entry)
{
    if (!PyUnicode_Check(key) || !PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) < 3 ||
        !PyList_Check(PyTuple_GET_ITEM(entry, 2)))
        return 1;
    const char *path = PyUnicode_AsUTF8(key);
    if (!path) {
        PyErr_Clear();
        return 1;
    }
    struct stat st;
    if (!sonde_codefilter_wants(filter, path) || cells->n == CELLS_MAX_ENTRIES ||
        (stat(path, &st) == 0 && S_ISREG(st.st_mode)))
        return 1; /* not profiled, too many, or a file the report reads itself */
    PyObject *lines = PyTuple_GET_ITEM(entry, 2); /* borrowed */
    sonde_buf_t text = SONDE_BUF_INIT;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(lines); i++) {
        Py_ssize_t len = 0;
        PyObject *line = PyList_GET_ITEM(lines, i);
        const char *utf8 = PyUnicode_Check(line) ? PyUnicode_AsUTF8AndSize(line, &len) : NULL;
        if (!utf8) {
            PyErr_Clear();
            continue;
        }
        sonde_buf_append(&text, utf8, (size_t)len);
    }
    int rc = sonde_buf_error(&text);
    if (rc == 0 && cells->bytes + text.len > CELLS_MAX_BYTES) rc = 1;
    if (rc == 0 && cells->n == cells->cap) {
        size_t cap = cells->cap ? 2 * cells->cap : 16;
        sonde_cell_t *grown = realloc(cells->items, cap * sizeof *grown);
        if (!grown) rc = -ENOMEM;
        if (grown) {
            cells->items = grown;
            cells->cap = cap;
        }
    }
    char *path_copy = rc == 0 ? strdup(path) : NULL;
    if (rc == 0 && !path_copy) rc = -ENOMEM;
    if (rc == 0) {
        sonde_cell_t *cell = &cells->items[cells->n++];
        cell->path = path_copy;
        cell->text = text.data; /* NULL for an empty cell */
        cell->len = text.len;
        cells->bytes += text.len;
        return 0; /* the cell owns text's memory now */
    }
    sonde_buf_free(&text);
    return rc;
}

int sonde_cells_collect_gil(sonde_cells_t *cells, const sonde_filter_t *filter)
{
    memset(cells, 0, sizeof *cells);
    /* Only a linecache the program imported: importing it here would run
     * code the program did not ask for. */
    PyObject *modules = PyImport_GetModuleDict(); /* borrowed */
    PyObject *linecache = modules ? PyDict_GetItemString(modules, "linecache") : NULL;
    if (!linecache) return 0;
    PyObject *cache = PyObject_GetAttrString(linecache, "cache");
    if (!cache || !PyDict_Check(cache)) {
        Py_XDECREF(cache);
        PyErr_Clear();
        return 0;
    }
    PyObject *key, *entry; /* borrowed */
    Py_ssize_t pos = 0;
    int rc = 0;
    while (rc >= 0 && PyDict_Next(cache, &pos, &key, &entry))
        rc = cells_add_gil(cells, filter, key, entry);
    Py_DECREF(cache);
    if (rc < 0) sonde_cells_free(cells);
    return rc < 0 ? rc : 0;
}

int sonde_cells_apply(const sonde_cells_t *cells, sonde_profile_t *prof)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < cells->n; i++)
        rc = sonde_profile_set_source(prof, cells->items[i].path, cells->items[i].text,
                                      cells->items[i].len);
    return rc;
}

void sonde_cells_free(sonde_cells_t *cells)
{
    for (size_t i = 0; i < cells->n; i++) {
        free(cells->items[i].path);
        free(cells->items[i].text);
    }
    free(cells->items);
    memset(cells, 0, sizeof *cells);
}
