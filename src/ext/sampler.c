/* sampler.c — the CPU sampler: a native thread inside the profiled process.
 *
 * Owns: the sampler thread and what it accumulates. Every interval it reads
 * each Python thread's state through the fault-safe reader (src/pyread/),
 * without the GIL and without signals, and charges the time that thread
 * used since the previous tick to the line of profiled code it is on:
 *   - CPU time (the thread's own CPU clock) is Python time, or native time
 *     when the thread, watched from here, keeps its innermost frame on one
 *     instruction while it runs (the sampling core's rule, src/sample/
 *     native.c: C code reached from that line by a call,
 *     an operator, a subscript...; a garbage collection there is Python,
 *     told by a gc.callbacks entry);
 *   - time off CPU is system time when the thread is blocked in a system
 *     call other than a wait on another thread (sleep, I/O, poll), and is
 *     not charged when it waits on a lock, a condition, a join or the GIL.
 * Each charge also carries the other sources' readings (sources.c): the
 * tick's (sonde_sources_tick), or the charged thread's own for a source
 * that reads per thread (sonde_sources_thread), weighted by the time
 * charged.
 * The sampler is also the table's CPU source (sonde_source_cpu, below). The
 * bookkeeping is the sampling core's (src/sample/): the code filter's
 * cache, the thread registry, the stack walk and its depth limit, the
 * line and stack accumulators and the partial-profile counters (failed
 * reads, samples dropped for want of memory, threads and frames left out),
 * shared with the memory callback and the attach reader.
 * Stack reads are checked and retried (sonde_walk_thread_checked). The
 * test-only variable SONDE_TEST_SAMPLER_CPU pins the sampler thread to one
 * CPU (tests/e2e/test_cpu_accuracy.py); it is not a user setting.
 * No signal handler runs here; sonde_sampler_signal_terminate is the only
 * async-signal-safe entry (it signals a futex word). The thread blocks all
 * signals, so the program's signals are never delivered to it.
 */
#include "ext.h"

#include "../core/atomic.h"

#if PY_VERSION_HEX < 0x030B0000
#include <frameobject.h>
#include <stddef.h>
/* src/pyread/frames.c finds a frame's generator just before f_lasti
 * (FRAME_GEN_BEFORE_LASTI) to tell a suspended generator's frame. */
_Static_assert(offsetof(PyFrameObject, f_lasti) == offsetof(PyFrameObject, f_gen) + 8,
               "PyFrameObject: f_gen is not just before f_lasti");
/* ... and whether a frame is executing 12 bytes after f_lasti
 * (FRAME_STATE_AFTER_LASTI): f_executing (3.8, 3.9), f_state (3.10). */
#if PY_VERSION_HEX < 0x030A0000
_Static_assert(offsetof(PyFrameObject, f_executing) == offsetof(PyFrameObject, f_lasti) + 12,
               "PyFrameObject: f_executing is not 12 bytes after f_lasti");
#else
_Static_assert(offsetof(PyFrameObject, f_state) == offsetof(PyFrameObject, f_lasti) + 12,
               "PyFrameObject: f_state is not 12 bytes after f_lasti");
#endif
#endif

#include <dlfcn.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct sonde_sampler_thread {
    sonde_thread_key_t key;   /* (thread state, tid); first (threads.c) */
    sonde_ns_t last_cpu_ns;   /* on CPU since the thread started */
    sonde_ns_t last_runq_ns;  /* runnable but preempted, since it started */
    sonde_ns_t runq_ahead_ns; /* waits charged before schedstat reported them */
    sonde_thread_wait_t last_wait;
    uint64_t last_key;      /* where its last time went; 0 = unattributed */
    int last_answer;        /* the native test's answer there (sampler_charge) */
    bool last_in_call;      /* ... and whether it was on a call instruction */
    bool last_valid;        /* last_key.. come from a stack read */
    bool left_out;          /* present at the first tick (prior_threads_out) */
    sonde_prim_thread_t os; /* the kernel's view of the thread */
} sonde_sampler_thread_t;

/* ---- accumulation ------------------------------------------------------- */

/* Charges a tick's time to line `key` in one accumulator: running time
 * by the native test's answer (1 native, 0 Python, -1 none: shared out
 * later by the line's answers, see sonde_line_split), and system time. */
static void sampler_charge_to(sonde_sampler_t *s, sonde_accum_t *to, uint64_t key,
                              sonde_ns_t run_ns, int answer, bool in_call, sonde_ns_t system_ns)
{
    sonde_line_acc_t *acc = sonde_accum_charge_answer(to, key, run_ns, answer, in_call, system_ns);
    if (!acc) return;
    /* the sources' readings for this thread in this tick (sampler_readings),
     * by the time charged */
    double sec = (double)(run_ns + system_ns) / 1e9;
    for (unsigned f = 0; f < SONDE_N_FIGSRCS; f++)
        if (s->charge_has[f])
            sonde_figs_charge(&acc->figs, f, s->charge_reading + sonde_fig_sources[f].first, sec);
}

