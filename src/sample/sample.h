/* sample.h — the sampling core shared by every front end.
 *
 * Owns: what the in-process sampler (src/ext/sampler.c), the memory
 * callback (src/ext/memory_hook.c) and the attach reader (src/attach/)
 * all do with a sampled interpreter, once:
 *   filter.c   which files are profiled (the path rule) and the per-code-id
 *              cache of that verdict; naming code ids (file, function)
 *   threads.c  the registry of sampled threads and its sweep; a tick's
 *              threads, all of them, the main thread first, sampled in
 *              turn within the tick's time budget (those it leaves out
 *              are counted)
 *   walk.c     one stack walk: the nearest profiled line, the frames cut
 *              to SONDE_STACK_MAX_DEPTH with a marker frame
 *   native.c   Python or native: the rule that watches a running thread's
 *              innermost frame (the in-process sampler's and attach's)
 *   accum.c    the (code, line) and stack accumulators of one process
 *   convert.c  accumulators -> the neutral model (src/model/)
 * Links no libpython: frames come from src/pyread/. Nothing here is
 * async-signal-safe (tables allocate); the memory callback calls the
 * filter and the walk from inside allocator hooks, where the shim's guard
 * sends those allocations straight to libc. No locking: each table has
 * one owner thread (or its owner's lock).
 */
#ifndef SONDE_SAMPLE_H
#define SONDE_SAMPLE_H

#include "../core/common.h"
#include "../model/model.h"
#include "../pyread/pyread.h"

#include <sys/types.h>

/* ---- limits (one for every mode) ---------------------------------------- */

/* Time one tick may spend sampling one process's threads: the sampling
 * interval, at least SONDE_SAMPLE_TICK_MIN_NS. Once it is spent, the
 * threads not sampled yet (never the main thread, which comes first) are
 * counted in sonde_partial_t.threads_left_out and the next tick starts
 * with them (sonde_threadlist_t). */
#define SONDE_SAMPLE_TICK_MIN_NS (50 * 1000 * 1000ull)
static inline sonde_ns_t sonde_sample_tick_budget(sonde_ns_t interval_ns)
{
    return interval_ns > SONDE_SAMPLE_TICK_MIN_NS ? interval_ns : SONDE_SAMPLE_TICK_MIN_NS;
}
/* Frames kept of one sample's stack, marker included. A deeper stack keeps
 * its SONDE_STACK_KEEP_ROOT outermost frames and its SONDE_STACK_KEEP_LEAF
 * innermost ones, with one marker frame between them that says how many
 * were left out ("<N frames left out>"). */
#define SONDE_STACK_MAX_DEPTH 256
#define SONDE_STACK_KEEP_ROOT (SONDE_STACK_MAX_DEPTH / 2)
#define SONDE_STACK_KEEP_LEAF (SONDE_STACK_MAX_DEPTH - SONDE_STACK_KEEP_ROOT - 1)

/* ---- frames as sampled ------------------------------------------------------ */

/* A frame: code id in its process's code cache, and line. */
typedef uint64_t sonde_aframe_t; /* code_id << 32 | (uint32_t)lineno */

/* The code id of a marker frame; its line field is the count of frames it
 * stands for. Never a real code id (ids are dense from 0). */
#define SONDE_AFRAME_MARKER_CODE 0xffffffffu

static inline sonde_aframe_t sonde_aframe(uint32_t code_id, int32_t lineno)
{
    return (uint64_t)code_id << 32 | (uint32_t)lineno;
}
static inline uint32_t sonde_aframe_code(sonde_aframe_t f)
{
    return (uint32_t)(f >> 32);
}
static inline int32_t sonde_aframe_line(sonde_aframe_t f)
{
    return (int32_t)(uint32_t)f;
}
static inline bool sonde_aframe_is_marker(sonde_aframe_t f)
{
    return sonde_aframe_code(f) == SONDE_AFRAME_MARKER_CODE;
}
static inline uint32_t sonde_aframe_marker_count(sonde_aframe_t f)
{
    return (uint32_t)f;
}

