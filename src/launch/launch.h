/* launch.h — starting a program under `sonde run`.
 *
 * Owns: how the launcher hands a run over to the interpreter. The launcher
 * (the `sonde` command, or `python3 -m sonde run`) replaces itself with
 * `python script.py args` (or `python -m module args`), with the sonde
 * package's _boot directory first on PYTHONPATH so that the interpreter
 * imports sonde's sitecustomize hook at start-up; the hook (src/ext/boot.c)
 * puts the environment back exactly as it was and starts profiling before
 * the program's first line runs. The options travel in SONDE_RUN_OPTIONS,
 * already parsed: `run` hands over its parsed options (sonde_run_opts_encode),
 * `trace` its option words as netstrings (netstring.h). No fixed-size
 * buffer on this path: arguments and paths of any length the system
 * accepts go through.
 */
#ifndef SONDE_LAUNCH_H
#define SONDE_LAUNCH_H

#include "options.h"
#include "../core/buf.h"

#define SONDE_ENV_OPTIONS "SONDE_RUN_OPTIONS"   /* the mode's options, encoded */
#define SONDE_ENV_BOOT_PATHS "SONDE_BOOT_PATHS" /* entries we put on PYTHONPATH, ':'-separated */
#define SONDE_ENV_PYTHONPATH "SONDE_ORIG_PYTHONPATH" /* the user's PYTHONPATH */
#define SONDE_ENV_HAD_PYPATH "SONDE_HAD_PYTHONPATH"  /* "1" if PYTHONPATH was set */
#define SONDE_ENV_PROGRAM "SONDE_RUN_PROGRAM"        /* script ("-": stdin), "-m mod", "-c" */
#define SONDE_ENV_MODE "SONDE_RUN_MODE"              /* "run" or "trace" */
#define SONDE_ENV_HAD_PRELOAD "SONDE_HAD_LD_PRELOAD" /* "1" if LD_PRELOAD was set (--memory) */
#define SONDE_ENV_PRELOAD "SONDE_ORIG_LD_PRELOAD"    /* the user's LD_PRELOAD (--memory) */
/* SIGINT/SIGTERM numbers the launcher blocked, ','-separated */
#define SONDE_ENV_BLOCKED "SONDE_RUN_BLOCKED_SIGNALS"
/* After os.exec* of the same interpreter (src/ext/boot.c): how many execs
 * led here, the first run's report file ("" terminal), this run's */
#define SONDE_ENV_EXEC_GEN "SONDE_RUN_EXEC"
#define SONDE_ENV_EXEC_BASE "SONDE_RUN_EXEC_BASE"
#define SONDE_ENV_EXEC_OUTFILE "SONDE_RUN_EXEC_OUTFILE"
/* `sonde run` following the program's Python processes (src/collect/):
 * the collector's private directory, where each process hands its profile
 * over; and "1" in a process started by a profiled one (its profile goes
 * to the collector, never to the terminal or the report file) */
#define SONDE_ENV_COLLECT "SONDE_RUN_COLLECT"
#define SONDE_ENV_CHILD "SONDE_RUN_CHILD"
#define SONDE_SHIM_NAME "libsonde_shim.so" /* the allocator shim, in the package */

/* What to run: a script, a module or code (-c), and its arguments. */
typedef struct sonde_program {
    const char *script; /* path ("-": standard input, as python3 reads it), or NULL */
    const char *module; /* module name, or NULL */
    char *const *argv;  /* the program's argv; argv[0] is the script or (for a
                           module or code) ignored */
    int argc;
    const char *command; /* the code of `-c CODE`, or NULL */
} sonde_program_t;

/* Checks what can be checked before starting the program: the script
 * exists and is readable (or is a directory with __main__.py), the
 * outfile (if any) can be written. Returns 0, or -errno with a one-line
 * message in err (no "sonde: " prefix). */
int sonde_launch_check(const sonde_program_t *prog, const char *outfile, char *err, size_t err_len);

/* From the launcher's first steps to the boot (src/ext/boot.c, which
 * unblocks them once sonde's handlers are in place): SIGINT and SIGTERM
 * (those not blocked already) are blocked and named in
 * SONDE_RUN_BLOCKED_SIGNALS, so one that comes while the interpreter starts
 * waits for sonde's handlers instead of killing a half-started session.
 * Block returns 0 or -errno (idempotent); unblock restores the mask (a
 * signal that came meanwhile is then delivered). */
int sonde_launch_block_signals(void);
void sonde_launch_unblock_signals(void);

/* The environment the hand-over variables go to: the process's own (the
 * launcher) or the one a program passes to os.execve (src/ext/exec.c).
 * get returns a variable's value or NULL; set returns 0 or -errno. */
typedef struct sonde_launch_env {
    const char *(*get)(void *ctx, const char *name);
    int (*set)(void *ctx, const char *name, const char *value);
    void *ctx;
} sonde_launch_env_t;

/* Puts the hand-over into env: mode, encoded options, the program's word
 * (SONDE_RUN_PROGRAM: a script path, "-", "-m module" or "-c"), the
 * package's _boot directory first on PYTHONPATH (the user's value kept for
 * the boot), and with preload_shim the allocator shim first on LD_PRELOAD.
 * Returns 0 or -errno with a message in err. */
int sonde_launch_handover(const sonde_launch_env_t *env, const char *pkg_dir, const char *mode,
                          const char *program, const char *options, bool preload_shim, char *err,
                          size_t err_len);

/* The program word (as above) of a Python command line, argv[0] being the
 * interpreter: the first argument after Python's own options (-W/-X take a
 * value; -c and -m end them). Returns 0 with the word appended to out,
 * -EINVAL when no program would run (the interactive prompt, --version, an
 * option it does not know) or -ENOMEM. Pure. */
int sonde_launch_program_word(int argc, char *const *argv, sonde_buf_t *out);

/* Replaces the process with the interpreter running the program under the
 * given mode ("run" or "trace"; the boot hook dispatches on it). options
 * is the mode's encoded options (see above), handed over as they are.
 * preload_shim (run --memory) puts the package's allocator shim first on
 * LD_PRELOAD (the boot hook restores the user's LD_PRELOAD). python is the
 * interpreter to run; pkg_dir the directory of the sonde package (holding
 * _boot/). Returns only on failure: -errno with a message in err. */
int sonde_launch_exec(const char *python, const char *pkg_dir, const char *mode,
                      const sonde_program_t *prog, const char *options, bool preload_shim,
                      char *err, size_t err_len);

/* The report file of the program's image that os.exec* of the interpreter
 * started, generation gen >= 1, for the first run's file base:
 * "/d/prof.json", 2 -> "/d/prof.exec2.json" (no extension: appended).
 * Appends to out; returns 0 or -ENOMEM. */
int sonde_launch_exec_name(const char *base, int gen, sonde_buf_t *out);

#endif
