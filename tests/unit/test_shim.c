/* test_shim.c — unit tests of the allocator shim (src/shim/) on its own.
 *
 * The program runs itself again with the shim preloaded (LD_PRELOAD, as
 * `sonde run --memory` does), finds its entry points by name as the
 * extension does, and plays the extension's part with a callback that
 * records events. Checks: the exports are the hooked names and
 * sonde_shim_* only; nothing is reported before start or after stop; one
 * large block is one sample of its exact size, for every allocation
 * function; small blocks add up to their total within one threshold; frees
 * come back as negative samples; each thread's allocations are reported on
 * that thread; blocks allocated through a wrapped Python domain count as
 * Python memory; tracked blocks are reported when freed, with their site;
 * copies are counted; errno is kept; a forked child is inert; realloc of a
 * block handed out before the shim knew libc works.
 */
#include "shim/shim.h"

#include "check.h"

#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>

#define MIB (1024 * 1024)
#define THRESHOLD (4 * MIB)
#define MAX_EVENTS 65536

typedef struct recorded {
    sonde_shim_event_t event;
    pthread_t thread;
} recorded_t;

static recorded_t events[MAX_EVENTS];
static atomic_int n_events;
static atomic_ullong next_site = 1;

static uint64_t on_event(void *ctx, const sonde_shim_event_t *event)
{
    int i = atomic_fetch_add(&n_events, 1);
    if (i < MAX_EVENTS) {
        events[i].event = *event;
        events[i].thread = pthread_self();
    }
    /* Allocating here must be harmless (the guard sends it to libc). */
    void *scratch = malloc(100);
    free(scratch);
    return event->kind == SONDE_SHIM_EV_LEAK_TRACK ? atomic_fetch_add(&next_site, 1) : 0;
}

static sonde_shim_start_fn shim_start;
static sonde_shim_stop_fn shim_stop;
static sonde_shim_wrap_pyalloc_fn shim_wrap;

static void start(uint64_t leak_bytes, uint64_t copy_bytes)
{
    atomic_store(&n_events, 0);
    sonde_shim_config_t config = {
        .abi = SONDE_SHIM_ABI,
        .malloc_threshold = THRESHOLD,
        .leak_sample_bytes = leak_bytes,
        .copy_sample_bytes = copy_bytes,
        .footprint_baseline = 0,
        .on_event = on_event,
    };
    int rc = shim_start(&config);
    if (rc != 0) {
        printf("FAIL shim_start: %d\n", rc);
        exit(1);
    }
}

/* Sum of MEMORY event bytes (optionally on one thread), and counts. */
static int64_t memory_sum(int from, pthread_t *thread, int64_t *python, int *count)
{
    int64_t sum = 0, py = 0;
    int n = 0, end = atomic_load(&n_events);
    for (int i = from; i < end && i < MAX_EVENTS; i++) {
        if (events[i].event.kind != SONDE_SHIM_EV_MEMORY) continue;
        if (thread && !pthread_equal(*thread, events[i].thread)) continue;
        sum += events[i].event.bytes;
        py += (int64_t)events[i].event.python_bytes;
        n++;
    }
    if (python) *python = py;
    if (count) *count = n;
    return sum;
}

static int count_kind(int from, sonde_shim_event_kind_t kind)
{
    int n = 0, end = atomic_load(&n_events);
    for (int i = from; i < end && i < MAX_EVENTS; i++)
        n += events[i].event.kind == kind;
    return n;
}

/* ---- the checks ------------------------------------------------------------------ */

