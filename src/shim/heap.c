/* heap.c — the sampled allocations the shim remembers until they are freed.
 *
 * Owns: a fixed table of sampled blocks (pointer, site, weight, size),
 * open addressing with linear probing from the pointer's home slot (a hash
 * of its 8 KiB stretch, then its 16-byte granule within it:
 * shim_internal.h), the bitmap that mirrors which slots are in use, and
 * a count of remembered blocks per stretch. Every thread counts down the
 * bytes it requests (shim_internal.h); the allocation that a mark falls in
 * is sampled, handed to the user (who charges it to its line and returns
 * that line as the block's site) and remembered here. A free loads its
 * stretch's counter (128 KiB of them, direct-mapped); only a stretch that
 * holds samples leads to one bit (the pointer's home slot; 32 KiB of
 * bitmap), and only a set bit to the table, under the lock. A remembered
 * block that is freed is reported with its site and weight, so the line
 * that made it (not the one that frees it) loses its live bytes. Deletion
 * shifts later entries of the probe run back, so an empty home slot
 * always means "not remembered".
 *
 * ALL OF THIS RUNS INSIDE ALLOCATOR HOOKS. The table lock is a spinlock of
 * the shim's own, held for a few instructions and never while calling
 * anything (the user's callback runs after it is released), so no hooked
 * function can be holding it when it is taken. No allocation, errno kept.
 */
#include "shim_internal.h"

#include <math.h>
#include <sched.h>

/* Blocks remembered at once (a quarter of the slots, so probe runs stay
 * short): 65536 samples stand for 32 GiB live at the default mean. A
 * sample beyond this is charged as allocated but not remembered (the user
 * is told, and counts it). */
#define SHIM_HEAP_MAX_LIVE (SHIM_HEAP_SLOTS / 4)

_Atomic uint64_t sonde__shim_heap_bits[SHIM_HEAP_SLOTS / 64];
/* Remembered blocks per stretch (shim_internal.h): written under shim_heap_lock. */
_Atomic uint32_t sonde__shim_heap_counters[1u << SHIM_HEAP_COUNTER_BITS];
static uintptr_t shim_heap_ptr[SHIM_HEAP_SLOTS];                  /* protected by shim_heap_lock */
static sonde__shim_heap_entry_t shim_heap_entry[SHIM_HEAP_SLOTS]; /* protected by shim_heap_lock */
static uint32_t shim_heap_live;                                   /* protected by shim_heap_lock */
static atomic_flag shim_heap_lock = ATOMIC_FLAG_INIT;

static void shim_heap_lock_take(void)
{
    while (sonde_atomic_flag_test_and_set_acquire(&shim_heap_lock))
        sched_yield();
}

static void shim_heap_lock_give(void)
{
    sonde_atomic_flag_clear_release(&shim_heap_lock);
}

static inline bool shim_heap_used(uint32_t slot)
{
    return (sonde_atomic_load_relaxed(&sonde__shim_heap_bits[slot / 64]) >> (slot % 64)) & 1;
}

/* One more (delta 1) or one fewer (-1) remembered block starts in ptr's
 * stretch. */
static inline void shim_heap_count_unlocked(uintptr_t ptr, int delta)
{
    _Atomic uint32_t *counter = &sonde__shim_heap_counters[sonde__shim_heap_counter((void *)ptr)];
    sonde_atomic_store_relaxed(counter,
                               (uint32_t)((int64_t)sonde_atomic_load_relaxed(counter) + delta));
}

static inline void shim_heap_mark(uint32_t slot, bool used)
{
    if (used)
        sonde_atomic_or_relaxed(&sonde__shim_heap_bits[slot / 64], 1ull << (slot % 64));
    else
        sonde_atomic_and_relaxed(&sonde__shim_heap_bits[slot / 64], ~(1ull << (slot % 64)));
}

/* The slot holding ptr, or SHIM_HEAP_SLOTS. */
static uint32_t shim_heap_find_unlocked(const void *ptr)
{
    uint32_t slot = sonde__shim_heap_slot(ptr);
    for (uint32_t n = 0; n < SHIM_HEAP_SLOTS && shim_heap_used(slot); n++) {
        if (shim_heap_ptr[slot] == (uintptr_t)ptr) return slot;
        slot = (slot + 1) & (SHIM_HEAP_SLOTS - 1);
    }
    return SHIM_HEAP_SLOTS;
}

/* Empties slot and moves back the entries after it whose home slot allows
 * it (backward-shift deletion: no tombstones). */
static void shim_heap_remove_unlocked(uint32_t slot)
{
    uint32_t hole = slot;
    uint32_t next = (slot + 1) & (SHIM_HEAP_SLOTS - 1);
    shim_heap_count_unlocked(shim_heap_ptr[slot], -1);
    while (shim_heap_used(next)) {
        uint32_t home = sonde__shim_heap_slot((const void *)shim_heap_ptr[next]);
        /* next may fill the hole if its home is not in (hole, next]. */
        bool movable = hole <= next ? (home <= hole || home > next) : (home <= hole && home > next);
        if (movable) {
            shim_heap_ptr[hole] = shim_heap_ptr[next];
            shim_heap_entry[hole] = shim_heap_entry[next];
            hole = next;
        }
        next = (next + 1) & (SHIM_HEAP_SLOTS - 1);
    }
    shim_heap_ptr[hole] = 0;
    shim_heap_mark(hole, false);
    shim_heap_live--;
}

