/* test_shim.c — unit tests of the allocator shim (src/shim/) on its own.
 *
 * The program runs itself again with the shim preloaded (LD_PRELOAD, as
 * `sonde run --memory` does), finds its entry points by name as the
 * extension does, and plays the extension's part with a callback that
 * records events. Checks: the exports are the hooked names and
 * sonde_shim_* only; nothing is reported before start or after stop; one
 * large block is one sample of its requested size, for every allocation
 * function, and its free gives back that weight and its site; the weights
 * of many small samples add up to what was allocated (within the sampling
 * error); each thread's allocations are reported on that thread; blocks
 * allocated through a wrapped Python domain are Python's and sampled once
 * (not again by the malloc hook); only remembered blocks are reported
 * when freed, with their site, each once however densely they are
 * packed; a block realloc moves is freed and
 * allocated again; copies are counted; errno is kept; a forked child is
 * inert; realloc of a block handed out before the shim knew libc works.
 */
#include "shim/shim.h"

#include "check.h"

#include <dlfcn.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>

#define MIB (1024 * 1024)
#define SAMPLE_BYTES (512 * 1024)
#define MAX_EVENTS 65536
/* The suite's two-sided z (tests/accuracy.py: a family error of 1 % over
 * 3000 assertions, 3.3e-6 each): a sampled total may stray this many of its
 * standard errors before a check calls it wrong. */
#define SUITE_Z 4.65

/* Standard error of the summed weights of `n` blocks of `size` bytes, each
 * sampled with probability p = 1 - exp(-size/mean) and weighted size/p
 * (shim_heap_weight): the count is binomial(n, p). */
static double weight_sd(int n, double size, double mean)
{
    double p = -expm1(-size / mean);
    return sqrt(n * p * (1 - p)) * size / p;
}

/* Whether `got` is within SUITE_Z standard errors `sd` of `want`. */
static bool near(double got, double want, double sd)
{
    return fabs(got - want) <= SUITE_Z * sd;
}

typedef struct recorded {
    sonde_shim_event_t event;
    pthread_t thread;
    uint64_t site_given; /* what on_event returned */
} recorded_t;

static recorded_t events[MAX_EVENTS];
static atomic_int n_events;
static atomic_ullong next_site = 1;

static uint64_t on_event(void *ctx, const sonde_shim_event_t *event)
{
    int i = atomic_fetch_add(&n_events, 1);
    uint64_t site = event->kind == SONDE_SHIM_EV_ALLOC ? atomic_fetch_add(&next_site, 1) : 0;
    if (i < MAX_EVENTS) {
        events[i].event = *event;
        events[i].thread = pthread_self();
        events[i].site_given = site;
    }
    /* Allocating here must be harmless (the guard sends it to libc). */
    void *scratch = malloc(100);
    free(scratch);
    return site;
}

static sonde_shim_start_fn shim_start;
static sonde_shim_stop_fn shim_stop;
static sonde_shim_wrap_pyalloc_fn shim_wrap;

