/* attach.h — internal interface of the attach reader (sonde attach/record/dump).
 *
 * Owns: the pieces of the remote sampler, a separate process that reads a
 * running CPython's memory (src/pyread/) and the kernel's view of its
 * threads (src/prim/remote.c) without loading anything into it:
 *   target.c   one sampled process: its threads, one tick of sampling
 *   sampler.c  the sampling loop: rate, duration, stop flag, several
 *              processes, following child processes, progress
 *   profile.c  what was sampled -> the neutral model (src/model/)
 *   dump.c     `sonde dump`: every thread's stack once, as text
 *   spawn.c    `sonde record`: starting the command
 * The bookkeeping (code filter and its cache, thread registry, stack walk
 * and depth limit, line and stack accumulators, conversion into the model,
 * partial-profile counters) is the sampling core's (src/sample/), shared
 * with `sonde run`'s in-process sampler. Called by the CLI (src/cli/attach.c). This code is also linked into the
 * extension module (`python3 -m sonde attach`), so it never exits, never
 * prints (errors are -errno; progress goes through a callback) and never
 * touches libpython. Nothing here runs in a signal handler: the CLI's
 * SIGINT handler only sets the flag the loop polls.
 */
#ifndef SONDE_ATTACH_H
#define SONDE_ATTACH_H

#include "../core/buf.h"
#include "../model/model.h"
#include "../prim/prim.h"
#include "../pyread/pyread.h"
#include "../sample/sample.h"

#include <signal.h>

#define SONDE_ATTACH_MAX_RATE 10000.0 /* samples per second, highest accepted */
#define SONDE_ATTACH_MAX_TARGETS 256  /* processes followed at once */
#define SONDE_ATTACH_CMDLINE 65536    /* bytes of a command line kept */
/* Watching running threads (Python or native) after a tick's reads ends
 * this share of an interval before the next tick's time, all processes
 * together: ticks keep their times, and so the rate. */
#define SONDE_ATTACH_WATCH_MARGIN 0.1
/* A watch needs this much time before watch_until to start at all: a
 * coarse proof takes one lump to begin and 3 ms of lumps after it (4-8 ms
 * with 4 ms lumps). A shorter watch could see C work end (an answer of
 * Python) but never prove it (native), so at rates above about 130 Hz
 * threads are not watched and their time is split as with no answers
 * (sonde_line_split: native on a call instruction). */
#define SONDE_ATTACH_WATCH_MIN_NS 6000000
/* The target's GIL switch interval (sys.setswitchinterval, which the
 * native rule's watch of a thread off the GIL depends on) is read when a
 * watch begins, at most this often: a program seldom changes it. */
#define SONDE_ATTACH_SWITCH_REREAD_NS 1000000000

typedef struct sonde_attach_opts {
    double rate_hz;      /* samples per second (default 100) */
    double duration_sec; /* 0: until stopped or the target exits */
    bool per_thread;     /* --threads: keep each thread's stacks apart */
    bool idle;           /* --idle: stacks of threads that are not running too */
    bool gil_only;       /* --gil: only the thread holding the GIL */
    bool subprocesses;   /* --subprocesses: follow child Python processes */
    /* --profile-all/-only/-exclude, as in `sonde run` (patterns borrowed
     * from the parsed command line, read when a target opens); zero: the
     * program's own files */
    sonde_filechoice_t files;
} sonde_attach_opts_t;

/* Fills opts with the defaults above. */
void sonde_attach_opts_default(sonde_attach_opts_t *opts);

/* ---- one sampled process (target.c) ----------------------------------------- */

struct sonde_athread; /* private to target.c */

