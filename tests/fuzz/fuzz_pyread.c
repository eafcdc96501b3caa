/* fuzz_pyread.c — libFuzzer target: the readers of a running interpreter
 * (src/pyread/: threads, frames, code objects, strings, line tables,
 * bytecode and monitoring data) and the stack walk built on them
 * (src/sample/walk.c), fed a hostile memory snapshot, then the report
 * writers fed what they read.
 *
 * Input: one byte choosing the version (the n % count-th supported one,
 * oldest first: 3.8 + n % 8 today), one byte of flags,
 * the address of PyCode_Type (8 bytes), then the process's memory, served
 * at FAKE_BASE (fakeproc.h), where _PyRuntime starts. Flags: bit 0 the
 * code type is known (else learnt from its tp_name, as attach does when
 * the symbol is missing); bit 1 the reader is another process's, with the
 * page snapshot of attach; bit 2 a struct pthread tid offset (<= 3.10);
 * bit 3 --profile-all. The reader is opened as the in-process sampler
 * opens it (3.13+: _Py_DebugOffsets read from the memory), lists the
 * threads and walks each stack three ways (the frame iterator, the walk,
 * the checked walk), twice (the second through the warm code cache), then
 * once more with a second reader (a cold cache, the other way of reading);
 * the stacks go through the accumulators into a profile, written in
 * every format but HTML.
 *
 * Checked (besides ASan/UBSan/LeakSanitizer): open fails with a code or
 * gives a layout; at most the threads asked for; frames within the depth
 * bound, each naming a cached code object whose file and function are
 * NUL-terminated valid UTF-8 of at most SONDE_PY_MAX_STRING bytes, lines
 * >= -1; the kept stack at most SONDE_STACK_MAX_DEPTH frames with a marker
 * exactly when frames were left out, the frames the iterator read
 * otherwise, the same line as the walk that looks for the line only;
 * every walk of the same memory sees
 * the same frames (code, line, call, offset; the same code ids in one
 * reader): the cache and the snapshot are invisible; the JSON and
 * speedscope documents
 * parse (cJSON), the folded lines end in a count.
 *
 * Seeds: SONDE_FUZZ_WRITE_SEEDS=DIR build/fuzz/bin/fuzz_pyread writes
 * well-formed interpreters of every version into DIR (`make fuzz-seeds`).
 */
#include "fakeproc.h"

#include "report/report.h"
#include "sample/sample.h"

#include <cjson/cJSON.h>

#define FUZZ_MAX_THREADS 16 /* asked of sonde_pyproc_threads */
#define FUZZ_WALKED 4       /* threads walked */
#define FUZZ_HEADER 10      /* version, flags, code type */

#define FLAG_CODE_TYPE 1
#define FLAG_SNAPSHOT 2
#define FLAG_TID_OFFSET 4
#define FLAG_PROFILE_ALL 8

static bool valid_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p;
        size_t n = c < 0x80             ? 1
                   : (c & 0xe0) == 0xc0 ? 2
                   : (c & 0xf0) == 0xe0 ? 3
                   : (c & 0xf8) == 0xf0 ? 4
                                        : 0;
        if (n == 0) return false;
        for (size_t k = 1; k < n; k++)
            if ((p[k] & 0xc0) != 0x80) return false;
        p += n;
    }
    return true;
}

static void check_code(const sonde_pyproc_t *proc, uint32_t code_id)
{
    const sonde_pycode_t *code = sonde_pyproc_code(proc, code_id);
    fuzz_assert(code != NULL, "code id %u of %u not cached", code_id,
                sonde_pyproc_code_count(proc));
    fuzz_assert(code->filename && code->name, "a cached code without names");
    fuzz_assert(strlen(code->filename) <= SONDE_PY_MAX_STRING &&
                    strlen(code->name) <= SONDE_PY_MAX_STRING,
                "a name longer than SONDE_PY_MAX_STRING");
    fuzz_assert(valid_utf8(code->filename) && valid_utf8(code->name), "a name that is not UTF-8");
}

/* What one walk of the frame iterator saw. */
typedef struct walk_record {
    int rc, n; /* the iterator's last result; frames seen */
    bool truncated, detached;
    int depth;
    struct {
        sonde_pyframe_t frame;
        const sonde_pycode_t *code; /* in the reader's cache */
        int depth_after;            /* the iterator's depth once it returned it */
        uint64_t next;              /* the frame the iterator would read next */
    } frames[SONDE_PY_MAX_DEPTH];
} walk_record_t;

