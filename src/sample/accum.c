/* accum.c — what sampling one process accumulates.
 *
 * Owns: sonde_accum_t (sample.h): the time of each (code id, line) (a
 * src/core/keytab table), unique call stacks per thread slot with their
 * sample counts and time (frames pooled), the thread slots' kernel tids,
 * unattributed time and the partial-profile counters. Keys are the
 * process's code ids, so a sample costs hashing a few integers, never a
 * string; names are looked up once, when the profile is built
 * (convert.c). Called on the sampling thread of the in-process sampler
 * and of the attach reader; never in a signal handler.
 */
#include "sample.h"

#include "../core/keytab.h"

#include <stdlib.h>
#include <string.h>

#define ACCUM_LINES_INITIAL 1024
#define ACCUM_STACKS_INITIAL 256
#define ACCUM_POOL_INITIAL 4096
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
    free(acc->lines);
    free(acc->stacks);
    free(acc->pool);
    free(acc->slot_tids);
    memset(acc, 0, sizeof *acc);
}

void sonde_accum_clear(sonde_accum_t *acc)
{
    if (acc->lines) memset(acc->lines, 0, acc->lines_cap * sizeof *acc->lines);
    if (acc->stacks) memset(acc->stacks, 0, acc->stacks_cap * sizeof *acc->stacks);
    acc->lines_used = acc->stacks_used = acc->pool_len = 0;
    acc->unattributed_ns = 0;
    memset(&acc->partial, 0, sizeof acc->partial);
}

/* ---- lines -------------------------------------------------------------------- */

sonde_line_acc_t *sonde_accum_line(sonde_accum_t *acc, sonde_aframe_t key)
{
    if (!key) return NULL;
    return sonde_keytab_get((void **)&acc->lines, &acc->lines_cap, &acc->lines_used,
                            sizeof *acc->lines,
                            acc->lines_initial ? acc->lines_initial : ACCUM_LINES_INITIAL, key);
}

sonde_line_acc_t *sonde_accum_charge(sonde_accum_t *acc, sonde_aframe_t key, sonde_ns_t python_ns,
                                     sonde_ns_t native_ns, sonde_ns_t system_ns)
{
    if (!key) {
        acc->unattributed_ns += python_ns + native_ns + system_ns;
        return NULL;
    }
    sonde_line_acc_t *line = sonde_accum_line(acc, key);
    if (!line) {
        acc->partial.dropped_samples++;
        return NULL;
    }
    line->python_ns += python_ns;
    line->native_ns += native_ns;
    line->system_ns += system_ns;
    line->samples++;
    return line;
}

sonde_line_acc_t *sonde_accum_charge_answer(sonde_accum_t *acc, sonde_aframe_t key,
                                            sonde_ns_t run_ns, int answer, bool in_call,
                                            sonde_ns_t system_ns)
{
    sonde_ns_t python_ns = answer == 0 ? run_ns : 0, native_ns = answer == 1 ? run_ns : 0;
    sonde_ns_t unwatched_ns = answer < 0 ? run_ns : 0;
    if (!key) python_ns += unwatched_ns; /* unattributed: counted, not split */
    sonde_line_acc_t *line = sonde_accum_charge(acc, key, python_ns, native_ns, system_ns);
    if (!line) return NULL;
    if (run_ns && answer == 1) line->native_answers++;
    if (run_ns && answer == 0) line->python_answers++;
    if (in_call)
        line->unwatched_call_ns += unwatched_ns;
    else
        line->unwatched_ns += unwatched_ns;
    return line;
}

void sonde_line_split(const sonde_line_acc_t *line, sonde_ns_t *python_ns, sonde_ns_t *native_ns)
{
    uint64_t answers = (uint64_t)line->native_answers + line->python_answers;
    sonde_ns_t unwatched = line->unwatched_call_ns + line->unwatched_ns;
    sonde_ns_t native = 0;
    if (answers)
        native = (sonde_ns_t)((double)unwatched * line->native_answers / (double)answers + 0.5);
    else
        native = line->unwatched_call_ns;
    if (native > unwatched) native = unwatched;
    *python_ns = line->python_ns + unwatched - native;
    *native_ns = line->native_ns + native;
}

/* ---- thread slots -------------------------------------------------------------- */

uint32_t sonde_accum_slot(sonde_accum_t *acc, pid_t tid)
{
    for (size_t i = 0; i < acc->n_slots; i++)
        if (acc->slot_tids[i] == tid) return (uint32_t)i;
    if (acc->n_slots == acc->cap_slots) {
        size_t cap = acc->cap_slots ? acc->cap_slots * 2 : 16;
        pid_t *grown = realloc(acc->slot_tids, cap * sizeof *grown);
        if (!grown) return 0; /* shares slot 0's name rather than fail */
        acc->slot_tids = grown;
        acc->cap_slots = cap;
    }
    acc->slot_tids[acc->n_slots] = tid;
    return (uint32_t)acc->n_slots++;
}

/* ---- stacks ---------------------------------------------------------------------- */

