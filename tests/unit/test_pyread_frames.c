/* test_pyread_frames.c — the reader end to end over synthetic interpreter
 * state, for every supported layout.
 *
 * The live test (tests/pyread/check_live.py) checks real interpreters; this
 * one builds, in this process's memory, runtime / interpreter / thread
 * states / frames / code objects laid out as each version's table says, and
 * checks what only a constructed state can show: instruction offsets of
 * every frame model (lasti in bytes or code units, prev_instr on an inline
 * cache, a frame not started), frames owned by the C stack and (3.13)
 * non-code executables skipped, cycles and over-deep chains cut, thread
 * lists with cycles and bounds, the GIL holder of both models, the native
 * tid (through struct pthread before 3.11), code ids kept for a code
 * object and renewed when another object takes its address, and the read
 * count of a warm walk. Prints "PASS name" / "FAIL name: detail"; exits 1 on
 * any failure.
 */
#include "prim/prim.h"
#include "pyread/pyread_internal.h"
#include "sample/sample.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define OBJ_BYTES 1024                  /* room for any header we place */
#define UNITS 8                         /* code units of every synthetic code object */
#define DEEP (SONDE_PY_MAX_DEPTH + 100) /* frames of the over-deep chain */
#define ARENA_BYTES ((size_t)DEEP * OBJ_BYTES + (4u << 20))

static int failures;
static char label[32];

static bool check(bool ok, const char *name, const char *detail)
{
    if (ok) {
        printf("PASS %s %s\n", label, name);
    } else {
        printf("FAIL %s %s: %s\n", label, name, detail);
        failures++;
    }
    return ok;
}

/* ---- a bump arena of zeroed memory ------------------------------------------ */

static uint8_t *arena;
static size_t arena_used;

static uint64_t alloc_obj(size_t size)
{
    size = (size + 15) & ~(size_t)15;
    if (arena_used + size > ARENA_BYTES) abort();
    uint8_t *p = arena + arena_used;
    arena_used += size;
    return (uint64_t)(uintptr_t)p;
}

static void put64(uint64_t obj, int32_t at, uint64_t value)
{
    if (at >= 0) memcpy((void *)(uintptr_t)(obj + (uint64_t)at), &value, sizeof value);
}

static void put32(uint64_t obj, int32_t at, uint32_t value)
{
    if (at >= 0) memcpy((void *)(uintptr_t)(obj + (uint64_t)at), &value, sizeof value);
}

static void put8(uint64_t obj, int32_t at, uint8_t value)
{
    if (at >= 0) *(uint8_t *)(uintptr_t)(obj + (uint64_t)at) = value;
}

/* ---- objects ------------------------------------------------------------------- */

static uint8_t code_type_obj[64], other_type_obj[64];

static uint64_t make_str(const sonde_pyoffsets_t *off, const char *text)
{
    uint64_t s = alloc_obj((size_t)off->unicode_ascii_size + strlen(text) + 1);
    uint32_t state = (1u << off->unicode_kind_shift) | (1u << off->unicode_compact_shift) |
                     (1u << off->unicode_ascii_shift);
    if (off->unicode_ready_shift >= 0) state |= 1u << off->unicode_ready_shift;
    put32(s, off->unicode_state, state);
    put64(s, off->unicode_length, strlen(text));
    memcpy((void *)(uintptr_t)(s + (uint64_t)off->unicode_ascii_size), text, strlen(text));
    return s;
}

static uint64_t make_bytes(const sonde_pyoffsets_t *off, const uint8_t *data, size_t len)
{
    uint64_t b = alloc_obj((size_t)off->bytes_ob_sval + len + 1);
    put64(b, off->bytes_ob_size, len);
    memcpy((void *)(uintptr_t)(b + (uint64_t)off->bytes_ob_sval), data, len);
    return b;
}

/* Line tables giving line 11 + u for code unit u < UNITS (firstlineno 10). */
static uint64_t make_linetable(const sonde_pyoffsets_t *off)
{
    uint8_t table[2 * UNITS];
    for (int u = 0; u < UNITS; u++) {
        if (off->minor <= 9) { /* lnotab: +1 at byte 0, then +1 every 2 bytes */
            table[2 * u] = u == 0 ? 0 : 2;
            table[2 * u + 1] = 1;
        } else if (off->minor == 10) { /* (2 bytes, +1) pairs */
            table[2 * u] = 2;
            table[2 * u + 1] = 1;
        } else { /* code 13 (no columns), 1 unit, signed varint +1 */
            table[2 * u] = 0xE8;
            table[2 * u + 1] = 0x02;
        }
    }
    return make_bytes(off, table, sizeof table);
}