/* The frame iterator, to its end, into *rec. */
static void walk_iter(sonde_pyproc_t *proc, uint64_t tstate, walk_record_t *rec)
{
    sonde_pyframe_iter_t it;
    sonde_pyframe_t frame;
    int rc;
    rec->n = rec->depth = 0;
    rec->truncated = rec->detached = false;
    rec->rc = sonde_pyframe_iter_begin(proc, tstate, &it);
    if (rec->rc != 0) return;
    while ((rc = sonde_pyframe_iter_next(&it, &frame)) == 1) {
        fuzz_assert(rec->n < SONDE_PY_MAX_DEPTH, "more than SONDE_PY_MAX_DEPTH frames");
        fuzz_assert(frame.lineno >= -1 && frame.instr_offset >= -1, "line %d offset %d",
                    frame.lineno, frame.instr_offset);
        check_code(proc, frame.code_id);
        rec->frames[rec->n].frame = frame;
        rec->frames[rec->n].code = sonde_pyproc_code(proc, frame.code_id);
        rec->frames[rec->n].depth_after = it.depth;
        rec->frames[rec->n].next = it.next_frame;
        rec->n++;
    }
    fuzz_assert(rc <= 0 && it.next_frame == 0, "an iterator not finished");
    fuzz_assert(it.depth <= SONDE_PY_MAX_DEPTH, "depth %d", it.depth);
    rec->rc = rc;
    rec->truncated = it.truncated;
    rec->detached = it.detached;
    rec->depth = it.depth;
}

/* Two walks of the same memory saw the same stack: the code cache (warm,
 * or another reader's cold one) and the page snapshot change nothing.
 * same_ids: both walks used one reader, so code ids match too. */
static void same_walks(const walk_record_t *a, const walk_record_t *b, bool same_ids)
{
    fuzz_assert(a->rc == b->rc && a->n == b->n && a->truncated == b->truncated &&
                    a->detached == b->detached && a->depth == b->depth,
                "walks of the same memory differ: rc %d/%d, %d/%d frames, depth %d/%d", a->rc,
                b->rc, a->n, b->n, a->depth, b->depth);
    for (int i = 0; i < a->n; i++) {
        const sonde_pyframe_t *fa = &a->frames[i].frame, *fb = &b->frames[i].frame;
        const sonde_pycode_t *ca = a->frames[i].code, *cb = b->frames[i].code;
        fuzz_assert(fa->lineno == fb->lineno && fa->in_call == fb->in_call &&
                        fa->instr_offset == fb->instr_offset,
                    "frame %d: line %d/%d, in_call %d/%d, offset %d/%d", i, fa->lineno, fb->lineno,
                    fa->in_call, fb->in_call, fa->instr_offset, fb->instr_offset);
        fuzz_assert(!same_ids || fa->code_id == fb->code_id, "frame %d: code id %u/%u", i,
                    fa->code_id, fb->code_id);
        fuzz_assert(ca->addr == cb->addr && ca->firstlineno == cb->firstlineno &&
                        strcmp(ca->filename, cb->filename) == 0 && strcmp(ca->name, cb->name) == 0,
                    "frame %d: another code object (%s %s / %s %s)", i, ca->filename, ca->name,
                    cb->filename, cb->name);
    }
}

static void check_walk(const sonde_pyproc_t *proc, const sonde_walk_t *w)
{
    fuzz_assert(w->depth <= SONDE_STACK_MAX_DEPTH, "a kept stack of %u frames", w->depth);
    uint32_t markers = 0;
    for (uint32_t i = 0; i < w->depth; i++) {
        if (sonde_aframe_is_marker(w->frames[i])) {
            markers++;
            fuzz_assert(sonde_aframe_marker_count(w->frames[i]) == w->left_out,
                        "the marker stands for %u frames, left_out %u",
                        sonde_aframe_marker_count(w->frames[i]), w->left_out);
        } else {
            check_code(proc, sonde_aframe_code(w->frames[i]));
        }
    }
    fuzz_assert(markers == (w->left_out > 0), "%u markers for %u frames left out", markers,
                w->left_out);
    if (w->line_key) check_code(proc, sonde_aframe_code(w->line_key));
}