static void test_exports(const char *shim_path)
{
    char command[4400];
    snprintf(command, sizeof command, "nm -D --defined-only '%s'", shim_path);
    FILE *nm = popen(command, "r");
    char line[512], bad[2048] = "";
    int n = 0;
    static const char *const allowed[] = {"malloc",
                                          "calloc",
                                          "realloc",
                                          "reallocarray",
                                          "free",
                                          "posix_memalign",
                                          "aligned_alloc",
                                          "memalign",
                                          "valloc",
                                          "pvalloc",
                                          "malloc_usable_size",
                                          "memcpy",
                                          "memmove",
                                          "__memcpy_chk",
                                          "__memmove_chk"};
    while (nm && fgets(line, sizeof line, nm)) {
        char *name = strrchr(line, ' ');
        if (!name) continue;
        name++;
        name[strcspn(name, "\n")] = 0;
        n++;
        bool ok = strncmp(name, "sonde_shim_", 11) == 0;
        for (size_t i = 0; i < sizeof allowed / sizeof *allowed; i++)
            ok = ok || !strcmp(name, allowed[i]);
        if (!ok && strlen(bad) + strlen(name) + 2 < sizeof bad) {
            strcat(bad, name);
            strcat(bad, " ");
        }
    }
    if (nm) pclose(nm);
    check(n >= 20 && !bad[0], "shim_exports_only_hooks", "%d symbols; unexpected: %s", n, bad);
}

static void test_inert_before_start(void)
{
    atomic_store(&n_events, 0);
    void *p = malloc(64 * MIB);
    free(p);
    check(atomic_load(&n_events) == 0, "shim_inert_before_start", "%d events",
          atomic_load(&n_events));
}

typedef void *(*alloc_fn)(size_t);
static void *via_malloc(size_t n)
{
    return malloc(n);
}
static void *via_calloc(size_t n)
{
    return calloc(1, n);
}
static void *via_realloc(size_t n)
{
    return realloc(NULL, n);
}
static void *via_reallocarray(size_t n)
{
    return reallocarray(NULL, n, 1);
}
static void *via_posix_memalign(size_t n)
{
    void *p = NULL;
    return posix_memalign(&p, 64, n) == 0 ? p : NULL;
}
static void *via_aligned_alloc(size_t n)
{
    return aligned_alloc(4096, n);
}
static void *via_memalign(size_t n)
{
    return memalign(256, n);
}
static void *via_valloc(size_t n)
{
    return valloc(n);
}
static void *via_pvalloc(size_t n)
{
    return pvalloc(n);
}

static void test_big_blocks(void)
{
    static const struct {
        const char *name;
        alloc_fn fn;
    } fns[] = {{"malloc", via_malloc},
               {"calloc", via_calloc},
               {"realloc", via_realloc},
               {"reallocarray", via_reallocarray},
               {"posix_memalign", via_posix_memalign},
               {"aligned_alloc", via_aligned_alloc},
               {"memalign", via_memalign},
               {"valloc", via_valloc},
               {"pvalloc", via_pvalloc}};
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++) {
        int from = atomic_load(&n_events);
        size_t size = 24 * MIB + 12345;
        void *p = fns[i].fn(size);
        int n = 0;
        int64_t grew = memory_sum(from, NULL, NULL, &n);
        int mid = atomic_load(&n_events);
        size_t usable = malloc_usable_size(p);
        free(p);
        int64_t shrank = memory_sum(mid, NULL, NULL, NULL);
        char name[64];
        snprintf(name, sizeof name, "shim_big_block_%s", fns[i].name);
        check(p && n == 1 && grew == (int64_t)usable && usable >= size && shrank == -grew, name,
              "%d samples, +%lld -%lld, usable %zu", n, (long long)grew, (long long)-shrank,
              usable);
    }
}

static void test_small_blocks(void)
{
    enum { N = 1600, SIZE = 64 * 1024 };
    static void *blocks[N];
    int from = atomic_load(&n_events);
    for (int i = 0; i < N; i++)
        blocks[i] = malloc(SIZE);
    int64_t grew = memory_sum(from, NULL, NULL, NULL);
    int mid = atomic_load(&n_events);
    for (int i = 0; i < N; i++)
        free(blocks[i]);
    int64_t shrank = memory_sum(mid, NULL, NULL, NULL);
    int64_t total = (int64_t)N * SIZE;
    check(grew <= total + THRESHOLD && grew >= total - 2 * THRESHOLD, "shim_small_blocks_add_up",
          "%lld of %lld bytes", (long long)grew, (long long)total);
    check(shrank <= -(total - 4 * THRESHOLD) && shrank >= -(total + 2 * THRESHOLD),
          "shim_frees_shrink", "%lld for %lld freed", (long long)shrank, (long long)total);
}

