/* table.c — per-thread records: tables of entries and edges, stacks.
 *
 * Owns: the slow paths behind the inline hot paths of trace_internal.h
 * (a thread's first event, a function's first call, a new caller->callee
 * pair, a deeper stack, an unmatched return), and the operations on whole
 * profilers (flush, clear, merge). The slow paths run inside interpreter
 * hooks with the GIL held: they never raise (allocation failures set the
 * sticky nomemory flag) and only sonde_trace_entry_for_builtin runs Python
 * code (repr, with the current exception saved). The rest runs from the
 * Profile methods with the GIL held.
 */
#include "trace_internal.h"

#include "../prim/prim.h"

#include <stdlib.h>
#include <string.h>

#define TABLE_INITIAL_SLOTS 256 /* entries per thread before the first growth: x/2 */
#define TABLE_INITIAL_EDGES 256
#define TABLE_INITIAL_STACK 64
#define TABLE_RECLAIM_FIRST 32    /* look for ended threads from this many records */
#define TABLE_UNMATCHED_SEARCH 64 /* frames searched for the key of an unmatched return */

__thread sonde_trace_tls_t sonde_trace_tls __attribute__((tls_model("initial-exec")));

static uint64_t table_serial_counter; /* GIL */
static uint64_t table_uid_counter;    /* GIL */

void sonde_trace_new_serial(sonde_trace_prof_t *p)
{
    p->serial = ++table_serial_counter;
}

/* ---- one thread's record -------------------------------------------------- */

sonde_trace_thread_t *sonde_trace_thread_new(void)
{
    sonde_trace_thread_t *th = calloc(1, sizeof *th);
    if (!th) return NULL;
    th->slots = calloc(TABLE_INITIAL_SLOTS, sizeof *th->slots);
    th->edge_slots = calloc(TABLE_INITIAL_EDGES, sizeof *th->edge_slots);
    th->stack = malloc(TABLE_INITIAL_STACK * sizeof *th->stack);
    if (!th->slots || !th->edge_slots || !th->stack) {
        sonde_trace_thread_free(th);
        return NULL;
    }
    th->slot_mask = TABLE_INITIAL_SLOTS - 1;
    th->edge_mask = TABLE_INITIAL_EDGES - 1;
    th->cap = TABLE_INITIAL_STACK;
    return th;
}

/* Frees the record; drops the references its entries hold (GIL). */
void sonde_trace_thread_free(sonde_trace_thread_t *th)
{
    if (!th) return;
    for (size_t i = 0; i < th->n_entries; i++) {
        Py_XDECREF(th->entries[i]->code);
        Py_XDECREF(th->entries[i]->label);
        free(th->entries[i]);
    }
    for (size_t i = 0; i < th->n_edges; i++)
        free(th->edges[i]);
    free(th->entries);
    free(th->edges);
    free(th->slots);
    free(th->edge_slots);
    free(th->stack);
    free(th);
}

/* Doubles an array of pointers when full. Returns 0 or -ENOMEM. */
static int table_reserve(void ***items, size_t n, size_t *cap)
{
    if (n < *cap) return 0;
    size_t new_cap = *cap ? *cap * 2 : 64;
    void **grown = realloc(*items, new_cap * sizeof *grown);
    if (!grown) return -ENOMEM;
    *items = grown;
    *cap = new_cap;
    return 0;
}

static int table_grow_slots(sonde_trace_thread_t *th)
{
    size_t new_size = (th->slot_mask + 1) * 2;
    sonde_trace_slot_t *slots = calloc(new_size, sizeof *slots);
    if (!slots) return -ENOMEM;
    for (size_t i = 0; i < th->n_entries; i++) {
        uintptr_t key = th->entries[i]->key;
        size_t j = sonde_trace_hash(key) & (new_size - 1);
        while (slots[j].key)
            j = (j + 1) & (new_size - 1);
        slots[j].key = key;
        slots[j].entry = th->entries[i];
    }
    free(th->slots);
    th->slots = slots;
    th->slot_mask = new_size - 1;
    return 0;
}

