/* proc.c — opening and closing a reader of a CPython interpreter.
 *
 * Owns: sonde_pyproc_open_self, sonde_pyproc_open_pid, sonde_pyproc_close.
 * open_self is called once by the extension module when the sampler
 * starts (it knows its own version and addresses); open_pid by the attach
 * and dump commands, which know only a pid: it finds the executable and any
 * libpython3.N.so in /proc/PID/maps, opens the file through /proc/PID/root
 * (the target's mount namespace; the path as named when the target runs
 * in a chroot of the reader's namespace), takes the load bias from the mapping at
 * file offset 0 and the lowest PT_LOAD address, finds _PyRuntime (symbol,
 * or the .PyRuntime section of a stripped binary), detects the version
 * (_Py_DebugOffsets on 3.13+, Py_Version on 3.11+, else the file name and
 * the version string in .rodata) and picks the layout. On 3.13+ the
 * target's own _Py_DebugOffsets is the source of every field it covers
 * (the table of the version says where each sits inside it): the reader
 * then reads an owned copy of the table with those fields replaced, after
 * checking the cookie, the version, the rest against the headers and the
 * bounds of what the readers read at once. Runs in a normal thread;
 * nothing here runs in a signal handler.
 */
#include "pyread_internal.h"

#include "../prim/prim.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROC_MAX_MAPS_TEXT (64u << 20) /* bytes of /proc/PID/maps read */
#define PROC_MAX_IMAGES 8              /* candidate files tried */
#define PROC_MAX_RODATA (32u << 20)    /* bytes of .rodata scanned */
#define PROC_DEBUG_READ 1024           /* bytes of _Py_DebugOffsets read */
#define PROC_COOKIE "xdebugpy"
#define PROC_MAX_FIELD_OFFSET (1u << 16) /* bound on an offset _Py_DebugOffsets gives */

static void proc_init(sonde_pyproc_t *proc)
{
    memset(proc, 0, sizeof *proc);
    proc->mem.procmem = SONDE_PRIM_KEPT_FD_NONE;
    proc->pthread_tid_offset = -1;
}

static uint64_t proc_rd64(const uint8_t *bytes, int32_t at)
{
    uint64_t value = 0;
    memcpy(&value, bytes + at, sizeof value);
    return value;
}

/* Bytes spanned by a group of fields read at once (absent ones skipped). */
static int32_t proc_span(const int32_t *fields, size_t n)
{
    int32_t lo = INT32_MAX, hi = 0;
    for (size_t i = 0; i < n; i++) {
        if (fields[i] < 0) continue;
        lo = fields[i] < lo ? fields[i] : lo;
        hi = fields[i] + 8 > hi ? fields[i] + 8 : hi;
    }
    return lo == INT32_MAX ? 0 : hi - lo;
}

/* End of the last of a group of fields read from the start of an object. */
static int32_t proc_end(const int32_t *fields, size_t n)
{
    int32_t hi = 0;
    for (size_t i = 0; i < n; i++)
        if (fields[i] >= 0 && fields[i] + 8 > hi) hi = fields[i] + 8;
    return hi;
}

/* Whether the readers can read this layout within their fixed spans
 * (pyread_internal.h): a bound on what a target's _Py_DebugOffsets says. */
static bool proc_layout_fits(const sonde_pyoffsets_t *off)
{
    int32_t frame[] = {off->frame_back, off->frame_code, off->frame_instr, off->frame_owner};
    int32_t thread[] = {off->tstate_next, off->tstate_interp, off->tstate_thread_id,
                        off->tstate_native_thread_id};
    int32_t code[] = {off->ob_type,   off->ob_size,          off->code_filename,
                      off->code_name, off->code_qualname,    off->code_linetable,
                      off->code_code, off->code_firstlineno, off->code_monitoring};
    int32_t gil[] = {off->gil_locked, off->gil_last_holder};
    return proc_span(frame, SONDE_ARRAY_LEN(frame)) <= SONDE_PYREAD_FRAME_SPAN_MAX &&
           proc_span(thread, SONDE_ARRAY_LEN(thread)) <= SONDE_PYREAD_THREAD_SPAN_MAX &&
           proc_end(code, SONDE_ARRAY_LEN(code)) <= SONDE_PYREAD_CODE_HEADER_MAX &&
           proc_span(gil, SONDE_ARRAY_LEN(gil)) <= SONDE_PYREAD_GIL_SPAN_MAX &&
           sonde__pystr_layout_ok(off);
}