typedef struct sonde_atarget {
    pid_t pid;
    sonde_pyproc_t proc; /* open for the target's lifetime; its code
                            cache names the frames until freed */
    char cwd[4096];      /* resolves relative file names; "" unknown */
    char exe[4096];      /* the executable, "" unknown */
    char *cmdline;       /* owned; its arguments, NUL-separated, read at
                            open (NULL unknown) */
    size_t cmdline_len;
    sonde_codefilter_t filter;       /* the program's own files: not under the
                                  interpreter's library directories, not in
                                  site-packages/dist-packages */
    sonde_codecache_t codes;         /* the filter's verdict per code id */
    sonde_threadreg_t threads;       /* of struct sonde_athread */
    sonde_threadlist_t tick_threads; /* the current tick's thread states */
    sonde_aframe_t *walk;            /* owned; scratch for one stack walk
                                  (SONDE_STACK_MAX_DEPTH frames) */
    sonde_accum_t acc;               /* lines, stacks, thread slots, partial counts
                                  (failed reads: acc.partial.failed_reads) */
    sonde_ns_t last_tick_ns;         /* 0 until the baseline tick */
    uint64_t ticks;                  /* ticks counted (after the baseline) */
    int fail_streak;                 /* consecutive ticks whose thread list failed */
    sonde_ns_t gil_switch_ns;        /* the GIL's switch interval, 0 unknown */
    sonde_ns_t gil_switch_read_at;   /* when it was read (monotonic), 0 never */
    bool exited;                     /* the process is gone (or a zombie) */
    bool retired;                    /* stopped reading it (exec'd into something
                                else); its figures stay */
} sonde_atarget_t;

/* Opens pid for sampling (sonde_pyproc_open_pid, then the kernel's view).
 * Returns 0 or -errno as sonde_pyproc_open_pid; on -ENOTSUP
 * t->proc.version_* name the version found. */
int sonde_atarget_open(sonde_atarget_t *t, pid_t pid);
/* One tick at time now: every Python thread's state, stack and line.
 * Running threads are watched (Python or native, src/sample/native.c)
 * until watch_until at most (monotonic ns; 0: not watched). The first tick
 * only takes the baseline. Returns 0, or -ESRCH when the process is gone
 * (t->exited is then set). */
int sonde_atarget_tick(sonde_atarget_t *t, const sonde_attach_opts_t *opts, sonde_ns_t now,
                       sonde_ns_t watch_until);
/* The path to report for a code's file into buf (relative names joined to
 * the target's working directory). Returns buf. */
const char *sonde_atarget_path(const sonde_atarget_t *t, const char *filename, char *buf,
                               size_t len);
void sonde_atarget_free(sonde_atarget_t *t);

/* ---- the sampling loop (sampler.c) -------------------------------------------- */

typedef struct sonde_attach {
    sonde_attach_opts_t opts;
    sonde_atarget_t **targets; /* owned; retired and exited ones included */
    size_t n_targets, cap_targets;
    pid_t roots[4]; /* the processes asked for (attach: the pid,
                       record: the child) */
    int n_roots;
    struct sonde_apending *pending; /* owned; processes to open when they
                                       become Python (record's child before
                                       its exec, descendants, exec'd ones) */
    size_t n_pending, cap_pending;
    int root_error;              /* a root that cannot be sampled: -ENOTSUP,
                                    -EPERM, -EACCES (0: none) */
    char root_error_version[32]; /* "3.14.0" with -ENOTSUP, else "" */
    sonde_ns_t start_ns, stop_ns;
    sonde_ns_t next_poll_ns; /* next look for child processes */
    uint64_t ticks;          /* sampling ticks after the first */
    uint64_t rng;
    pid_t *scan_pids, *scan_ppids; /* owned; scratch for the process list */
    sonde_partial_t partial;       /* processes_lost: children not followed
                                      (SONDE_ATTACH_MAX_TARGETS) or found
                                      unreadable */
    pid_t *lost_pids;              /* owned; those processes, counted once */
    size_t n_lost, cap_lost;
    /* Continuous profiles (`sonde attach --period`): the current period
     * began at period_start_ns (0: the profile covers the whole run) with
     * a->ticks at period_ticks0; sonde_attach_run returns at
     * period_until_ns (0: no period) with period_reached set. */
    sonde_ns_t period_start_ns, period_until_ns;
    uint64_t period_ticks0;
    bool period_reached;
    bool stopped_by_flag; /* the stop flag ended the loop */
    bool all_exited;      /* every sampled process exited */
    bool duration_reached;
} sonde_attach_t;

