/* pyread.h — reading a CPython interpreter's state as plain memory.
 *
 * Owns: the interface shared by the in-process sampler (src/ext/, which
 * reads its own process through a fault-safe reader, without the GIL) and
 * the attach reader (src/attach/, which reads another process). Nothing
 * here links libpython or calls the Python C API: every structure is read
 * by copy through sonde_mem_read and every pointer, size and loop is
 * bounded, because the memory may change or be freed under the reader.
 *
 * Not async-signal-safe (the code cache allocates); call it from a normal
 * thread. One sonde_pyproc_t must be used by one thread at a time.
 */
#ifndef SONDE_PYREAD_H
#define SONDE_PYREAD_H

#include "../core/common.h"
#include "../prim/prim.h"

#include <sys/types.h>

/* Named bounds on hostile input. */
#define SONDE_PY_MAX_THREADS                                                                       \
    (1 << 22)                            /* thread states walked per sample (the
                                            kernel's largest pid_max) */
#define SONDE_PY_MAX_DEPTH (1 << 14)     /* frames walked per thread */
#define SONDE_PY_MAX_STRING 4096         /* bytes of a file or function name */
#define SONDE_PY_MAX_LINETABLE (1 << 20) /* bytes of a line table */
#define SONDE_PY_MAX_CODE (1 << 22)      /* bytes of bytecode */

/* ---- memory source ------------------------------------------------------ */

/* A memory source: this process (pid 0) or another one. */
typedef struct sonde_mem {
    pid_t pid;                     /* target pid; getpid() for self */
    sonde_prim_kept_fd_t procmem;  /* /proc/PID/mem fallback, not open until
                                      needed; checked before each use in this
                                      process (the program may close it) */
    bool use_procmem;              /* process_vm_readv refused (seccomp): use procmem */
    bool self;                     /* reads this process: follows it across fork() */
    unsigned fork_generation;      /* forks seen by this source (self only) */
    uint64_t reads;                /* statistics: successful reads */
    uint64_t faults;               /* statistics: failed reads */
    struct sonde_mem_pages *pages; /* owned; page snapshot (attach), NULL
                                      when never used */
    bool direct;                   /* reads this process by plain copies (see
                                 sonde_mem_open_direct) */
} sonde_mem_t;

/* Opens a memory source. pid 0 means this process (in a child after
 * fork(), the child's own memory). Returns 0 or -errno. */
int sonde_mem_open(sonde_mem_t *mem, pid_t pid);
/* Opens a source that reads this process by plain copies (memcpy), for a
 * thread reading its own frames from inside an allocator hook: they cannot
 * change while it reads them, and a system call per read would cost too
 * much there. Addresses are still bounds-checked, but an unmapped one
 * faults: use it only on memory known to be live. Returns 0. */
int sonde_mem_open_direct(sonde_mem_t *mem);
/* Reads exactly len bytes at addr. Returns 0, or -EFAULT for an unmapped or
 * partially mapped range, -ESRCH if the process is gone, -EPERM/-EACCES if
 * reading is not permitted. Never faults the caller. */
int sonde_mem_read(sonde_mem_t *mem, uint64_t addr, void *buf, size_t len);
void sonde_mem_close(sonde_mem_t *mem);

/* Page snapshot, for a reader of another process (where each read is a
 * system call of a few microseconds): between begin and end, a read of at
 * most one page is served from a copy of the whole page(s) it touches,
 * each page read once (at most SONDE_MEM_SNAPSHOT_PAGES of them; further
 * reads, larger ones and unreadable pages go direct). A frame walk of
 * CPython 3.11+ (frames packed in per-thread chunks) then costs a few
 * reads instead of one or two per frame. What a snapshot returns may be
 * as old as its begin: use one per walk. begin returns 0 or -ENOMEM (reads
 * then simply go direct); end is a no-op without begin. */
