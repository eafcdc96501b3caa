/* test_pyread_debug.c — the layout comes from the target's _Py_DebugOffsets.
 *
 * For every 3.13+ table: a forged _Py_DebugOffsets whose fields all sit
 * elsewhere than the headers put them is applied, and every covered field
 * of the resulting layout must follow the blob, not the table's constants;
 * a reader opened on a forged runtime must then find a thread state
 * through the moved offsets. A blob without the cookie, of another
 * version, of a free-threaded build, with an offset out of bounds or
 * fields spread wider than a reader reads at once is refused. Versions
 * outside the table (a forged 3.16, a 3.7) are refused with one line
 * naming the version and the supported range. And the allocator shim's
 * picture of Python's allocator structures (shim.h) matches every table.
 * Prints "PASS name" /
 * "FAIL name: detail"; exits 1 on any failure.
 */
#include "pyread/pyread_internal.h"
#include "shim/shim_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOVE 24 /* bytes every covered field is moved by */

static int failures;

static bool check(bool ok, const char *name, const char *detail)
{
    if (ok) {
        printf("PASS %s\n", name);
    } else {
        printf("FAIL %s: %s\n", name, detail);
        failures++;
    }
    return ok;
}

static void put64(uint8_t *blob, int32_t at, uint64_t value)
{
    if (at >= 0) memcpy(blob + at, &value, sizeof value);
}

static int32_t field_of(const sonde_pyoffsets_t *off, int32_t field)
{
    int32_t value = 0;
    memcpy(&value, (const uint8_t *)off + field, sizeof value);
    return value;
}

/* A blob as the target would hold it, every covered field moved by `move`. */
static void forge(const sonde_pyoffsets_t *off, uint8_t *blob, size_t len, int move)
{
    memset(blob, 0, len);
    memcpy(blob, "xdebugpy", 8);
    put64(blob, off->debug_version, (uint64_t)off->major << 24 | (uint64_t)off->minor << 16);
    for (int i = 0; i < off->n_debug_checks; i++)
        put64(blob, off->debug_checks[i].at, (uint64_t)off->debug_checks[i].expect);
    for (int i = 0; i < off->n_debug_fields; i++) {
        const struct sonde_pydebug_field *f = &off->debug_fields[i];
        uint64_t base = f->minus_at >= 0 ? 8192 : 0;
        if (f->minus_at >= 0) put64(blob, f->minus_at, base);
        put64(blob, f->at, base + (uint64_t)(field_of(off, f->field) + move));
    }
}

static int apply(const sonde_pyoffsets_t *off, const uint8_t *blob, size_t len,
                 sonde_pyoffsets_t *out)
{
    *out = *off;
    return sonde__pyoffsets_apply_debug(out, blob, len);
}

static void check_follows_blob(const sonde_pyoffsets_t *off)
{
    uint8_t blob[2048];
    sonde_pyoffsets_t layout;
    char name[96], detail[256];
    size_t len = (size_t)off->debug_size;

    snprintf(name, sizeof name, "3.%d covered fields follow a forged _Py_DebugOffsets", off->minor);
    forge(off, blob, len, MOVE);
    int rc = apply(off, blob, len, &layout);
    int wrong = 0, first_wrong = -1;
    for (int i = 0; i < off->n_debug_fields; i++) {
        int32_t field = off->debug_fields[i].field;
        if (field_of(&layout, field) != field_of(off, field) + MOVE) {
            if (first_wrong < 0) first_wrong = i;
            wrong++;
        }
    }
    snprintf(detail, sizeof detail, "rc %d, %d of %d fields not moved (first: entry %d)", rc, wrong,
             off->n_debug_fields, first_wrong);
    check(rc == 0 && wrong == 0 && off->n_debug_fields >= 20, name, detail);

    /* each refusal, one at a time */
    static const char *const cases[] = {
        "no cookie",
        "another version",
        "free-threaded",
        "offset out of bounds",
        "frame fields spread too wide",
        "a str header larger than the reader's buffer",
        "a str field outside the str header",
    };
    for (size_t c = 0; c < SONDE_ARRAY_LEN(cases); c++) {
        forge(off, blob, len, 0);
        switch (c) {
        case 0:
            blob[0] = 'X';
            break;
        case 1:
            put64(blob, off->debug_version, (uint64_t)3 << 24 | (uint64_t)(off->minor + 1) << 16);
            break;
        case 2:
            put64(blob, off->debug_checks[0].at, 1); /* free_threaded, first check */
            break;
        case 3:
        case 4:
            for (int i = 0; i < off->n_debug_fields; i++)
                if (off->debug_fields[i].field == SONDE_PYDEBUG_FIELD(frame_back))
                    put64(blob, off->debug_fields[i].at, c == 3 ? 1u << 20 : 4096);
            break;
        case 5:
        case 6: {
            int32_t field = c == 5 ? SONDE_PYDEBUG_FIELD(unicode_ascii_size)
                                   : SONDE_PYDEBUG_FIELD(unicode_state);
            bool found = false;
            for (int i = 0; i < off->n_debug_fields; i++)
                if (off->debug_fields[i].field == field && off->debug_fields[i].minus_at < 0) {
                    put64(blob, off->debug_fields[i].at, c == 5 ? 400 : 300);
                    found = true;
                }
            if (!found) continue; /* this version's blob does not carry it */
            break;
        }
        }
        rc = apply(off, blob, len, &layout);
        snprintf(name, sizeof name, "3.%d refuses a _Py_DebugOffsets with %s", off->minor,
                 cases[c]);
        snprintf(detail, sizeof detail, "rc %d", rc);
        check(rc == -ENOTSUP, name, detail);
    }
}

