/* threads.c — the registry of sampled threads and a tick's thread list.
 *
 * Owns: sonde_threadreg_t (sample.h): one entry per Python thread, found
 * by (thread state, tid), marked seen at each tick and swept at its end,
 * so that a thread that ended releases what its entry holds (the kernel
 * view's file descriptors, a saved stack). Entries are the front end's own
 * structs (src/ext/sampler.c, src/attach/target.c) beginning with a
 * sonde_thread_key_t. Also sonde_sample_threads, which bounds a tick's
 * thread list and counts the threads left out. Called on the sampling
 * thread only; no signal handler, no locks.
 */
#include "sample.h"

#include <stdlib.h>
#include <string.h>

#define THREADS_INITIAL_CAP 16

void sonde_threadreg_init(sonde_threadreg_t *r, size_t entry_size, void (*release)(void *entry))
{
    sonde_assert(entry_size >= sizeof(sonde_thread_key_t));
    memset(r, 0, sizeof *r);
    r->entry_size = entry_size;
    r->release = release;
}

void *sonde_threadreg_get(sonde_threadreg_t *r, uint64_t tstate, pid_t tid, bool *is_new)
{
    for (size_t i = 0; i < r->n; i++) {
        sonde_thread_key_t *key = sonde_threadreg_at(r, i);
        if (key->tstate == tstate && key->tid == tid) {
            key->seen = true;
            *is_new = false;
            return key;
        }
    }
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : THREADS_INITIAL_CAP;
        char *grown = realloc(r->entries, cap * r->entry_size);
        if (!grown) return NULL;
        r->entries = grown;
        r->cap = cap;
    }
    sonde_thread_key_t *key = sonde_threadreg_at(r, r->n++);
    memset(key, 0, r->entry_size);
    key->tstate = tstate;
    key->tid = tid;
    key->seen = true;
    *is_new = true;
    return key;
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
    return dropped;
}

void sonde_threadreg_free(sonde_threadreg_t *r)
{
    for (size_t i = 0; i < r->n && r->release; i++)
        r->release(sonde_threadreg_at(r, i));
    free(r->entries);
    r->entries = NULL;
    r->n = r->cap = 0;
}

int sonde_sample_threads(sonde_pyproc_t *proc, sonde_pythread_t *threads, sonde_partial_t *partial)
{
    int n = sonde_pyproc_threads(proc, threads, SONDE_PY_MAX_THREADS);
    if (n > SONDE_SAMPLE_MAX_THREADS) {
        partial->threads_left_out += (uint64_t)(n - SONDE_SAMPLE_MAX_THREADS);
        n = SONDE_SAMPLE_MAX_THREADS;
    }
    return n;
}
