/* pprof.c — the profile in pprof's format (profile.proto, gzipped).
 *
 * Owns: sonde_report_pprof (report.h). Called through the format registry
 * (format.c) by every command: `sonde run --format pprof` (or -o
 * x.pb.gz / x.pprof), `sonde attach/record`, sonde.start(), and `sonde
 * trace -o x.pb.gz` (src/trace/boot.c builds a flat model first).
 *
 * The document: sample types samples/count (calls/count for trace) and
 * cpu/nanoseconds (wall/nanoseconds unless only CPU time was sampled),
 * then, with memory figures, alloc_objects/count, alloc_space/bytes,
 * inuse_objects/count, inuse_space/bytes. Samples come from the call
 * stacks when the profile has them (leaf first; labels thread, thread_id
 * and pid where the model knows them), else one one-frame sample per line
 * (of each process, with its pid, when the caller gives the parts of a
 * merged profile);
 * either way one sample per kind of time (label kind =
 * python/native/system) where the model splits the time by kind (not
 * trace's flat model). A count is split between the kinds in proportion
 * to their time, largest remainder first, so the total count is kept. Memory figures are one-frame
 * samples per line with the time values 0. Functions carry name (the
 * qualified name where the interpreter has it), system_name ("file:name":
 * a name that differs from name, or pprof takes it for a C++ symbol to
 * demangle and strips "<module>" to nothing), filename and start_line;
 * locations one line each. One mapping (id 1, named after the program)
 * says functions, file names and lines are known, so pprof does not try
 * to symbolise. The default sample type is the time. The bytes are
 * compressed by the context's callback (gzip), or left as plain protobuf
 * without one (pprof reads both). Plain C, no libpython; never in a signal
 * handler.
 */
#include "report_internal.h"

#include "../core/protobuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* profile.proto's field numbers. */
enum {
    PF_SAMPLE_TYPE = 1,
    PF_SAMPLE = 2,
    PF_MAPPING = 3,
    PF_LOCATION = 4,
    PF_FUNCTION = 5,
    PF_STRING_TABLE = 6,
    PF_TIME_NANOS = 9,
    PF_DURATION_NANOS = 10,
    PF_PERIOD_TYPE = 11,
    PF_PERIOD = 12,
    PF_DEFAULT_SAMPLE_TYPE = 14,
    VT_TYPE = 1,
    VT_UNIT = 2,
    SA_LOCATION_ID = 1,
    SA_VALUE = 2,
    SA_LABEL = 3,
    LB_KEY = 1,
    LB_STR = 2,
    LB_NUM = 3,
    MP_ID = 1,
    MP_FILENAME = 5,
    MP_HAS_FUNCTIONS = 7,
    MP_HAS_FILENAMES = 8,
    MP_HAS_LINE_NUMBERS = 9,
    LO_ID = 1,
    LO_MAPPING_ID = 2,
    LO_LINE = 4,
    LI_FUNCTION_ID = 1,
    LI_LINE = 2,
    FN_ID = 1,
    FN_NAME = 2,
    FN_SYSTEM_NAME = 3,
    FN_FILENAME = 4,
    FN_START_LINE = 5,
};

#define PPROF_MAX_VALUES 6 /* samples, time, and the four memory types */

/* An open-addressed map from a key of three integers to an id (1-based;
 * 0 marks an empty slot). */
typedef struct pprof_map {
    struct pprof_slot {
        uint64_t k[3];
        uint64_t id;
    } * slots; /* owned; power of two, at most half full */
    size_t cap, used;
} pprof_map_t;

/* The writer's state: interned strings, functions and locations, each
 * encoded into its own buffer as it is first met. */
typedef struct pprof_w {
    const char **strings; /* borrowed (constants or the model's) */
    size_t n_strings, cap_strings;
    pprof_map_t string_map; /* k[0] = hash; id = index + 1 (compared by text) */
    pprof_map_t func_map;   /* (name, file, start_line) */
    pprof_map_t loc_map;    /* (function id, line) */
    uint64_t n_funcs, n_locs;
    sonde_buf_t funcs, locs, samples, scratch;
    size_t n_values;
    const char *pending; /* the text being interned (pprof_same_string) */
    char **owned;        /* owned: strings built here (system names) */
    size_t n_owned, cap_owned;
    int error;
} pprof_w_t;

static uint64_t pprof_mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

static uint64_t pprof_key_hash(const uint64_t k[3])
{
    return pprof_mix(k[0] * 31 + pprof_mix(k[1] * 131 + pprof_mix(k[2] + 7)));
}

