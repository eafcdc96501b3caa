/* target.c — one process sampled from outside: its threads, one tick.
 *
 * Owns: sonde_atarget_t (attach.h). Called by the sampling loop
 * (sampler.c) once per tick per process, and by dump.c. A tick lists the
 * interpreter's thread states (src/pyread/), asks the kernel about each
 * thread (src/prim/remote.c: scheduler state from stat, CPU time from
 * schedstat, the system call from syscall) and charges the interval since
 * the previous tick (at most two nominal intervals, when the sampler was
 * late) as `sonde run` charges time in-process:
 *   - a thread running or runnable at the tick is charged the interval, on
 *     the nearest line of the program's own files on its stack, as native
 *     or Python time by the sampling core's rule (src/sample/native.c, with
 *     the coarse clock's constants): the thread is watched, its innermost
 *     frame looked at again and again (process_vm_readv) and its CPU time
 *     read from schedstat, which moves in scheduler-tick lumps; watches
 *     end before the next tick's time (SONDE_ATTACH_WATCH_MARGIN), so
 *     that the sampling rate holds; time without an answer is shared out
 *     by the line's answers (sonde_line_split). A garbage collection is
 *     not seen from here (docs/attach.md): it is judged like any C code;
 *   - a thread blocked in a system call other than a futex wait (sleep,
 *     I/O, poll) is charged the interval as system time; a futex wait (a
 *     lock, a join, the GIL) is not charged;
 *   - the stack itself is recorded (for flame graphs) when the thread is
 *     running, or always with --idle, cut to the sampling core's depth
 *     limit (SONDE_STACK_MAX_DEPTH, root and leaf kept around a marker).
 * Threads, the code filter's cache, the walk and the accumulators are the
 * sampling core's (src/sample/); failed reads and samples dropped for
 * want of memory are counted in t->acc.partial.
 * A thread that is blocked and has used no CPU since the previous tick
 * cannot have moved: its previous stack is reused without reading the
 * target. Walks read through a page snapshot (sonde_mem_snapshot_begin),
 * so a deep stack costs a few system calls. Everything read from the
 * target is bounded by src/pyread/; nothing here runs in a signal handler.
 */
#include "attach.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sonde_athread {
    sonde_thread_key_t key; /* (thread state, the tid it gave); first */
    pid_t tid;              /* kernel tid, 0 when unknown */
    bool tid_seen;          /* the kernel knew tid at least once */
    uint32_t slot;          /* thread slot (names the thread in stacks) */
    sonde_prim_task_t os;   /* the kernel's view */
    bool have_times;        /* last_cpu_ns is valid */
    sonde_ns_t last_cpu_ns; /* schedstat CPU time at the previous tick */
    bool wait_known;        /* last_wait was read at last_cpu_ns */
    sonde_thread_wait_t last_wait;
    sonde_aframe_t *stack;   /* owned; last stack read, innermost first,
                                cut to SONDE_STACK_MAX_DEPTH */
    sonde_ns_t stack_cpu_ns; /* CPU time when it was read (schedstat) */
    uint32_t depth, cap;
    bool have_stack;
    bool in_call;              /* innermost frame on a call instruction */
    bool have_innermost;       /* ... of the walk below */
    uint64_t innermost_addr;   /* its address, code and instruction: what the */
    sonde_pyframe_t innermost; /* native rule's looks compare with */
    sonde_aframe_t line_key;   /* nearest line of the program's files, 0 none */
};

/* ---- opening --------------------------------------------------------------- */

/* The interpreter's library directories from its executable:
 * <prefix>/bin/python3.X -> <prefix>/lib/python3.X/ and lib64. */
