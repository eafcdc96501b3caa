/* fakeproc.h — a process that exists only in a fuzz input (header only).
 *
 * The remote readers of src/pyread/ reach another process through three
 * platform calls of src/prim/: sonde_prim_mem_read (its memory),
 * sonde_prim_proc_open (/proc/PID/maps, and the mapped files through
 * /proc/PID/root) and sonde_prim_proc_exe. A fuzz target links with
 * -Wl,--wrap for those (Makefile: FUZZ_WRAP_*), and the __wrap_ functions
 * below serve them from the input instead: memory is a flat image mapped
 * at FAKE_BASE (a read elsewhere, or running off its end, fails as an
 * unmapped page does; one that starts inside it and runs off the end is
 * short, as process_vm_readv is), /proc/PID/maps is a text, and every
 * mapped file is one ELF image (a memory file). Nothing of the real
 * process is read.
 *
 * It also builds, for the seed corpora, a well-formed interpreter of any
 * supported version in such an image, laid out as that version's table
 * (src/pyread/pyoffsets_gen.h) says: runtime (with _Py_DebugOffsets from
 * 3.13), interpreter, thread states, frames of every model, code objects
 * with names in each string layout, line tables and bytecode with calls
 * (3.12+: instrumented, with monitoring data), the GIL. The seeds are
 * written by the targets themselves: `make fuzz-seeds`.
 */
#ifndef SONDE_FAKEPROC_H
#define SONDE_FAKEPROC_H

#include "pyread/pyread_internal.h"
#include "sample/sample.h"

#include "fuzz.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Every supported minor version, oldest first (src/pyread/pyversions.h):
 * the versions the targets choose from and write seeds for. */
#define FAKE_MINOR_ENTRY(minor) minor,
static const int fake_minors[] = {SONDE_PY_VERSIONS(FAKE_MINOR_ENTRY)};
#define FAKE_MINORS ((int)SONDE_ARRAY_LEN(fake_minors))

#define FAKE_BASE 0x10000000ull /* where the memory image starts */
#define FAKE_PID 1              /* a pid that exists (kill(pid, 0) is not ESRCH) */

/* ---- the fake process --------------------------------------------------------- */

static const uint8_t *fake_mem; /* borrowed; the memory image */
static size_t fake_mem_len;
static const char *fake_maps; /* borrowed; /proc/PID/maps; NULL: none */
static size_t fake_maps_len;
static const uint8_t *fake_file; /* borrowed; every mapped file */
static size_t fake_file_len;
static const char *fake_exe; /* borrowed; /proc/PID/exe, NULL: unreadable */

ssize_t __wrap_sonde_prim_mem_read(pid_t pid, uint64_t addr, void *buf, size_t len);
int __wrap_sonde_prim_proc_open(pid_t pid, const char *name);
int __wrap_sonde_prim_proc_exe(pid_t pid, char *buf, size_t len);

ssize_t __wrap_sonde_prim_mem_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
    (void)pid;
    if (addr < FAKE_BASE || addr - FAKE_BASE >= fake_mem_len) return -EFAULT;
    size_t at = (size_t)(addr - FAKE_BASE);
    size_t n = len < fake_mem_len - at ? len : fake_mem_len - at;
    memcpy(buf, fake_mem + at, n);
    return (ssize_t)n;
}

/* A memory file holding len bytes of data, or -errno. */
static FUZZ_UNUSED int fake_memfd(const void *data, size_t len)
{
    int fd = memfd_create("sonde-fuzz", MFD_CLOEXEC);
    if (fd < 0) return -errno;
    if ((len && write(fd, data, len) != (ssize_t)len) || lseek(fd, 0, SEEK_SET) != 0) {
        close(fd);
        return -EIO;
    }
    return fd;
}

int __wrap_sonde_prim_proc_open(pid_t pid, const char *name)
{
    (void)pid;
    if (strcmp(name, "maps") == 0)
        return fake_maps ? fake_memfd(fake_maps, fake_maps_len) : -ENOENT;
    if (strncmp(name, "root/", 5) == 0)
        return fake_file ? fake_memfd(fake_file, fake_file_len) : -EACCES;
    return -EACCES; /* /proc/PID/mem and the rest: not permitted */
}

