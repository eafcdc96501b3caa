/* stalls.c — benchmark-only: how often a running thread stands still
 * while its CPU clock runs (the machine, not sonde).
 *
 * Owns: nothing of sonde. One thread spins, adding to a counter; the main
 * thread, on another CPU, wakes every millisecond (as sonde's sampler does)
 * and watches the counter and the spinner's CPU clock until the counter
 * moves. A watch in which the spinner's clock ran >= 20 us while the
 * counter stood still is a stall: on a virtual machine the host stopped
 * the spinner's virtual CPU and the guest charged it the time. The ratio
 * of stalls to watches, against the share of all time spent stalled,
 * says whether stalls follow the watcher's wake-ups (src/ext/sampler.c,
 * sampler_stays_native, confirms its native proofs because they do).
 *
 * Usage: stalls [SECONDS]   (pins to CPUs 0 and 1; prints one line)
 * Build: cc -O2 -pthread bench/stalls.c -o stalls
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long stalls_counter;
static atomic_int stalls_stop;

static void *stalls_spin(void *arg)
{
    (void)arg;
    while (!atomic_load_explicit(&stalls_stop, memory_order_relaxed))
        stalls_counter++;
    return NULL;
}

static unsigned long long stalls_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 5.0;
    pthread_t spinner;
    pthread_attr_t attr;
    cpu_set_t set;
    clockid_t clock;
    pthread_attr_init(&attr);
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    pthread_attr_setaffinity_np(&attr, sizeof set, &set);
    if (pthread_create(&spinner, &attr, stalls_spin, NULL) != 0 ||
        pthread_getcpuclockid(spinner, &clock) != 0) {
        fprintf(stderr, "stalls: cannot start the spinning thread\n");
        return 1;
    }
    CPU_ZERO(&set);
    CPU_SET(1, &set);
    sched_setaffinity(0, sizeof set, &set);

    unsigned long long end = stalls_ns(CLOCK_MONOTONIC) + (unsigned long long)(seconds * 1e9);
    unsigned long long start = stalls_ns(CLOCK_MONOTONIC), stalled = 0, worst = 0;
    long watches = 0, stalls = 0;
    while (stalls_ns(CLOCK_MONOTONIC) < end) {
        unsigned long seen = stalls_counter;
        unsigned long long cpu0 = stalls_ns(clock), wall0 = stalls_ns(CLOCK_MONOTONIC);
        unsigned long long cpu = cpu0;
        while (stalls_counter == seen && stalls_ns(CLOCK_MONOTONIC) - wall0 < 5000000)
            cpu = stalls_ns(clock);
        watches++;
        if (cpu - cpu0 >= 20000) {
            stalls++;
            stalled += cpu - cpu0;
            if (cpu - cpu0 > worst) worst = cpu - cpu0;
        }
        struct timespec nap = {0, 1000000};
        nanosleep(&nap, NULL);
    }
    double elapsed = (double)(stalls_ns(CLOCK_MONOTONIC) - start);
    atomic_store(&stalls_stop, 1);
    pthread_join(spinner, NULL);
    printf("watches %ld, stalls >= 20 us %ld (%.2f %%), time stalled %.3f %%, worst %llu us\n",
           watches, stalls, 100.0 * (double)stalls / (double)(watches ? watches : 1),
           100.0 * (double)stalled / elapsed, worst / 1000);
    return 0;
}
