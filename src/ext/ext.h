/* ext.h — internal interface of the extension module (sonde._sonde).
 *
 * Owns: the pieces that live inside the profiled interpreter: the file
 * filter, the sampler thread, the profiling session and the boot hook.
 * Functions ending in _gil must be called with the GIL held; the sampler
 * thread never takes the GIL.
 */
#ifndef SONDE_EXT_H
#define SONDE_EXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "../core/buf.h"
#include "../core/keytab.h"
#include "../launch/options.h"
#include "../model/model.h"
#include "../prim/prim.h"
#include "../pyread/pyread.h"
#include "../sample/sample.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

/* ---- which files are profiled (filter.c) --------------------------------- */

/* The rule of the sampling core (src/sample/filter.c), filled from the
 * running interpreter. */
typedef sonde_codefilter_t sonde_filter_t;

/* Builds the filter from options and the running interpreter (standard
 * library, site-packages, sonde's own package). program is how the
 * program was started (sys.argv[0], or SONDE_RUN_PROGRAM): "-c" makes
 * "<string>" a profiled file, "-" (a script read from standard input)
 * "<stdin>". Returns 0 or -ENOMEM. */
int sonde_filter_init_gil(sonde_filter_t *filter, const sonde_run_opts_t *opts,
                          const char *sonde_pkg_dir, const char *program);
void sonde_filter_free(sonde_filter_t *filter);

/* ---- source text of code with no file: IPython cells (cells.c) ------------- */

typedef struct sonde_cell {
    char *path; /* owned; the name the code was compiled under */
    char *text; /* owned; the lines joined; NULL when empty */
    size_t len;
} sonde_cell_t;

typedef struct sonde_cells {
    sonde_cell_t *items; /* owned */
    size_t n, cap;
    size_t bytes; /* sum of the texts' lengths */
} sonde_cells_t;

/* Copies from Python's linecache (when the program imported it) the text
 * of every entry with no regular file behind it (IPython's cells) whose
 * name filter profiles, within fixed bounds. Returns 0 (cells filled,
 * maybe empty) or -ENOMEM (cells empty). No Python exception is left set. */
int sonde_cells_collect_gil(sonde_cells_t *cells, const sonde_filter_t *filter);
/* Gives each cell's text to the profile's file of that name when finish
 * found no source for it (sonde_profile_set_source). No Python API.
 * Returns 0 or -ENOMEM. */
int sonde_cells_apply(const sonde_cells_t *cells, sonde_profile_t *prof);
void sonde_cells_free(sonde_cells_t *cells);

/* ---- the sampler thread (sampler.c) --------------------------------------- */

struct sonde_sources;

