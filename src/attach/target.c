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
 *     the nearest line of the
 *     program's own files on its stack, as native time when the innermost
 *     frame is on a call instruction (the thread is in C code), else as
 *     Python time;
 *   - a thread blocked in a system call other than a futex wait (sleep,
 *     I/O, poll) is charged the interval as system time; a futex wait (a
 *     lock, a join, the GIL) is not charged;
 *   - the stack itself is recorded (for flame graphs) when the thread is
 *     running, or always with --idle.
 * A thread that is blocked and has used no CPU since the previous tick
 * cannot have moved: its previous stack is reused without reading the
 * target. Walks read through a page snapshot (sonde_mem_snapshot_begin),
 * so a deep stack costs a few system calls. Everything read from the
 * target is bounded by src/pyread/; nothing here runs in a signal handler.
 */
#include "attach.h"

#include "../core/pathrule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sonde_athread {
    uint64_t tstate;
    pid_t listed_tid;       /* the tid the thread state gave (identity) */
    pid_t tid;              /* kernel tid, 0 when unknown */
    bool tid_seen;          /* the kernel knew tid at least once */
    uint32_t slot;          /* thread slot (names the thread in stacks) */
    bool seen;              /* present in the latest tick */
    sonde_prim_task_t os;   /* the kernel's view */
    bool have_times;        /* last_cpu_ns is valid */
    sonde_ns_t last_cpu_ns; /* schedstat CPU time at the previous tick */
    bool wait_known;        /* last_wait was read at last_cpu_ns */
    sonde_thread_wait_t last_wait;
    sonde_aframe_t *stack;   /* owned; last stack read, innermost first */
    sonde_ns_t stack_cpu_ns; /* CPU time when it was read (schedstat) */
    uint32_t depth, cap;
    bool have_stack;
    bool in_call;            /* innermost frame on a call instruction */
    sonde_aframe_t line_key; /* nearest line of the program's files, 0 none */
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
        char *copy = sonde_path_dir_prefix(dir);
        if (!copy) return -ENOMEM;
        t->lib_prefixes[t->n_lib_prefixes++] = copy;
    }
    return 0;
}

int sonde_atarget_open(sonde_atarget_t *t, pid_t pid)
{
    memset(t, 0, sizeof *t);
    t->pid = pid;
    sonde_accum_init(&t->acc);
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
    t->walk = malloc(SONDE_PY_MAX_DEPTH * sizeof *t->walk);
    if (!t->walk || (rc = target_lib_prefixes(t)) < 0) {
        sonde_atarget_free(t);
        return -ENOMEM;
    }
    return 0;
}

void sonde_atarget_free(sonde_atarget_t *t)
{
    for (size_t i = 0; i < t->n_threads; i++) {
        sonde_prim_task_close(&t->threads[i].os);
        free(t->threads[i].stack);
    }
    free(t->threads);
    free(t->slot_tids);
    free(t->walk);
    free(t->cmdline);
    free(t->code_program);
    for (int i = 0; i < t->n_lib_prefixes; i++)
        free(t->lib_prefixes[i]);
    sonde_accum_free(&t->acc);
    sonde_pyproc_close(&t->proc);
    t->threads = NULL;
    t->slot_tids = NULL;
    t->walk = NULL;
    t->cmdline = NULL;
    t->code_program = NULL;
    t->n_threads = t->n_slots = t->n_lib_prefixes = 0;
}

/* ---- files --------------------------------------------------------------------- */

bool sonde_atarget_code_is_program(sonde_atarget_t *t, uint32_t code_id)
{
    if (code_id >= t->code_program_cap) {
        size_t cap = t->code_program_cap ? t->code_program_cap : 256;
        while (cap <= code_id)
            cap *= 2;
        int8_t *grown = realloc(t->code_program, cap);
        if (!grown) return false;
        memset(grown + t->code_program_cap, -1, cap - t->code_program_cap);
        t->code_program = grown;
        t->code_program_cap = cap;
    }
    if (t->code_program[code_id] < 0) {
        const sonde_pycode_t *code = sonde_pyproc_code(&t->proc, code_id);
        const char *file = code ? code->filename : NULL;
        t->code_program[code_id] =
            !sonde_path_is_pseudo(file) &&
            !sonde_path_has_prefix(file, t->lib_prefixes, t->n_lib_prefixes) &&
            !sonde_path_in_site_dir(file);
    }
    return t->code_program[code_id] == 1;
}

const char *sonde_atarget_path(const sonde_atarget_t *t, const char *filename, char *buf,
                               size_t len)
{
    if (!filename) filename = "";
    if (filename[0] != '/' && filename[0] != '<' && filename[0] && t->cwd[0])
        snprintf(buf, len, "%s/%s", t->cwd, filename);
    else
        snprintf(buf, len, "%s", filename);
    return buf;
}

/* ---- threads ------------------------------------------------------------------- */

static uint32_t target_slot(sonde_atarget_t *t, pid_t tid)
{
    for (size_t i = 0; i < t->n_slots; i++)
        if (t->slot_tids[i] == tid) return (uint32_t)i;
    if (t->n_slots == t->cap_slots) {
        size_t cap = t->cap_slots ? t->cap_slots * 2 : 16;
        pid_t *grown = realloc(t->slot_tids, cap * sizeof *grown);
        if (!grown) return 0; /* shares slot 0's name rather than fail */
        t->slot_tids = grown;
        t->cap_slots = cap;
    }
    t->slot_tids[t->n_slots] = tid;
    return (uint32_t)t->n_slots++;
}

