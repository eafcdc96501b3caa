/* attach_period.c — `sonde attach PID --period S`: one profile per period.
 *
 * Owns: the loop that samples one period at a time (the attach sampler
 * returns at the period's end, src/attach/sampler.c), renders the
 * period's profile in the chosen format and hands the bytes to period.c
 * (the period directory and the upload backlog of src/fleet/, the
 * closing line). The accumulators are emptied between periods with
 * their memory kept, so memory stays what the busiest period needed. The
 * stop flag (attach.c's SIGINT/SIGTERM/SIGHUP handler) ends the current
 * period early: that partial period is written and sent like the others.
 * Runs on the command's main thread; the upload runs on fleet.c's thread.
 */
#include "attach_cli.h"
#include "period.h"

#include "../prim/prim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Unix time in nanoseconds. */
static uint64_t period_unix_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * SONDE_NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

int sonde_attach_cli_periods(sonde_attach_t *a, const sonde_attach_args_t *args,
                             volatile sig_atomic_t *stop)
{
    const sonde_period_args_t *p = &args->period;
    sonde_cli_period_t run;
    sonde_buf_t body = SONDE_BUF_INIT;
    int status = 1, rc = 0;
    if (sonde_cli_period_open(&run, p, args->format, a->opts.rate_hz)) return 1;

    sonde_ns_t period_ns = (sonde_ns_t)(p->period_sec * 1e9);
    for (;;) {
        sonde_ns_t mono = sonde_prim_monotonic_ns();
        uint64_t from_ns = period_unix_ns();
        sonde_attach_period_begin(a, mono, mono + period_ns);
        rc = sonde_attach_run(a, stop, sonde_attach_cli_progress, NULL);
        uint64_t until_ns = period_unix_ns();
        if (rc < 0) break;
        sonde_buf_reset(&body);
        rc = sonde_attach_cli_render(a, args->format, &body);
        if (rc < 0)
            sonde_cli_error("cannot build the period's profile: %s", strerror(-rc));
        else
            (void)sonde_cli_period_submit(&run, body.data, body.len, from_ns, until_ns);
        rc = 0;                        /* the next period may fare better (a full disk) */
        if (!a->period_reached) break; /* stopped, duration, the process ended */
    }
    sonde_attach_cli_progress_end();
    if (a->all_exited)
        fprintf(stderr, "sonde: pid %d exited; its last period is kept\n", (int)args->pid);
    if (rc < 0)
        sonde_cli_error("sampling failed: %s", strerror(-rc));
    else
        status = 0;
    char whose[32];
    snprintf(whose, sizeof whose, "pid %d", (int)args->pid);
    if (stop) *stop = 0; /* the signal that ended sampling: a second one cancels the drain */
    if (sonde_cli_period_close(&run, whose, stop, 0)) status = 1;
    sonde_buf_free(&body);
    return status;
}
