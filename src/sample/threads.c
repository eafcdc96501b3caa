/* threads.c — the registry of sampled threads and a tick's thread list.
 *
 * Owns: sonde_threadreg_t (sample.h): one entry per Python thread, found
 * by (thread state, tid) through a hash index, marked seen at each tick and
 * swept at its end, so that a thread that ended releases what its entry
 * holds (the kernel view's file descriptors, a saved stack). Entries are
 * the front end's own structs (src/ext/sampler.c, src/attach/target.c)
 * beginning with a sonde_thread_key_t. Also sonde_threadlist_t: every
 * thread state of a tick, however many (grown as needed), the main thread
 * first, and the order in which a tick samples them within its time
 * budget (the others in turn, so that a tick cut short by its budget is
 * followed by one that starts with the threads it left out, counted in
 * threads_left_out). Called on the sampling thread only; no signal
 * handler, no locks.
 */
#include "sample.h"

#include <stdlib.h>
#include <string.h>

#define THREADS_INITIAL_CAP 16
#define THREADS_INDEX_MIN 32 /* slots of the smallest index (a power of two) */

/* ---- the registry's index ---------------------------------------------------------- */

static size_t threads_slot(uint64_t tstate, pid_t tid, size_t mask)
{
    uint64_t h = (tstate ^ ((uint64_t)(uint32_t)tid << 40)) * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 29) & mask;
}

static void threads_index_put(sonde_threadreg_t *r, size_t i)
{
    const sonde_thread_key_t *key = sonde_threadreg_at(r, i);
    size_t mask = r->index_cap - 1;
    size_t slot = threads_slot(key->tstate, key->tid, mask);
    while (r->index[slot])
        slot = (slot + 1) & mask;
    r->index[slot] = (uint32_t)i + 1;
}

/* Rebuilds the index with room for r->cap entries (at most half full).
 * Returns 0 or -ENOMEM (the index is then dropped: look-ups scan). */
static int threads_reindex(sonde_threadreg_t *r)
{
    size_t want = THREADS_INDEX_MIN;
    while (want < 2 * r->cap)
        want *= 2;
    if (want != r->index_cap) {
        free(r->index);
        r->index = calloc(want, sizeof *r->index);
        r->index_cap = r->index ? want : 0;
        if (!r->index) return -ENOMEM;
    } else {
        memset(r->index, 0, r->index_cap * sizeof *r->index);
    }
    for (size_t i = 0; i < r->n; i++)
        threads_index_put(r, i);
    return 0;
}

static sonde_thread_key_t *threads_find(const sonde_threadreg_t *r, uint64_t tstate, pid_t tid)
{
    if (!r->index) {
        for (size_t i = 0; i < r->n; i++) {
            sonde_thread_key_t *key = sonde_threadreg_at(r, i);
            if (key->tstate == tstate && key->tid == tid) return key;
        }
        return NULL;
    }
    size_t mask = r->index_cap - 1;
    for (size_t slot = threads_slot(tstate, tid, mask); r->index[slot]; slot = (slot + 1) & mask) {
        sonde_thread_key_t *key = sonde_threadreg_at(r, r->index[slot] - 1);
        if (key->tstate == tstate && key->tid == tid) return key;
    }
    return NULL;
}

/* ---- the registry -------------------------------------------------------------------- */

void sonde_threadreg_init(sonde_threadreg_t *r, size_t entry_size, void (*release)(void *entry))
{
    sonde_assert(entry_size >= sizeof(sonde_thread_key_t));
    memset(r, 0, sizeof *r);
    r->entry_size = entry_size;
    r->release = release;
}

void *sonde_threadreg_get(sonde_threadreg_t *r, uint64_t tstate, pid_t tid, bool *is_new)
{
    sonde_thread_key_t *key = threads_find(r, tstate, tid);
    if (key) {
        key->seen = true;
        *is_new = false;
        return key;
    }
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : THREADS_INITIAL_CAP;
        char *grown = realloc(r->entries, cap * r->entry_size);
        if (!grown) return NULL;
        r->entries = grown;
        r->cap = cap;
        threads_reindex(r); /* out of memory: look-ups scan */
    }
    key = sonde_threadreg_at(r, r->n++);
    memset(key, 0, r->entry_size);
    key->tstate = tstate;
    key->tid = tid;
    key->seen = true;
    if (r->index) threads_index_put(r, r->n - 1);
    *is_new = true;
    return key;
}