/* Whether byte `at` of _Py_DebugOffsets feeds one of the table's fields. */
static bool proc_debug_covered(const sonde_pyoffsets_t *off, int32_t at)
{
    for (int i = 0; i < off->n_debug_fields && i < SONDE_PY_DEBUG_FIELDS; i++)
        if (off->debug_fields[i].at == at || off->debug_fields[i].minus_at == at) return true;
    return false;
}

/* Applies a copy of _Py_DebugOffsets (`debug`, `len` bytes, read from the
 * start of the target's _PyRuntime) to `layout`, a copy of the version's
 * table: every field it covers is taken from it; what it says about the
 * rest must match the headers. Returns 0 or -ENOTSUP (not the cookie,
 * another version, a free-threaded build, an offset out of bounds). */
int sonde__pyoffsets_apply_debug(sonde_pyoffsets_t *layout, const uint8_t *debug, size_t len)
{
    if (layout->debug_version < 0) return 0;
    if (len < 16 || layout->debug_size > (int32_t)len || layout->debug_version + 8 > (int32_t)len ||
        memcmp(debug, PROC_COOKIE, 8) != 0)
        return -ENOTSUP;
    uint64_t version = proc_rd64(debug, layout->debug_version);
    if ((int)((version >> 24) & 0xff) != layout->major ||
        (int)((version >> 16) & 0xff) != layout->minor)
        return -ENOTSUP;
    for (int i = 0; i < layout->n_debug_fields && i < SONDE_PY_DEBUG_FIELDS; i++) {
        const struct sonde_pydebug_field *f = &layout->debug_fields[i];
        if (f->at < 0 || f->at + 8 > (int32_t)len || f->minus_at + 8 > (int32_t)len ||
            f->field < 0 || f->field + (int32_t)sizeof(int32_t) > (int32_t)sizeof *layout)
            return -ENOTSUP;
        uint64_t value = proc_rd64(debug, f->at);
        if (f->minus_at >= 0) value -= proc_rd64(debug, f->minus_at);
        if (value > PROC_MAX_FIELD_OFFSET) return -ENOTSUP;
        int32_t field_value = (int32_t)value;
        memcpy((uint8_t *)layout + f->field, &field_value, sizeof field_value);
    }
    for (int i = 0; i < layout->n_debug_checks && i < SONDE_PY_DEBUG_CHECKS; i++) {
        const struct sonde_pydebug_check *check = &layout->debug_checks[i];
        if (check->at < 0 || check->at + 8 > (int32_t)len) return -ENOTSUP;
        if (proc_debug_covered(layout, check->at)) continue;
        if ((int64_t)proc_rd64(debug, check->at) != check->expect) return -ENOTSUP;
    }
    return proc_layout_fits(layout) ? 0 : -ENOTSUP;
}

/* Takes the layout from the target's _Py_DebugOffsets (3.13+) into an
 * owned copy of the table. */
static int proc_read_debug_offsets(sonde_pyproc_t *proc)
{
    uint8_t debug[PROC_DEBUG_READ];

    if (proc->off->debug_version < 0) return 0;
    size_t len = proc->off->debug_size > 0 ? (size_t)proc->off->debug_size : PROC_DEBUG_READ;
    if (len > sizeof debug) return -ENOTSUP;
    int rc = sonde_mem_read(&proc->mem, proc->runtime_addr, debug, len);
    if (rc != 0) return rc;
    proc->own_layout = malloc(sizeof *proc->own_layout);
    if (proc->own_layout == NULL) return -ENOMEM;
    *proc->own_layout = *proc->off;
    rc = sonde__pyoffsets_apply_debug(proc->own_layout, debug, len);
    if (rc != 0) return rc;
    proc->off = proc->own_layout;
    return 0;
}

/* Checks that the layout fits what is in memory: the main interpreter's
 * first thread state points back at it. A target still starting (no
 * interpreter yet) passes. */
