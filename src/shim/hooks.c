/* hooks.c — the interposed malloc family.
 *
 * Owns: malloc, calloc, realloc, reallocarray, free, posix_memalign,
 * aligned_alloc, memalign, valloc, pvalloc and malloc_usable_size as this
 * process sees them (LD_PRELOAD puts the shim first), the table of real
 * functions behind them, and the bootstrap arena. EVERY FUNCTION HERE IS AN
 * ALLOCATOR HOOK, called on any thread at any time (during dlopen, inside
 * other libraries' constructors, in forked children): each forwards to the
 * real function and, only while a session runs and the calling thread is
 * not already inside the shim, counts the block's usable size (the real
 * malloc_usable_size, the same figure on allocation and on free) in the
 * program's footprint, and the size requested on the thread's sample
 * countdown (shim_internal.h). Blocks allocated inside a Python-domain
 * allocator were counted by its wrapper (pymem.c), with the size Python
 * was asked for; only their footprint is counted here. A realloc that
 * moves the block is a free and an allocation of the new size; one that
 * grows it in place counts the growth (usable sizes).
 *
 * Bootstrapping: dlsym(RTLD_NEXT, ...) may itself call calloc/malloc before
 * the real functions are known; those calls are served from a small static
 * arena, whose blocks free() ignores and realloc()/malloc_usable_size()
 * recognise by address.
 */
#include "shim_internal.h"

#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

sonde__shim_real_t sonde__shim_real;

/* ---- bootstrap arena ------------------------------------------------------- */

#define SHIM_BOOT_SIZE (256 * 1024)
#define SHIM_BOOT_HEADER 16 /* holds the block's size; keeps 16-byte alignment */

static _Alignas(4096) unsigned char shim_boot_arena[SHIM_BOOT_SIZE];
static _Atomic size_t shim_boot_used;

static bool shim_boot_owns(const void *ptr)
{
    const unsigned char *p = ptr;
    return p >= shim_boot_arena && p < shim_boot_arena + SHIM_BOOT_SIZE;
}

/* Zeroed memory from the static arena (it is never reused), or NULL. */
static void *shim_boot_alloc(size_t size, size_t align)
{
    if (align < SHIM_BOOT_HEADER) align = SHIM_BOOT_HEADER;
    if (align > 4096 || size > SHIM_BOOT_SIZE) return NULL;
    size_t used = sonde_atomic_load_relaxed(&shim_boot_used);
    for (;;) {
        size_t start = (used + SHIM_BOOT_HEADER + align - 1) & ~(align - 1);
        size_t end = start + ((size + 15) & ~(size_t)15);
        if (end > SHIM_BOOT_SIZE) return NULL;
        if (sonde_atomic_cas_weak_relaxed(&shim_boot_used, &used, end)) {
            size_t *header = (size_t *)(void *)(shim_boot_arena + start - SHIM_BOOT_HEADER);
            *header = size;
            return shim_boot_arena + start;
        }
    }
}

static size_t shim_boot_size(const void *ptr)
{
    return *(const size_t *)(const void *)((const unsigned char *)ptr - SHIM_BOOT_HEADER);
}

/* ---- finding the real functions ----------------------------------------------- */

/* Set while this thread is inside dlsym for us: nested allocations use the
 * bootstrap arena. */
static __thread int shim_resolving SHIM_TLS;

