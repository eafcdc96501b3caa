/* convert.c — what one process's sampling gathered, into the neutral model.
 *
 * Owns: sonde_accum_to_profile. Called once sampling has stopped, by the
 * in-process session (src/ext/sampler.c) and by the attach reader
 * (src/attach/profile.c, once per process). Turns code ids into names
 * (sonde_codenames_t), relative file names into absolute ones, thread
 * slots into thread names ("MainThread" or "thread 1234", prefixed by
 * "process 1230 " when several processes were sampled), marker frames into
 * "<N frames left out>", and fills the model's lines (sonde_profile_add,
 * sonde_profile_add_figs: the other sources' figures), call stacks (root first), unattributed time and
 * partial counters. Plain C; never in a signal handler.
 */
#include "sample.h"

#include "../core/keytab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONVERT_PATH_MAX 8192

/* Resolved file paths per code id, made on demand. */
struct convert_paths {
    const sonde_codenames_t *names; /* borrowed */
    char **by_code;                 /* owned; NULL entries not made yet */
    uint32_t n;
};

/* The path to report for code's file (code non-NULL); NULL without memory. */
static const char *convert_path(struct convert_paths *paths, uint32_t code_id,
                                const sonde_pycode_t *code)
{
    if (code_id >= paths->n) {
        size_t n = (size_t)code_id + 1 > 2 * (size_t)paths->n ? (size_t)code_id + 1 : 2 * paths->n;
        char **grown = realloc(paths->by_code, n * sizeof *grown);
        if (!grown) return NULL;
        memset(grown + paths->n, 0, (n - paths->n) * sizeof *grown);
        paths->by_code = grown;
        paths->n = (uint32_t)n;
    }
    if (!paths->by_code[code_id]) {
        char buf[CONVERT_PATH_MAX];
        paths->by_code[code_id] =
            strdup(sonde_codenames_path(paths->names, code->filename, buf, sizeof buf));
    }
    return paths->by_code[code_id];
}

static void convert_paths_free(struct convert_paths *paths)
{
    for (uint32_t i = 0; i < paths->n; i++)
        free(paths->by_code[i]);
    free(paths->by_code);
}

const char *sonde_stack_marker_name(uint32_t count, char *buf, size_t len)
{
    snprintf(buf, len, "<%u frame%s left out>", (unsigned)count, count == 1 ? "" : "s");
    return buf;
}

static int convert_lines(const sonde_accum_t *acc, struct convert_paths *paths,
                         sonde_profile_t *prof)
{
    const sonde_codenames_t *names = paths->names;
    for (size_t i = 0; i < acc->lines_cap; i++) {
        const sonde_line_acc_t *line = &acc->lines[i];
        if (!line->key) continue;
        uint32_t code_id = sonde_aframe_code(line->key);
        int lineno = sonde_aframe_line(line->key);
        const sonde_pycode_t *code = names->code(names->source, code_id);
        if (!code || !code->filename) continue;
        const char *file = convert_path(paths, code_id, code);
        if (!file) return -ENOMEM;
        sonde_ns_t python_ns = 0, native_ns = 0;
        sonde_line_split(line, &python_ns, &native_ns);
        int rc = sonde_profile_add(prof, file, code->name, code->firstlineno, lineno, python_ns,
                                   native_ns, line->system_ns, line->samples);
        bool figs = false;
        for (unsigned f = 0; f < SONDE_N_FIGSRCS; f++)
            figs = figs || sonde_figs_any(&line->figs, f);
        if (rc == 0 && figs)
            rc = sonde_profile_add_figs(prof, file, code->name, code->firstlineno, lineno,
                                        &line->figs);
        if (rc < 0) return rc;
    }
    return 0;
}

/* The model's thread index of each slot. */
static int convert_threads(const sonde_accum_t *acc, const sonde_accum_convert_t *how,
                           sonde_profile_t *prof, int *indices)
{
    for (size_t s = 0; s < acc->n_slots; s++) {
        char name[96];
        pid_t tid = acc->slot_tids[s];
        int at = 0;
        if (how->process_pid)
            at = snprintf(name, sizeof name, "process %d ", (int)how->process_pid);
        if (tid == how->main_tid)
            snprintf(name + at, sizeof name - (size_t)at, "MainThread");
        else if (tid > 0)
            snprintf(name + at, sizeof name - (size_t)at, "thread %d", (int)tid);
        else
            snprintf(name + at, sizeof name - (size_t)at, "thread (unknown id)");
        int index = sonde_profile_thread(prof, name);
        if (index < 0) return index;
        sonde_profile_thread_ids(prof, index, (int)how->main_tid, tid > 0 ? (int)tid : 0);
        indices[s] = index;
    }
    return 0;
}