static int proc_check_layout(sonde_pyproc_t *proc)
{
    const sonde_pyoffsets_t *off = proc->off;
    uint64_t interp = 0, tstate = 0, back = 0;

    int rc =
        sonde_mem_read(&proc->mem, proc->runtime_addr + (uint64_t)off->runtime_interpreters_main,
                       &interp, sizeof interp);
    if (rc != 0) return rc;
    proc->interp_addr = interp;
    if (interp == 0) return 0;
    if (sonde_mem_read(&proc->mem, interp + (uint64_t)off->interp_threads_head, &tstate,
                       sizeof tstate) != 0)
        return -ENOTSUP;
    if (tstate == 0) return 0;
    if (sonde_mem_read(&proc->mem, tstate + (uint64_t)off->tstate_interp, &back, sizeof back) !=
            0 ||
        back != interp)
        return -ENOTSUP;
    return 0;
}

/* Common end of both opens, once the version and addresses are known. */
static int proc_finish_open(sonde_pyproc_t *proc)
{
    proc->off = sonde_pyoffsets_find(proc->version_major, proc->version_minor);
    if (proc->off == NULL) return -ENOTSUP;
    int rc = proc_read_debug_offsets(proc);
    if (rc == 0) rc = proc_check_layout(proc);
    if (rc != 0) return rc;
    if (proc->off->tstate_native_thread_id < 0) {
        int tid_offset = sonde_pthread_tid_offset();
        proc->pthread_tid_offset = tid_offset >= 0 ? tid_offset : -1;
    }
    return sonde_pycode_cache_new(proc);
}

/* Prepares to read this process (pyread.h). */
int sonde_pyproc_open_self(sonde_pyproc_t *proc, unsigned long version_hex, uint64_t runtime_addr,
                           uint64_t code_type_addr)
{
    proc_init(proc);
    proc->version_major = (int)((version_hex >> 24) & 0xff);
    proc->version_minor = (int)((version_hex >> 16) & 0xff);
    proc->version_micro = (int)((version_hex >> 8) & 0xff);
    proc->runtime_addr = runtime_addr;
    proc->code_type_addr = code_type_addr;
    int rc = sonde_mem_open(&proc->mem, 0);
    if (rc == 0) rc = proc_finish_open(proc);
    if (rc != 0) sonde_pyproc_close(proc);
    return rc;
}

/* ---- open_pid: finding the interpreter in another process ------------------- */

static int proc_read_maps(pid_t pid, char **text, size_t *len)
{
    size_t cap = 1 << 16, used = 0;
    char *buf = NULL;
    int rc = 0;

    int fd = sonde_prim_proc_open(pid, "maps");
    if (fd < 0) return fd == -ENOENT ? -ESRCH : fd;
    buf = malloc(cap);
    if (buf == NULL) {
        rc = -ENOMEM;
        goto error;
    }
    for (;;) {
        if (used == cap) {
            if (cap >= PROC_MAX_MAPS_TEXT) {
                rc = -E2BIG;
                goto error;
            }
            char *bigger = realloc(buf, cap * 2);
            if (bigger == NULL) {
                rc = -ENOMEM;
                goto error;
            }
            buf = bigger;
            cap *= 2;
        }
        ssize_t n = read(fd, buf + used, cap - used);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            rc = errno == ENOENT ? -ESRCH : -errno;
            goto error;
        }
        if (n == 0) break;
        used += (size_t)n;
    }
    close(fd);
    if (used == 0) {
        free(buf); /* a zombie or a kernel thread: no memory to read */
        return -ENOEXEC;
    }
    *text = buf;
    *len = used;
    return 0;

error:
    close(fd);
    free(buf);
    return rc;
}

/* Finds "3.N.M" (N, M decimal) ending a string in .rodata; takes the first
 * one whose N is `minor` (any 6-99 when minor < 0). Linkers merge string
 * tails, so PY_VERSION may end a longer string (a build path). */