/* Cuts frames[0..*depth-1] (innermost first) in place to at most
 * SONDE_STACK_MAX_DEPTH entries: the innermost SONDE_STACK_KEEP_LEAF, a
 * marker, the outermost SONDE_STACK_KEEP_ROOT. cut_at_root: the walk
 * stopped before the real root (read bound, cycle), so the outermost
 * frames are not the root: then the marker ends the stack after the
 * innermost SONDE_STACK_MAX_DEPTH - 1 frames, and stands for the rest
 * read. Returns the number of frames the marker stands for (0: nothing
 * cut, no marker). Pure. */
uint32_t sonde_stack_limit(sonde_aframe_t *frames, uint32_t *depth, bool cut_at_root);
/* The same limit on a stack read one frame at a time, of any depth, into
 * frames[SONDE_STACK_MAX_DEPTH]: sonde_stack_keep stores the frame read
 * at position i (0 innermost; called for i = 0, 1, 2, ... in turn),
 * keeping the innermost ones in place and the outermost ones read so far
 * in a ring; sonde_stack_keep_end, once read frames were stored, puts
 * them in order as sonde_stack_limit leaves a stack of read frames (a walk
 * cut before its root and deeper than the buffer keeps its
 * SONDE_STACK_KEEP_LEAF innermost frames and the marker ending the
 * stack), sets *depth, and returns the marker's count (0: none). Pure. */
void sonde_stack_keep(sonde_aframe_t *frames, uint32_t i, sonde_aframe_t frame);
uint32_t sonde_stack_keep_end(sonde_aframe_t *frames, uint32_t read, uint32_t *depth,
                              bool cut_at_root);

/* ---- which files are profiled (filter.c) ------------------------------------ */

/* The rule: a real file (not "<string>", "<frozen ...>"; but an IPython
 * cell, "<ipython-input-N-...>", counts as one) is profiled unless
 * its path contains an exclude pattern; with only patterns, it must
 * contain one of them; otherwise with profile_all every real file is,
 * else those outside the library directories (and, with site_dirs, outside
 * any site-packages/dist-packages directory). */
typedef struct sonde_codefilter {
    bool profile_all;
    /* static; the pseudo file name of the program's own code ("<string>"
     * under -c, "<stdin>"), a file like any other; NULL if none */
    const char *program_pseudo;
    bool site_dirs;      /* any site-packages/dist-packages component is a library */
    char **lib_prefixes; /* owned; directories ending in '/' */
    int n_lib_prefixes;
    char **only; /* owned; substrings */
    int n_only;
    char **exclude; /* owned; substrings */
    int n_exclude;
} sonde_codefilter_t;

/* Adds a library directory (dropped when NULL, "" or already there).
 * Returns 0 or -ENOMEM. */
int sonde_codefilter_add_lib_dir(sonde_codefilter_t *f, const char *dir);
/* Adds a --profile-only / --profile-exclude pattern (copied). Returns 0
 * or -ENOMEM. */
int sonde_codefilter_add_only(sonde_codefilter_t *f, const char *pattern);
int sonde_codefilter_add_exclude(sonde_codefilter_t *f, const char *pattern);

/* The user's choice of files, the same in `run`, `attach` and `record`
 * (--profile-all, --profile-only PAT, --profile-exclude PAT, parsed by
 * src/launch/options.c). Patterns borrowed. */
typedef struct sonde_filechoice {
    bool profile_all;
    const char *const *only;
    int n_only;
    const char *const *exclude;
    int n_exclude;
} sonde_filechoice_t;

/* Applies a choice to the rule (patterns copied; choice NULL: the
 * default rule). Returns 0 or -ENOMEM. */
int sonde_codefilter_choose(sonde_codefilter_t *f, const sonde_filechoice_t *choice);
/* True if time in this file is reported on its own lines. Pure. */
bool sonde_codefilter_wants(const sonde_codefilter_t *f, const char *path);
/* Frees what the filter owns and zeroes it. */
void sonde_codefilter_free(sonde_codefilter_t *f);