typedef struct sonde_sampler {
    /* Set before start, read-only while running. */
    sonde_ns_t interval_ns;
    bool virtual_time;
    bool record_stacks;           /* keep each sample's call stack */
    bool prior_threads_out;       /* leave out the threads present at the first
                                     tick, but the one that started the sampler */
    uint64_t start_tstate;        /* that one's thread state (set by start) */
    const sonde_filter_t *filter; /* borrowed */
    /* borrowed; NULL: none. The sampling sources (sources.c): the sampler
     * thread launches them after its first tick and takes their readings
     * at every tick, and for each thread it charges, charged with each
     * sample (sonde_sources_tick, sonde_sources_thread). */
    const struct sonde_sources *sources;
    void (*on_terminate)(void); /* called on the sampler thread after
                                       SIGTERM was seen; may not return */
    /* called on the sampler thread when no Python thread is left while
     * the session runs (a child forked from a thread other than the main
     * one, whose forking thread then ended as a thread): the process lives
     * on only for the sampler, as it would not under plain python; NULL:
     * not watched. Does not return. */
    void (*on_orphaned)(void);
    int empty_ticks; /* consecutive ticks that found no Python thread */
    /* An injected session (`sonde attach --inject`): the sonde command
     * that waits for the profile. Once a second the sampler thread looks
     * whether it still runs; when it is gone (killed), the thread calls
     * on_abandoned and ends, sampling no more. 0: not watched. */
    pid_t watch_pid;
    void (*on_abandoned)(void);
    sonde_ns_t watch_next_ns; /* sampler thread: the next look */
    _Atomic bool abandoned;   /* the thread ended so */
    /* Continuous profiles (`sonde run --period`, src/collect/): the
     * collector's period count, a word in a file it shares with every
     * profiled process (NULL: no periods). When it changes, the sampler
     * thread calls on_period(count) after its tick, which hands what was
     * sampled since the last period over and calls
     * sonde_sampler_period_reset. */
    const _Atomic uint64_t *period_word;
    uint64_t period_seen; /* the count last handed over (sampler thread) */
    void (*on_period)(uint64_t count);
    /* Owned by the sampler thread while it runs; read by others only after
     * sonde_sampler_stop returned. */
    sonde_pyproc_t proc;
    sonde_accum_t acc;               /* lines, stacks (record_stacks), partial counts */
    sonde_codecache_t codes;         /* the filter's verdict per code id */
    sonde_threadreg_t threads;       /* of struct sonde_sampler_thread */
    sonde_threadlist_t tick_threads; /* the current tick's thread states */
    sonde_ns_t start_ns, stop_ns, last_tick_ns;
    uint64_t ticks;
    sonde_ns_t period_start_ns; /* the current period's start (0: the run's) */
    uint64_t period_ticks0;     /* ticks when it started */
    uint64_t rng;
    bool first_tick;
    bool tick_has[SONDE_N_FIGSRCS];    /* the tick has a reading of the source */
    double tick_reading[SONDE_N_FIGS]; /* its readings, by the sources' slots */
    /* The readings charged with the thread being charged: the tick's, but
     * for the sources that read per thread (sonde_sources_thread). */
    bool charge_has[SONDE_N_FIGSRCS];
    double charge_reading[SONDE_N_FIGS];
    sonde_accum_t *spans;     /* owned; span id i's lines at [i - 1] (spans.c) */
    size_t n_spans;           /* entries allocated in spans */
    sonde_accum_t *tick_span; /* the current tick's span, or NULL */
    /* Shared. */
    _Atomic uint32_t span; /* the span open now (1-based), 0 none: written
                                  with the GIL (spans.c), read at each tick */
    pthread_t thread;
    bool thread_started;       /* written by the starting thread only */
    _Atomic pid_t thread_tid;  /* kernel id of the sampler thread */
    bool can_resume;           /* the reader is open: a paused thread may restart */
    sonde_prim_wake_t wake;    /* stop or SIGTERM */
    sonde_prim_wake_t started; /* the thread's first tick is done */
    atomic_bool baseline_done; /* ... (set before started is signalled) */
    atomic_bool stop_requested;
    atomic_bool term_requested;
} sonde_sampler_t;

/* Opens the reader for this interpreter and starts the sampler thread.
 * Returns 0 or -errno (nothing started on error). */
int sonde_sampler_start_gil(sonde_sampler_t *s);
/* Asks the sampler thread to stop and joins it (releasing the GIL while
 * waiting when called with it). Idempotent. */
void sonde_sampler_stop(sonde_sampler_t *s);
/* Stops the sampler thread around a fork (its tables are kept), so that
 * the program forks with no thread of ours (3.12+ warns about forking a
 * multi-threaded process); resume starts it again. Returns 0 or -errno. */
void sonde_sampler_pause(sonde_sampler_t *s);
int sonde_sampler_resume(sonde_sampler_t *s);
/* Async-signal-safe: asks the sampler thread to run on_terminate. */
void sonde_sampler_signal_terminate(sonde_sampler_t *s);
/* Converts what was sampled (since the current period began, with
 * periods) into a profile: after stop, or on the sampler thread (its
 * on_terminate and on_period callbacks). cwd resolves relative file
 * names. Returns 0 or -ENOMEM. */
