/* pyread_internal.h — names shared between the files of src/pyread/.
 *
 * Owns: the internal interfaces of the reader: remote strings (unicode.c),
 * the code-object cache (code.c) and its call-family classification
 * (calls.c), the pthread tid probe (tid.c), the ELF
 * reader (elf.c) and the /proc/PID/maps parser (maps.c). Nothing outside
 * src/pyread/ (and its unit tests) includes this. Nothing here runs in a
 * signal handler.
 */
#ifndef SONDE_PYREAD_INTERNAL_H
#define SONDE_PYREAD_INTERNAL_H

#include "pyoffsets.h"
#include "pyread.h"

/* Bytes read at once: the fields of a frame, of a thread state, of a code
 * object's header. A layout whose fields spread wider is refused at open
 * (proc.c), so a target's _Py_DebugOffsets cannot make a reader overrun. */
#define SONDE_PYREAD_FRAME_SPAN_MAX 256
#define SONDE_PYREAD_THREAD_SPAN_MAX 512
#define SONDE_PYREAD_CODE_HEADER_MAX 512
#define SONDE_PYREAD_GIL_SPAN_MAX 64
/* A str header is at most this big in any supported layout (unicode.c). */
#define SONDE_PYREAD_STR_HEADER_MAX 128

/* Whether unicode.c can read str objects of this layout within its header
 * buffer (every field it reads inside the bytes it reads; shifts inside the
 * 32-bit state word). unicode.c */
bool sonde__pystr_layout_ok(const sonde_pyoffsets_t *off);

/* ---- proc.c ------------------------------------------------------------- */

/* Applies a copy of a target's _Py_DebugOffsets (len bytes) to `layout`, a
 * copy of its version's table (3.13+; a no-op before): the fields it covers
 * are taken from it. Returns 0 or -ENOTSUP (no cookie, another version, a
 * free-threaded build, an offset out of bounds); `layout` is then partly
 * changed. Exposed for the unit test. */
int sonde__pyoffsets_apply_debug(sonde_pyoffsets_t *layout, const uint8_t *debug, size_t len);

/* ---- unicode.c ----------------------------------------------------------- */

/* Reads the str object at addr into out as NUL-terminated UTF-8 of at most
 * min(cap - 1, SONDE_PY_MAX_STRING) bytes, cut at a character boundary.
 * Lone surrogates, NUL and invalid code points become U+FFFD. Returns the
 * length written, or -errno (-EINVAL: not a string this layout can read);
 * on error out is "". */
int sonde_pystr_read(sonde_mem_t *mem, const sonde_pyoffsets_t *off, uint64_t addr, char *out,
                     size_t cap);

/* ---- code.c -------------------------------------------------------------- */

/* What a frame needs from a code object, resolved through the cache. */
typedef struct sonde_pycode_hit {
    uint32_t code_id;
    const void *info; /* private to code.c, valid until the cache is freed */
} sonde_pycode_hit_t;

/* Creates or frees the code cache of proc (proc->codes). 0 or -ENOMEM. */
int sonde_pycode_cache_new(sonde_pyproc_t *proc);
void sonde_pycode_cache_free(sonde_pyproc_t *proc);

/* Resolves the code object at addr: one read of its header, compared with
 * the cached copy; on a miss (or a changed object at a reused address)
 * reads its names, line table and bytecode and gives it a new id.
 * Returns 0, -EINVAL when addr is not a code object, or -errno. */
int sonde_pycode_get(sonde_pyproc_t *proc, uint64_t addr, sonde_pycode_hit_t *hit);

/* Starts a new frame walk: a code object is compared with the cache once
 * per walk, however many frames run it. */
void sonde_pycode_new_walk(sonde_pyproc_t *proc);

/* The line of byte offset `offset` in a resolved code object (a negative
 * offset, a frame not started yet, gives co_firstlineno; -1 for a negative
 * co_firstlineno, as for any line that is none), and whether the
 * instruction at that offset belongs to the call family. */
int sonde_pycode_line(const sonde_pycode_hit_t *hit, int64_t offset);
bool sonde_pycode_in_call(const sonde_pycode_hit_t *hit, int64_t offset);

/* ---- calls.c ------------------------------------------------------------- */