/* Names code ids: the reader's code cache (or, in unit tests, any table)
 * and the directory that relative file names are joined to. */
typedef struct sonde_codenames {
    const sonde_pycode_t *(*code)(const void *source, uint32_t code_id); /* NULL: unknown */
    const void *source;                                                  /* borrowed */
    const char *cwd; /* borrowed; NULL or "" when unknown */
} sonde_codenames_t;

/* Names from a reader's code cache (valid while proc is open). */
sonde_codenames_t sonde_codenames_of_proc(const sonde_pyproc_t *proc, const char *cwd);
/* The file name to report for filename into buf: a relative name joined to
 * the working directory. Returns buf. */
const char *sonde_codenames_path(const sonde_codenames_t *names, const char *filename, char *buf,
                                 size_t len);

/* The filter's verdict per code id, decided once per code object. */
typedef struct sonde_codecache {
    int8_t *verdict; /* owned; per code id: -1 unknown, 0 no, 1 profiled */
    size_t cap;
} sonde_codecache_t;

/* Whether code_id's file is profiled (asked of the filter on first
 * sight). Out of memory or an unknown code id: false. */
bool sonde_codecache_wants(sonde_codecache_t *c, const sonde_codefilter_t *f,
                           const sonde_codenames_t *names, uint32_t code_id);
void sonde_codecache_free(sonde_codecache_t *c);

/* ---- threads (threads.c) ------------------------------------------------------ */

/* The first member of every registry entry. */
typedef struct sonde_thread_key {
    uint64_t tstate; /* the PyThreadState's address */
    pid_t tid;       /* the kernel tid the thread state gave (identity) */
    bool seen;       /* present in the current tick */
} sonde_thread_key_t;

/* Sampled threads, identified by (thread state, tid): entries of
 * entry_size bytes beginning with a sonde_thread_key_t. */
typedef struct sonde_threadreg {
    char *entries; /* owned */
    size_t entry_size;
    size_t n, cap;
    uint32_t *index;              /* owned; open addressing by (tstate, tid): entry
                        number + 1, 0 empty; NULL (out of memory): scan */
    size_t index_cap;             /* a power of two, at least 2 x cap */
    void (*release)(void *entry); /* frees what an entry owns; may be NULL */
} sonde_threadreg_t;

void sonde_threadreg_init(sonde_threadreg_t *r, size_t entry_size, void (*release)(void *entry));
/* The entry of (tstate, tid), marked seen; a new one is zeroed but for its
 * key (*is_new set). Pointers are valid until the next get or sweep.
 * Returns NULL when memory runs out. */
void *sonde_threadreg_get(sonde_threadreg_t *r, uint64_t tstate, pid_t tid, bool *is_new);
/* Marks the entry of (tstate, tid) seen, if there is one, without
 * sampling it (a thread a tick's budget left out keeps its entry).
 * Returns whether there is one. */
bool sonde_threadreg_touch(sonde_threadreg_t *r, uint64_t tstate, pid_t tid);
/* Entry i (0 <= i < r->n). */
static inline void *sonde_threadreg_at(const sonde_threadreg_t *r, size_t i)
{
    return r->entries + i * r->entry_size;
}
/* End of a tick: releases and drops the threads not seen in it, and
 * clears the mark of the others. Returns the number dropped. */
size_t sonde_threadreg_sweep(sonde_threadreg_t *r);
/* Releases every entry and frees the table. */
void sonde_threadreg_free(sonde_threadreg_t *r);

/* A tick's Python threads, however many, the main thread first, and the
 * order in which the tick samples them: the main thread, then the others
 * in turn from where the previous tick's budget stopped. */
typedef struct sonde_threadlist {
    sonde_pythread_t *threads; /* owned; n listed, [0] the main thread */
    size_t n, cap;
    size_t rotation; /* where the others begin, among threads[1..n-1] */
} sonde_threadlist_t;