int __wrap_sonde_prim_proc_exe(pid_t pid, char *buf, size_t len)
{
    (void)pid;
    if (!fake_exe) return -EACCES;
    if (strlen(fake_exe) >= len) return -ENAMETOOLONG;
    strcpy(buf, fake_exe);
    return 0;
}

/* ---- building a well-formed interpreter (seeds) ------------------------------ */

/* A memory image being built; objects are addressed by offset (the image
 * moves as it grows), pointers written as FAKE_BASE + offset. */
typedef struct fake_image {
    uint8_t *bytes; /* owned */
    size_t len, cap;
} fake_image_t;

static FUZZ_UNUSED uint64_t fake_addr(size_t at)
{
    return FAKE_BASE + at;
}

/* A zeroed object of size bytes, 16-aligned; returns its offset. */
static FUZZ_UNUSED size_t fake_alloc(fake_image_t *img, size_t size)
{
    size_t at = (img->len + 15) & ~(size_t)15;
    size = (size + 15) & ~(size_t)15;
    if (at + size > img->cap) {
        size_t cap = img->cap ? img->cap : 4096;
        while (cap < at + size)
            cap *= 2;
        uint8_t *bytes = realloc(img->bytes, cap);
        if (bytes == NULL) abort();
        memset(bytes + img->cap, 0, cap - img->cap);
        img->bytes = bytes;
        img->cap = cap;
    }
    img->len = at + size;
    return at;
}

/* Appends n bytes (unaligned) at the end of the image. */
static FUZZ_UNUSED void fake_append(fake_image_t *img, const void *bytes, size_t n)
{
    size_t at = img->len;
    if (at + n > img->cap) {
        fake_alloc(img, n + 16); /* grows the storage */
        img->len = at;
    }
    memcpy(img->bytes + at, bytes, n);
    img->len = at + n;
}

static FUZZ_UNUSED void fake_put(fake_image_t *img, size_t obj, int32_t at, const void *value,
                                 size_t n)
{
    if (at < 0) return;
    if (obj + (size_t)at + n > img->len) fuzz_fail("field outside its object");
    memcpy(img->bytes + obj + (size_t)at, value, n);
}

static FUZZ_UNUSED void fake_put64(fake_image_t *img, size_t obj, int32_t at, uint64_t value)
{
    fake_put(img, obj, at, &value, 8);
}

static FUZZ_UNUSED void fake_put32(fake_image_t *img, size_t obj, int32_t at, uint32_t value)
{
    fake_put(img, obj, at, &value, 4);
}

static FUZZ_UNUSED void fake_put8(fake_image_t *img, size_t obj, int32_t at, uint8_t value)
{
    fake_put(img, obj, at, &value, 1);
}

/* Bytes an object needs to hold every field of the list (-1s skipped). */
static FUZZ_UNUSED size_t fake_span(const int32_t *fields, size_t n)
{
    int32_t end = 16;
    for (size_t i = 0; i < n; i++)
        if (fields[i] >= 0 && fields[i] + 8 > end) end = fields[i] + 8;
    return (size_t)end;
}

/* String layouts of the seeds. */
enum fake_str_kind {
    FAKE_STR_ASCII,     /* compact ASCII */
    FAKE_STR_UCS2,      /* compact, 2 bytes a character */
    FAKE_STR_UCS4,      /* compact, 4 bytes a character */
    FAKE_STR_NONCOMPACT /* ready, data through data.any (<= 3.11: or wstr only) */
};

/* A str object holding text (UTF-8 of code points below 0x80 for ASCII,
 * any for the others: each byte becomes one character). */
