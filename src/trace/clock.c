/* clock.c — the tracer's clock: invariant TSC or CLOCK_MONOTONIC.
 *
 * Owns: the choice of clock (once, at module init) and the conversion of
 * its ticks to seconds. Every call and return reads the clock twice per
 * call in all, so its cost is the floor of the tracer's overhead: rdtsc
 * costs about 10 ns here against 22 ns for clock_gettime(CLOCK_MONOTONIC)
 * (measured in a loop of 10^7 reads on the development machine; the
 * benchmark in bench/trace.py measures the whole tracer). The TSC is used
 * only when the CPU says it is invariant (CPUID 0x80000007 EDX bit 8:
 * constant rate, runs in every C-state), which also keeps it in step
 * across cores on such systems. Its rate is calibrated against
 * CLOCK_MONOTONIC from an anchor taken at init to the moment a report is
 * built. The reads themselves are inline in trace_internal.h and run in
 * the interpreter hooks; the functions here do not.
 */
#include "trace_internal.h"

#include <stdlib.h>
#include <string.h>
#if SONDE_TRACE_HAVE_TSC
#include <cpuid.h>
#endif

#define CLOCK_MIN_CALIBRATION_NS 20000000 /* 20 ms */

bool sonde_trace_clock_tsc;

static bool clock_ready;
static sonde_ticks_t clock_anchor_ticks;
static int64_t clock_anchor_ns;

static int64_t clock_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* True when CPUID reports an invariant TSC. */
static bool clock_tsc_invariant(void)
{
#if SONDE_TRACE_HAVE_TSC
    unsigned int eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid(0x80000000, &eax, &ebx, &ecx, &edx) || eax < 0x80000007) return false;
    if (!__get_cpuid(0x80000007, &eax, &ebx, &ecx, &edx)) return false;
    return (edx >> 8) & 1;
#else
    return false;
#endif
}

/* A (ticks, ns) pair read as close together as possible: the TSC read
 * between two monotonic reads, keeping the tightest of a few tries. */
static void clock_pair(sonde_ticks_t *ticks, int64_t *ns)
{
    int64_t best_gap = INT64_MAX;
    for (int i = 0; i < 5; i++) {
        int64_t a = clock_monotonic_ns();
        sonde_ticks_t t = sonde_trace_clock_now();
        int64_t b = clock_monotonic_ns();
        if (b - a < best_gap) {
            best_gap = b - a;
            *ticks = t;
            *ns = a + (b - a) / 2;
        }
    }
}

void sonde_trace_clock_init(void)
{
    if (clock_ready) return;
    const char *force = getenv("SONDE_TRACE_CLOCK");
    sonde_trace_clock_tsc = clock_tsc_invariant() && !(force && strcmp(force, "monotonic") == 0);
    clock_pair(&clock_anchor_ticks, &clock_anchor_ns);
    clock_ready = true;
}

double sonde_trace_clock_seconds_per_tick(void)
{
    if (!sonde_trace_clock_tsc) return 1e-9;
    sonde_ticks_t ticks = 0;
    int64_t ns = 0;
    clock_pair(&ticks, &ns);
    while (ns - clock_anchor_ns < CLOCK_MIN_CALIBRATION_NS) {
        struct timespec pause = {0, (long)(CLOCK_MIN_CALIBRATION_NS - (ns - clock_anchor_ns))};
        nanosleep(&pause, NULL);
        clock_pair(&ticks, &ns);
    }
    if (ticks <= clock_anchor_ticks) return 1e-9;
    return (double)(ns - clock_anchor_ns) * 1e-9 / (double)(ticks - clock_anchor_ticks);
}
