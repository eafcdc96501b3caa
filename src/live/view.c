/* view.c — the live view's state, shared by the producer and the screen.
 *
 * Owns: sonde_live_t (live_internal.h): the last interval's profile and the
 * cumulated one (protected by lock), the quit request, the ending line;
 * the plain table written per interval when standard output is no
 * terminal. Called by the commands (src/cli/top.c, run_live.c) on their
 * main thread; the screen (screen.c) reads the profiles under the lock on
 * its own thread. No signal context.
 */
#include "live_internal.h"

#include "../prim/file.h"
#include "../prim/prim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define VIEW_PLAIN_LINES 20 /* rows of the plain line table */
#define VIEW_PLAIN_FUNCS 10 /* rows of the plain function table */
#define VIEW_PLAIN_WIDTH 160

int sonde_live_open(sonde_live_t **out, const sonde_live_opts_t *opts)
{
    sonde_live_t *v = calloc(1, sizeof *v);
    if (!v) return -ENOMEM;
    v->opts = *opts;
    v->title = strdup(opts->title ? opts->title : "");
    v->quit_say = strdup(opts->quit_say ? opts->quit_say : "quit");
    v->quit_line = opts->quit_line ? strdup(opts->quit_line) : NULL;
    if (!v->title || !v->quit_say || (opts->quit_line && !v->quit_line)) {
        free(v->title);
        free(v->quit_say);
        free(v->quit_line);
        free(v);
        return -ENOMEM;
    }
    v->opts.title = v->title;
    v->opts.quit_say = v->quit_say;
    v->opts.quit_line = v->quit_line;
    sonde_profile_init(&v->now);
    sonde_profile_init(&v->all);
    pthread_mutex_init(&v->lock, NULL);
    if (!opts->plain) {
        int rc = sonde__live_screen_start(v);
        if (rc < 0) {
            sonde_live_free(v);
            return rc;
        }
    }
    *out = v;
    return 0;
}

/* The plain tables of one interval, written to the view's descriptor. */
static int view_plain(sonde_live_t *v)
{
    sonde_buf_t out = SONDE_BUF_INIT;
    sonde_live_query_t q = {SONDE_LIVE_LINES, -1, false, SONDE_LIVE_COL_NOW};
    int rc = sonde_live_rows_build(&v->plain_rows, &v->now, &v->all, &q);
    if (rc == 0) {
        sonde_live_format_plain(&out, v->title, v->from_sec, v->to_sec, &v->plain_rows, &q,
                                VIEW_PLAIN_LINES, VIEW_PLAIN_WIDTH);
        q.table = SONDE_LIVE_FUNCS;
        rc = sonde_live_rows_build(&v->plain_rows, &v->now, &v->all, &q);
    }
    if (rc == 0) {
        sonde_live_format_header(&out, &q, v->plain_rows.memory, VIEW_PLAIN_WIDTH);
        sonde_buf_putc(&out, '\n');
        for (size_t i = 0; i < v->plain_rows.n && i < VIEW_PLAIN_FUNCS; i++) {
            sonde_live_format_row(&out, &v->plain_rows, &v->plain_rows.rows[i], &q,
                                  v->plain_rows.memory, VIEW_PLAIN_WIDTH);
            sonde_buf_putc(&out, '\n');
        }
        sonde_buf_putc(&out, '\n');
        rc = sonde_buf_error(&out);
    }
    if (rc == 0) rc = sonde_write_fd(v->opts.fd, out.data, out.len);
    sonde_buf_free(&out);
    return rc;
}

int sonde_live_feed(sonde_live_t *v, sonde_profile_t *prof, double from_sec, double to_sec)
{
    pthread_mutex_lock(&v->lock);
    double elapsed = v->all.elapsed_sec + prof->elapsed_sec;
    /* the sum keeps no threads apart (its stacks merged): a server that
     * starts a thread per request would make it grow without end */
    size_t n_threads = prof->n_threads;
    prof->n_threads = 0;
    int rc = sonde_profile_merge(&v->all, prof);
    prof->n_threads = n_threads;
    v->all.elapsed_sec = elapsed;
    sonde_profile_free(&v->now);
    v->now = *prof;
    sonde_profile_init(prof);
    v->from_sec = from_sec;
    v->to_sec = to_sec;
    v->generation++;
    pthread_mutex_unlock(&v->lock);
    if (rc == 0 && v->opts.plain) rc = view_plain(v);
    return rc;
}

bool sonde_live_quit_asked(const sonde_live_t *v)
{
    return atomic_load_explicit(&v->quit, memory_order_acquire);
}

void sonde_live_ending(sonde_live_t *v, const char *why, double linger_sec)
{
    if (v->opts.plain) {
        sonde_buf_t out = SONDE_BUF_INIT;
        sonde_buf_printf(&out, "%s\n", why);
        if (!sonde_buf_error(&out)) (void)sonde_write_fd(v->opts.fd, out.data, out.len);
        sonde_buf_free(&out);
        return;
    }
    if (atomic_load_explicit(&v->closed, memory_order_acquire)) return; /* nobody watches */
    pthread_mutex_lock(&v->lock);
    snprintf(v->ending, sizeof v->ending, "%s", why);
    v->generation++;
    pthread_mutex_unlock(&v->lock);
    uint64_t keys = atomic_load_explicit(&v->keys, memory_order_acquire);
    sonde_ns_t until = sonde_prim_monotonic_ns() + (sonde_ns_t)(linger_sec * 1e9);
    while (sonde_prim_monotonic_ns() < until &&
           atomic_load_explicit(&v->keys, memory_order_acquire) == keys &&
           !atomic_load_explicit(&v->closed, memory_order_acquire)) {
        struct timespec nap = {0, 50000000L};
        nanosleep(&nap, NULL);
    }
}

void sonde_live_close(sonde_live_t *v)
{
    if (v && !v->opts.plain) sonde__live_screen_stop(v);
}

const sonde_profile_t *sonde_live_cumulated(const sonde_live_t *v)
{
    return &v->all;
}

void sonde_live_free(sonde_live_t *v)
{
    if (!v) return;
    sonde_live_close(v);
    sonde_profile_free(&v->now);
    sonde_profile_free(&v->all);
    sonde_live_rows_free(&v->plain_rows);
    pthread_mutex_destroy(&v->lock);
    free(v->title);
    free(v->quit_say);
    free(v->quit_line);
    free(v);
}