/* An opcode with no inline cache that is not a call (nor special). */
static int plain_op(const sonde_pyoffsets_t *off)
{
    for (int op = 1; op < 256; op++)
        if (!sonde_pyop_is_call(off, (unsigned)op) && off->base_op[op] == op &&
            off->cache_units[op] == 0 && op != off->op_extended_arg &&
            op != off->op_instrumented_line && op != off->op_instrumented_instruction)
            return op;
    return 1;
}

/* A base call-family opcode, and its inline cache size. */
static int call_op(const sonde_pyoffsets_t *off)
{
    for (int op = 1; op < 256; op++)
        if (sonde_pyop_is_call(off, (unsigned)op) && off->base_op[op] == op) return op;
    return -1;
}

/* Bytecode: unit 0 plain, unit 1 a call followed by its caches, then plain. */
static void fill_bytecode(const sonde_pyoffsets_t *off, uint8_t *code)
{
    int call = call_op(off);
    memset(code, 0, 2 * UNITS);
    for (int u = 0; u < UNITS; u++)
        code[2 * u] = (uint8_t)plain_op(off);
    code[2] = (uint8_t)call;
    for (int k = 0; k < off->cache_units[call]; k++)
        code[2 * (2 + k)] = 0; /* CACHE */
}

static uint64_t make_code(const sonde_pyoffsets_t *off, const char *file, const char *name,
                          int firstlineno)
{
    uint8_t bytecode[2 * UNITS];
    size_t size = OBJ_BYTES + 2 * UNITS;
    uint64_t code = alloc_obj(size);

    fill_bytecode(off, bytecode);
    put64(code, off->ob_type, (uint64_t)(uintptr_t)code_type_obj);
    put64(code, off->code_filename, make_str(off, file));
    put64(code, off->code_name, make_str(off, name));
    if (off->code_qualname >= 0) {
        char qual[64];
        snprintf(qual, sizeof qual, "Q.%s", name);
        put64(code, off->code_qualname, make_str(off, qual));
    }
    put32(code, off->code_firstlineno, (uint32_t)firstlineno);
    put64(code, off->code_linetable, make_linetable(off));
    if (off->code_code >= 0) {
        put64(code, off->code_code, make_bytes(off, bytecode, sizeof bytecode));
    } else {
        put64(code, off->ob_size, UNITS);
        memcpy((void *)(uintptr_t)(code + (uint64_t)off->code_code_adaptive), bytecode,
               sizeof bytecode);
    }
    return code;
}

/* Sets the code unit a frame of `code` executes (-1: not started). */
static void put_frame_unit(const sonde_pyoffsets_t *off, uint64_t frame, uint64_t code, int unit)
{
    switch (off->instr_kind) {
    case SONDE_PYINSTR_LASTI_BYTES:
        put32(frame, off->frame_instr, (uint32_t)(unit < 0 ? -1 : 2 * unit));
        break;
    case SONDE_PYINSTR_LASTI_UNITS:
        put32(frame, off->frame_instr, (uint32_t)unit);
        break;
    default:
        put64(frame, off->frame_instr,
              code + (uint64_t)off->code_code_adaptive + (uint64_t)(2 * (int64_t)unit));
        break;
    }
}

/* A frame executing code unit `unit` (-1: not started; for 3.11/3.12 the
 * pointer sits on the last unit of the instruction when `on_cache`). */
static uint64_t make_frame(const sonde_pyoffsets_t *off, uint64_t code, uint64_t back, int unit,
                           int owner)
{
    uint64_t frame = alloc_obj(OBJ_BYTES);
    put64(frame, off->frame_back, back);
    /* 3.14+: a tagged _PyStackRef (deferred reference: low bit set) */
    put64(frame, off->frame_code, code | (off->frame_code_tag_bits & 1));
    put8(frame, off->frame_owner, (uint8_t)owner);
    put_frame_unit(off, frame, code, unit);
    return frame;
}

static uint64_t make_tstate(const sonde_pyoffsets_t *off, uint64_t interp, uint64_t frame,
                            uint64_t thread_id, uint64_t native_tid)
{
    uint64_t tstate = alloc_obj(OBJ_BYTES);
    put64(tstate, off->tstate_interp, interp);
    put64(tstate, off->tstate_thread_id, thread_id);
    put64(tstate, off->tstate_native_thread_id, native_tid);
    if (off->frame_model == SONDE_PYFRAMES_CFRAME) {
        uint64_t cframe = alloc_obj(64);
        put64(cframe, off->cframe_current_frame, frame);
        put64(tstate, off->tstate_frame, cframe);
    } else {
        put64(tstate, off->tstate_frame, frame);
    }
    return tstate;
}

/* ---- the scenario -------------------------------------------------------------- */

struct world {
    uint64_t runtime, interp, gil;
    uint64_t t0, t1, t2;
    uint64_t code_x, code_y;
    uint64_t frame_a;
};