static void start(uint64_t sample_bytes, uint64_t copy_bytes)
{
    atomic_store(&n_events, 0);
    sonde_shim_config_t config = {
        .abi = SONDE_SHIM_ABI,
        .sample_bytes = sample_bytes,
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

/* Sum of the weights of one kind of event (optionally on one thread), the
 * Python share, and the count. */
static double weight_sum(int from, sonde_shim_event_kind_t kind, pthread_t *thread, double *python,
                         int *count)
{
    double sum = 0, py = 0;
    int n = 0, end = atomic_load(&n_events);
    for (int i = from; i < end && i < MAX_EVENTS; i++) {
        if (events[i].event.kind != kind) continue;
        if (thread && !pthread_equal(*thread, events[i].thread)) continue;
        sum += events[i].event.weight;
        if (events[i].event.python) py += events[i].event.weight;
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
        /* aligned_alloc's size is a multiple of its alignment, as C11 says
         * (ASan refuses any other; glibc rounds it). */
        size_t size = i == 5 ? 24 * MIB + 3 * 4096 : 24 * MIB + 12345;
        void *p = fns[i].fn(size);
        int n = 0, n_freed = 0;
        double made = weight_sum(from, SONDE_SHIM_EV_ALLOC, NULL, NULL, &n);
        int mid = atomic_load(&n_events);
        free(p);
        double freed = weight_sum(mid, SONDE_SHIM_EV_FREE, NULL, NULL, &n_freed);
        bool site = n_freed == 1 && events[mid].event.site == events[from].site_given;
        char name[64];
        snprintf(name, sizeof name, "shim_big_block_%s", fns[i].name);
        /* pvalloc asks for whole pages. */
        size_t want = i == 8 ? (size + 4095) & ~(size_t)4095 : size;
        check(p && n == 1 && made == (double)want && freed == made && site, name,
              "%d samples, %.0f bytes for %zu; %d frees, %.0f bytes", n, made, want, n_freed,
              freed);
    }
}

static void test_small_blocks(void)
{
    enum { N = 1600, SIZE = 64 * 1024 };
    static void *blocks[N];
    int from = atomic_load(&n_events);
    for (int i = 0; i < N; i++)
        blocks[i] = malloc(SIZE);
    int n = 0;
    double made = weight_sum(from, SONDE_SHIM_EV_ALLOC, NULL, NULL, &n);
    int mid = atomic_load(&n_events);
    for (int i = 0; i < N; i++)
        free(blocks[i]);
    double freed = weight_sum(mid, SONDE_SHIM_EV_FREE, NULL, NULL, NULL);
    double total = (double)N * SIZE;
    /* ~188 samples: a standard error of 7 %. */
    double sd = weight_sd(N, SIZE, SAMPLE_BYTES);
    check(near(made, total, sd) && SUITE_Z * sd < 0.5 * total, "shim_small_blocks_add_up",
          "%.0f of %.0f bytes (%d samples; bound %.0f)", made, total, n, SUITE_Z * sd);
    check(freed > made * (1 - 1e-9) && freed < made * (1 + 1e-9), "shim_frees_give_back",
          "%.0f freed for %.0f sampled", freed, made);
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
    double mine = weight_sum(from, SONDE_SHIM_EV_ALLOC, &self, NULL, NULL);
    /* ~86 samples of 1 MiB blocks: a standard error of 4 %; the bound must
     * still tell a thread's blocks half lost (power). */
    double sd = weight_sd(100, MIB, SAMPLE_BYTES);
    bool ok = mine == 0 && SUITE_Z * sd < 0.5 * 100.0 * MIB;
    char detail[256] = "";
    for (int i = 0; i < 2; i++) {
        double theirs = weight_sum(from, SONDE_SHIM_EV_ALLOC, &threads[i], NULL, NULL);
        ok = ok && near(theirs, 100.0 * MIB, sd);
        snprintf(detail + strlen(detail), sizeof detail - strlen(detail), "thread %d: %.0f; ", i,
                 theirs);
    }
    check(ok, "shim_threads_charged_on_their_thread", "%smain: %.0f", detail, mine);
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
    enum { N = 1600, SIZE = 32 * 1024 };
    void *big = wrapped.malloc(wrapped.ctx, 20 * MIB);
    static void *many[N];
    for (int i = 0; i < N; i++)
        many[i] = wrapped.malloc(wrapped.ctx, SIZE);
    double python = 0;
    double made = weight_sum(from, SONDE_SHIM_EV_ALLOC, NULL, &python, NULL);
    double total = 20.0 * MIB + (double)N * SIZE;
    /* Counted once (by the wrapper), all of it Python's. The bound is
     * narrow enough to tell a count twice, or the small blocks lost. The
     * big block is sampled with probability 1 - e^-40 at its own size. */
    double sd = weight_sd(N, SIZE, SAMPLE_BYTES);
    check(near(made, total, sd) && python == made && SUITE_Z * sd < 0.5 * N * SIZE,
          "shim_python_domain_is_python", "made %.0f of %.0f (bound %.0f), python %.0f", made,
          total, SUITE_Z * sd, python);
    int mid = atomic_load(&n_events);
    wrapped.free(wrapped.ctx, big);
    for (int i = 0; i < N; i++)
        wrapped.free(wrapped.ctx, many[i]);
    double freed = weight_sum(mid, SONDE_SHIM_EV_FREE, NULL, NULL, NULL);
    check(freed > made * (1 - 1e-9) && freed < made * (1 + 1e-9), "shim_python_frees_give_back",
          "%.0f freed for %.0f sampled", freed, made);
}

/* Samples packed close together (a mark every 64 bytes on average in
 * 48-byte blocks side by side: dozens to each 8 KiB stretch, long probe
 * runs in the table) are each reported once when freed, whatever the
 * order, with the weight they were taken with, and their unsampled
 * neighbours are not: the per-stretch counters, the bitmap and the
 * table's deletions agree. */
static void test_dense(void)
{
    enum { N = 12000, PRIME = 7919 }; /* PRIME does not divide N */
    static void *blocks[N];
    int from = atomic_load(&n_events);
    for (int i = 0; i < N; i++)
        blocks[i] = malloc(48);
    int mid = atomic_load(&n_events), tracked = 0;
    double kept = 0;
    for (int i = from; i < mid && i < MAX_EVENTS; i++) {
        if (events[i].event.kind != SONDE_SHIM_EV_ALLOC || !events[i].event.tracked) continue;
        tracked++;
        kept += events[i].event.weight;
    }
    for (int i = 0; i < N; i++)
        free(blocks[(size_t)i * PRIME % N]);
    int freed = 0;
    double weight = weight_sum(mid, SONDE_SHIM_EV_FREE, NULL, NULL, &freed);
    check(tracked > N / 3 && freed == tracked && weight > kept * (1 - 1e-9) &&
              weight < kept * (1 + 1e-9),
          "shim_dense_samples_freed_once",
          "%d of %d blocks remembered, %d reported freed (%.0f of %.0f bytes)", tracked, N, freed,
          weight, kept);
}

static void test_sites(void)
{
    enum { N = 400 };
    static void *blocks[N];
    int from = atomic_load(&n_events);
    for (int i = 0; i < N; i++)
        blocks[i] = malloc(256 * 1024);
    int tracked = count_kind(from, SONDE_SHIM_EV_ALLOC);
    int mid = atomic_load(&n_events);
    for (int i = 0; i < N; i += 2)
        free(blocks[i]); /* half of them */
    int freed = count_kind(mid, SONDE_SHIM_EV_FREE);
    /* 100 MiB at a mark per MiB: each 256 KiB block is sampled with
     * probability 1 - e^-1/4, about 88 of them (binomial); about half of
     * those freed (binomial given the count). Power: the bounds must still
     * tell blocks sampled at half the rate, and frees not reported. */
    double p = -expm1(-0.25);
    double sd_tracked = sqrt(N * p * (1 - p)), sd_freed = sqrt(tracked * 0.25);
    check(near(tracked, N * p, sd_tracked) && SUITE_Z * sd_tracked < 0.5 * N * p,
          "shim_samples_by_bytes", "%d sampled of %.1f", tracked, N * p);
    check(near(freed, tracked / 2.0, sd_freed) && SUITE_Z * sd_freed < tracked / 2.0,
          "shim_sample_frees_reported", "%d of %d sampled were freed", freed, tracked);
    int sited = 0, end = atomic_load(&n_events);
    for (int i = mid; i < end && i < MAX_EVENTS; i++) {
        if (events[i].event.kind != SONDE_SHIM_EV_FREE) continue;
        bool known = false;
        for (int j = from; j < mid && !known; j++)
            known = events[j].event.kind == SONDE_SHIM_EV_ALLOC &&
                    events[i].event.site == events[j].site_given;
        sited += known;
    }
    check(sited == freed, "shim_sample_free_has_site", "%d of %d", sited, freed);
    for (int i = 1; i < N; i += 2)
        free(blocks[i]);
}

static void test_realloc_moves(void)
{
    int from = atomic_load(&n_events);
    char *p = malloc(8 * MIB); /* sampled: p = 1 - e^-8 */
    char *keep = malloc(64);   /* so that p cannot grow in place below */
    int mid = atomic_load(&n_events);
    char *q = realloc(p, 64 * MIB);
    int end = atomic_load(&n_events);
    int frees = 0, allocs = 0;
    for (int i = mid; i < end && i < MAX_EVENTS; i++) {
        frees += events[i].event.kind == SONDE_SHIM_EV_FREE && events[i].event.size == 8 * MIB;
        allocs += events[i].event.kind == SONDE_SHIM_EV_ALLOC && events[i].event.size == 64 * MIB;
    }
    check(q && (q == p || (frees == 1 && allocs == 1)) &&
              count_kind(from, SONDE_SHIM_EV_ALLOC) >= 1,
          "shim_realloc_moved_is_free_and_alloc", "moved %d: %d frees, %d allocs", q != p, frees,
          allocs);
    free(q);
    free(keep);
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
    /* About 1024 marks of a mean 1 MiB apart, each charging its gap: a
     * standard error of sqrt(1024) MiB; the bound must still tell one of
     * the two functions' copies lost (half). */
    double want = 1024.0 * MIB, sd = sqrt(want / MIB) * MIB;
    check(near((double)copied, want, sd) && SUITE_Z * sd < 0.5 * want, "shim_copies_counted",
          "%.1f MiB of %.1f", (double)copied / MIB, want / MIB);
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
    start(SAMPLE_BYTES, 1 << 30);
    test_big_blocks();
    test_small_blocks();
    test_threads();
    test_python_domain();
    shim_stop();
    start(64, 1 << 30);
    test_dense();
    shim_stop();
    start(MIB, MIB);
    test_sites();
    test_realloc_moves();
    test_copies();
    test_errno();
    test_fork();
    test_stop();
    return check_exit_code();
}
