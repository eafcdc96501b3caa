/* gc.c — time in Python's garbage collection, per line (sonde run --gc).
 *
 * Owns: the GC source (sources.c's row sonde_source_gc). An entry of its
 * own in gc.callbacks, which the interpreter calls in the collecting
 * thread, with the GIL, at the start and at the stop of every collection,
 * reads that thread's CPU clock at both and adds the difference to the
 * thread's total (a slot per thread state). A collection runs on the
 * thread whose allocation (or gc.collect()) started it, so its time is
 * that thread's alone. The sampler thread asks, for each thread it charges
 * in a tick (gc_source_thread, the row's per-thread reading), how much of
 * the CPU time it charges the thread went to collections: the thread's
 * total since its previous tick, with the part of a collection still
 * running. That share of the charge is garbage-collection time, charged
 * where the thread's time is charged (its innermost profiled line: the
 * line that started the collection while the thread stays there). Other
 * threads, which run meanwhile only outside the GIL, are never charged a
 * collection that is not theirs.
 *
 * The figures (src/model/figures.c, SONDE_FIGSRC_GC): the seconds charged
 * while the source ran, and those spent collecting; a line's share of its
 * time spent collecting is their ratio. The sampler's own gc.callbacks
 * entry (sampler.c, for its native rule) is separate and stays whatever
 * this source does.
 *
 * Called by session.c through the table (start, release: with the GIL),
 * by the interpreter (gc_callback: with the GIL; a few stores and a read
 * of the thread's CPU clock, a system call: about 1.6 us a collection)
 * and by the sampler thread (gc_source_thread: bounded probes and a
 * sequence-locked read, no lock, no allocation). No signal handler or
 * allocator hook runs here.
 */
#include "ext.h"

#include "../core/atomic.h"

#include <time.h>

/* Threads whose collections are counted at once: thread states are
 * reused as threads come and go, so this bounds the threads alive, not
 * those ever started. A thread without a slot (more at once) is charged
 * by whether it is collecting as the sampler reads it. */
#define GC_SLOTS 256
#define GC_READ_TRIES 8 /* torn reads retried before a tick goes without */

/* One thread's collections (claimed once with the GIL, kept). */
typedef struct gc_slot {
    atomic_uint_fast64_t tstate;  /* its PyThreadState; 0: free */
    atomic_uint_fast64_t done_ns; /* CPU time of its finished collections */
} gc_slot_t;

typedef struct sonde_gc {
    /* Set with the GIL by start and release; read by the sampler thread
     * only while the source is started. */
    bool on;        /* --gc asked for it */
    PyObject *hook; /* owned; our gc.callbacks entry, or NULL */
    /* Written by gc_callback (the collecting thread, with the GIL: one
     * writer at a time) under the sequence lock seq (odd while it
     * writes), read by the sampler thread. */
    atomic_uint_fast32_t seq;
    atomic_bool running;               /* a collection is running now */
    atomic_uint_fast64_t tstate;       /* ... in this thread */
    atomic_uint_fast64_t start_cpu_ns; /* its CPU clock when it started */
    atomic_int slot;                   /* its slot, -1: none */
    gc_slot_t slots[GC_SLOTS];
    uint64_t charged_ns[GC_SLOTS]; /* the sampler thread's: what it has
                                      charged of each slot */
} sonde_gc_t;

#define GC_CAPSULE "sonde.gc"

/* The calling thread's CPU clock: the clock the sampler reads by tid
 * (the kernel's per-thread CPUCLOCK_SCHED), without finding the tid. 0
 * when it cannot be read. */
static sonde_ns_t gc_self_cpu_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
    return (sonde_ns_t)ts.tv_sec * SONDE_NS_PER_SEC + (sonde_ns_t)ts.tv_nsec;
}

static unsigned gc_hash(uint64_t tstate)
{
    return (unsigned)(((tstate >> 4) * 0x9e3779b97f4a7c15ull) >> 56) % GC_SLOTS;
}

/* The slot of thread state tstate, claimed when claim (with the GIL: the
 * only writer), or -1. Bounded: GC_SLOTS probes. */