/* A reader opened on a forged runtime finds the thread state through the
 * moved offsets (threads_head, tstate interp / thread_id / native id). */
static void check_reader_follows(const sonde_pyoffsets_t *off)
{
    uint8_t *runtime = calloc(1, 16384), *interp = calloc(1, 16384), *tstate = calloc(1, 4096);
    sonde_pyoffsets_t moved;
    sonde_pyproc_t proc;
    sonde_pythread_t threads[4];
    char name[96], detail[256];

    if (!runtime || !interp || !tstate) abort();
    forge(off, runtime, (size_t)off->debug_size, MOVE);
    moved = *off;
    if (sonde__pyoffsets_apply_debug(&moved, runtime, (size_t)off->debug_size) != 0) abort();
    uint64_t interp_addr = (uint64_t)(uintptr_t)interp, tstate_addr = (uint64_t)(uintptr_t)tstate;
    put64(runtime, off->runtime_interpreters_main, interp_addr); /* not covered */
    put64(interp, moved.interp_threads_head, tstate_addr);
    put64(tstate, moved.tstate_interp, interp_addr);
    put64(tstate, moved.tstate_thread_id, 0x1234);
    put64(tstate, moved.tstate_native_thread_id, 4321);
    /* where the headers put them: what a reader of the constants would see */
    put64(interp, off->interp_threads_head, 0x10);

    unsigned long hex = (unsigned long)off->major << 24 | (unsigned long)off->minor << 16;
    int rc = sonde_pyproc_open_self(&proc, hex, (uint64_t)(uintptr_t)runtime, 0);
    int n = rc == 0 ? sonde_pyproc_threads(&proc, threads, 4) : rc;
    snprintf(name, sizeof name, "3.%d reader walks threads by the target's offsets", off->minor);
    snprintf(detail, sizeof detail, "open %d, threads %d, id %#llx, tid %d", rc, n,
             n > 0 ? (unsigned long long)threads[0].pthread_id : 0ull,
             n > 0 ? (int)threads[0].native_tid : 0);
    check(rc == 0 && n == 1 && threads[0].pthread_id == 0x1234 && threads[0].native_tid == 4321,
          name, detail);
    sonde_pyproc_close(&proc);
    free(runtime);
    free(interp);
    free(tstate);
}

/* 3.16 (forged) and 3.7: refused, and one line names the version and range. */
static void check_unsupported(int minor)
{
    uint8_t runtime[64] = "xdebugpy";
    sonde_pyproc_t proc;
    char text[256], name[96], detail[400];

    unsigned long hex = 3ul << 24 | (unsigned long)minor << 16 | 1ul << 8;
    put64(runtime, 8, hex);
    int rc = sonde_pyproc_open_self(&proc, hex, (uint64_t)(uintptr_t)runtime, 0);
    sonde_pyversion_unsupported_text(text, sizeof text, proc.version_major, proc.version_minor,
                                     proc.version_micro);
    char version[16];
    snprintf(version, sizeof version, "Python 3.%d.1,", minor);
    snprintf(name, sizeof name, "3.%d is refused with one line naming it and the range", minor);
    snprintf(detail, sizeof detail, "rc %d, text \"%s\"", rc, text);
    check(rc == -ENOTSUP && strstr(text, version) && strstr(text, "CPython " SONDE_PY_RANGE_TEXT) &&
              !strchr(text, '\n'),
          name, detail);
}

/* The shim describes PyMemAllocatorEx, PyObjectArenaAllocator and
 * pymalloc's small-request limit by hand: each version's headers agree. */
static void check_shim(const sonde_pyoffsets_t *off)
{
    char name[96], detail[128];
    snprintf(name, sizeof name, "3.%d allocator structures match the shim's", off->minor);
    snprintf(detail, sizeof detail, "%d/%zu %d/%zu %d/%d", off->pyalloc_size,
             sizeof(sonde_shim_pyalloc_t), off->pyarena_size, sizeof(sonde_shim_pyarena_t),
             off->pymalloc_small_request, SHIM_PY_SMALL_REQUEST);
    check(off->pyalloc_size == (int32_t)sizeof(sonde_shim_pyalloc_t) &&
              off->pyarena_size == (int32_t)sizeof(sonde_shim_pyarena_t) &&
              (off->pymalloc_small_request < 0 ||
               off->pymalloc_small_request == SHIM_PY_SMALL_REQUEST),
          name, detail);
}

int main(void)
{
    int tables = 0;
    for (int minor = SONDE_PY_MINOR_MIN; minor <= SONDE_PY_MINOR_MAX; minor++)
        if (sonde_pyoffsets_find(3, minor)) check_shim(sonde_pyoffsets_find(3, minor));
    for (int minor = SONDE_PY_MINOR_MIN; minor <= SONDE_PY_MINOR_MAX; minor++) {
        const sonde_pyoffsets_t *off = sonde_pyoffsets_find(3, minor);
        if (off == NULL || off->debug_version < 0) continue;
        tables++;
        check_follows_blob(off);
        check_reader_follows(off);
    }
    /* _Py_DebugOffsets exists from 3.13 on: every supported version since */
    check(tables == SONDE_PY_MINOR_MAX - 13 + 1, "every table from 3.13 describes _Py_DebugOffsets",
          "fewer");
    check_unsupported(SONDE_PY_MINOR_MAX + 1);
    check_unsupported(SONDE_PY_MINOR_MIN - 1);
    return failures ? 1 : 0;
}
