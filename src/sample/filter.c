/* filter.c — which files are profiled, decided once per code object.
 *
 * Owns: sonde_codefilter_t (the rule, pure string work over the path
 * tests of src/core/pathrule.c), sonde_codecache_t (the verdict per code
 * id) and sonde_codenames_t (naming code ids). The rule is filled by each
 * front end from what it knows: src/ext/filter.c asks the running
 * interpreter for its library directories, src/attach/target.c infers
 * them from the target's executable. The cache is asked by the sampler
 * thread, the attach loop and the memory callback (inside allocator hooks,
 * with the shim's guard set: its realloc goes straight to libc). No
 * signal handler.
 */
#include "sample.h"

#include "../core/pathrule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the rule ------------------------------------------------------------- */

/* Appends an owned string to a list. Returns 0 or -ENOMEM (copy freed). */
static int filter_push(char ***list, int *n, char *copy)
{
    char **grown = realloc(*list, (size_t)(*n + 1) * sizeof *grown);
    if (!grown) {
        free(copy);
        return -ENOMEM;
    }
    grown[(*n)++] = copy;
    *list = grown;
    return 0;
}

int sonde_codefilter_add_lib_dir(sonde_codefilter_t *f, const char *dir)
{
    if (!dir || !*dir) return 0;
    char *copy = sonde_path_dir_prefix(dir);
    if (!copy) return -ENOMEM;
    for (int i = 0; i < f->n_lib_prefixes; i++)
        if (strcmp(f->lib_prefixes[i], copy) == 0) {
            free(copy);
            return 0;
        }
    return filter_push(&f->lib_prefixes, &f->n_lib_prefixes, copy);
}

int sonde_codefilter_add_only(sonde_codefilter_t *f, const char *pattern)
{
    char *copy = strdup(pattern ? pattern : "");
    return copy ? filter_push(&f->only, &f->n_only, copy) : -ENOMEM;
}

int sonde_codefilter_add_exclude(sonde_codefilter_t *f, const char *pattern)
{
    char *copy = strdup(pattern ? pattern : "");
    return copy ? filter_push(&f->exclude, &f->n_exclude, copy) : -ENOMEM;
}

int sonde_codefilter_choose(sonde_codefilter_t *f, const sonde_filechoice_t *choice)
{
    int rc = 0;
    if (!choice) return 0;
    f->profile_all = choice->profile_all;
    for (int i = 0; rc == 0 && i < choice->n_only; i++)
        rc = sonde_codefilter_add_only(f, choice->only[i]);
    for (int i = 0; rc == 0 && i < choice->n_exclude; i++)
        rc = sonde_codefilter_add_exclude(f, choice->exclude[i]);
    return rc;
}

bool sonde_codefilter_wants(const sonde_codefilter_t *f, const char *path)
{
    if (sonde_path_is_pseudo(path) && !sonde_path_is_ipython_cell(path) &&
        !(f->program_pseudo && path && strcmp(path, f->program_pseudo) == 0))
        return false;
    for (int i = 0; i < f->n_exclude; i++)
        if (strstr(path, f->exclude[i])) return false;
    if (f->n_only > 0) {
        for (int i = 0; i < f->n_only; i++)
            if (strstr(path, f->only[i])) return true;
        return false;
    }
    if (f->profile_all) return true;
    if (f->site_dirs && sonde_path_in_site_dir(path)) return false;
    return !sonde_path_has_prefix(path, f->lib_prefixes, f->n_lib_prefixes);
}

static void filter_free_list(char **list, int n)
{
    for (int i = 0; i < n; i++)
        free(list[i]);
    free(list);
}

void sonde_codefilter_free(sonde_codefilter_t *f)
{
    filter_free_list(f->lib_prefixes, f->n_lib_prefixes);
    filter_free_list(f->only, f->n_only);
    filter_free_list(f->exclude, f->n_exclude);
    memset(f, 0, sizeof *f);
}

/* ---- names ------------------------------------------------------------------ */

static const sonde_pycode_t *filter_proc_code(const void *source, uint32_t code_id)
{
    return sonde_pyproc_code(source, code_id);
}

sonde_codenames_t sonde_codenames_of_proc(const sonde_pyproc_t *proc, const char *cwd)
{
    sonde_codenames_t names = {filter_proc_code, proc, cwd};
    return names;
}

const char *sonde_codenames_path(const sonde_codenames_t *names, const char *filename, char *buf,
                                 size_t len)
{
    const char *cwd = names ? names->cwd : NULL;
    if (!filename) filename = "";
    if (filename[0] != '/' && filename[0] != '<' && filename[0] && cwd && cwd[0])
        snprintf(buf, len, "%s/%s", cwd, filename);
    else
        snprintf(buf, len, "%s", filename);
    return buf;
}

/* ---- the verdict per code id ---------------------------------------------------- */

bool sonde_codecache_wants(sonde_codecache_t *c, const sonde_codefilter_t *f,
                           const sonde_codenames_t *names, uint32_t code_id)
{
    if (code_id == SONDE_AFRAME_MARKER_CODE) return false;
    if (code_id >= c->cap) {
        size_t cap = c->cap ? c->cap : 256;
        while (cap <= code_id)
            cap *= 2;
        int8_t *grown = realloc(c->verdict, cap);
        if (!grown) return false;
        memset(grown + c->cap, -1, cap - c->cap);
        c->verdict = grown;
        c->cap = cap;
    }
    if (c->verdict[code_id] < 0) {
        const sonde_pycode_t *code = names->code(names->source, code_id);
        if (!code) return false; /* not cached yet: ask again later */
        c->verdict[code_id] = code->filename && sonde_codefilter_wants(f, code->filename);
    }
    return c->verdict[code_id] == 1;
}

void sonde_codecache_free(sonde_codecache_t *c)
{
    free(c->verdict);
    c->verdict = NULL;
    c->cap = 0;
}
