/* pyoffsets.c — the table of per-version CPython layouts.
 *
 * Owns: the generated tables (pyoffsets_gen.h) and the lookup by version.
 * Called by proc.c when a reader is opened. Pure data: no allocation,
 * nothing here runs in a signal handler.
 */
#include "pyoffsets.h"

#include "pyoffsets_gen.h"

static const sonde_pyoffsets_t *const pyoffsets_tables[] = {
    &sonde_pyoffsets_3_8,  &sonde_pyoffsets_3_9,  &sonde_pyoffsets_3_10,
    &sonde_pyoffsets_3_11, &sonde_pyoffsets_3_12, &sonde_pyoffsets_3_13,
};

/* Returns the layout for CPython major.minor, or NULL if unsupported. */
const sonde_pyoffsets_t *sonde_pyoffsets_find(int major, int minor)
{
    for (size_t i = 0; i < SONDE_ARRAY_LEN(pyoffsets_tables); i++) {
        const sonde_pyoffsets_t *off = pyoffsets_tables[i];
        if (off->major == major && off->minor == minor) return off;
    }
    return NULL;
}