static int target_lib_prefixes(sonde_atarget_t *t)
{
    char prefix[4096], dir[4200];
    if (!t->exe[0] || t->exe[0] != '/') return 0;
    snprintf(prefix, sizeof prefix, "%s", t->exe);
    for (int up = 0; up < 2; up++) {
        char *slash = strrchr(prefix, '/');
        if (!slash) return 0;
        *slash = 0;
    }
    const char *libs[] = {"lib", "lib64"};
    for (size_t i = 0; i < SONDE_ARRAY_LEN(libs); i++) {
        snprintf(dir, sizeof dir, "%s/%s/python%d.%d", prefix, libs[i], t->proc.version_major,
                 t->proc.version_minor);
        int rc = sonde_codefilter_add_lib_dir(&t->filter, dir);
        if (rc < 0) return rc;
    }
    return 0;
}

/* Releases a thread the sweep dropped (src/sample/threads.c). */
static void target_thread_release(void *entry)
{
    struct sonde_athread *th = entry;
    sonde_prim_task_close(&th->os);
    free(th->stack);
}

int sonde_atarget_open(sonde_atarget_t *t, pid_t pid)
{
    memset(t, 0, sizeof *t);
    t->pid = pid;
    sonde_accum_init(&t->acc);
    sonde_threadreg_init(&t->threads, sizeof(struct sonde_athread), target_thread_release);
    sonde_threadlist_init(&t->tick_threads);
    t->filter.site_dirs = true;
    int rc = sonde_pyproc_open_pid(&t->proc, pid);
    if (rc != 0) return rc;
    if (sonde_prim_proc_exe(pid, t->exe, sizeof t->exe) != 0) t->exe[0] = 0;
    if (sonde_prim_proc_cwd(pid, t->cwd, sizeof t->cwd) != 0) t->cwd[0] = 0;
    t->cmdline = malloc(SONDE_ATTACH_CMDLINE);
    ssize_t len = t->cmdline ? sonde_prim_proc_cmdline(pid, t->cmdline, SONDE_ATTACH_CMDLINE) : 0;
    if (len > 0) {
        char *shrunk = realloc(t->cmdline, (size_t)len);
        if (shrunk) t->cmdline = shrunk;
        t->cmdline_len = (size_t)len;
    } else {
        free(t->cmdline);
        t->cmdline = NULL;
    }
    t->walk = malloc(SONDE_STACK_MAX_DEPTH * sizeof *t->walk);
    if (!t->walk || (rc = target_lib_prefixes(t)) < 0) {
        sonde_atarget_free(t);
        return -ENOMEM;
    }
    return 0;
}

void sonde_atarget_free(sonde_atarget_t *t)
{
    sonde_threadreg_free(&t->threads);
    sonde_threadlist_free(&t->tick_threads);
    free(t->walk);
    free(t->cmdline);
    sonde_codecache_free(&t->codes);
    sonde_codefilter_free(&t->filter);
    sonde_accum_free(&t->acc);
    sonde_pyproc_close(&t->proc);
    t->walk = NULL;
    t->cmdline = NULL;
}

/* ---- files --------------------------------------------------------------------- */

const char *sonde_atarget_path(const sonde_atarget_t *t, const char *filename, char *buf,
                               size_t len)
{
    sonde_codenames_t names = sonde_codenames_of_proc(&t->proc, t->cwd);
    return sonde_codenames_path(&names, filename, buf, len);
}

/* ---- threads ------------------------------------------------------------------- */

static struct sonde_athread *target_thread(sonde_atarget_t *t, const sonde_pythread_t *pt)
{
    bool is_new = false;
    struct sonde_athread *th =
        sonde_threadreg_get(&t->threads, pt->tstate, pt->native_tid, &is_new);
    if (th && is_new) {
        th->tid = pt->native_tid;
        th->slot = sonde_accum_slot(&t->acc, pt->native_tid);
        sonde_prim_task_init(&th->os, t->pid, pt->native_tid);
    }
    return th;
}

/* Reads a thread's stack into th (innermost first, cut to the depth
 * limit) and finds the nearest line of the program's files. Returns 0 or
 * -errno (nothing kept). */