/* The readings a thread's charges carry this tick: the tick's, with the
 * thread's own for the sources that read per thread. Called once per
 * thread charged, before its charges. */
static void sampler_readings(sonde_sampler_t *s, const sonde_source_thread_t *thread)
{
    memcpy(s->charge_has, s->tick_has, sizeof s->charge_has);
    memcpy(s->charge_reading, s->tick_reading, sizeof s->charge_reading);
    if (s->sources) sonde_sources_thread(s->sources, thread, s->charge_has, s->charge_reading);
}

/* Charges a tick's time to the process's lines and, while a span is
 * open, to the span's too. */
static void sampler_charge(sonde_sampler_t *s, uint64_t key, sonde_ns_t run_ns, int answer,
                           bool in_call, sonde_ns_t system_ns)
{
    sampler_charge_to(s, &s->acc, key, run_ns, answer, in_call, system_ns);
    if (s->tick_span) sampler_charge_to(s, s->tick_span, key, run_ns, answer, in_call, system_ns);
}

/* A late tick (the sampler thread was kept off its CPU for longer than an
 * interval) covers time the thread may have spent far from where it is
 * now: charged all to the new place, the end of a phase would go to the
 * next phase (half the delay on average). Each place is then charged the
 * half of the excess nearest to it: *prev_ns is the share of run_ns that
 * goes to the previous place. */
static sonde_ns_t sampler_late_share(const sonde_sampler_t *s, sonde_ns_t wall_ns,
                                     sonde_ns_t run_ns)
{
    if (wall_ns <= 2 * s->interval_ns) return 0;
    double excess = (double)(wall_ns - s->interval_ns) / 2.0 / (double)wall_ns;
    return (sonde_ns_t)((double)run_ns * excess);
}

/* An answer says what the thread was doing while it was watched, the end
 * of the tick; on a late tick (the sampler kept off its CPU) most of the
 * running time lies well before that, and one wrong answer (a stall taken
 * for native code, see src/sample/native.c) would carry all of it. So
 * an answer carries at most SAMPLER_ANSWER_INTERVALS intervals; the rest
 * is charged to the same line unsure, shared out by all its answers.
 * Returns the part of run_ns beyond the answer's reach. */
#define SAMPLER_ANSWER_INTERVALS 2
static sonde_ns_t sampler_beyond_answer(const sonde_sampler_t *s, sonde_ns_t run_ns, int answer)
{
    sonde_ns_t reach = SAMPLER_ANSWER_INTERVALS * s->interval_ns;
    return answer >= 0 && run_ns > reach ? run_ns - reach : 0;
}

/* Adds running time to the thread's previous place in one accumulator,
 * as classified there (no new sample, no new answer). */
static void sampler_charge_previous_to(sonde_accum_t *to, const struct sonde_sampler_thread *t,
                                       sonde_ns_t run_ns)
{
    if (!t->last_key) {
        to->unattributed_ns += run_ns;
        return;
    }
    sonde_line_acc_t *acc = sonde_accum_line(to, t->last_key);
    if (!acc) return;
    if (t->last_answer == 1)
        acc->native_ns += run_ns;
    else if (t->last_answer == 0)
        acc->python_ns += run_ns;
    else if (t->last_in_call)
        acc->unwatched_call_ns += run_ns;
    else
        acc->unwatched_ns += run_ns;
}

/* The same for the process's lines and the open span's. */
static void sampler_charge_previous(sonde_sampler_t *s, const struct sonde_sampler_thread *t,
                                    sonde_ns_t run_ns)
{
    sampler_charge_previous_to(&s->acc, t, run_ns);
    if (s->tick_span) sampler_charge_previous_to(s->tick_span, t, run_ns);
}

/* ---- spans ------------------------------------------------------------------------ */

#define SAMPLER_SPAN_LINES 8 /* a span's first line table (about 1 KB) */

/* The accumulator of span `id` (1-based; grown on first use), or NULL (id
 * 0: no span open; out of memory: the span misses this tick, counted in
 * the session's dropped_samples, which the report shows). Sampler thread
 * only. */
static sonde_accum_t *sampler_span_acc(sonde_sampler_t *s, uint32_t id)
{
    if (id == 0) return NULL;
    if (id > s->n_spans) {
        size_t n = s->n_spans ? s->n_spans : 64;
        while (n < id)
            n *= 2;
        sonde_accum_t *grown = realloc(s->spans, n * sizeof *grown);
        if (!grown) {
            s->acc.partial.dropped_samples++;
            return NULL;
        }
        memset(grown + s->n_spans, 0, (n - s->n_spans) * sizeof *grown);
        for (size_t i = s->n_spans; i < n; i++)
            grown[i].lines_initial = SAMPLER_SPAN_LINES; /* one test: a few lines */
        s->spans = grown;
        s->n_spans = n;
    }
    return &s->spans[id - 1];
}

