/* pyoffsets.c — the table of per-version CPython layouts.
 *
 * Owns: the generated tables (pyoffsets_gen.h), one per minor version of
 * pyversions.h, and the lookup by version. Called by proc.c when a reader
 * is opened. Pure data: no allocation, nothing here runs in a signal
 * handler.
 */
#include "pyoffsets.h"

#include "pyoffsets_gen.h"

#define PYOFFSETS_ENTRY(minor) &sonde_pyoffsets_3_##minor,

static const sonde_pyoffsets_t *const pyoffsets_tables[] = {SONDE_PY_VERSIONS(PYOFFSETS_ENTRY)};

/* Returns the layout for CPython major.minor, or NULL if unsupported. */
const sonde_pyoffsets_t *sonde_pyoffsets_find(int major, int minor)
{
    for (size_t i = 0; i < SONDE_ARRAY_LEN(pyoffsets_tables); i++) {
        const sonde_pyoffsets_t *off = pyoffsets_tables[i];
        if (off->major == major && off->minor == minor) return off;
    }
    return NULL;
}