static void build_world(const sonde_pyoffsets_t *off, struct world *w)
{
    memset(w, 0, sizeof *w);
    w->runtime = alloc_obj(16384);
    w->interp = alloc_obj(16384);
    put64(w->runtime, off->runtime_interpreters_main, w->interp);
    put64(w->runtime, off->runtime_interpreters_head, w->interp);
    if (off->debug_version >= 0) {
        memcpy((void *)(uintptr_t)w->runtime, "xdebugpy", 8);
        put64(w->runtime, off->debug_version,
              (uint64_t)off->major << 24 | (uint64_t)off->minor << 16);
        for (int i = 0; i < off->n_debug_checks; i++)
            put64(w->runtime, off->debug_checks[i].at, (uint64_t)off->debug_checks[i].expect);
        /* the fields the reader takes from it (the GIL's relative to a base) */
        for (int i = 0; i < off->n_debug_fields; i++) {
            const struct sonde_pydebug_field *f = &off->debug_fields[i];
            int32_t value = 0;
            memcpy(&value, (const uint8_t *)off + f->field, sizeof value);
            uint64_t base = f->minus_at >= 0 ? 4096 : 0;
            if (f->minus_at >= 0) put64(w->runtime, f->minus_at, base);
            put64(w->runtime, f->at, base + (uint64_t)value);
        }
    }

    w->code_x = make_code(off, "/src/x.py", "fx", 10);
    w->code_y = make_code(off, "/src/y.py", "fy", 10);
    int call = call_op(off);
    bool prev_ptr = off->instr_kind == SONDE_PYINSTR_PREV_PTR;

    /* thread 0: A (x, in the call; 3.11/3.12: pointer on its last cache)
     *   -> B (y, unit 0) [-> C-stack shim (3.12+)] [-> non-code (3.13)]
     *   -> C (x, not started) */
    uint64_t c = make_frame(off, w->code_x, 0, -1, 0);
    uint64_t below = c;
    if (off->frame_model == SONDE_PYFRAMES_DIRECT) {
        uint64_t not_code = alloc_obj(OBJ_BYTES);
        put64(not_code, off->ob_type, (uint64_t)(uintptr_t)other_type_obj);
        below = make_frame(off, not_code, below, 0, 0);
    }
    if (off->frame_owner_cstack >= 0)
        below = make_frame(off, w->code_y, below, 0, off->frame_owner_cstack);
    if (off->frame_code_tag_bits) /* 3.14: FRAME_OWNED_BY_CSTACK after INTERPRETER */
        below = make_frame(off, w->code_y, below, 0, off->frame_owner_cstack + 1);
    uint64_t b = make_frame(off, w->code_y, below, 0, 0);
    w->frame_a = make_frame(off, w->code_x, b, prev_ptr ? 1 + off->cache_units[call] : 1, 0);

    /* thread 1: a cycle D -> E -> D */
    uint64_t d = make_frame(off, w->code_x, 0, 0, 0);
    uint64_t e = make_frame(off, w->code_y, d, 0, 0);
    put64(d, off->frame_back, e);

    /* thread 2: DEEP frames */
    uint64_t deep = 0;
    for (int i = 0; i < DEEP; i++)
        deep = make_frame(off, w->code_y, deep, 0, 0);

    uint64_t self = (uint64_t)pthread_self();
    w->t0 = make_tstate(off, w->interp, w->frame_a, self, 4242);
    w->t1 = make_tstate(off, w->interp, d, self, 4243);
    w->t2 = make_tstate(off, w->interp, deep, self, 4244);
    put64(w->interp, off->interp_threads_head, w->t0);
    put64(w->t0, off->tstate_next, w->t1);
    put64(w->t1, off->tstate_next, w->t2);

    if (off->gil_model == SONDE_PYGIL_GILSTATE) {
        put64(w->runtime, off->runtime_gilstate_tstate_current, w->t1);
        put64(w->runtime, off->gil_interval, 5000); /* us: the default */
    } else {
        w->gil = alloc_obj(256);
        put64(w->interp, off->interp_ceval_gil, w->gil);
        put32(w->gil, off->gil_locked, 1);
        put64(w->gil, off->gil_last_holder, w->t1);
        put64(w->gil, off->gil_interval, 5000);
    }
}

struct walked {
    int n;
    uint32_t ids[8];
    int lines[8];
    bool in_call[8];
    int rc;
    bool truncated;
    int depth;
};

static void walk(sonde_pyproc_t *proc, uint64_t tstate, struct walked *out)
{
    sonde_pyframe_iter_t it;
    sonde_pyframe_t frame;
    memset(out, 0, sizeof *out);
    out->rc = sonde_pyframe_iter_begin(proc, tstate, &it);
    if (out->rc != 0) return;
    while ((out->rc = sonde_pyframe_iter_next(&it, &frame)) == 1) {
        if (out->n < 8) {
            out->ids[out->n] = frame.code_id;
            out->lines[out->n] = frame.lineno;
            out->in_call[out->n] = frame.in_call;
        }
        out->n++;
    }
    out->truncated = it.truncated;
    out->depth = it.depth;
}