bool sonde_threadreg_touch(sonde_threadreg_t *r, uint64_t tstate, pid_t tid)
{
    sonde_thread_key_t *key = threads_find(r, tstate, tid);
    if (key) key->seen = true;
    return key != NULL;
}

size_t sonde_threadreg_sweep(sonde_threadreg_t *r)
{
    size_t kept = 0, dropped = 0;
    for (size_t i = 0; i < r->n; i++) {
        sonde_thread_key_t *key = sonde_threadreg_at(r, i);
        if (!key->seen) {
            if (r->release) r->release(key);
            dropped++;
            continue;
        }
        key->seen = false;
        if (kept != i) memcpy(sonde_threadreg_at(r, kept), key, r->entry_size);
        kept++;
    }
    r->n = kept;
    if (dropped && r->cap) threads_reindex(r); /* entries moved */
    return dropped;
}

void sonde_threadreg_free(sonde_threadreg_t *r)
{
    for (size_t i = 0; i < r->n && r->release; i++)
        r->release(sonde_threadreg_at(r, i));
    free(r->entries);
    free(r->index);
    r->entries = NULL;
    r->index = NULL;
    r->n = r->cap = r->index_cap = 0;
}

/* ---- a tick's threads ----------------------------------------------------------------- */

void sonde_threadlist_init(sonde_threadlist_t *list)
{
    memset(list, 0, sizeof *list);
}

void sonde_threadlist_free(sonde_threadlist_t *list)
{
    free(list->threads);
    memset(list, 0, sizeof *list);
}

int sonde_threadlist_read(sonde_threadlist_t *list, sonde_pyproc_t *proc, sonde_partial_t *partial)
{
    sonde_pythread_iter_t it;
    sonde_pythread_t thread;
    size_t main_at = 0;
    bool main_found = false;

    list->n = 0;
    int rc = sonde_pythread_iter_begin(proc, &it);
    if (rc < 0) return rc;
    while (sonde_pythread_iter_next(&it, &thread) == 1) {
        if (list->n == list->cap) {
            size_t cap = list->cap ? list->cap * 2 : THREADS_INITIAL_CAP;
            sonde_pythread_t *grown = realloc(list->threads, cap * sizeof *grown);
            if (!grown) {
                /* Out of memory: the rest is left out, counted, but the
                 * main thread takes the last place if it is among them
                 * (its kernel tid is the process id, or it is the oldest,
                 * listed last). */
                uint64_t more = 1;
                sonde_pythread_t main_thread = thread;
                bool main_by_tid = thread.native_tid > 0 && thread.native_tid == proc->mem.pid;
                while (sonde_pythread_iter_next(&it, &thread) == 1) {
                    more++;
                    if (main_by_tid) continue;
                    main_thread = thread;
                    main_by_tid = thread.native_tid > 0 && thread.native_tid == proc->mem.pid;
                }
                if (!main_found && list->n) list->threads[list->n - 1] = main_thread;
                partial->threads_left_out += more;
                break;
            }
            list->threads = grown;
            list->cap = cap;
        }
        if (!main_found && thread.native_tid > 0 && thread.native_tid == proc->mem.pid) {
            main_at = list->n;
            main_found = true;
        }
        list->threads[list->n++] = thread;
    }
    /* The main thread first: its thread state is the one whose kernel tid
     * is the process id, or else the oldest (the list's last). */
    if (!main_found && list->n) main_at = list->n - 1;
    if (main_at) {
        sonde_pythread_t main_thread = list->threads[main_at];
        list->threads[main_at] = list->threads[0];
        list->threads[0] = main_thread;
    }
    if (list->rotation >= list->n) list->rotation = 0;
    return (int)(list->n > INT32_MAX ? INT32_MAX : list->n);
}

const sonde_pythread_t *sonde_threadlist_nth(const sonde_threadlist_t *list, size_t k)
{
    sonde_assert(k < list->n);
    if (k == 0) return &list->threads[0];
    size_t others = list->n - 1;
    return &list->threads[1 + (list->rotation + k - 1) % others];
}

void sonde_threadlist_tick_end(sonde_threadlist_t *list, size_t sampled, sonde_partial_t *partial)
{
    if (sampled >= list->n) return;
    partial->threads_left_out += list->n - sampled;
    size_t others = list->n - 1;
    if (sampled > 0 && others > 0) list->rotation = (list->rotation + sampled - 1) % others;
}