/* ---- threads ------------------------------------------------------------------ */

/* Releases a thread the sweep dropped (threads.c). */
static void sampler_thread_release(void *entry)
{
    sonde_sampler_thread_t *t = entry;
    sonde_prim_thread_close(&t->os);
}

static sonde_sampler_thread_t *sampler_thread_entry(sonde_sampler_t *s, uint64_t tstate, pid_t tid,
                                                    bool *is_new)
{
    sonde_sampler_thread_t *t = sonde_threadreg_get(&s->threads, tstate, tid, is_new);
    if (t && *is_new) {
        t->last_wait = SONDE_WAIT_RUNNING;
        sonde_prim_thread_init(&t->os, tid);
    }
    return t;
}

/* ---- garbage collections ----------------------------------------------------- */

/* The collector runs C code from whatever instruction allocated, for as
 * long as a native call; its time is the interpreter's own work, charged
 * as Python time to that line. gc.callbacks calls sampler_gc_callback at
 * the start and the stop of every collection, in the collecting thread,
 * with the GIL; the sampler reads these without it. */
static atomic_uint_fast64_t sampler_gc_starts; /* collections started */
static atomic_bool sampler_gc_running;         /* one is running now */
static atomic_uint_fast64_t sampler_gc_tstate; /* the collecting thread's state */
static PyObject *sampler_gc_hook;              /* owned; our gc.callbacks entry, or NULL */
static int sampler_test_cpu = -1; /* SONDE_TEST_SAMPLER_CPU: tests pin the sampler there */

static PyObject *sampler_gc_callback(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *phase =
        PyTuple_Check(args) && PyTuple_GET_SIZE(args) > 0 ? PyTuple_GET_ITEM(args, 0) : NULL;
    if (phase && PyUnicode_Check(phase) && PyUnicode_CompareWithASCIIString(phase, "start") == 0) {
        sonde_atomic_store_relaxed(&sampler_gc_tstate, (uint64_t)(uintptr_t)PyThreadState_Get());
        sonde_atomic_add_seq_cst(&sampler_gc_starts, 1);
        sonde_atomic_store_seq_cst(&sampler_gc_running, true);
    } else {
        sonde_atomic_store_seq_cst(&sampler_gc_running, false);
    }
    Py_RETURN_NONE;
}

static PyMethodDef sampler_gc_def = {"_sonde_gc_callback", sampler_gc_callback, METH_VARARGS, NULL};

/* Adds our entry to gc.callbacks (once). Without it, collections are
 * judged like any other C code. Never raises. */
static void sampler_gc_watch_gil(void)
{
    if (sampler_gc_hook) return;
    PyObject *gc = PyImport_ImportModule("gc");
    PyObject *callbacks = gc ? PyObject_GetAttrString(gc, "callbacks") : NULL;
    PyObject *hook = callbacks ? PyCFunction_New(&sampler_gc_def, NULL) : NULL;
    if (hook && PyList_Check(callbacks) && PyList_Append(callbacks, hook) == 0) {
        sampler_gc_hook = hook;
        hook = NULL;
    }
    Py_XDECREF(hook);
    Py_XDECREF(callbacks);
    Py_XDECREF(gc);
    PyErr_Clear();
}

/* Removes our entry from gc.callbacks, if the program left it there. */
static void sampler_gc_unwatch_gil(void)
{
    if (!sampler_gc_hook) return;
    PyObject *gc = PyImport_ImportModule("gc");
    PyObject *callbacks = gc ? PyObject_GetAttrString(gc, "callbacks") : NULL;
    if (callbacks && PyList_Check(callbacks)) {
        for (Py_ssize_t i = PyList_GET_SIZE(callbacks) - 1; i >= 0; i--) {
            if (PyList_GET_ITEM(callbacks, i) == sampler_gc_hook) {
                PySequence_DelItem(callbacks, i);
                break;
            }
        }
    }
    Py_XDECREF(callbacks);
    Py_XDECREF(gc);
    PyErr_Clear();
    Py_CLEAR(sampler_gc_hook);
}

/* Whether thread `tstate` collected garbage since the starts count was
 * `starts0` (with `running0` as it was then). */
static bool sampler_gc_touched(uint64_t tstate, uint64_t starts0, bool running0)
{
    bool running = sonde_atomic_load_seq_cst(&sampler_gc_running);
    uint64_t starts = sonde_atomic_load_seq_cst(&sampler_gc_starts);
    if (!running0 && !running && starts == starts0) return false;
    return sonde_atomic_load_relaxed(&sampler_gc_tstate) == tstate;
}

/* ---- Python or native ------------------------------------------------------------ */