void sonde_threadlist_init(sonde_threadlist_t *list);
void sonde_threadlist_free(sonde_threadlist_t *list);
/* Lists every thread state of proc's main interpreter into list (grown as
 * needed), the main thread first: the one whose kernel tid is the process
 * id, else the oldest. Out of memory, the threads that do not fit are
 * added to partial->threads_left_out (the main thread still listed).
 * Returns the count, or -errno as sonde_pythread_iter_begin. */
int sonde_threadlist_read(sonde_threadlist_t *list, sonde_pyproc_t *proc, sonde_partial_t *partial);
/* The k-th thread the tick samples (k < list->n). */
const sonde_pythread_t *sonde_threadlist_nth(const sonde_threadlist_t *list, size_t k);
/* Ends a tick that sampled the first `sampled` threads of its order: the
 * others are added to partial->threads_left_out, and the next tick takes
 * them first. */
void sonde_threadlist_tick_end(sonde_threadlist_t *list, size_t sampled, sonde_partial_t *partial);

/* ---- one stack walk (walk.c) ----------------------------------------------------- */

/* Frames a sample's walk reads at most (each read costs a system call or a
 * page of the snapshot): a deeper stack keeps its innermost frames and a
 * marker ending it. `sonde dump` reads up to SONDE_PY_MAX_DEPTH, keeping
 * the root of any real stack. */
#define SONDE_WALK_MAX_READ 1024

typedef struct sonde_walk {
    sonde_aframe_t *frames;    /* borrowed; SONDE_STACK_MAX_DEPTH entries,
                                   or NULL: find the line only */
    uint32_t depth;            /* frames kept, innermost first (limit applied) */
    uint32_t left_out;         /* frames the marker stands for, 0 without */
    sonde_aframe_t line_key;   /* nearest frame of a profiled file with a
                                   line, 0 when none */
    bool have_innermost;       /* the thread had a Python frame */
    sonde_pyframe_t innermost; /* what its innermost frame executes */
    uint64_t innermost_addr;   /* the innermost frame's address */
    uint64_t innermost_back;   /* its caller's frame address (0: none) */
    sonde_aframe_t *spare;     /* borrowed; NULL, or a second buffer like
                                   frames for sonde_walk_thread_checked */
    uint32_t frames_read;      /* frames the walk read (skipped ones too) */
    uint32_t max_read;         /* frames read at most (0: SONDE_WALK_MAX_READ);
                                   a deeper stack is cut before its root */
    bool doubtful;             /* a frame was skipped as not executing code,
                                   or the walk ended at a suspended generator's
                                   frame: the thread moved during the walk */
    bool detached;             /* of those, the walk ended at a suspended
                                   generator's frame: the stack misses its
                                   callers (the line found is still right) */
} sonde_walk_t;

/* Walks tstate's stack, innermost first: finds the nearest line of a
 * profiled file and, with w->frames, keeps the stack (read to its
 * root, whatever its depth, and cut by sonde_stack_keep_end). Without frames the walk ends at the line found.
 * Returns 0, or -errno when a read failed (the sample is then unusable:
 * the caller counts it in failed_reads). */
int sonde_walk_thread(sonde_walk_t *w, sonde_pyproc_t *proc, uint64_t tstate,
                      sonde_codecache_t *codes, const sonde_codefilter_t *filter);

/* The same walk of a thread that runs while it is read (the in-process
 * sampler): a walk is kept when its innermost frame (address, code,
 * caller) is still on the thread's stack afterwards, found among its
 * SONDE_WALK_RECHECK_FRAMES innermost frames, so every frame read was live,
 * and it did not end at a suspended generator's frame (one read just as it
 * yielded has lost its caller link; the innermost frame can be live again
 * by the check);
 * otherwise (a read failed, a frame was skipped as not executing code, the
 * innermost frame was left or torn down) the walk is done again, at most
 * SONDE_WALK_TRIES times in all, or SONDE_WALK_TRIES_MAX while every walk
 * failed or was doubtful. When no walk could be checked (a thread
 * whose innermost frames change faster than a walk: deep recursion, a
 * generator pipeline), the last one that read to its end without a
 * doubtful frame is kept, else the deepest doubtful one: a walk cut short
 * reads a generator frame just as it yields (its caller link is cleared
 * then); sonde_walk_prefer says which. With w->frames, the kept walk's stack is in
 * w->frames only when w->spare is given (the buffers are swapped), else
 * an older walk keeps its line only (depth 0). *retries counts the walks
 * done again. Returns 0, or -errno when every walk failed. */
