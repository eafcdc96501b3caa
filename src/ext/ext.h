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

#include "../launch/options.h"
#include "../model/model.h"
#include "../prim/prim.h"
#include "../pyread/pyread.h"

#include <pthread.h>
#include <stdatomic.h>

/* ---- which files are profiled (filter.c) --------------------------------- */

#define SONDE_MAX_LIB_PREFIXES 64

typedef struct sonde_filter {
    bool profile_all;
    char *lib_prefixes[SONDE_MAX_LIB_PREFIXES]; /* owned; never profiled by default */
    int n_lib_prefixes;
    char *only[SONDE_MAX_PATTERNS];             /* owned; NULL-free list */
    int n_only;
    char *exclude[SONDE_MAX_PATTERNS];          /* owned */
    int n_exclude;
} sonde_filter_t;

/* Builds the filter from options and the running interpreter (standard
 * library, site-packages, sonde's own package). Returns 0 or -ENOMEM. */
int sonde_filter_init_gil(sonde_filter_t *filter, const sonde_run_opts_t *opts,
                          const char *sonde_pkg_dir);
void sonde_filter_free(sonde_filter_t *filter);
/* True if time in this file is reported on its own lines. Pure. */
bool sonde_filter_wants(const sonde_filter_t *filter, const char *path);

/* ---- the sampler thread (sampler.c) --------------------------------------- */

typedef struct sonde_line_acc { /* accumulated time of one (code, line) */
    uint64_t key;               /* code_id << 32 | lineno; 0 = empty slot */
    sonde_ns_t python_ns, native_ns, system_ns;
    uint64_t samples;
    uint32_t calls_native, calls_python; /* checked call instructions */
} sonde_line_acc_t;

struct sonde_sampler_thread; /* private to sampler.c */

typedef struct sonde_sampler {
    /* Set before start, read-only while running. */
    sonde_ns_t interval_ns;
    bool virtual_time;
    bool record_stacks;             /* keep each sample's call stack */
    const sonde_filter_t *filter;   /* borrowed */
    void (*on_terminate)(void);     /* called on the sampler thread after
                                       SIGTERM was seen; may not return */
    /* Owned by the sampler thread while it runs; read by others only after
     * sonde_sampler_stop returned. */
    sonde_pyproc_t proc;
    sonde_line_acc_t *lines;        /* owned; open addressing */
    size_t lines_cap, lines_used;
    int8_t *code_wanted;            /* owned; per code id: -1 unknown, 0, 1 */
    size_t code_wanted_cap;
    struct sonde_sampler_thread *threads; /* owned */
    size_t n_threads, cap_threads;
    sonde_profile_t stacks;         /* owned; call stacks when record_stacks */
    sonde_ns_t start_ns, stop_ns, last_tick_ns;
    uint64_t ticks;
    sonde_ns_t unattributed_ns;
    uint64_t rng;
    bool first_tick;
    /* Shared. */
    pthread_t thread;
    bool thread_started;            /* written by the starting thread only */
    int wake_fd;                    /* eventfd: stop or SIGTERM */
    atomic_bool stop_requested;
    atomic_bool term_requested;
} sonde_sampler_t;

/* Opens the reader for this interpreter and starts the sampler thread.
 * Returns 0 or -errno (nothing started on error). */
int sonde_sampler_start_gil(sonde_sampler_t *s);
/* Asks the sampler thread to stop and joins it (releasing the GIL while
 * waiting when called with it). Idempotent. */
void sonde_sampler_stop(sonde_sampler_t *s);
/* Async-signal-safe: asks the sampler thread to run on_terminate. */
void sonde_sampler_signal_terminate(sonde_sampler_t *s);
/* Converts what was sampled into a profile (after stop). cwd resolves
 * relative file names. Returns 0 or -ENOMEM. */
int sonde_sampler_to_profile(sonde_sampler_t *s, const char *cwd,
                             sonde_profile_t *prof);
/* Frees everything (after stop). */
void sonde_sampler_free(sonde_sampler_t *s);

/* ---- the profiling session (session.c) ------------------------------------ */

/* Starts a session with opts (copied). from_run: started by `sonde run`.
 * program/args describe the program for the report. Returns 0, or -errno
 * with a Python exception set. */
int sonde_session_start_gil(const sonde_run_opts_t *opts, bool from_run,
                            const char *program);
/* Stops the session and writes its report. Returns 0, or -errno with a
 * Python exception set (0 and nothing done if no session is active). */
int sonde_session_stop_gil(void);
bool sonde_session_active(void);
bool sonde_session_from_run(void);

/* ---- boot (boot.c) ----------------------------------------------------------- */

/* The sitecustomize hook of `sonde run`. Returns 1 if it imported a
 * sitecustomize module that ours shadowed, 0 if there was none, or -1 with
 * an exception. */
int sonde_boot_gil(void);
/* `python3 -m sonde ...`: argv as given to sonde/__main__.py. Returns the
 * exit status on failure; on success it does not return (exec). */
int sonde_module_main_gil(int argc, char **argv);

/* Directory of the sonde package (owned by module.c; set at import). */
extern char sonde_ext_pkg_dir[4096];

#endif