/* The rule is the sampling core's (src/sample/native.c, with the exact
 * CPU clock's constants); this file gives it the thread's clock and the
 * collections seen above. */
#define SAMPLER_NATIVE_BUDGET_NS 1500000 /* wall time spent looking, at most */

struct sampler_watch {
    pid_t tid;
    uint64_t tstate;
    uint64_t gc_starts0; /* collections started when the watch began */
    bool gc_running0;    /* ... and whether one was running */
};

static int sampler_watch_cpu(void *arg, sonde_ns_t *ns, sonde_ns_t *waited_ns)
{
    const struct sampler_watch *watch = arg;
    *waited_ns = 0; /* an exact clock: not needed */
    return sonde_prim_thread_cpu_ns(watch->tid, ns);
}

static bool sampler_watch_gc(void *arg)
{
    const struct sampler_watch *watch = arg;
    return sampler_gc_touched(watch->tstate, watch->gc_starts0, watch->gc_running0);
}

/* Every CPU running one of the process's threads, the watched one's among
 * them, has run since the call began (src/sample/native.c: stalls). */
static int sampler_watch_resume(void *arg)
{
    (void)arg;
    return sonde_prim_cpus_resume();
}

/* Whether a running thread is executing native code: 1 native, 0 Python,
 * -1 no answer (sonde_native_watch). */
static int sampler_stays_native(sonde_sampler_t *s, uint64_t tstate, pid_t tid,
                                const sonde_walk_t *w)
{
    struct sampler_watch watch = {
        .tid = tid,
        .tstate = tstate,
        .gc_running0 = sonde_atomic_load_seq_cst(&sampler_gc_running),
        .gc_starts0 = sonde_atomic_load_seq_cst(&sampler_gc_starts),
    };
    sonde_native_watch_t how = {.proc = &s->proc,
                                .tstate = tstate,
                                .cpu_ns = sampler_watch_cpu,
                                .gc_touched = sampler_watch_gc,
                                .resume = sampler_watch_resume,
                                .arg = &watch,
                                .budget_ns = SAMPLER_NATIVE_BUDGET_NS};
    return sonde_native_watch(&sonde_native_rule_exact, &how, w);
}

/* Walks a thread's stack (w->frames set: keeping it): *answer says whether
 * its running time is native code called from its innermost frame (1),
 * bytecode (0), or unknown (-1: the thread did not run while watched; a
 * thread blocked on a call instruction is inside the call). running: the
 * thread is on CPU now, so it can be watched. w->line_key is the nearest
 * profiled line, 0 if none. Returns 0, or -errno when no consistent stack
 * could be read (counted as a failed read; nothing is charged). */
static int sampler_locate(sonde_sampler_t *s, sonde_sampler_thread_t *t, uint64_t tstate,
                          bool running, int *answer, sonde_walk_t *w)
{
    uint32_t retries = 0;
    pid_t tid = t->key.tid;
    *answer = 0;
    int rc = sonde_walk_thread_checked(w, &s->proc, tstate, &s->codes, s->filter, &retries);
    if (rc < 0) {
        s->acc.partial.failed_reads++;
        return rc;
    }
    if (w->have_innermost)
        *answer =
            running ? sampler_stays_native(s, tstate, tid, w) : (w->innermost.in_call ? 1 : -1);
    return 0;
}

/* Waits charged ahead of schedstat, at most this many intervals (a short
 * sleep between two ticks looks the same and is never reported as a wait). */
#define SAMPLER_RUNQ_AHEAD_MAX 4

/* Adds the sample's stack (innermost line key): run_ns as the native
 * rule answered, as the line's time is charged (sonde_accum_add_stack_answer),
 * system_ns as system time; one sample. */
static void sampler_add_stack(sonde_sampler_t *s, const struct sonde_sampler_thread *t,
                              const sonde_walk_t *walk, uint64_t key, int answer, bool in_call,
                              sonde_ns_t run_ns, sonde_ns_t system_ns)
{
    uint32_t slot = sonde_accum_slot(&s->acc, t->key.tid);
    (void)sonde_accum_add_stack_answer(&s->acc, slot, walk->frames, walk->depth, key, run_ns,
                                       answer, in_call, system_ns);
}

