/* pyread_dump.c — test tool: reads a live CPython process with src/pyread/.
 *
 *   pyread_dump PID              every thread's stack, as one JSON document
 *   pyread_dump --bench N PID    cost of sampling the deepest stack N times
 *   pyread_dump --fuzz N PID     walks frames and threads from N garbage
 *                                addresses of PID (must not crash, must end)
 *   pyread_dump --fuzz-self N    the same over random memory of this
 *                                process, for every supported layout
 *   pyread_dump --layout PID     the layout the reader resolved for PID
 *                                (3.13+: from its _Py_DebugOffsets) beside
 *                                the generated table, as one JSON document
 *
 * Owns nothing shared; driven by tests/pyread/check_live.py. Exit status: 0,
 * 2 when the process could not be opened (the JSON says {"error": -errno}),
 * 1 on a failed check. Built from this file, every src/core and src/pyread
 * source, -Isrc, -lpthread -lm (tests/pyread/check_live.py shows the
 * command).
 */
#include "core/buf.h"
#include "pyread/pyread_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DUMP_MAX_THREADS 256
#define DUMP_FUZZ_REGION (1 << 16)

static double dump_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void dump_print(sonde_buf_t *out)
{
    fputs(out->data ? out->data : "", stdout);
    fputc('\n', stdout);
    sonde_buf_free(out);
}

static int dump_error(int rc, const sonde_pyproc_t *proc)
{
    sonde_buf_t out = SONDE_BUF_INIT;
    sonde_buf_printf(&out, "{\"error\": %d, \"message\": ", rc);
    sonde_buf_json_string(&out, strerror(-rc));
    sonde_buf_printf(&out, ", \"version\": \"%d.%d.%d\"}", proc->version_major, proc->version_minor,
                     proc->version_micro);
    dump_print(&out);
    return 2;
}

static void dump_stack(sonde_pyproc_t *proc, const sonde_pythread_t *t, sonde_buf_t *out)
{
    sonde_pyframe_iter_t it;
    sonde_pyframe_t frame;
    int rc = sonde_pyframe_iter_begin(proc, t->tstate, &it);

    sonde_buf_printf(out,
                     "{\"tstate\": %llu, \"pthread_id\": %llu, \"native_tid\": %d, "
                     "\"holds_gil\": %s, \"frames\": [",
                     (unsigned long long)t->tstate, (unsigned long long)t->pthread_id,
                     (int)t->native_tid, t->holds_gil ? "true" : "false");
    for (int n = 0; rc == 0 && (rc = sonde_pyframe_iter_next(&it, &frame)) == 1; n++) {
        const sonde_pycode_t *code = sonde_pyproc_code(proc, frame.code_id);
        sonde_buf_puts(out, n ? ", {\"file\": " : "{\"file\": ");
        sonde_buf_json_string(out, code->filename);
        sonde_buf_puts(out, ", \"name\": ");
        sonde_buf_json_string(out, code->name);
        sonde_buf_printf(out,
                         ", \"line\": %d, \"in_call\": %s, \"firstlineno\": %d, "
                         "\"code_id\": %u}",
                         frame.lineno, frame.in_call ? "true" : "false", code->firstlineno,
                         frame.code_id);
        rc = 0;
    }
    sonde_buf_printf(out, "], \"walk_rc\": %d, \"truncated\": %s}", rc,
                     it.truncated ? "true" : "false");
}