/* Names frames[0..depth-1] (innermost first) into out, root first. mark
 * holds the marker's name (a stack has one marker at most: sonde_stack_limit). */
static int convert_frames(const sonde_aframe_t *frames, uint32_t depth, struct convert_paths *paths,
                          sonde_stack_frame_t *out, char *mark, size_t mark_len)
{
    const sonde_codenames_t *names = paths->names;
    for (uint32_t k = 0; k < depth; k++) {
        sonde_aframe_t f = frames[depth - 1 - k];
        sonde_stack_frame_t *frame = &out[k];
        if (sonde_aframe_is_marker(f)) {
            frame->func =
                (char *)sonde_stack_marker_name(sonde_aframe_marker_count(f), mark, mark_len);
            frame->file = (char *)"";
            frame->line = 0;
            continue;
        }
        const sonde_pycode_t *code = names->code(names->source, sonde_aframe_code(f));
        const char *file = code ? convert_path(paths, sonde_aframe_code(f), code) : "<unknown>";
        if (!file) return -ENOMEM;
        frame->func = (char *)(code && code->name ? code->name : "<unknown>");
        frame->file = (char *)file;
        frame->line = sonde_aframe_line(f);
    }
    return 0;
}

static int convert_stacks(const sonde_accum_t *acc, struct convert_paths *paths,
                          const sonde_accum_convert_t *how, sonde_profile_t *prof)
{
    sonde_stack_frame_t frames[SONDE_STACK_MAX_DEPTH];
    char mark[48];
    int *indices = NULL;
    int rc = 0;
    if (!acc->stacks_used) return 0;
    if (how->per_thread) {
        indices = calloc(acc->n_slots ? acc->n_slots : 1, sizeof *indices);
        if (!indices) return -ENOMEM;
        if ((rc = convert_threads(acc, how, prof, indices)) < 0) goto done;
    }
    for (size_t i = 0; i < acc->stacks_cap; i++) {
        const sonde_stack_acc_t *s = &acc->stacks[i];
        if (!s->hash) continue;
        uint32_t depth = s->depth < SONDE_STACK_MAX_DEPTH ? s->depth : SONDE_STACK_MAX_DEPTH;
        rc = convert_frames(acc->pool + s->frames, depth, paths, frames, mark, sizeof mark);
        if (rc < 0) goto done;
        int thread = how->per_thread && s->thread < acc->n_slots ? indices[s->thread] : -1;
        /* the split by kind when the producer told it (it then adds up);
         * time the native rule had no answer for yet is shared out as its
         * leaf line's is, by the line's final answers */
        sonde_ns_t kinds[SONDE_N_KINDS] = {s->kind_ns[0], s->kind_ns[1], s->kind_ns[2]};
        sonde_ns_t unwatched =
            s->kind_ns[SONDE_STACK_UNWATCHED] + s->kind_ns[SONDE_STACK_UNWATCHED_CALL];
        if (unwatched) {
            sonde_line_acc_t share = {.unwatched_ns = s->kind_ns[SONDE_STACK_UNWATCHED],
                                      .unwatched_call_ns = s->kind_ns[SONDE_STACK_UNWATCHED_CALL]};
            const sonde_line_acc_t *line =
                s->leaf ? sonde_keytab_find(acc->lines, acc->lines_cap, sizeof *acc->lines, s->leaf)
                        : NULL;
            if (line) {
                share.native_answers = line->native_answers;
                share.python_answers = line->python_answers;
            }
            sonde_ns_t python = 0, native = 0;
            sonde_line_split(&share, &python, &native);
            kinds[SONDE_KIND_PYTHON] += python;
            kinds[SONDE_KIND_NATIVE] += native;
        }
        if (kinds[0] + kinds[1] + kinds[2] == s->ns)
            rc = sonde_profile_add_stack_kinds(prof, frames, depth, thread, s->samples, kinds);
        else
            rc = sonde_profile_add_stack(prof, frames, depth, thread, s->samples, s->ns);
        if (rc < 0) goto done;
    }
done:
    free(indices);
    return rc;
}

int sonde_accum_to_profile(const sonde_accum_t *acc, const sonde_codenames_t *names,
                           const sonde_accum_convert_t *how, sonde_profile_t *prof)
{
    struct convert_paths paths = {names, NULL, 0};
    int rc = convert_lines(acc, &paths, prof);
    if (rc == 0) rc = convert_stacks(acc, &paths, how, prof);
    convert_paths_free(&paths);
    if (rc < 0) return rc;
    prof->unattributed_ns += acc->unattributed_ns;
    sonde_partial_add(&prof->partial, &acc->partial);
    return 0;
}