static FUZZ_UNUSED size_t fake_str(fake_image_t *img, const sonde_pyoffsets_t *off,
                                   const char *text, enum fake_str_kind kind)
{
    size_t n = strlen(text);
    int width = kind == FAKE_STR_UCS2 ? 2 : kind == FAKE_STR_UCS4 ? 4 : 1;
    bool compact = kind != FAKE_STR_NONCOMPACT;
    bool ascii = kind == FAKE_STR_ASCII;
    int32_t head = ascii     ? off->unicode_ascii_size
                   : compact ? off->unicode_compact_size
                             : off->unicode_data_any + 8;
    size_t s = fake_alloc(img, (size_t)head + (n + 1) * (size_t)width);
    uint32_t state = (uint32_t)width << off->unicode_kind_shift;
    if (compact) state |= 1u << off->unicode_compact_shift;
    if (ascii) state |= 1u << off->unicode_ascii_shift;
    bool ready = !(kind == FAKE_STR_NONCOMPACT && off->unicode_wstr >= 0 && n % 2);
    if (ready && off->unicode_ready_shift >= 0) state |= 1u << off->unicode_ready_shift;
    fake_put32(img, s, off->unicode_state, state);
    fake_put64(img, s, off->unicode_length, n);
    size_t data = s + (size_t)head;
    if (!compact && ready) {
        fake_put64(img, s, off->unicode_data_any, fake_addr(data));
    } else if (!compact) { /* not ready: wchar_t data only */
        width = off->wchar_size;
        data = fake_alloc(img, (n + 1) * (size_t)width);
        fake_put64(img, s, off->unicode_wstr, fake_addr(data));
        fake_put64(img, s, off->unicode_wstr_length, n);
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t cp = (uint8_t)text[i];
        if (width == 2) cp += 0x100;   /* U+0100.. */
        if (width == 4) cp += 0x1F300; /* U+1F300.. (outside the BMP) */
        fake_put(img, data, (int32_t)(i * (size_t)width), &cp, (size_t)width);
    }
    return s;
}

static FUZZ_UNUSED size_t fake_bytes(fake_image_t *img, const sonde_pyoffsets_t *off,
                                     const uint8_t *data, size_t n)
{
    size_t b = fake_alloc(img, (size_t)off->bytes_ob_sval + n + 1);
    fake_put64(img, b, off->bytes_ob_size, n);
    fake_put(img, b, off->bytes_ob_sval, data, n);
    return b;
}

#define FAKE_UNITS 8 /* code units of every code object */

/* A line table giving line firstlineno + 1 + u for code unit u. */
static FUZZ_UNUSED size_t fake_linetable(fake_image_t *img, const sonde_pyoffsets_t *off)
{
    uint8_t table[2 * FAKE_UNITS];
    for (int u = 0; u < FAKE_UNITS; u++) {
        if (off->minor <= 9) {
            table[2 * u] = u == 0 ? 0 : 2;
            table[2 * u + 1] = 1;
        } else if (off->minor == 10) {
            table[2 * u] = 2;
            table[2 * u + 1] = 1;
        } else { /* code 13 (no columns), 1 unit, signed varint +1 */
            table[2 * u] = 0xE8;
            table[2 * u + 1] = 0x02;
        }
    }
    return fake_bytes(img, off, table, sizeof table);
}

/* An opcode with no inline cache that is neither a call nor special. */
static FUZZ_UNUSED int fake_plain_op(const sonde_pyoffsets_t *off)
{
    for (int op = 1; op < 256; op++)
        if (!sonde_pyop_is_call(off, (unsigned)op) && off->base_op[op] == op &&
            off->cache_units[op] == 0 && op != off->op_extended_arg &&
            op != off->op_instrumented_line && op != off->op_instrumented_instruction)
            return op;
    return 1;
}

static FUZZ_UNUSED int fake_call_op(const sonde_pyoffsets_t *off)
{
    for (int op = 1; op < 256; op++)
        if (sonde_pyop_is_call(off, (unsigned)op) && off->base_op[op] == op) return op;
    return 1;
}

/* Bytecode: a plain unit, EXTENDED_ARG, a call and its caches, plain
 * units; with `instrumented` (3.12+) unit 0 is INSTRUMENTED_LINE and the
 * call hidden behind INSTRUMENTED_INSTRUCTION. */
static FUZZ_UNUSED void fake_bytecode(const sonde_pyoffsets_t *off, uint8_t *code,
                                      bool instrumented)
{
    int call = fake_call_op(off);
    for (int u = 0; u < FAKE_UNITS; u++) {
        code[2 * u] = (uint8_t)fake_plain_op(off);
        code[2 * u + 1] = (uint8_t)u;
    }
    code[2] = (uint8_t)off->op_extended_arg;
    code[4] = (uint8_t)call;
    for (int k = 0; k < off->cache_units[call] && 3 + k < FAKE_UNITS; k++)
        code[2 * (3 + k)] = 0; /* CACHE */
    if (instrumented) {
        code[0] = (uint8_t)off->op_instrumented_line;
        code[4] = (uint8_t)off->op_instrumented_instruction;
    }
}