static int pprof_map_grow(pprof_map_t *m)
{
    size_t cap = m->cap ? m->cap * 2 : 256;
    struct pprof_slot *slots = calloc(cap, sizeof *slots);
    if (!slots) return -ENOMEM;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].id) continue;
        size_t j = pprof_key_hash(m->slots[i].k) & (cap - 1);
        while (slots[j].id)
            j = (j + 1) & (cap - 1);
        slots[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return 0;
}

/* The slot of key k: its entry, or the empty slot where it goes. NULL
 * when out of memory. same() tells equal keys apart when given (strings,
 * whose k[0] is only a hash). */
static struct pprof_slot *pprof_map_slot(pprof_w_t *w, pprof_map_t *m, const uint64_t k[3],
                                         bool (*same)(const pprof_w_t *, uint64_t id,
                                                      const uint64_t k[3]))
{
    if ((m->used + 1) * 2 > m->cap && pprof_map_grow(m) < 0) return NULL;
    size_t j = pprof_key_hash(k) & (m->cap - 1);
    for (; m->slots[j].id; j = (j + 1) & (m->cap - 1)) {
        struct pprof_slot *s = &m->slots[j];
        if (memcmp(s->k, k, sizeof s->k) == 0 && (!same || same(w, s->id, k))) return s;
    }
    return &m->slots[j];
}

static uint64_t pprof_str_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static bool pprof_same_string(const pprof_w_t *w, uint64_t id, const uint64_t k[3])
{
    return strcmp(w->strings[id - 1], w->pending) == 0;
}

/* The string table index of s (NULL as ""), interned on first use; 0 when
 * out of memory (w->error set). */
static int64_t pprof_str(pprof_w_t *w, const char *s)
{
    if (!s) s = "";
    uint64_t k[3] = {pprof_str_hash(s), 0, 0};
    w->pending = s;
    struct pprof_slot *slot = pprof_map_slot(w, &w->string_map, k, pprof_same_string);
    if (!slot) goto nomem;
    if (slot->id) return (int64_t)slot->id - 1;
    if (w->n_strings == w->cap_strings) {
        size_t cap = w->cap_strings ? w->cap_strings * 2 : 256;
        const char **strings = realloc(w->strings, cap * sizeof *strings);
        if (!strings) goto nomem;
        w->strings = strings;
        w->cap_strings = cap;
    }
    w->strings[w->n_strings++] = s;
    memcpy(slot->k, k, sizeof k);
    slot->id = w->n_strings;
    w->string_map.used++;
    return (int64_t)w->n_strings - 1;
nomem:
    w->error = -ENOMEM;
    return 0;
}

/* The string table index of "file:name" (the function's system name),
 * kept by the writer; 0 when out of memory (w->error set). */
static int64_t pprof_system_name(pprof_w_t *w, const char *name, const char *file)
{
    if (w->n_owned == w->cap_owned) {
        size_t cap = w->cap_owned ? w->cap_owned * 2 : 64;
        char **owned = realloc(w->owned, cap * sizeof *owned);
        if (!owned) goto nomem;
        w->owned = owned;
        w->cap_owned = cap;
    }
    size_t len = strlen(file) + strlen(name) + 2;
    char *text = malloc(len);
    if (!text) goto nomem;
    snprintf(text, len, "%s:%s", file, name);
    w->owned[w->n_owned++] = text;
    return pprof_str(w, text);
nomem:
    w->error = -ENOMEM;
    return 0;
}

/* The id of function (name, file, start_line), encoded on first use; 0
 * when out of memory. */
static uint64_t pprof_function(pprof_w_t *w, const char *name, const char *file, int start_line)
{
    if (!name) name = "";
    if (!file) file = "";
    int64_t name_at = pprof_str(w, name), file_at = pprof_str(w, file);
    uint64_t k[3] = {(uint64_t)name_at, (uint64_t)file_at, (uint64_t)(int64_t)start_line};
    struct pprof_slot *slot = pprof_map_slot(w, &w->func_map, k, NULL);
    if (!slot) {
        w->error = -ENOMEM;
        return 0;
    }
    if (slot->id) return slot->id;
    memcpy(slot->k, k, sizeof k);
    slot->id = ++w->n_funcs;
    w->func_map.used++;
    sonde_buf_reset(&w->scratch);
    sonde_pb_uint(&w->scratch, FN_ID, slot->id);
    sonde_pb_int(&w->scratch, FN_NAME, name_at);
    sonde_pb_int(&w->scratch, FN_SYSTEM_NAME, pprof_system_name(w, name, file));
    sonde_pb_int(&w->scratch, FN_FILENAME, file_at);
    if (start_line > 0) sonde_pb_int(&w->scratch, FN_START_LINE, start_line);
    sonde_pb_message(&w->funcs, PF_FUNCTION, &w->scratch);
    return slot->id;
}

