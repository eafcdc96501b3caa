/* control.c — the shim's session: start, stop, and the slow paths of its
 * accounting.
 *
 * Owns: the session generation (0 = inert), the user's configuration, the
 * global footprint, the count of events in flight, and the per-thread slow
 * paths (counter reset, footprint flush, event dispatch). sonde_shim_start/stop are called by the extension with the
 * GIL (never from a hook); everything else RUNS INSIDE ALLOCATOR HOOKS, on
 * the thread that allocated: no allocation of its own, no locks, errno
 * kept. A forked child is made inert at once (pthread_atfork): the session
 * belongs to the process that started it.
 */
#include "shim_internal.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

_Atomic uint32_t sonde__shim_gen;
sonde_shim_config_t sonde__shim_config = {.sample_bytes = INT64_MAX};
_Atomic int64_t sonde__shim_footprint;
__thread sonde__shim_thread_t sonde__shim_thread SHIM_TLS;

static _Atomic uint32_t shim_last_gen; /* generations handed out */
static _Atomic int64_t shim_in_flight; /* events being handled by the user */
static pthread_once_t shim_atfork_once = PTHREAD_ONCE_INIT;

/* ---- per-thread slow paths --------------------------------------------------- */

static uint64_t shim_rng_next(sonde__shim_thread_t *t)
{
    if (SONDE_UNLIKELY(t->rng == 0)) {
        struct timespec now = {0, 0};
        clock_gettime(CLOCK_MONOTONIC, &now);
        t->rng = ((uint64_t)(uintptr_t)t * 0x9e3779b97f4a7c15ull) ^ (uint64_t)now.tv_nsec ^
                 ((uint64_t)now.tv_sec << 32) ^ t->gen;
        if (t->rng == 0) t->rng = 0x2545f4914f6cdd1dull;
    }
    t->rng ^= t->rng << 13;
    t->rng ^= t->rng >> 7;
    t->rng ^= t->rng << 17;
    return t->rng;
}

int64_t sonde__shim_exp_draw(sonde__shim_thread_t *t, uint64_t mean)
{
    /* u in (0, 1]: 53 random bits, never 0. */
    double u = (double)((shim_rng_next(t) >> 11) + 1) * (1.0 / 9007199254740992.0);
    double draw = -log(u) * (double)mean;
    if (draw < 1) draw = 1;
    if (draw > 64.0 * (double)mean) draw = 64.0 * (double)mean; /* bound the tail */
    return (int64_t)draw;
}

void sonde__shim_thread_reset(sonde__shim_thread_t *t, uint32_t gen)
{
    int saved = errno;
    t->gen = gen;
    t->footprint_pending = 0;
    t->sample_countdown = sonde__shim_exp_draw(t, sonde__shim_config.sample_bytes);
    t->copy_armed = t->copy_countdown =
        sonde__shim_exp_draw(t, sonde__shim_config.copy_sample_bytes);
    errno = saved;
}

void sonde__shim_flush_footprint(sonde__shim_thread_t *t)
{
    sonde_atomic_add_relaxed(&sonde__shim_footprint, t->footprint_pending);
    t->footprint_pending = 0;
}

uint64_t sonde__shim_emit(sonde__shim_thread_t *t, const sonde_shim_event_t *event)
{
    uint64_t result = 0;
    int saved = errno;
    t->guard++;
    /* Counted before the check, so that stop (which clears the generation
     * and then waits for the count to drop) never misses a caller. */
    sonde_atomic_add_seq_cst(&shim_in_flight, 1);
    if (sonde_atomic_load_seq_cst(&sonde__shim_gen) == t->gen && sonde__shim_config.on_event)
        result = sonde__shim_config.on_event(sonde__shim_config.ctx, event);
    sonde_atomic_sub_seq_cst(&shim_in_flight, 1);
    t->guard--;
    errno = saved;
    return result;
}

/* ---- fork ------------------------------------------------------------------------ */

/* In a forked child: inert. (The child's copy of the user's state is
 * never touched again by the shim.) */
static void shim_atfork_child(void)
{
    sonde_atomic_store_relaxed(&sonde__shim_gen, 0);
    sonde_atomic_store_relaxed(&shim_in_flight, 0);
    sonde__shim_heap_reset();
    sonde__shim_thread.guard = 0;
}

static void shim_register_atfork(void)
{
    pthread_atfork(NULL, NULL, shim_atfork_child);
}

/* ---- the entry points ------------------------------------------------------------------ */

SONDE_EXPORT int sonde_shim_start(const sonde_shim_config_t *config);
SONDE_EXPORT void sonde_shim_stop(void);
SONDE_EXPORT int64_t sonde_shim_footprint(void);
SONDE_EXPORT void sonde_shim_guarded(void (*fn)(void *), void *arg);

void sonde_shim_guarded(void (*fn)(void *), void *arg)
{
    sonde__shim_thread.guard++;
    fn(arg);
    sonde__shim_thread.guard--;
}

int sonde_shim_start(const sonde_shim_config_t *config)
{
    if (!config || config->abi != SONDE_SHIM_ABI || config->sample_bytes < 64 ||
        config->sample_bytes > (1ull << 40) || config->copy_sample_bytes == 0 || !config->on_event)
        return -EINVAL;
    if (sonde_atomic_load_relaxed(&sonde__shim_gen) != 0) return -EBUSY;
    sonde__shim_init_real();
    pthread_once(&shim_atfork_once, shim_register_atfork);
    sonde__shim_config = *config;
    sonde__shim_heap_reset();
    sonde_atomic_store_relaxed(&sonde__shim_footprint, config->footprint_baseline);
    uint32_t gen = sonde_atomic_add_relaxed(&shim_last_gen, 1) + 1;
    if (gen == 0) gen = sonde_atomic_add_relaxed(&shim_last_gen, 1) + 1;
    /* Release: a thread that sees the generation sees the configuration. */
    sonde_atomic_store_seq_cst(&sonde__shim_gen, gen);
    return 0;
}

void sonde_shim_stop(void)
{
    sonde_atomic_store_seq_cst(&sonde__shim_gen, 0);
    /* Events already inside the user's callback finish quickly (they never
     * block on anything but each other); wait for them. The caller's own
     * thread cannot be among them: stop is never called from a hook. */
    struct timespec nap = {0, 50000};
    while (sonde_atomic_load_seq_cst(&shim_in_flight) > 0)
        nanosleep(&nap, NULL);
}

int64_t sonde_shim_footprint(void)
{
    return sonde_atomic_load_relaxed(&sonde__shim_footprint);
}