static int dump_all(sonde_pyproc_t *proc)
{
    sonde_pythread_t threads[DUMP_MAX_THREADS];
    sonde_buf_t out = SONDE_BUF_INIT;
    int n = sonde_pyproc_threads(proc, threads, DUMP_MAX_THREADS);

    sonde_buf_printf(&out,
                     "{\"version\": \"%d.%d.%d\", \"runtime\": %llu, "
                     "\"code_type\": %llu, \"threads_rc\": %d, \"threads\": [",
                     proc->version_major, proc->version_minor, proc->version_micro,
                     (unsigned long long)proc->runtime_addr,
                     (unsigned long long)proc->code_type_addr, n);
    for (int i = 0; i < n; i++) {
        if (i) sonde_buf_puts(&out, ", ");
        dump_stack(proc, &threads[i], &out);
    }
    sonde_ns_t switch_ns = 0;
    int switch_rc = sonde_pyproc_gil_switch_ns(proc, &switch_ns);
    sonde_buf_printf(&out,
                     "], \"switch_rc\": %d, \"switch_ns\": %llu, \"reads\": %llu, "
                     "\"faults\": %llu, \"codes\": %u}",
                     switch_rc, (unsigned long long)switch_ns, (unsigned long long)proc->mem.reads,
                     (unsigned long long)proc->mem.faults, sonde_pyproc_code_count(proc));
    dump_print(&out);
    return n < 0 ? 1 : 0;
}

/* Walks one thread to the end; returns the number of frames. */
static int dump_walk(sonde_pyproc_t *proc, uint64_t tstate)
{
    sonde_pyframe_iter_t it;
    sonde_pyframe_t frame;
    int frames = 0;

    if (sonde_pyframe_iter_begin(proc, tstate, &it) != 0) return 0;
    while (sonde_pyframe_iter_next(&it, &frame) == 1)
        frames++;
    return frames;
}

/* Times walks of every stack at least DUMP_BENCH_MIN_DEPTH deep, then
 * calls of sonde_pyproc_threads; all with a warm code cache. */
#define DUMP_BENCH_MIN_DEPTH 10

static int dump_bench(sonde_pyproc_t *proc, int iterations)
{
    sonde_pythread_t threads[DUMP_MAX_THREADS];
    sonde_buf_t out = SONDE_BUF_INIT;
    int n = sonde_pyproc_threads(proc, threads, DUMP_MAX_THREADS);
    int walked = 0;

    sonde_buf_puts(&out, "{\"bench\": {\"walks\": [");
    for (int i = 0; i < n; i++) {
        int depth = dump_walk(proc, threads[i].tstate); /* also warms the cache */
        if (depth < DUMP_BENCH_MIN_DEPTH) continue;
        uint64_t reads0 = proc->mem.reads + proc->mem.faults;
        uint32_t codes0 = sonde_pyproc_code_count(proc);
        double t0 = dump_now_us();
        for (int k = 0; k < iterations; k++)
            dump_walk(proc, threads[i].tstate);
        double us = (dump_now_us() - t0) / iterations;
        double reads = (double)(proc->mem.reads + proc->mem.faults - reads0) / iterations;
        sonde_buf_printf(&out,
                         "%s{\"depth\": %d, \"reads\": %.2f, \"us\": %.2f, "
                         "\"new_codes\": %u}",
                         walked++ ? ", " : "", depth, reads, us,
                         sonde_pyproc_code_count(proc) - codes0);
    }
    uint64_t reads0 = proc->mem.reads + proc->mem.faults;
    double t0 = dump_now_us();
    for (int k = 0; k < iterations; k++)
        sonde_pyproc_threads(proc, threads, DUMP_MAX_THREADS);
    double threads_us = (dump_now_us() - t0) / iterations;
    double threads_reads = (double)(proc->mem.reads + proc->mem.faults - reads0) / iterations;
    sonde_buf_printf(&out,
                     "], \"iterations\": %d, \"threads\": %d, \"threads_reads\": %.2f, "
                     "\"threads_us\": %.2f}}",
                     iterations, n, threads_reads, threads_us);
    dump_print(&out);
    return walked ? 0 : 1;
}

/* ---- robustness ------------------------------------------------------------ */

static uint64_t dump_rand64(void)
{
    return ((uint64_t)(uint32_t)random() << 33) ^ ((uint64_t)(uint32_t)random() << 2) ^
           (uint64_t)(uint32_t)random();
}

struct fuzz_stats {
    long walks, frames, longest, errors;
};