/* Adds a zeroed entry for key (not present). Takes the references in code
 * and label on success. NULL on ENOMEM. */
static sonde_trace_entry_t *table_add_entry(sonde_trace_thread_t *th, uintptr_t key, PyObject *code,
                                            PyObject *label)
{
    if ((th->n_entries + 1) * 2 > th->slot_mask + 1 && table_grow_slots(th) < 0) return NULL;
    if (table_reserve((void ***)&th->entries, th->n_entries, &th->cap_entries) < 0) return NULL;
    sonde_trace_entry_t *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->key = key;
    e->code = code;
    e->label = label;
    size_t j = sonde_trace_hash(key) & th->slot_mask;
    while (th->slots[j].key)
        j = (j + 1) & th->slot_mask;
    th->slots[j].key = key;
    th->slots[j].entry = e;
    th->entries[th->n_entries++] = e;
    return e;
}

static size_t table_edge_hash(const sonde_trace_entry_t *caller, const sonde_trace_entry_t *callee)
{
    return sonde_trace_hash((uintptr_t)caller ^ ((uintptr_t)callee << 1));
}

static int table_grow_edges(sonde_trace_thread_t *th)
{
    size_t new_size = (th->edge_mask + 1) * 2;
    sonde_trace_edge_slot_t *slots = calloc(new_size, sizeof *slots);
    if (!slots) return -ENOMEM;
    for (size_t i = 0; i < th->n_edges; i++) {
        sonde_trace_edge_t *edge = th->edges[i];
        size_t j = table_edge_hash(edge->caller, edge->callee) & (new_size - 1);
        while (slots[j].caller)
            j = (j + 1) & (new_size - 1);
        slots[j].caller = edge->caller;
        slots[j].callee = edge->callee;
        slots[j].edge = edge;
    }
    free(th->edge_slots);
    th->edge_slots = slots;
    th->edge_mask = new_size - 1;
    return 0;
}

/* The edge caller->callee in th, created when absent (create) . */
static sonde_trace_edge_t *table_edge(sonde_trace_thread_t *th, sonde_trace_entry_t *caller,
                                      sonde_trace_entry_t *callee, bool create)
{
    size_t j = table_edge_hash(caller, callee) & th->edge_mask;
    while (th->edge_slots[j].caller) {
        if (th->edge_slots[j].caller == caller && th->edge_slots[j].callee == callee)
            return th->edge_slots[j].edge;
        j = (j + 1) & th->edge_mask;
    }
    if (!create) return NULL;
    if ((th->n_edges + 1) * 2 > th->edge_mask + 1) {
        if (table_grow_edges(th) < 0) return NULL;
        j = table_edge_hash(caller, callee) & th->edge_mask;
        while (th->edge_slots[j].caller)
            j = (j + 1) & th->edge_mask;
    }
    if (table_reserve((void ***)&th->edges, th->n_edges, &th->cap_edges) < 0) return NULL;
    sonde_trace_edge_t *edge = calloc(1, sizeof *edge);
    if (!edge) return NULL;
    edge->caller = caller;
    edge->callee = callee;
    th->edge_slots[j].caller = caller;
    th->edge_slots[j].callee = callee;
    th->edge_slots[j].edge = edge;
    th->edges[th->n_edges++] = edge;
    return edge;
}

/* ---- slow paths of the hooks ---------------------------------------------- */

/* Merges the records of threads that ended (tid gone, stack empty) into
 * p->retired, so a program that starts many short threads keeps a bounded
 * number of records. */