int sonde_sampler_to_profile(sonde_sampler_t *s, const char *cwd, sonde_profile_t *prof);
/* Starts a new period: empties the accumulators (their memory kept).
 * Sampler thread only (on_period), or while it is paused or stopped. */
void sonde_sampler_period_reset(sonde_sampler_t *s);
/* Frees everything (after stop). */
void sonde_sampler_free(sonde_sampler_t *s);

/* ---- the profiling session (session.c) ------------------------------------ */

/* Starts a session with opts (copied). from_run: started by `sonde run`.
 * program/args describe the program for the report. Returns 0, or -errno
 * with a Python exception set. */
int sonde_session_start_gil(const sonde_run_opts_t *opts, bool from_run, const char *program);
/* Before sonde_session_start_gil (boot.c): the collector's directory (NULL:
 * processes are not followed), whether this process is a child, whose
 * profile goes there as JSON rather than to the report, and how many
 * os.exec* of the interpreter led to this image (the collector names the
 * report after it). Copied. */
void sonde_session_set_collector(const char *dir, bool child, int gen);
/* Before sonde_session_start_gil, after sonde_session_set_collector(dir,
 * true, 0): the next session is one `sonde attach --inject` started in a
 * live process (module.c's _inject_start): it installs no SIGTERM handler
 * and wraps no os.exec*, and hands its profile to dir at its stop; its
 * sampler ends by itself, and the directory is removed, once watch_pid
 * (the command) is gone. */
void sonde_session_set_injected(pid_t watch_pid);
/* Whether the session running here is an injected one handing over to
 * dir (a second request of the same attach, taken by another thread). */
bool sonde_session_injected_into(const char *dir);
/* An injected session whose command is gone (its sampler ended so) is
 * dropped without a report, so that a new one can start. Never raises. */
void sonde_session_drop_abandoned_gil(void);
/* In a forked child (boot.c): drops the parent's session without a report
 * and starts one for this process as a child of the collector in dir.
 * Returns 0 or -errno with an exception. */
int sonde_session_restart_in_child_gil(const sonde_run_opts_t *opts, const char *dir);
/* The program started a Python process that is followed (exec.c): the
 * report of this process goes to the collector too, to be merged. */
void sonde_session_note_spawn(void);
/* Stops the session and writes its report. Returns 0, or -errno with a
 * Python exception set (0 and nothing done if no session is active). */
int sonde_session_stop_gil(void);
bool sonde_session_from_run(void);
/* For os.execv/execve of this same interpreter (exec.c): puts the hand-over
 * of this process's `sonde run`/`sonde trace` boot into env (a dict, the
 * new program's environment), so that the new program is profiled too, as
 * a second run whose report goes to this run's file name with ".exec<N>"
 * before its extension (or the terminal). argv: the new command line.
 * Returns 1 done, 0 nothing handed over (no boot in this process, a command
 * line that runs no program, or the hand-over failed: the program then
 * runs unprofiled), 2 (spawn only) a process to follow that cannot be (no
 * directory for its profile: count it once started), -1 with a Python
 * exception (out of memory). */
int sonde_boot_exec_env_gil(PyObject *argv, PyObject *env, bool spawn);
/* spawn: the same for a new process (subprocess, multiprocessing's spawn
 * and forkserver: exec.c wraps _posixsubprocess.fork_exec), which is
 * profiled as a child handing its profile to the collector; only when the
 * run follows processes (returns 0 otherwise). */
/* In a child just forked (os.register_at_fork's after_in_child, session.c):
 * when the run follows processes, the parent's session is dropped and a
 * new one started for this process, handing its profile to the collector.
 * Returns 0 (also when nothing is followed) or -1 with an exception. */
int sonde_boot_fork_child_gil(void);
/* The report file of the session in this process (absolute), NULL when it
 * goes to the terminal or no session runs here. */
const char *sonde_session_outfile(void);
/* The active session's sampler (this process's, report not written yet)
 * and, in *cwd (borrowed), its working directory; NULL without one. */
