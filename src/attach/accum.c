/* accum.c — what the attach sampler accumulates for one process.
 *
 * Owns: sonde_accum_t: unique call stacks (per thread slot) with their
 * sample counts and time, and the time of each (code id, line). Keys are
 * the process's code ids, so a sample costs hashing a few integers, never
 * a string; names are looked up once, when the profile is built
 * (profile.c). Called by target.c on the sampling thread of the `sonde`
 * command. Plain C; never in a signal handler.
 */
#include "attach.h"

#include <stdlib.h>
#include <string.h>

#define ACCUM_MAX_POOL ((size_t)1 << 31) /* frames kept over all stacks */

static uint64_t accum_mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

static uint64_t accum_stack_hash(uint32_t thread, const sonde_aframe_t *frames, uint32_t depth)
{
    uint64_t h = accum_mix(((uint64_t)thread << 32) ^ depth ^ 0x9e3779b97f4a7c15ull);
    for (uint32_t i = 0; i < depth; i++)
        h = accum_mix(h ^ frames[i]) + i;
    return h ? h : 1;
}

void sonde_accum_init(sonde_accum_t *acc)
{
    memset(acc, 0, sizeof *acc);
}

void sonde_accum_free(sonde_accum_t *acc)
{
    free(acc->stacks);
    free(acc->pool);
    free(acc->lines);
    memset(acc, 0, sizeof *acc);
}

static int accum_stacks_grow(sonde_accum_t *acc)
{
    size_t cap = acc->stacks_cap ? acc->stacks_cap * 2 : 256;
    sonde_astack_t *stacks = calloc(cap, sizeof *stacks);
    if (!stacks) return -ENOMEM;
    for (size_t i = 0; i < acc->stacks_cap; i++) {
        const sonde_astack_t *old = &acc->stacks[i];
        if (!old->hash) continue;
        size_t j = old->hash & (cap - 1);
        while (stacks[j].hash)
            j = (j + 1) & (cap - 1);
        stacks[j] = *old;
    }
    free(acc->stacks);
    acc->stacks = stacks;
    acc->stacks_cap = cap;
    return 0;
}

/* Copies depth frames into the pool; returns their offset or -ENOMEM. */
static ssize_t accum_pool_put(sonde_accum_t *acc, const sonde_aframe_t *frames, uint32_t depth)
{
    if (acc->pool_len + depth > acc->pool_cap) {
        size_t cap = acc->pool_cap ? acc->pool_cap : 4096;
        while (cap < acc->pool_len + depth)
            cap *= 2;
        if (cap > ACCUM_MAX_POOL) return -ENOMEM;
        sonde_aframe_t *pool = realloc(acc->pool, cap * sizeof *pool);
        if (!pool) return -ENOMEM;
        acc->pool = pool;
        acc->pool_cap = cap;
    }
    size_t at = acc->pool_len;
    if (depth) memcpy(acc->pool + at, frames, depth * sizeof *frames);
    acc->pool_len += depth;
    return (ssize_t)at;
}

ssize_t sonde_accum_add_stack(sonde_accum_t *acc, uint32_t thread, const sonde_aframe_t *frames,
                              uint32_t depth, uint64_t samples, sonde_ns_t ns)
{
    if ((acc->stacks_used + 1) * 2 > acc->stacks_cap && accum_stacks_grow(acc) < 0) return -ENOMEM;
    uint64_t h = accum_stack_hash(thread, frames, depth);
    size_t j = h & (acc->stacks_cap - 1);
    for (; acc->stacks[j].hash; j = (j + 1) & (acc->stacks_cap - 1)) {
        sonde_astack_t *s = &acc->stacks[j];
        if (s->hash == h && s->thread == thread && s->depth == depth &&
            (depth == 0 || memcmp(acc->pool + s->frames, frames, depth * sizeof *frames) == 0)) {
            s->samples += samples;
            s->ns += ns;
            return (ssize_t)j;
        }
    }
    ssize_t at = accum_pool_put(acc, frames, depth);
    if (at < 0) return at;
    sonde_astack_t *s = &acc->stacks[j];
    s->hash = h;
    s->thread = thread;
    s->depth = depth;
    s->frames = (size_t)at;
    s->samples = samples;
    s->ns = ns;
    acc->stacks_used++;
    return (ssize_t)j;
}

static int accum_lines_grow(sonde_accum_t *acc)
{
    size_t cap = acc->lines_cap ? acc->lines_cap * 2 : 256;
    sonde_aline_t *lines = calloc(cap, sizeof *lines);
    if (!lines) return -ENOMEM;
    for (size_t i = 0; i < acc->lines_cap; i++) {
        const sonde_aline_t *old = &acc->lines[i];
        if (!old->key) continue;
        size_t j = accum_mix(old->key) & (cap - 1);
        while (lines[j].key)
            j = (j + 1) & (cap - 1);
        lines[j] = *old;
    }
    free(acc->lines);
    acc->lines = lines;
    acc->lines_cap = cap;
    return 0;
}

int sonde_accum_add_line(sonde_accum_t *acc, sonde_aframe_t key, sonde_ns_t python_ns,
                         sonde_ns_t native_ns, sonde_ns_t system_ns)
{
    if (!key) return -EINVAL;
    if ((acc->lines_used + 1) * 4 > acc->lines_cap * 3 && accum_lines_grow(acc) < 0) return -ENOMEM;
    size_t j = accum_mix(key) & (acc->lines_cap - 1);
    while (acc->lines[j].key && acc->lines[j].key != key)
        j = (j + 1) & (acc->lines_cap - 1);
    sonde_aline_t *line = &acc->lines[j];
    if (!line->key) {
        line->key = key;
        acc->lines_used++;
    }
    line->python_ns += python_ns;
    line->native_ns += native_ns;
    line->system_ns += system_ns;
    line->samples++;
    return 0;
}
