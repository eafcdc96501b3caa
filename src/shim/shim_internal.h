/* shim_internal.h — shared by the files of src/shim/ only.
 *
 * Owns: the shim's per-thread counters (initial-exec TLS), the table of
 * real functions found with dlsym(RTLD_NEXT), the session state, and the
 * inline fast paths every hook uses. EVERYTHING HERE RUNS INSIDE ALLOCATOR
 * HOOKS: no allocation through the shim itself, no stdio, no locks that a
 * hooked function could hold, errno preserved on every path that could
 * change it. A nested call (the guard is set) goes straight to the real
 * function without counting.
 *
 * Names: the shim shares the global symbol namespace with everything in
 * the process, so nothing but the hooked libc names and sonde_shim_* is
 * exported (-fvisibility=hidden); internal names use the sonde__shim_
 * prefix, statics shim_.
 */
#ifndef SONDE_SHIM_INTERNAL_H
#define SONDE_SHIM_INTERNAL_H

#include "shim.h"

#include "../core/atomic.h"

#include <stddef.h>

#define SHIM_TLS __attribute__((tls_model("initial-exec")))

/* A thread flushes its footprint changes to the global count once they
 * add up to this much (keeps the shared cache line out of the fast path). */
#define SHIM_FOOTPRINT_QUANTUM (256 * 1024)
/* Python's small-object limit (pymalloc serves requests up to this size
 * from its arenas; larger ones go to malloc). Same in every supported
 * version (checked against each version's table by test_pyread_debug). */
#define SHIM_PY_SMALL_REQUEST 512
/* The copy sampler steps mark by mark through one
 * operation up to this many marks, and count the rest of it whole. */
#define SHIM_MAX_MARKS 64
/* Bytes a thread that is not counting (inert shim, nested call) lets go by
 * before its countdowns look at the session again. */
#define SHIM_IDLE_COUNTDOWN (16 << 20)

/* ---- the real functions (hooks.c) -------------------------------------- */

typedef struct sonde__shim_real {
    void *(*malloc)(size_t);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void (*free)(void *);
    size_t (*malloc_usable_size)(void *);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    void *(*memcpy)(void *, const void *, size_t);
    void *(*memmove)(void *, const void *, size_t);
    void *(*memcpy_chk)(void *, const void *, size_t, size_t);
    void *(*memmove_chk)(void *, const void *, size_t, size_t);
} sonde__shim_real_t;

extern sonde__shim_real_t sonde__shim_real;

/* Resolves the real functions (idempotent; a call nested inside dlsym
 * returns at once, leaving the caller to use the bootstrap arena). */
void sonde__shim_init_real(void);

/* ---- per-thread state ---------------------------------------------------- */

typedef struct sonde__shim_thread {
    uint32_t gen;              /* session these counters belong to */
    uint16_t guard;            /* > 0: inside the shim's own work */
    uint16_t python_depth;     /* > 0: inside a Python-domain allocator */
    int64_t footprint_pending; /* not yet added to the global footprint */
    int64_t sample_countdown;  /* bytes to request before the next sample mark */
    int64_t copy_countdown;    /* bytes to copy before the next copy sample */
    int64_t copy_armed;        /* what copy_countdown was set to */
    uint64_t rng;              /* xorshift state, 0 until first use */
} sonde__shim_thread_t;

extern __thread sonde__shim_thread_t sonde__shim_thread SHIM_TLS;

/* ---- the session (control.c) --------------------------------------------- */

/* 0 while inert; otherwise the generation of the current session. */
extern _Atomic uint32_t sonde__shim_gen;
/* Copy of the user's configuration; written only while gen is 0. */
extern sonde_shim_config_t sonde__shim_config;
/* The program's footprint in bytes (baseline + flushed changes). */
extern _Atomic int64_t sonde__shim_footprint;

/* Brings a thread's counters to the current session. */
void sonde__shim_thread_reset(sonde__shim_thread_t *t, uint32_t gen);
/* Adds the thread's pending footprint change to the global footprint. */
void sonde__shim_flush_footprint(sonde__shim_thread_t *t);
/* Hands an event to the user (guard set, errno kept, counted in flight so
 * that stop can wait for it). Returns what on_event returned, or 0 when
 * the session ended meanwhile. */
uint64_t sonde__shim_emit(sonde__shim_thread_t *t, const sonde_shim_event_t *event);
/* A mean-`mean` exponential draw from the thread's generator (>= 1). */
int64_t sonde__shim_exp_draw(sonde__shim_thread_t *t, uint64_t mean);

/* The calling thread's state if the shim is counting on it, else NULL
 * (inert, or already inside the shim). */
static inline sonde__shim_thread_t *sonde__shim_enter(void)
{
    sonde__shim_thread_t *t = &sonde__shim_thread;
    uint32_t gen = sonde_atomic_load_relaxed(&sonde__shim_gen);
    if (gen == 0 || t->guard) return NULL;
    if (SONDE_UNLIKELY(t->gen != gen)) sonde__shim_thread_reset(t, gen);
    return t;
}

/* Counts delta bytes (> 0 allocated, < 0 freed; usable sizes, arenas) in
 * the program's footprint, batched per thread. */
static inline void sonde__shim_account(sonde__shim_thread_t *t, int64_t delta)
{
    t->footprint_pending += delta;
    if (SONDE_UNLIKELY(t->footprint_pending >= SHIM_FOOTPRINT_QUANTUM ||
                       t->footprint_pending <= -SHIM_FOOTPRINT_QUANTUM))
        sonde__shim_flush_footprint(t);
}

/* ---- sampled allocations (heap.c) ------------------------------------------ */

