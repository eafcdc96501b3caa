/* dump.c — `sonde dump PID`: every Python thread's stack, once, as text.
 *
 * Owns: sonde_attach_dump. Called by the CLI. Reads the target once, the
 * way py-spy's dump reads: a header naming the process and its Python,
 * then per thread (the main thread first, the others by kernel thread id;
 * all of them, however many, unless reading them takes longer than
 * DUMP_BUDGET_NS: the rest are then counted in a last line)
 *     Thread 1234 (idle, in clock_nanosleep): "MainThread"
 *         sleeper (/srv/app.py:10)
 *         <module> (/srv/app.py:20)
 * with the innermost frame first; a stack deeper than the sampling core's
 * limit shows "<N frames left out>" between its innermost and outermost
 * frames (dump reads a stack to its root, up to SONDE_PY_MAX_DEPTH frames,
 * where a sample's walk stops at SONDE_WALK_MAX_READ). The state comes from the kernel
 * (src/prim/remote.c: "active" when running or runnable, "idle" when
 * blocked, with the system call when known) plus "+gil" for the thread
 * holding the GIL. The target is not stopped: a stack that changes while it
 * is read is read again (a few times). Strings from the target are printed
 * as they are (UTF-8), control characters replaced. Never in a signal
 * handler.
 */
#include "attach.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DUMP_RETRIES 3                         /* walks of a stack that keeps changing */
#define DUMP_BUDGET_NS (10 * SONDE_NS_PER_SEC) /* then the other threads are left out */

