/* model.h — the neutral profile model every report writer consumes.
 *
 * Owns: sonde_profile_t (files → lines and functions, with CPU time split
 * into Python / native / system) and the calls that fill it. Producers are
 * the in-process sampler (src/ext/) and the attach reader (src/attach/);
 * consumers are the writers in src/report/. Plain C, no libpython, no
 * signal-safety: build it after sampling has stopped.
 */
#ifndef SONDE_MODEL_H
#define SONDE_MODEL_H

#include "../core/common.h"
#include "figures.h"

/* A value over time: (seconds since the start, megabytes). */
typedef struct sonde_point {
    double t_sec;
    double mb;
} sonde_point_t;

typedef struct sonde_timeline {
    sonde_point_t *points; /* owned; in time order */
    size_t n, cap;
} sonde_timeline_t;

/* Appends a point; returns 0 or -ENOMEM. */
int sonde_timeline_add(sonde_timeline_t *tl, double t_sec, double mb);
void sonde_timeline_free(sonde_timeline_t *tl);

/* Memory figures of a line (sonde run --memory); all zero without it.
 * Allocations are sampled by bytes requested and each sample counts for
 * the bytes and the allocations it stands for (docs/json-format.md); "live"
 * means allocated by the line and not freed yet, wherever freed. */
typedef struct sonde_line_memory {
    double malloc_mb;          /* MB allocated by the line (alloc_space) */
    uint64_t mallocs;          /* allocation samples taken at the line */
    double alloc_objects;      /* allocations made (estimated: alloc_objects) */
    double python_fraction;    /* share of malloc_mb that was Python's allocators */
    double avg_mb, peak_mb;    /* the line's live MB: average over its changes, peak */
    double live_mb;            /* live MB at the end (inuse_space) */
    double live_objects;       /* live allocations at the end (inuse_objects) */
    double live_at_peak_mb;    /* live MB when the program's live heap peaked */
    double copy_mb;            /* MB copied (memcpy/memmove) by the line */
    sonde_timeline_t timeline; /* owned; the line's live MB over time */
    double leak_likelihood;    /* 0..1; 0 when the line is not a leak suspect */
    double leak_velocity_mb_s; /* estimated leak rate when a suspect */
} sonde_line_memory_t;

/* What a profile misses: every count that makes it partial, in one place
 * (docs/json-format.md, "partial"). All zero for a complete profile.
 * Producers add to it (the sampling core, src/sample/; the memory
 * profiler, src/ext/memory*.c; the attach loop); the JSON writer always
 * writes it, the terminal report names the non-zero ones in one line. */
typedef struct sonde_partial {
    uint64_t failed_reads;      /* samples (or thread lists) ended by a failed read,
                                  and stacks not kept because no read of
                                  them came out whole */
    uint64_t dropped_samples;   /* samples taken but not kept: out of memory in
                                  the sampler, dropped memory samples */
    uint64_t threads_left_out;  /* thread samples not taken: a tick listed more
                                  threads than the sampler takes (summed over ticks) */
    uint64_t frames_left_out;   /* frames cut from recorded stacks by the depth
                                  limit (summed over samples) */
    uint64_t processes_lost;    /* processes that could not be followed or read,
                                  or that ended without handing their profile over */
    uint64_t processes_running; /* followed processes still running when the
                                   report was made (sonde run: left out) */
} sonde_partial_t;

/* Adds src's counts to dst. */
void sonde_partial_add(sonde_partial_t *dst, const sonde_partial_t *src);
/* True when any count is non-zero. */
bool sonde_partial_any(const sonde_partial_t *partial);

typedef struct sonde_line_stats {
    int lineno;
    const char *func_name; /* borrowed from the file's funcs: the function of
                              the line's first sample (pprof's locations) */
    int func_firstlineno;  /* that function's first line */
    sonde_ns_t python_ns;  /* on CPU, executing bytecode */
    sonde_ns_t native_ns;  /* on CPU, inside native code called from the line */
    sonde_ns_t system_ns;  /* off CPU, blocked in the kernel (I/O, sleep) */
    uint64_t samples;      /* samples that landed on the line */
    sonde_line_memory_t mem;
    sonde_figs_t figs; /* the sources' figures (figures.h); zero without */
} sonde_line_stats_t;

