/* pymem.c — Python's allocators seen through the shim.
 *
 * Owns: the wrappers of Python's MEM and OBJ allocator domains (installed
 * by the extension with PyMem_SetAllocator while a session runs) and the
 * hook on Python's arena allocator (installed here, at load time, when the
 * process turns out to be an interpreter). ALL OF THIS RUNS INSIDE
 * PYTHON'S ALLOCATOR (with the GIL) OR INSIDE ALLOCATOR HOOKS: no
 * allocation of its own, no locks.
 *
 * How Python memory is told from native memory without knowing the size of
 * each freed object: pymalloc serves requests up to 512 bytes from 256 KiB
 * (3.8, 3.9) or 1 MiB (3.10+) arenas, which it gets from the arena
 * allocator, and passes larger requests to malloc. So
 *   - arenas are counted as Python memory when Python maps and unmaps them
 *     (the arena hook sees the size both ways);
 *   - a large block is counted by the malloc hooks like any block, but as
 *     Python memory, because the wrapper marks the thread as being inside
 *     Python's allocator while it calls through (pymalloc's own calls to
 *     malloc are counted once, never twice);
 *   - small objects within arenas cost the wrappers nothing but the
 *     sample countdown, and frees one load (a count of the samples in
 *     the block's stretch of memory, shim_internal.h).
 * Allocation samples are taken here, in the wrappers, with the size Python
 * was asked for and the pointer it hands out (the malloc hooks below skip
 * the blocks they see while python_depth is set); a realloc that moves the
 * block is a free and an allocation of the new size, one that keeps it in
 * place is not counted (its old size is not known).
 * No pointer ever needs classifying, which keeps the hot path to a few
 * instructions. When Python's allocator is not pymalloc (PYTHONMALLOC=malloc
 * or malloc_debug), every request goes through malloc and the wrapper marks
 * them all; under the debug hooks over pymalloc, small ones still live in
 * arenas. The footprint is thus Python's real use of memory (arenas held,
 * not bytes of live objects), at arena granularity.
 */
#include "shim_internal.h"

#include <dlfcn.h>

/* ---- the domain wrappers --------------------------------------------------- */

typedef struct shim_pywrap {
    sonde_shim_pyalloc_t original; /* written by the extension with the GIL */
    size_t small_request;          /* requests up to this size never reach
                                      malloc (pymalloc's arenas); 0 when every
                                      request may */
} shim_pywrap_t;

static shim_pywrap_t shim_pywrap_mem, shim_pywrap_obj;

/* The fast paths below end in a tail call to Python's own allocator; the
 * rare work (a sample, a large block) is in separate functions so that the
 * common case saves no registers. */

/* The sample countdown ran out on this request: allocate, then sample the
 * block (the countdown was already charged). */
static __attribute__((noinline)) void *shim_py_malloc_sampled(shim_pywrap_t *w, size_t size,
                                                              size_t nelem, bool zeroed)
{
    sonde__shim_thread_t *t = &sonde__shim_thread;
    bool large = size > w->small_request;
    if (large) t->python_depth++;
    void *ptr = zeroed ? w->original.calloc(w->original.ctx, nelem, size / (nelem ? nelem : 1))
                       : w->original.malloc(w->original.ctx, size);
    if (large) t->python_depth--;
    sonde__shim_heap_sample(t, ptr, size, true);
    return ptr;
}

/* A large request (any request when Python's allocator is not pymalloc):
 * it reaches malloc, whose hook counts its footprint as Python memory
 * while python_depth is set. */
static __attribute__((noinline)) void *shim_py_malloc_large(shim_pywrap_t *w, size_t size)
{
    sonde__shim_thread_t *t = &sonde__shim_thread;
    t->python_depth++;
    void *ptr = w->original.malloc(w->original.ctx, size);
    t->python_depth--;
    return ptr;
}

static inline __attribute__((always_inline)) void *shim_py_malloc_in(shim_pywrap_t *w, size_t size)
{
    sonde__shim_thread_t *t = &sonde__shim_thread;
    t->sample_countdown -= (int64_t)size;
    if (SONDE_UNLIKELY(t->sample_countdown <= 0)) return shim_py_malloc_sampled(w, size, 0, false);
    if (SONDE_UNLIKELY(size > w->small_request)) return shim_py_malloc_large(w, size);
    return w->original.malloc(w->original.ctx, size);
}