/* The kept stack of a walk is the iterator's frames (static memory: every
 * try reads the same) up to where the walk stops reading
 * (SONDE_WALK_MAX_READ frames read with more to come), cut as sample.h
 * promises: at most SONDE_STACK_MAX_DEPTH frames; a stack read to its root
 * keeps SONDE_STACK_KEEP_LEAF innermost frames, a marker and
 * SONDE_STACK_KEEP_ROOT outermost ones; one cut before its root (a cycle,
 * a read bound) keeps its innermost frames and the marker last. The line
 * is the innermost profiled one, as the line-only walk finds it. */
static void same_as_iter(const walk_record_t *rec, const sonde_walk_t *w, sonde_aframe_t line_key)
{
    uint32_t read = (uint32_t)rec->n, marker_at = UINT32_MAX, marker_count = 0, want_depth;
    bool cut = false;
    for (uint32_t k = 0; k < read; k++) {
        if (rec->frames[k].depth_after >= SONDE_WALK_MAX_READ && rec->frames[k].next != 0) {
            read = k + 1;
            cut = true;
        }
    }
    if (!cut) {
        fuzz_assert(rec->rc == 0, "the walk succeeded, the iterator failed (%d)", rec->rc);
        cut = rec->truncated;
    }
    fuzz_assert(w->line_key == line_key, "the walks found different lines");
    if (w->depth == 0) return; /* an older try's line only */
    if (read <= SONDE_STACK_MAX_DEPTH) {
        want_depth = read;
        if (cut && read == SONDE_STACK_MAX_DEPTH) {
            marker_at = SONDE_STACK_MAX_DEPTH - 1;
            marker_count = 1;
        }
    } else if (cut) {
        want_depth = SONDE_STACK_KEEP_LEAF + 1;
        marker_at = SONDE_STACK_KEEP_LEAF;
        marker_count = read - SONDE_STACK_KEEP_LEAF;
    } else {
        want_depth = SONDE_STACK_MAX_DEPTH;
        marker_at = SONDE_STACK_KEEP_LEAF;
        marker_count = read - SONDE_STACK_KEEP_LEAF - SONDE_STACK_KEEP_ROOT;
    }
    fuzz_assert(w->depth == want_depth, "%u frames kept of %u read (cut %d), %u expected", w->depth,
                read, cut, want_depth);
    fuzz_assert(w->left_out == marker_count, "left_out %u, %u expected", w->left_out, marker_count);
    for (uint32_t i = 0; i < w->depth; i++) {
        if (i == marker_at) {
            fuzz_assert(sonde_aframe_is_marker(w->frames[i]) &&
                            sonde_aframe_marker_count(w->frames[i]) == marker_count,
                        "frame %u: not the marker of %u frames", i, marker_count);
            continue;
        }
        uint32_t from = i < marker_at ? i : read - (want_depth - i); /* the root's part */
        const sonde_pyframe_t *f = &rec->frames[from].frame;
        fuzz_assert(w->frames[i] == sonde_aframe(f->code_id, f->lineno),
                    "frame %u of the kept stack is not frame %u of the stack", i, from);
    }
}

static void check_json(const sonde_buf_t *doc, const char *what)
{
    cJSON *root = cJSON_ParseWithLength(doc->data ? doc->data : "", doc->len);
    fuzz_assert(root != NULL, "the %s writer wrote invalid JSON near: %.80s", what,
                cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() : "?");
    cJSON_Delete(root);
}

static void check_folded(const sonde_buf_t *doc)
{
    const char *p = doc->data ? doc->data : "", *end = p + doc->len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        fuzz_assert(nl != NULL, "a folded line without its newline");
        const char *space = nl;
        while (space > p && space[-1] >= '0' && space[-1] <= '9')
            space--;
        fuzz_assert(space < nl && space > p && space[-1] == ' ',
                    "a folded line without a count: %.*s", (int)(nl - p), p);
        p = nl + 1;
    }
}