/* _PyCoMonitoringData for the instrumented bytecode: the opcodes hidden
 * at unit 0 (line data) and unit 2 (per instruction). */
static FUZZ_UNUSED size_t fake_monitoring(fake_image_t *img, const sonde_pyoffsets_t *off)
{
    size_t mon = fake_alloc(img, 128);
    size_t stride = off->line_data_size > 0 ? (size_t)off->line_data_size : 2;
    bool sized = off->line_data_bytes_per_entry >= 0 || off->minor == 13;
    size_t lines = fake_alloc(img, 1 + FAKE_UNITS * stride);
    size_t entries = lines + (size_t)(off->line_data_entries > 0 ? off->line_data_entries : 0);
    if (sized) {
        fake_put8(img, lines, 0, (uint8_t)stride);
        if (off->minor == 13) entries = lines + 1;
    }
    for (int u = 0; u < FAKE_UNITS; u++)
        fake_put8(img, entries, (int32_t)((size_t)u * stride) + off->line_data_original_opcode,
                  (uint8_t)fake_plain_op(off));
    size_t per_instr = fake_alloc(img, FAKE_UNITS);
    fake_put8(img, per_instr, 2, (uint8_t)fake_call_op(off));
    fake_put64(img, mon, off->monitoring_lines, fake_addr(lines));
    fake_put64(img, mon, off->monitoring_per_instruction_opcodes, fake_addr(per_instr));
    return mon;
}

static FUZZ_UNUSED size_t fake_code(fake_image_t *img, const sonde_pyoffsets_t *off,
                                    size_t code_type, const char *file, const char *name,
                                    enum fake_str_kind kind, bool instrumented)
{
    int32_t fields[] = {off->ob_type,   off->ob_size,          off->code_filename,
                        off->code_name, off->code_qualname,    off->code_linetable,
                        off->code_code, off->code_firstlineno, off->code_monitoring};
    size_t header = fake_span(fields, SONDE_ARRAY_LEN(fields));
    uint8_t bytecode[2 * FAKE_UNITS];
    instrumented = instrumented && off->code_monitoring >= 0 && off->op_instrumented_line >= 0;
    fake_bytecode(off, bytecode, instrumented);
    size_t adaptive = off->code_code_adaptive >= 0 ? (size_t)off->code_code_adaptive : 0;
    size_t code = fake_alloc(img, (adaptive > header ? adaptive : header) + sizeof bytecode);
    fake_put64(img, code, off->ob_type, fake_addr(code_type));
    fake_put64(img, code, off->code_filename, fake_addr(fake_str(img, off, file, kind)));
    fake_put64(img, code, off->code_name, fake_addr(fake_str(img, off, name, kind)));
    if (off->code_qualname >= 0) {
        char qual[64];
        snprintf(qual, sizeof qual, "Q.%s", name);
        fake_put64(img, code, off->code_qualname, fake_addr(fake_str(img, off, qual, kind)));
    }
    fake_put32(img, code, off->code_firstlineno, 10);
    fake_put64(img, code, off->code_linetable, fake_addr(fake_linetable(img, off)));
    if (off->code_code >= 0) {
        fake_put64(img, code, off->code_code,
                   fake_addr(fake_bytes(img, off, bytecode, sizeof bytecode)));
    } else {
        fake_put64(img, code, off->ob_size, FAKE_UNITS);
        fake_put(img, code, off->code_code_adaptive, bytecode, sizeof bytecode);
    }
    if (instrumented)
        fake_put64(img, code, off->code_monitoring, fake_addr(fake_monitoring(img, off)));
    return code;
}

/* A frame running code unit `unit` (-1: not started) of code; back is the
 * caller's frame offset, or (size_t)-1 for none. */