static void fuzz_walk(sonde_pyproc_t *proc, uint64_t addr, bool as_frame, struct fuzz_stats *stats)
{
    sonde_pyframe_iter_t it;
    sonde_pyframe_t frame;
    long frames = 0;
    int rc = 0;

    if (as_frame) {
        memset(&it, 0, sizeof it);
        it.proc = proc;
        it.next_frame = addr;
    } else if (sonde_pyframe_iter_begin(proc, addr, &it) != 0) {
        stats->errors++;
        return;
    }
    while ((rc = sonde_pyframe_iter_next(&it, &frame)) == 1) {
        const sonde_pycode_t *code = sonde_pyproc_code(proc, frame.code_id);
        if (code == NULL || code->filename == NULL || code->name == NULL) {
            fprintf(stderr, "fuzz: frame with a bad code id %u\n", frame.code_id);
            abort();
        }
        frames++;
        if (frames > SONDE_PY_MAX_DEPTH) {
            fprintf(stderr, "fuzz: walk did not stop at SONDE_PY_MAX_DEPTH\n");
            abort();
        }
    }
    stats->walks++;
    stats->frames += frames;
    stats->errors += rc < 0;
    if (frames > stats->longest) stats->longest = frames;
}

/* Addresses worth trying in a target: garbage, mapped memory, real thread
 * states and frames nudged by a few bytes, and pointers found in memory. */
static uint64_t fuzz_address(sonde_pyproc_t *proc, const sonde_pythread_t *threads, int n_threads,
                             const uint64_t *mapped, int n_mapped)
{
    uint64_t addr = 0;
    switch (random() % 6) {
    case 0:
        return dump_rand64();
    case 1:
        return dump_rand64() & 0x00007fffffffffffull;
    case 2:
        return n_mapped ? mapped[random() % n_mapped] + (uint64_t)(random() % DUMP_FUZZ_REGION) : 0;
    case 3:
        return n_threads ? threads[random() % n_threads].tstate + (uint64_t)(random() % 512) - 256
                         : 0;
    case 4: /* a pointer read from somewhere plausible */
        if (n_mapped)
            sonde_mem_read(&proc->mem,
                           (mapped[random() % n_mapped] + (uint64_t)(random() % DUMP_FUZZ_REGION)) &
                               ~7ull,
                           &addr, sizeof addr);
        return addr;
    default:
        return n_threads ? threads[random() % n_threads].tstate : 0;
    }
}

static int fuzz_mapped(pid_t pid, uint64_t *mapped, int max)
{
    char path[64], line[8192];
    int n = 0;
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL) return 0;
    while (n < max && fgets(line, sizeof line, f)) {
        sonde_maps_line_t m;
        if (sonde_maps_parse_line(line, strcspn(line, "\n"), &m) == 0 && m.perms[0] == 'r')
            mapped[n++] = m.start;
    }
    fclose(f);
    return n;
}

static int dump_fuzz(sonde_pyproc_t *proc, pid_t pid, int iterations)
{
    sonde_pythread_t threads[DUMP_MAX_THREADS];
    uint64_t mapped[4096];
    struct fuzz_stats stats = {0, 0, 0, 0};
    int n_threads = sonde_pyproc_threads(proc, threads, DUMP_MAX_THREADS);
    int n_mapped = fuzz_mapped(pid, mapped, 4096);
    uint64_t real_interp = proc->interp_addr;
    double t0 = dump_now_us();

    if (n_threads < 0) n_threads = 0;
    srandom(12345);
    for (int i = 0; i < iterations; i++) {
        uint64_t addr = fuzz_address(proc, threads, n_threads, mapped, n_mapped);
        fuzz_walk(proc, addr, i % 2 == 1, &stats);
        if (i % 16 == 0) { /* a thread walk from a garbage interpreter */
            sonde_pythread_t garbage[64];
            proc->interp_addr = fuzz_address(proc, threads, n_threads, mapped, n_mapped);
            proc->gil_addr = 0;
            int count = sonde_pyproc_threads(proc, garbage, 64);
            if (count > 64) {
                fprintf(stderr, "fuzz: thread walk overflowed\n");
                abort();
            }
            proc->interp_addr = real_interp;
            proc->gil_addr = 0;
        }
    }
    printf("{\"fuzz\": {\"iterations\": %d, \"walks\": %ld, \"frames\": %ld, "
           "\"longest\": %ld, \"errors\": %ld, \"codes\": %u, \"us\": %.0f}}\n",
           iterations, stats.walks, stats.frames, stats.longest, stats.errors,
           sonde_pyproc_code_count(proc), dump_now_us() - t0);
    return 0;
}