#define SONDE_WALK_TRIES 4
#define SONDE_WALK_TRIES_MAX 12
#define SONDE_WALK_RECHECK_FRAMES 32
int sonde_walk_thread_checked(sonde_walk_t *w, sonde_pyproc_t *proc, uint64_t tstate,
                              sonde_codecache_t *codes, const sonde_codefilter_t *filter,
                              uint32_t *retries);
/* Whether a walk of rank `rank` (2: read to its end, 1: the same with a
 * doubtful frame) that read `read` frames replaces the best kept so far
 * among walks that could not be checked. Pure. */
bool sonde_walk_prefer(int best_rank, uint32_t best_read, int rank, uint32_t read);

/* ---- Python or native (native.c) ----------------------------------------------- */

/* The constants of the rule (native.c's banner says it whole). */
typedef struct sonde_native_rule {
    uint32_t looks;        /* agreeing looks after the thread ran */
    sonde_ns_t proof_ns;   /* CPU time on the one instruction, at least */
    sonde_ns_t move_ns;    /* a move seen within this much of the thread's CPU
                              time (coarse clock: of wall time) is bytecode;
                              a later one gives no answer */
    sonde_ns_t nap_ns;     /* sleep between looks at a thread that has not run */
    sonde_ns_t confirm_ns; /* after the proof, sleep this long and prove it
                              again (0: no confirmation); then, where the
                              watch can resume the thread's CPU, resume it
                              and prove it a third time */
    bool coarse_clock;     /* the CPU clock moves in lumps (scheduler ticks) */
    /* A thread off the GIL at the first look, where the watch can tell
     * (watch->holds_gil): native once it ran gil_free_proof_ns after the
     * clock's first lump over gil_free_looks looks, never two in a row
     * holding the GIL; looks more than gil_free_gap_ns (at most 2/5 of the
     * switch interval) apart count from there again (gil_free_proof_ns 0:
     * unused) */
    uint32_t gil_free_looks;
    sonde_ns_t gil_free_proof_ns;
    sonde_ns_t gil_free_gap_ns;
} sonde_native_rule_t;

/* A thread's exact CPU clock (the in-process sampler's), and one the
 * kernel publishes in lumps (another process's schedstat: attach). */
extern const sonde_native_rule_t sonde_native_rule_exact;
extern const sonde_native_rule_t sonde_native_rule_coarse;

/* What the rule needs from its front end about one thread. */
typedef struct sonde_native_watch {
    sonde_pyproc_t *proc; /* borrowed; the reader of the thread's process */
    uint64_t tstate;      /* the thread's state */
    /* The thread's CPU time so far in ns, and (a coarse clock) its time
     * spent waiting for a CPU (schedstat's run_delay: it moves when the
     * thread is put on a CPU, and when it moves between run queues while
     * waiting; an exact clock's front end leaves it 0). Returns 0 or
     * -errno. */
    int (*cpu_ns)(void *arg, sonde_ns_t *ns, sonde_ns_t *waited_ns);
    /* Whether a garbage collection ran in the thread since the watch was
     * prepared (NULL: collections are not seen, and judged as C code). */
    bool (*gc_touched)(void *arg);
    /* Returns once the thread's CPU has surely run since the call began
     * (a virtual machine's host may stop a CPU for milliseconds while the
     * guest goes on counting its thread's CPU time): 0, or -errno when it
     * cannot tell. NULL: it cannot (another process's threads). */
    int (*resume)(void *arg);
    /* Whether the thread holds the GIL now: 1, 0, or -errno when it cannot
     * tell. NULL: not asked (the in-process sampler's exact clock needs no
     * such help). */
    int (*holds_gil)(void *arg);
    /* The target's GIL switch interval (sys.setswitchinterval): a thread
     * that takes the GIL keeps it that long unless it lets go itself. 0:
     * unknown, the GIL is not asked. */
    sonde_ns_t gil_switch_ns;
    void *arg;            /* borrowed; passed to all four */
    sonde_ns_t budget_ns; /* wall time spent looking, at most */
} sonde_native_watch_t;

