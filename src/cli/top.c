/* top.c — `sonde top PID`: the live view of a running process.
 *
 * Owns: the command's loop. It samples the process from outside (the
 * attach sampler, src/attach/, one period per refresh interval, stacks
 * kept per thread for the view's thread filter), hands each interval's
 * profile to the live view (src/live/), and ends on q (the process runs
 * on), Ctrl-C, SIGTERM or SIGHUP (attach.c's handler), --duration, or the
 * process's end (said on the screen, then on standard error). With -o the
 * cumulated profile is written there at the end. Runs on the command's
 * main thread; the screen has its own (src/live/screen.c), which sets the
 * same stop flag as the signal handler when q is pressed.
 */
#include "attach_cli.h"

#include "../live/live.h"
#include "../prim/prim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOP_TITLE_MAX 512
#define TOP_ENDING_LINGER_SEC 3.0 /* the ending line stays this long, or until a key */

static void top_help(sonde_buf_t *out)
{
    sonde_attach_help(SONDE_ATTACH_MODE_TOP, out);
}

/* "pid 4242: python3 app.py --port 8000" from the target's command line. */
static void top_title(const sonde_attach_t *a, pid_t pid, char *buf, size_t len)
{
    int n = snprintf(buf, len, "pid %d", (int)pid);
    if (a->n_targets == 0 || !a->targets[0]->cmdline || n < 0 || (size_t)n >= len) return;
    const sonde_atarget_t *t = a->targets[0];
    size_t at = (size_t)n;
    const char *sep = ": ";
    for (size_t i = 0; i < t->cmdline_len && at + 4 < len;) {
        const char *word = t->cmdline + i;
        size_t wlen = strnlen(word, t->cmdline_len - i);
        int w = snprintf(buf + at, len - at, "%s%.*s", sep, (int)wlen, word);
        if (w < 0) break;
        at += (size_t)w < len - at ? (size_t)w : len - at - 1;
        sep = " ";
        i += wlen + 1;
    }
}

/* Samples interval by interval into the view until something ends it.
 * Returns 0 or -errno (sampling failed). */
static int top_loop(sonde_attach_t *a, sonde_live_t *view, double refresh_sec,
                    volatile sig_atomic_t *stop)
{
    sonde_ns_t start = sonde_prim_monotonic_ns();
    sonde_ns_t period_ns = (sonde_ns_t)(refresh_sec * 1e9);
    int rc = 0;
    for (;;) {
        sonde_ns_t from = sonde_prim_monotonic_ns();
        sonde_attach_period_begin(a, from, from + period_ns);
        rc = sonde_attach_run(a, stop, NULL, NULL);
        sonde_ns_t until = sonde_prim_monotonic_ns();
        if (rc < 0) break;
        sonde_profile_t prof;
        sonde_profile_init(&prof);
        rc = sonde_attach_cli_profile(a, &prof);
        if (rc == 0) {
            prof.elapsed_sec = (double)(until - from) / 1e9;
            rc = sonde_live_feed(view, &prof, (double)(from - start) / 1e9,
                                 (double)(until - start) / 1e9);
        }
        sonde_profile_free(&prof);
        if (rc < 0) break;
        if (!a->period_reached) break; /* q, a signal, --duration, the process ended */
    }
    return rc;
}

int sonde_cli_top(int argc, char **argv)
{
    sonde_attach_args_t args;
    sonde_attach_t a;
    char err[512] = "";
    if (sonde_attach_args_parse(SONDE_ATTACH_MODE_TOP, argc, argv, &args, err, sizeof err) < 0) {
        sonde_attach_args_free(&args);
        sonde_cli_error("%s", err);
        return 2;
    }
    if (args.help) {
        sonde_attach_args_free(&args);
        return sonde_cli_help(top_help);
    }
    if (args.outfile) {
        int rc = sonde_check_output(args.outfile);
        if (rc < 0) {
            sonde_attach_args_free(&args);
            sonde_cli_error("cannot write %s: %s", args.outfile, strerror(-rc));
            return 2;
        }
    }
    sonde_prim_raise_fd_limit();
    /* the view shows one thread from its stacks: kept per thread, and
     * those of threads that are not running too (their system time) */
    args.opts.per_thread = true;
    args.opts.idle = true;
    sonde_attach_init(&a, &args.opts);
    int rc = sonde_attach_add_root(&a, args.pid);
    if (rc < 0) {
        sonde_attach_cli_open_error(args.pid, rc, a.root_error_version);
        sonde_attach_free(&a);
        sonde_attach_args_free(&args);
        return 1;
    }
    char title[TOP_TITLE_MAX];
    top_title(&a, args.pid, title, sizeof title);
    volatile sig_atomic_t *stop = sonde_attach_cli_signals_on();
    sonde_live_opts_t vopts = {.title = title,
                               .quit_say = "detach (the process runs on)",
                               .refresh_sec = args.refresh_sec,
                               .fd = 1,
                               .plain = !isatty(1),
                               .stop = stop};
    sonde_live_t *view = NULL;
    rc = sonde_live_open(&view, &vopts);
    if (rc < 0) {
        sonde_attach_cli_signals_off();
        sonde_cli_error("cannot draw on the terminal: %s", strerror(-rc));
        sonde_attach_free(&a);
        sonde_attach_args_free(&args);
        return 1;
    }
    sonde_ns_t start = sonde_prim_monotonic_ns();
    rc = top_loop(&a, view, args.refresh_sec, stop);
    bool quit = sonde_live_quit_asked(view);
    char ending[256];
    if (a.all_exited) {
        snprintf(ending, sizeof ending, "pid %d exited; the view ends (any key to leave now)",
                 (int)args.pid);
        sonde_live_ending(view, ending, TOP_ENDING_LINGER_SEC);
    }
    sonde_live_close(view);
    sonde_attach_cli_signals_off();
    double watched = (double)(sonde_prim_monotonic_ns() - start) / 1e9;
    int status = 0;
    if (rc < 0) {
        sonde_cli_error("sampling failed: %s", strerror(-rc));
        status = 1;
    } else if (a.all_exited) {
        fprintf(stderr, "sonde: pid %d exited after %.1f s of watching\n", (int)args.pid, watched);
    } else {
        fprintf(stderr, "sonde: %s pid %d after %.1f s; it runs on\n",
                quit ? "left" : "stopped watching", (int)args.pid, watched);
    }
    if (args.outfile && status == 0) {
        status = sonde_attach_cli_write_profile(sonde_live_cumulated(view), args.format,
                                                args.outfile, 1);
        if (status == 0)
            fprintf(stderr, "sonde: %s written to %s\n", args.format->name, args.outfile);
    }
    sonde_live_free(view);
    sonde_attach_free(&a);
    sonde_attach_args_free(&args);
    return status;
}
