/* leak.c — the sampled blocks the leak detector watches.
 *
 * Owns: a fixed table of tracked blocks (pointer, site) indexed by a hash
 * of the pointer, and the bitmap that mirrors which slots are in use.
 * Every thread counts down the bytes it allocates; the block that crosses
 * the mark (on average every leak_sample_bytes, exponentially spaced so
 * that a periodic allocation pattern cannot alias with it) is tracked, and
 * the user learns its site (the line that allocated it). Every free tests
 * one bit of the bitmap (8 KiB, stays in cache); only a set bit leads to
 * the table, and only a matching pointer to the lock. A tracked block that
 * is freed is reported with its site; one that is never freed stays
 * counted as sampled-but-not-freed, which is what a leak looks like.
 *
 * ALL OF THIS RUNS INSIDE ALLOCATOR HOOKS. The table lock is a spinlock of
 * the shim's own, held for a few instructions and never while calling
 * anything (the user's callback runs after it is released), so no hooked
 * function can be holding it when it is taken. No allocation, errno kept.
 */
#include "shim_internal.h"

#include <sched.h>
#include <string.h>

/* Blocks tracked at once; beyond this an older one is let go (it stays
 * counted as not freed: it survived long enough). */
#define SHIM_LEAK_MAX_LIVE 4096
/* Slots examined when looking for one to let go. */
#define SHIM_LEAK_EVICT_SCAN 64

_Atomic uint64_t sonde__shim_leak_bits[SHIM_LEAK_SLOTS / 64];
static _Atomic uintptr_t shim_leak_ptr[SHIM_LEAK_SLOTS]; /* 0 = empty */
static uint64_t shim_leak_site[SHIM_LEAK_SLOTS];         /* protected by shim_leak_lock */
static int64_t shim_leak_weight[SHIM_LEAK_SLOTS];        /* protected by shim_leak_lock */
static uint32_t shim_leak_live;                          /* protected by shim_leak_lock */
static atomic_flag shim_leak_lock = ATOMIC_FLAG_INIT;

static void shim_leak_lock_take(void)
{
    while (sonde_atomic_flag_test_and_set_acquire(&shim_leak_lock))
        sched_yield();
}

static void shim_leak_lock_give(void)
{
    sonde_atomic_flag_clear_release(&shim_leak_lock);
}

static void shim_leak_clear_unlocked(uint32_t slot)
{
    sonde_atomic_and_relaxed(&sonde__shim_leak_bits[slot / 64], ~(1ull << (slot % 64)));
    sonde_atomic_store_relaxed(&shim_leak_ptr[slot], 0);
    shim_leak_site[slot] = 0;
    shim_leak_weight[slot] = 0;
    shim_leak_live--;
}

static void shim_leak_put_unlocked(uint32_t slot, void *ptr, uint64_t site, int64_t weight)
{
    if (sonde_atomic_load_relaxed(&shim_leak_ptr[slot])) shim_leak_clear_unlocked(slot);
    if (shim_leak_live >= SHIM_LEAK_MAX_LIVE) {
        for (uint32_t i = 1; i <= SHIM_LEAK_EVICT_SCAN; i++) {
            uint32_t other = (slot + i * 97) & (SHIM_LEAK_SLOTS - 1);
            if (sonde_atomic_load_relaxed(&shim_leak_ptr[other])) {
                shim_leak_clear_unlocked(other);
                break;
            }
        }
        if (shim_leak_live >= SHIM_LEAK_MAX_LIVE) return;
    }
    shim_leak_site[slot] = site;
    shim_leak_weight[slot] = weight;
    sonde_atomic_store_relaxed(&shim_leak_ptr[slot], (uintptr_t)ptr);
    sonde_atomic_or_relaxed(&sonde__shim_leak_bits[slot / 64], 1ull << (slot % 64));
    shim_leak_live++;
}

/* Removes ptr if tracked; returns its site (and *weight), 0 if it was not
 * tracked. */