typedef struct sonde_func_stats {
    char *name;      /* owned; qualified name where the version has it */
    int firstlineno; /* line of the def */
    sonde_ns_t python_ns, native_ns, system_ns;
    uint64_t samples;
    sonde_figs_t figs;       /* over its lines (sonde_figs_combine) */
    sonde_line_memory_t mem; /* over its lines' memory samples (no timeline,
                                no leak figures: those are per line) */
} sonde_func_stats_t;

typedef struct sonde_file_stats {
    char *path;                /* owned; as the interpreter names the file */
    sonde_line_stats_t *lines; /* owned; sorted by lineno after finish */
    size_t n_lines, cap_lines;
    sonde_func_stats_t *funcs; /* owned; sorted by firstlineno after finish */
    size_t n_funcs, cap_funcs;
    char **source; /* owned; source[i] is line i+1 without its
                                 newline; NULL when the file is unreadable */
    size_t n_source;
    sonde_ns_t total_ns; /* sum over the file's lines */
} sonde_file_stats_t;

/* One process a profile covers: a run fills one entry for its own process
 * (src/ext/session.c); a merge appends the other profile's entries. */
typedef struct sonde_process {
    int pid, ppid;
    char *cmdline;   /* owned; arguments joined by spaces; "" when unknown */
    double cpu_sec;  /* the process's CPU time (user + system) */
    double wall_sec; /* its wall-clock time while profiled */
    double peak_mb;  /* its peak resident set (VmHWM, ru_maxrss) */
    bool complete;   /* the profile covers the whole process */
    int followed;    /* sonde run: followed processes it started */
} sonde_process_t;

typedef struct sonde_profile {
    char *program; /* owned; what was profiled (script or module) */
    char **argv;   /* owned; its arguments, argc entries: the
                                 program's sys.argv, argv[0] (the script as
                                 Python saw it) first; reports show
                                 argv[1..] as the arguments */
    int argc;
    char *python_version;       /* owned; "3.11.7" */
    double elapsed_sec;         /* wall-clock time while profiling */
    double interval_sec;        /* sampling interval */
    bool virtual_time;          /* only CPU time was sampled */
    uint64_t samples;           /* sampler ticks taken */
    sonde_ns_t unattributed_ns; /* time with no profiled frame on the stack */
    bool profile_all;           /* every real file was profiled (--profile-all):
                                   no option shows the time outside */
    /* How the program ended, when the profiler saw it
     * (sonde_profile_set_exit): its exit status and the type name of the
     * uncaught exception that ended it ("ModuleNotFoundError"; "" none). */
    bool exit_known;
    int exit_status;
    char exit_exception[64];
    sonde_partial_t partial;   /* what the profile misses; zeros when complete */
    sonde_file_stats_t *files; /* owned; sorted by path after finish */
    size_t n_files, cap_files;
    sonde_ns_t total_ns; /* sum over all files */

    /* Memory (sonde run --memory). */
    bool has_memory;
    double max_footprint_mb;  /* the program's peak footprint */
    double heap_peak_mb;      /* the peak of the sampled live heap (the sum
                                    of the lines' live_at_peak_mb, and of
                                    what no profiled line allocated) */
    char *max_footprint_file; /* owned; the line at the peak, or NULL */
    int max_footprint_lineno;
    sonde_timeline_t footprint; /* owned; the program's footprint over time */

    /* The sources with figures (figures.h): whether each ran, what it read. */
    sonde_fig_run_t fig_runs[SONDE_N_FIGSRCS];

    /* Call stacks (sonde attach/record, sonde run --stacks): unique stacks
     * with their weights, over interned frames. See stacks.c. */
    struct sonde_stack_frame *frames; /* owned; interned */
    size_t n_frames, cap_frames;
    struct sonde_stack *stacks; /* owned */
    size_t n_stacks, cap_stacks;
    struct sonde_stack_index *stack_index; /* owned; lookup, private */
    char **thread_names;                   /* owned; thread i's name (stacks' thread) */
    struct sonde_thread_ids *thread_ids;   /* owned; thread i's pid and tid (0: unknown) */
    size_t n_threads;

    /* The processes profiled, in the order they were added. */
    sonde_process_t *processes; /* owned */
    size_t n_processes, cap_processes;
    int pid; /* the profiled process (one process; 0: unknown or several) */
} sonde_profile_t;

