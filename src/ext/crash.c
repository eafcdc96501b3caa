/* crash.c — a profiled program killed by a fatal signal still says so.
 *
 * Owns: the handlers of SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT that a
 * `sonde run` session installs where the disposition is the default (a
 * program's own handler, or faulthandler enabled at start, is left alone;
 * faulthandler enabled later chains to ours after its traceback). On the
 * signal, the handler puts the default disposition back, asks the sampler
 * thread to write the report (the SIGTERM path of session.c: no Python
 * API), waits for it at most CRASH_WAIT_NS (a heap corrupted under
 * malloc's lock would hang the sampler: the wait is what bounds it),
 * writes one `sonde:` line, and lets the signal end the process as it
 * would have: a fault returns to the faulting instruction, which faults
 * again with the default action (python's siginfo and core dump); a signal
 * sent (abort(), kill) is raised again, pending until the handler returns.
 *
 * crash_on_signal is a signal handler: async-signal-safe calls only; the
 * rest runs with the GIL from session.c, or on the sampler thread
 * (sonde_crash_reported).
 */
#include "ext.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#define CRASH_WAIT_NS 2000000000ull /* the report's time, at most */
#define CRASH_POLL_NS 1000000L

static const struct {
    int sig;
    const char *name;
} crash_signals[] = {{SIGSEGV, "SIGSEGV"},
                     {SIGBUS, "SIGBUS"},
                     {SIGILL, "SIGILL"},
                     {SIGFPE, "SIGFPE"},
                     {SIGABRT, "SIGABRT"}};
#define CRASH_N (sizeof crash_signals / sizeof *crash_signals)

static struct {
    bool installed[CRASH_N];
    struct sigaction old[CRASH_N];
    sonde_sampler_t *sampler; /* borrowed: the session's, while installed */
    pid_t pid;                /* the process the handlers are for */
} crash;
static volatile sig_atomic_t crash_sig;           /* the signal being handled; 0 none */
static atomic_int crash_done;                     /* the sampler thread wrote the report */
static atomic_flag crash_busy = ATOMIC_FLAG_INIT; /* one crash at a time */

/* Appends text to line (async-signal-safe). */
static size_t crash_append(char *line, size_t used, size_t size, const char *text)
{
    while (*text && used + 1 < size)
        line[used++] = *text++;
    line[used] = 0;
    return used;
}

static void crash_on_signal(int sig, siginfo_t *info, void *uctx)
{
    (void)uctx;
    int saved = errno;
    const char *name = "a fatal signal";
    size_t k;
    for (k = 0; k < CRASH_N; k++)
        if (crash_signals[k].sig == sig) {
            name = crash_signals[k].name;
            break;
        }
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    bool reported = false;
    sonde_sampler_t *sampler = crash.sampler;
    if (getpid() == crash.pid && sampler && sampler->thread_started &&
        !pthread_equal(pthread_self(), sampler->thread) && !atomic_flag_test_and_set(&crash_busy)) {
        crash_sig = sig;
        sonde_sampler_signal_terminate(sampler);
        for (sonde_ns_t waited = 0; waited < CRASH_WAIT_NS; waited += CRASH_POLL_NS) {
            if (atomic_load(&crash_done)) {
                reported = true;
                break;
            }
            struct timespec tick = {0, CRASH_POLL_NS};
            nanosleep(&tick, NULL);
        }
    }
    if (sonde_prim_fd_is_open(STDERR_FILENO)) {
        char line[256];
        size_t n = crash_append(line, 0, sizeof line, "sonde: the program was killed by ");
        n = crash_append(line, n, sizeof line, name);
        n = crash_append(line, n, sizeof line,
                         reported ? "; the report is of what was sampled until then\n"
                                  : "; no report (sonde could not write it in time)\n");
        (void)!write(STDERR_FILENO, line, n);
    }
    /* a fault comes back at its instruction; a sent signal is sent again */
    if (!info || info->si_code <= 0 || sig == SIGABRT) raise(sig);
    errno = saved;
}

void sonde_crash_install(sonde_sampler_t *sampler)
{
    crash.sampler = sampler;
    crash.pid = getpid();
    crash_sig = 0;
    atomic_store(&crash_done, 0);
    atomic_flag_clear(&crash_busy);
    for (size_t k = 0; k < CRASH_N; k++) {
        struct sigaction old, act;
        crash.installed[k] = false;
        if (sigaction(crash_signals[k].sig, NULL, &old) != 0) continue;
        if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) continue; /* theirs */
        memset(&act, 0, sizeof act);
        act.sa_sigaction = crash_on_signal;
        act.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&act.sa_mask);
        if (sigaction(crash_signals[k].sig, &act, NULL) == 0) {
            crash.installed[k] = true;
            crash.old[k] = old;
        }
    }
}

void sonde_crash_remove(void)
{
    for (size_t k = 0; k < CRASH_N; k++) {
        struct sigaction cur;
        if (!crash.installed[k]) continue;
        crash.installed[k] = false;
        if (sigaction(crash_signals[k].sig, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
            cur.sa_sigaction == crash_on_signal)
            sigaction(crash_signals[k].sig, &crash.old[k], NULL);
    }
    crash.sampler = NULL;
}

int sonde_crash_signal(void)
{
    return crash_sig;
}

const char *sonde_crash_signal_name(void)
{
    for (size_t k = 0; k < CRASH_N; k++)
        if (crash_signals[k].sig == crash_sig) return crash_signals[k].name;
    return "";
}

void sonde_crash_reported(void)
{
    atomic_store(&crash_done, 1);
}