/* Watches the running thread whose stack walk is w (w->have_innermost):
 * whether its running time is native code called from its innermost
 * frame (1), bytecode (0), or unknown (-1: it did not run long enough
 * within the budget, its C work ended while watched, a read failed; a
 * thread found off the GIL is never bytecode). Sleeps between looks. */
int sonde_native_watch(const sonde_native_rule_t *rule, const sonde_native_watch_t *watch,
                       const sonde_walk_t *w);

/* ---- accumulators (accum.c) -------------------------------------------------------- */

/* Time of one (code, line). */
typedef struct sonde_line_acc {
    uint64_t key; /* sonde_aframe_t; 0 = empty slot (a keytab entry) */
    sonde_ns_t python_ns, native_ns, system_ns;
    uint64_t samples;
    uint32_t native_answers, python_answers; /* native or Python, as watched (native.c) */
    /* Running time of samples that got no answer (the thread
     * did not run while it was watched), on a call instruction or not;
     * sonde_line_split shares it out by the line's answers. */
    sonde_ns_t unwatched_call_ns, unwatched_ns;
    /* The other sources' readings charged with the line's samples
     * (src/model/figures.h), weighted by the time each charged;
     * 0 without. */
    sonde_figs_t figs;
} sonde_line_acc_t;

/* One unique stack of one thread slot. */
typedef struct sonde_stack_acc {
    uint64_t hash;   /* 0 = empty slot */
    uint32_t thread; /* thread slot */
    uint32_t depth;
    size_t frames; /* offset into the pool; innermost first */
    uint64_t samples;
    sonde_ns_t ns;
    /* ns by kind (SONDE_KIND_*, model.h), then running time the native rule
     * had no answer for yet (SONDE_STACK_UNWATCHED, on a call instruction
     * or not), shared out at conversion as the leaf line's is
     * (sonde_line_split, by its final answers); 0s when not told */
    sonde_ns_t kind_ns[5];
    sonde_aframe_t leaf; /* the line whose answers share the unwatched time */
} sonde_stack_acc_t;
#define SONDE_STACK_UNWATCHED 3      /* kind_ns index: no answer, not on a call */
#define SONDE_STACK_UNWATCHED_CALL 4 /* kind_ns index: no answer, on a call */

/* What one process's sampling gathered. */
typedef struct sonde_accum {
    sonde_line_acc_t *lines; /* owned; keytab */
    size_t lines_cap, lines_used;
    size_t lines_initial;      /* the lines table's first capacity, a power of
                             two (0: 1024); small for one test's span */
    sonde_stack_acc_t *stacks; /* owned; open addressing */
    size_t stacks_cap, stacks_used;
    sonde_aframe_t *pool; /* owned; frames of every stored stack */
    size_t pool_len, pool_cap;
    pid_t *slot_tids; /* owned; thread slot -> kernel tid */
    size_t n_slots, cap_slots;
    sonde_ns_t unattributed_ns; /* time with no frame of a profiled file */
    sonde_partial_t partial;    /* what this process's profile misses */
} sonde_accum_t;

void sonde_accum_init(sonde_accum_t *acc);
void sonde_accum_free(sonde_accum_t *acc);
/* Empties acc for the next period of a continuous profile (`sonde attach
 * --period`): no lines, stacks, unattributed time or partial counts, but
 * the tables keep their memory and the thread slots their tids, so a long
 * run reuses what its busiest period needed. */
void sonde_accum_clear(sonde_accum_t *acc);
/* The line's accumulator (key non-zero), created zeroed if needed; NULL
 * when memory runs out. Valid until the next call. */
