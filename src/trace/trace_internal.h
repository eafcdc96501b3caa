/* trace_internal.h — the tracer's internal interface (src/trace/).
 *
 * Owns: the data model of deterministic profiling and its hot paths.
 * A profiler (sonde_trace_prof_t, the sonde.Profile object) keeps one
 * sonde_trace_thread_t per thread it has seen: a shadow stack of active
 * calls and that thread's own statistics (an open-addressing table from
 * code object / PyMethodDef to its entry, and caller->callee edges).
 * Threads never share a stack or a recursion level, so they never mix.
 * A thread finds its record through one initial-exec TLS slot checked
 * against the profiler's serial; anything else (first event of a thread,
 * a profiler enabled again, the boot's arming) goes to the slow path.
 *
 * The sonde_trace_on_* functions below run inside interpreter hooks
 * (sys.monitoring callbacks on 3.12+, the C profile function before) with
 * the GIL held: they never raise, never call Python code on the fast path,
 * and record failures as the sticky `nomemory` flag (reported by
 * disable(), as _lsprof does).
 */
#ifndef SONDE_TRACE_INTERNAL_H
#define SONDE_TRACE_INTERNAL_H

#include "trace.h"

#include "pstats.h"

#include "../core/buf.h"
#include "../core/common.h"

#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define SONDE_TRACE_HAVE_TSC 1
#else
#define SONDE_TRACE_HAVE_TSC 0
#endif

/* 3.12+ traces through sys.monitoring; earlier versions through the C
 * profile function (PyEval_SetProfile). */
#if PY_VERSION_HEX >= 0x030C0000
#define SONDE_TRACE_MONITORING 1
#else
#define SONDE_TRACE_MONITORING 0
#endif

/* ---- the clock (clock.c) ------------------------------------------------- */

/* Time stamps of the default clock: TSC cycles where the TSC is invariant
 * (x86), else CLOCK_MONOTONIC nanoseconds. Differences only. */
typedef int64_t sonde_ticks_t;

extern bool sonde_trace_clock_tsc; /* set once by sonde_trace_clock_init */