/* The id of the location of line `line` in function func_id, encoded on
 * first use; 0 when out of memory. */
static uint64_t pprof_location(pprof_w_t *w, uint64_t func_id, int line)
{
    uint64_t k[3] = {func_id, (uint64_t)(int64_t)line, 0};
    struct pprof_slot *slot = pprof_map_slot(w, &w->loc_map, k, NULL);
    if (!slot) {
        w->error = -ENOMEM;
        return 0;
    }
    if (slot->id) return slot->id;
    memcpy(slot->k, k, sizeof k);
    slot->id = ++w->n_locs;
    w->loc_map.used++;
    sonde_buf_t line_msg = SONDE_BUF_INIT;
    sonde_pb_uint(&line_msg, LI_FUNCTION_ID, func_id);
    if (line > 0) sonde_pb_int(&line_msg, LI_LINE, line);
    sonde_buf_reset(&w->scratch);
    sonde_pb_uint(&w->scratch, LO_ID, slot->id);
    sonde_pb_uint(&w->scratch, LO_MAPPING_ID, 1);
    sonde_pb_message(&w->scratch, LO_LINE, &line_msg);
    sonde_buf_free(&line_msg);
    sonde_pb_message(&w->locs, PF_LOCATION, &w->scratch);
    return slot->id;
}

/* A sample's labels: up to four, string or number. */
typedef struct pprof_label {
    const char *key;
    const char *str; /* NULL: a number */
    int64_t num;
} pprof_label_t;

/* Appends one sample: locs[0..n_locs-1] leaf first, w->n_values values. */
static void pprof_sample(pprof_w_t *w, const uint64_t *locs, size_t n_locs, const int64_t *values,
                         const pprof_label_t *labels, size_t n_labels)
{
    uint64_t raw[PPROF_MAX_VALUES];
    for (size_t i = 0; i < w->n_values; i++)
        raw[i] = (uint64_t)values[i];
    sonde_buf_t msg = SONDE_BUF_INIT, label = SONDE_BUF_INIT;
    sonde_pb_packed(&msg, SA_LOCATION_ID, locs, n_locs);
    sonde_pb_packed(&msg, SA_VALUE, raw, w->n_values);
    for (size_t i = 0; i < n_labels; i++) {
        sonde_buf_reset(&label);
        sonde_pb_int(&label, LB_KEY, pprof_str(w, labels[i].key));
        if (labels[i].str)
            sonde_pb_int(&label, LB_STR, pprof_str(w, labels[i].str));
        else
            sonde_pb_int(&label, LB_NUM, labels[i].num);
        sonde_pb_message(&msg, SA_LABEL, &label);
    }
    sonde_pb_message(&w->samples, PF_SAMPLE, &msg);
    sonde_buf_free(&label);
    sonde_buf_free(&msg);
}

/* ---- samples from lines ----------------------------------------------------------- */

static uint64_t pprof_line_location(pprof_w_t *w, const sonde_file_stats_t *file,
                                    const sonde_line_stats_t *line)
{
    const char *func = line->func_name ? line->func_name : "<module>";
    uint64_t func_id = pprof_function(w, func, file->path, line->func_firstlineno);
    return func_id ? pprof_location(w, func_id, line->lineno) : 0;
}

/* Splits a line's sample count between its kinds in proportion to their
 * time (largest remainder first), so the parts add up to the count. */
static void pprof_split_samples(const sonde_ns_t ns[3], uint64_t samples, uint64_t parts[3])
{
    sonde_ns_t total = ns[0] + ns[1] + ns[2];
    double rest[3];
    uint64_t given = 0;
    for (int k = 0; k < 3; k++) {
        double exact = total ? (double)samples * (double)ns[k] / (double)total : 0;
        parts[k] = (uint64_t)exact;
        rest[k] = exact - (double)parts[k];
        given += parts[k];
    }
    if (!total) {
        parts[0] = samples; /* no time: the count stays with Python */
        return;
    }
    while (given < samples) {
        int best = -1;
        for (int k = 0; k < 3; k++)
            if (ns[k] && (best < 0 || rest[k] > rest[best])) best = k;
        parts[best]++;
        rest[best] = -1;
        given++;
    }
}