static void table_reclaim(sonde_trace_prof_t *p)
{
    size_t live = 0;
    for (sonde_trace_thread_t **link = &p->threads; *link;) {
        sonde_trace_thread_t *th = *link;
        sonde_ns_t cpu;
        bool ended = th->depth == 0 && th->tid > 0 && !th->root && th->uid != sonde_trace_tls.uid &&
                     sonde_prim_thread_cpu_ns((pid_t)th->tid, &cpu) < 0;
        if (ended && !p->retired) p->retired = sonde_trace_thread_new();
        if (ended && p->retired && sonde_trace_thread_merge(p->retired, th) == 0) {
            *link = th->next;
            sonde_trace_thread_free(th);
            p->n_threads--;
            continue;
        }
        live++;
        link = &th->next;
    }
    p->reclaim_at = live * 2 > TABLE_RECLAIM_FIRST ? live * 2 : TABLE_RECLAIM_FIRST;
}

sonde_trace_thread_t *sonde_trace_thread_attach(sonde_trace_prof_t *p)
{
    if (!p->enabled || p->armed) return NULL;
    if (!sonde_trace_tls.uid) sonde_trace_tls.uid = ++table_uid_counter;
    uint64_t uid = sonde_trace_tls.uid;
    sonde_trace_thread_t *th = p->threads;
    while (th && th->uid != uid)
        th = th->next;
    if (!th) {
        if (p->n_threads >= p->reclaim_at) table_reclaim(p);
        th = sonde_trace_thread_new();
        if (!th) {
            p->nomemory = true;
            return NULL;
        }
        th->uid = uid;
        th->tid = (int)sonde_prim_gettid();
        th->next = p->threads;
        p->threads = th;
        p->n_threads++;
    }
    if (th->closed) return NULL;
    sonde_trace_tls.serial = p->serial;
    sonde_trace_tls.thread = th;
    return th;
}

sonde_trace_entry_t *sonde_trace_entry_for_code(sonde_trace_prof_t *p, sonde_trace_thread_t *th,
                                                PyObject *code)
{
    if (SONDE_UNLIKELY(p->thread_hook_pending)) {
        /* Runs Python code, which may switch threads: check afterwards
         * that this thread's record is still the one in use. */
        sonde_trace_hooks_threading_gil(p);
        if (sonde_trace_tls.serial != p->serial || sonde_trace_tls.thread != th) return NULL;
    }
    Py_INCREF(code);
    sonde_trace_entry_t *e = table_add_entry(th, (uintptr_t)code, code, NULL);
    if (!e) {
        Py_DECREF(code);
        p->nomemory = true;
    }
    return e;
}

sonde_trace_entry_t *sonde_trace_entry_for_builtin(sonde_trace_prof_t *p, sonde_trace_thread_t *th,
                                                   PyMethodDef *ml, PyObject *self,
                                                   PyObject *module)
{
    if (sonde_trace_own_method(ml)) return NULL;
    /* Naming may run Python code (a __repr__) that can release the GIL;
     * keep the exception being handled, and check afterwards that this
     * thread's record is still the one in use. */
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *label = sonde_trace_builtin_label(ml, self, module);
    if (!label) {
        PyErr_Clear();
        p->nomemory = true;
    }
    PyErr_Restore(type, value, tb);
    if (!label) return NULL;
    if (sonde_trace_tls.serial != p->serial || sonde_trace_tls.thread != th) {
        Py_DECREF(label);
        return NULL;
    }
    uintptr_t key = (uintptr_t)ml | 1;
    sonde_trace_entry_t *e = sonde_trace_find(th, key); /* named meanwhile? */
    if (e) {
        Py_DECREF(label);
        return e;
    }
    e = table_add_entry(th, key, NULL, label);
    if (!e) {
        Py_DECREF(label);
        p->nomemory = true;
    }
    return e;
}

sonde_trace_edge_t *sonde_trace_edge_get(sonde_trace_prof_t *p, sonde_trace_thread_t *th,
                                         sonde_trace_entry_t *caller, sonde_trace_entry_t *callee)
{
    sonde_trace_edge_t *edge = table_edge(th, caller, callee, true);
    if (!edge) p->nomemory = true;
    return edge;
}