static void *thread_allocates(void *arg)
{
    void **kept = arg;
    for (int i = 0; i < 100; i++)
        kept[i] = malloc(MIB);
    return NULL;
}

static void test_threads(void)
{
    static void *kept[2][100];
    pthread_t threads[2];
    int from = atomic_load(&n_events);
    for (int i = 0; i < 2; i++)
        pthread_create(&threads[i], NULL, thread_allocates, kept[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(threads[i], NULL);
    pthread_t self = pthread_self();
    int64_t mine = memory_sum(from, &self, NULL, NULL);
    bool ok = mine == 0;
    char detail[256] = "";
    for (int i = 0; i < 2; i++) {
        int64_t theirs = memory_sum(from, &threads[i], NULL, NULL);
        ok = ok && theirs >= 100 * MIB - 2 * THRESHOLD && theirs <= 100 * MIB + THRESHOLD;
        snprintf(detail + strlen(detail), sizeof detail - strlen(detail), "thread %d: %lld; ", i,
                 (long long)theirs);
    }
    check(ok, "shim_threads_charged_on_their_thread", "%smain: %lld", detail, (long long)mine);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 100; j++)
            free(kept[i][j]);
}

/* A stand-in for pymalloc: the "original" allocator of a Python domain,
 * which uses malloc for everything (as PYTHONMALLOC=malloc does). */
static void *fake_py_malloc(void *ctx, size_t n)
{
    return malloc(n ? n : 1);
}
static void *fake_py_calloc(void *ctx, size_t a, size_t b)
{
    return calloc(a ? a : 1, b ? b : 1);
}
static void *fake_py_realloc(void *ctx, void *p, size_t n)
{
    return realloc(p, n ? n : 1);
}
static void fake_py_free(void *ctx, void *p)
{
    free(p);
}

static void test_python_domain(void)
{
    sonde_shim_pyalloc_t original = {NULL, fake_py_malloc, fake_py_calloc, fake_py_realloc,
                                     fake_py_free};
    sonde_shim_pyalloc_t wrapped;
    int rc = shim_wrap(SONDE_SHIM_DOMAIN_OBJ, &original, 0, &wrapped);
    check(rc == 0, "shim_wrap_pyalloc", "rc %d", rc);
    if (rc) return;
    int from = atomic_load(&n_events);
    void *big = wrapped.malloc(wrapped.ctx, 20 * MIB);
    static void *many[600];
    for (int i = 0; i < 600; i++)
        many[i] = wrapped.malloc(wrapped.ctx, 32 * 1024);
    int64_t python = 0;
    int64_t grew = memory_sum(from, NULL, &python, NULL);
    check(grew > 20 * MIB && python >= grew - THRESHOLD, "shim_python_domain_is_python",
          "grew %lld, python %lld", (long long)grew, (long long)python);
    wrapped.free(wrapped.ctx, big);
    for (int i = 0; i < 600; i++)
        wrapped.free(wrapped.ctx, many[i]);
}

static void test_leaks(void)
{
    enum { N = 400 };
    static void *blocks[N];
    int from = atomic_load(&n_events);
    for (int i = 0; i < N; i++)
        blocks[i] = malloc(256 * 1024);
    int tracked = count_kind(from, SONDE_SHIM_EV_LEAK_TRACK);
    int mid = atomic_load(&n_events);
    for (int i = 0; i < N; i += 2)
        free(blocks[i]); /* half of them */
    int freed = count_kind(mid, SONDE_SHIM_EV_LEAK_FREED);
    /* 100 MiB at a mark per MiB: about 100 tracked, half of them freed. */
    check(tracked >= 60 && tracked <= 140, "shim_leak_samples_by_rate", "%d tracked", tracked);
    check(freed >= tracked / 2 - 25 && freed <= tracked / 2 + 25, "shim_leak_frees_reported",
          "%d of %d tracked were freed", freed, tracked);
    int sited = 0, end = atomic_load(&n_events);
    for (int i = mid; i < end && i < MAX_EVENTS; i++)
        sited += events[i].event.kind == SONDE_SHIM_EV_LEAK_FREED && events[i].event.site > 0;
    check(sited == freed, "shim_leak_free_has_site", "%d of %d", sited, freed);
    for (int i = 1; i < N; i += 2)
        free(blocks[i]);
}

static void test_copies(void)
{
    static char src[MIB], dst[MIB];
    int from = atomic_load(&n_events);
    for (int i = 0; i < 512; i++)
        memcpy(dst, src, sizeof dst);
    for (int i = 0; i < 512; i++)
        memmove(dst + 1, dst, sizeof dst - 1);
    int64_t copied = 0;
    int end = atomic_load(&n_events);
    for (int i = from; i < end && i < MAX_EVENTS; i++)
        if (events[i].event.kind == SONDE_SHIM_EV_COPY) copied += events[i].event.bytes;
    double want = 1024.0 * MIB;
    check(copied > 0.85 * want && copied < 1.15 * want, "shim_copies_counted", "%.1f MiB of %.1f",
          (double)copied / MIB, want / MIB);
}

static void test_errno(void)
{
    errno = 1234;
    void *p = malloc(32 * MIB); /* a sample: the callback runs */
    int after_malloc = errno;
    errno = 4321;
    free(p);
    int after_free = errno;
    void *huge = malloc((size_t)1 << 62);
    int after_fail = errno;
    check(after_malloc == 1234 && after_free == 4321 && !huge && after_fail == ENOMEM,
          "shim_keeps_errno", "%d %d %d", after_malloc, after_free, after_fail);
}

static void test_fork(void)
{
    int fds[2];
    if (pipe(fds) != 0) return;
    pid_t pid = fork();
    if (pid == 0) {
        int before = atomic_load(&n_events);
        void *p = malloc(64 * MIB);
        free(p);
        int seen = atomic_load(&n_events) - before;
        ssize_t w = write(fds[1], &seen, sizeof seen);
        (void)w;
        _exit(0);
    }
    int seen = -1, status = 0;
    ssize_t r = read(fds[0], &seen, sizeof seen);
    waitpid(pid, &status, 0);
    close(fds[0]);
    close(fds[1]);
    check(r == sizeof seen && seen == 0 && WIFEXITED(status), "shim_inert_in_forked_child",
          "%d events in the child", seen);
}

static void test_stop(void)
{
    shim_stop();
    int from = atomic_load(&n_events);
    void *p = malloc(64 * MIB);
    memmove((char *)p + 1, p, 64 * MIB - 1);
    free(p);
    check(atomic_load(&n_events) == from, "shim_quiet_after_stop", "%d events",
          atomic_load(&n_events) - from);
}

int main(int argc, char **argv)
{
    char exe[4096], shim_path[4200];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) return 2;
    exe[len] = 0;
    *strrchr(exe, '/') = 0; /* <build>/tests */
    snprintf(shim_path, sizeof shim_path, "%s/../lib/sonde/libsonde_shim.so", exe);
    if (!getenv("SONDE_TEST_SHIM_PRELOADED")) {
        if (access(shim_path, R_OK) != 0) {
            check(false, "shim_built", "%s is missing", shim_path);
            return check_exit_code();
        }
        setenv("LD_PRELOAD", shim_path, 1);
        setenv("SONDE_TEST_SHIM_PRELOADED", "1", 1);
        execv("/proc/self/exe", argv);
        return 2;
    }
    unsetenv("LD_PRELOAD");
    shim_start = (sonde_shim_start_fn)dlsym(RTLD_DEFAULT, SONDE_SHIM_SYM_START);
    shim_stop = (sonde_shim_stop_fn)dlsym(RTLD_DEFAULT, SONDE_SHIM_SYM_STOP);
    shim_wrap = (sonde_shim_wrap_pyalloc_fn)dlsym(RTLD_DEFAULT, SONDE_SHIM_SYM_WRAP_PYALLOC);
    if (!check(shim_start && shim_stop && shim_wrap, "shim_entry_points", "not found by dlsym"))
        return check_exit_code();

    test_exports(shim_path);
    test_inert_before_start();
    start(1 << 30, 1 << 30);
    test_big_blocks();
    test_small_blocks();
    test_threads();
    test_python_domain();
    shim_stop();
    start(MIB, MIB);
    test_leaks();
    test_copies();
    test_errno();
    test_fork();
    test_stop();
    return check_exit_code();
}