#define SONDE_MEM_SNAPSHOT_PAGES 64
int sonde_mem_snapshot_begin(sonde_mem_t *mem);
void sonde_mem_snapshot_end(sonde_mem_t *mem);

/* ---- per-version layouts ------------------------------------------------ */

/* Opaque here; defined in pyoffsets.h (generated tables, one per minor
 * version, produced by tools/gen_offsets against each interpreter's own
 * internal headers). */
typedef struct sonde_pyoffsets sonde_pyoffsets_t;

/* Layout for CPython major.minor, or NULL if unsupported. */
const sonde_pyoffsets_t *sonde_pyoffsets_find(int major, int minor);

/* ---- an interpreter being read ------------------------------------------ */

/* Facts about one code object, kept in the reader's cache. Strings are
 * UTF-8, NUL-terminated, owned by the cache and valid until
 * sonde_pyproc_close. */
typedef struct sonde_pycode {
    uint64_t addr;        /* address of the code object when cached */
    const char *filename; /* co_filename */
    const char *name;     /* co_qualname where the version has it, else co_name */
    int firstlineno;      /* co_firstlineno */
} sonde_pycode_t;

/* One Python frame as seen by a sample. */
typedef struct sonde_pyframe {
    uint32_t code_id;     /* index of the code object in the cache, stable for
                         the lifetime of the sonde_pyproc_t */
    int32_t lineno;       /* current line, or -1 when unknown */
    bool in_call;         /* the frame's current instruction is a call-family
                         opcode (CALL, CALL_FUNCTION, specialised forms...):
                         if this is the innermost Python frame, the thread
                         is executing native code called from it */
    int32_t instr_offset; /* byte offset of the current instruction in the
                             bytecode, negative before the first one: with
                             the frame's address, where the thread stands */
} sonde_pyframe_t;

/* One thread state. */
typedef struct sonde_pythread {
    uint64_t tstate;     /* address of the PyThreadState */
    uint64_t pthread_id; /* tstate->thread_id (pthread_t of the thread) */
    pid_t native_tid;    /* kernel thread id, 0 when not known */
    bool holds_gil;      /* the thread holds the GIL (best effort) */
} sonde_pythread_t;

struct sonde_pycode_cache; /* private to code.c */

typedef struct sonde_pyproc {
    sonde_mem_t mem;
    const sonde_pyoffsets_t *off;  /* the layout read by: the static table of
                                     the version, or (3.13+) own_layout */
    sonde_pyoffsets_t *own_layout; /* owned, 3.13+: the table with every
                                      field the target's _Py_DebugOffsets
                                      covers taken from it; NULL before */
    int version_major, version_minor, version_micro;
    uint64_t runtime_addr;            /* &_PyRuntime in the target */
    uint64_t interp_addr;             /* main interpreter (PyInterpreterState *) */
    uint64_t code_type_addr;          /* &PyCode_Type in the target, 0 = unchecked */
    struct sonde_pycode_cache *codes; /* owned */
    uint64_t sample_errors;           /* statistics: samples ended by a bad read */
    uint64_t gil_addr;                /* 3.12+: the main interpreter's struct
                                         _gil_runtime_state, 0 until first read */
    int32_t pthread_tid_offset;       /* <=3.10: offset of the kernel tid inside
                                         glibc's struct pthread (found in this
                                         process at open), -1 when unknown */
} sonde_pyproc_t;

/* Prepares to read this process. version is PY_VERSION_HEX; runtime_addr is
 * &_PyRuntime (dlsym), code_type_addr is &PyCode_Type. On 3.13+ the layout
 * of every field _Py_DebugOffsets covers is taken from this process's own
 * copy of it. Returns 0 or -errno (-ENOTSUP when the version has no layout,
 * or when the runtime in memory does not fit it: 3.13+ no "xdebugpy"
 * cookie, another version in it, an offset out of bounds, a free-threaded
 * build, or the first thread state not pointing back at the main
 * interpreter). For CPython <= 3.10 this starts and joins one short-lived
 * thread (see tid.c). */
