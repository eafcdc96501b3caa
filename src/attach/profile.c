/* profile.c — what the attach sampler collected, as the neutral profile model.
 *
 * Owns: sonde_attach_to_profile and sonde_attach_split_cmdline. Called by
 * the CLI once sampling has stopped. Describes the run (program, arguments,
 * version) and hands each process's accumulators to the sampling core's
 * conversion (src/sample/convert.c: names from the process's code cache,
 * relative files joined to its working directory, thread names as `sonde
 * run --stacks` gives them, prefixed by "process 1230 " when several
 * processes were sampled), then adds the loop's own partial counts
 * (processes lost). Plain C; never in a signal handler.
 */
#include "attach.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROFILE_MAX_ARGS 256 /* arguments of the command line kept */

/* ---- command lines ---------------------------------------------------------------- */

/* Options of the python command that take a separate value. */
static bool profile_takes_value(const char *opt)
{
    return strcmp(opt, "-W") == 0 || strcmp(opt, "-X") == 0 ||
           strcmp(opt, "--check-hash-based-pycs") == 0;
}

void sonde_attach_split_cmdline(const char *cmdline, size_t len, const char **program,
                                const char **args, int max, int *n_args)
{
    const char *words[PROFILE_MAX_ARGS + 8];
    int n = 0, i = 1;
    for (size_t at = 0; at < len && n < (int)SONDE_ARRAY_LEN(words); n++) {
        words[n] = cmdline + at;
        const char *nul = memchr(cmdline + at, 0, len - at);
        if (!nul) break; /* unterminated: the caller guarantees a NUL at len */
        at = (size_t)(nul - cmdline) + 1;
    }
    *program = n ? words[0] : "";
    *n_args = 0;
    if (n == 0) return;
    const char *base = strrchr(words[0], '/');
    base = base ? base + 1 : words[0];
    if (strncmp(base, "python", 6) == 0) {
        for (; i < n; i++) {
            const char *w = words[i];
            if (w[0] != '-' || strcmp(w, "-") == 0) {
                *program = w;
                i++;
                break;
            }
            if (strcmp(w, "--") == 0) {
                if (i + 1 < n) *program = words[i + 1];
                i += 2;
                break;
            }
            if (strncmp(w, "-m", 2) == 0) {
                *program = w[2] ? w + 2 : (i + 1 < n ? words[i + 1] : "-m");
                i += w[2] ? 1 : 2;
                break;
            }
            if (strncmp(w, "-c", 2) == 0) {
                *program = "-c";
                i += w[2] ? 1 : 2; /* the command itself is not an argument */
                break;
            }
            if (profile_takes_value(w)) i++;
        }
    }
    for (; i < n && *n_args < max; i++)
        args[(*n_args)++] = words[i];
}

/* ---- filling the model ----------------------------------------------------------- */

/* Number of distinct processes among the targets. */
static int profile_processes(const sonde_attach_t *a)
{
    int count = 0;
    for (size_t i = 0; i < a->n_targets; i++) {
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = a->targets[j]->pid == a->targets[i]->pid;
        count += !seen;
    }
    return count;
}

/* The run's description from the first target's command line. */
static int profile_describe(const sonde_attach_t *a, sonde_profile_t *prof, const char *version)
{
    const char *args[PROFILE_MAX_ARGS + 1];
    const char *program = "";
    int n_args = 0;
    if (a->n_targets && a->targets[0]->cmdline)
        sonde_attach_split_cmdline(a->targets[0]->cmdline, a->targets[0]->cmdline_len, &program,
                                   args + 1, PROFILE_MAX_ARGS, &n_args);
    args[0] = program;
    return sonde_profile_set_run(prof, program, n_args + 1, args, version);
}

int sonde_attach_to_profile(const sonde_attach_t *a, const char *program, int argc,
                            const char *const *argv, sonde_profile_t *prof)
{
    char version[32] = "";
    int rc = 0;
    bool several = profile_processes(a) > 1;
    if (a->n_targets) {
        const sonde_pyproc_t *proc = &a->targets[0]->proc;
        snprintf(version, sizeof version, "%d.%d.%d", proc->version_major, proc->version_minor,
                 proc->version_micro);
    }
    if (program)
        rc = sonde_profile_set_run(prof, program, argc, argv, version[0] ? version : NULL);
    else
        rc = profile_describe(a, prof, version[0] ? version : NULL);
    if (rc < 0) return rc;

    for (size_t i = 0; i < a->n_targets && rc == 0; i++) {
        const sonde_atarget_t *t = a->targets[i];
        sonde_codenames_t names = sonde_codenames_of_proc(&t->proc, t->cwd);
        sonde_accum_convert_t how = {
            .per_thread = a->opts.per_thread,
            .main_tid = t->pid,
            .process_pid = several ? t->pid : 0,
        };
        rc = sonde_accum_to_profile(&t->acc, &names, &how, prof);
    }
    if (rc < 0) return rc;
    sonde_partial_add(&prof->partial, &a->partial);
    /* A continuous profile covers its period alone. */
    sonde_ns_t start = a->period_start_ns ? a->period_start_ns : a->start_ns;
    prof->samples = a->ticks - a->period_ticks0;
    sonde_ns_t end = a->stop_ns ? a->stop_ns : sonde_prim_monotonic_ns();
    prof->elapsed_sec = start ? (double)(end - start) / 1e9 : 0;
    prof->interval_sec = 1.0 / a->opts.rate_hz;
    prof->virtual_time = false;
    prof->pid = !several && a->n_targets ? (int)a->targets[0]->pid : 0;
    return 0;
}