static inline __attribute__((always_inline)) sonde_ticks_t sonde_trace_clock_now(void)
{
#if SONDE_TRACE_HAVE_TSC
    if (SONDE_LIKELY(sonde_trace_clock_tsc)) return (sonde_ticks_t)__rdtsc();
#endif
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (sonde_ticks_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Chooses the clock (once; SONDE_TRACE_CLOCK=monotonic forces
 * CLOCK_MONOTONIC) and takes the calibration anchor. */
void sonde_trace_clock_init(void);
/* Seconds per tick of the default clock. Calibrated against
 * CLOCK_MONOTONIC over the time since init (waits up to 20 ms when less
 * has passed). */
double sonde_trace_clock_seconds_per_tick(void);

/* ---- statistics ------------------------------------------------------------- */

typedef struct sonde_trace_entry sonde_trace_entry_t;

/* Calls from one function to another on one thread (a pstats caller). */
typedef struct sonde_trace_edge {
    sonde_trace_entry_t *caller; /* borrowed: entries of the same table */
    sonde_trace_entry_t *callee;
    uint64_t calls;
    uint64_t rec_calls;        /* calls made while the edge was active */
    sonde_ticks_t total_ticks; /* counted once per outermost active call */
    sonde_ticks_t inline_ticks;
    uint32_t level; /* active calls along this edge */
} sonde_trace_edge_t;

/* One function (code object) or built-in (PyMethodDef) on one thread.
 * The fields the hooks touch come first (one cache line). */
struct sonde_trace_entry {
    uintptr_t key; /* code object address, or PyMethodDef address | 1 */
    uint64_t calls;
    uint64_t rec_calls;            /* calls made while already active (recursive) */
    sonde_ticks_t total_ticks;     /* cumulative time, counted at the outermost call */
    sonde_ticks_t inline_ticks;    /* time not spent in callees */
    sonde_trace_edge_t *last_edge; /* cache: the edge of the latest call */
    uint32_t level;                /* active calls on the stack */
    PyObject *code;                /* owned: the code object (keeps key unique); NULL
                                    for a built-in */
    PyObject *label;               /* owned: a built-in's name as _lsprof spells it
                                    ("<built-in method time.sleep>"); NULL for code */
    size_t scratch;                /* free for readers of a merged table */
};

/* One active call on a thread's shadow stack. */
typedef struct sonde_trace_frame {
    sonde_trace_entry_t *entry;
    sonde_trace_edge_t *edge; /* NULL at the bottom or without subcalls */
    sonde_ticks_t t0;
    sonde_ticks_t sub_ticks; /* time spent in callees so far */
} sonde_trace_frame_t;

typedef struct sonde_trace_slot {
    uintptr_t key; /* 0 = empty */
    sonde_trace_entry_t *entry;
} sonde_trace_slot_t;

typedef struct sonde_trace_edge_slot {
    sonde_trace_entry_t *caller; /* NULL = empty */
    sonde_trace_entry_t *callee;
    sonde_trace_edge_t *edge;
} sonde_trace_edge_slot_t;

/* A thread's shadow stack and statistics. Touched only by that thread
 * while it holds the GIL, and by any thread holding the GIL while the
 * profiler is being read or changed from Python. */
typedef struct sonde_trace_thread {
    sonde_trace_frame_t *stack; /* owned */
    uint32_t depth, cap;
    sonde_trace_slot_t *slots; /* owned; power of two, at most half full */
    size_t slot_mask;
    sonde_trace_entry_t **entries; /* owned (and the entries): creation order */
    size_t n_entries, cap_entries;
    sonde_trace_edge_slot_t *edge_slots; /* owned; power of two, at most half full */
    size_t edge_mask;
    sonde_trace_edge_t **edges; /* owned (and the edges): creation order */
    size_t n_edges, cap_edges;
    uint64_t uid; /* the thread's sonde_trace_tls.uid */
    int tid;      /* kernel thread id (to notice it ended) */
    bool root;    /* `sonde trace`: the main thread, whose stack
                                    ends with the program's main frame */
    bool closed;  /* root thread after the program returned */
    struct sonde_trace_thread *next;
} sonde_trace_thread_t;

/* The profiler: sonde.Profile. */
typedef struct sonde_trace_prof {
    PyObject_HEAD
    PyObject *dict;                /* owned; instance attributes (stats) */
    uint64_t serial;               /* equals sonde_trace_tls.serial of the threads
                                    attached since the last change; never 0 */
    sonde_trace_thread_t *threads; /* owned list */
    size_t n_threads;
    size_t reclaim_at;             /* look for ended threads at this many */
    sonde_trace_thread_t *retired; /* owned; statistics of ended threads */
    PyObject *timer;               /* owned; NULL = the default clock */
    double timeunit;               /* seconds per unit of an integer timer */
    bool subcalls, builtins;
    bool enabled;
    bool nomemory; /* sticky: an allocation failed in a hook */
    /* `sonde trace` (boot.c): events are ignored until the program's main
     * frame starts on the main thread. */
    bool armed;
    unsigned long root_ident; /* PyThread_get_thread_ident of the main thread */
    char *root_script;        /* owned; realpath of the script, or NULL (-m) */
    /* hooks.c: sys.monitoring callables (3.12+), or the threading hook */
    PyObject *hooks;           /* owned; NULL when not enabled */
    PyObject *thread_hook;     /* owned; ≤3.11: what threading.setprofile gets */
    PyObject *old_thread_hook; /* owned; threading's hook before ours */
    bool thread_hook_pending;  /* ≤3.11: threading not imported yet */
    bool thread_hook_set;
} sonde_trace_prof_t;

extern PyTypeObject sonde_trace_prof_type;

/* Per-thread state: which record the thread uses in which profiler. */
typedef struct sonde_trace_tls {
    uint64_t serial; /* profiler serial the record belongs to */
    sonde_trace_thread_t *thread;
    uint64_t uid; /* this thread's id among profilers; 0 = none yet */
} sonde_trace_tls_t;

extern __thread sonde_trace_tls_t sonde_trace_tls __attribute__((tls_model("initial-exec")));

/* ---- tables and stacks (table.c) ------------------------------------------ */

/* Slow path of sonde_trace_thread: finds or creates the calling thread's
 * record. NULL when events are to be ignored (disabled, armed, closed) or
 * on allocation failure (nomemory set). */
sonde_trace_thread_t *sonde_trace_thread_attach(sonde_trace_prof_t *p);
/* New entry for a code object (keeps a reference). NULL on failure. */
sonde_trace_entry_t *sonde_trace_entry_for_code(sonde_trace_prof_t *p, sonde_trace_thread_t *th,
                                                PyObject *code);
/* New entry for a built-in: ml with the self and module of the bound
 * function (as _lsprof names it). NULL on failure, or for sonde's own
 * methods (never recorded). May run Python code (repr). */
sonde_trace_entry_t *sonde_trace_entry_for_builtin(sonde_trace_prof_t *p, sonde_trace_thread_t *th,
                                                   PyMethodDef *ml, PyObject *self,
                                                   PyObject *module);
/* The edge caller->callee, created when new. NULL on allocation failure. */
sonde_trace_edge_t *sonde_trace_edge_get(sonde_trace_prof_t *p, sonde_trace_thread_t *th,
                                         sonde_trace_entry_t *caller, sonde_trace_entry_t *callee);
/* Doubles the stack. Returns 0 or -ENOMEM (nomemory set). */
int sonde_trace_stack_grow(sonde_trace_prof_t *p, sonde_trace_thread_t *th);
/* A return whose key is not the top of the stack: pops down to a frame
 * with that key if there is one (the calls above it lost their returns),
 * else ignores it. */
void sonde_trace_leave_unmatched(sonde_trace_thread_t *th, uintptr_t key, sonde_ticks_t now);
/* Ends every active call of every thread at `now` (disable). */
void sonde_trace_flush(sonde_trace_prof_t *p, sonde_ticks_t now);
/* Frees every thread record (clear); the serial changes. */
void sonde_trace_clear(sonde_trace_prof_t *p);
/* A new serial: every thread goes through sonde_trace_thread_attach again. */
void sonde_trace_new_serial(sonde_trace_prof_t *p);
/* Empty record (not attached to any thread), or NULL on ENOMEM. */
sonde_trace_thread_t *sonde_trace_thread_new(void);
void sonde_trace_thread_free(sonde_trace_thread_t *th);
/* Adds src's statistics into dst (entries matched by key). Returns 0 or
 * -ENOMEM. */
int sonde_trace_thread_merge(sonde_trace_thread_t *dst, const sonde_trace_thread_t *src);
/* All threads' statistics merged into one new record (caller frees with
 * sonde_trace_thread_free). NULL with MemoryError set. */
sonde_trace_thread_t *sonde_trace_merged_gil(sonde_trace_prof_t *p);

/* ---- the hot paths -------------------------------------------------------- */

/* The hot paths are forced inline so that each hook is one function. */
#define SONDE_TRACE_HOT static inline __attribute__((always_inline))

/* Custom timer (slow path): p->timer() as ticks (see timer in profile.c). */
sonde_ticks_t sonde_trace_timer_now(sonde_trace_prof_t *p);

SONDE_TRACE_HOT sonde_ticks_t sonde_trace_now(sonde_trace_prof_t *p)
{
    if (SONDE_LIKELY(!p->timer)) return sonde_trace_clock_now();
    return sonde_trace_timer_now(p);
}

SONDE_TRACE_HOT sonde_trace_thread_t *sonde_trace_thread(sonde_trace_prof_t *p)
{
    if (SONDE_LIKELY(sonde_trace_tls.serial == p->serial)) return sonde_trace_tls.thread;
    return sonde_trace_thread_attach(p);
}

SONDE_TRACE_HOT size_t sonde_trace_hash(uintptr_t key)
{
    return (size_t)(((uint64_t)key * 0x9E3779B97F4A7C15ull) >> 29);
}

SONDE_TRACE_HOT sonde_trace_entry_t *sonde_trace_find(const sonde_trace_thread_t *th, uintptr_t key)
{
    size_t i = sonde_trace_hash(key) & th->slot_mask;
    for (;;) {
        const sonde_trace_slot_t *slot = &th->slots[i];
        if (SONDE_LIKELY(slot->key == key)) return slot->entry;
        if (!slot->key) return NULL;
        i = (i + 1) & th->slot_mask;
    }
}

/* Starts a call of e on th's stack; the clock is read last. */
SONDE_TRACE_HOT void sonde_trace_push(sonde_trace_prof_t *p, sonde_trace_thread_t *th,
                                      sonde_trace_entry_t *e)
{
    if (SONDE_UNLIKELY(th->depth == th->cap) && sonde_trace_stack_grow(p, th) < 0) return;
    sonde_trace_edge_t *edge = NULL;
    if (th->depth > 0 && p->subcalls) {
        sonde_trace_entry_t *caller = th->stack[th->depth - 1].entry;
        edge = e->last_edge;
        if (SONDE_UNLIKELY(!edge || edge->caller != caller)) {
            edge = sonde_trace_edge_get(p, th, caller, e);
            e->last_edge = edge;
        }
        if (edge) edge->level++;
    }
    e->level++;
    sonde_trace_frame_t *f = &th->stack[th->depth++];
    f->entry = e;
    f->edge = edge;
    f->sub_ticks = 0;
    f->t0 = sonde_trace_now(p);
}

/* Ends the call on top of th's stack at `now` (cProfile's accounting:
 * cumulative time counted only when the outermost active call ends). */
SONDE_TRACE_HOT void sonde_trace_pop(sonde_trace_thread_t *th, sonde_ticks_t now)
{
    sonde_trace_frame_t *f = &th->stack[--th->depth];
    sonde_ticks_t total = now - f->t0;
    sonde_ticks_t inl = total - f->sub_ticks;
    if (th->depth) th->stack[th->depth - 1].sub_ticks += total;
    sonde_trace_entry_t *e = f->entry;
    e->calls++;
    e->inline_ticks += inl;
    if (--e->level == 0)
        e->total_ticks += total;
    else
        e->rec_calls++;
    sonde_trace_edge_t *edge = f->edge;
    if (edge) {
        edge->calls++;
        edge->inline_ticks += inl;
        if (--edge->level == 0)
            edge->total_ticks += total;
        else
            edge->rec_calls++;
    }
}

/* `sonde trace` (boot.c): while armed, is `code` starting on the main
 * thread the program's main frame? If so disarms and returns the main
 * thread's record (marked root), else NULL. */
sonde_trace_thread_t *sonde_trace_boot_root(sonde_trace_prof_t *p, PyObject *code);
/* The root thread's stack became empty: the program returned. */
void sonde_trace_root_done(sonde_trace_prof_t *p, sonde_trace_thread_t *th);

/* `sonde trace` on SIGTERM (terminate.c). Start: if SIGTERM has its
 * default action, installs the handler and starts the thread that calls
 * write (with the GIL) and then ends the process by SIGTERM; returns 0
 * (also when the program's own disposition is kept) or -1 with an
 * exception. Stop: joins the thread (the GIL released meanwhile), so that
 * a SIGTERM from then on only marks itself. Finish: puts the old
 * disposition back, and ends the process by SIGTERM if one came since
 * stop. No-ops in a forked child. */
int sonde_trace_term_start_gil(void (*write)(void));
void sonde_trace_term_stop_gil(void);
void sonde_trace_term_finish_gil(void);

SONDE_TRACE_HOT void sonde_trace_leave(sonde_trace_prof_t *p, uintptr_t key)
{
    sonde_trace_thread_t *th = sonde_trace_thread(p);
    if (SONDE_UNLIKELY(!th)) return;
    sonde_ticks_t now = sonde_trace_now(p);
    if (SONDE_UNLIKELY(th->depth == 0)) return;
    if (SONDE_LIKELY(th->stack[th->depth - 1].entry->key == key))
        sonde_trace_pop(th, now);
    else
        sonde_trace_leave_unmatched(th, key, now);
    if (SONDE_UNLIKELY(th->depth == 0) && th->root) sonde_trace_root_done(p, th);
}

/* A Python function starts (or a generator resumes). */
SONDE_TRACE_HOT void sonde_trace_on_start(sonde_trace_prof_t *p, PyObject *code)
{
    sonde_trace_thread_t *th = sonde_trace_thread(p);
    if (SONDE_UNLIKELY(!th)) {
        if (!p->armed || !(th = sonde_trace_boot_root(p, code))) return;
    }
    sonde_trace_entry_t *e = sonde_trace_find(th, (uintptr_t)code);
    if (SONDE_UNLIKELY(!e) && !(e = sonde_trace_entry_for_code(p, th, code))) return;
    sonde_trace_push(p, th, e);
}

/* A Python function returns, raises out, or yields. */
SONDE_TRACE_HOT void sonde_trace_on_return(sonde_trace_prof_t *p, PyObject *code)
{
    sonde_trace_leave(p, (uintptr_t)code);
}

/* A built-in is called: ml with the bound self and module. */
SONDE_TRACE_HOT void sonde_trace_on_c_call(sonde_trace_prof_t *p, PyMethodDef *ml, PyObject *self,
                                           PyObject *module)
{
    sonde_trace_thread_t *th = sonde_trace_thread(p);
    if (SONDE_UNLIKELY(!th)) return;
    uintptr_t key = (uintptr_t)ml | 1;
    sonde_trace_entry_t *e = sonde_trace_find(th, key);
    if (SONDE_UNLIKELY(!e) && !(e = sonde_trace_entry_for_builtin(p, th, ml, self, module))) return;
    sonde_trace_push(p, th, e);
}

SONDE_TRACE_HOT void sonde_trace_on_c_return(sonde_trace_prof_t *p, PyMethodDef *ml)
{
    sonde_trace_leave(p, (uintptr_t)ml | 1);
}

/* ---- names (names.c) ------------------------------------------------------ */

/* The name _lsprof gives a built-in: "<built-in method builtins.len>",
 * "<method 'append' of 'list' objects>", ... New reference, or NULL with
 * an exception. */
PyObject *sonde_trace_builtin_label(PyMethodDef *ml, PyObject *self, PyObject *module);
/* UTF-8 of a str as marshal writes it (surrogates passed through), into
 * an owned NUL-terminated copy. NULL with an exception. */
char *sonde_trace_utf8(PyObject *str, size_t *len);

/* ---- hooks (monitoring.c on 3.12+, setprofile.c before) ------------------ */

/* Prepares the hook types. Returns 0 or -1 with an exception. */
int sonde_trace_hooks_init(void);
/* Starts delivering events to p (all threads). Returns 0 or -1 with an
 * exception (ValueError when another profiler holds the hook). */
int sonde_trace_hooks_install_gil(sonde_trace_prof_t *p);
/* Stops delivering events to p. Returns 0 or -1 with an exception. */
int sonde_trace_hooks_remove_gil(sonde_trace_prof_t *p);
/* ≤3.11: installs the hook for new threads once threading is imported
 * (called from the slow path of new entries while pending). */
void sonde_trace_hooks_threading_gil(sonde_trace_prof_t *p);

/* ---- the snapshot: statistics in pstats' shape (snapshot.c) -------------- */

/* Builds the statistics of p as cProfile's snapshot_stats would (rows in
 * first-call order, entries with the same key merged, callers attached).
 * Returns 0 or -1 with an exception. */
int sonde_trace_stats_build_gil(sonde_trace_prof_t *p, sonde_trace_stats_t *out);
void sonde_trace_stats_free(sonde_trace_stats_t *s);
/* Total calls of all rows (0 = nothing recorded). */
uint64_t sonde_trace_stats_calls(const sonde_trace_stats_t *s);

/* ---- writers (pstats_file.c, pstats_text.c): pstats.h, no Python -------- */

/* The sort cProfile of the running interpreter uses by default
 * (sort_stats(2), cumulative, since 3.11; sort_stats(-1) before). */
static inline void sonde_trace_sort_default(sonde_trace_sort_t *sort)
{
    sonde_trace_sort_number(sort, PY_VERSION_HEX >= 0x030B0000 ? 2 : -1);
}

/* ---- the Profile type (profile.c) ------------------------------------------ */

/* enable(): installs the hooks (again, keeping the stacks, when enabled).
 * Returns 0 or -1 with an exception. */
int sonde_trace_enable_gil(sonde_trace_prof_t *p);
/* disable(): removes the hooks, ends the active calls of every thread.
 * Returns 0 or -1 with an exception (MemoryError when an allocation
 * failed while tracing). */
int sonde_trace_disable_gil(sonde_trace_prof_t *p);
/* Writes UTF-8 text (surrogates passed through) to sys.stdout, as print
 * would, and flushes it. Returns 0 or -1 with an exception. */
int sonde_trace_stdout_write_gil(const char *text, size_t len);
/* Prints the report to sys.stdout. Returns 0 or -1 with an exception. */
int sonde_trace_print_gil(sonde_trace_prof_t *p, const sonde_trace_sort_t *sort);
/* Writes the pstats file at path atomically (directly for a device or a
 * FIFO). Returns 0, -ENODATA when stats is empty, or -errno. No Python. */
int sonde_trace_write_stats(const char *path, const sonde_trace_stats_t *stats);
/* True for the methods of sonde.Profile (never recorded). */
bool sonde_trace_own_method(const PyMethodDef *ml);

#endif