static int target_walk(sonde_atarget_t *t, struct sonde_athread *th)
{
    sonde_walk_t walk = {.frames = t->walk};
    th->have_stack = false;
    sonde_mem_snapshot_begin(&t->proc.mem);
    int rc = sonde_walk_thread(&walk, &t->proc, th->key.tstate, &t->codes, &t->filter);
    sonde_mem_snapshot_end(&t->proc.mem);
    if (rc < 0) return rc;
    if (walk.depth > th->cap) {
        sonde_aframe_t *grown = realloc(th->stack, walk.depth * sizeof *grown);
        if (!grown) return -ENOMEM;
        th->stack = grown;
        th->cap = walk.depth;
    }
    if (walk.depth) memcpy(th->stack, walk.frames, walk.depth * sizeof *walk.frames);
    th->depth = walk.depth;
    th->in_call = walk.have_innermost && walk.innermost.in_call;
    th->have_innermost = walk.have_innermost;
    th->innermost_addr = walk.innermost_addr;
    th->innermost = walk.innermost;
    th->line_key = walk.line_key;
    th->have_stack = true;
    return 0;
}

/* What the kernel says about a thread at this tick. */
struct target_os_view {
    bool running;          /* on CPU or runnable now (state R) */
    bool cpu_same;         /* it has not run since the previous tick */
    bool have_cpu;         /* cpu_ns is known */
    sonde_ns_t cpu_ns;     /* its CPU time so far (schedstat) */
    sonde_ns_t run_ns;     /* the interval, when running */
    sonde_ns_t blocked_ns; /* the interval, when blocked */
    sonde_thread_wait_t wait;
};

/* Reads the thread's state (and its CPU time, which only tells whether it
 * ran since the previous tick). Each tick stands for the interval since
 * the previous one: a thread running now is charged the interval, a
 * blocked one the interval as blocked time. (Weighting by the kernel's
 * schedstat CPU figure instead was measured to bias phase shares by a few
 * points on a loaded machine: it is updated only at scheduler ticks and
 * switches, in lumps.) Returns 0, or -errno when the thread is gone. */
static int target_os_view(struct sonde_athread *th, const sonde_pythread_t *pt, sonde_ns_t wall,
                          struct target_os_view *view)
{
    char state = 'S';
    sonde_ns_t cpu = 0, runq = 0;
    bool have_times = false;

    memset(view, 0, sizeof *view);
    if (th->tid > 0) {
        int rc = sonde_prim_task_state(&th->os, &state);
        if (rc == -ESRCH && !th->tid_seen) {
            /* Not a thread of the target: a kernel tid read through a
             * C library other than ours (<= 3.10, see src/pyread/tid.c).
             * Go on without the kernel's view. */
            th->tid = 0;
            return target_os_view(th, pt, wall, view);
        }
        if (rc < 0) return rc;
        th->tid_seen = true;
        have_times = sonde_prim_task_times(&th->os, &cpu, &runq) == 0;
    } else {
        state = pt->holds_gil ? 'R' : 'S'; /* no kernel tid: the GIL decides */
    }
    view->running = state == 'R';
    view->have_cpu = have_times;
    view->cpu_ns = cpu;
    view->cpu_same = have_times && th->have_times && cpu == th->last_cpu_ns;
    view->run_ns = view->running ? wall : 0;
    view->blocked_ns = wall - view->run_ns;

    if (view->running)
        view->wait = SONDE_WAIT_RUNNING;
    else if (state == 'D')
        view->wait = SONDE_WAIT_SYSTEM;
    else if (state == 'S' && th->tid > 0)
        view->wait =
            view->cpu_same && th->wait_known ? th->last_wait : sonde_prim_task_wait(&th->os, NULL);
    else
        view->wait = SONDE_WAIT_UNKNOWN; /* stopped, dying: not charged */

    th->last_wait = view->wait;
    th->wait_known = !view->running && th->tid > 0;
    th->last_cpu_ns = cpu;
    th->have_times = have_times;
    return 0;
}

/* The thread the native rule watches, and its process. */
struct target_watched {
    sonde_atarget_t *t;
    struct sonde_athread *th;
};