/* The accumulated stacks in every format but HTML (which reads the viewer). */
static void write_reports(sonde_pyproc_t *proc, const sonde_accum_t *acc)
{
    sonde_profile_t prof;
    sonde_codenames_t names = sonde_codenames_of_proc(proc, "/cwd");
    sonde_accum_convert_t how = {true, 4242, 0};
    sonde_report_ctx_t ctx;
    sonde_profile_init(&prof);
    int rc = sonde_accum_to_profile(acc, &names, &how, &prof);
    fuzz_assert(rc == 0, "accum_to_profile: %d", rc);
    sonde_report_ctx_init(&ctx, -1);
    for (size_t i = 0; i < sonde_n_formats; i++) {
        const sonde_format_t *format = &sonde_formats[i];
        if (strcmp(format->name, "html") == 0) continue;
        sonde_buf_t out = SONDE_BUF_INIT;
        rc = format->write(&prof, &ctx, &out);
        fuzz_assert(rc == 0, "the %s writer failed: %d", format->name, rc);
        if (strcmp(format->name, "json") == 0 || strcmp(format->name, "speedscope") == 0)
            check_json(&out, format->name);
        if (strcmp(format->name, "folded") == 0) check_folded(&out);
        sonde_buf_free(&out);
    }
    sonde_profile_free(&prof);
}

static walk_record_t records[FUZZ_WALKED], again;

/* A second reader of the same memory, with a cold cache and the other
 * way of reading (page snapshot or not), walks the same stacks. */
static void second_reader(const sonde_pyproc_t *first, uint64_t code_type,
                          const sonde_pythread_t *threads, int n, uint8_t flags)
{
    sonde_pyproc_t proc;
    unsigned long hex = 3ul << 24 | (unsigned long)first->version_minor << 16;
    int rc = sonde_pyproc_open_self(&proc, hex, first->runtime_addr, code_type);
    fuzz_assert(rc == 0, "a second open of the same memory failed: %d", rc);
    proc.pthread_tid_offset = first->pthread_tid_offset;
    bool snapshot = !(flags & FLAG_SNAPSHOT);
    if (snapshot) {
        proc.mem.self = false;
        proc.mem.pid = FAKE_PID;
    }
    for (int i = 0; i < n && i < FUZZ_WALKED; i++) {
        if (snapshot) sonde_mem_snapshot_begin(&proc.mem);
        walk_iter(&proc, threads[i].tstate, &again);
        if (snapshot) sonde_mem_snapshot_end(&proc.mem);
        same_walks(&records[i], &again, false);
    }
    sonde_pyproc_close(&proc);
}