static __attribute__((noinline)) void *shim_py_calloc_large(shim_pywrap_t *w, size_t nelem,
                                                            size_t elsize)
{
    sonde__shim_thread_t *t = &sonde__shim_thread;
    t->python_depth++;
    void *ptr = w->original.calloc(w->original.ctx, nelem, elsize);
    t->python_depth--;
    return ptr;
}

static void *shim_py_calloc(void *ctx, size_t nelem, size_t elsize)
{
    shim_pywrap_t *w = ctx;
    sonde__shim_thread_t *t = &sonde__shim_thread;
    size_t size = 0;
    if (__builtin_mul_overflow(nelem, elsize, &size))
        return w->original.calloc(w->original.ctx, nelem, elsize); /* fails */
    t->sample_countdown -= (int64_t)size;
    if (SONDE_UNLIKELY(t->sample_countdown <= 0))
        return shim_py_malloc_sampled(w, size, nelem, true);
    if (SONDE_UNLIKELY(size > w->small_request)) return shim_py_calloc_large(w, nelem, elsize);
    return w->original.calloc(w->original.ctx, nelem, elsize);
}

static void *shim_py_realloc(void *ctx, void *ptr, size_t size)
{
    shim_pywrap_t *w = ctx;
    sonde__shim_thread_t *t = &sonde__shim_thread;
    sonde__shim_heap_entry_t entry;
    bool sampled = ptr && sonde__shim_heap_maybe(ptr) && sonde__shim_heap_take(ptr, &entry);
    t->python_depth++;
    void *moved = w->original.realloc(w->original.ctx, ptr, size);
    t->python_depth--;
    if (sampled) {
        /* Python's allocators never free on realloc(p, 0) (they make it
         * 1 byte): NULL is a failure, and p is still live */
        if (moved == ptr || !moved)
            sonde__shim_heap_put(ptr, &entry);
        else
            sonde__shim_heap_report_free(&entry);
    }
    if (!moved || moved == ptr) return moved;
    t->sample_countdown -= (int64_t)size;
    if (SONDE_UNLIKELY(t->sample_countdown <= 0)) sonde__shim_heap_sample(t, moved, size, true);
    return moved;
}

static __attribute__((noinline)) void shim_py_free_sampled(shim_pywrap_t *w, void *ptr)
{
    sonde__shim_heap_freed(ptr);
    w->original.free(w->original.ctx, ptr);
}

/* (NULL needs no test of its own: were its stretch's counter and bit set,
 * the table holds no NULL, and Python's free ignores it.) */
static inline __attribute__((always_inline)) void shim_py_free_in(shim_pywrap_t *w, void *ptr)
{
    if (SONDE_UNLIKELY(sonde__shim_heap_maybe(ptr))) {
        shim_py_free_sampled(w, ptr);
        return;
    }
    w->original.free(w->original.ctx, ptr);
}

/* malloc and free, the calls that every object makes, have a pair per
 * domain that finds its state at a fixed address (ctx, the same state, is
 * not read): a load and a move fewer on each call. */