/* ---- robustness over this process's own memory ---------------------------- */

enum { SELF_REGIONS = 48, SELF_REGION_BYTES = 16384 };

static uint64_t *self_regions[SELF_REGIONS];

static uint64_t self_region(void)
{
    return (uint64_t)(uintptr_t)self_regions[random() % SELF_REGIONS];
}

/* A word that is random, small, or a pointer into (or just past) a region. */
static uint64_t self_word(void)
{
    switch (random() % 4) {
    case 0:
        return dump_rand64();
    case 1:
        return (uint64_t)(random() % 300);
    default:
        return self_region() + (uint64_t)(random() % (SELF_REGION_BYTES + 64)) - 32;
    }
}

static void self_put(uint64_t base, int32_t at, uint64_t value)
{
    if (at >= 0 && at + 8 <= SELF_REGION_BYTES)
        memcpy((char *)(uintptr_t)base + at, &value, sizeof value);
}

/* A str object that may pass for one: random kind and length, usually
 * compact ASCII. */
static uint64_t self_str(const sonde_pyoffsets_t *off)
{
    uint64_t str = self_region();
    uint32_t state = (uint32_t)random();
    if (random() % 4) {
        state = (1u << off->unicode_kind_shift) | (1u << off->unicode_compact_shift) |
                (1u << off->unicode_ascii_shift);
        if (off->unicode_ready_shift >= 0) state |= 1u << off->unicode_ready_shift;
    }
    self_put(str, off->unicode_state, state);
    self_put(str, off->unicode_length, random() % 8 ? (uint64_t)(random() % 200) : self_word());
    return str;
}

/* A bytes object of random, usually small, size. */
static uint64_t self_bytes(const sonde_pyoffsets_t *off)
{
    uint64_t bytes = self_region();
    self_put(bytes, off->bytes_ob_size, random() % 8 ? (uint64_t)(random() % 600) : self_word());
    return bytes;
}

/* Structured garbage: a runtime whose main interpreter, thread states,
 * frames and code objects are plausible enough for the walkers to go deep,
 * with random links (cycles included) and random names, tables and sizes. */
static void self_structure(const sonde_pyoffsets_t *off, uint64_t runtime, uint64_t code_type)
{
    uint64_t interp = self_region();
    self_put(runtime, off->runtime_interpreters_main, interp);
    uint64_t tstate = self_region();
    self_put(interp, off->interp_threads_head, tstate);
    for (int t = 0; t < 4; t++) {
        uint64_t next = random() % 3 ? self_region() : tstate;
        self_put(tstate, off->tstate_interp, interp);
        self_put(tstate, off->tstate_next, random() % 4 ? next : 0);
        uint64_t frame = self_region();
        if (off->frame_model == SONDE_PYFRAMES_CFRAME) {
            uint64_t cframe = self_region();
            self_put(tstate, off->tstate_frame, cframe);
            self_put(cframe, off->cframe_current_frame, frame);
        } else {
            self_put(tstate, off->tstate_frame, frame);
        }
        for (int f = 0; f < 16; f++) {
            uint64_t code = self_region();
            uint64_t back = random() % 8 ? self_region() : frame;
            self_put(frame, off->frame_back, random() % 16 ? back : 0);
            self_put(frame, off->frame_code, code);
            self_put(code, off->ob_type, random() % 8 ? code_type : self_word());
            self_put(code, off->ob_size, (uint64_t)(random() % 2000));
            self_put(code, off->code_filename, self_str(off));
            self_put(code, off->code_name, self_str(off));
            self_put(code, off->code_qualname, random() % 4 ? self_str(off) : 0);
            self_put(code, off->code_linetable, self_bytes(off));
            self_put(code, off->code_code, self_bytes(off));
            self_put(frame, off->frame_instr,
                     random() % 2 ? code + (uint64_t)(random() % 4000) : self_word());
            frame = back;
        }
        tstate = next;
    }
}

