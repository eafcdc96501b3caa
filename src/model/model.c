/* model.c — building the neutral profile model (see model.h).
 *
 * Owns: sonde_profile_t's memory: files, their lines and functions, and
 * the source text loaded at finish. Called by the producers (the sampler in
 * src/ext/, the attach reader) after sampling has stopped, and read by the
 * writers in src/report/. Nothing here runs in a signal handler or an
 * allocator hook: it uses malloc and stdio freely.
 *
 * Files, lines and functions are kept sorted at every insertion (binary
 * search, then memmove): profiles hold at most a few thousand entries and
 * are built once, so a sorted array is simpler than a hash map and makes
 * sonde_profile_finish's "sorted" promise hold at all times.
 */
#include "model.h"

#include "model_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODEL_MODULE_NAME "<module>"
#define MODEL_INITIAL_CAP 8

/* ---- small helpers ------------------------------------------------------ */

static char *model_strdup(const char *s)
{
    size_t len = strlen(s);
    char *copy = malloc(len + 1);
    if (copy) memcpy(copy, s, len + 1);
    return copy;
}

/* Makes room for one more element in *items (capacity *cap, *n used).
 * Returns 0 or -ENOMEM; on error *items is unchanged. */
static int model_reserve(void **items, size_t *cap, size_t n, size_t elem_size)
{
    if (n < *cap) return 0;
    size_t new_cap = *cap ? *cap * 2 : MODEL_INITIAL_CAP;
    if (new_cap < *cap || new_cap > SIZE_MAX / elem_size) return -ENOMEM;
    void *grown = realloc(*items, new_cap * elem_size);
    if (!grown) return -ENOMEM;
    *items = grown;
    *cap = new_cap;
    return 0;
}

/* Inserts elem at index pos of an array with room for it. */
static void model_insert_at(void *items, size_t n, size_t pos, const void *elem, size_t elem_size)
{
    char *base = items;
    memmove(base + (pos + 1) * elem_size, base + pos * elem_size, (n - pos) * elem_size);
    memcpy(base + pos * elem_size, elem, elem_size);
}

/* ---- searches (each returns the index of the match, or of the insertion
 * point with *found false) ------------------------------------------------- */