int sonde_trace_stack_grow(sonde_trace_prof_t *p, sonde_trace_thread_t *th)
{
    uint32_t new_cap = th->cap * 2;
    sonde_trace_frame_t *stack =
        new_cap > th->cap ? realloc(th->stack, new_cap * sizeof *stack) : NULL;
    if (!stack) {
        p->nomemory = true;
        return -ENOMEM;
    }
    th->stack = stack;
    th->cap = new_cap;
    return 0;
}

void sonde_trace_leave_unmatched(sonde_trace_thread_t *th, uintptr_t key, sonde_ticks_t now)
{
    uint32_t lowest = th->depth > TABLE_UNMATCHED_SEARCH ? th->depth - TABLE_UNMATCHED_SEARCH : 0;
    for (uint32_t i = th->depth; i-- > lowest;) {
        if (th->stack[i].entry->key != key) continue;
        while (th->depth > i)
            sonde_trace_pop(th, now);
        return;
    }
}

/* ---- whole profilers --------------------------------------------------------- */

void sonde_trace_flush(sonde_trace_prof_t *p, sonde_ticks_t now)
{
    for (sonde_trace_thread_t *th = p->threads; th; th = th->next)
        while (th->depth)
            sonde_trace_pop(th, now);
}

void sonde_trace_clear(sonde_trace_prof_t *p)
{
    while (p->threads) {
        sonde_trace_thread_t *th = p->threads;
        p->threads = th->next;
        sonde_trace_thread_free(th);
    }
    sonde_trace_thread_free(p->retired);
    p->retired = NULL;
    p->n_threads = 0;
    p->reclaim_at = TABLE_RECLAIM_FIRST;
    sonde_trace_new_serial(p);
}

int sonde_trace_thread_merge(sonde_trace_thread_t *dst, const sonde_trace_thread_t *src)
{
    for (size_t i = 0; i < src->n_entries; i++) {
        const sonde_trace_entry_t *s = src->entries[i];
        sonde_trace_entry_t *d = sonde_trace_find(dst, s->key);
        if (!d) {
            d = table_add_entry(dst, s->key, s->code, s->label);
            if (!d) return -ENOMEM;
            Py_XINCREF(s->code);
            Py_XINCREF(s->label);
        }
        d->calls += s->calls;
        d->rec_calls += s->rec_calls;
        d->total_ticks += s->total_ticks;
        d->inline_ticks += s->inline_ticks;
    }
    for (size_t i = 0; i < src->n_edges; i++) {
        const sonde_trace_edge_t *s = src->edges[i];
        sonde_trace_entry_t *caller = sonde_trace_find(dst, s->caller->key);
        sonde_trace_entry_t *callee = sonde_trace_find(dst, s->callee->key);
        sonde_trace_edge_t *d = caller && callee ? table_edge(dst, caller, callee, true) : NULL;
        if (!d) return -ENOMEM;
        d->calls += s->calls;
        d->rec_calls += s->rec_calls;
        d->total_ticks += s->total_ticks;
        d->inline_ticks += s->inline_ticks;
    }
    return 0;
}

sonde_trace_thread_t *sonde_trace_merged_gil(sonde_trace_prof_t *p)
{
    sonde_trace_thread_t *all = sonde_trace_thread_new();
    if (!all) goto nomem;
    /* Oldest thread first: the list is newest first. */
    size_t n = 0;
    for (sonde_trace_thread_t *th = p->threads; th; th = th->next)
        n++;
    sonde_trace_thread_t **order = malloc((n ? n : 1) * sizeof *order);
    if (!order) goto nomem;
    size_t k = n;
    for (sonde_trace_thread_t *th = p->threads; th; th = th->next)
        order[--k] = th;
    int rc = p->retired ? sonde_trace_thread_merge(all, p->retired) : 0;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = sonde_trace_thread_merge(all, order[i]);
    free(order);
    if (rc < 0) goto nomem;
    return all;
nomem:
    sonde_trace_thread_free(all);
    PyErr_NoMemory();
    return NULL;
}