/* One interned frame of a call stack. */
typedef struct sonde_stack_frame {
    char *func; /* owned; function (qualified name where known) */
    char *file; /* owned */
    int line;   /* line being executed in that frame */
} sonde_stack_frame_t;

/* One unique stack (per thread when stacks are kept per thread). */
typedef struct sonde_stack {
    uint32_t *frames; /* owned; indices into prof->frames, root first */
    uint32_t depth;
    int thread; /* index into thread_names, or -1 when merged */
    uint64_t samples;
    sonde_ns_t ns; /* time the stack stood for */
    /* ns by kind: Python, native, system (SONDE_KIND_*); all 0 when the
     * producer did not tell (sonde_profile_add_stack; trace's flat model) */
    sonde_ns_t kind_ns[3];
} sonde_stack_t;

/* The kinds of time, as the line figures split it. */
enum { SONDE_KIND_PYTHON, SONDE_KIND_NATIVE, SONDE_KIND_SYSTEM, SONDE_N_KINDS };

/* Initialises an empty profile. */
void sonde_profile_init(sonde_profile_t *prof);
/* Frees everything the profile owns and leaves it empty. */
void sonde_profile_free(sonde_profile_t *prof);

/* Records what was run (each string copied; NULL leaves a field NULL;
 * argv may hold argc strings, NULL entries becoming ""). Replaces what an
 * earlier call recorded. Returns 0, -EINVAL (argc < 0, or argv NULL with
 * argc > 0) or -ENOMEM (the profile is unchanged on error). */
int sonde_profile_set_run(sonde_profile_t *prof, const char *program, int argc,
                          const char *const *argv, const char *python_version);

/* Records how the program ended: its exit status and, when an uncaught
 * exception ended it, the exception's type name (NULL or "": none; cut to
 * fit). The text report says so when there are no samples. */
void sonde_profile_set_exit(sonde_profile_t *prof, int status, const char *exception);

/* Adds time to a line of a file and to its enclosing function (func_name,
 * func_firstlineno; func_name may be NULL for module-level code, which is
 * then recorded as "<module>"). Adding to the same line twice accumulates.
 * Functions are told apart by (func_firstlineno, func_name). Files, lines
 * and functions stay sorted as they are added.
 * Returns 0, -EINVAL (path NULL) or -ENOMEM (the profile is unchanged on
 * error). */
int sonde_profile_add(sonde_profile_t *prof, const char *path, const char *func_name,
                      int func_firstlineno, int lineno, sonde_ns_t python_ns, sonde_ns_t native_ns,
                      sonde_ns_t system_ns, uint64_t samples);

/* Finds or creates the entry of a line (and its function, as
 * sonde_profile_add does) so that a producer can fill its memory or source
 * figures. Returns the line, or NULL (path NULL, out of memory). The
 * pointer is valid until the next add. */
sonde_line_stats_t *sonde_profile_line(sonde_profile_t *prof, const char *path,
                                       const char *func_name, int func_firstlineno, int lineno);

/* Looks up the entry of a function (never creates it). NULL when absent.
 * The pointer is valid until the next add. */
sonde_func_stats_t *sonde_profile_func(sonde_profile_t *prof, const char *path,
                                       const char *func_name, int func_firstlineno);

/* Adds the sources' figures to a line and to its enclosing function (both
 * created, as sonde_profile_add does, if needed), by the slots' rules
 * (sonde_figs_combine). Returns 0, -EINVAL (path or figs NULL) or -ENOMEM. */
int sonde_profile_add_figs(sonde_profile_t *prof, const char *path, const char *func_name,
                           int func_firstlineno, int lineno, const sonde_figs_t *figs);

/* Adds one sample of a call stack: frames[0..depth-1] root first (each
 * frame's strings copied, frames interned), thread -1 or an index given by
 * sonde_profile_thread. Identical stacks accumulate. Returns 0, -EINVAL or
 * -ENOMEM (unchanged on error). */
int sonde_profile_add_stack(sonde_profile_t *prof, const sonde_stack_frame_t *frames,
                            uint32_t depth, int thread, uint64_t samples, sonde_ns_t ns);