static size_t model_find_file(const sonde_profile_t *prof, const char *path, bool *found)
{
    size_t lo = 0, hi = prof->n_files;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int cmp = strcmp(prof->files[mid].path, path);
        if (cmp == 0) {
            *found = true;
            return mid;
        }
        if (cmp < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

static size_t model_find_line(const sonde_file_stats_t *file, int lineno, bool *found)
{
    size_t lo = 0, hi = file->n_lines;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int at = file->lines[mid].lineno;
        if (at == lineno) {
            *found = true;
            return mid;
        }
        if (at < lineno)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

/* Functions are ordered by firstlineno, then name (two lambdas may share a
 * line). */
static int model_func_cmp(const sonde_func_stats_t *func, int firstlineno, const char *name)
{
    if (func->firstlineno != firstlineno) return func->firstlineno < firstlineno ? -1 : 1;
    return strcmp(func->name, name);
}

static size_t model_find_func(const sonde_file_stats_t *file, int firstlineno, const char *name,
                              bool *found)
{
    size_t lo = 0, hi = file->n_funcs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int cmp = model_func_cmp(&file->funcs[mid], firstlineno, name);
        if (cmp == 0) {
            *found = true;
            return mid;
        }
        if (cmp < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

/* ---- lifetime ----------------------------------------------------------- */

void sonde_profile_init(sonde_profile_t *prof)
{
    memset(prof, 0, sizeof *prof);
}

void sonde_profile_set_exit(sonde_profile_t *prof, int status, const char *exception)
{
    prof->exit_known = true;
    prof->exit_status = status;
    snprintf(prof->exit_exception, sizeof prof->exit_exception, "%s", exception ? exception : "");
}

void sonde_partial_add(sonde_partial_t *dst, const sonde_partial_t *src)
{
    dst->failed_reads += src->failed_reads;
    dst->dropped_samples += src->dropped_samples;
    dst->threads_left_out += src->threads_left_out;
    dst->frames_left_out += src->frames_left_out;
    dst->processes_lost += src->processes_lost;
    dst->processes_running += src->processes_running;
}

bool sonde_partial_any(const sonde_partial_t *p)
{
    return p->failed_reads || p->dropped_samples || p->threads_left_out || p->frames_left_out ||
           p->processes_lost || p->processes_running;
}

static void model_file_free(sonde_file_stats_t *file)
{
    free(file->path);
    for (size_t i = 0; file->lines && i < file->n_lines; i++)
        sonde_timeline_free(&file->lines[i].mem.timeline);
    free(file->lines);
    for (size_t i = 0; i < file->n_funcs; i++) {
        free(file->funcs[i].name);
        sonde_timeline_free(&file->funcs[i].mem.timeline);
    }
    free(file->funcs);
    sonde__source_free(file->source, file->n_source);
    memset(file, 0, sizeof *file);
}

static void model_run_free(sonde_profile_t *prof)
{
    free(prof->program);
    prof->program = NULL;
    for (int i = 0; i < prof->argc; i++)
        free(prof->argv[i]);
    free(prof->argv);
    prof->argv = NULL;
    prof->argc = 0;
    free(prof->python_version);
    prof->python_version = NULL;
}

void sonde_profile_free(sonde_profile_t *prof)
{
    for (size_t i = 0; i < prof->n_files; i++)
        model_file_free(&prof->files[i]);
    free(prof->files);
    model_run_free(prof);
    free(prof->max_footprint_file);
    sonde_timeline_free(&prof->footprint);
    for (size_t i = 0; i < SONDE_N_FIGSRCS; i++)
        sonde_fig_run_free(&prof->fig_runs[i]);
    sonde__stacks_free(prof);
    for (size_t i = 0; i < prof->n_processes; i++)
        free(prof->processes[i].cmdline);
    free(prof->processes);
    sonde_profile_init(prof);
}

int sonde_profile_set_run(sonde_profile_t *prof, const char *program, int argc,
                          const char *const *argv, const char *python_version)
{
    char *program_copy = NULL, *version_copy = NULL;
    char **argv_copy = NULL;
    int copied = 0;

    if (argc < 0 || (argc > 0 && !argv)) return -EINVAL;
    if (program && !(program_copy = model_strdup(program))) goto error;
    if (python_version && !(version_copy = model_strdup(python_version))) goto error;
    if (argc > 0) {
        argv_copy = calloc((size_t)argc, sizeof *argv_copy);
        if (!argv_copy) goto error;
        for (; copied < argc; copied++) {
            argv_copy[copied] = model_strdup(argv[copied] ? argv[copied] : "");
            if (!argv_copy[copied]) goto error;
        }
    }
    model_run_free(prof);
    prof->program = program_copy;
    prof->python_version = version_copy;
    prof->argv = argv_copy;
    prof->argc = argc;
    return 0;

error:
    for (int i = 0; i < copied; i++)
        free(argv_copy[i]);
    free(argv_copy);
    free(version_copy);
    free(program_copy);
    return -ENOMEM;
}

/* ---- adding samples ----------------------------------------------------- */

static void model_add_figures(sonde_ns_t *python_ns, sonde_ns_t *native_ns, sonde_ns_t *system_ns,
                              uint64_t *samples, sonde_ns_t add_python, sonde_ns_t add_native,
                              sonde_ns_t add_system, uint64_t add_samples)
{
    *python_ns += add_python;
    *native_ns += add_native;
    *system_ns += add_system;
    *samples += add_samples;
}

/* Builds a new, unlinked file entry holding one line and one function.
 * Returns 0 or -ENOMEM (nothing allocated on error). */
static int model_file_new(sonde_file_stats_t *file, const char *path, const char *func_name,
                          int func_firstlineno, int lineno)
{
    memset(file, 0, sizeof *file);
    file->path = model_strdup(path);
    file->lines = calloc(MODEL_INITIAL_CAP, sizeof *file->lines);
    file->funcs = calloc(MODEL_INITIAL_CAP, sizeof *file->funcs);
    char *name = model_strdup(func_name);
    if (!file->path || !file->lines || !file->funcs || !name) {
        free(name);
        model_file_free(file);
        return -ENOMEM;
    }
    file->cap_lines = file->cap_funcs = MODEL_INITIAL_CAP;
    file->n_lines = file->n_funcs = 1;
    file->lines[0].lineno = lineno;
    file->lines[0].func_name = name;
    file->lines[0].func_firstlineno = func_firstlineno;
    file->funcs[0].name = name;
    file->funcs[0].firstlineno = func_firstlineno;
    return 0;
}

int sonde_profile_add(sonde_profile_t *prof, const char *path, const char *func_name,
                      int func_firstlineno, int lineno, sonde_ns_t python_ns, sonde_ns_t native_ns,
                      sonde_ns_t system_ns, uint64_t samples)
{
    if (!path) return -EINVAL;
    if (!func_name) func_name = MODEL_MODULE_NAME;

    bool file_found = false, line_found = false, func_found = false;
    size_t file_at = model_find_file(prof, path, &file_found);
    sonde_file_stats_t *file = NULL;
    size_t line_at = 0, func_at = 0;
    char *new_func_name = NULL;

    if (!file_found) {
        /* Reserve first so that a failure leaves the profile unchanged. */
        if (model_reserve((void **)&prof->files, &prof->cap_files, prof->n_files,
                          sizeof *prof->files))
            return -ENOMEM;
        sonde_file_stats_t fresh;
        if (model_file_new(&fresh, path, func_name, func_firstlineno, lineno)) return -ENOMEM;
        model_insert_at(prof->files, prof->n_files, file_at, &fresh, sizeof fresh);
        prof->n_files++;
        file = &prof->files[file_at];
        line_at = func_at = 0;
    } else {
        file = &prof->files[file_at];
        line_at = model_find_line(file, lineno, &line_found);
        func_at = model_find_func(file, func_firstlineno, func_name, &func_found);
        if (!line_found && model_reserve((void **)&file->lines, &file->cap_lines, file->n_lines,
                                         sizeof *file->lines))
            return -ENOMEM;
        if (!func_found) {
            if (model_reserve((void **)&file->funcs, &file->cap_funcs, file->n_funcs,
                              sizeof *file->funcs))
                return -ENOMEM;
            if (!(new_func_name = model_strdup(func_name))) return -ENOMEM;
        }
        /* Nothing can fail from here on. */
        if (!line_found) {
            sonde_line_stats_t line = {.lineno = lineno, .func_firstlineno = func_firstlineno};
            line.func_name = func_found ? file->funcs[func_at].name : new_func_name;
            model_insert_at(file->lines, file->n_lines, line_at, &line, sizeof line);
            file->n_lines++;
        }
        if (!func_found) {
            sonde_func_stats_t func = {.name = new_func_name, .firstlineno = func_firstlineno};
            model_insert_at(file->funcs, file->n_funcs, func_at, &func, sizeof func);
            file->n_funcs++;
        }
    }

    sonde_line_stats_t *line = &file->lines[line_at];
    model_add_figures(&line->python_ns, &line->native_ns, &line->system_ns, &line->samples,
                      python_ns, native_ns, system_ns, samples);
    sonde_func_stats_t *func = &file->funcs[func_at];
    model_add_figures(&func->python_ns, &func->native_ns, &func->system_ns, &func->samples,
                      python_ns, native_ns, system_ns, samples);
    return 0;
}

sonde_line_stats_t *sonde_profile_line(sonde_profile_t *prof, const char *path,
                                       const char *func_name, int func_firstlineno, int lineno)
{
    if (sonde_profile_add(prof, path, func_name, func_firstlineno, lineno, 0, 0, 0, 0) < 0)
        return NULL;
    sonde_file_stats_t *file = sonde_profile_file(prof, path);
    if (!file) return NULL;
    bool found = false;
    size_t at = model_find_line(file, lineno, &found);
    return found ? &file->lines[at] : NULL;
}

sonde_func_stats_t *sonde_profile_func(sonde_profile_t *prof, const char *path,
                                       const char *func_name, int func_firstlineno)
{
    sonde_file_stats_t *file = sonde_profile_file(prof, path);
    if (!file) return NULL;
    bool found = false;
    size_t at =
        model_find_func(file, func_firstlineno, func_name ? func_name : MODEL_MODULE_NAME, &found);
    return found ? &file->funcs[at] : NULL;
}

sonde_line_stats_t *sonde_profile_line_only(sonde_profile_t *prof, const char *path, int lineno)
{
    if (!path) return NULL;
    bool found = false;
    size_t file_at = model_find_file(prof, path, &found);
    if (!found) {
        if (model_reserve((void **)&prof->files, &prof->cap_files, prof->n_files,
                          sizeof *prof->files))
            return NULL;
        sonde_file_stats_t fresh;
        if (model_file_new(&fresh, path, MODEL_MODULE_NAME, 0, lineno)) return NULL;
        /* a new file starts with one line and no function */
        free(fresh.funcs[0].name);
        fresh.n_funcs = 0;
        fresh.lines[0].func_name = NULL;
        fresh.lines[0].func_firstlineno = 0;
        model_insert_at(prof->files, prof->n_files, file_at, &fresh, sizeof fresh);
        prof->n_files++;
        return &prof->files[file_at].lines[0];
    }
    sonde_file_stats_t *file = &prof->files[file_at];
    size_t at = model_find_line(file, lineno, &found);
    if (!found) {
        if (model_reserve((void **)&file->lines, &file->cap_lines, file->n_lines,
                          sizeof *file->lines))
            return NULL;
        sonde_line_stats_t line = {.lineno = lineno};
        model_insert_at(file->lines, file->n_lines, at, &line, sizeof line);
        file->n_lines++;
    }
    return &file->lines[at];
}

sonde_func_stats_t *sonde_profile_func_entry(sonde_profile_t *prof, const char *path,
                                             const char *func_name, int func_firstlineno)
{
    if (!path) return NULL;
    if (!func_name) func_name = MODEL_MODULE_NAME;
    bool found = false;
    size_t file_at = model_find_file(prof, path, &found);
    if (!found) {
        if (model_reserve((void **)&prof->files, &prof->cap_files, prof->n_files,
                          sizeof *prof->files))
            return NULL;
        sonde_file_stats_t fresh;
        if (model_file_new(&fresh, path, func_name, func_firstlineno, 0)) return NULL;
        fresh.n_lines = 0; /* a new file starts with one function and no line */
        model_insert_at(prof->files, prof->n_files, file_at, &fresh, sizeof fresh);
        prof->n_files++;
        return &prof->files[file_at].funcs[0];
    }
    sonde_file_stats_t *file = &prof->files[file_at];
    size_t at = model_find_func(file, func_firstlineno, func_name, &found);
    if (!found) {
        if (model_reserve((void **)&file->funcs, &file->cap_funcs, file->n_funcs,
                          sizeof *file->funcs))
            return NULL;
        char *name = model_strdup(func_name);
        if (!name) return NULL;
        sonde_func_stats_t func = {.name = name, .firstlineno = func_firstlineno};
        model_insert_at(file->funcs, file->n_funcs, at, &func, sizeof func);
        file->n_funcs++;
    }
    return &file->funcs[at];
}

int sonde_profile_add_process(sonde_profile_t *prof, const sonde_process_t *process)
{
    if (model_reserve((void **)&prof->processes, &prof->cap_processes, prof->n_processes,
                      sizeof *prof->processes))
        return -ENOMEM;
    char *cmdline = model_strdup(process->cmdline ? process->cmdline : "");
    if (!cmdline) return -ENOMEM;
    sonde_process_t *into = &prof->processes[prof->n_processes++];
    *into = *process;
    into->cmdline = cmdline;
    return 0;
}

int sonde_profile_add_figs(sonde_profile_t *prof, const char *path, const char *func_name,
                           int func_firstlineno, int lineno, const sonde_figs_t *figs)
{
    if (!path || !figs) return -EINVAL;
    sonde_line_stats_t *line = sonde_profile_line(prof, path, func_name, func_firstlineno, lineno);
    if (!line) return -ENOMEM;
    sonde_figs_combine(&line->figs, figs);
    sonde_func_stats_t *func = sonde_profile_func(prof, path, func_name, func_firstlineno);
    if (func) sonde_figs_combine(&func->figs, figs);
    return 0;
}

/* ---- timelines ------------------------------------------------------------ */

int sonde_timeline_add(sonde_timeline_t *tl, double t_sec, double mb)
{
    if (model_reserve((void **)&tl->points, &tl->cap, tl->n, sizeof *tl->points)) return -ENOMEM;
    tl->points[tl->n].t_sec = t_sec;
    tl->points[tl->n].mb = mb;
    tl->n++;
    return 0;
}

void sonde_timeline_free(sonde_timeline_t *tl)
{
    free(tl->points);
    tl->points = NULL;
    tl->n = tl->cap = 0;
}

/* ---- finishing ---------------------------------------------------------- */

void sonde_profile_sum(sonde_profile_t *prof)
{
    prof->total_ns = 0;
    for (size_t i = 0; i < prof->n_files; i++) {
        sonde_file_stats_t *file = &prof->files[i];
        file->total_ns = 0;
        for (size_t j = 0; j < file->n_lines; j++) {
            const sonde_line_stats_t *line = &file->lines[j];
            file->total_ns += line->python_ns + line->native_ns + line->system_ns;
        }
        prof->total_ns += file->total_ns;
    }
}

int sonde_profile_finish(sonde_profile_t *prof)
{
    sonde_profile_sum(prof);
    for (size_t i = 0; i < prof->n_files; i++) {
        sonde_file_stats_t *file = &prof->files[i];

        /* Reload, so that finishing twice is harmless. */
        sonde__source_free(file->source, file->n_source);
        file->source = NULL;
        file->n_source = 0;
        int rc = sonde__source_load(file->path, &file->source, &file->n_source);
        if (rc == -ENOMEM) return rc;
    }
    return 0;
}

int sonde_profile_set_source(sonde_profile_t *prof, const char *path, const char *text, size_t len)
{
    sonde_file_stats_t *file = sonde_profile_file(prof, path);
    if (!file || file->source || !text) return 0;
    return sonde__source_split(text, len, false, &file->source, &file->n_source);
}

sonde_file_stats_t *sonde_profile_file(sonde_profile_t *prof, const char *path)
{
    if (!path) return NULL;
    bool found = false;
    size_t at = model_find_file(prof, path, &found);
    return found ? &prof->files[at] : NULL;
}