/* What the progress callback sees. */
typedef struct sonde_attach_progress {
    uint64_t samples; /* ticks taken */
    uint64_t errors;  /* failed reads (partial.failed_reads), all processes */
    double elapsed_sec;
    int processes; /* processes being sampled now */
} sonde_attach_progress_t;

typedef void (*sonde_attach_progress_fn)(const sonde_attach_progress_t *progress, void *arg);

void sonde_attach_init(sonde_attach_t *a, const sonde_attach_opts_t *opts);
/* Opens pid now and adds it as a root. Returns 0 or -errno (as
 * sonde_atarget_open; with -ENOTSUP the version found is in
 * a->root_error_version). */
int sonde_attach_add_root(sonde_attach_t *a, pid_t pid);
/* Adds pid as a root to open as soon as it is a Python process (the child
 * of `sonde record`, which may still be starting, or a shell that execs
 * Python). Returns 0 or -ENOMEM. */
int sonde_attach_add_pending_root(sonde_attach_t *a, pid_t pid);
/* Samples until *stop becomes non-zero, the duration passes, the
 * period ends (a->period_until_ns, then a->period_reached), every
 * process has exited, or a pending root turned out to be a Python that
 * cannot be sampled (a->root_error). progress (may be NULL) is called
 * about four times a second. Returns 0 or -ENOMEM. */
int sonde_attach_run(sonde_attach_t *a, volatile sig_atomic_t *stop,
                     sonde_attach_progress_fn progress, void *arg);
/* Starts a new period at monotonic time now, ending at until_ns (the
 * next sonde_attach_run returns there): every target's accumulators are
 * emptied (their memory kept) and the targets that exited or were retired
 * are freed, so that memory does not grow with the number of periods.
 * Call after the previous period's profile was built. */
void sonde_attach_period_begin(sonde_attach_t *a, sonde_ns_t now, sonde_ns_t until_ns);
/* Current figures. */
void sonde_attach_get_progress(const sonde_attach_t *a, sonde_attach_progress_t *progress);
void sonde_attach_free(sonde_attach_t *a);

/* ---- to the model (profile.c) -------------------------------------------------- */

/* Fills prof (initialised, empty) with everything sampled: the line times
 * of the program's files, the call stacks (per thread with per_thread),
 * and the run's description (program and arguments from the first
 * process's command line, unless program is given). Returns 0 or -errno. */
int sonde_attach_to_profile(const sonde_attach_t *a, const char *program, int argc,
                            const char *const *argv, sonde_profile_t *prof);
/* Splits a Python command line (NUL-separated, as /proc/PID/cmdline) into
 * the program (script, "-m module" -> module, "-c") and its arguments:
 * *program points into cmdline, args[0..*n_args-1] too (at most max).
 * Pure. */
void sonde_attach_split_cmdline(const char *cmdline, size_t len, const char **program,
                                const char **args, int max, int *n_args);

/* ---- sonde dump (dump.c) --------------------------------------------------------- */

/* Appends every Python thread's stack of pid as text: a process header,
 * then per thread "Thread TID (state)" and its frames innermost first as
 * "    func (file:line)". Returns 0 or -errno as sonde_atarget_open
 * (with -ENOTSUP, version gets the version found, else ""). */
int sonde_attach_dump(pid_t pid, sonde_buf_t *out, char *version, size_t version_len);

/* ---- sonde record (spawn.c) ---------------------------------------------------- */

/* Starts argv (argv[0] searched in PATH) as a child process, in the
 * caller's process group, with signal mask *mask (NULL: none blocked) and
 * the caller's signal dispositions (SIGPIPE's back to the default), and
 * waits until the exec succeeded. Returns 0 with *pid set, or the exec's
 * -errno (-ENOENT: no such command, -EACCES: not executable). */
int sonde_attach_spawn(char *const *argv, const sigset_t *mask, pid_t *pid);

#endif