sonde_sampler_t *sonde_session_sampler_gil(const char **cwd);
/* os.exec* (exec.c): before, the session's report is written (its threads
 * paused); after an exec that failed, the threads go on. No-ops without a
 * session of this process. Never raise. */
void sonde_session_before_exec_gil(void);
/* Before os._exit(status) (exec.c): notes the status and writes the report;
 * status may be NULL (not an int: unknown). Never raises. */
void sonde_session_before_os_exit_gil(PyObject *status);
void sonde_session_after_exec_gil(void);
/* True in a process forked by _posixsubprocess.fork_exec on its way to an
 * exec (and in its parent while the call runs): at-fork hooks leave it. */
bool sonde_exec_in_fork_exec(void);

/* ---- spans: named stretches of a session, such as tests (spans.c) ----------
 * A span's time is charged to its own lines as well as the session's: the
 * sampler charges each tick to the span open at that tick. One span is
 * open at a time. */

/* Opens a span named `name` (copied), closing the one open. Returns 1, 0
 * when no session of this process runs (nothing recorded), or -1 with an
 * exception. */
int sonde_spans_begin_gil(const char *name);
/* Closes the open span, if any. */
void sonde_spans_end_gil(void);
/* Appends to out the n_spans longest spans (wall time), each with its
 * n_lines lines of most time, lines clipped to width columns
 * (src/report/spans.c), briefly pausing the sampler to read them. Returns
 * 0 (nothing appended without a session or spans) or -ENOMEM. */
int sonde_spans_text_gil(sonde_buf_t *out, int n_spans, int n_lines, int width);
/* Forgets every span (the session ends). */
void sonde_spans_clear_gil(void);

/* ---- boot (boot.c) ----------------------------------------------------------- */

/* The sitecustomize hook of `sonde run`. Returns 1 if it imported a
 * sitecustomize module that ours shadowed, 0 if there was none, or -1 with
 * an exception. */
int sonde_boot_gil(void);

/* Directory of the sonde package (owned by module.c; set at import). */
extern char sonde_ext_pkg_dir[4096];
/* The first <prefix>/bin/sonde above the package (sonde_ext_pkg_dir) that
 * is an executable file, into buf. Returns 0, or -ENOENT with the nearest
 * candidate (the build tree's) in buf, or -ENAMETOOLONG. */
int sonde_ext_command_path(char *buf, size_t len);

/* ---- services shared with the tracer's boot (exec.c, gzip.c, boot.c) -------------
 * src/trace/ reaches these only through the sonde_trace_host_t that
 * boot.c gives sonde_trace_boot_gil (trace.h), never by name. */

/* (exec.c) Puts wrappers in place of os.execv and os.execve that have the
 * session and the boot profile write their reports before the process is
 * replaced; counted: the last unwrap gives the functions back (if they are
 * still the wrappers). Wrap returns 0 or -1 with an exception; unwrap
 * never fails. */
int sonde_exec_wrap_gil(void);
void sonde_exec_unwrap_gil(void);

/* (gzip.c) The module's compress callback for pprof (sonde_compress_fn,
 * report.h): gzip through the interpreter's own zlib module (compressobj
 * with wbits 31), so that the module links no zlib. Runs when this thread
 * holds the GIL, or takes it back (PyGILState) when arg is
 * SONDE_EXT_GZIP_TAKE_GIL (a Python thread that released it); elsewhere
 * (the report after SIGTERM, on the sampler thread), or without a zlib
 * module, it returns -ENOSYS and the writer leaves the protobuf
 * uncompressed. Never raises (a pending exception is kept). Returns 0,
 * -ENOSYS or -ENOMEM. */
int sonde_ext_gzip(const void *data, size_t len, struct sonde_buf *out, void *arg);
#define SONDE_EXT_GZIP_TAKE_GIL ((void *)1)