static const char *const pprof_kinds[SONDE_N_KINDS] = {"python", "native", "system"};

static void pprof_time_from_lines(pprof_w_t *w, const sonde_profile_t *prof,
                                  const pprof_label_t *pid)
{
    for (size_t f = 0; f < prof->n_files; f++) {
        const sonde_file_stats_t *file = &prof->files[f];
        for (size_t i = 0; i < file->n_lines; i++) {
            const sonde_line_stats_t *line = &file->lines[i];
            sonde_ns_t ns[3] = {line->python_ns, line->native_ns, line->system_ns};
            uint64_t parts[3];
            if (!line->samples && !ns[0] && !ns[1] && !ns[2]) continue;
            pprof_split_samples(ns, line->samples, parts);
            uint64_t loc = pprof_line_location(w, file, line);
            for (int k = 0; k < 3 && loc; k++) {
                if (!ns[k] && !parts[k]) continue;
                int64_t values[PPROF_MAX_VALUES] = {(int64_t)parts[k], (int64_t)ns[k]};
                pprof_label_t labels[2] = {{"kind", pprof_kinds[k], 0}};
                size_t n_labels = 1;
                if (pid) labels[n_labels++] = *pid;
                pprof_sample(w, &loc, 1, values, labels, n_labels);
            }
        }
    }
}

/* The figure of count column json_name for a line, the integer the JSON
 * report writes (columns.c rounds; JSON truncates what it gives). */
static int64_t pprof_column(const sonde_profile_t *prof, const sonde__row_t *row,
                            const char *json_name)
{
    for (size_t i = 0; i < sonde__n_columns; i++) {
        if (strcmp(sonde__columns[i].json_name, json_name) != 0) continue;
        double v = sonde__columns[i].value(&sonde__columns[i], row, prof);
        return v > 0 ? (int64_t)v : 0;
    }
    return 0;
}

static void pprof_memory_from_lines(pprof_w_t *w, const sonde_profile_t *prof,
                                    const pprof_label_t *pid)
{
    static const char *const names[4] = {"alloc_objects", "alloc_space", "inuse_objects",
                                         "inuse_space"};
    for (size_t f = 0; f < prof->n_files; f++) {
        const sonde_file_stats_t *file = &prof->files[f];
        for (size_t i = 0; i < file->n_lines; i++) {
            const sonde_line_stats_t *line = &file->lines[i];
            sonde__row_t row = sonde__row_of_line(line);
            int64_t values[PPROF_MAX_VALUES] = {0};
            bool any = false;
            for (int k = 0; k < 4; k++) {
                values[2 + k] = pprof_column(prof, &row, names[k]);
                any |= values[2 + k] != 0;
            }
            if (!any) continue;
            uint64_t loc = pprof_line_location(w, file, line);
            if (loc) pprof_sample(w, &loc, 1, values, pid, pid ? 1 : 0);
        }
    }
}

/* ---- samples from call stacks ----------------------------------------------------- */

/* The first line of function `func` of file `path`, as the model's
 * function entries have it (a stack's outer frames charged no line of
 * their own have none); 0 when unknown. */
static int pprof_start_line(const sonde_profile_t *prof, const char *path, const char *func)
{
    sonde_file_stats_t *file = sonde_profile_file((sonde_profile_t *)prof, path);
    for (size_t i = 0; file && i < file->n_funcs; i++)
        if (strcmp(file->funcs[i].name, func) == 0) return file->funcs[i].firstlineno;
    /* a module's code starts at its first line (co_firstlineno 1) */
    return strcmp(func, "<module>") == 0 && path[0] && path[0] != '<' ? 1 : 0;
}