/* Random memory of this process posing as _PyRuntime, for every layout. */
static int dump_fuzz_self(int iterations)
{
    static const unsigned long versions[] = {0x030812f0, 0x030912f0, 0x030a0df0,
                                             0x030b07f0, 0x030c01f0, 0x030d00f0};
    struct fuzz_stats stats = {0, 0, 0, 0};
    int opened = 0;

    srandom(54321);
    for (int r = 0; r < SELF_REGIONS; r++) {
        self_regions[r] = malloc(SELF_REGION_BYTES);
        if (self_regions[r] == NULL) return 1;
    }
    for (int i = 0; i < iterations; i++) {
        for (int r = 0; r < SELF_REGIONS; r++)
            for (int w = 0; w < SELF_REGION_BYTES / 8; w++)
                self_regions[r][w] = self_word();
        for (size_t v = 0; v < SONDE_ARRAY_LEN(versions); v++) {
            const sonde_pyoffsets_t *off =
                sonde_pyoffsets_find(3, (int)((versions[v] >> 16) & 0xff));
            sonde_pyproc_t proc;
            sonde_pythread_t threads[64];
            uint64_t runtime = self_region();
            uint64_t code_type = i % 2 ? self_region() : 0;
            if (i % 4 != 3) self_structure(off, runtime, code_type);
            if (sonde_pyproc_open_self(&proc, versions[v], runtime, code_type) == 0) {
                opened++;
            } else {
                /* the open refused the garbage: walk it anyway */
                memset(&proc, 0, sizeof proc);
                proc.off = off;
                proc.runtime_addr = runtime;
                proc.code_type_addr = code_type;
                proc.pthread_tid_offset = -1;
                if (sonde_mem_open(&proc.mem, 0) != 0 || sonde_pycode_cache_new(&proc) != 0)
                    return 1;
            }
            int n = sonde_pyproc_threads(&proc, threads, 64);
            if (n > 64) {
                fprintf(stderr, "fuzz-self: thread walk overflowed\n");
                abort();
            }
            for (int t = 0; t < n; t++)
                fuzz_walk(&proc, threads[t].tstate, false, &stats);
            fuzz_walk(&proc, self_region(), true, &stats);
            fuzz_walk(&proc, dump_rand64(), false, &stats);
            sonde_pyproc_close(&proc);
        }
    }
    for (int r = 0; r < SELF_REGIONS; r++)
        free(self_regions[r]);
    printf("{\"fuzz_self\": {\"iterations\": %d, \"opened\": %d, \"walks\": %ld, "
           "\"frames\": %ld, \"longest\": %ld, \"errors\": %ld}}\n",
           iterations, opened, stats.walks, stats.frames, stats.longest, stats.errors);
    return 0;
}