#define SHIM_HEAP_SLOT_BITS 18
#define SHIM_HEAP_SLOTS (1u << SHIM_HEAP_SLOT_BITS)

/* One bit per slot of the sampled-block table: set while the slot holds a
 * block. A free whose home slot is empty frees nothing sampled: one load. */
extern _Atomic uint64_t sonde__shim_heap_bits[SHIM_HEAP_SLOTS / 64];

/* A pointer's home slot: the 512 16-byte granules of an 8 KiB stretch of
 * memory take 512 consecutive slots (64 bytes of the bitmap: one cache
 * line), the stretches themselves are spread by a multiplicative hash.
 * Python frees objects near the ones it just freed (a pool of pymalloc's
 * is 4 or 16 KiB), so most frees test a bitmap line already in the cache;
 * with the whole pointer hashed, each one touched a random line of the
 * 32 KiB bitmap (a miss, a third of the shim's time under raytrace). */
#define SHIM_HEAP_GRANULE_SHIFT 4 /* pymalloc's alignment: 16 bytes */
#define SHIM_HEAP_STRETCH_BITS 9  /* granules per stretch: 512 */
static inline uint32_t sonde__shim_heap_slot(const void *ptr)
{
    uintptr_t granule = (uintptr_t)ptr >> SHIM_HEAP_GRANULE_SHIFT;
    uint64_t stretch = (uint64_t)(granule >> SHIM_HEAP_STRETCH_BITS) * 0x9e3779b97f4a7c15ull;
    uint32_t first = (uint32_t)(stretch >> (64 - (SHIM_HEAP_SLOT_BITS - SHIM_HEAP_STRETCH_BITS)));
    return (first << SHIM_HEAP_STRETCH_BITS) |
           (uint32_t)(granule & ((1u << SHIM_HEAP_STRETCH_BITS) - 1));
}

/* The first test of every free: how many remembered blocks start in each
 * 8 KiB stretch of memory, the stretches direct-mapped (stretch number
 * modulo 2^15: 256 MiB of consecutive memory take distinct counters, 16
 * stretches to a cache line, so the heap a program is working in keeps a
 * few lines of them in the cache). A free in a stretch whose counter is 0
 * frees nothing sampled: a shift, a mask and one load (raytrace: 22
 * instructions a Python free with the bitmap alone, 12 with this before
 * it). Written under the table lock only (heap.c); read without it, like
 * the bitmap: a block's counter is raised before the pointer leaves the
 * allocator, so any thread that can free it sees the raise. */
#define SHIM_HEAP_COUNTER_BITS 15
extern _Atomic uint32_t sonde__shim_heap_counters[1u << SHIM_HEAP_COUNTER_BITS];

static inline uint32_t sonde__shim_heap_counter(const void *ptr)
{
    return (uint32_t)((uintptr_t)ptr >> (SHIM_HEAP_GRANULE_SHIFT + SHIM_HEAP_STRETCH_BITS)) &
           ((1u << SHIM_HEAP_COUNTER_BITS) - 1);
}

/* Whether ptr may be a remembered block (false: it is not). */
static inline bool sonde__shim_heap_maybe(const void *ptr)
{
    if (SONDE_LIKELY(sonde_atomic_load_relaxed(
                         &sonde__shim_heap_counters[sonde__shim_heap_counter(ptr)]) == 0))
        return false;
    uint32_t slot = sonde__shim_heap_slot(ptr);
    return (sonde_atomic_load_relaxed(&sonde__shim_heap_bits[slot / 64]) >> (slot % 64)) & 1;
}

/* The sample countdown ran out in the block ptr (size bytes requested)
 * just allocated: reports it (the user returns its site), remembers it
 * and re-arms the countdown. */
void sonde__shim_heap_sample(sonde__shim_thread_t *t, void *ptr, size_t size, bool python);
/* ptr is being freed: reports it if it is a remembered sample. */
void sonde__shim_heap_freed(void *ptr);

/* A remembered sample. */
typedef struct sonde__shim_heap_entry {
    uint64_t site; /* what the user returned for the block */
    double weight; /* bytes the sample stands for */
    uint64_t size; /* bytes requested */
} sonde__shim_heap_entry_t;

/* For realloc, which frees the old block inside the real call (another
 * thread may get its address at once): take the entry out before, then
 * put it back (kept in place, or the call failed) or report its free.
 * take returns whether ptr was remembered. */
bool sonde__shim_heap_take(const void *ptr, sonde__shim_heap_entry_t *entry);
void sonde__shim_heap_put(const void *ptr, const sonde__shim_heap_entry_t *entry);
void sonde__shim_heap_report_free(const sonde__shim_heap_entry_t *entry);
/* Forgets every remembered block (new session, or a forked child). */
void sonde__shim_heap_reset(void);

/* The sample countdown: `size` bytes were requested, and got the block at
 * ptr. Allocations are sampled by bytes requested: marks fall on average
 * every config.sample_bytes, exponentially spaced, so a block of s bytes
 * holds one with probability 1 - exp(-s / sample_bytes). */
static inline void sonde__shim_heap_count(sonde__shim_thread_t *t, void *ptr, size_t size,
                                          bool python)
{
    t->sample_countdown -= (int64_t)size;
    if (SONDE_UNLIKELY(t->sample_countdown <= 0)) sonde__shim_heap_sample(t, ptr, size, python);
}

/* ---- Python's allocators (pymem.c) ---------------------------------------- */

/* Installs the arena hook when this process is a Python interpreter (at
 * load time, before the interpreter allocates its first arena). */
void sonde__shim_arena_autoinstall(void);

#endif
