/* stacks.c — call stacks in the profile model (flame graphs).
 *
 * Owns: interned frames, unique stacks with their weights, thread names and
 * ids: sonde_profile_add_stack, sonde_profile_thread(_of), sonde_profile_thread_ids. Producers are the
 * attach reader and `sonde run --stacks`; the folded, SVG, speedscope and
 * HTML writers read prof->stacks / prof->frames. Frames and stacks are
 * found through one open-addressed index (hash of the frame's strings and
 * line, or of a stack's thread and frame indices), a cache built again
 * from the arrays whenever it does not cover them. Plain C, no signal
 * context.
 */
#include "model_internal.h"

#include <stdlib.h>
#include <string.h>

/* Index slots: kind bit 63 (1 = stack), index in the low bits; 0 = empty. */
struct sonde_stack_index {
    uint64_t *slots; /* owned */
    size_t cap, used;
};

#define STACKS_IS_STACK (1ull << 63)

static uint64_t stacks_mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h;
}

static uint64_t stacks_str_hash(uint64_t h, const char *s)
{
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return stacks_mix(h, 0xff);
}

static uint64_t stacks_frame_hash(const char *func, const char *file, int line)
{
    uint64_t h = stacks_str_hash(0xcbf29ce484222325ull, func);
    h = stacks_str_hash(h, file);
    return stacks_mix(h, (uint64_t)(uint32_t)line);
}

static uint64_t stacks_stack_hash(const uint32_t *frames, uint32_t depth, int thread)
{
    uint64_t h = stacks_mix(0x51afd7ed558ccd1ull, (uint64_t)(int64_t)thread);
    for (uint32_t i = 0; i < depth; i++)
        h = stacks_mix(h, frames[i]);
    return stacks_mix(h, depth) | 1;
}

static bool stacks_frame_eq(const sonde_stack_frame_t *f, const char *func, const char *file,
                            int line)
{
    return f->line == line && strcmp(f->func, func ? func : "") == 0 &&
           strcmp(f->file, file ? file : "") == 0;
}

static bool stacks_stack_eq(const sonde_stack_t *s, const uint32_t *frames, uint32_t depth,
                            int thread)
{
    return s->depth == depth && s->thread == thread &&
           (depth == 0 || memcmp(s->frames, frames, depth * sizeof *frames) == 0);
}

static uint64_t stacks_slot_hash(const sonde_profile_t *prof, uint64_t slot)
{
    size_t at = (size_t)(slot & ~STACKS_IS_STACK) - 1;
    if (slot & STACKS_IS_STACK) {
        const sonde_stack_t *s = &prof->stacks[at];
        return stacks_stack_hash(s->frames, s->depth, s->thread);
    }
    const sonde_stack_frame_t *f = &prof->frames[at];
    return stacks_frame_hash(f->func, f->file, f->line);
}

/* Makes room for one more entry in the index. The index is built again,
 * from the frames and stacks, when it grows or when it does not hold them
 * all (a profile whose arrays were filled without it: one read back from a
 * hand-over, src/handover/). Returns 0 or -ENOMEM. */
static int stacks_index_reserve(sonde_profile_t *prof)
{
    struct sonde_stack_index *ix = prof->stack_index;
    if (!ix) {
        ix = calloc(1, sizeof *ix);
        if (!ix) return -ENOMEM;
        prof->stack_index = ix;
    }
    size_t entries = prof->n_frames + prof->n_stacks;
    if (ix->used == entries && (entries + 1) * 2 <= ix->cap) return 0;
    size_t cap = ix->cap ? ix->cap : 256;
    while ((entries + 1) * 2 > cap) {
        if (cap > SIZE_MAX / 2 / sizeof(uint64_t)) return -ENOMEM;
        cap *= 2;
    }
    uint64_t *slots = calloc(cap, sizeof *slots);
    if (!slots) return -ENOMEM;
    for (size_t i = 0; i < entries; i++) {
        uint64_t slot = i < prof->n_frames ? (uint64_t)(i + 1)
                                           : STACKS_IS_STACK | (uint64_t)(i - prof->n_frames + 1);
        size_t j = stacks_slot_hash(prof, slot) & (cap - 1);
        while (slots[j])
            j = (j + 1) & (cap - 1);
        slots[j] = slot;
    }
    free(ix->slots);
    ix->slots = slots;
    ix->cap = cap;
    ix->used = entries;
    return 0;
}