/* The same with the time split by kind (kind_ns[SONDE_KIND_*]; ns is their
 * sum). Same returns. */
int sonde_profile_add_stack_kinds(sonde_profile_t *prof, const sonde_stack_frame_t *frames,
                                  uint32_t depth, int thread, uint64_t samples,
                                  const sonde_ns_t kind_ns[SONDE_N_KINDS]);
/* The index of a thread named `name` (created on first use, its ids 0),
 * or -ENOMEM. */
int sonde_profile_thread(sonde_profile_t *prof, const char *name);

/* A thread's process and kernel thread ids (0: unknown). */
typedef struct sonde_thread_ids {
    int pid;
    int tid;
} sonde_thread_ids_t;

/* The index of the thread named `name` with process id pid and kernel
 * thread id tid (created on first use): threads of several processes, or
 * two threads of one process, that share a name stay apart. pid and tid
 * 0: the same as sonde_profile_thread. Returns it or -ENOMEM. */
int sonde_profile_thread_of(sonde_profile_t *prof, const char *name, int pid, int tid);

/* Records thread index's ids (an index sonde_profile_thread gave; others
 * are ignored). */
void sonde_profile_thread_ids(sonde_profile_t *prof, int index, int pid, int tid);

/* Sorts files, lines and functions, computes totals and loads each file's
 * source text from disk (a missing file leaves source NULL). Returns 0 or
 * -ENOMEM. May be called again after more adds: totals are recomputed and
 * sources reloaded. Source loading: regular files only, at most 16 MiB
 * (model_internal.h); "\n", "\r\n" and "\r" end lines; a UTF-8 BOM is
 * dropped; an empty readable file gives source non-NULL, n_source 0. */
int sonde_profile_finish(sonde_profile_t *prof);

/* Gives the file named path, when the profile has it and finish found no
 * source for it on disk, the text held in memory (len bytes; an IPython
 * cell's code, from Python's linecache), split into lines by the rules
 * above. Call after sonde_profile_finish (which reloads sources from
 * disk). Returns 0 (also when there is no such file, or it has a source)
 * or -ENOMEM. */
int sonde_profile_set_source(sonde_profile_t *prof, const char *path, const char *text, size_t len);

/* Appends a process (its cmdline copied; NULL becomes ""). Returns 0 or
 * -ENOMEM (unchanged on error). */
int sonde_profile_add_process(sonde_profile_t *prof, const sonde_process_t *process);

/* Finds or creates the entry of a line without touching any function
 * (readers of a saved profile, merges: functions come separately). Returns
 * the line, or NULL (path NULL, out of memory). Valid until the next add. */
sonde_line_stats_t *sonde_profile_line_only(sonde_profile_t *prof, const char *path, int lineno);

/* Finds or creates the entry of a function without touching any line
 * (func_name NULL: "<module>"). Returns it, or NULL (path NULL, out of
 * memory). Valid until the next add. */
sonde_func_stats_t *sonde_profile_func_entry(sonde_profile_t *prof, const char *path,
                                             const char *func_name, int func_firstlineno);

/* Recomputes the files' and the profile's total_ns from the lines, as
 * sonde_profile_finish does, without touching sources. */
void sonde_profile_sum(sonde_profile_t *prof);

/* Adds src into dst (merge.c): the same file, line and function add up
 * (times, samples, memory sums; peaks keep the highest; timelines merge in
 * time order), stacks and threads (by name) and the partial counts add,
 * the elapsed time is the longer, sampler ticks add, src's processes are
 * appended, and a file dst has no source for takes src's. Run information
 * (program, arguments, version, exit) that dst lacks comes from src.
 * Totals are recomputed (sonde_profile_sum). Returns 0, -EINVAL (dst or
 * src NULL, or the same) or -ENOMEM (dst may then hold part of src). */
int sonde_profile_merge(sonde_profile_t *dst, const sonde_profile_t *src);

/* Looks up a file by path; NULL if absent (or path NULL). The pointer is
 * valid until the next sonde_profile_add or sonde_profile_free. */
sonde_file_stats_t *sonde_profile_file(sonde_profile_t *prof, const char *path);

#endif