static bool proc_rodata_version(sonde_elf_t *elf, int minor, int *found_minor, int *found_micro)
{
    uint64_t addr = 0, size = 0, file_offset = 0;
    bool found = false;

    if (sonde_elf_section(elf, ".rodata", &addr, &size, &file_offset) != 0) return false;
    if (size > PROC_MAX_RODATA) size = PROC_MAX_RODATA;
    char *data = malloc((size_t)size + 1);
    if (data == NULL || sonde_elf_pread(elf, file_offset, data, (size_t)size) != 0) {
        free(data);
        return false;
    }
    data[size] = 0;
    for (size_t i = 1; i + 5 < size && !found; i++) {
        char before = data[i - 1];
        if (data[i] != '3' || data[i + 1] != '.' || (before >= '0' && before <= '9') ||
            before == '.')
            continue;
        char *end = NULL;
        long n = strtol(data + i + 2, &end, 10);
        if (end == data + i + 2 || *end != '.' || n < 6 || n > 99 || (minor >= 0 && n != minor))
            continue;
        char *micro_end = NULL;
        long m = strtol(end + 1, &micro_end, 10);
        if (micro_end == end + 1 || m < 0 || m > 99) continue;
        /* then NUL, or a release tag such as "a1", "rc2", "+" and NUL */
        const char *tail = micro_end;
        while (*tail &&
               ((*tail >= 'a' && *tail <= 'z') || (*tail >= '0' && *tail <= '9') || *tail == '+') &&
               tail - micro_end < 8)
            tail++;
        if (*tail != 0) continue;
        *found_minor = (int)n;
        *found_micro = (int)m;
        found = true;
    }
    free(data);
    return found;
}

/* Detects the version of the interpreter whose image was found. */
static int proc_detect_version(sonde_pyproc_t *proc, sonde_elf_t *elf,
                               const sonde_maps_image_t *image, uint64_t py_version_addr)
{
    uint8_t head[16];
    uint64_t hex = 0;
    int minor = -1, micro = 0;

    int rc = sonde_mem_read(&proc->mem, proc->runtime_addr, head, sizeof head);
    if (rc != 0) return rc;
    if (memcmp(head, PROC_COOKIE, 8) == 0) {
        memcpy(&hex, head + 8, sizeof hex); /* _Py_DebugOffsets.version */
    } else if (py_version_addr) {
        rc = sonde_mem_read(&proc->mem, py_version_addr, &hex, sizeof hex);
        if (rc != 0) return rc;
    }
    if (hex) {
        proc->version_major = (int)((hex >> 24) & 0xff);
        proc->version_minor = (int)((hex >> 16) & 0xff);
        proc->version_micro = (int)((hex >> 8) & 0xff);
        return proc->version_major == 3 ? 0 : -ENOEXEC;
    }
    if (!proc_rodata_version(elf, image->minor_hint, &minor, &micro)) {
        if (image->minor_hint < 0) return -ENOEXEC;
        minor = image->minor_hint;
        micro = 0;
    }
    proc->version_major = 3;
    proc->version_minor = minor;
    proc->version_micro = micro;
    return 0;
}

/* Tries one mapped file: 0 when it holds _PyRuntime (proc filled), else
 * -ENOEXEC or -errno. */
static int proc_try_image(sonde_pyproc_t *proc, pid_t pid, const sonde_maps_image_t *image)
{
    static const char *const names[] = {"_PyRuntime", "Py_Version", "PyCode_Type"};
    uint64_t values[3] = {0, 0, 0};
    char path[SONDE_MAPS_PATH_MAX + 8];
    sonde_elf_t elf;
    int rc = 0;

    int fd;
    if (image->deleted) {
        /* The file was removed or replaced since it was mapped (a Python
         * upgraded under a running service): its path names another file
         * or none, so read the mapped file itself, through map_files (or,
         * for the executable, exe). */
        snprintf(path, sizeof path, "map_files/%llx-%llx", (unsigned long long)image->base,
                 (unsigned long long)image->end);
        fd = sonde_prim_proc_open(pid, path);
        if (fd < 0 && !image->is_libpython) fd = sonde_prim_proc_open(pid, "exe");
    } else {
        snprintf(path, sizeof path, "root%s", image->path);
        fd = sonde_prim_proc_open(pid, path);
        /* /proc/PID/maps names files as the reader's root sees them: a
         * target in another mount namespace needs /proc/PID/root, one in
         * a chroot of ours (same namespace) is found under the path */
        if (fd == -ENOENT) fd = sonde_prim_fd_above_std(open(image->path, O_RDONLY | O_CLOEXEC));
    }
    if (fd < 0) return fd;
    rc = sonde_elf_open(&elf, fd);
    if (rc != 0) goto out_fd;
    rc = sonde_elf_symbols(&elf, names, 3, values);
    if (rc < 0) goto out;
    if (values[0] == 0) {
        uint64_t size = 0, file_offset = 0;
        if (sonde_elf_section(&elf, ".PyRuntime", &values[0], &size, &file_offset) != 0) {
            rc = -ENOEXEC;
            goto out;
        }
    }
    uint64_t bias = image->base - elf.lowest_load_vaddr;
    proc->runtime_addr = bias + values[0];
    proc->code_type_addr = values[2] ? bias + values[2] : 0;
    rc = proc_detect_version(proc, &elf, image, values[1] ? bias + values[1] : 0);
out:
    sonde_elf_close(&elf);
out_fd:
    close(fd);
    return rc;
}