int sonde_pyproc_open_self(sonde_pyproc_t *proc, unsigned long version_hex, uint64_t runtime_addr,
                           uint64_t code_type_addr);
/* Prepares to read another process: finds libpython or the executable in
 * /proc/PID/maps, locates _PyRuntime through the ELF symbol tables
 * (.dynsym, .symtab, or the .PyRuntime section of a stripped binary),
 * detects the version and picks its layout (on 3.13+ with the fields the
 * target's _Py_DebugOffsets covers taken from it). Returns 0 or -errno:
 * -ESRCH no such process,
 * -EPERM/-EACCES not permitted, -ENOEXEC not a Python process, -ENOTSUP a
 * version without a layout (the version is still filled in). */
int sonde_pyproc_open_pid(sonde_pyproc_t *proc, pid_t pid);
void sonde_pyproc_close(sonde_pyproc_t *proc);

/* Writes one line (no newline) saying why a version cannot be read, e.g.
 * "Python 3.16.0, which sonde does not support (it reads CPython 3.8 to
 * 3.15)", or, for a supported minor version whose memory did not fit,
 * "Python 3.14.2 with a memory layout sonde does not recognise (...)".
 * major 0 means unknown. Returns snprintf's count. */
int sonde_pyversion_unsupported_text(char *out, size_t cap, int major, int minor, int micro);

/* Thread states of the main interpreter, in list order (newest first: the
 * main thread's is the last). A thread state found freed or foreign during
 * the walk ends the list early (counted in sample_errors); so do a cycle
 * and SONDE_PY_MAX_THREADS entries.
 *   sonde_pythread_iter_begin: 0 (an empty walk while the interpreter is
 *                              not initialised yet), or -errno
 *   sonde_pythread_iter_next:  1 with *thread filled, 0 at the end */
typedef struct sonde_pythread_iter {
    sonde_pyproc_t *proc;
    uint64_t interp;     /* the main interpreter's address */
    uint64_t next;       /* the next thread state to read, 0 = end */
    uint64_t holder;     /* the thread state holding the GIL, 0 unknown */
    int32_t lo, hi;      /* the span of a thread state's fields read */
    uint32_t count;      /* thread states read so far */
    uint64_t cycle_mark; /* cycle check (Brent): the state last marked */
    uint32_t cycle_lap, cycle_power;
} sonde_pythread_iter_t;

int sonde_pythread_iter_begin(sonde_pyproc_t *proc, sonde_pythread_iter_t *it);
int sonde_pythread_iter_next(sonde_pythread_iter_t *it, sonde_pythread_t *thread);

/* Lists the thread states of the main interpreter (at most max, in list
 * order) through the iterator. Returns the count or -errno; 0 while the
 * interpreter is not initialised yet. */
int sonde_pyproc_threads(sonde_pyproc_t *proc, sonde_pythread_t *threads, int max);

/* Reads which thread state of the main interpreter holds the GIL now: one
 * read (3.12+: two the first time, finding the GIL). Returns 0 with
 * *holder the thread state's address, or 0 when the GIL is free; or
 * -errno (*holder 0) when it could not be read. */
int sonde_pyproc_gil_holder(sonde_pyproc_t *proc, uint64_t *holder);
/* Reads the GIL's switch interval (sys.setswitchinterval: a thread waiting
 * for the GIL asks its holder to let go after that long), one read.
 * Returns 0 with *ns, or -errno (*ns 0) when it could not be read. */
int sonde_pyproc_gil_switch_ns(sonde_pyproc_t *proc, sonde_ns_t *ns);

