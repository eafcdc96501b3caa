/* shim.h — the interface between the allocator shim and its users.
 *
 * Owns: the types and entry points of libsonde_shim.so, the library that
 * `sonde run --memory` preloads (LD_PRELOAD) into the profiled process. The
 * shim interposes malloc and its family, memcpy/memmove, wraps Python's
 * allocator domains and its arena allocator, and keeps per-thread byte
 * counts. It is inert until a user (the extension module, src/ext/memory.c)
 * starts it with sonde_shim_start; it then reports, on the thread that
 * caused it:
 *   - an allocation sample: allocations are sampled by bytes requested
 *     (malloc and its family, and Python's allocator domains, at the sizes
 *     the program asked for), with marks a Poisson process of mean
 *     sample_bytes over each thread's requests; the allocation a mark
 *     falls in is reported with its expected weight and remembered, by
 *     address, until it is freed;
 *   - a free sample when a remembered allocation is freed (with the site
 *     the user returned for it, so the line that made it is charged);
 *   - a copy sample every ~copy_sample_bytes bytes passed through memcpy or
 *     memmove (rate-based: exponentially spaced marks).
 * It also keeps the program's footprint (usable sizes of malloc blocks
 * and Python's arenas), sent along with each allocation and free sample.
 * The user never links the shim: it finds these entry points with
 * dlsym(RTLD_DEFAULT, SONDE_SHIM_SYM_*), so a process without the shim just
 * has no memory profiling. Nothing here needs libpython: Python's allocator
 * structures are described by layout, the same in every version of
 * src/pyread/pyversions.h (each version's generated table records them from
 * its headers, and tests/unit/test_pyread_debug.c checks them against
 * these types).
 */
#ifndef SONDE_SHIM_H
#define SONDE_SHIM_H

#include "../core/common.h"

#define SONDE_SHIM_ABI 2

/* Same layout as Python's PyMemAllocatorEx. */
typedef struct sonde_shim_pyalloc {
    void *ctx;
    void *(*malloc)(void *ctx, size_t size);
    void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
    void *(*realloc)(void *ctx, void *ptr, size_t new_size);
    void (*free)(void *ctx, void *ptr);
} sonde_shim_pyalloc_t;

/* Same layout as Python's PyObjectArenaAllocator. */
typedef struct sonde_shim_pyarena {
    void *ctx;
    void *(*alloc)(void *ctx, size_t size);
    void (*free)(void *ctx, void *ptr, size_t size);
} sonde_shim_pyarena_t;

/* Python's allocator domains (PyMemAllocatorDomain). */
#define SONDE_SHIM_DOMAIN_MEM 1
#define SONDE_SHIM_DOMAIN_OBJ 2

typedef enum sonde_shim_event_kind {
    SONDE_SHIM_EV_ALLOC = 1, /* a sampled allocation; the user returns its
                                site (anything, 0 included), given back
                                with its free */
    SONDE_SHIM_EV_FREE,      /* a remembered sampled allocation was freed */
    SONDE_SHIM_EV_COPY,      /* copy sample: bytes copied it stands for */
} sonde_shim_event_kind_t;

typedef struct sonde_shim_event {
    sonde_shim_event_kind_t kind;
    double weight;           /* ALLOC, FREE: the bytes the sample stands for,
                                size / (1 - exp(-size / sample_bytes)) */
    uint64_t size;           /* ALLOC, FREE: the bytes requested */
    int64_t bytes;           /* COPY: the bytes copied it stands for */
    bool python;             /* ALLOC: through Python's allocator domains */
    bool tracked;            /* ALLOC: remembered until freed (false: the
                                table is full; no FREE will follow) */
    int64_t footprint_bytes; /* ALLOC, FREE: the program's footprint */
    uint64_t site;           /* FREE: what ALLOC returned */
} sonde_shim_event_t;