/* Prepares to read another process (pyread.h). */
int sonde_pyproc_open_pid(sonde_pyproc_t *proc, pid_t pid)
{
    sonde_maps_image_t *images = NULL;
    char exe[SONDE_MAPS_PATH_MAX];
    char *maps = NULL;
    size_t maps_len = 0;
    int rc = 0;

    proc_init(proc);
    if (pid <= 0) return -ESRCH;
    rc = sonde_mem_open(&proc->mem, pid);
    if (rc != 0) goto error;
    rc = proc_read_maps(pid, &maps, &maps_len);
    if (rc != 0) goto error;
    bool have_exe = sonde_prim_proc_exe(pid, exe, sizeof exe) == 0 && exe[0];
    images = calloc(PROC_MAX_IMAGES, sizeof *images);
    if (images == NULL) {
        rc = -ENOMEM;
        goto error;
    }
    int n = sonde_maps_find_images(maps, maps_len, have_exe ? exe : NULL, images, PROC_MAX_IMAGES);
    rc = -ENOEXEC;
    int hinted_minor = -1;
    for (int i = 0; i < n; i++) {
        int image_rc = proc_try_image(proc, pid, &images[i]);
        if (image_rc == 0) {
            rc = 0;
            break;
        }
        /* a file we may not open says more than "not Python" */
        if (rc == -ENOEXEC && (image_rc == -EACCES || image_rc == -EPERM || image_rc == -ESRCH))
            rc = image_rc;
        if (image_rc == -ENOEXEC && images[i].minor_hint >= 0) hinted_minor = images[i].minor_hint;
    }
    if (rc == -ENOEXEC && hinted_minor >= 0) {
        /* libpython3.N or python3.N without _PyRuntime: a Python 3 older
         * than 3.7, which has no layout here */
        proc->version_major = 3;
        proc->version_minor = hinted_minor;
        rc = -ENOTSUP;
    }
    if (rc != 0) goto error;
    rc = proc_finish_open(proc);
    if (rc != 0) goto error;
    free(images);
    free(maps);
    return 0;

error:
    free(images);
    free(maps);
    sonde_pyproc_close(proc); /* keeps the version, for -ENOTSUP */
    return rc;
}

/* Frees the reader's cache and descriptors; the version stays readable.
 * Safe to call twice. */
void sonde_pyproc_close(sonde_pyproc_t *proc)
{
    sonde_pycode_cache_free(proc);
    sonde_mem_close(&proc->mem);
    free(proc->own_layout);
    proc->own_layout = NULL;
    proc->off = NULL;
}

/* One line on a version sonde cannot read (pyread.h). */
int sonde_pyversion_unsupported_text(char *out, size_t cap, int major, int minor, int micro)
{
    if (major <= 0)
        return snprintf(out, cap, "a Python version sonde does not support (it reads CPython %s)",
                        SONDE_PY_RANGE_TEXT);
    if (SONDE_PY_SUPPORTED(major, minor))
        return snprintf(out, cap,
                        "Python %d.%d.%d with a memory layout sonde does not recognise (a "
                        "modified or free-threaded build?); sonde reads the CPython %s releases",
                        major, minor, micro, SONDE_PY_RANGE_TEXT);
    return snprintf(out, cap, "Python %d.%d.%d, which sonde does not support (it reads CPython %s)",
                    major, minor, micro, SONDE_PY_RANGE_TEXT);
}