/* (boot.c) True when the interpreter could not start the program's main
 * script: it reported (sys.last_value) an exception that no frame raised
 * (sys.last_traceback is None), other than KeyboardInterrupt: a syntax
 * error, a NUL byte or undecodable source met while compiling the script.
 * Python's traceback is then all the output; the exit hooks of `sonde run`
 * and `sonde trace` write no report. Never raises. */
bool sonde_boot_script_failed_gil(void);

/* ---- fatal signals (crash.c) ---------------------------------------------------- */

/* A `sonde run` session's handlers of SIGSEGV, SIGBUS, SIGILL, SIGFPE and
 * SIGABRT, where their disposition is the default: the report from the
 * sampler thread (on_terminate), one line, then the signal's own end. */
void sonde_crash_install(sonde_sampler_t *sampler);
void sonde_crash_remove(void);
/* The fatal signal being handled (0: none) and its name; on_terminate
 * tells the handler the report is written with sonde_crash_reported. */
int sonde_crash_signal(void);
const char *sonde_crash_signal_name(void);
void sonde_crash_reported(void);

/* ---- the program's followed processes (children.c) --------------------------------- */

/* The part a process plays when `sonde run` follows processes. */
enum {
    SONDE_CHILDREN_ROOT = 0,   /* the process `sonde run` started: writes the report */
    SONDE_CHILDREN_CHILD = 1,  /* a followed process: hands its profile over */
    SONDE_CHILDREN_SERVICE = 2 /* one of multiprocessing's helpers (forkserver,
                                  resource tracker), which end after the root:
                                  never waited for */
};
/* At boot: whether the run follows processes, the directory handed over
 * (NULL: none yet), this process's role and the run's encoded options. */
void sonde_children_init(bool follow, const char *dir, int role, const char *options);
/* Whether this process follows the processes it starts. */
bool sonde_children_follow(void);
int sonde_children_role(void);
/* The private directory (NULL: none, or not this process's). */
const char *sonde_children_dir(void);
/* The directory when it was handed over to this process (a child's, or
 * the collector's of --period), not made here; else NULL. */
const char *sonde_children_dir_handed(void);
/* Before a followed process starts: the directory, made by the root on
 * first use (again if the program removed it). NULL when it cannot be
 * made (the process is then not followed: sonde_children_note_spawn(false))
 * or this process does not follow. */
const char *sonde_children_dir_ensure(void);
/* A process was started: followed (it hands its profile over), or not for
 * want of a directory (counted lost). */
void sonde_children_note_spawn(bool followed);
/* Followed processes this process started (its profile says so). */
unsigned sonde_children_spawned(void);
/* In a forked child that is followed: it becomes a child of the directory. */
void sonde_children_forked(void);
/* Whether the root's report merges its followed processes (or says that
 * some could not be followed). */
bool sonde_children_merges(void);
/* The root's report alone (no directory, or sonde_children_finish failed):
 * counts in prof the processes that could not be followed (and says so in
 * one line) and the followed processes it started, whose profiles no one
 * merges (their own children are not known here: at least that many). */
void sonde_children_account_alone(sonde_profile_t *prof);
/* The root's end: hands prof over, runs the command that waits, merges
 * and writes the report to outfile (NULL: stderr), and waits for it.
 * Returns 0 (the report is written, or the command said why not) or
 * -errno after one line (the caller then writes prof's report alone). */
int sonde_children_finish(const sonde_profile_t *prof, const char *outfile);
/* The root's end with --period, after its last hand-over: tells the
 * period helper (SONDE_HANDOVER_ENDING; terminated: the program ends by SIGTERM) and waits while
 * it sends the last periods (SONDE_HANDOVER_DRAINED, or the helper gone). */
void sonde_children_periods_end(bool terminated);
/* SIGTERM while the root waits: the merging command ends its wait now.
 * Async-signal-safe. */
void sonde_children_on_sigterm(void);

/* ---- memory profiling (memory.c, memory_hook.c) ----------------------------------
 * `sonde run --memory`: the allocator shim (src/shim/, preloaded) counts
 * bytes per thread and calls memory_hook.c from inside allocator hooks,
 * on the thread concerned, to charge samples to its current line. */