/* Computes the in_call bitmap (1 bit per 2-byte code unit, set for every
 * unit of a call-family instruction, its EXTENDED_ARG prefixes and its
 * inline caches) of bytecode `code` (n_units code units). orig_line and
 * orig_instr, when not NULL, give the opcodes hidden by INSTRUMENTED_LINE
 * (stride line_stride bytes) and INSTRUMENTED_INSTRUCTION. Pure; exposed
 * for the unit test. */
void sonde_pycode_call_bits(const sonde_pyoffsets_t *off, const uint8_t *code, uint32_t n_units,
                            const uint8_t *orig_line, size_t line_stride, const uint8_t *orig_instr,
                            uint8_t *bits);

/* ---- tid.c --------------------------------------------------------------- */

/* Offset of the kernel thread id inside this process's struct pthread
 * (pthread_self() points at it in glibc and musl), found once by scanning
 * the struct of this thread and of a short-lived helper thread for their
 * gettid() values. Returns the offset or -errno. */
int sonde_pthread_tid_offset(void);

/* ---- elf.c --------------------------------------------------------------- */

typedef struct sonde_elf {
    int fd; /* borrowed */
    uint64_t file_size;
    uint16_t type;              /* ET_EXEC / ET_DYN */
    uint64_t lowest_load_vaddr; /* lowest PT_LOAD p_vaddr, page-aligned down */
    bool has_load;
    void *shdrs; /* owned: Elf64_Shdr[shnum] */
    uint32_t shnum;
    char *shstrtab; /* owned */
    uint64_t shstrtab_len;
} sonde_elf_t;

/* Reads the headers of the ELF64 little-endian file open on fd (which stays
 * the caller's). Returns 0, -ENOEXEC when it is not such a file, or -errno. */
int sonde_elf_open(sonde_elf_t *elf, int fd);
void sonde_elf_close(sonde_elf_t *elf);

/* Looks up n defined symbols by name in .dynsym, then .symtab; values[i]
 * (the st_value, a link-time address) stays 0 for a name not found.
 * Returns how many were found, or -errno. */
int sonde_elf_symbols(sonde_elf_t *elf, const char *const *names, int n, uint64_t *values);

/* Finds a section by name. Returns 0 with its link-time address, size and
 * file offset, -ENOENT if absent, or -errno. */
int sonde_elf_section(sonde_elf_t *elf, const char *name, uint64_t *addr, uint64_t *size,
                      uint64_t *file_offset);

/* Reads len bytes at file offset off, refusing ranges past the end of the
 * file. Returns 0 or -errno. */
int sonde_elf_pread(const sonde_elf_t *elf, uint64_t off, void *buf, size_t len);

/* ---- maps.c -------------------------------------------------------------- */

#define SONDE_MAPS_PATH_MAX 4096

typedef struct sonde_maps_line {
    uint64_t start, end, offset, inode;
    char perms[5];
    const char *path; /* borrowed from the text; "" for anonymous */
    size_t path_len;
} sonde_maps_line_t;

/* Parses one line of /proc/PID/maps (without its newline). Returns 0 or
 * -EINVAL. */
int sonde_maps_parse_line(const char *line, size_t len, sonde_maps_line_t *out);

/* A file mapped in the target that may hold the interpreter. */
typedef struct sonde_maps_image {
    char path[SONDE_MAPS_PATH_MAX]; /* as the target sees it */
    uint64_t base;                  /* start of its mapping at file offset 0 */
    uint64_t end;                   /* end of that mapping */
    uint64_t inode;
    bool deleted;      /* maps said " (deleted)": the path now names another file, or none */
    bool is_libpython; /* libpython3.N.so... rather than the exe */
    int minor_hint;    /* N from libpython3.N / python3.N, or -1 */
} sonde_maps_image_t;

/* Finds candidate images in the text of /proc/PID/maps: the executable
 * (exe_path, may be NULL, with or without the " (deleted)" the kernel
 * appends to a replaced file) first, then each libpython3.N.so* mapping.
 * Returns the number written to images (at most max), or -errno. */
int sonde_maps_find_images(const char *text, size_t len, const char *exe_path,
                           sonde_maps_image_t *images, int max);

/* Minor version N named by a file name like libpython3.N.so.1.0,
 * libpython3.Nm.so or python3.N; -1 when it names none. */
int sonde_maps_minor_hint(const char *path, size_t len);

#endif
