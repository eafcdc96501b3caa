/* profile.c — what the attach sampler collected, as the neutral profile model.
 *
 * Owns: sonde_attach_to_profile and sonde_attach_split_cmdline. Called by
 * the CLI once sampling has stopped. Turns each process's code ids into
 * names (its reader's code cache), relative file names into absolute ones
 * (the process's working directory), thread slots into thread names
 * ("MainThread" or "thread 1234", as `sonde run --stacks` names them,
 * prefixed by "process 1230 " when several processes were sampled), and fills the model's lines
 * (sonde_profile_add) and call stacks (sonde_profile_add_stack, root first). Plain C; never in a
 * signal handler.
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

/* ---- names ------------------------------------------------------------------------- */

/* Per target: resolved file paths per code id, made on demand. */
struct profile_paths {
    char **by_code; /* owned */
    uint32_t n;
};

static const char *profile_path(struct profile_paths *paths, const sonde_atarget_t *t,
                                uint32_t code_id)
{
    const sonde_pycode_t *code = sonde_pyproc_code(&t->proc, code_id);
    if (!code) return "<unknown>";
    if (code_id >= paths->n) return code->filename;
    if (!paths->by_code[code_id]) {
        char buf[8192];
        paths->by_code[code_id] = strdup(sonde_atarget_path(t, code->filename, buf, sizeof buf));
        if (!paths->by_code[code_id]) return code->filename;
    }
    return paths->by_code[code_id];
}

static void profile_paths_free(struct profile_paths *paths)
{
    for (uint32_t i = 0; i < paths->n; i++)
        free(paths->by_code[i]);
    free(paths->by_code);
    paths->by_code = NULL;
    paths->n = 0;
}

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

/* The model's thread index of each slot of a target. */
static int profile_thread_indices(const sonde_atarget_t *t, bool several, sonde_profile_t *prof,
                                  int *indices)
{
    for (size_t s = 0; s < t->n_slots; s++) {
        char name[96];
        pid_t tid = t->slot_tids[s];
        int at = 0;
        if (several) at = snprintf(name, sizeof name, "process %d ", (int)t->pid);
        if (tid == t->pid)
            snprintf(name + at, sizeof name - (size_t)at, "MainThread");
        else if (tid > 0)
            snprintf(name + at, sizeof name - (size_t)at, "thread %d", (int)tid);
        else
            snprintf(name + at, sizeof name - (size_t)at, "thread (unknown id)");
        int index = sonde_profile_thread(prof, name);
        if (index < 0) return index;
        indices[s] = index;
    }
    return 0;
}

/* ---- filling the model ----------------------------------------------------------- */

static int profile_stacks(const sonde_atarget_t *t, struct profile_paths *paths, bool per_thread,
                          bool several, sonde_profile_t *prof)
{
    sonde_stack_frame_t *frames = NULL;
    int *indices = NULL;
    int rc = 0;
    if (!t->acc.stacks_used) return 0;
    frames = malloc(SONDE_PY_MAX_DEPTH * sizeof *frames);
    indices = calloc(t->n_slots ? t->n_slots : 1, sizeof *indices);
    if (!frames || !indices) {
        rc = -ENOMEM;
        goto done;
    }
    if (per_thread && (rc = profile_thread_indices(t, several, prof, indices)) < 0) goto done;
    for (size_t i = 0; i < t->acc.stacks_cap; i++) {
        const sonde_astack_t *s = &t->acc.stacks[i];
        if (!s->hash) continue;
        uint32_t depth = s->depth < SONDE_PY_MAX_DEPTH ? s->depth : SONDE_PY_MAX_DEPTH;
        for (uint32_t k = 0; k < depth; k++) { /* innermost first -> root first */
            sonde_aframe_t f = t->acc.pool[s->frames + depth - 1 - k];
            const sonde_pycode_t *code = sonde_pyproc_code(&t->proc, sonde_aframe_code(f));
            frames[k].func = (char *)(code && code->name ? code->name : "<unknown>");
            frames[k].file = (char *)profile_path(paths, t, sonde_aframe_code(f));
            frames[k].line = sonde_aframe_line(f);
        }
        int thread = per_thread && s->thread < t->n_slots ? indices[s->thread] : -1;
        rc = sonde_profile_add_stack(prof, frames, depth, thread, s->samples, s->ns);
        if (rc < 0) goto done;
    }
done:
    free(frames);
    free(indices);
    return rc;
}

static int profile_lines(const sonde_atarget_t *t, struct profile_paths *paths,
                         sonde_profile_t *prof)
{
    for (size_t i = 0; i < t->acc.lines_cap; i++) {
        const sonde_aline_t *line = &t->acc.lines[i];
        if (!line->key) continue;
        uint32_t code_id = sonde_aframe_code(line->key);
        const sonde_pycode_t *code = sonde_pyproc_code(&t->proc, code_id);
        if (!code || !code->filename) continue;
        int rc = sonde_profile_add(prof, profile_path(paths, t, code_id), code->name,
                                   code->firstlineno, sonde_aframe_line(line->key), line->python_ns,
                                   line->native_ns, line->system_ns, line->samples);
        if (rc < 0) return rc;
    }
    return 0;
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
        struct profile_paths paths = {NULL, 0};
        uint32_t codes = sonde_pyproc_code_count(&t->proc);
        if (codes && !(paths.by_code = calloc(codes, sizeof *paths.by_code))) return -ENOMEM;
        paths.n = codes;
        rc = profile_lines(t, &paths, prof);
        if (rc == 0) rc = profile_stacks(t, &paths, a->opts.per_thread, several, prof);
        prof->unattributed_ns += t->acc.unattributed_ns;
        profile_paths_free(&paths);
    }
    if (rc < 0) return rc;
    prof->samples = a->ticks;
    sonde_ns_t end = a->stop_ns ? a->stop_ns : sonde_prim_monotonic_ns();
    prof->elapsed_sec = a->start_ns ? (double)(end - a->start_ns) / 1e9 : 0;
    prof->interval_sec = 1.0 / a->opts.rate_hz;
    prof->virtual_time = false;
    return 0;
}