static FUZZ_UNUSED size_t fake_frame(fake_image_t *img, const sonde_pyoffsets_t *off, size_t code,
                                     size_t back, int unit, int owner)
{
    bool lasti = off->instr_kind == SONDE_PYINSTR_LASTI_BYTES ||
                 off->instr_kind == SONDE_PYINSTR_LASTI_UNITS;
    /* <= 3.10: f_executing (3.8, 3.9) / f_state (3.10) 12 bytes after f_lasti */
    int32_t state_at = lasti ? off->frame_instr + 12 : -1;
    int32_t fields[] = {off->frame_back, off->frame_code, off->frame_instr, off->frame_owner,
                        state_at};
    size_t frame = fake_alloc(img, fake_span(fields, SONDE_ARRAY_LEN(fields)));
    /* executing: f_executing 1 (3.8, 3.9), f_state FRAME_EXECUTING 0 (3.10) */
    if (off->instr_kind == SONDE_PYINSTR_LASTI_BYTES) fake_put8(img, frame, state_at, 1);
    fake_put64(img, frame, off->frame_back, back == (size_t)-1 ? 0 : fake_addr(back));
    fake_put64(img, frame, off->frame_code, fake_addr(code) | (off->frame_code_tag_bits & 1));
    fake_put8(img, frame, off->frame_owner, (uint8_t)owner);
    switch (off->instr_kind) {
    case SONDE_PYINSTR_LASTI_BYTES:
        fake_put32(img, frame, off->frame_instr, (uint32_t)(unit < 0 ? -1 : 2 * unit));
        break;
    case SONDE_PYINSTR_LASTI_UNITS:
        fake_put32(img, frame, off->frame_instr, (uint32_t)unit);
        break;
    default:
        fake_put64(img, frame, off->frame_instr,
                   fake_addr(code) + (uint64_t)off->code_code_adaptive +
                       (uint64_t)(2 * (int64_t)unit));
        break;
    }
    return frame;
}

static FUZZ_UNUSED size_t fake_tstate(fake_image_t *img, const sonde_pyoffsets_t *off,
                                      size_t interp, size_t frame, uint64_t pthread_id,
                                      uint64_t native_tid)
{
    int32_t fields[] = {off->tstate_next, off->tstate_interp, off->tstate_thread_id,
                        off->tstate_native_thread_id, off->tstate_frame};
    size_t tstate = fake_alloc(img, fake_span(fields, SONDE_ARRAY_LEN(fields)));
    fake_put64(img, tstate, off->tstate_interp, fake_addr(interp));
    fake_put64(img, tstate, off->tstate_thread_id, pthread_id);
    fake_put64(img, tstate, off->tstate_native_thread_id, native_tid);
    uint64_t frame_addr = frame == (size_t)-1 ? 0 : fake_addr(frame);
    if (off->frame_model == SONDE_PYFRAMES_CFRAME) {
        size_t cframe = fake_alloc(img, 64);
        fake_put64(img, cframe, off->cframe_current_frame, frame_addr);
        fake_put64(img, tstate, off->tstate_frame, fake_addr(cframe));
    } else {
        fake_put64(img, tstate, off->tstate_frame, frame_addr);
    }
    return tstate;
}

/* Variants of the seeds' interpreter. */
#define FAKE_WORLD_PLAIN 0    /* three threads: a stack, a cycle, a chain */
#define FAKE_WORLD_STRINGS 1  /* names in every string layout */
#define FAKE_WORLD_DEEP 2     /* one chain deeper than the stack limit */
#define FAKE_WORLD_STARTING 3 /* the runtime of an interpreter not started yet */
#define FAKE_WORLDS 4

/* _Py_DebugOffsets (3.13+) at the start of the runtime, as the target's
 * own headers would write it. */