static int gc_slot_of(sonde_gc_t *g, uint64_t tstate, bool claim)
{
    unsigned at = gc_hash(tstate);
    for (unsigned i = 0; i < GC_SLOTS; i++, at = (at + 1) % GC_SLOTS) {
        uint64_t held = sonde_atomic_load_acquire(&g->slots[at].tstate);
        if (held == tstate) return (int)at;
        if (held != 0) continue;
        if (!claim) return -1;
        sonde_atomic_store_release(&g->slots[at].tstate, tstate);
        return (int)at;
    }
    return -1;
}

/* gc.callbacks' call: (phase, info), phase "start" or "stop". self is a
 * capsule of the source's state, which lives as long as the process. */
static PyObject *gc_callback(PyObject *self, PyObject *args)
{
    sonde_gc_t *g = PyCapsule_GetPointer(self, GC_CAPSULE);
    if (!g) return NULL;
    PyObject *phase =
        PyTuple_Check(args) && PyTuple_GET_SIZE(args) > 0 ? PyTuple_GET_ITEM(args, 0) : NULL;
    bool start =
        phase && PyUnicode_Check(phase) && PyUnicode_CompareWithASCIIString(phase, "start") == 0;
    if (start) {
        uint64_t tstate = (uint64_t)(uintptr_t)PyThreadState_Get();
        sonde_ns_t cpu_ns = gc_self_cpu_ns();
        int slot = cpu_ns ? gc_slot_of(g, tstate, true) : -1;
        sonde_atomic_add_seq_cst(&g->seq, 1);
        sonde_atomic_store_relaxed(&g->tstate, tstate);
        sonde_atomic_store_relaxed(&g->start_cpu_ns, cpu_ns);
        sonde_atomic_store_relaxed(&g->slot, slot);
        sonde_atomic_store_relaxed(&g->running, true);
        sonde_atomic_add_seq_cst(&g->seq, 1);
    } else if (sonde_atomic_load_relaxed(&g->running)) {
        /* (the stop comes in the thread that started the collection) */
        int slot = sonde_atomic_load_relaxed(&g->slot);
        sonde_ns_t start_ns = sonde_atomic_load_relaxed(&g->start_cpu_ns);
        sonde_ns_t cpu_ns = gc_self_cpu_ns();
        sonde_atomic_add_seq_cst(&g->seq, 1);
        if (slot >= 0 && cpu_ns > start_ns) {
            gc_slot_t *s = &g->slots[slot];
            sonde_atomic_store_relaxed(&s->done_ns,
                                       sonde_atomic_load_relaxed(&s->done_ns) + cpu_ns - start_ns);
        }
        sonde_atomic_store_relaxed(&g->running, false);
        sonde_atomic_add_seq_cst(&g->seq, 1);
    }
    Py_RETURN_NONE;
}

static PyMethodDef gc_callback_def = {"_sonde_gc_time", gc_callback, METH_VARARGS, NULL};

/* Appends our entry to gc.callbacks. Returns 0, or -1 with an exception. */
static int gc_watch_gil(sonde_gc_t *g)
{
    int rc = -1;
    PyObject *gc = PyImport_ImportModule("gc");
    PyObject *callbacks = gc ? PyObject_GetAttrString(gc, "callbacks") : NULL;
    PyObject *capsule = callbacks ? PyCapsule_New(g, GC_CAPSULE, NULL) : NULL;
    PyObject *hook = capsule ? PyCFunction_New(&gc_callback_def, capsule) : NULL;
    if (hook && !PyList_Check(callbacks)) {
        PyErr_SetString(PyExc_RuntimeError, "sonde: gc.callbacks is not a list");
    } else if (hook && PyList_Append(callbacks, hook) == 0) {
        g->hook = hook;
        hook = NULL;
        rc = 0;
    }
    Py_XDECREF(hook);
    Py_XDECREF(capsule);
    Py_XDECREF(callbacks);
    Py_XDECREF(gc);
    return rc;
}

/* Takes our entry out of gc.callbacks, if the program left it there.
 * Never raises (a pending exception is kept). */
static void gc_unwatch_gil(sonde_gc_t *g)
{
    if (!g->hook) return;
    PyObject *type = NULL, *value = NULL, *tb = NULL;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *gc = PyImport_ImportModule("gc");
    PyObject *callbacks = gc ? PyObject_GetAttrString(gc, "callbacks") : NULL;
    if (callbacks && PyList_Check(callbacks)) {
        for (Py_ssize_t i = PyList_GET_SIZE(callbacks) - 1; i >= 0; i--) {
            if (PyList_GET_ITEM(callbacks, i) == g->hook) {
                PySequence_DelItem(callbacks, i);
                break;
            }
        }
    }
    Py_XDECREF(callbacks);
    Py_XDECREF(gc);
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
    Py_CLEAR(g->hook);
}