static int accum_stacks_grow(sonde_accum_t *acc)
{
    size_t cap = acc->stacks_cap ? acc->stacks_cap * 2 : ACCUM_STACKS_INITIAL;
    sonde_stack_acc_t *stacks = calloc(cap, sizeof *stacks);
    if (!stacks) return -ENOMEM;
    for (size_t i = 0; i < acc->stacks_cap; i++) {
        const sonde_stack_acc_t *old = &acc->stacks[i];
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
        size_t cap = acc->pool_cap ? acc->pool_cap : ACCUM_POOL_INITIAL;
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

/* The frames a stack's marker stands for (0 without one). */
static uint64_t accum_left_out(const sonde_aframe_t *frames, uint32_t depth)
{
    uint64_t left_out = 0;
    for (uint32_t i = 0; i < depth; i++)
        if (sonde_aframe_is_marker(frames[i])) left_out += sonde_aframe_marker_count(frames[i]);
    return left_out;
}

/* Finds or adds the stack. Returns 0 or -ENOMEM. */
static int accum_stack_put(sonde_accum_t *acc, uint32_t thread, const sonde_aframe_t *frames,
                           uint32_t depth, uint64_t samples, sonde_ns_t ns, int kind,
                           sonde_aframe_t leaf)
{
    if ((acc->stacks_used + 1) * 2 > acc->stacks_cap && accum_stacks_grow(acc) < 0) return -ENOMEM;
    uint64_t h = accum_stack_hash(thread, frames, depth);
    size_t j = h & (acc->stacks_cap - 1);
    for (; acc->stacks[j].hash; j = (j + 1) & (acc->stacks_cap - 1)) {
        sonde_stack_acc_t *s = &acc->stacks[j];
        if (s->hash == h && s->thread == thread && s->depth == depth &&
            (depth == 0 || memcmp(acc->pool + s->frames, frames, depth * sizeof *frames) == 0)) {
            s->samples += samples;
            s->ns += ns;
            if (kind >= 0) s->kind_ns[kind] += ns;
            if (leaf) s->leaf = leaf;
            return 0;
        }
    }
    ssize_t at = accum_pool_put(acc, frames, depth);
    if (at < 0) return (int)at;
    sonde_stack_acc_t *s = &acc->stacks[j];
    s->hash = h;
    s->thread = thread;
    s->depth = depth;
    s->frames = (size_t)at;
    s->samples = samples;
    s->ns = ns;
    memset(s->kind_ns, 0, sizeof s->kind_ns);
    if (kind >= 0) s->kind_ns[kind] = ns;
    s->leaf = leaf;
    acc->stacks_used++;
    return 0;
}

int sonde_accum_add_stack_answer(sonde_accum_t *acc, uint32_t thread, const sonde_aframe_t *frames,
                                 uint32_t depth, sonde_aframe_t key, sonde_ns_t run_ns, int answer,
                                 bool in_call, sonde_ns_t system_ns)
{
    sonde_ns_t native = answer > 0 ? run_ns : 0;
    sonde_ns_t python = answer == 0 ? run_ns : 0;
    int rc = 0;
    if (answer < 0 && run_ns && key) {
        /* no answer yet: shared out at conversion by the line's final
         * answers, as the line's own unwatched time is */
        rc = accum_stack_put(acc, thread, frames, depth, 1, run_ns,
                             in_call ? SONDE_STACK_UNWATCHED_CALL : SONDE_STACK_UNWATCHED, key);
        if (rc < 0)
            acc->partial.dropped_samples++;
        else
            acc->partial.frames_left_out += accum_left_out(frames, depth);
    } else if (answer < 0 && run_ns) {
        python = run_ns; /* unattributed: counted, not split */
    }
    if (rc == 0 && (native || python || (!run_ns && !system_ns))) {
        /* one sample, counted with the larger part */
        bool native_counts = native && native >= python;
        if (native)
            rc = sonde_accum_add_stack_kind(acc, thread, frames, depth, native_counts ? 1 : 0,
                                            native, SONDE_KIND_NATIVE);
        if (rc == 0 && (python || !native))
            rc = sonde_accum_add_stack_kind(acc, thread, frames, depth, native_counts ? 0 : 1,
                                            python, SONDE_KIND_PYTHON);
    }
    if (rc == 0 && system_ns)
        rc = sonde_accum_add_stack_kind(acc, thread, frames, depth, run_ns ? 0 : 1, system_ns,
                                        SONDE_KIND_SYSTEM);
    return rc;
}

int sonde_accum_add_stack(sonde_accum_t *acc, uint32_t thread, const sonde_aframe_t *frames,
                          uint32_t depth, uint64_t samples, sonde_ns_t ns)
{
    return sonde_accum_add_stack_kind(acc, thread, frames, depth, samples, ns, -1);
}

int sonde_accum_add_stack_kind(sonde_accum_t *acc, uint32_t thread, const sonde_aframe_t *frames,
                               uint32_t depth, uint64_t samples, sonde_ns_t ns, int kind)
{
    sonde_assert(depth <= SONDE_STACK_MAX_DEPTH);
    sonde_assert(kind >= -1 && kind < SONDE_N_KINDS);
    int rc = accum_stack_put(acc, thread, frames, depth, samples, ns, kind, 0);
    if (rc < 0) {
        acc->partial.dropped_samples += samples;
        return rc;
    }
    acc->partial.frames_left_out += accum_left_out(frames, depth) * samples;
    return 0;
}