/* ---- the Python/native rule (src/sample/native.c) over thread 0 ------------- */

/* What the watched thread does while the rule looks at it. Its CPU clock
 * runs with the wall clock in native code and on a virtual CPU the host
 * has stopped (the guest still counts it). In bytecode it moves after
 * FAKE_BYTECODE_STEP_NS of CPU time at each look, whatever the wall clock
 * did meanwhile: a watcher preempted between two looks (a loaded machine
 * under the sanitizers) must not make a thread that moved at once look
 * as if it had run 40 us on one instruction first. */
enum fake_mode {
    FAKE_NATIVE,   /* stays on its instruction: in C code */
    FAKE_BYTECODE, /* moves between looks */
    FAKE_STALL,    /* stands still until its CPU runs again (resume), then
                      moves: bytecode on a stopped virtual CPU */
};

struct fake_thread {
    const sonde_pyoffsets_t *off;
    uint64_t frame, code;
    int unit, other_unit; /* where it stands, where it moves to */
    enum fake_mode mode;
    int resumes;
    int resume_rc;           /* what resume returns */
    sonde_ns_t bytecode_cpu; /* FAKE_BYTECODE's own clock */
};

enum { FAKE_BYTECODE_STEP_NS = 1000 };

static void fake_move(struct fake_thread *t)
{
    int to = t->other_unit;
    t->other_unit = t->unit;
    t->unit = to;
    put_frame_unit(t->off, t->frame, t->code, t->unit);
}

static int fake_cpu(void *arg, sonde_ns_t *ns, sonde_ns_t *waited_ns)
{
    struct fake_thread *t = arg;
    *waited_ns = 0;
    if (t->mode == FAKE_BYTECODE) {
        fake_move(t); /* the next look sees it moved */
        t->bytecode_cpu += FAKE_BYTECODE_STEP_NS;
        *ns = t->bytecode_cpu;
        return 0;
    }
    *ns = sonde_prim_monotonic_ns();
    return 0;
}

static int fake_resume(void *arg)
{
    struct fake_thread *t = arg;
    t->resumes++;
    if (t->mode == FAKE_STALL && t->resume_rc == 0) fake_move(t);
    return t->resume_rc;
}

/* The rule's answer for thread 0 (frame A) behaving as `mode`. */
static int fake_watch(sonde_pyproc_t *proc, const struct world *w, struct fake_thread *t,
                      enum fake_mode mode, int resume_rc)
{
    sonde_pyframe_iter_t it;
    sonde_walk_t walk;
    memset(&walk, 0, sizeof walk);
    if (sonde_pyframe_iter_begin(proc, w->t0, &it) != 0 ||
        sonde_pyframe_iter_next(&it, &walk.innermost) != 1)
        return -100;
    walk.have_innermost = true;
    walk.innermost_addr = it.frame_addr;
    t->mode = mode;
    t->resumes = 0;
    t->resume_rc = resume_rc;
    sonde_native_watch_t how = {.proc = proc,
                                .tstate = w->t0,
                                .cpu_ns = fake_cpu,
                                .resume = fake_resume,
                                .arg = t,
                                /* the checks are of the rule's logic, none
                                 * waits for the budget: far above what a
                                 * loaded machine's preemption takes (20 ms
                                 * ran out in a loaded run, before the
                                 * confirmation's 200 us sleep ended) */
                                .budget_ns = 2000000000};
    int answer = sonde_native_watch(&sonde_native_rule_exact, &how, &walk);
    return answer;
}

static void check_native_rule(const sonde_pyoffsets_t *off, sonde_pyproc_t *proc,
                              const struct world *w, int a_unit)
{
    char detail[128];
    struct fake_thread t = {
        .off = off, .frame = w->frame_a, .code = w->code_x, .unit = a_unit, .other_unit = 0};
    int answer = fake_watch(proc, w, &t, FAKE_NATIVE, 0);
    snprintf(detail, sizeof detail, "answer %d, %d resumes", answer, t.resumes);
    check(answer == 1 && t.resumes == 1, "native rule: C code that stays is native", detail);

    put_frame_unit(off, w->frame_a, w->code_x, a_unit);
    t.unit = a_unit;
    t.other_unit = 0;
    answer = fake_watch(proc, w, &t, FAKE_BYTECODE, 0);
    snprintf(detail, sizeof detail, "answer %d", answer);
    check(answer == 0, "native rule: a frame that moves at once is bytecode", detail);

    /* The defect of issue #32: a pure-bytecode loop read up to 31 % native
     * when the host stopped the program's virtual CPU for longer than the
     * confirmation. Before the rule resumed the CPU, this answered 1. */
    put_frame_unit(off, w->frame_a, w->code_x, a_unit);
    t.unit = a_unit;
    t.other_unit = 0;
    answer = fake_watch(proc, w, &t, FAKE_STALL, 0);
    snprintf(detail, sizeof detail, "answer %d, %d resumes", answer, t.resumes);
    check(answer == -1 && t.resumes == 1,
          "native rule: bytecode on a stopped CPU, moving once resumed, is not native", detail);

    /* Where the CPU cannot be resumed (membarrier refused), the confirmed
     * proof stands, as before. */
    put_frame_unit(off, w->frame_a, w->code_x, a_unit);
    t.unit = a_unit;
    t.other_unit = 0;
    answer = fake_watch(proc, w, &t, FAKE_STALL, -ENOSYS);
    snprintf(detail, sizeof detail, "answer %d", answer);
    check(answer == 1, "native rule: no resume available keeps the confirmed answer", detail);
    put_frame_unit(off, w->frame_a, w->code_x, a_unit);
}