static FUZZ_UNUSED void fake_debug_offsets(fake_image_t *img, const sonde_pyoffsets_t *off,
                                           size_t runtime)
{
    if (off->debug_version < 0) return;
    memcpy(img->bytes + runtime, "xdebugpy", 8);
    fake_put64(img, runtime, off->debug_version,
               (uint64_t)off->major << 24 | (uint64_t)off->minor << 16 | 0xf0u);
    for (int i = 0; i < off->n_debug_checks; i++)
        fake_put64(img, runtime, off->debug_checks[i].at, (uint64_t)off->debug_checks[i].expect);
    for (int i = 0; i < off->n_debug_fields; i++) {
        const struct sonde_pydebug_field *f = &off->debug_fields[i];
        int32_t value = 0;
        memcpy(&value, (const uint8_t *)off + f->field, sizeof value);
        uint64_t base = f->minus_at >= 0 ? 4096 : 0;
        if (f->minus_at >= 0) fake_put64(img, runtime, f->minus_at, base);
        fake_put64(img, runtime, f->at, base + (uint64_t)value);
    }
}

/* Builds an interpreter of layout off into img (runtime at offset 0).
 * Returns the offset of the code type object (PyCode_Type). */
static FUZZ_UNUSED size_t fake_world(fake_image_t *img, const sonde_pyoffsets_t *off, int variant)
{
    int32_t runtime_fields[] = {off->runtime_interpreters_head, off->runtime_interpreters_main,
                                off->runtime_gilstate_tstate_current, off->debug_size - 8};
    size_t runtime = fake_alloc(img, fake_span(runtime_fields, 4));
    fake_debug_offsets(img, off, runtime);
    size_t code_type = fake_alloc(img, (size_t)off->type_tp_name + 8);
    size_t type_name = fake_alloc(img, 8);
    memcpy(img->bytes + type_name, "code", 5);
    fake_put64(img, code_type, off->type_tp_name, fake_addr(type_name));
    if (variant == FAKE_WORLD_STARTING) return code_type;

    int32_t interp_fields[] = {off->interp_threads_head, off->interp_ceval_gil, off->interp_next};
    size_t interp = fake_alloc(img, fake_span(interp_fields, 3));
    fake_put64(img, runtime, off->runtime_interpreters_main, fake_addr(interp));
    fake_put64(img, runtime, off->runtime_interpreters_head, fake_addr(interp));

    enum fake_str_kind kind = variant == FAKE_WORLD_STRINGS ? FAKE_STR_UCS2 : FAKE_STR_ASCII;
    size_t code_x = fake_code(img, off, code_type, "/src/x.py", "fx", kind, true);
    size_t code_y = fake_code(img, off, code_type, "/src/y.py", "fy", FAKE_STR_ASCII, false);
    if (variant == FAKE_WORLD_STRINGS) {
        code_y = fake_code(img, off, code_type, "/src/u4.py", "f4", FAKE_STR_UCS4, false);
        code_x = fake_code(img, off, code_type, "rel/nc.py", "fnc", FAKE_STR_NONCOMPACT, true);
    }
    size_t none = (size_t)-1;
    size_t t0_frame, t1_frame, t2_frame;
    if (variant == FAKE_WORLD_DEEP) {
        size_t chain = none;
        for (int i = 0; i < SONDE_STACK_MAX_DEPTH + 8; i++)
            chain = fake_frame(img, off, i % 2 ? code_x : code_y, chain, i % FAKE_UNITS, 0);
        t0_frame = chain;
        t1_frame = t2_frame = none;
    } else {
        /* thread 0: A (x, in the call) -> B (y) [-> C-stack and interpreter
         * frames (3.12+)] [-> a non-code executable (3.13+)] -> C (x, not
         * started) */
        size_t below = fake_frame(img, off, code_x, none, -1, 0);
        if (off->frame_model == SONDE_PYFRAMES_DIRECT) {
            size_t not_code = fake_alloc(img, 64);
            fake_put64(img, not_code, off->ob_type, fake_addr(type_name));
            below = fake_frame(img, off, not_code, below, 0, 0);
        }
        if (off->frame_owner_cstack >= 0)
            below = fake_frame(img, off, code_y, below, 0, off->frame_owner_cstack);
        if (off->frame_code_tag_bits)
            below = fake_frame(img, off, code_y, below, 0, off->frame_owner_cstack + 1);
        size_t b = fake_frame(img, off, code_y, below, 0, 1 /* a generator's */);
        t0_frame = fake_frame(img, off, code_x, b, 2, 0);
        /* thread 1: a cycle D -> E -> D */
        size_t d = fake_frame(img, off, code_x, none, 1, 0);
        size_t e = fake_frame(img, off, code_y, d, 3, 0);
        fake_put64(img, d, off->frame_back, fake_addr(e));
        t1_frame = e;
        /* thread 2: a short chain */
        t2_frame = none;
        for (int i = 0; i < 5; i++)
            t2_frame = fake_frame(img, off, code_y, t2_frame, i, 0);
    }
    size_t t0 = fake_tstate(img, off, interp, t0_frame, FAKE_BASE, 4242);
    size_t t1 = fake_tstate(img, off, interp, t1_frame, FAKE_BASE + 64, 4243);
    size_t t2 = fake_tstate(img, off, interp, t2_frame, 0, 0);
    fake_put64(img, interp, off->interp_threads_head, fake_addr(t0));
    fake_put64(img, t0, off->tstate_next, fake_addr(t1));
    fake_put64(img, t1, off->tstate_next, fake_addr(t2));

    if (off->gil_model == SONDE_PYGIL_GILSTATE) {
        fake_put64(img, runtime, off->runtime_gilstate_tstate_current, fake_addr(t1));
    } else {
        size_t gil = fake_alloc(img, 64);
        fake_put64(img, interp, off->interp_ceval_gil, fake_addr(gil));
        fake_put32(img, gil, off->gil_locked, 1);
        fake_put64(img, gil, off->gil_last_holder, fake_addr(t1));
    }
    return code_type;
}