/* What thread th has spent collecting as the tick read its CPU clock:
 * its finished collections (slot's total) and the part of one it is
 * running. *now_collecting: whether it runs one. Returns false on a torn
 * read (retried GC_READ_TRIES times). Sampler thread. */
static bool gc_read(const sonde_gc_t *g, int slot, const sonde_source_thread_t *th,
                    uint64_t *total_ns, bool *now_collecting)
{
    for (int tries = 0; tries < GC_READ_TRIES; tries++) {
        uint32_t seq = sonde_atomic_load_seq_cst(&g->seq);
        if (seq & 1) continue;
        /* (acquire: the second look at seq comes after these) */
        bool running = sonde_atomic_load_acquire(&g->running) &&
                       sonde_atomic_load_acquire(&g->tstate) == th->key.tstate;
        sonde_ns_t start_ns = sonde_atomic_load_acquire(&g->start_cpu_ns);
        uint64_t done = slot >= 0 ? sonde_atomic_load_acquire(&g->slots[slot].done_ns) : 0;
        if (sonde_atomic_load_relaxed(&g->seq) != seq) continue;
        *total_ns = done + (running && th->cpu_ns > start_ns ? th->cpu_ns - start_ns : 0);
        *now_collecting = running;
        return true;
    }
    return false;
}

/* ---- the GC source (sources.c's row) ---------------------------------------- */

static int gc_source_start_gil(void *state, const sonde_source_ctx_t *ctx)
{
    sonde_gc_t *g = state;
    if (!ctx->opts->gc) return 0;
    if (gc_watch_gil(g) < 0) return -ENOMEM;
    g->on = true;
    return 0;
}

/* The charged thread's reading, in the slots' order (figures.h: the
 * seconds take none): the share of its charge spent collecting, its
 * collections' CPU time since its previous tick over its CPU time (with
 * no CPU time, whether it is collecting), on the running part of the
 * charge, run-queue wait included in wall-clock mode (not on time blocked
 * in a system call). */
static bool gc_source_thread(void *state, const sonde_source_thread_t *th, double *reading)
{
    sonde_gc_t *g = state;
    if (!g->on) return false;
    int slot = gc_slot_of(g, th->key.tstate, false);
    uint64_t total = 0;
    bool collecting = false;
    double share = 0;
    if (gc_read(g, slot, th, &total, &collecting)) {
        uint64_t spent = 0;
        if (slot >= 0 && total > g->charged_ns[slot]) {
            spent = total - g->charged_ns[slot];
            g->charged_ns[slot] = total;
        }
        if (slot < 0 || !th->cpu_delta_ns)
            /* no slot, or no CPU time (a thread that waited for a CPU all
             * the tick): as the tick finds it */
            share = collecting ? 1.0 : 0.0;
        else
            share = spent < th->cpu_delta_ns ? (double)spent / (double)th->cpu_delta_ns : 1.0;
    }
    sonde_ns_t charged = th->run_ns + th->system_ns;
    reading[SONDE_FIG_GC_SEC - SONDE_FIG_GC_SEC] = 0;
    reading[SONDE_FIG_GC_COLLECTING - SONDE_FIG_GC_SEC] =
        charged ? share * (double)th->run_ns / (double)charged : 0;
    return true;
}

static int gc_source_to_profile(void *state, const char *cwd, sonde_profile_t *prof, bool period)
{
    const sonde_gc_t *g = state;
    (void)cwd;
    (void)period;
    return g->on ? sonde_fig_run_set(&prof->fig_runs[SONDE_FIGSRC_GC], NULL, true) : 0;
}

static void gc_source_release_gil(void *state)
{
    sonde_gc_t *g = state;
    gc_unwatch_gil(g);
    g->on = false;
    sonde_atomic_store_seq_cst(&g->running, false);
}

const sonde_source_ops_t sonde_source_gc = {
    .name = "garbage collection",
    .figs = SONDE_FIGSRC_GC,
    .state_size = sizeof(sonde_gc_t),
    .start_gil = gc_source_start_gil,
    .thread = gc_source_thread,
    .to_profile = gc_source_to_profile,
    .release_gil = gc_source_release_gil,
};