/* PEP 768 (CPython 3.14+; remote_exec.c): asks the thread of thread state
 * tstate to run the Python file at path (absolute, shorter than the
 * target's limit, 512 bytes) at its next safe point, with the GIL; the
 * thread clears the request when it takes it. The command only (writes
 * another process's memory). Returns 0, or -errno: -ENOTSUP (before 3.14,
 * or a layout without the fields), -ENOPROTOOPT (remote debugging
 * disabled in the target: -X disable-remote-debug,
 * PYTHON_DISABLE_REMOTE_DEBUG, or a build without it), -EBUSY (a request
 * of another debugger is pending on that thread), -ENAMETOOLONG, or what
 * a read or write gave (-EPERM, -ESRCH, -EFAULT). */
int sonde_pyproc_remote_exec(sonde_pyproc_t *proc, uint64_t tstate, const char *path);
/* Sets the thread's eval breaker bit again (a request still pending whose
 * bit the thread cleared between the read and the write). 0 or -errno. */
int sonde_pyproc_remote_kick(sonde_pyproc_t *proc, uint64_t tstate);
/* 1 while the thread's request is pending (not taken yet), 0 once taken or
 * cancelled, or -errno (-ENOTSUP before 3.14). */
int sonde_pyproc_remote_pending(sonde_pyproc_t *proc, uint64_t tstate);
/* Withdraws a pending request (one already taken runs anyway). 0 or -errno. */
int sonde_pyproc_remote_cancel(sonde_pyproc_t *proc, uint64_t tstate);

/* Frame iteration, innermost frame first. Frames owned by the C stack (the
 * 3.12+ entry shims) are skipped. Every walk starts with
 * sonde_pyframe_iter_begin (the code cache compares a code object's header
 * once per walk, however many of its frames the walk meets).
 *   sonde_pyframe_iter_begin: 0, or -errno if the thread state is unreadable
 *   sonde_pyframe_iter_next:  1 with *frame filled, 0 at the end of the stack
 *                             (also when the walk was cut at SONDE_PY_MAX_DEPTH
 *                             or at a cycle: it->truncated is then set),
 *                             -errno when a read failed (the caller ends the
 *                             sample; the iterator is then finished). */
typedef struct sonde_pyframe_iter {
    sonde_pyproc_t *proc;
    uint64_t next_frame; /* address of the next frame to read, 0 = end */
    int depth;           /* frames read so far, skipped ones included */
    bool truncated;      /* the walk stopped at SONDE_PY_MAX_DEPTH or at a
                            cycle in the frame chain */
    uint64_t cycle_mark; /* cycle check: the frame read at the last
                            power-of-two depth */
    uint64_t frame_addr; /* address of the frame last returned */
    uint32_t doubtful;   /* frames skipped because what they execute is not
                            a code object (3.13: a frame being set up or torn
                            down while it was read can look like that) */
    bool detached;       /* the walk ended at a generator's frame with no
                            caller: it yielded while the walk read the
                            frames below, so the stack is cut there; or
                            (<= 3.10) met a frame that is not executing
                            (returned, reused or suspended meanwhile) */
} sonde_pyframe_iter_t;

int sonde_pyframe_iter_begin(sonde_pyproc_t *proc, uint64_t tstate, sonde_pyframe_iter_t *it);
int sonde_pyframe_iter_next(sonde_pyframe_iter_t *it, sonde_pyframe_t *frame);

/* The cached facts for a code id returned in a frame; NULL if out of range. */
const sonde_pycode_t *sonde_pyproc_code(const sonde_pyproc_t *proc, uint32_t code_id);
/* Number of code ids handed out so far (ids are 0..count-1). */
uint32_t sonde_pyproc_code_count(const sonde_pyproc_t *proc);

/* ---- pure helpers (unit-tested) ----------------------------------------- */

/* Line number for the instruction at byte offset `offset` of the bytecode,
 * decoding the line table format of the given minor version (3.8/3.9
 * co_lnotab, 3.10 co_linetable, 3.11+ location table). Range ends are
 * exclusive. Returns the line, or -1 when the table says "no line" or is
 * malformed. */
int sonde_linetable_lookup(int minor, const uint8_t *table, size_t table_len, int firstlineno,
                           uint32_t offset);

#endif