/* ---- the rule as attach uses it: a coarse clock, and the GIL ------------------ */

/* The watched thread (thread 0, frame A) as the attach reader sees it: a
 * CPU clock the kernel publishes in lumps (schedstat) that runs with the
 * wall clock, and the GIL's holder, read from the synthetic runtime
 * through sonde_pyproc_gil_holder. */
#define FAKE_LUMP_NS 1000000

enum fake_gil_mode {
    /* C calls that release the GIL, again and again on one instruction:
     * every third look finds it between two calls, on another instruction
     * and holding the GIL (the moments of bytecode between them) */
    FAKE_GIL_CALLS,
    /* off the GIL at the first look, waiting for it; then it takes it and
     * keeps it, running bytecode */
    FAKE_GIL_WAITER,
    /* holding the GIL and running bytecode from the first look */
    FAKE_GIL_BYTECODE,
};

/* How its clock moves. */
enum fake_gil_clock {
    FAKE_CLOCK_TICKS,    /* runs, published in lumps of FAKE_LUMP_NS */
    FAKE_CLOCK_SWITCHED, /* put on a CPU after the first look (its run-queue
                            wait moves), then one lump of 300 us */
    FAKE_CLOCK_WOKEN,    /* the same, but it runs 5 us and sleeps again: a
                            thread woken to wait for the GIL once more */
};

struct fake_gil_thread {
    const sonde_pyoffsets_t *off;
    const struct world *w;
    sonde_pyproc_t *proc;
    int call_unit, other_unit;
    enum fake_gil_mode mode;
    enum fake_gil_clock clock;
    sonde_ns_t start;
    uint32_t clock_reads;
};

static void fake_gil_holder(const sonde_pyoffsets_t *off, const struct world *w, uint64_t tstate)
{
    if (off->gil_model == SONDE_PYGIL_GILSTATE) {
        put64(w->runtime, off->runtime_gilstate_tstate_current, tstate);
    } else {
        put32(w->gil, off->gil_locked, tstate != 0);
        if (tstate) put64(w->gil, off->gil_last_holder, tstate);
    }
}

/* The clock, read once per look (after the GIL or the frame): sets what
 * the next look finds. Bytecode stands on another instruction at every
 * look (it alternates between two). */
static int fake_gil_cpu(void *arg, sonde_ns_t *ns, sonde_ns_t *waited_ns)
{
    struct fake_gil_thread *t = arg;
    sonde_ns_t ran = sonde_prim_monotonic_ns() - t->start;
    uint32_t n = ++t->clock_reads;
    *ns = 1000000000ull;
    *waited_ns = 5000000;
    if (t->clock == FAKE_CLOCK_TICKS) {
        *ns += ran / FAKE_LUMP_NS * FAKE_LUMP_NS; /* never switched */
    } else {
        *waited_ns += n >= 2 ? 20000 : 0;
        *ns += n >= 4 ? (t->clock == FAKE_CLOCK_SWITCHED ? 300000 : 5000) : 0;
    }
    bool bytecode = t->mode == FAKE_GIL_BYTECODE || (t->mode == FAKE_GIL_WAITER && n > 1) ||
                    (t->mode == FAKE_GIL_CALLS && n % 3 == 0);
    int unit = t->mode == FAKE_GIL_CALLS ? (bytecode ? t->other_unit : t->call_unit)
                                         : (n % 2 ? t->other_unit : t->call_unit);
    put_frame_unit(t->off, t->w->frame_a, t->w->code_x, unit);
    fake_gil_holder(t->off, t->w, bytecode ? t->w->t0 : 0);
    return 0;
}

static int fake_gil_held(void *arg)
{
    struct fake_gil_thread *t = arg;
    uint64_t holder = 0;
    int rc = sonde_pyproc_gil_holder(t->proc, &holder);
    return rc < 0 ? rc : holder == t->w->t0;
}

/* The coarse rule's answer for thread 0 behaving as `mode`, watched with
 * the GIL's help (with_gil) or without. */