static void *shim_next(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

void sonde__shim_init_real(void)
{
    if (shim_resolving || sonde__shim_real.free) return;
    int saved = errno;
    shim_resolving = 1;
    sonde__shim_real_t r;
    r.malloc = (void *(*)(size_t))shim_next("malloc");
    r.calloc = (void *(*)(size_t, size_t))shim_next("calloc");
    r.realloc = (void *(*)(void *, size_t))shim_next("realloc");
    r.malloc_usable_size = (size_t(*)(void *))shim_next("malloc_usable_size");
    r.posix_memalign = (int (*)(void **, size_t, size_t))shim_next("posix_memalign");
    r.aligned_alloc = (void *(*)(size_t, size_t))shim_next("aligned_alloc");
    r.memalign = (void *(*)(size_t, size_t))shim_next("memalign");
    r.valloc = (void *(*)(size_t))shim_next("valloc");
    r.pvalloc = (void *(*)(size_t))shim_next("pvalloc");
    r.memcpy = (void *(*)(void *, const void *, size_t))shim_next("memcpy");
    r.memmove = (void *(*)(void *, const void *, size_t))shim_next("memmove");
    r.memcpy_chk = (void *(*)(void *, const void *, size_t, size_t))shim_next("__memcpy_chk");
    r.memmove_chk = (void *(*)(void *, const void *, size_t, size_t))shim_next("__memmove_chk");
    r.free = (void (*)(void *))shim_next("free");
    /* Publish every pointer before free, the one the fast paths test. */
    sonde__shim_real.malloc = r.malloc;
    sonde__shim_real.calloc = r.calloc;
    sonde__shim_real.realloc = r.realloc;
    sonde__shim_real.malloc_usable_size = r.malloc_usable_size;
    sonde__shim_real.posix_memalign = r.posix_memalign;
    sonde__shim_real.aligned_alloc = r.aligned_alloc;
    sonde__shim_real.memalign = r.memalign;
    sonde__shim_real.valloc = r.valloc;
    sonde__shim_real.pvalloc = r.pvalloc;
    sonde__shim_real.memcpy = r.memcpy;
    sonde__shim_real.memmove = r.memmove;
    sonde__shim_real.memcpy_chk = r.memcpy_chk;
    sonde__shim_real.memmove_chk = r.memmove_chk;
    atomic_thread_fence(memory_order_release);
    sonde__shim_real.free = r.free;
    shim_resolving = 0;
    errno = saved;
}

/* True when the real functions are known (resolving them if need be). */
static inline bool shim_ready(void)
{
    if (SONDE_LIKELY(sonde__shim_real.free != NULL)) return true;
    sonde__shim_init_real();
    return sonde__shim_real.free != NULL;
}

/* ---- accounting helpers ------------------------------------------------------- */

static inline size_t shim_usable(void *ptr)
{
    return sonde__shim_real.malloc_usable_size(ptr);
}

/* A block was just allocated at ptr by this thread, for a request of
 * `size` bytes. */
static inline void shim_allocated(sonde__shim_thread_t *t, void *ptr, size_t size)
{
    sonde__shim_account(t, (int64_t)shim_usable(ptr));
    /* Python-domain blocks are sampled by the wrapper (pymem.c), with the
     * pointer and the size Python hands out and was asked for. */
    if (t->python_depth == 0) sonde__shim_heap_count(t, ptr, size, false);
}

/* ---- the hooks ---------------------------------------------------------------------- */

SONDE_EXPORT void *malloc(size_t size)
{
    if (SONDE_UNLIKELY(!shim_ready())) return shim_boot_alloc(size, 16);
    sonde__shim_thread_t *t = sonde__shim_enter();
    void *ptr = sonde__shim_real.malloc(size);
    if (t && ptr) shim_allocated(t, ptr, size);
    return ptr;
}

SONDE_EXPORT void *calloc(size_t nelem, size_t elsize)
{
    if (SONDE_UNLIKELY(!shim_ready())) {
        size_t size = 0;
        if (__builtin_mul_overflow(nelem, elsize, &size)) return NULL;
        return shim_boot_alloc(size, 16); /* static memory: already zero */
    }
    sonde__shim_thread_t *t = sonde__shim_enter();
    void *ptr = sonde__shim_real.calloc(nelem, elsize);
    if (t && ptr) shim_allocated(t, ptr, nelem * elsize); /* no overflow: it succeeded */
    return ptr;
}

SONDE_EXPORT void free(void *ptr)
{
    if (!ptr || SONDE_UNLIKELY(shim_boot_owns(ptr))) return;
    if (SONDE_UNLIKELY(!shim_ready())) return; /* cannot happen: ptr came from somewhere */
    sonde__shim_thread_t *t = sonde__shim_enter();
    if (!t) {
        sonde__shim_real.free(ptr);
        return;
    }
    if (SONDE_UNLIKELY(sonde__shim_heap_maybe(ptr))) sonde__shim_heap_freed(ptr);
    size_t usable = shim_usable(ptr);
    sonde__shim_real.free(ptr);
    sonde__shim_account(t, -(int64_t)usable);
}

SONDE_EXPORT void *realloc(void *ptr, size_t size)
{
    if (ptr && SONDE_UNLIKELY(shim_boot_owns(ptr))) {
        size_t old = shim_boot_size(ptr);
        void *moved = malloc(size);
        if (moved) memcpy(moved, ptr, old < size ? old : size);
        return moved;
    }
    if (SONDE_UNLIKELY(!shim_ready())) return ptr ? NULL : shim_boot_alloc(size, 16);
    sonde__shim_thread_t *t = sonde__shim_enter();
    if (!t) return sonde__shim_real.realloc(ptr, size);
    size_t old = ptr ? shim_usable(ptr) : 0;
    sonde__shim_heap_entry_t entry;
    bool sampled = ptr && sonde__shim_heap_maybe(ptr) && sonde__shim_heap_take(ptr, &entry);
    void *moved = sonde__shim_real.realloc(ptr, size);
    if (!moved) {
        if (ptr && size == 0) { /* glibc: realloc(p, 0) frees p */
            if (sampled) sonde__shim_heap_report_free(&entry);
            sonde__shim_account(t, -(int64_t)old);
        } else if (sampled) {
            sonde__shim_heap_put(ptr, &entry);
        }
        return NULL;
    }
    size_t usable = shim_usable(moved);
    sonde__shim_account(t, (int64_t)usable - (int64_t)old);
    if (sampled) {
        if (moved == ptr)
            sonde__shim_heap_put(ptr, &entry);
        else
            sonde__shim_heap_report_free(&entry);
    }
    if (t->python_depth > 0) return moved; /* the wrapper counts it */
    if (moved != ptr) {
        sonde__shim_heap_count(t, moved, size, false);
    } else if (usable > old) {
        sonde__shim_heap_count(t, moved, usable - old, false);
    }
    return moved;
}

SONDE_EXPORT void *reallocarray(void *ptr, size_t nelem, size_t elsize)
{
    size_t size = 0;
    if (__builtin_mul_overflow(nelem, elsize, &size)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(ptr, size);
}

SONDE_EXPORT size_t malloc_usable_size(void *ptr)
{
    if (!ptr) return 0;
    if (SONDE_UNLIKELY(shim_boot_owns(ptr))) return shim_boot_size(ptr);
    if (SONDE_UNLIKELY(!shim_ready())) return 0;
    return sonde__shim_real.malloc_usable_size(ptr);
}

SONDE_EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
    if (SONDE_UNLIKELY(!shim_ready())) {
        void *ptr = shim_boot_alloc(size, align);
        if (!ptr) return ENOMEM;
        *out = ptr;
        return 0;
    }
    sonde__shim_thread_t *t = sonde__shim_enter();
    int rc = sonde__shim_real.posix_memalign(out, align, size);
    if (t && rc == 0 && *out) shim_allocated(t, *out, size);
    return rc;
}

/* The aligned variants that return a pointer. */
#define SHIM_ALIGNED_HOOK(name, params, args, boot_align, boot_size)                               \
    SONDE_EXPORT void *name params                                                                 \
    {                                                                                              \
        if (SONDE_UNLIKELY(!shim_ready())) return shim_boot_alloc(boot_size, boot_align);          \
        sonde__shim_thread_t *t = sonde__shim_enter();                                             \
        void *ptr = sonde__shim_real.name args;                                                    \
        if (t && ptr) shim_allocated(t, ptr, boot_size);                                           \
        return ptr;                                                                                \
    }

SHIM_ALIGNED_HOOK(aligned_alloc, (size_t align, size_t size), (align, size), align, size)
SHIM_ALIGNED_HOOK(memalign, (size_t align, size_t size), (align, size), align, size)
SHIM_ALIGNED_HOOK(valloc, (size_t size), (size), 4096, size)
SHIM_ALIGNED_HOOK(pvalloc, (size_t size), (size), 4096, (size + 4095) & ~(size_t)4095)

/* ---- load time ------------------------------------------------------------------------ */

/* Runs when the shim is loaded (before the program's main): resolves the
 * real functions, and hooks Python's arena allocator when this process is
 * an interpreter. Nothing is counted until a session starts. */
__attribute__((constructor)) static void shim_constructor(void)
{
    sonde__shim_init_real();
    sonde__shim_arena_autoinstall();
}