/* The watched thread's CPU clock and run-queue wait: schedstat, in lumps
 * (the native rule's coarse clock). */
static int target_watch_cpu(void *arg, sonde_ns_t *ns, sonde_ns_t *waited_ns)
{
    struct target_watched *watched = arg;
    return sonde_prim_task_times(&watched->th->os, ns, waited_ns);
}

/* Whether the watched thread holds the GIL now (one read of the target). */
static int target_watch_holds_gil(void *arg)
{
    struct target_watched *watched = arg;
    uint64_t holder = 0;
    int rc = sonde_pyproc_gil_holder(&watched->t->proc, &holder);
    return rc < 0 ? rc : holder == watched->th->key.tstate;
}

/* The native rule's answer for a running thread whose stack was just read
 * (1 native, 0 Python, -1 none: no kernel tid or schedstat, less than
 * SONDE_ATTACH_WATCH_MIN_NS left before watch_until, or no answer from the
 * rule). */
static int target_watch(sonde_atarget_t *t, struct sonde_athread *th, sonde_ns_t watch_until)
{
    sonde_ns_t now = sonde_prim_monotonic_ns();
    if (!th->have_innermost || th->tid <= 0 || th->os.no_schedstat ||
        now + SONDE_ATTACH_WATCH_MIN_NS > watch_until)
        return -1;
    if (t->gil_switch_read_at == 0 ||
        now - t->gil_switch_read_at >= SONDE_ATTACH_SWITCH_REREAD_NS) {
        /* the GIL's switch interval (0: unknown), for the rule */
        if (sonde_pyproc_gil_switch_ns(&t->proc, &t->gil_switch_ns) < 0) t->gil_switch_ns = 0;
        t->gil_switch_read_at = now;
    }
    sonde_walk_t ref = {
        .have_innermost = true, .innermost = th->innermost, .innermost_addr = th->innermost_addr};
    struct target_watched watched = {.t = t, .th = th};
    sonde_native_watch_t how = {.proc = &t->proc,
                                .tstate = th->key.tstate,
                                .cpu_ns = target_watch_cpu,
                                .gc_touched = NULL, /* not readable from here */
                                /* another process's CPUs: no confirmation */
                                .resume = NULL,
                                /* a thread off the GIL runs no bytecode */
                                .holds_gil = target_watch_holds_gil,
                                .gil_switch_ns = t->gil_switch_ns,
                                .arg = &watched,
                                .budget_ns = watch_until - now};
    return sonde_native_watch(&sonde_native_rule_coarse, &how, &ref);
}

/* One thread's share of a tick. Threads filtered out (--gil) still have
 * their state read, so that what is known of them stays current. */
static void target_thread_tick(sonde_atarget_t *t, const sonde_attach_opts_t *opts,
                               const sonde_pythread_t *pt, sonde_ns_t wall, bool baseline,
                               sonde_ns_t watch_until)
{
    struct target_os_view view;
    struct sonde_athread *th = target_thread(t, pt);
    if (!th) {
        if (!baseline) t->acc.partial.dropped_samples++; /* out of memory */
        return;
    }
    int rc = target_os_view(th, pt, wall, &view);
    if (rc < 0) {
        /* The thread ended (-ESRCH), or its files could not be read (no
         * descriptor left: counted, never silently skipped). */
        if (rc != -ESRCH && !baseline) t->acc.partial.failed_reads++;
        return;
    }
    if (baseline || (opts->gil_only && !pt->holds_gil)) return;

    bool charge_system = view.wait == SONDE_WAIT_SYSTEM && view.blocked_ns > 0;
    bool need_line = view.run_ns > 0 || charge_system;
    bool keep_stack = view.running || opts->idle;
    if (!need_line && !keep_stack) return;

    /* A blocked thread that has used no CPU since its stack was read
     * cannot have moved. */
    bool unmoved =
        th->have_stack && !view.running && view.have_cpu && view.cpu_ns == th->stack_cpu_ns;
    if (!unmoved) {
        rc = target_walk(t, th);
        if (rc < 0) {
            if (rc == -ENOMEM)
                t->acc.partial.dropped_samples++;
            else
                t->acc.partial.failed_reads++;
            return;
        }
        th->stack_cpu_ns = view.cpu_ns;
    }
    int answer = -1;
    if (need_line) {
        answer = view.run_ns > 0 ? target_watch(t, th, watch_until) : -1;
        sonde_ns_t system_ns = charge_system ? view.blocked_ns : 0;
        sonde_accum_charge_answer(&t->acc, th->line_key, view.run_ns, answer, th->in_call,
                                  system_ns);
    }
    /* the stack's wall time: running (native code called from the line,
     * or bytecode, as the native rule answered and as the line's time is
     * charged), else blocked */
    if (keep_stack && th->depth > 0 && view.running) /* out of memory: counted as dropped */
        sonde_accum_add_stack_answer(&t->acc, th->slot, th->stack, th->depth, th->line_key, wall,
                                     answer, th->in_call, 0);
    else if (keep_stack && th->depth > 0)
        sonde_accum_add_stack_kind(&t->acc, th->slot, th->stack, th->depth, 1, wall,
                                   SONDE_KIND_SYSTEM);
}