/* One thread's share of a tick. */
static void sampler_tick_thread(sonde_sampler_t *s, const sonde_pythread_t *pt, sonde_ns_t wall_ns)
{
    if (pt->native_tid <= 0) return;
    bool is_new = false;
    sonde_sampler_thread_t *t = sampler_thread_entry(s, pt->tstate, pt->native_tid, &is_new);
    if (!t) return;
    /* A Jupyter kernel's own threads, idle in poll, are not the cell's. */
    if (is_new && s->first_tick && s->prior_threads_out && pt->tstate != s->start_tstate)
        t->left_out = true;
    if (t->left_out) return;
    sonde_ns_t cpu_ns = 0, runq_ns = 0;
    if (sonde_prim_thread_times(&t->os, &cpu_ns, &runq_ns) < 0) return;
    if (is_new && s->first_tick) {
        /* Threads present at the first tick start from where they are. */
        t->last_cpu_ns = cpu_ns;
        t->last_runq_ns = runq_ns;
    }
    /* (A thread born since the previous tick starts from zero: all of its
     * time falls within this tick.) */
    sonde_ns_t cpu_delta = cpu_ns > t->last_cpu_ns ? cpu_ns - t->last_cpu_ns : 0;
    sonde_ns_t runq_delta = runq_ns > t->last_runq_ns ? runq_ns - t->last_runq_ns : 0;
    t->last_cpu_ns = cpu_ns;
    t->last_runq_ns = runq_ns;
    if (s->first_tick) return;
    /* schedstat adds a wait on the run queue only once it ends, so a thread
     * waiting at a tick shows time that is neither CPU nor reported wait.
     * Such time of a thread still running is charged when seen (below),
     * and taken back from the wait reported later: else, with the machine
     * busy, each tick dropped a random slice of a line's time (function
     * shares were off by 4 points with four processes on two cores). */
    sonde_ns_t repaid = runq_delta < t->runq_ahead_ns ? runq_delta : t->runq_ahead_ns;
    runq_delta -= repaid;
    t->runq_ahead_ns -= repaid;
    if (cpu_delta > wall_ns) cpu_delta = wall_ns;
    if (runq_delta > wall_ns - cpu_delta) runq_delta = wall_ns - cpu_delta;
    sonde_ns_t blocked_ns = wall_ns - cpu_delta - runq_delta;

    /* A thread that neither ran nor became runnable is still where it was
     * blocked: charge the same place without reading its stack (unless
     * stacks are kept: then the stack is read again). */
    if (cpu_delta == 0 && runq_delta == 0 && !is_new && !s->record_stacks) {
        if (t->last_wait == SONDE_WAIT_THREAD) return;
        if (t->last_wait == SONDE_WAIT_SYSTEM) {
            if (s->virtual_time) return;
            sonde_source_thread_t th = {t->key, cpu_ns, 0, 0, blocked_ns};
            sampler_readings(s, &th);
            sampler_charge(s, t->last_key, 0, 0, false, blocked_ns);
            return;
        }
    }

    sonde_thread_wait_t wait = SONDE_WAIT_RUNNING;
    if (blocked_ns > wall_ns / 4 || cpu_delta == 0 || (!s->virtual_time && blocked_ns > 0))
        wait = sonde_prim_thread_wait(&t->os);
    if (wait == SONDE_WAIT_RUNNING && !s->virtual_time && blocked_ns > 0 &&
        t->runq_ahead_ns < SAMPLER_RUNQ_AHEAD_MAX * s->interval_ns) {
        /* On CPU or runnable, not in a system call: the unexplained time
         * is a wait schedstat has not reported yet. */
        runq_delta += blocked_ns;
        t->runq_ahead_ns += blocked_ns;
        blocked_ns = 0;
    }
    if (cpu_delta == 0 && runq_delta == 0 && !is_new && t->last_wait == SONDE_WAIT_THREAD) return;
    /* Wall-clock mode charges the time the thread was ready to run but
     * preempted like the time it ran: both are the line's wall time. */
    sonde_ns_t run_ns = cpu_delta + (s->virtual_time ? 0 : runq_delta);
    sonde_ns_t system_ns = (!s->virtual_time && wait == SONDE_WAIT_SYSTEM) ? blocked_ns : 0;
    /* The sources' readings for the thread as its CPU clock was read (not
     * after the native rule's watch, up to 1.5 ms later, whose time is the
     * next tick's) */
    sonde_source_thread_t th = {t->key, cpu_ns, cpu_delta, run_ns, system_ns};
    sampler_readings(s, &th);
    int answer = 0;
    static sonde_aframe_t frames[2][SONDE_STACK_MAX_DEPTH]; /* the sampler thread's alone */
    sonde_walk_t walk = {.frames = s->record_stacks ? frames[0] : NULL,
                         .spare = s->record_stacks ? frames[1] : NULL};
    int rc = sampler_locate(s, t, pt->tstate, wait == SONDE_WAIT_RUNNING, &answer, &walk);
    uint64_t key = rc < 0 ? 0 : walk.line_key;
    bool in_call = walk.have_innermost && walk.innermost.in_call;
    bool had_previous = t->last_valid && !is_new;
    struct sonde_sampler_thread previous = *t;
    t->last_wait = wait;
    t->last_key = key;
    t->last_answer = answer;
    t->last_in_call = in_call;
    t->last_valid = rc == 0;
    if (rc < 0) return; /* counted in failed_reads; nothing charged */
    if (run_ns + system_ns == 0) return;
    sonde_ns_t prev_ns = had_previous ? sampler_late_share(s, wall_ns, run_ns) : 0;
    if (prev_ns) sampler_charge_previous(s, &previous, prev_ns);
    sonde_ns_t here_ns = run_ns - prev_ns, beyond_ns = sampler_beyond_answer(s, here_ns, answer);
    sampler_charge(s, key, here_ns - beyond_ns, answer, in_call, system_ns);
    if (beyond_ns) sampler_charge(s, key, beyond_ns, -1, in_call, 0);
    if (s->record_stacks && walk.detached)
        /* Every try caught a generator suspended mid-walk: the line is
         * right, the stack would start at the generator; not kept. */
        s->acc.partial.failed_reads++;
    else if (s->record_stacks && walk.depth > 0) /* out of memory: counted as dropped */
        sampler_add_stack(s, t, &walk, key, answer, in_call, run_ns, system_ns);
}

