/* json_load.c — reading a JSON profile back into the model
 * (sonde_profile_load_json, report.h).
 *
 * Owns: the inverse of json.c: every field json.c writes (run information,
 * exit, partial counts, processes, memory and the sources' figures with their
 * timelines, files with their lines, functions, leaks and source, call
 * stacks with threads) back into a sonde_profile_t, so that `sonde merge`
 * can add the user's JSON profiles up (the processes of a run hand theirs
 * over in src/handover/'s format, not in JSON). Percentages
 * become times again through profiled_time_sec (and copy rates through
 * elapsed_time_sec), so figures come back to the precision the file
 * carries. The file may come from anywhere: it is parsed with cJSON, its
 * text must be UTF-8, every field must have its type and every number a
 * bound (LOAD_MAX_*); the first problem is named in one line. Linked into
 * the command only (Makefile: CMD_ONLY_SRCS), like html_json.c. Never in a
 * signal handler.
 */
#include "report_internal.h"

#include <cjson/cJSON.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOAD_MAX_COUNT 9007199254740992.0 /* 2^53: counts exact in a double */
#define LOAD_MAX_SEC 1e9                  /* about 31 years */
#define LOAD_MAX_MB 1e12                  /* an exabyte */
#define LOAD_MAX_PERCENT 100.001          /* a line's share is at most 100 (rounding) */
#define LOAD_SLACK (1 + 1e-6)             /* bounds of re-derived times: rounding */
#define LOAD_MAX_DEPTH 65536              /* frames in one stack */
#define LOAD_PID_MAX 4194304              /* Linux's PID_MAX_LIMIT */

typedef struct load {
    sonde_profile_t *prof;
    char *err;
    size_t err_len;
    bool failed;
    bool oom;
    double profiled_sec; /* profiled_time_sec: what percentages are shares of */
    char where[192];     /* the object being read, for messages */
} load_t;