static void pprof_time_from_stacks(pprof_w_t *w, const sonde_profile_t *prof,
                                   const pprof_label_t *pid)
{
    uint64_t *loc_of_frame = calloc(prof->n_frames ? prof->n_frames : 1, sizeof *loc_of_frame);
    uint64_t *locs = NULL;
    uint32_t max_depth = 0;
    for (size_t s = 0; s < prof->n_stacks; s++)
        if (prof->stacks[s].depth > max_depth) max_depth = prof->stacks[s].depth;
    locs = calloc(max_depth ? max_depth : 1, sizeof *locs);
    if (!loc_of_frame || !locs) {
        w->error = -ENOMEM;
        goto done;
    }
    for (size_t i = 0; i < prof->n_frames && !w->error; i++) {
        const sonde_stack_frame_t *f = &prof->frames[i];
        int start = pprof_start_line(prof, f->file, f->func);
        uint64_t func_id = pprof_function(w, f->func, f->file, start);
        loc_of_frame[i] = func_id ? pprof_location(w, func_id, f->line) : 0;
    }
    for (size_t s = 0; s < prof->n_stacks && !w->error; s++) {
        const sonde_stack_t *stack = &prof->stacks[s];
        if (!stack->samples && !stack->ns) continue;
        for (uint32_t d = 0; d < stack->depth; d++)
            locs[d] = loc_of_frame[stack->frames[stack->depth - 1 - d]];
        pprof_label_t labels[4];
        size_t n_labels = 0;
        int pid_num = pid ? (int)pid->num : 0;
        if (stack->thread >= 0 && (size_t)stack->thread < prof->n_threads) {
            const sonde_thread_ids_t *ids = &prof->thread_ids[stack->thread];
            labels[n_labels++] = (pprof_label_t){"thread", prof->thread_names[stack->thread], 0};
            if (ids->tid) labels[n_labels++] = (pprof_label_t){"thread_id", NULL, ids->tid};
            if (ids->pid) pid_num = ids->pid;
        }
        if (pid_num) labels[n_labels++] = (pprof_label_t){"pid", NULL, pid_num};
        const sonde_ns_t *kind_ns = stack->kind_ns;
        if (kind_ns[0] + kind_ns[1] + kind_ns[2] != stack->ns || !stack->ns) {
            /* no split by kind (sonde trace's flat model): one sample */
            int64_t values[PPROF_MAX_VALUES] = {(int64_t)stack->samples, (int64_t)stack->ns};
            pprof_sample(w, locs, stack->depth, values, labels, n_labels);
            continue;
        }
        uint64_t parts[SONDE_N_KINDS];
        pprof_split_samples(kind_ns, stack->samples, parts);
        for (int k = 0; k < SONDE_N_KINDS; k++) {
            if (!kind_ns[k] && !parts[k]) continue;
            int64_t values[PPROF_MAX_VALUES] = {(int64_t)parts[k], (int64_t)kind_ns[k]};
            labels[n_labels] = (pprof_label_t){"kind", pprof_kinds[k], 0};
            pprof_sample(w, locs, stack->depth, values, labels, n_labels + 1);
        }
    }
done:
    free(locs);
    free(loc_of_frame);
}

/* ---- the document ----------------------------------------------------------------- */

static void pprof_value_type(pprof_w_t *w, sonde_buf_t *out, uint32_t field, const char *type,
                             const char *unit)
{
    sonde_buf_t msg = SONDE_BUF_INIT;
    sonde_pb_int(&msg, VT_TYPE, pprof_str(w, type));
    sonde_pb_int(&msg, VT_UNIT, pprof_str(w, unit));
    sonde_pb_message(out, field, &msg);
    sonde_buf_free(&msg);
}

static void pprof_free(pprof_w_t *w)
{
    for (size_t i = 0; i < w->n_owned; i++)
        free(w->owned[i]);
    free(w->owned);
    free(w->strings);
    free(w->string_map.slots);
    free(w->func_map.slots);
    free(w->loc_map.slots);
    sonde_buf_free(&w->funcs);
    sonde_buf_free(&w->locs);
    sonde_buf_free(&w->samples);
    sonde_buf_free(&w->scratch);
}