#include "../shim/shim.h"

/* The accumulator key of the function a line key belongs to: its code
 * object with the line number 0xffffffff (never a line's; never 0, the
 * empty slot, even for code id 0). */
#define SONDE_MEMORY_FUNC_LINE 0xffffffffu
#define SONDE_MEMORY_FUNC_KEY(line_key)                                                            \
    (((line_key) & ~(uint64_t)0xffffffffu) | SONDE_MEMORY_FUNC_LINE)

/* What the memory profiler gathered about one (code, line), or one code
 * object's function. Allocation samples carry their expected weight
 * (bytes they stand for); "live" figures go up with a remembered sample
 * and down when it is freed, wherever the free happens. */
typedef struct sonde_memory_line {
    uint64_t key;           /* code_id << 32 | lineno (SONDE_MEMORY_FUNC_LINE
                                   for the code's function); 0 = empty slot */
    uint64_t alloc_samples; /* allocation samples taken here */
    double alloc_bytes;     /* bytes they stand for (alloc_space) */
    double alloc_objects;   /* allocations they stand for (alloc_objects) */
    double python_bytes;    /* the Python share of alloc_bytes */
    double live_bytes;      /* remembered samples not freed yet (inuse_space) */
    double live_objects;    /* their count, weighted (inuse_objects) */
    double peak_live_bytes; /* highest live_bytes */
    double live_sum_bytes;  /* sum of live_bytes after each change */
    uint64_t live_changes;
    double live_at_peak_bytes; /* live_bytes when the program's sampled live
                                   heap last peaked (valid when peak_epoch
                                   differs from sonde_memory_t's) */
    uint64_t peak_epoch;       /* the program's peak_epoch at the last change */
    uint64_t copy_bytes;       /* bytes copied (memcpy/memmove) */
    uint64_t tracked;          /* remembered samples (leak test: n) */
    uint64_t freed;            /* of those, freed (leak test: f) */
    sonde_timeline_t timeline; /* owned; live_bytes (MB) over time */
} sonde_memory_line_t;

typedef struct sonde_memory {
    /* Set while starting (GIL), read-only while running. */
    bool started;                 /* between start and free */
    bool running;                 /* the shim is counting */
    const sonde_filter_t *filter; /* borrowed */
    uint64_t sample_bytes;        /* mean bytes between allocation samples */
    uint64_t copy_sample_bytes;   /* mean bytes between copy samples */
    sonde_ns_t start_ns, stop_ns;
    int64_t baseline_bytes; /* footprint when profiling started */
    int64_t final_bytes;    /* footprint when it stopped */
    sonde_shim_stop_fn shim_stop;
    sonde_shim_footprint_fn shim_footprint;
    sonde_shim_guarded_fn shim_guarded;              /* NULL: an older shim (no periods) */
    sonde_shim_pyalloc_t original_mem, original_obj; /* Python's, restored at stop */
    bool wrapped_mem, wrapped_obj;
    /* Protected by lock, which is taken only inside allocator hooks (the
     * shim's guard set: anything allocated under it comes straight from
     * the real allocator) and, after the shim has stopped, by the report. */
    pthread_mutex_t lock;
    sonde_pyproc_t proc;        /* direct reader of this process */
    sonde_codecache_t codes;    /* the filter's verdict per code id */
    sonde_memory_line_t *lines; /* owned; open addressing */
    size_t lines_cap, lines_used;
    sonde_timeline_t footprint; /* owned; program footprint over time */
    double last_footprint_t;    /* time of its last point */
    double max_footprint_mb;
    uint64_t max_footprint_key; /* line of the sample at the peak */
    double heap_live_bytes;     /* every remembered sample not freed */
    double heap_peak_bytes;     /* its highest value */
    uint64_t peak_epoch;        /* bumped at each new heap_peak_bytes */
    uint64_t samples, unattributed_samples, copy_samples;
    uint64_t untracked;    /* samples the shim could not remember
                                         (its table was full) */
    uint64_t dropped;      /* samples (or timeline points) lost to
                                         out of memory: partial.dropped_samples */
    uint64_t failed_reads; /* stacks that could not be read */
} sonde_memory_t;