static int fake_gil_watch(sonde_pyproc_t *proc, const struct world *w, const sonde_pyoffsets_t *off,
                          int call_unit, enum fake_gil_mode mode, enum fake_gil_clock clock,
                          bool with_gil, sonde_ns_t switch_ns)
{
    sonde_pyframe_iter_t it;
    sonde_walk_t walk;
    struct fake_gil_thread t = {.off = off,
                                .w = w,
                                .proc = proc,
                                .call_unit = call_unit,
                                .other_unit = 0,
                                .mode = mode,
                                .clock = clock,
                                .start = sonde_prim_monotonic_ns()};
    /* the walk: on the call, holding the GIL only when running bytecode */
    put_frame_unit(off, w->frame_a, w->code_x, call_unit);
    fake_gil_holder(off, w, mode == FAKE_GIL_BYTECODE ? w->t0 : 0);
    memset(&walk, 0, sizeof walk);
    if (sonde_pyframe_iter_begin(proc, w->t0, &it) != 0 ||
        sonde_pyframe_iter_next(&it, &walk.innermost) != 1)
        return -100;
    walk.have_innermost = true;
    walk.innermost_addr = it.frame_addr;
    sonde_native_watch_t how = {.proc = proc,
                                .tstate = w->t0,
                                .cpu_ns = fake_gil_cpu,
                                .holds_gil = with_gil ? fake_gil_held : NULL,
                                .gil_switch_ns = switch_ns,
                                .arg = &t,
                                /* as fake_watch's; a clock that stops
                                 * leaves no answer, soon */
                                .budget_ns = clock == FAKE_CLOCK_TICKS ? 2000000000 : 50000000};
    int answer = sonde_native_watch(&sonde_native_rule_coarse, &how, &walk);
    put_frame_unit(off, w->frame_a, w->code_x, call_unit);
    fake_gil_holder(off, w, w->t1); /* as build_world left it */
    return answer;
}

static void check_native_rule_gil(const sonde_pyoffsets_t *off, sonde_pyproc_t *proc,
                                  const struct world *w, int a_unit)
{
    char detail[128];
    sonde_ns_t switch_ns = 0;
    int rc = sonde_pyproc_gil_switch_ns(proc, &switch_ns);
    snprintf(detail, sizeof detail, "rc %d, %llu ns", rc, (unsigned long long)switch_ns);
    check(rc == 0 && switch_ns == 5000000, "the GIL's switch interval", detail);
    /* The defect of issue #25: a line of short C calls that release the
     * GIL read as Python under attach (its proof of 3 ms on one
     * instruction never came; a look between two calls answered
     * bytecode). Without the GIL this is still not native. */
    int answer =
        fake_gil_watch(proc, w, off, a_unit, FAKE_GIL_CALLS, FAKE_CLOCK_TICKS, false, switch_ns);
    snprintf(detail, sizeof detail, "answer %d", answer);
    check(answer != 1, "coarse rule without the GIL: short C calls are not proved native", detail);
    answer =
        fake_gil_watch(proc, w, off, a_unit, FAKE_GIL_CALLS, FAKE_CLOCK_TICKS, true, switch_ns);
    snprintf(detail, sizeof detail, "answer %d", answer);
    check(answer == 1, "coarse rule: short C calls off the GIL are native", detail);
    answer =
        fake_gil_watch(proc, w, off, a_unit, FAKE_GIL_WAITER, FAKE_CLOCK_TICKS, true, switch_ns);
    snprintf(detail, sizeof detail, "answer %d", answer);
    check(answer == -1,
          "coarse rule: a thread waiting for the GIL, then running bytecode, has no answer",
          detail);
    answer =
        fake_gil_watch(proc, w, off, a_unit, FAKE_GIL_BYTECODE, FAKE_CLOCK_TICKS, true, switch_ns);
    snprintf(detail, sizeof detail, "answer %d", answer);
    check(answer == 0, "coarse rule: bytecode holding the GIL is bytecode", detail);
    /* Put on a CPU after the first look, it needs one lump only (what the
     * clock adds after a switch was run after it); one that runs a few
     * microseconds and sleeps again (woken to wait for the GIL once more)
     * has no answer. */
    /* (a look more than 2 ms after the one before, the test kept off its
     * CPU, counts again from there and may miss the one lump: tried again) */
    for (int tries = 0; tries < 5; tries++) {
        answer = fake_gil_watch(proc, w, off, a_unit, FAKE_GIL_CALLS, FAKE_CLOCK_SWITCHED, true,
                                switch_ns);
        if (answer == 1) break;
    }
    snprintf(detail, sizeof detail, "answer %d", answer);
    check(answer == 1, "coarse rule: off the GIL, one lump after a switch is native", detail);
    answer =
        fake_gil_watch(proc, w, off, a_unit, FAKE_GIL_CALLS, FAKE_CLOCK_WOKEN, true, switch_ns);
    snprintf(detail, sizeof detail, "answer %d", answer);
    check(answer == -1, "coarse rule: off the GIL, a few microseconds after a switch: no answer",
          detail);
    /* A switch interval under five naps (0.1 ms): a turn under the GIL
     * could fall between two looks, so the GIL is not asked. */
    answer = fake_gil_watch(proc, w, off, a_unit, FAKE_GIL_CALLS, FAKE_CLOCK_TICKS, true, 100000);
    snprintf(detail, sizeof detail, "answer %d", answer);
    check(answer != 1, "coarse rule: a switch interval of 0.1 ms leaves the GIL unasked", detail);
}