#define SHIM_PYWRAP_DOMAIN(domain)                                                                 \
    static void *shim_py_malloc_##domain(void *ctx, size_t size)                                   \
    {                                                                                              \
        (void)ctx;                                                                                 \
        return shim_py_malloc_in(&shim_pywrap_##domain, size);                                     \
    }                                                                                              \
    static void shim_py_free_##domain(void *ctx, void *ptr)                                        \
    {                                                                                              \
        (void)ctx;                                                                                 \
        shim_py_free_in(&shim_pywrap_##domain, ptr);                                               \
    }
SHIM_PYWRAP_DOMAIN(mem)
SHIM_PYWRAP_DOMAIN(obj)

SONDE_EXPORT int sonde_shim_wrap_pyalloc(int domain, const sonde_shim_pyalloc_t *original,
                                         int flags, sonde_shim_pyalloc_t *wrapper);

int sonde_shim_wrap_pyalloc(int domain, const sonde_shim_pyalloc_t *original, int flags,
                            sonde_shim_pyalloc_t *wrapper)
{
    shim_pywrap_t *w = domain == SONDE_SHIM_DOMAIN_MEM   ? &shim_pywrap_mem
                       : domain == SONDE_SHIM_DOMAIN_OBJ ? &shim_pywrap_obj
                                                         : NULL;
    if (!w || !original || !wrapper || !original->malloc || !original->free) return -EINVAL;
    if (original->malloc == shim_py_malloc_mem || original->malloc == shim_py_malloc_obj)
        return -EINVAL; /* already ours */
    w->original = *original;
    w->small_request = (flags & SONDE_SHIM_PY_SMALL_IN_ARENAS) ? SHIM_PY_SMALL_REQUEST : 0;
    wrapper->ctx = w;
    wrapper->malloc = w == &shim_pywrap_mem ? shim_py_malloc_mem : shim_py_malloc_obj;
    wrapper->calloc = shim_py_calloc;
    wrapper->realloc = shim_py_realloc;
    wrapper->free = w == &shim_pywrap_mem ? shim_py_free_mem : shim_py_free_obj;
    return 0;
}

/* ---- the arena hook --------------------------------------------------------------- */

static sonde_shim_pyarena_t shim_arena_original; /* set once, before use */
static bool shim_arena_installed;
static bool shim_arena_from_start;      /* installed before any arena */
static _Atomic int64_t shim_arena_live; /* bytes in arenas we saw */

static void *shim_arena_alloc(void *ctx, size_t size)
{
    void *ptr = shim_arena_original.alloc(shim_arena_original.ctx, size);
    if (!ptr) return NULL;
    sonde_atomic_add_relaxed(&shim_arena_live, (int64_t)size);
    sonde__shim_thread_t *t = sonde__shim_enter();
    if (t) sonde__shim_account(t, (int64_t)size);
    return ptr;
}

static void shim_arena_free(void *ctx, void *ptr, size_t size)
{
    shim_arena_original.free(shim_arena_original.ctx, ptr, size);
    sonde_atomic_add_relaxed(&shim_arena_live, -(int64_t)size);
    sonde__shim_thread_t *t = sonde__shim_enter();
    if (t) sonde__shim_account(t, -(int64_t)size);
}

static int shim_arena_install(void (*get)(sonde_shim_pyarena_t *),
                              void (*set)(sonde_shim_pyarena_t *))
{
    sonde_shim_pyarena_t current, ours;
    get(&current);
    if (current.alloc == shim_arena_alloc) return 1;
    if (!current.alloc || !current.free) return -EINVAL;
    shim_arena_original = current;
    ours.ctx = NULL;
    ours.alloc = shim_arena_alloc;
    ours.free = shim_arena_free;
    set(&ours);
    shim_arena_installed = true;
    return 0;
}

void sonde__shim_arena_autoinstall(void)
{
    void *get = dlsym(RTLD_DEFAULT, "PyObject_GetArenaAllocator");
    void *set = dlsym(RTLD_DEFAULT, "PyObject_SetArenaAllocator");
    if (!get || !set) return; /* not a Python interpreter */
    if (shim_arena_install((void (*)(sonde_shim_pyarena_t *))get,
                           (void (*)(sonde_shim_pyarena_t *))set) == 0)
        shim_arena_from_start = true;
}

SONDE_EXPORT int sonde_shim_arena_install(void (*get)(sonde_shim_pyarena_t *),
                                          void (*set)(sonde_shim_pyarena_t *));
SONDE_EXPORT int64_t sonde_shim_arena_bytes(void);

int sonde_shim_arena_install(void (*get)(sonde_shim_pyarena_t *),
                             void (*set)(sonde_shim_pyarena_t *))
{
    if (!get || !set) return -EINVAL;
    int rc = shim_arena_install(get, set);
    if (rc == 1 && !shim_arena_from_start) return 0; /* installed late: baseline unknown */
    return rc;
}

int64_t sonde_shim_arena_bytes(void)
{
    return sonde_atomic_load_relaxed(&shim_arena_live);
}