static int stacks_reserve(void **items, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap) return 0;
    size_t new_cap = *cap ? *cap * 2 : 64;
    void *grown = realloc(*items, new_cap * elem);
    if (!grown) return -ENOMEM;
    *items = grown;
    *cap = new_cap;
    return 0;
}

/* Index of the interned frame, created if needed; -ENOMEM on failure. */
static int64_t stacks_intern_frame(sonde_profile_t *prof, const sonde_stack_frame_t *frame)
{
    if (stacks_index_reserve(prof) < 0) return -ENOMEM;
    struct sonde_stack_index *ix = prof->stack_index;
    uint64_t h = stacks_frame_hash(frame->func, frame->file, frame->line);
    size_t j = h & (ix->cap - 1);
    for (; ix->slots[j]; j = (j + 1) & (ix->cap - 1)) {
        uint64_t slot = ix->slots[j];
        if (slot & STACKS_IS_STACK) continue;
        size_t at = (size_t)slot - 1;
        if (stacks_frame_eq(&prof->frames[at], frame->func, frame->file, frame->line))
            return (int64_t)at;
    }
    if (stacks_reserve((void **)&prof->frames, &prof->cap_frames, prof->n_frames,
                       sizeof *prof->frames) < 0)
        return -ENOMEM;
    sonde_stack_frame_t *f = &prof->frames[prof->n_frames];
    f->func = strdup(frame->func ? frame->func : "");
    f->file = strdup(frame->file ? frame->file : "");
    f->line = frame->line;
    if (!f->func || !f->file) {
        free(f->func);
        free(f->file);
        return -ENOMEM;
    }
    ix->slots[j] = (uint64_t)(++prof->n_frames);
    ix->used++;
    return (int64_t)prof->n_frames - 1;
}

/* Adds a stack's weight: ns, and its split by kind when kind_ns is given. */
static void stacks_weigh(sonde_stack_t *s, uint64_t samples, sonde_ns_t ns,
                         const sonde_ns_t *kind_ns)
{
    s->samples += samples;
    s->ns += ns;
    for (int k = 0; kind_ns && k < SONDE_N_KINDS; k++)
        s->kind_ns[k] += kind_ns[k];
}

static int stacks_add(sonde_profile_t *prof, const sonde_stack_frame_t *frames, uint32_t depth,
                      int thread, uint64_t samples, sonde_ns_t ns, const sonde_ns_t *kind_ns)
{
    uint32_t local[256];
    uint32_t *ids = local;
    int rc = 0;
    if ((!frames && depth) || thread < -1 || (thread >= 0 && (size_t)thread >= prof->n_threads))
        return -EINVAL;
    if (depth > SONDE_ARRAY_LEN(local) && !(ids = malloc(depth * sizeof *ids))) return -ENOMEM;
    for (uint32_t i = 0; i < depth; i++) {
        int64_t id = stacks_intern_frame(prof, &frames[i]);
        if (id < 0) {
            rc = (int)id;
            goto done;
        }
        ids[i] = (uint32_t)id;
    }
    if ((rc = stacks_index_reserve(prof)) < 0) goto done;
    struct sonde_stack_index *ix = prof->stack_index;
    size_t j = stacks_stack_hash(ids, depth, thread) & (ix->cap - 1);
    for (; ix->slots[j]; j = (j + 1) & (ix->cap - 1)) {
        uint64_t slot = ix->slots[j];
        if (!(slot & STACKS_IS_STACK)) continue;
        sonde_stack_t *s = &prof->stacks[(size_t)(slot & ~STACKS_IS_STACK) - 1];
        if (stacks_stack_eq(s, ids, depth, thread)) {
            stacks_weigh(s, samples, ns, kind_ns);
            goto done;
        }
    }
    if ((rc = stacks_reserve((void **)&prof->stacks, &prof->cap_stacks, prof->n_stacks,
                             sizeof *prof->stacks)) < 0)
        goto done;
    sonde_stack_t *s = &prof->stacks[prof->n_stacks];
    s->frames = malloc((depth ? depth : 1) * sizeof *s->frames);
    if (!s->frames) {
        rc = -ENOMEM;
        goto done;
    }
    if (depth) memcpy(s->frames, ids, depth * sizeof *ids);
    s->depth = depth;
    s->thread = thread;
    s->samples = s->ns = 0;
    memset(s->kind_ns, 0, sizeof s->kind_ns);
    stacks_weigh(s, samples, ns, kind_ns);
    ix->slots[j] = STACKS_IS_STACK | (uint64_t)(++prof->n_stacks);
    ix->used++;
done:
    if (ids != local) free(ids);
    return rc;
}