/* ---- an ELF image holding an interpreter's symbols (seeds) --------------------- */

#include <elf.h>

#define FAKE_RUNTIME_VADDR 0x1000ull /* _PyRuntime's link-time address */

/* What a seed's ELF file holds. */
typedef struct fake_elf_spec {
    bool dynsym, symtab;    /* the three symbols in .dynsym / .symtab */
    uint64_t py_version;    /* Py_Version's address (0: no such symbol) */
    bool pyruntime_section; /* a .PyRuntime section at FAKE_RUNTIME_VADDR */
    const char *rodata;     /* .rodata's text (a version string), or NULL */
    bool no_sections;       /* no section headers at all */
} fake_elf_spec_t;

static FUZZ_UNUSED size_t fake_elf_strtab(fake_image_t *f, const char *const *names, int n,
                                          uint32_t *at)
{
    size_t len = 1;
    for (int i = 0; i < n; i++)
        len += strlen(names[i]) + 1;
    size_t tab = fake_alloc(f, len);
    size_t pos = 1;
    for (int i = 0; i < n; i++) {
        at[i] = (uint32_t)pos;
        memcpy(f->bytes + tab + pos, names[i], strlen(names[i]) + 1);
        pos += strlen(names[i]) + 1;
    }
    return tab;
}

/* A symbol table of _PyRuntime, PyCode_Type (and Py_Version) with its
 * string table; returns the table's offset, *count its symbols. */
static FUZZ_UNUSED size_t fake_elf_symbols(fake_image_t *f, const fake_elf_spec_t *spec,
                                           size_t *strtab, size_t *strtab_len, int *count)
{
    const char *names[] = {"_PyRuntime", "PyCode_Type", "Py_Version"};
    uint64_t values[] = {FAKE_RUNTIME_VADDR, FAKE_RUNTIME_VADDR + 0x100, spec->py_version};
    int n = spec->py_version ? 3 : 2;
    uint32_t at[3];
    size_t before = f->len;
    *strtab = fake_elf_strtab(f, names, n, at);
    *strtab_len = f->len - before;
    size_t syms = fake_alloc(f, (size_t)(n + 1) * sizeof(Elf64_Sym));
    for (int i = 0; i < n; i++) {
        Elf64_Sym sym = {at[i], ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT), 0, 1, values[i], 8};
        memcpy(f->bytes + syms + (size_t)(i + 1) * sizeof sym, &sym, sizeof sym);
    }
    *count = n + 1;
    return syms;
}