static void shim_heap_put_unlocked(const void *ptr, const sonde__shim_heap_entry_t *entry)
{
    uint32_t slot = shim_heap_find_unlocked(ptr);
    if (slot != SHIM_HEAP_SLOTS) { /* cannot happen: taken out before */
        shim_heap_entry[slot] = *entry;
        return;
    }
    slot = sonde__shim_heap_slot(ptr);
    while (shim_heap_used(slot))
        slot = (slot + 1) & (SHIM_HEAP_SLOTS - 1);
    shim_heap_ptr[slot] = (uintptr_t)ptr;
    shim_heap_entry[slot] = *entry;
    shim_heap_count_unlocked((uintptr_t)ptr, 1);
    shim_heap_mark(slot, true);
    shim_heap_live++;
}

bool sonde__shim_heap_take(const void *ptr, sonde__shim_heap_entry_t *entry)
{
    bool found = false;
    int saved = errno;
    shim_heap_lock_take();
    uint32_t slot = shim_heap_find_unlocked(ptr);
    if (slot != SHIM_HEAP_SLOTS) {
        *entry = shim_heap_entry[slot];
        shim_heap_remove_unlocked(slot);
        found = true;
    }
    shim_heap_lock_give();
    errno = saved;
    return found;
}

void sonde__shim_heap_put(const void *ptr, const sonde__shim_heap_entry_t *entry)
{
    int saved = errno;
    shim_heap_lock_take();
    if (shim_heap_live < SHIM_HEAP_MAX_LIVE) shim_heap_put_unlocked(ptr, entry);
    shim_heap_lock_give();
    errno = saved;
}

/* Bytes a sampled allocation of `size` stands for: the marks are a Poisson
 * process of mean `mean` over the bytes requested, so the block was
 * sampled with probability 1 - exp(-size/mean) and its expected weight is
 * size over that (tcmalloc's and Go's unbiasing). glibc's expm1 does not
 * allocate. */
static double shim_heap_weight(uint64_t size, uint64_t mean)
{
    double p = -expm1(-(double)size / (double)mean);
    return p > 0 ? (double)size / p : (double)mean;
}

void sonde__shim_heap_sample(sonde__shim_thread_t *t, void *ptr, size_t size, bool python)
{
    uint32_t gen = sonde_atomic_load_relaxed(&sonde__shim_gen);
    uint64_t mean = sonde__shim_config.sample_bytes;
    if (gen == 0 || t->guard || !ptr) {
        t->sample_countdown = SHIM_IDLE_COUNTDOWN; /* not counting: look again later */
        return;
    }
    if (t->gen != gen) {
        /* first count of this thread in this session (Python's wrappers
         * reach here without sonde__shim_enter): a fresh draw, no sample */
        sonde__shim_thread_reset(t, gen);
        return;
    }
    /* The next mark is an exponential draw past the end of this block,
     * however many marks fell inside it (the process has no memory). */
    t->sample_countdown = sonde__shim_exp_draw(t, mean);
    int saved = errno;
    /* Already remembered: its free went unseen, or it grew in place (the
     * older sample then counts as freed, the growth as a new one). */
    sonde__shim_heap_entry_t old;
    if (sonde__shim_heap_maybe(ptr) && sonde__shim_heap_take(ptr, &old))
        sonde__shim_heap_report_free(&old);
    shim_heap_lock_take();
    bool room = shim_heap_live < SHIM_HEAP_MAX_LIVE;
    if (room) shim_heap_live++; /* reserved; put back below */
    shim_heap_lock_give();
    sonde_shim_event_t event = {
        .kind = SONDE_SHIM_EV_ALLOC,
        .weight = shim_heap_weight(size, mean),
        .size = size,
        .python = python,
        .tracked = room,
        .footprint_bytes = sonde_atomic_load_relaxed(&sonde__shim_footprint),
    };
    sonde__shim_heap_entry_t entry = {.weight = event.weight, .size = size};
    entry.site = sonde__shim_emit(t, &event);
    if (room) {
        shim_heap_lock_take();
        shim_heap_live--;
        shim_heap_put_unlocked(ptr, &entry);
        shim_heap_lock_give();
    }
    errno = saved;
}

void sonde__shim_heap_report_free(const sonde__shim_heap_entry_t *entry)
{
    sonde__shim_thread_t *t = &sonde__shim_thread;
    uint32_t gen = sonde_atomic_load_relaxed(&sonde__shim_gen);
    if (gen == 0 || t->guard) return;
    if (t->gen != gen) sonde__shim_thread_reset(t, gen);
    sonde_shim_event_t event = {
        .kind = SONDE_SHIM_EV_FREE,
        .weight = entry->weight,
        .size = entry->size,
        .site = entry->site,
        .footprint_bytes = sonde_atomic_load_relaxed(&sonde__shim_footprint),
    };
    sonde__shim_emit(t, &event);
}

void sonde__shim_heap_freed(void *ptr)
{
    sonde__shim_heap_entry_t entry;
    if (sonde__shim_heap_take(ptr, &entry)) sonde__shim_heap_report_free(&entry);
}

void sonde__shim_heap_reset(void)
{
    /* Called by start (no session running) and in a forked child (one
     * thread): nobody holds the lock in a way that matters any more. Only
     * the slots in use are touched, so an unused table stays untouched. */
    atomic_flag_clear(&shim_heap_lock);
    for (uint32_t i = 0; i < SHIM_HEAP_SLOTS / 64; i++) {
        uint64_t bits = sonde_atomic_load_relaxed(&sonde__shim_heap_bits[i]);
        while (bits) {
            uint32_t slot = i * 64 + (uint32_t)__builtin_ctzll(bits);
            bits &= bits - 1;
            sonde_atomic_store_relaxed(
                &sonde__shim_heap_counters[sonde__shim_heap_counter((void *)shim_heap_ptr[slot])],
                0);
            shim_heap_ptr[slot] = 0;
        }
        sonde_atomic_store_relaxed(&sonde__shim_heap_bits[i], 0);
    }
    shim_heap_live = 0;
}