typedef struct sonde_shim_config {
    uint32_t abi;               /* SONDE_SHIM_ABI */
    uint64_t sample_bytes;      /* mean bytes requested between allocation samples */
    uint64_t copy_sample_bytes; /* mean bytes copied between copy samples */
    int64_t footprint_baseline; /* bytes in use when profiling starts */
    /* Called on the thread concerned, inside an allocator hook, with the
     * shim's reentrancy guard set: allocating from it goes straight to the
     * real allocator (uncounted). It must not take a lock that code
     * outside it may hold while allocating, must not run Python, and must
     * not use thread-local variables of a dlopen()ed library. Returns the
     * site for ALLOC, else anything. */
    uint64_t (*on_event)(void *ctx, const sonde_shim_event_t *event);
    void *ctx;
} sonde_shim_config_t;

/* Starts profiling with a copy of *config. Returns 0, -EINVAL (bad ABI or
 * sample mean) or -EBUSY (already started). */
typedef int (*sonde_shim_start_fn)(const sonde_shim_config_t *config);
#define SONDE_SHIM_SYM_START "sonde_shim_start"

/* Stops profiling: no event starts after it returns, and it waits for the
 * ones in progress on other threads. Idempotent. */
typedef void (*sonde_shim_stop_fn)(void);
#define SONDE_SHIM_SYM_STOP "sonde_shim_stop"

/* Builds in *wrapper an allocator for `domain` (MEM or OBJ) that calls
 * *original and tells the shim its blocks are Python memory. The wrapper's
 * ctx points into the shim; install it with PyMem_SetAllocator and restore
 * *original later. flags: SONDE_SHIM_PY_SMALL_IN_ARENAS when *original is
 * pymalloc (or pymalloc under the debug hooks), which serves small requests
 * from its arenas (counted by the arena hook) and never from malloc; then
 * small requests skip the bookkeeping that tells malloc they are Python's.
 * Returns 0 or -EINVAL. */
#define SONDE_SHIM_PY_SMALL_IN_ARENAS 1
typedef int (*sonde_shim_wrap_pyalloc_fn)(int domain, const sonde_shim_pyalloc_t *original,
                                          int flags, sonde_shim_pyalloc_t *wrapper);
#define SONDE_SHIM_SYM_WRAP_PYALLOC "sonde_shim_wrap_pyalloc"

/* Makes sure Python's arena allocator goes through the shim (the shim
 * installs itself at process start when it finds the interpreter, so this
 * is normally already so). get/set are PyObject_GetArenaAllocator and
 * PyObject_SetArenaAllocator. Returns 1 if it was already installed, 0 if
 * installed now (arenas older than that are not counted in
 * sonde_shim_arena_bytes), -EINVAL. */
typedef int (*sonde_shim_arena_install_fn)(void (*get)(sonde_shim_pyarena_t *),
                                           void (*set)(sonde_shim_pyarena_t *));
#define SONDE_SHIM_SYM_ARENA_INSTALL "sonde_shim_arena_install"

/* Bytes in Python's arenas now (those the shim saw allocated). */
typedef int64_t (*sonde_shim_arena_bytes_fn)(void);
#define SONDE_SHIM_SYM_ARENA_BYTES "sonde_shim_arena_bytes"

/* Runs fn(arg) on the calling thread with the shim's reentrancy guard
 * set: what it allocates comes straight from the real allocator, with no
 * event (so fn may take the lock its on_event takes, and allocate while
 * holding it). Never call it from a hook. */
typedef void (*sonde_shim_guarded_fn)(void (*fn)(void *), void *arg);
#define SONDE_SHIM_SYM_GUARDED "sonde_shim_guarded"

/* The program's footprint now, in bytes (baseline plus every change the
 * threads have flushed; each thread holds back less than 256 KiB). */
typedef int64_t (*sonde_shim_footprint_fn)(void);
#define SONDE_SHIM_SYM_FOOTPRINT "sonde_shim_footprint"

#endif