static void sampler_tick(sonde_sampler_t *s)
{
    sonde_threadlist_t *list = &s->tick_threads;
    sonde_ns_t now = sonde_prim_monotonic_ns();
    sonde_ns_t wall_ns = now - s->last_tick_ns;
    sonde_ns_t budget_ns = sonde_sample_tick_budget(s->interval_ns);
    s->last_tick_ns = now;
    int n = sonde_threadlist_read(list, &s->proc, &s->acc.partial);
    if (n < 0) {
        s->acc.partial.failed_reads++;
        return;
    }
    s->empty_ticks = n == 0 && !s->first_tick ? s->empty_ticks + 1 : 0;
    if (s->sources) sonde_sources_tick(s->sources, s->tick_has, s->tick_reading);
    /* The span open now takes the whole tick (a test that ended since the
     * previous tick leaves its last part to the next one). */
    s->tick_span = sampler_span_acc(s, atomic_load_explicit(&s->span, memory_order_acquire));
    /* Every thread, the main one first, for as long as the tick's budget
     * lasts; the threads left out keep their entries (the next tick
     * starts with them). */
    size_t k = 0;
    for (; k < list->n; k++) {
        if (k > 0 && sonde_prim_monotonic_ns() - now > budget_ns) break;
        sampler_tick_thread(s, sonde_threadlist_nth(list, k), wall_ns);
    }
    for (size_t rest = k; rest < list->n; rest++) {
        const sonde_pythread_t *pt = sonde_threadlist_nth(list, rest);
        sonde_threadreg_touch(&s->threads, pt->tstate, pt->native_tid);
    }
    sonde_partial_t ignored = {0}; /* the first tick takes no samples */
    sonde_threadlist_tick_end(list, k, s->first_tick ? &ignored : &s->acc.partial);
    sonde_threadreg_sweep(&s->threads);
    if (!s->first_tick) s->ticks++;
    s->first_tick = false;
}

/* ---- the thread ------------------------------------------------------------------- */

/* Next interval with ±25 % jitter, so that sampling never locks onto a
 * periodic pattern in the program. */
static sonde_ns_t sampler_next_interval(sonde_sampler_t *s)
{
    s->rng ^= s->rng << 13;
    s->rng ^= s->rng >> 7;
    s->rng ^= s->rng << 17;
    sonde_ns_t quarter = s->interval_ns / 4;
    if (quarter == 0) return s->interval_ns;
    return s->interval_ns - quarter + s->rng % (2 * quarter + 1);
}

static void *sampler_main(void *arg)
{
    sonde_sampler_t *s = arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    sonde_prim_set_timer_slack(1000);
    if (sampler_test_cpu >= 0) sonde_prim_pin_self_to_cpu(sampler_test_cpu); /* tests only */
    atomic_store(&s->thread_tid, sonde_prim_gettid());

    if (s->first_tick) {
        s->last_tick_ns = sonde_prim_monotonic_ns();
        sampler_tick(s); /* baseline */
        atomic_store_explicit(&s->baseline_done, true, memory_order_release);
        sonde_prim_wake_signal(&s->started);
        if (s->sources) sonde_sources_launch(s->sources); /* while the program starts */
    }
    /* (After a pause for fork, the next tick covers the pause too.) */
    sonde_ns_t next = sonde_prim_monotonic_ns() + sampler_next_interval(s);
    for (;;) {
        sonde_ns_t now = sonde_prim_monotonic_ns();
        if (next > now) {
            sonde_prim_wake_wait(&s->wake, next - now);
        }
        if (atomic_load_explicit(&s->term_requested, memory_order_acquire)) {
            sampler_tick(s);
            s->stop_ns = sonde_prim_monotonic_ns();
            if (s->on_terminate) s->on_terminate();
            break;
        }
        if (atomic_load_explicit(&s->stop_requested, memory_order_acquire)) break;
        if (sonde_prim_monotonic_ns() < next) continue; /* spurious wake-up */
        sampler_tick(s);
        if (s->period_word && s->on_period) {
            uint64_t count = atomic_load_explicit(s->period_word, memory_order_acquire);
            if (count != s->period_seen) {
                s->period_seen = count;
                s->on_period(count);
            }
        }
        if (s->watch_pid > 0 && sonde_prim_monotonic_ns() >= s->watch_next_ns) {
            char state = 0;
            s->watch_next_ns = sonde_prim_monotonic_ns() + SONDE_NS_PER_SEC;
            int gone = sonde_prim_proc_state(s->watch_pid, &state, NULL);
            if (gone == -ESRCH || (gone == 0 && (state == 'Z' || state == 'X'))) {
                s->stop_ns = sonde_prim_monotonic_ns();
                atomic_store(&s->abandoned, true);
                if (s->on_abandoned) s->on_abandoned();
                break;
            }
        }
        if (s->empty_ticks >= 2 && s->on_orphaned) {
            s->stop_ns = sonde_prim_monotonic_ns();
            s->on_orphaned(); /* does not return */
        }
        next += sampler_next_interval(s);
        now = sonde_prim_monotonic_ns();
        if (next < now) next = now + sampler_next_interval(s) / 2; /* we fell behind */
    }
    return NULL;
}

