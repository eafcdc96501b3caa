/* pyversions.h — the one table of CPython versions sonde reads.
 *
 * Owns: the supported range and the list of minor versions. Everything that
 * names a Python version reads it from here: the layout lookup
 * (pyoffsets.c builds its table from SONDE_PY_VERSIONS; the layouts
 * themselves are generated per version into pyoffsets_gen.h, each with
 * where its own _Py_DebugOffsets keeps the fields it covers), the
 * messages of the extension module and of attach/dump (SONDE_PY_RANGE_TEXT),
 * the generator tools/gen_offsets/run.sh and the test runner tests/run.py
 * (both parse the two SONDE_PY_MINOR_ lines below, so keep their form).
 * Adding a version: raise SONDE_PY_MINOR_MAX, add it to SONDE_PY_VERSIONS
 * and SONDE_PY_RANGE_TEXT, run tools/gen_offsets/run.sh. Pure data: no
 * code, no libpython (the allocator shim may include it too).
 */
#ifndef SONDE_PYVERSIONS_H
#define SONDE_PYVERSIONS_H

#define SONDE_PY_MAJOR 3
#define SONDE_PY_MINOR_MIN 8
#define SONDE_PY_MINOR_MAX 15

/* The range as the messages print it ("CPython " SONDE_PY_RANGE_TEXT). */
#define SONDE_PY_STR_(x) #x
#define SONDE_PY_STR(x) SONDE_PY_STR_(x)
#define SONDE_PY_RANGE_TEXT                                                                        \
    SONDE_PY_STR(SONDE_PY_MAJOR)                                                                   \
    "." SONDE_PY_STR(SONDE_PY_MINOR_MIN) " to " SONDE_PY_STR(SONDE_PY_MAJOR) "." SONDE_PY_STR(     \
        SONDE_PY_MINOR_MAX)

/* X(minor) for every supported minor version, oldest first. */
#define SONDE_PY_VERSIONS(X) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)

/* True when major.minor is in the supported range. */
#define SONDE_PY_SUPPORTED(major, minor)                                                           \
    ((major) == SONDE_PY_MAJOR && (minor) >= SONDE_PY_MINOR_MIN && (minor) <= SONDE_PY_MINOR_MAX)

#endif