/* Whether the process has exited (gone, or a zombie waiting to be reaped). */
static bool target_gone(const sonde_atarget_t *t)
{
    char state = 0;
    int rc = sonde_prim_proc_state(t->pid, &state, NULL);
    return rc == -ESRCH || (rc == 0 && (state == 'Z' || state == 'X'));
}

int sonde_atarget_tick(sonde_atarget_t *t, const sonde_attach_opts_t *opts, sonde_ns_t now,
                       sonde_ns_t watch_until)
{
    sonde_threadlist_t *list = &t->tick_threads;
    if (t->exited || t->retired) return t->exited ? -ESRCH : 0;
    bool baseline = t->last_tick_ns == 0;
    sonde_ns_t wall = baseline || now < t->last_tick_ns ? 0 : now - t->last_tick_ns;
    /* A tick that came late (the sampler was not scheduled in time) stands
     * for at most two intervals: the whole gap charged to wherever the
     * program is when the sampler wakes would misplace it, at a phase
     * boundary by the full gap. */
    sonde_ns_t longest = (sonde_ns_t)(2e9 / opts->rate_hz);
    if (wall > longest) wall = longest;
    t->last_tick_ns = now;

    sonde_mem_snapshot_begin(&t->proc.mem);
    int n = sonde_threadlist_read(list, &t->proc, &t->acc.partial);
    sonde_mem_snapshot_end(&t->proc.mem);
    if (n < 0) {
        if (n == -ESRCH || target_gone(t)) {
            t->exited = true;
            return -ESRCH;
        }
        t->acc.partial.failed_reads++;
        t->fail_streak++;
        return 0;
    }
    t->fail_streak = 0;
    /* Every thread, the main one first, for as long as the tick's budget
     * lasts; the threads left out keep their entries (the next tick
     * starts with them). */
    sonde_ns_t started = sonde_prim_monotonic_ns();
    sonde_ns_t budget = sonde_sample_tick_budget((sonde_ns_t)(1e9 / opts->rate_hz));
    size_t k = 0;
    for (; k < list->n; k++) {
        if (k > 0 && sonde_prim_monotonic_ns() - started > budget) break;
        target_thread_tick(t, opts, sonde_threadlist_nth(list, k), wall, baseline, watch_until);
    }
    for (size_t rest = k; rest < list->n; rest++) {
        const sonde_pythread_t *pt = sonde_threadlist_nth(list, rest);
        sonde_threadreg_touch(&t->threads, pt->tstate, pt->native_tid);
    }
    /* (The baseline tick takes no samples: nothing of it is left out.) */
    sonde_partial_t ignored = {0};
    sonde_threadlist_tick_end(list, k, baseline ? &ignored : &t->acc.partial);
    sonde_threadreg_sweep(&t->threads);
    if (!baseline) t->ticks++;
    return 0;
}