/* Names of the fields _Py_DebugOffsets may cover (for the report only). */
#define DUMP_LAYOUT_FIELD(name) {#name, SONDE_PYDEBUG_FIELD(name)},
static const struct {
    const char *name;
    int32_t field;
} dump_layout_names[] = {
    DUMP_LAYOUT_FIELD(runtime_interpreters_head) DUMP_LAYOUT_FIELD(interp_next) DUMP_LAYOUT_FIELD(
        interp_threads_head) DUMP_LAYOUT_FIELD(interp_ceval_gil) DUMP_LAYOUT_FIELD(gil_locked)
        DUMP_LAYOUT_FIELD(gil_last_holder) DUMP_LAYOUT_FIELD(tstate_next) DUMP_LAYOUT_FIELD(
            tstate_interp) DUMP_LAYOUT_FIELD(tstate_frame) DUMP_LAYOUT_FIELD(tstate_thread_id)
            DUMP_LAYOUT_FIELD(tstate_native_thread_id) DUMP_LAYOUT_FIELD(frame_back)
                DUMP_LAYOUT_FIELD(frame_code) DUMP_LAYOUT_FIELD(frame_instr)
                    DUMP_LAYOUT_FIELD(frame_owner) DUMP_LAYOUT_FIELD(code_filename)
                        DUMP_LAYOUT_FIELD(code_name) DUMP_LAYOUT_FIELD(code_qualname)
                            DUMP_LAYOUT_FIELD(code_linetable) DUMP_LAYOUT_FIELD(code_firstlineno)
                                DUMP_LAYOUT_FIELD(code_code_adaptive) DUMP_LAYOUT_FIELD(ob_type)
                                    DUMP_LAYOUT_FIELD(type_tp_name) DUMP_LAYOUT_FIELD(bytes_ob_size)
                                        DUMP_LAYOUT_FIELD(bytes_ob_sval)
                                            DUMP_LAYOUT_FIELD(unicode_state)
                                                DUMP_LAYOUT_FIELD(unicode_length)
                                                    DUMP_LAYOUT_FIELD(unicode_ascii_size)};

static int32_t dump_field(const sonde_pyoffsets_t *off, int32_t field)
{
    int32_t value = 0;
    memcpy(&value, (const uint8_t *)off + field, sizeof value);
    return value;
}

/* The resolved layout beside the generated table. */
static int dump_layout(const sonde_pyproc_t *proc)
{
    const sonde_pyoffsets_t *table = sonde_pyoffsets_find(proc->version_major, proc->version_minor);
    const sonde_pyoffsets_t *off = proc->off;
    printf("{\"version\": \"%d.%d.%d\", \"from_target\": %s, \"fields\": [", proc->version_major,
           proc->version_minor, proc->version_micro, proc->own_layout ? "true" : "false");
    for (int i = 0; proc->own_layout && i < off->n_debug_fields; i++) {
        int32_t field = off->debug_fields[i].field;
        const char *name = "?";
        for (size_t j = 0; j < SONDE_ARRAY_LEN(dump_layout_names); j++)
            if (dump_layout_names[j].field == field) name = dump_layout_names[j].name;
        printf("%s{\"name\": \"%s\", \"target\": %d, \"generated\": %d}", i ? ", " : "", name,
               dump_field(off, field), dump_field(table, field));
    }
    printf("]}\n");
    return 0;
}

int main(int argc, char **argv)
{
    sonde_pyproc_t proc;
    int iterations = 0;

    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    if (argc == 3 && strcmp(argv[1], "--fuzz-self") == 0) return dump_fuzz_self(atoi(argv[2]));
    if (argc == 4 && (strcmp(argv[1], "--bench") == 0 || strcmp(argv[1], "--fuzz") == 0))
        iterations = atoi(argv[2]);
    else if (argc != 2 && !(argc == 3 && strcmp(argv[1], "--layout") == 0)) {
        fprintf(stderr,
                "usage: pyread_dump [--bench N | --fuzz N | --layout] PID | --fuzz-self N\n");
        return 1;
    }
    pid_t pid = (pid_t)atoi(argv[argc - 1]);
    int rc = sonde_pyproc_open_pid(&proc, pid);
    if (rc != 0) return dump_error(rc, &proc);
    if (strcmp(argv[1], "--bench") == 0)
        rc = dump_bench(&proc, iterations > 0 ? iterations : 1);
    else if (strcmp(argv[1], "--fuzz") == 0)
        rc = dump_fuzz(&proc, pid, iterations);
    else if (strcmp(argv[1], "--layout") == 0)
        rc = dump_layout(&proc);
    else
        rc = dump_all(&proc);
    sonde_pyproc_close(&proc);
    return rc;
}