int sonde_profile_add_stack(sonde_profile_t *prof, const sonde_stack_frame_t *frames,
                            uint32_t depth, int thread, uint64_t samples, sonde_ns_t ns)
{
    return stacks_add(prof, frames, depth, thread, samples, ns, NULL);
}

int sonde_profile_add_stack_kinds(sonde_profile_t *prof, const sonde_stack_frame_t *frames,
                                  uint32_t depth, int thread, uint64_t samples,
                                  const sonde_ns_t kind_ns[SONDE_N_KINDS])
{
    sonde_ns_t ns = kind_ns[0] + kind_ns[1] + kind_ns[2];
    return stacks_add(prof, frames, depth, thread, samples, ns, kind_ns);
}

/* Appends a thread named name with ids (0, 0). Returns its index or
 * -ENOMEM. */
static int stacks_thread_new(sonde_profile_t *prof, const char *name)
{
    char **names = realloc(prof->thread_names, (prof->n_threads + 1) * sizeof *names);
    if (!names) return -ENOMEM;
    prof->thread_names = names;
    sonde_thread_ids_t *ids = realloc(prof->thread_ids, (prof->n_threads + 1) * sizeof *ids);
    if (!ids) return -ENOMEM;
    prof->thread_ids = ids;
    ids[prof->n_threads] = (sonde_thread_ids_t){0, 0};
    names[prof->n_threads] = strdup(name ? name : "");
    if (!names[prof->n_threads]) return -ENOMEM;
    return (int)prof->n_threads++;
}

int sonde_profile_thread(sonde_profile_t *prof, const char *name)
{
    for (size_t i = 0; i < prof->n_threads; i++)
        if (strcmp(prof->thread_names[i], name ? name : "") == 0) return (int)i;
    return stacks_thread_new(prof, name);
}

int sonde_profile_thread_of(sonde_profile_t *prof, const char *name, int pid, int tid)
{
    if (!pid && !tid) return sonde_profile_thread(prof, name);
    for (size_t i = 0; i < prof->n_threads; i++)
        if (prof->thread_ids[i].pid == pid && prof->thread_ids[i].tid == tid &&
            strcmp(prof->thread_names[i], name ? name : "") == 0)
            return (int)i;
    int index = stacks_thread_new(prof, name);
    if (index >= 0) prof->thread_ids[index] = (sonde_thread_ids_t){pid, tid};
    return index;
}

void sonde_profile_thread_ids(sonde_profile_t *prof, int index, int pid, int tid)
{
    if (index < 0 || (size_t)index >= prof->n_threads) return;
    prof->thread_ids[index] = (sonde_thread_ids_t){pid, tid};
}

void sonde__stacks_free(sonde_profile_t *prof)
{
    for (size_t i = 0; i < prof->n_frames; i++) {
        free(prof->frames[i].func);
        free(prof->frames[i].file);
    }
    free(prof->frames);
    for (size_t i = 0; i < prof->n_stacks; i++)
        free(prof->stacks[i].frames);
    free(prof->stacks);
    if (prof->stack_index) free(prof->stack_index->slots);
    free(prof->stack_index);
    for (size_t i = 0; i < prof->n_threads; i++)
        free(prof->thread_names[i]);
    free(prof->thread_names);
    free(prof->thread_ids);
    prof->thread_ids = NULL;
    prof->frames = NULL;
    prof->stacks = NULL;
    prof->stack_index = NULL;
    prof->thread_names = NULL;
    prof->n_frames = prof->cap_frames = prof->n_stacks = prof->cap_stacks = prof->n_threads = 0;
}