/* Starts memory profiling for the session: finds the shim, wraps Python's
 * allocators and starts counting. Returns 0, or -errno with a Python
 * exception set (-ENOTSUP: the shim is not loaded). */
int sonde_memory_start_gil(sonde_memory_t *m, const sonde_run_opts_t *opts,
                           const sonde_filter_t *filter);
/* Stops counting and waits for samples in progress; no GIL needed (the
 * SIGTERM path runs it on the sampler thread). Idempotent. */
void sonde_memory_stop(sonde_memory_t *m);
/* Puts Python's allocators back (after stop). */
void sonde_memory_restore_gil(sonde_memory_t *m);
/* Adds what was gathered to prof (after stop): per line figures, the
 * program's footprint, likely leaks. Returns 0 or -ENOMEM. */
int sonde_memory_to_profile(sonde_memory_t *m, const char *cwd, sonde_profile_t *prof);
/* The same while counting goes on (`sonde run --period`, on the sampler
 * thread): the figures of the period since the last call (allocations,
 * copies; live figures as they are now), whose counts are then emptied.
 * Returns 0, -ENOMEM or -ENOSYS (a shim without sonde_shim_guarded). */
int sonde_memory_period_to_profile(sonde_memory_t *m, const char *cwd, sonde_profile_t *prof);
/* Frees everything (after stop). */
void sonde_memory_free(sonde_memory_t *m);

/* The shim's callback (memory_hook.c): runs inside allocator hooks. */
uint64_t sonde_memory_on_event(void *ctx, const sonde_shim_event_t *event);

/* ---- sampling sources (sources.c) ---------------------------------------------------
 * What a session samples comes from sources: the CPU sampler (the sampling
 * core: its thread ticks, and every other source's readings ride on its
 * charges), the memory profiler, a device reader. Each is one row of
 * operations in its own file; the session starts, pauses, stops and
 * converts "the sources" (sonde_sources_*) without naming any. A source
 * with per-line figures has a descriptor in src/model/figures.c, which is
 * how the reports show them. Adding a source: its file here, its row in
 * sources.c, its slots and descriptor in src/model/figures.{h,c}. */

/* What a source gets when the session starts it. */
typedef struct sonde_source_ctx {
    const sonde_run_opts_t *opts;    /* the session's (strings valid during start) */
    const sonde_filter_t *filter;    /* borrowed: which files are profiled */
    sonde_sampler_t *sampler;        /* the sampling core (the CPU source's state) */
    const struct sonde_sources *set; /* all of them (the core ticks them) */
} sonde_source_ctx_t;

/* What the sampler knows of a thread it charges in a tick, for the
 * sources that read per thread. */
typedef struct sonde_source_thread {
    sonde_thread_key_t key;  /* its thread state and kernel tid */
    sonde_ns_t cpu_ns;       /* its CPU clock as the tick read it */
    sonde_ns_t cpu_delta_ns; /* its CPU time since its previous tick */
    sonde_ns_t run_ns;       /* what the tick charges it as running (its CPU
                                time, and its run-queue wait in wall-clock mode) */
    sonde_ns_t system_ns;    /* ... and as blocked in a system call */
} sonde_source_thread_t;