static struct sonde_athread *target_thread(sonde_atarget_t *t, const sonde_pythread_t *pt)
{
    for (size_t i = 0; i < t->n_threads; i++) {
        struct sonde_athread *th = &t->threads[i];
        if (th->tstate == pt->tstate && th->listed_tid == pt->native_tid) return th;
    }
    if (t->n_threads == t->cap_threads) {
        size_t cap = t->cap_threads ? t->cap_threads * 2 : 16;
        struct sonde_athread *grown = realloc(t->threads, cap * sizeof *grown);
        if (!grown) return NULL;
        t->threads = grown;
        t->cap_threads = cap;
    }
    struct sonde_athread *th = &t->threads[t->n_threads++];
    memset(th, 0, sizeof *th);
    th->tstate = pt->tstate;
    th->listed_tid = pt->native_tid;
    th->tid = pt->native_tid;
    th->slot = target_slot(t, pt->native_tid);
    sonde_prim_task_init(&th->os, t->pid, pt->native_tid);
    return th;
}

static void target_sweep(sonde_atarget_t *t)
{
    size_t k = 0;
    for (size_t i = 0; i < t->n_threads; i++) {
        struct sonde_athread *th = &t->threads[i];
        if (!th->seen) {
            sonde_prim_task_close(&th->os);
            free(th->stack);
            continue;
        }
        th->seen = false;
        t->threads[k++] = *th;
    }
    t->n_threads = k;
}

/* Reads a thread's stack into th (innermost first) and finds the nearest
 * line of the program's files. Returns 0 or -errno (nothing kept). */
static int target_walk(sonde_atarget_t *t, struct sonde_athread *th)
{
    sonde_pyframe_iter_t it;
    sonde_pyframe_t frame;
    uint32_t depth = 0;
    bool in_call = false;

    th->have_stack = false;
    sonde_mem_snapshot_begin(&t->proc.mem);
    int rc = sonde_pyframe_iter_begin(&t->proc, th->tstate, &it);
    while (rc == 0 && (rc = sonde_pyframe_iter_next(&it, &frame)) == 1) {
        if (depth == 0) in_call = frame.in_call;
        if (depth < SONDE_PY_MAX_DEPTH)
            t->walk[depth++] = sonde_aframe(frame.code_id, frame.lineno);
        rc = 0;
    }
    sonde_mem_snapshot_end(&t->proc.mem);
    if (rc < 0) return rc;
    if (depth > th->cap) {
        sonde_aframe_t *grown = realloc(th->stack, depth * sizeof *grown);
        if (!grown) return -ENOMEM;
        th->stack = grown;
        th->cap = depth;
    }
    if (depth) memcpy(th->stack, t->walk, depth * sizeof *t->walk);
    th->depth = depth;
    th->in_call = in_call;
    th->line_key = 0;
    for (uint32_t i = 0; i < depth; i++) {
        sonde_aframe_t f = t->walk[i];
        if (sonde_aframe_line(f) > 0 && sonde_atarget_code_is_program(t, sonde_aframe_code(f))) {
            th->line_key = f;
            break;
        }
    }
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

/* One thread's share of a tick. Threads filtered out (--gil) still have
 * their state read, so that what is known of them stays current. */
static void target_thread_tick(sonde_atarget_t *t, const sonde_attach_opts_t *opts,
                               const sonde_pythread_t *pt, sonde_ns_t wall, bool baseline)
{
    struct target_os_view view;
    struct sonde_athread *th = target_thread(t, pt);
    if (!th) return;
    th->seen = true;
    if (target_os_view(th, pt, wall, &view) < 0) return; /* the thread ended */
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
        if (target_walk(t, th) < 0) {
            t->errors++;
            return;
        }
        th->stack_cpu_ns = view.cpu_ns;
    }
    if (need_line) {
        sonde_ns_t native_ns = th->in_call ? view.run_ns : 0;
        sonde_ns_t python_ns = view.run_ns - native_ns;
        sonde_ns_t system_ns = charge_system ? view.blocked_ns : 0;
        if (!th->line_key ||
            sonde_accum_add_line(&t->acc, th->line_key, python_ns, native_ns, system_ns) < 0)
            t->acc.unattributed_ns += python_ns + native_ns + system_ns;
    }
    if (keep_stack && th->depth > 0 &&
        sonde_accum_add_stack(&t->acc, th->slot, th->stack, th->depth, 1, wall) < 0)
        t->errors++;
}

/* Whether the process has exited (gone, or a zombie waiting to be reaped). */
static bool target_gone(const sonde_atarget_t *t)
{
    char state = 0;
    int rc = sonde_prim_proc_state(t->pid, &state, NULL);
    return rc == -ESRCH || (rc == 0 && (state == 'Z' || state == 'X'));
}

int sonde_atarget_tick(sonde_atarget_t *t, const sonde_attach_opts_t *opts, sonde_ns_t now)
{
    sonde_pythread_t threads[SONDE_ATTACH_MAX_THREADS];
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
    int n = sonde_pyproc_threads(&t->proc, threads, SONDE_ATTACH_MAX_THREADS);
    sonde_mem_snapshot_end(&t->proc.mem);
    if (n < 0) {
        if (n == -ESRCH || target_gone(t)) {
            t->exited = true;
            return -ESRCH;
        }
        t->errors++;
        t->fail_streak++;
        return 0;
    }
    t->fail_streak = 0;
    for (int i = 0; i < n; i++)
        target_thread_tick(t, opts, &threads[i], wall, baseline);
    target_sweep(t);
    if (!baseline) t->ticks++;
    return 0;
}