#define SAMPLER_START_WAIT_NS (100 * 1000 * 1000) /* for the first tick, at most */

/* Waits (boundedly) for the new thread's first tick: it opens the files it
 * keeps for each thread (src/prim) then, before the program runs, so that
 * the program's first files get the numbers they get without sonde. */
static void sampler_wait_baseline(sonde_sampler_t *s)
{
    sonde_ns_t now = sonde_prim_monotonic_ns(), deadline = now + SAMPLER_START_WAIT_NS;
    while (!atomic_load_explicit(&s->baseline_done, memory_order_acquire) && now < deadline) {
        sonde_prim_wake_wait(&s->started, deadline - now);
        now = sonde_prim_monotonic_ns();
    }
}

/* ---- public ------------------------------------------------------------------------ */

int sonde_sampler_start_gil(sonde_sampler_t *s)
{
    void *runtime = NULL;
    int rc;
    s->can_resume = false;
    atomic_store(&s->wake.pending, 0);
    s->thread_started = false;
    sonde_threadreg_init(&s->threads, sizeof(sonde_sampler_thread_t), sampler_thread_release);
    sonde_threadlist_init(&s->tick_threads);
    atomic_store(&s->stop_requested, false);
    atomic_store(&s->term_requested, false);
    atomic_store(&s->baseline_done, false);
    atomic_store(&s->started.pending, 0);
    s->first_tick = true;
    s->rng = sonde_prim_monotonic_ns() | 1;
    s->start_tstate = (uint64_t)(uintptr_t)PyThreadState_Get();

    runtime = dlsym(RTLD_DEFAULT, "_PyRuntime");
    if (!runtime) return -ENOEXEC;
    rc = sonde_pyproc_open_self(&s->proc, PY_VERSION_HEX, (uint64_t)(uintptr_t)runtime,
                                (uint64_t)(uintptr_t)&PyCode_Type);
    if (rc < 0) return rc;
    /* Test-only: the accuracy tests run the sampler on a CPU of their
     * choice (tests/e2e/test_cpu_accuracy.py); not a user setting. */
    const char *test_cpu = getenv("SONDE_TEST_SAMPLER_CPU");
    sampler_test_cpu = test_cpu && *test_cpu ? atoi(test_cpu) : -1;
    sampler_gc_watch_gil();
    /* The thread's first tick keeps descriptors near the top of the table:
     * grown now, while this thread may be the only one, it costs
     * microseconds, not a grace period of the kernel's */
    sonde_prim_kept_reserve();
    s->start_ns = sonde_prim_monotonic_ns();
    rc = -pthread_create(&s->thread, NULL, sampler_main, s);
    if (rc < 0) goto error;
    s->thread_started = true;
    s->can_resume = true;
    sampler_wait_baseline(s);
    return 0;
error:
    sampler_gc_unwatch_gil();
    sonde_pyproc_close(&s->proc);
    return rc;
}

void sonde_sampler_signal_terminate(sonde_sampler_t *s)
{
    int saved = errno;
    atomic_store_explicit(&s->term_requested, true, memory_order_release);
    sonde_prim_wake_signal(&s->wake);
    errno = saved;
}

void sonde_sampler_stop(sonde_sampler_t *s)
{
    if (!s->thread_started) return;
    atomic_store_explicit(&s->stop_requested, true, memory_order_release);
    sonde_prim_wake_signal(&s->wake);
    if (pthread_equal(pthread_self(), s->thread)) return; /* on_terminate path */
    bool have_gil = PyGILState_Check();
    PyThreadState *save = have_gil ? PyEval_SaveThread() : NULL;
    pthread_join(s->thread, NULL);
    if (have_gil) PyEval_RestoreThread(save);
    if (have_gil) sampler_gc_unwatch_gil();
    s->thread_started = false;
    if (!s->stop_ns) s->stop_ns = sonde_prim_monotonic_ns();
}