/* One source's operations; NULL: nothing to do at that point. */
typedef struct sonde_source_ops {
    const char *name;
    int figs;          /* SONDE_FIGSRC_* of its per-line figures, -1: none */
    size_t state_size; /* its state, zeroed before start; 0: the sampler */
    /* With the GIL. Starts it when the options ask for it (0 also when
     * they leave it off), or -errno with a Python exception set. */
    int (*start_gil)(void *state, const sonde_source_ctx_t *ctx);
    /* Sampler thread, once, after its first tick (off the program's start). */
    void (*launch)(void *state);
    /* Sampler thread, every tick: its reading for the tick's charges, one
     * value per slot of its figures; false: none this tick. Bounded,
     * lock-free, no allocation. */
    bool (*tick)(void *state, double *reading);
    /* Sampler thread, for each thread it charges in a tick (after tick,
     * before its charges): the reading for that thread's charges alone,
     * one value per slot; false: none for this thread. For figures that
     * belong to one thread (a garbage collection is the collecting
     * thread's), which tick's reading, charged with every thread, would
     * give to all of them. Where a source has both, this one replaces
     * tick's for the thread. Bounded, lock-free, no allocation. */
    bool (*thread)(void *state, const sonde_source_thread_t *thread, double *reading);
    /* With the GIL, around fork() and os.exec*: no thread of its own left
     * running; resume in the parent (or after a failed exec). */
    void (*pause_gil)(void *state);
    void (*resume_gil)(void *state);
    /* Before the report: stops sampling (any thread, no GIL needed). */
    void (*halt)(void *state);
    /* Adds what it gathered to prof (period: what it gathered since the
     * last period, whose counts it then empties, while sampling goes on).
     * No Python API. Returns 0 or -errno. */
    int (*to_profile)(void *state, const char *cwd, sonde_profile_t *prof, bool period);
    /* Runs fn(arg) so that what fn does is not counted by the source (the
     * memory profiler's shim guard). Returns false when it cannot (fn not run). */
    bool (*guarded)(void *state, void (*fn)(void *), void *arg);
    /* With the GIL (or in a forked child): stops it for good, gives back
     * what it took from the interpreter and frees what it owns. Must
     * accept a state that was never started (zeroed). */
    void (*release_gil)(void *state);
} sonde_source_ops_t;

/* The most rows sources.c's table may have (it checks its own count). */
#define SONDE_MAX_SOURCES 8

typedef struct sonde_sources {
    void *state[SONDE_MAX_SOURCES]; /* each row's state (kept for the process's
                                       life: a late hook never sees freed memory) */
    bool started[SONDE_MAX_SOURCES];
} sonde_sources_t;

/* Starts every source in the table's order, the sampler (the CPU source's
 * state, configured by the caller) among them. Returns 0, or -errno with
 * a Python exception set (the ones started are released). */
int sonde_sources_start_gil(sonde_sources_t *set, sonde_sampler_t *sampler,
                            const sonde_run_opts_t *opts, const sonde_filter_t *filter);
/* Sampler thread: launch after the first tick; tick every tick; thread
 * for each thread charged in the tick, over a copy of the tick's readings
 * (the per-thread sources' replace theirs). */
void sonde_sources_launch(const sonde_sources_t *set);
void sonde_sources_tick(const sonde_sources_t *set, bool has[SONDE_N_FIGSRCS],
                        double reading[SONDE_N_FIGS]);
void sonde_sources_thread(const sonde_sources_t *set, const sonde_source_thread_t *thread,
                          bool has[SONDE_N_FIGSRCS], double reading[SONDE_N_FIGS]);
/* Around fork() and os.exec* (GIL): pause in reverse order, resume in order. */
void sonde_sources_pause_gil(sonde_sources_t *set);
void sonde_sources_resume_gil(sonde_sources_t *set);
/* Stops sampling before the report. */
void sonde_sources_halt(sonde_sources_t *set);
/* Every source's figures into prof (see to_profile). Returns 0 or -errno. */
int sonde_sources_to_profile(sonde_sources_t *set, const char *cwd, sonde_profile_t *prof,
                             bool period);
/* Runs fn(arg) uncounted by every source that counts (see guarded). */
void sonde_sources_guarded(sonde_sources_t *set, void (*fn)(void *), void *arg);
/* Releases every source, in reverse order. */
void sonde_sources_release_gil(sonde_sources_t *set);

#endif