sonde_line_acc_t *sonde_accum_line(sonde_accum_t *acc, sonde_aframe_t key);
/* Charges time to a line: one sample. key 0 charges unattributed time.
 * Out of memory drops the sample (counted in partial.dropped_samples).
 * Returns the line's accumulator, or NULL (unattributed or dropped). */
sonde_line_acc_t *sonde_accum_charge(sonde_accum_t *acc, sonde_aframe_t key, sonde_ns_t python_ns,
                                     sonde_ns_t native_ns, sonde_ns_t system_ns);
/* Charges a sample's running time to a line by the native rule's answer
 * (1 native, 0 Python, -1 none: kept as unwatched time, on a call
 * instruction or not, for sonde_line_split; unattributed time, key 0, is
 * counted whole), and its system time. Returns the line's accumulator, as
 * sonde_accum_charge. */
sonde_line_acc_t *sonde_accum_charge_answer(sonde_accum_t *acc, sonde_aframe_t key,
                                            sonde_ns_t run_ns, int answer, bool in_call,
                                            sonde_ns_t system_ns);
/* The line's Python and native time, with its unwatched time shared out
 * by its answers (before any: native on a call instruction, else Python).
 * Pure. */
void sonde_line_split(const sonde_line_acc_t *line, sonde_ns_t *python_ns, sonde_ns_t *native_ns);
/* The thread slot of a kernel tid (created on first use). Out of memory:
 * slot 0's. */
uint32_t sonde_accum_slot(sonde_accum_t *acc, pid_t tid);
/* Adds samples of a stack (frames innermost first, as sonde_walk_t keeps
 * them; depth at most SONDE_STACK_MAX_DEPTH); a marker frame in it adds
 * its count x samples to partial.frames_left_out. Out of memory drops the
 * sample (partial.dropped_samples). Returns 0 or -ENOMEM. */
int sonde_accum_add_stack(sonde_accum_t *acc, uint32_t thread, const sonde_aframe_t *frames,
                          uint32_t depth, uint64_t samples, sonde_ns_t ns);
/* The same with the time split by kind: kind (SONDE_KIND_*) gets ns, the
 * sampler's and attach reader's stacks (the pprof writer labels them). */
/* One sample of a stack whose innermost line is key: run_ns as the
 * native rule answered (1 native, 0 Python; -1: shared out by the line's
 * answers so far, as sonde_line_split shares the line's own unanswered
 * time; before any, native on a call instruction), system_ns as system
 * time. Call after the line was charged. Returns 0 or -ENOMEM. */
int sonde_accum_add_stack_answer(sonde_accum_t *acc, uint32_t thread, const sonde_aframe_t *frames,
                                 uint32_t depth, sonde_aframe_t key, sonde_ns_t run_ns, int answer,
                                 bool in_call, sonde_ns_t system_ns);
int sonde_accum_add_stack_kind(sonde_accum_t *acc, uint32_t thread, const sonde_aframe_t *frames,
                               uint32_t depth, uint64_t samples, sonde_ns_t ns, int kind);

/* ---- into the model (convert.c) ------------------------------------------------------ */

typedef struct sonde_accum_convert {
    bool per_thread;   /* stacks per thread slot (else merged, thread -1) */
    pid_t main_tid;    /* the tid named "MainThread" (the process's pid) */
    pid_t process_pid; /* non-zero: thread names start "process PID " */
} sonde_accum_convert_t;

/* Adds what acc gathered to prof: each line's times (and the sources' figures)
 * under its file and function, each stack root first (a marker frame
 * named "<N frames left out>"), unattributed time and the partial
 * counters. Code ids are named through names. Returns 0 or -ENOMEM. */
int sonde_accum_to_profile(const sonde_accum_t *acc, const sonde_codenames_t *names,
                           const sonde_accum_convert_t *how, sonde_profile_t *prof);
/* The name of a marker frame standing for count frames, into buf. */
const char *sonde_stack_marker_name(uint32_t count, char *buf, size_t len);

#endif