static void check_layout(const sonde_pyoffsets_t *off)
{
    struct world w;
    sonde_pyproc_t proc;
    sonde_pythread_t threads[8];
    struct walked got;
    char detail[256];

    snprintf(label, sizeof label, "3.%d", off->minor);
    arena_used = 0;
    memset(arena, 0, ARENA_BYTES);
    build_world(off, &w);

    unsigned long hex = (unsigned long)off->major << 24 | (unsigned long)off->minor << 16;
    int rc = sonde_pyproc_open_self(&proc, hex, w.runtime, (uint64_t)(uintptr_t)code_type_obj);
    snprintf(detail, sizeof detail, "rc %d", rc);
    if (!check(rc == 0 && proc.interp_addr == w.interp, "open over the synthetic runtime", detail))
        return;

    /* threads */
    int n = sonde_pyproc_threads(&proc, threads, 8);
    pid_t tid = (pid_t)syscall(SYS_gettid);
    bool tids = n == 3;
    for (int i = 0; i < n && tids; i++)
        tids = off->tstate_native_thread_id >= 0 ? threads[i].native_tid == 4242 + i
                                                 : threads[i].native_tid == tid;
    snprintf(detail, sizeof detail, "n %d, tids %d %d %d, this thread %d", n,
             n > 0 ? threads[0].native_tid : 0, n > 1 ? threads[1].native_tid : 0,
             n > 2 ? threads[2].native_tid : 0, (int)tid);
    check(n == 3 && threads[0].tstate == w.t0 && threads[2].tstate == w.t2 && tids,
          "three threads in order, with native tids", detail);
    check(n == 3 && !threads[0].holds_gil && threads[1].holds_gil && !threads[2].holds_gil,
          "GIL holder", "");
    if (w.gil) {
        put32(w.gil, off->gil_locked, 0);
        n = sonde_pyproc_threads(&proc, threads, 8);
        check(n == 3 && !threads[1].holds_gil, "GIL released: no holder", "");
        put32(w.gil, off->gil_locked, 1);
    }
    n = sonde_pyproc_threads(&proc, threads, 2);
    check(n == 2, "at most max threads", "");
    put64(w.t2, off->tstate_next, w.t0); /* a cycle */
    n = sonde_pyproc_threads(&proc, threads, 8);
    snprintf(detail, sizeof detail, "n %d", n);
    check(n >= 3 && n <= 8, "a cycle in the thread list ends the walk", detail);
    put64(w.t2, off->tstate_next, 0);
    put64(w.t1, off->tstate_interp, w.interp + 8); /* t1 belongs elsewhere */
    n = sonde_pyproc_threads(&proc, threads, 8);
    check(n == 1, "a thread state of another interpreter stops the walk", "");
    put64(w.t1, off->tstate_interp, w.interp);

    /* thread 0: lines, in_call, skipped frames */
    int call = call_op(off);
    int a_line = off->instr_kind == SONDE_PYINSTR_PREV_PTR ? 12 + off->cache_units[call] : 12;
    uint64_t reads0 = proc.mem.reads;
    walk(&proc, w.t0, &got);
    snprintf(detail, sizeof detail,
             "rc %d n %d: ids %u %u %u lines %d %d %d in_call %d %d %d (A line %d)", got.rc, got.n,
             got.ids[0], got.ids[1], got.ids[2], got.lines[0], got.lines[1], got.lines[2],
             got.in_call[0], got.in_call[1], got.in_call[2], a_line);
    check(got.rc == 0 && got.n == 3 && got.lines[0] == a_line && got.in_call[0] &&
              got.lines[1] == 11 && !got.in_call[1] && got.lines[2] == 10 && !got.in_call[2] &&
              got.ids[0] == got.ids[2] && got.ids[0] != got.ids[1],
          "frames: in a call, at unit 0, not started; shims skipped", detail);
    const sonde_pycode_t *x = sonde_pyproc_code(&proc, got.ids[0]);
    const sonde_pycode_t *y = sonde_pyproc_code(&proc, got.ids[1]);
    const char *want_name = off->code_qualname >= 0 ? "Q.fx" : "fx";
    check(x && y && strcmp(x->filename, "/src/x.py") == 0 && strcmp(x->name, want_name) == 0 &&
              x->firstlineno == 10 && x->addr == w.code_x && strcmp(y->filename, "/src/y.py") == 0,
          "code facts (qualname from 3.11)", x ? x->name : "no code");
    check_native_rule(off, &proc, &w,
                      off->instr_kind == SONDE_PYINSTR_PREV_PTR ? 1 + off->cache_units[call] : 1);
    check_native_rule_gil(
        off, &proc, &w, off->instr_kind == SONDE_PYINSTR_PREV_PTR ? 1 + off->cache_units[call] : 1);

    reads0 = proc.mem.reads;
    walk(&proc, w.t0, &got);
    int begin_reads = off->frame_model == SONDE_PYFRAMES_CFRAME ? 2 : 1;
    int frames_read = got.depth;
    uint64_t reads = proc.mem.reads - reads0;
    snprintf(detail, sizeof detail, "%llu reads for %d frames read (%d codes)",
             (unsigned long long)reads, frames_read, 2);
    check(reads == (uint64_t)(begin_reads + frames_read + 2) +
                       (off->frame_model == SONDE_PYFRAMES_DIRECT ? 1 : 0),
          "warm walk: one read per frame, one per distinct code", detail);

    /* the code object at X's address replaced by another */
    uint32_t old_id = got.ids[0];
    put64(w.code_x, off->code_filename, make_str(off, "/src/replaced.py"));
    walk(&proc, w.t0, &got);
    const sonde_pycode_t *old_x = sonde_pyproc_code(&proc, old_id);
    const sonde_pycode_t *new_x = sonde_pyproc_code(&proc, got.ids[0]);
    check(got.rc == 0 && got.ids[0] != old_id && new_x &&
              strcmp(new_x->filename, "/src/replaced.py") == 0 && old_x &&
              strcmp(old_x->filename, "/src/x.py") == 0 && sonde_pyproc_code_count(&proc) == 3,
          "a new object at a cached address gets a new id; the old id keeps its facts", "");

    /* not a code object */
    put64(w.code_y, off->ob_type, (uint64_t)(uintptr_t)other_type_obj);
    walk(&proc, w.t0, &got);
    snprintf(detail, sizeof detail, "rc %d n %d", got.rc, got.n);
    check(off->frame_model == SONDE_PYFRAMES_DIRECT ? got.rc == 0 && got.n == 2
                                                    : got.rc == -EINVAL && got.n == 1,
          "a frame whose code is not a code object (3.13: skipped; else: error)", detail);
    put64(w.code_y, off->ob_type, (uint64_t)(uintptr_t)code_type_obj);

    /* a negative co_firstlineno (found by tests/fuzz/fuzz_pyread.c: the
     * frame not started gave it as its line) */
    put32(w.code_x, off->code_firstlineno, (uint32_t)-246);
    walk(&proc, w.t0, &got);
    snprintf(detail, sizeof detail, "rc %d n %d lines %d %d %d", got.rc, got.n, got.lines[0],
             got.lines[1], got.lines[2]);
    check(got.rc == 0 && got.n == 3 && got.lines[0] == -1 && got.lines[1] == 11 &&
              got.lines[2] == -1,
          "a negative first line is no line, even for a frame not started", detail);
    put32(w.code_x, off->code_firstlineno, 10);

    /* cycles and depth */
    walk(&proc, w.t1, &got);
    snprintf(detail, sizeof detail, "rc %d n %d truncated %d", got.rc, got.n, got.truncated);
    check(got.rc == 0 && got.truncated && got.n >= 2 && got.n <= 8,
          "a cycle in the frame chain ends the walk", detail);
    walk(&proc, w.t2, &got);
    snprintf(detail, sizeof detail, "rc %d n %d truncated %d", got.rc, got.n, got.truncated);
    check(got.rc == 0 && got.truncated && got.n == SONDE_PY_MAX_DEPTH,
          "an over-deep chain is cut at SONDE_PY_MAX_DEPTH", detail);

    /* a frame freed under us */
    put64(w.frame_a, off->frame_back, 0x10);
    walk(&proc, w.t0, &got);
    snprintf(detail, sizeof detail, "rc %d n %d", got.rc, got.n);
    check(got.rc == -EFAULT && got.n == 1 && proc.sample_errors > 0,
          "an unreadable frame ends the walk with -EFAULT", detail);

    sonde_pyproc_close(&proc);
}

int main(void)
{
    arena = aligned_alloc(4096, ARENA_BYTES);
    if (arena == NULL) return 1;
    for (int minor = SONDE_PY_MINOR_MIN; minor <= SONDE_PY_MINOR_MAX; minor++) {
        const sonde_pyoffsets_t *off = sonde_pyoffsets_find(3, minor);
        if (off) check_layout(off);
    }
    free(arena);
    return failures ? 1 : 0;
}