static bool load_fail(load_t *ld, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Records the first problem (one line: where, then what); returns false. */
static bool load_fail(load_t *ld, const char *fmt, ...)
{
    if (ld->failed) return false;
    ld->failed = true;
    if (ld->err && ld->err_len) {
        char what[256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(what, sizeof what, fmt, ap);
        va_end(ap);
        snprintf(ld->err, ld->err_len, "%s%s%s", ld->where, ld->where[0] ? ": " : "", what);
        for (char *c = ld->err; *c; c++) /* one line, whatever a path holds */
            if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
    }
    return false;
}

static bool load_oom(load_t *ld)
{
    ld->oom = true;
    return load_fail(ld, "out of memory");
}

static const cJSON *load_item(const cJSON *obj, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

/* A number field in [lo, hi]; absent or null: def. */
static double load_number(load_t *ld, const cJSON *obj, const char *key, double lo, double hi,
                          double def)
{
    const cJSON *item = load_item(obj, key);
    if (!item || cJSON_IsNull(item)) return def;
    if (!cJSON_IsNumber(item)) return load_fail(ld, "\"%s\" is not a number", key), def;
    double v = item->valuedouble;
    if (!isfinite(v) || v < lo || v > hi)
        return load_fail(ld, "\"%s\" is %g, outside %g..%g", key, v, lo, hi), def;
    return v;
}

/* A whole number in [lo, hi] of a JSON number. */
static bool load_whole_of(load_t *ld, const cJSON *item, const char *key, double lo, double hi,
                          double *out)
{
    if (!cJSON_IsNumber(item)) return load_fail(ld, "\"%s\" is not a number", key);
    double v = item->valuedouble;
    if (!isfinite(v) || v != floor(v) || v < lo || v > hi)
        return load_fail(ld, "\"%s\" is not a whole number in %.0f..%.0f", key, lo, hi);
    *out = v;
    return true;
}

/* A whole-number field; absent or null: 0. */
static double load_whole(load_t *ld, const cJSON *obj, const char *key, double lo, double hi)
{
    const cJSON *item = load_item(obj, key);
    double v = 0;
    if (!item || cJSON_IsNull(item)) return 0;
    load_whole_of(ld, item, key, lo, hi, &v);
    return v;
}

static bool load_bool(load_t *ld, const cJSON *obj, const char *key)
{
    const cJSON *item = load_item(obj, key);
    if (!item || cJSON_IsNull(item)) return false;
    if (!cJSON_IsBool(item)) return load_fail(ld, "\"%s\" is not true or false", key);
    return cJSON_IsTrue(item);
}

/* A string field; absent or null: NULL (borrowed from the tree). */
static const char *load_string(load_t *ld, const cJSON *obj, const char *key)
{
    const cJSON *item = load_item(obj, key);
    if (!item || cJSON_IsNull(item)) return NULL;
    if (!cJSON_IsString(item)) return load_fail(ld, "\"%s\" is not a string", key), NULL;
    return item->valuestring;
}

/* An array or object field (type cJSON_Array / cJSON_Object); absent: NULL. */
static const cJSON *load_container(load_t *ld, const cJSON *obj, const char *key, int type)
{
    const cJSON *item = load_item(obj, key);
    if (!item || cJSON_IsNull(item)) return NULL;
    if ((item->type & 0xff) != type)
        return load_fail(ld, "\"%s\" is not %s", key, type == cJSON_Array ? "a list" : "an object"),
               NULL;
    return item;
}

static sonde_ns_t load_ns(double sec)
{
    return (sonde_ns_t)llround(sec * SONDE_NS_PER_SEC);
}

/* A percentage of the profiled time, as nanoseconds. A line's share is at
 * most 100 %; a function's is bounded by its time only (a file whose
 * functions disagree with its lines is still read as it is). */
static sonde_ns_t load_share_ns(load_t *ld, const cJSON *obj, const char *key, double max_percent)
{
    double pct = load_number(ld, obj, key, 0, max_percent, 0);
    double sec = pct / 100.0 * ld->profiled_sec;
    if (!(sec <= LOAD_MAX_SEC * LOAD_SLACK))
        return load_fail(ld, "\"%s\" stands for more than %g s", key, LOAD_MAX_SEC), 0;
    return load_ns(sec);
}

/* [[seconds, MB], ...] into tl. */
static bool load_timeline(load_t *ld, const cJSON *obj, const char *key, sonde_timeline_t *tl)
{
    const cJSON *list = load_container(ld, obj, key, cJSON_Array);
    const cJSON *point;
    if (!list) return !ld->failed;
    cJSON_ArrayForEach(point, list)
    {
        if (!cJSON_IsArray(point) || cJSON_GetArraySize(point) != 2)
            return load_fail(ld, "\"%s\" holds an entry that is not [seconds, MB]", key);
        const cJSON *t = cJSON_GetArrayItem(point, 0), *mb = cJSON_GetArrayItem(point, 1);
        if (!cJSON_IsNumber(t) || !cJSON_IsNumber(mb) || !(fabs(t->valuedouble) <= LOAD_MAX_SEC) ||
            !(fabs(mb->valuedouble) <= LOAD_MAX_MB))
            return load_fail(ld, "\"%s\" holds a point out of range", key);
        if (sonde_timeline_add(tl, t->valuedouble, mb->valuedouble) < 0) return load_oom(ld);
    }
    return true;
}

/* The memory figures of a line or function (json.c's memory columns). */
static void load_memory(load_t *ld, const cJSON *entry, sonde_line_memory_t *mem)
{
    double elapsed = ld->prof->elapsed_sec;
    mem->malloc_mb = load_number(ld, entry, "n_malloc_mb", 0, LOAD_MAX_MB, 0);
    if (load_item(entry, "alloc_space")) /* the same figure in bytes: more digits */
        mem->malloc_mb = load_whole(ld, entry, "alloc_space", 0, LOAD_MAX_COUNT) / 1048576.0;
    mem->mallocs = (uint64_t)load_whole(ld, entry, "n_mallocs", 0, LOAD_MAX_COUNT);
    mem->alloc_objects = load_whole(ld, entry, "alloc_objects", 0, LOAD_MAX_COUNT);
    mem->python_fraction = load_number(ld, entry, "n_python_fraction", 0, 1, 0);
    mem->avg_mb = load_number(ld, entry, "n_avg_mb", -LOAD_MAX_MB, LOAD_MAX_MB, 0);
    mem->peak_mb = load_number(ld, entry, "n_peak_mb", -LOAD_MAX_MB, LOAD_MAX_MB, 0);
    mem->live_mb = load_number(ld, entry, "n_live_mb", -LOAD_MAX_MB, LOAD_MAX_MB, 0);
    if (load_item(entry, "inuse_space"))
        mem->live_mb = load_whole(ld, entry, "inuse_space", 0, LOAD_MAX_COUNT) / 1048576.0;
    mem->live_objects = load_whole(ld, entry, "inuse_objects", 0, LOAD_MAX_COUNT);
    mem->live_at_peak_mb =
        load_number(ld, entry, "n_live_at_peak_mb", -LOAD_MAX_MB, LOAD_MAX_MB, 0);
    mem->copy_mb = load_number(ld, entry, "n_copy_mb_s", 0, LOAD_MAX_MB, 0) * elapsed;
}

/* The sources' figures of a line or function (src/model/figures.h): each
 * source that ran reads its columns back (units bound them: a level in
 * percent 0..100, megabytes, counts), weighted by the entry's time. */
static void load_figs(load_t *ld, const cJSON *entry, sonde_ns_t entry_ns, uint64_t samples,
                      sonde_figs_t *figs)
{
    static const double max[] = {[SONDE_FIG_UNIT_LEVEL_PERCENT] = LOAD_MAX_PERCENT,
                                 [SONDE_FIG_UNIT_MB] = LOAD_MAX_MB,
                                 [SONDE_FIG_UNIT_COUNT] = LOAD_MAX_COUNT};
    for (unsigned s = 0; s < SONDE_N_FIGSRCS; s++) {
        const sonde_fig_source_t *src = &sonde_fig_sources[s];
        if (!ld->prof->fig_runs[s].present || !src->load) continue;
        double values[16] = {0};
        for (size_t c = 0; c < src->n_columns && c < SONDE_ARRAY_LEN(values); c++)
            values[c] =
                load_number(ld, entry, src->columns[c].json_name, 0, max[src->columns[c].unit], 0);
        src->load(figs->v + src->first, values, (double)entry_ns / SONDE_NS_PER_SEC, samples);
    }
}

/* The time figures shared by lines and functions. */
typedef struct load_times {
    sonde_ns_t python_ns, native_ns, system_ns;
    uint64_t samples;
} load_times_t;

static load_times_t load_times(load_t *ld, const cJSON *entry, double max_percent)
{
    load_times_t t;
    t.python_ns = load_share_ns(ld, entry, "n_cpu_percent_python", max_percent);
    t.native_ns = load_share_ns(ld, entry, "n_cpu_percent_c", max_percent);
    t.system_ns = load_share_ns(ld, entry, "n_sys_percent", max_percent);
    t.samples = (uint64_t)load_whole(ld, entry, "n_samples", 0, LOAD_MAX_COUNT);
    return t;
}

static bool load_lines(load_t *ld, const char *path, const cJSON *file)
{
    const cJSON *lines = load_container(ld, file, "lines", cJSON_Array);
    const cJSON *entry;
    size_t i = 0;
    cJSON_ArrayForEach(entry, lines)
    {
        snprintf(ld->where, sizeof ld->where, "files[\"%.120s\"].lines[%zu]", path, i++);
        if (!cJSON_IsObject(entry)) return load_fail(ld, "not an object");
        double lineno = 0;
        if (!load_whole_of(ld, load_item(entry, "lineno"), "lineno", 0, INT32_MAX, &lineno))
            return false;
        load_times_t t = load_times(ld, entry, LOAD_MAX_PERCENT);
        sonde_line_stats_t *line = sonde_profile_line_only(ld->prof, path, (int)lineno);
        if (!line) return load_oom(ld);
        line->python_ns += t.python_ns;
        line->native_ns += t.native_ns;
        line->system_ns += t.system_ns;
        line->samples += t.samples;
        if (ld->prof->has_memory) {
            load_memory(ld, entry, &line->mem);
            if (!load_timeline(ld, entry, "memory_samples", &line->mem.timeline)) return false;
        }
        load_figs(ld, entry, t.python_ns + t.native_ns + t.system_ns, t.samples, &line->figs);
        if (ld->failed) return false;
    }
    return !ld->failed;
}

/* Each line's function ("function", "function_lineno", when the writer
 * had them: pprof's locations name it), after the functions are in. */
static bool load_line_functions(load_t *ld, const char *path, const cJSON *file)
{
    const cJSON *lines = load_container(ld, file, "lines", cJSON_Array);
    const cJSON *entry;
    size_t i = 0;
    cJSON_ArrayForEach(entry, lines)
    {
        snprintf(ld->where, sizeof ld->where, "files[\"%.120s\"].lines[%zu]", path, i++);
        const char *name = load_string(ld, entry, "function");
        if (ld->failed) return false;
        if (!name) continue;
        double lineno = 0, first = 0;
        if (!load_whole_of(ld, load_item(entry, "lineno"), "lineno", 0, INT32_MAX, &lineno))
            return false;
        first = load_whole(ld, entry, "function_lineno", 0, INT32_MAX);
        if (ld->failed) return false;
        sonde_func_stats_t *func = sonde_profile_func_entry(ld->prof, path, name, (int)first);
        sonde_line_stats_t *line =
            func ? sonde_profile_line_only(ld->prof, path, (int)lineno) : NULL;
        if (!line) return load_oom(ld);
        line->func_name = func->name;
        line->func_firstlineno = func->firstlineno;
    }
    return true;
}

static bool load_functions(load_t *ld, const char *path, const cJSON *file)
{
    const cJSON *funcs = load_container(ld, file, "functions", cJSON_Array);
    const cJSON *entry;
    size_t i = 0;
    cJSON_ArrayForEach(entry, funcs)
    {
        snprintf(ld->where, sizeof ld->where, "files[\"%.120s\"].functions[%zu]", path, i++);
        if (!cJSON_IsObject(entry)) return load_fail(ld, "not an object");
        double lineno = 0;
        if (!load_whole_of(ld, load_item(entry, "lineno"), "lineno", 0, INT32_MAX, &lineno))
            return false;
        const char *name = load_string(ld, entry, "line");
        load_times_t t = load_times(ld, entry, DBL_MAX);
        if (ld->failed) return false;
        sonde_func_stats_t *func = sonde_profile_func_entry(ld->prof, path, name, (int)lineno);
        if (!func) return load_oom(ld);
        func->python_ns += t.python_ns;
        func->native_ns += t.native_ns;
        func->system_ns += t.system_ns;
        func->samples += t.samples;
        if (ld->prof->has_memory) load_memory(ld, entry, &func->mem);
        load_figs(ld, entry, t.python_ns + t.native_ns + t.system_ns, t.samples, &func->figs);
        if (ld->failed) return false;
    }
    return !ld->failed;
}

/* files[path].leaks: {"lineno": {"likelihood", "velocity_mb_s"}}. */
static bool load_leaks(load_t *ld, const char *path, const cJSON *file)
{
    snprintf(ld->where, sizeof ld->where, "files[\"%.120s\"].leaks", path);
    const cJSON *leaks = load_container(ld, file, "leaks", cJSON_Object);
    const cJSON *leak;
    cJSON_ArrayForEach(leak, leaks)
    {
        char *end = NULL;
        long lineno = strtol(leak->string, &end, 10);
        if (!cJSON_IsObject(leak) || *end || end == leak->string || lineno < 0 ||
            lineno > INT32_MAX)
            return load_fail(ld, "\"%.40s\" is not a line number with an object", leak->string);
        double likelihood = load_number(ld, leak, "likelihood", 0, 1, 0);
        double velocity = load_number(ld, leak, "velocity_mb_s", -LOAD_MAX_MB, LOAD_MAX_MB, 0);
        if (ld->failed) return false;
        sonde_line_stats_t *line = sonde_profile_line_only(ld->prof, path, (int)lineno);
        if (!line) return load_oom(ld);
        line->mem.leak_likelihood = likelihood;
        line->mem.leak_velocity_mb_s = velocity;
    }
    return !ld->failed;
}

static bool load_source(load_t *ld, const char *path, const cJSON *file)
{
    snprintf(ld->where, sizeof ld->where, "files[\"%.120s\"]", path);
    const cJSON *source = load_container(ld, file, "source", cJSON_Array);
    if (!source) return !ld->failed;
    sonde_file_stats_t *into = sonde_profile_file(ld->prof, path);
    if (!into || into->source) return true; /* no lines, no functions: nothing to show */
    size_t n = (size_t)cJSON_GetArraySize(source);
    char **lines = calloc(n ? n : 1, sizeof *lines);
    if (!lines) return load_oom(ld);
    into->source = lines;
    const cJSON *text;
    cJSON_ArrayForEach(text, source)
    {
        if (!cJSON_IsString(text)) return load_fail(ld, "\"source\" holds a line that is not text");
        if (!(lines[into->n_source] = strdup(text->valuestring))) return load_oom(ld);
        into->n_source++;
    }
    return true;
}

static bool load_files(load_t *ld, const cJSON *root)
{
    const cJSON *files = load_item(root, "files");
    if (!cJSON_IsObject(files)) return load_fail(ld, "it has no \"files\" object");
    const cJSON *file;
    cJSON_ArrayForEach(file, files)
    {
        snprintf(ld->where, sizeof ld->where, "files[\"%.120s\"]", file->string);
        if (!cJSON_IsObject(file)) return load_fail(ld, "not an object");
        if (!load_lines(ld, file->string, file) || !load_functions(ld, file->string, file) ||
            !load_line_functions(ld, file->string, file))
            return false;
        if (ld->prof->has_memory && !load_leaks(ld, file->string, file)) return false;
        if (!load_source(ld, file->string, file)) return false;
    }
    return true;
}

/* call_stacks: frames, threads, samples (json.c's json_stacks). */
static bool load_stacks(load_t *ld, const cJSON *root)
{
    snprintf(ld->where, sizeof ld->where, "call_stacks");
    const cJSON *stacks = load_container(ld, root, "call_stacks", cJSON_Object);
    if (!stacks) return !ld->failed;
    const cJSON *frames = load_container(ld, stacks, "frames", cJSON_Array);
    const cJSON *threads = load_container(ld, stacks, "threads", cJSON_Array);
    const cJSON *ids = load_container(ld, stacks, "thread_ids", cJSON_Array);
    const cJSON *samples = load_container(ld, stacks, "samples", cJSON_Array);
    if (ld->failed) return false;
    size_t n_frames = frames ? (size_t)cJSON_GetArraySize(frames) : 0;
    size_t n_threads = threads ? (size_t)cJSON_GetArraySize(threads) : 0;
    sonde_stack_frame_t *table = calloc(n_frames ? n_frames : 1, sizeof *table);
    int *thread_ids = calloc(n_threads ? n_threads : 1, sizeof *thread_ids);
    sonde_stack_frame_t *stack = calloc(LOAD_MAX_DEPTH, sizeof *stack);
    bool ok = table && thread_ids && stack ? true : load_oom(ld);
    if (!ok) frames = threads = samples = NULL;
    size_t i = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, frames)
    {
        snprintf(ld->where, sizeof ld->where, "call_stacks.frames[%zu]", i);
        double line = 0;
        if (!cJSON_IsObject(item)) {
            ok = load_fail(ld, "not an object");
            break;
        }
        table[i].func = (char *)load_string(ld, item, "name");
        table[i].file = (char *)load_string(ld, item, "file");
        if (!load_whole_of(ld, load_item(item, "line"), "line", INT32_MIN, INT32_MAX, &line) ||
            ld->failed) {
            ok = false;
            break;
        }
        table[i++].line = (int)line;
    }
    if (!ok) threads = samples = NULL;
    i = 0;
    cJSON_ArrayForEach(item, threads)
    {
        snprintf(ld->where, sizeof ld->where, "call_stacks.threads[%zu]", i);
        if (!cJSON_IsString(item)) {
            ok = load_fail(ld, "not a string");
            break;
        }
        /* [pid, tid] when the writer knew them (threads of several
         * processes may share a name) */
        double pid = 0, tid = 0;
        const cJSON *pair = ids ? cJSON_GetArrayItem(ids, (int)i) : NULL;
        if (ids &&
            (!cJSON_IsArray(pair) || cJSON_GetArraySize(pair) != 2 ||
             !load_whole_of(ld, cJSON_GetArrayItem(pair, 0), "thread_ids", 0, INT32_MAX, &pid) ||
             !load_whole_of(ld, cJSON_GetArrayItem(pair, 1), "thread_ids", 0, INT32_MAX, &tid))) {
            ok = load_fail(ld, "\"thread_ids\" is not a [pid, tid] pair per thread");
            break;
        }
        int id = sonde_profile_thread_of(ld->prof, item->valuestring, (int)pid, (int)tid);
        if (id < 0) {
            ok = load_oom(ld);
            break;
        }
        thread_ids[i++] = id;
    }
    if (!ok) samples = NULL;
    i = 0;
    cJSON_ArrayForEach(item, samples)
    {
        snprintf(ld->where, sizeof ld->where, "call_stacks.samples[%zu]", i++);
        const cJSON *path = cJSON_IsObject(item) ? load_item(item, "frames") : NULL;
        if (!cJSON_IsArray(path) || cJSON_GetArraySize(path) > LOAD_MAX_DEPTH) {
            ok =
                load_fail(ld, "not an object with a list of at most %d \"frames\"", LOAD_MAX_DEPTH);
            break;
        }
        uint32_t depth = 0;
        const cJSON *index;
        cJSON_ArrayForEach(index, path)
        {
            double at = 0;
            if (n_frames == 0 ||
                !load_whole_of(ld, index, "frames", 0, (double)n_frames - 1, &at)) {
                ok = load_fail(ld, "a frame index is not one of call_stacks.frames");
                break;
            }
            stack[depth++] = table[(size_t)at];
        }
        if (!ok) break;
        int thread = -1;
        const cJSON *t = load_item(item, "thread");
        double t_index = 0;
        if (t && !cJSON_IsNull(t)) {
            if (n_threads == 0 ||
                !load_whole_of(ld, t, "thread", 0, (double)n_threads - 1, &t_index)) {
                ok = load_fail(ld, "\"thread\" is not an index into call_stacks.threads");
                break;
            }
            thread = thread_ids[(size_t)t_index];
        }
        uint64_t count = (uint64_t)load_whole(ld, item, "count", 0, LOAD_MAX_COUNT);
        double sec = load_number(ld, item, "sec", 0, LOAD_MAX_SEC, 0);
        /* the split by kind, when the writer had it */
        static const char *const kind_keys[SONDE_N_KINDS] = {"python_sec", "native_sec",
                                                             "system_sec"};
        sonde_ns_t kind_ns[SONDE_N_KINDS] = {0, 0, 0};
        bool kinds = false;
        for (int k = 0; k < SONDE_N_KINDS; k++) {
            kinds = kinds || load_item(item, kind_keys[k]);
            kind_ns[k] = load_ns(load_number(ld, item, kind_keys[k], 0, LOAD_MAX_SEC, 0));
        }
        if (ld->failed) {
            ok = false;
            break;
        }
        int rc = kinds
                     ? sonde_profile_add_stack_kinds(ld->prof, stack, depth, thread, count, kind_ns)
                     : sonde_profile_add_stack(ld->prof, stack, depth, thread, count, load_ns(sec));
        if (rc < 0) {
            ok = rc == -ENOMEM ? load_oom(ld) : load_fail(ld, "not a stack the model takes");
            break;
        }
    }
    free(stack);
    free(thread_ids);
    free(table);
    return ok && !ld->failed;
}

static bool load_processes(load_t *ld, const cJSON *root)
{
    snprintf(ld->where, sizeof ld->where, "processes");
    const cJSON *list = load_container(ld, root, "processes", cJSON_Array);
    const cJSON *entry;
    size_t i = 0;
    cJSON_ArrayForEach(entry, list)
    {
        snprintf(ld->where, sizeof ld->where, "processes[%zu]", i++);
        if (!cJSON_IsObject(entry)) return load_fail(ld, "not an object");
        sonde_process_t p = {0};
        p.pid = (int)load_whole(ld, entry, "pid", 0, LOAD_PID_MAX);
        p.ppid = (int)load_whole(ld, entry, "ppid", 0, LOAD_PID_MAX);
        p.cmdline = (char *)load_string(ld, entry, "cmdline");
        p.cpu_sec = load_number(ld, entry, "cpu_sec", 0, LOAD_MAX_SEC, 0);
        p.wall_sec = load_number(ld, entry, "wall_sec", 0, LOAD_MAX_SEC, 0);
        p.peak_mb = load_number(ld, entry, "peak_mb", 0, LOAD_MAX_MB, 0);
        p.followed = (int)load_whole(ld, entry, "followed", 0, LOAD_PID_MAX);
        p.complete = load_bool(ld, entry, "complete");
        if (ld->failed) return false;
        if (sonde_profile_add_process(ld->prof, &p) < 0) return load_oom(ld);
    }
    return !ld->failed;
}

/* Everything at the top level but files, stacks and processes. */
static bool load_run(load_t *ld, const cJSON *root)
{
    sonde_profile_t *prof = ld->prof;
    ld->where[0] = 0;
    const char *program = load_string(ld, root, "program");
    const char *version = load_string(ld, root, "python_version");
    const cJSON *args = load_container(ld, root, "args", cJSON_Array);
    if (ld->failed) return false;
    int argc = 1 + (args ? cJSON_GetArraySize(args) : 0);
    const char **argv = calloc((size_t)argc, sizeof *argv);
    if (!argv) return load_oom(ld);
    argv[0] = program ? program : "";
    int i = 1;
    const cJSON *arg;
    cJSON_ArrayForEach(arg, args)
    {
        if (!cJSON_IsString(arg)) {
            free(argv);
            return load_fail(ld, "\"args\" holds an argument that is not text");
        }
        argv[i++] = arg->valuestring;
    }
    int rc = program || version || argc > 1
                 ? sonde_profile_set_run(prof, program, argc, argv, version)
                 : 0;
    free(argv);
    if (rc < 0) return load_oom(ld);

    prof->elapsed_sec = load_number(ld, root, "elapsed_time_sec", 0, LOAD_MAX_SEC, 0);
    prof->interval_sec = load_number(ld, root, "interval_sec", 0, LOAD_MAX_SEC, 0);
    prof->virtual_time = load_bool(ld, root, "virtual_time");
    prof->samples = (uint64_t)load_whole(ld, root, "n_samples", 0, LOAD_MAX_COUNT);
    ld->profiled_sec = load_number(ld, root, "profiled_time_sec", 0, LOAD_MAX_SEC, 0);
    double outside = load_number(ld, root, "unattributed_percent", 0, LOAD_MAX_PERCENT, 0);
    /* outside % of (profiled + unattributed) */
    if (outside > 0 && outside < 100) {
        double outside_sec = ld->profiled_sec * outside / (100.0 - outside);
        if (!(outside_sec <= LOAD_MAX_SEC * LOAD_SLACK))
            return load_fail(ld, "\"unattributed_percent\" stands for more than %g s",
                             LOAD_MAX_SEC);
        prof->unattributed_ns = load_ns(outside_sec);
    }

    snprintf(ld->where, sizeof ld->where, "partial");
    const cJSON *partial = load_container(ld, root, "partial", cJSON_Object);
    prof->partial.failed_reads =
        (uint64_t)load_whole(ld, partial, "failed_reads", 0, LOAD_MAX_COUNT);
    prof->partial.dropped_samples =
        (uint64_t)load_whole(ld, partial, "dropped_samples", 0, LOAD_MAX_COUNT);
    prof->partial.threads_left_out =
        (uint64_t)load_whole(ld, partial, "threads_left_out", 0, LOAD_MAX_COUNT);
    prof->partial.frames_left_out =
        (uint64_t)load_whole(ld, partial, "frames_left_out", 0, LOAD_MAX_COUNT);
    prof->partial.processes_lost =
        (uint64_t)load_whole(ld, partial, "processes_lost", 0, LOAD_MAX_COUNT);
    prof->partial.processes_running =
        (uint64_t)load_whole(ld, partial, "processes_running", 0, LOAD_MAX_COUNT);

    snprintf(ld->where, sizeof ld->where, "exit");
    const cJSON *exit_info = load_container(ld, root, "exit", cJSON_Object);
    if (exit_info) {
        int status = (int)load_whole(ld, exit_info, "status", -255, 255);
        const char *exception = load_string(ld, exit_info, "exception");
        if (!ld->failed) sonde_profile_set_exit(prof, status, exception);
    }
    ld->where[0] = 0;

    prof->has_memory = load_bool(ld, root, "memory");
    if (prof->has_memory) {
        prof->max_footprint_mb = load_number(ld, root, "max_footprint_mb", 0, LOAD_MAX_MB, 0);
        const char *fname = load_string(ld, root, "max_footprint_fname");
        prof->max_footprint_lineno =
            (int)load_whole(ld, root, "max_footprint_lineno", 0, INT32_MAX);
        prof->heap_peak_mb = load_number(ld, root, "heap_peak_mb", 0, LOAD_MAX_MB, 0);
        if (fname && !(prof->max_footprint_file = strdup(fname))) return load_oom(ld);
        if (!load_timeline(ld, root, "samples", &prof->footprint)) return false;
    }
    for (unsigned s = 0; s < SONDE_N_FIGSRCS; s++) {
        const sonde_fig_source_t *src = &sonde_fig_sources[s];
        if (!load_bool(ld, root, src->name)) continue;
        const char *detail = src->detail_key ? load_string(ld, root, src->detail_key) : NULL;
        bool own = src->own_key ? load_bool(ld, root, src->own_key) : true;
        if (ld->failed) break;
        if (sonde_fig_run_set(&prof->fig_runs[s], detail, own) < 0) return load_oom(ld);
    }
    return !ld->failed;
}

int sonde_profile_load_json(sonde_profile_t *prof, const char *text, size_t len, char *err,
                            size_t err_len)
{
    load_t ld = {.prof = prof, .err = err, .err_len = err_len};
    if (err && err_len) err[0] = 0;
    if (!prof || (!text && len)) return -EINVAL;
    if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) { /* UTF-8 BOM */
        text += 3;
        len -= 3;
    }
    if (memchr(text, 0, len)) return load_fail(&ld, "it contains NUL bytes"), -EINVAL;
    if (sonde__utf8_bad_at((const unsigned char *)text, len) < len)
        return load_fail(&ld, "it is not UTF-8 text"), -EINVAL;
    char *copy = malloc(len + 1);
    if (!copy) return -ENOMEM;
    memcpy(copy, text, len);
    copy[len] = 0;
    cJSON *root = cJSON_ParseWithLengthOpts(copy, len + 1, NULL, 1);
    if (!root)
        load_fail(&ld, "it is not valid JSON");
    else if (!cJSON_IsObject(root))
        load_fail(&ld, "the JSON document is not an object");
    else if (load_run(&ld, root) && load_processes(&ld, root) && load_files(&ld, root) &&
             load_stacks(&ld, root)) {
        /* what it holds must be a profile's again: its lines' time in bounds */
        sonde_profile_sum(prof);
        ld.where[0] = 0;
        if (!((double)prof->total_ns <= LOAD_MAX_SEC * LOAD_SLACK * SONDE_NS_PER_SEC))
            load_fail(&ld, "its lines add up to more than %g s", LOAD_MAX_SEC);
    }
    cJSON_Delete(root);
    free(copy);
    if (ld.failed) {
        sonde_profile_free(prof);
        return ld.oom ? -ENOMEM : -EINVAL;
    }
    sonde_profile_sum(prof);
    return 0;
}