static uint64_t shim_leak_take(void *ptr, int64_t *weight)
{
    uint32_t slot = sonde__shim_leak_slot(ptr);
    if (sonde_atomic_load_relaxed(&shim_leak_ptr[slot]) != (uintptr_t)ptr) return 0;
    uint64_t site = 0;
    shim_leak_lock_take();
    if (sonde_atomic_load_relaxed(&shim_leak_ptr[slot]) == (uintptr_t)ptr) {
        site = shim_leak_site[slot];
        *weight = shim_leak_weight[slot];
        shim_leak_clear_unlocked(slot);
    }
    shim_leak_lock_give();
    return site;
}

void sonde__shim_leak_sample(sonde__shim_thread_t *t, void *ptr, size_t size)
{
    uint32_t gen = sonde_atomic_load_relaxed(&sonde__shim_gen);
    uint64_t mean = sonde__shim_config.leak_sample_bytes;
    (void)size;
    if (gen == 0 || t->guard || t->gen != gen || !ptr) {
        t->leak_countdown = SHIM_IDLE_COUNTDOWN; /* not counting: look again later */
        return;
    }
    /* Marks are a Poisson process over the bytes allocated (exponential
     * spacing, mean leak_sample_bytes); the block holds one or more of them
     * and stands for that many means of bytes. A huge block counts whole. */
    int64_t weight = 0;
    if (t->leak_countdown < -(int64_t)(SHIM_MAX_MARKS * mean)) {
        weight = -t->leak_countdown;
        t->leak_countdown = 0;
    }
    while (t->leak_countdown <= 0) {
        weight += (int64_t)mean;
        t->leak_countdown += sonde__shim_exp_draw(t, mean);
    }
    sonde_shim_event_t event = {.kind = SONDE_SHIM_EV_LEAK_TRACK, .bytes = weight};
    uint64_t site = sonde__shim_emit(t, &event);
    if (!site) return;
    int saved = errno;
    shim_leak_lock_take();
    shim_leak_put_unlocked(sonde__shim_leak_slot(ptr), ptr, site, weight);
    shim_leak_lock_give();
    errno = saved;
}

void sonde__shim_leak_freed(void *ptr)
{
    int64_t weight = 0;
    uint64_t site = shim_leak_take(ptr, &weight);
    if (!site) return;
    sonde__shim_thread_t *t = &sonde__shim_thread;
    uint32_t gen = sonde_atomic_load_relaxed(&sonde__shim_gen);
    if (gen == 0 || t->guard) return;
    if (t->gen != gen) sonde__shim_thread_reset(t, gen);
    sonde_shim_event_t event = {.kind = SONDE_SHIM_EV_LEAK_FREED, .site = site, .bytes = weight};
    sonde__shim_emit(t, &event);
}

void sonde__shim_leak_moved(void *old_ptr, void *new_ptr, size_t new_size)
{
    (void)new_size;
    int64_t weight = 0;
    uint64_t site = shim_leak_take(old_ptr, &weight);
    if (!site) return;
    shim_leak_lock_take();
    shim_leak_put_unlocked(sonde__shim_leak_slot(new_ptr), new_ptr, site, weight);
    shim_leak_lock_give();
}

void sonde__shim_leak_reset(void)
{
    /* Called by start (no session running) and in a forked child (one
     * thread): nobody holds the lock in a way that matters any more. */
    atomic_flag_clear(&shim_leak_lock);
    for (uint32_t i = 0; i < SHIM_LEAK_SLOTS / 64; i++)
        sonde_atomic_store_relaxed(&sonde__shim_leak_bits[i], 0);
    for (uint32_t i = 0; i < SHIM_LEAK_SLOTS; i++) {
        sonde_atomic_store_relaxed(&shim_leak_ptr[i], 0);
        shim_leak_site[i] = 0;
        shim_leak_weight[i] = 0;
    }
    shim_leak_live = 0;
}