void sonde_sampler_pause(sonde_sampler_t *s)
{
    if (!s->thread_started || pthread_equal(pthread_self(), s->thread)) return;
    atomic_store_explicit(&s->stop_requested, true, memory_order_release);
    sonde_prim_wake_signal(&s->wake);
    pthread_join(s->thread, NULL); /* quick: the sampler never waits for the GIL */
    s->thread_started = false;
    /* fork() must see the thread gone (CPython 3.12+ counts threads in
     * /proc/self/stat, which can lag pthread_join by a moment). */
    sonde_prim_forget_joined_thread(atomic_load(&s->thread_tid), &s->wake);
    atomic_store_explicit(&s->stop_requested, false, memory_order_release);
}

int sonde_sampler_resume(sonde_sampler_t *s)
{
    if (s->thread_started || !s->can_resume) return 0;
    int rc = -pthread_create(&s->thread, NULL, sampler_main, s);
    if (rc == 0) s->thread_started = true;
    return rc;
}

int sonde_sampler_to_profile(sonde_sampler_t *s, const char *cwd, sonde_profile_t *prof)
{
    sonde_codenames_t names = sonde_codenames_of_proc(&s->proc, cwd);
    sonde_accum_convert_t how = {.per_thread = true, .main_tid = getpid()};
    int rc = sonde_accum_to_profile(&s->acc, &names, &how, prof);
    if (rc < 0) return rc;
    prof->samples = s->ticks - s->period_ticks0;
    sonde_ns_t end = s->stop_ns ? s->stop_ns : sonde_prim_monotonic_ns();
    sonde_ns_t start = s->period_start_ns ? s->period_start_ns : s->start_ns;
    prof->elapsed_sec = end > start ? (double)(end - start) / 1e9 : 0;
    prof->interval_sec = (double)s->interval_ns / 1e9;
    prof->virtual_time = s->virtual_time;
    return 0;
}

void sonde_sampler_period_reset(sonde_sampler_t *s)
{
    sonde_accum_clear(&s->acc); /* (spans are reported at the end only: kept) */
    s->period_start_ns = sonde_prim_monotonic_ns();
    s->period_ticks0 = s->ticks;
}

void sonde_sampler_free(sonde_sampler_t *s)
{
    sonde_threadreg_free(&s->threads);
    sonde_threadlist_free(&s->tick_threads);
    sonde_accum_free(&s->acc);
    for (size_t i = 0; i < s->n_spans; i++)
        sonde_accum_free(&s->spans[i]);
    free(s->spans);
    s->spans = NULL;
    s->n_spans = 0;
    sonde_codecache_free(&s->codes);
    s->can_resume = false;
    sonde_pyproc_close(&s->proc);
}

/* ---- the CPU source (sources.c's row) ------------------------------------------- */

static int sampler_source_start_gil(void *state, const sonde_source_ctx_t *ctx)
{
    int rc = sonde_sampler_start_gil(state);
    if (rc < 0) {
        char why[256] = "";
        if (rc == -ENOTSUP)
            sonde_pyversion_unsupported_text(why, sizeof why, PY_MAJOR_VERSION, PY_MINOR_VERSION,
                                             PY_MICRO_VERSION);
        PyErr_Format(PyExc_RuntimeError, "sonde: cannot start the sampler: %s%s",
                     why[0] ? "this is " : strerror(-rc), why);
    }
    return rc;
}

static void sampler_source_pause_gil(void *state)
{
    sonde_sampler_pause(state);
}

static void sampler_source_resume_gil(void *state)
{
    (void)sonde_sampler_resume(state);
}

static void sampler_source_halt(void *state)
{
    sonde_sampler_stop(state);
}

static int sampler_source_to_profile(void *state, const char *cwd, sonde_profile_t *prof,
                                     bool period)
{
    (void)period; /* the sampler's own period start (sonde_sampler_period_reset) */
    return sonde_sampler_to_profile(state, cwd, prof);
}

static void sampler_source_release_gil(void *state)
{
    sonde_sampler_stop(state);
    sonde_sampler_free(state);
}

const sonde_source_ops_t sonde_source_cpu = {
    .name = "CPU",
    .figs = -1,
    .state_size = 0, /* the session's sampler */
    .start_gil = sampler_source_start_gil,
    .pause_gil = sampler_source_pause_gil,
    .resume_gil = sampler_source_resume_gil,
    .halt = sampler_source_halt,
    .to_profile = sampler_source_to_profile,
    .release_gil = sampler_source_release_gil,
};