/* The encoded profile (uncompressed) into doc. Returns 0 or -ENOMEM. */
static int pprof_encode(const sonde_profile_t *prof, const sonde_pprof_opts_t *opts,
                        sonde_buf_t *doc)
{
    pprof_w_t w;
    memset(&w, 0, sizeof w);
    const char *time_type = prof->virtual_time ? "cpu" : "wall";
    const char *count_type = opts && opts->count_type ? opts->count_type : "samples";
    pprof_str(&w, ""); /* string_table[0] must be "" */
    w.n_values = prof->has_memory ? 6 : 2;

    sonde_buf_t head = SONDE_BUF_INIT;
    pprof_value_type(&w, &head, PF_SAMPLE_TYPE, count_type, "count");
    pprof_value_type(&w, &head, PF_SAMPLE_TYPE, time_type, "nanoseconds");
    if (prof->has_memory) {
        pprof_value_type(&w, &head, PF_SAMPLE_TYPE, "alloc_objects", "count");
        pprof_value_type(&w, &head, PF_SAMPLE_TYPE, "alloc_space", "bytes");
        pprof_value_type(&w, &head, PF_SAMPLE_TYPE, "inuse_objects", "count");
        pprof_value_type(&w, &head, PF_SAMPLE_TYPE, "inuse_space", "bytes");
    }

    pprof_label_t pid = {"pid", NULL, prof->pid};
    if (prof->n_stacks) {
        pprof_time_from_stacks(&w, prof, prof->pid ? &pid : NULL);
        if (prof->has_memory) pprof_memory_from_lines(&w, prof, prof->pid ? &pid : NULL);
    } else if (opts && opts->parts && opts->n_parts) {
        /* a merge of processes: each one's lines, with its pid */
        for (size_t i = 0; i < opts->n_parts; i++) {
            const sonde_profile_t *part = &opts->parts[i];
            pprof_label_t part_pid = {"pid", NULL, part->pid};
            pprof_time_from_lines(&w, part, part->pid ? &part_pid : NULL);
            if (prof->has_memory) pprof_memory_from_lines(&w, part, part->pid ? &part_pid : NULL);
        }
    } else {
        pprof_time_from_lines(&w, prof, prof->pid ? &pid : NULL);
        if (prof->has_memory) pprof_memory_from_lines(&w, prof, prof->pid ? &pid : NULL);
    }

    sonde_buf_t mapping = SONDE_BUF_INIT;
    sonde_pb_uint(&mapping, MP_ID, 1);
    sonde_pb_int(&mapping, MP_FILENAME, pprof_str(&w, prof->program ? prof->program : "python"));
    sonde_pb_uint(&mapping, MP_HAS_FUNCTIONS, 1);
    sonde_pb_uint(&mapping, MP_HAS_FILENAMES, 1);
    sonde_pb_uint(&mapping, MP_HAS_LINE_NUMBERS, 1);
    pprof_value_type(&w, &head, PF_PERIOD_TYPE, time_type, "nanoseconds");
    int64_t default_type = pprof_str(&w, time_type); /* the time, not the count */

    int64_t duration = (int64_t)(prof->elapsed_sec * 1e9 + 0.5);
    int64_t when = opts && opts->time_nanos ? opts->time_nanos : 0;
    if (!when) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        when = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec - duration;
    }

    sonde_buf_append(doc, head.data, head.len);
    if (head.error) doc->error = head.error;
    sonde_buf_append(doc, w.samples.data, w.samples.len);
    sonde_pb_message(doc, PF_MAPPING, &mapping);
    sonde_buf_append(doc, w.locs.data, w.locs.len);
    sonde_buf_append(doc, w.funcs.data, w.funcs.len);
    for (size_t i = 0; i < w.n_strings; i++)
        sonde_pb_bytes(doc, PF_STRING_TABLE, w.strings[i], strlen(w.strings[i]));
    sonde_pb_int(doc, PF_TIME_NANOS, when);
    sonde_pb_int(doc, PF_DURATION_NANOS, duration);
    sonde_pb_int(doc, PF_PERIOD, (int64_t)(prof->interval_sec * 1e9 + 0.5));
    sonde_pb_int(doc, PF_DEFAULT_SAMPLE_TYPE, default_type);

    int rc = w.error;
    if (!rc && (w.samples.error || w.locs.error || w.funcs.error || w.scratch.error ||
                mapping.error || head.error))
        rc = -ENOMEM;
    sonde_buf_free(&mapping);
    sonde_buf_free(&head);
    pprof_free(&w);
    return rc;
}

int sonde_report_pprof(const sonde_profile_t *prof, const sonde_pprof_opts_t *opts,
                       sonde_buf_t *out)
{
    sonde_buf_t doc = SONDE_BUF_INIT;
    size_t before = out->len;
    int rc = pprof_encode(prof, opts, &doc);
    if (rc == 0 && sonde_buf_error(&doc)) rc = -ENOMEM;
    if (rc == 0 && opts && opts->compress)
        rc = opts->compress(doc.data ? doc.data : "", doc.len, out, opts->compress_arg);
    if (rc == -ENOSYS || (rc == 0 && !(opts && opts->compress)))
        rc = 0, sonde_buf_append(out, doc.data ? doc.data : "", doc.len);
    if (rc == 0 && sonde_buf_error(out)) rc = -ENOMEM;
    if (rc < 0 && !sonde_buf_error(out)) out->len = before;
    sonde_buf_free(&doc);
    return rc;
}