static void fuzz_threads(sonde_pyproc_t *proc, uint64_t code_type, uint8_t flags)
{
    static sonde_aframe_t frames[SONDE_PY_MAX_DEPTH], spare[SONDE_PY_MAX_DEPTH];
    sonde_pythread_t threads[FUZZ_MAX_THREADS];
    int n_first = -1;
    sonde_codefilter_t filter;
    sonde_codecache_t codes;
    sonde_accum_t acc;

    memset(&filter, 0, sizeof filter);
    memset(&codes, 0, sizeof codes);
    filter.profile_all = flags & FLAG_PROFILE_ALL;
    filter.site_dirs = true;
    if (sonde_codefilter_add_lib_dir(&filter, "/usr/lib/python3") != 0) abort();
    sonde_accum_init(&acc);

    for (int pass = 0; pass < 2; pass++) { /* the second through the warm cache */
        int n = sonde_pyproc_threads(proc, threads, FUZZ_MAX_THREADS);
        fuzz_assert(n <= FUZZ_MAX_THREADS, "%d threads of %d asked", n, FUZZ_MAX_THREADS);
        fuzz_assert(pass == 0 || n == n_first, "%d threads, then %d", n_first, n);
        n_first = n;
        for (int i = 0; i < n && i < FUZZ_WALKED; i++) {
            uint64_t tstate = threads[i].tstate;
            fuzz_assert(threads[i].native_tid >= 0 && threads[i].native_tid < (1 << 22),
                        "native tid %d", (int)threads[i].native_tid);
            if (flags & FLAG_SNAPSHOT) sonde_mem_snapshot_begin(&proc->mem);
            walk_iter(proc, tstate, pass == 0 ? &records[i] : &again);
            if (pass == 1) same_walks(&records[i], &again, true);
            sonde_walk_t w = {.frames = NULL};
            sonde_aframe_t line_key = 0;
            bool line_found = false;
            if (sonde_walk_thread(&w, proc, tstate, &codes, &filter) == 0) {
                check_walk(proc, &w);
                line_key = w.line_key;
                line_found = true;
            }
            w = (sonde_walk_t){.frames = frames, .spare = spare};
            uint32_t retries = 0;
            if (sonde_walk_thread_checked(&w, proc, tstate, &codes, &filter, &retries) == 0) {
                check_walk(proc, &w);
                if (line_found) same_as_iter(pass == 0 ? &records[i] : &again, &w, line_key);
                uint32_t slot = sonde_accum_slot(&acc, threads[i].native_tid);
                sonde_accum_charge(&acc, w.line_key, 1000, 2000, 0);
                if (w.depth) sonde_accum_add_stack(&acc, slot, w.frames, w.depth, 1, 1000);
            }
            if (flags & FLAG_SNAPSHOT) sonde_mem_snapshot_end(&proc->mem);
        }
    }
    if (n_first > 0) second_reader(proc, code_type, threads, n_first, flags);
    write_reports(proc, &acc);
    sonde_accum_free(&acc);
    sonde_codecache_free(&codes);
    sonde_codefilter_free(&filter);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_cursor_t c = fuzz_cursor(data, size);
    int minor = fake_minors[fuzz_uint(&c, 1) % FAKE_MINORS];
    uint8_t flags = (uint8_t)fuzz_uint(&c, 1);
    uint64_t code_type = fuzz_uint(&c, 8);
    size_t len = 0;
    const uint8_t *image = fuzz_bytes(&c, SIZE_MAX, &len);
    fake_mem = image;
    fake_mem_len = len;

    sonde_pyproc_t proc;
    unsigned long hex = 3ul << 24 | (unsigned long)minor << 16;
    if (!(flags & FLAG_CODE_TYPE)) code_type = 0; /* learnt from its tp_name */
    int rc = sonde_pyproc_open_self(&proc, hex, FAKE_BASE, code_type);
    if (rc != 0) {
        fuzz_assert(rc == -ENOTSUP || rc == -EFAULT || rc == -ENOMEM, "open: %d", rc);
        fuzz_assert(proc.codes == NULL && proc.own_layout == NULL, "a failed open kept memory");
        return 0;
    }
    fuzz_assert(proc.off != NULL && proc.off->minor == minor, "no layout of 3.%d", minor);
    if (flags & FLAG_TID_OFFSET) proc.pthread_tid_offset = 8;
    if (flags & FLAG_SNAPSHOT) { /* read as attach reads another process */
        proc.mem.self = false;
        proc.mem.pid = FAKE_PID;
    }
    fuzz_threads(&proc, code_type, flags);
    sonde_pyproc_close(&proc);
    fake_mem = NULL;
    fake_mem_len = 0;
    return 0;
}

/* ---- seeds ------------------------------------------------------------------------ */

static void write_seeds(const char *dir)
{
    static const uint8_t variant_flags[FAKE_WORLDS] = {FLAG_CODE_TYPE | FLAG_SNAPSHOT,
                                                       FLAG_TID_OFFSET | FLAG_PROFILE_ALL,
                                                       FLAG_CODE_TYPE, FLAG_CODE_TYPE};
    static const char *const variant_names[FAKE_WORLDS] = {"plain", "strings", "deep", "starting"};
    for (size_t v = 0; v < SONDE_ARRAY_LEN(fake_minors); v++) {
        const sonde_pyoffsets_t *off = sonde_pyoffsets_find(3, fake_minors[v]);
        for (int variant = 0; variant < FAKE_WORLDS; variant++) {
            /* ~30 KB each: one per frame model is enough */
            if (variant == FAKE_WORLD_DEEP && fake_minors[v] != 10 && fake_minors[v] != 12 &&
                fake_minors[v] != 14)
                continue;
            fake_image_t img = {NULL, 0, 0};
            size_t code_type = fake_world(&img, off, variant);
            uint8_t *seed = malloc(FUZZ_HEADER + img.len);
            if (seed == NULL) abort();
            seed[0] = (uint8_t)v;
            seed[1] = variant_flags[variant];
            uint64_t type_addr = fake_addr(code_type);
            memcpy(seed + 2, &type_addr, 8);
            memcpy(seed + FUZZ_HEADER, img.bytes, img.len);
            char name[64];
            snprintf(name, sizeof name, "3.%d-%s", fake_minors[v], variant_names[variant]);
            fake_write_seed(dir, name, seed, FUZZ_HEADER + img.len);
            free(seed);
            free(img.bytes);
        }
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *dir = getenv("SONDE_FUZZ_WRITE_SEEDS");
    if (dir && *dir) {
        write_seeds(dir);
        exit(0);
    }
    return 0;
}