/* Appends s with control characters (a newline in a file name) as '?'. */
static void dump_puts_clean(sonde_buf_t *out, const char *s)
{
    for (; s && *s; s++)
        sonde_buf_putc(out, (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s);
}

static void dump_header(const sonde_atarget_t *t, sonde_buf_t *out)
{
    sonde_buf_printf(out, "Process %d:", (int)t->pid);
    for (size_t at = 0; t->cmdline && at < t->cmdline_len;) {
        const char *word = t->cmdline + at;
        size_t n = strnlen(word, t->cmdline_len - at);
        sonde_buf_putc(out, ' ');
        dump_puts_clean(out, word);
        at += n + 1;
    }
    sonde_buf_printf(out, "\nPython %d.%d.%d", t->proc.version_major, t->proc.version_minor,
                     t->proc.version_micro);
    if (t->exe[0]) {
        sonde_buf_puts(out, " (");
        dump_puts_clean(out, t->exe);
        sonde_buf_putc(out, ')');
    }
    sonde_buf_puts(out, "\n");
}

/* "active", "idle, in read", ... for a thread. */
static void dump_state(const sonde_atarget_t *t, const sonde_pythread_t *pt, sonde_buf_t *out)
{
    char state = 0;
    long nr = -1;
    sonde_thread_wait_t wait = SONDE_WAIT_UNKNOWN;
    sonde_prim_task_t task;

    if (pt->native_tid <= 0) {
        sonde_buf_puts(out, pt->holds_gil ? "active+gil" : "idle");
        return;
    }
    sonde_prim_task_init(&task, t->pid, pt->native_tid);
    if (sonde_prim_task_state(&task, &state) != 0) state = '?';
    if (state == 'S') wait = sonde_prim_task_wait(&task, &nr);
    sonde_prim_task_close(&task);
    if (state == 'R' || wait == SONDE_WAIT_RUNNING)
        sonde_buf_puts(out, "active");
    else if (state == 'T' || state == 't')
        sonde_buf_puts(out, "stopped");
    else
        sonde_buf_puts(out, "idle");
    if (pt->holds_gil) sonde_buf_puts(out, "+gil");
    const char *name = nr >= 0 ? sonde_prim_syscall_name(nr) : NULL;
    if (state == 'D')
        sonde_buf_puts(out, ", in uninterruptible wait");
    else if (name)
        sonde_buf_printf(out, ", in %s", name);
    else if (nr >= 0)
        sonde_buf_printf(out, ", in system call %ld", nr);
}

/* Reads one stack (innermost first, cut to the depth limit with its
 * marker) into t->walk; returns the depth or -errno. */
static int dump_walk(sonde_atarget_t *t, uint64_t tstate)
{
    sonde_walk_t walk = {.frames = t->walk, .max_read = SONDE_PY_MAX_DEPTH};
    sonde_mem_snapshot_begin(&t->proc.mem);
    int rc = sonde_walk_thread(&walk, &t->proc, tstate, &t->codes, &t->filter);
    sonde_mem_snapshot_end(&t->proc.mem);
    return rc < 0 ? rc : (int)walk.depth;
}

static void dump_thread(sonde_atarget_t *t, const sonde_pythread_t *pt, sonde_buf_t *out)
{
    if (pt->native_tid > 0)
        sonde_buf_printf(out, "\nThread %d (", (int)pt->native_tid);
    else
        sonde_buf_printf(out, "\nThread 0x%llx (", (unsigned long long)pt->pthread_id);
    dump_state(t, pt, out);
    sonde_buf_puts(out, pt->native_tid == t->pid ? "): \"MainThread\"\n" : ")\n");

    int depth = -1;
    for (int attempt = 0; attempt < DUMP_RETRIES && depth < 0; attempt++)
        depth = dump_walk(t, pt->tstate);
    if (depth < 0) {
        sonde_buf_puts(out, "    (stack unreadable: it changed while being read)\n");
        return;
    }
    if (depth == 0) sonde_buf_puts(out, "    (no Python frames)\n");
    for (int i = 0; i < depth; i++) {
        char path[8192];
        if (sonde_aframe_is_marker(t->walk[i])) {
            sonde_buf_printf(
                out, "    %s\n",
                sonde_stack_marker_name(sonde_aframe_marker_count(t->walk[i]), path, sizeof path));
            continue;
        }
        const sonde_pycode_t *code = sonde_pyproc_code(&t->proc, sonde_aframe_code(t->walk[i]));
        int line = sonde_aframe_line(t->walk[i]);
        sonde_buf_puts(out, "    ");
        dump_puts_clean(out, code && code->name ? code->name : "<unknown>");
        sonde_buf_puts(out, " (");
        dump_puts_clean(out, sonde_atarget_path(t, code ? code->filename : "", path, sizeof path));
        if (line > 0)
            sonde_buf_printf(out, ":%d)\n", line);
        else
            sonde_buf_puts(out, ":?)\n");
    }
}

static int dump_by_tid(const void *a, const void *b)
{
    const sonde_pythread_t *x = a, *y = b;
    unsigned tx = x->native_tid > 0 ? (unsigned)x->native_tid : ~0u;
    unsigned ty = y->native_tid > 0 ? (unsigned)y->native_tid : ~0u;
    return tx < ty ? -1 : tx > ty;
}

int sonde_attach_dump(pid_t pid, sonde_buf_t *out, char *version, size_t version_len)
{
    sonde_atarget_t t;
    sonde_threadlist_t list;
    sonde_partial_t partial = {0};
    sonde_threadlist_init(&list);
    int rc = sonde_atarget_open(&t, pid);
    if (version_len) version[0] = 0;
    if (rc != 0) {
        if (rc == -ENOTSUP && t.proc.version_major && version_len)
            snprintf(version, version_len, "%d.%d.%d", t.proc.version_major, t.proc.version_minor,
                     t.proc.version_micro);
        sonde_atarget_free(&t);
        return rc;
    }
    dump_header(&t, out);
    sonde_mem_snapshot_begin(&t.proc.mem);
    int n = sonde_threadlist_read(&list, &t.proc, &partial);
    sonde_mem_snapshot_end(&t.proc.mem);
    if (n < 0) {
        rc = n;
        goto done;
    }
    if (n == 0)
        sonde_buf_puts(out, "\n(no Python threads: the interpreter is starting or exiting)\n");
    /* The main thread first, then the others in the order of their kernel
     * tids, until DUMP_BUDGET_NS has passed; the threads left out are
     * counted. */
    if (list.n > 1) qsort(list.threads + 1, list.n - 1, sizeof *list.threads, dump_by_tid);
    sonde_ns_t started = sonde_prim_monotonic_ns();
    size_t shown = 0;
    for (; shown < list.n; shown++) {
        if (shown > 0 && sonde_prim_monotonic_ns() - started > DUMP_BUDGET_NS) break;
        dump_thread(&t, &list.threads[shown], out);
    }
    sonde_threadlist_tick_end(&list, shown, &partial);
    if (partial.threads_left_out)
        sonde_buf_printf(out, "\n(%llu more thread%s left out)\n",
                         (unsigned long long)partial.threads_left_out,
                         partial.threads_left_out == 1 ? "" : "s");
    rc = sonde_buf_error(out);
done:
    sonde_threadlist_free(&list);
    sonde_atarget_free(&t);
    return rc;
}
