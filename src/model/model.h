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

typedef struct sonde_line_stats {
    int lineno;
    sonde_ns_t python_ns; /* on CPU, executing bytecode */
    sonde_ns_t native_ns; /* on CPU, inside native code called from the line */
    sonde_ns_t system_ns; /* off CPU, blocked in the kernel (I/O, sleep) */
    uint64_t samples;     /* samples that landed on the line */
} sonde_line_stats_t;

typedef struct sonde_func_stats {
    char *name;      /* owned; qualified name where the version has it */
    int firstlineno; /* line of the def */
    sonde_ns_t python_ns, native_ns, system_ns;
    uint64_t samples;
} sonde_func_stats_t;

typedef struct sonde_file_stats {
    char *path;               /* owned; as the interpreter names the file */
    sonde_line_stats_t *lines; /* owned; sorted by lineno after finish */
    size_t n_lines, cap_lines;
    sonde_func_stats_t *funcs; /* owned; sorted by firstlineno after finish */
    size_t n_funcs, cap_funcs;
    char **source;            /* owned; source[i] is line i+1 without its
                                 newline; NULL when the file is unreadable */
    size_t n_source;
    sonde_ns_t total_ns;      /* sum over the file's lines */
} sonde_file_stats_t;

typedef struct sonde_profile {
    char *program;            /* owned; what was profiled (script or module) */
    char **argv;              /* owned; its arguments, argc entries: the
                                 program's sys.argv, argv[0] (the script as
                                 Python saw it) first; reports show
                                 argv[1..] as the arguments */
    int argc;
    char *python_version;     /* owned; "3.11.7" */
    double elapsed_sec;       /* wall-clock time while profiling */
    double interval_sec;      /* sampling interval */
    bool virtual_time;        /* only CPU time was sampled */
    uint64_t samples;         /* sampler ticks taken */
    sonde_ns_t unattributed_ns; /* time with no profiled frame on the stack */
    sonde_file_stats_t *files; /* owned; sorted by path after finish */
    size_t n_files, cap_files;
    sonde_ns_t total_ns;       /* sum over all files */
} sonde_profile_t;

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

/* Adds time to a line of a file and to its enclosing function (func_name,
 * func_firstlineno; func_name may be NULL for module-level code, which is
 * then recorded as "<module>"). Adding to the same line twice accumulates.
 * Functions are told apart by (func_firstlineno, func_name). Files, lines
 * and functions stay sorted as they are added.
 * Returns 0, -EINVAL (path NULL) or -ENOMEM (the profile is unchanged on
 * error). */
int sonde_profile_add(sonde_profile_t *prof, const char *path,
                      const char *func_name, int func_firstlineno, int lineno,
                      sonde_ns_t python_ns, sonde_ns_t native_ns,
                      sonde_ns_t system_ns, uint64_t samples);

/* Sorts files, lines and functions, computes totals and loads each file's
 * source text from disk (a missing file leaves source NULL). Returns 0 or
 * -ENOMEM. May be called again after more adds: totals are recomputed and
 * sources reloaded. Source loading: regular files only, at most 16 MiB
 * (model_internal.h); "\n", "\r\n" and "\r" end lines; a UTF-8 BOM is
 * dropped; an empty readable file gives source non-NULL, n_source 0. */
int sonde_profile_finish(sonde_profile_t *prof);

/* Looks up a file by path; NULL if absent (or path NULL). The pointer is
 * valid until the next sonde_profile_add or sonde_profile_free. */
sonde_file_stats_t *sonde_profile_file(sonde_profile_t *prof, const char *path);

#endif