/* Builds the ELF file of spec into f (from offset 0). */
static FUZZ_UNUSED void fake_elf(fake_image_t *f, const fake_elf_spec_t *spec)
{
    Elf64_Shdr shdrs[10];
    const char *sh_names[10];
    int nsh = 1;
    memset(shdrs, 0, sizeof shdrs);
    sh_names[0] = "";
    size_t eh = fake_alloc(f, sizeof(Elf64_Ehdr));
    size_t ph = fake_alloc(f, sizeof(Elf64_Phdr));
    Elf64_Phdr load = {PT_LOAD, PF_R | PF_X, 0, 0, 0, 0x10000, 0x10000, 0x1000};
    memcpy(f->bytes + ph, &load, sizeof load);
    for (int kind = 0; kind < 2; kind++) {
        if (kind == 0 ? !spec->dynsym : !spec->symtab) continue;
        size_t str = 0, str_len = 0;
        int count = 0;
        size_t syms = fake_elf_symbols(f, spec, &str, &str_len, &count);
        Elf64_Shdr strs = {0, SHT_STRTAB, 0, 0, str, str_len, 0, 0, 1, 0};
        shdrs[nsh] = strs;
        sh_names[nsh++] = kind == 0 ? ".dynstr" : ".strtab";
        Elf64_Shdr tab = {0,
                          kind == 0 ? SHT_DYNSYM : SHT_SYMTAB,
                          0,
                          0,
                          syms,
                          (uint64_t)count * sizeof(Elf64_Sym),
                          (uint32_t)(nsh - 1),
                          1,
                          8,
                          sizeof(Elf64_Sym)};
        shdrs[nsh] = tab;
        sh_names[nsh++] = kind == 0 ? ".dynsym" : ".symtab";
    }
    if (spec->rodata) {
        size_t len = strlen(spec->rodata) + 1;
        size_t ro = fake_alloc(f, len);
        memcpy(f->bytes + ro, spec->rodata, len);
        Elf64_Shdr sh = {0, SHT_PROGBITS, SHF_ALLOC, 0x2000, ro, len, 0, 0, 1, 0};
        shdrs[nsh] = sh;
        sh_names[nsh++] = ".rodata";
    }
    if (spec->pyruntime_section) {
        Elf64_Shdr sh = {
            0, SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, FAKE_RUNTIME_VADDR, 0, 0x800, 0, 0, 64, 0};
        shdrs[nsh] = sh;
        sh_names[nsh++] = ".PyRuntime";
    }
    sh_names[nsh] = ".shstrtab";
    uint32_t name_at[10];
    size_t before = f->len;
    size_t shstr = fake_elf_strtab(f, sh_names + 1, nsh, name_at + 1);
    Elf64_Shdr names_sh = {0, SHT_STRTAB, 0, 0, shstr, f->len - before, 0, 0, 1, 0};
    shdrs[nsh++] = names_sh;
    for (int i = 1; i < nsh; i++)
        shdrs[i].sh_name = name_at[i];
    size_t sh = fake_alloc(f, (size_t)nsh * sizeof(Elf64_Shdr));
    memcpy(f->bytes + sh, shdrs, (size_t)nsh * sizeof(Elf64_Shdr));

    Elf64_Ehdr header;
    memset(&header, 0, sizeof header);
    memcpy(header.e_ident, ELFMAG, SELFMAG);
    header.e_ident[EI_CLASS] = ELFCLASS64;
    header.e_ident[EI_DATA] = ELFDATA2LSB;
    header.e_ident[EI_VERSION] = EV_CURRENT;
    header.e_type = ET_DYN;
    header.e_machine = EM_X86_64;
    header.e_version = EV_CURRENT;
    header.e_phoff = ph;
    header.e_ehsize = sizeof header;
    header.e_phentsize = sizeof(Elf64_Phdr);
    header.e_phnum = 1;
    if (!spec->no_sections) {
        header.e_shoff = sh;
        header.e_shentsize = sizeof(Elf64_Shdr);
        header.e_shnum = (uint16_t)nsh;
        header.e_shstrndx = (uint16_t)(nsh - 1);
    }
    memcpy(f->bytes + eh, &header, sizeof header);
}

/* Writes len bytes to dir/gen-name (`make fuzz-seeds` replaces the gen-
 * files); aborts on failure (seed writing only). */
static FUZZ_UNUSED void fake_write_seed(const char *dir, const char *name, const void *data,
                                        size_t len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/gen-%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
        perror(path);
        abort();
    }
}

#endif
