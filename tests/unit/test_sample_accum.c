/* test_sample_accum.c — the sampling core's accumulators and their
 * conversion into the model (src/sample/accum.c, convert.c), the stack
 * depth limit with its marker frame (walk.c), and the thread registry
 * (threads.c).
 *
 * Stacks are built from code ids named by a stand-in code table; each
 * check states what the model or the accumulator must hold afterwards.
 */
#include "sample/sample.h"

#include "check.h"

#define N_CODES 4

static sonde_pycode_t codes[N_CODES] = {
    {0, "app.py", "main", 1},
    {0, "app.py", "recurse", 10},
    {0, "/usr/lib/python3.11/json/decoder.py", "decode", 330},
    {0, "/abs/tool.py", "run", 5},
};

static const sonde_pycode_t *test_code(const void *source, uint32_t code_id)
{
    (void)source;
    return code_id < N_CODES ? &codes[code_id] : NULL;
}

/* ---- the depth limit ------------------------------------------------------ */

static void test_limit(void)
{
    static sonde_aframe_t frames[2000];
    uint32_t depth = SONDE_STACK_MAX_DEPTH;
    for (uint32_t i = 0; i < depth; i++)
        frames[i] = sonde_aframe(1, (int32_t)i + 1);
    check(sonde_stack_limit(frames, &depth, false) == 0 && depth == SONDE_STACK_MAX_DEPTH &&
              sonde_aframe_line(frames[depth - 1]) == (int32_t)depth,
          "limit_at_max_unchanged", "depth %u", depth);

    /* 1000 frames, innermost first: line i+1 at index i, the root last. */
    const uint32_t n = 1000;
    for (uint32_t i = 0; i < n; i++)
        frames[i] = sonde_aframe(1, (int32_t)i + 1);
    depth = n;
    uint32_t left_out = sonde_stack_limit(frames, &depth, false);
    uint32_t kept = SONDE_STACK_KEEP_LEAF + SONDE_STACK_KEEP_ROOT;
    check(depth == SONDE_STACK_MAX_DEPTH && left_out == n - kept, "limit_cuts_to_max",
          "depth %u left out %u", depth, left_out);
    bool leaf_ok = true, root_ok = true;
    for (uint32_t i = 0; i < SONDE_STACK_KEEP_LEAF; i++)
        leaf_ok = leaf_ok && sonde_aframe_line(frames[i]) == (int32_t)i + 1;
    for (uint32_t i = 0; i < SONDE_STACK_KEEP_ROOT; i++)
        root_ok = root_ok && sonde_aframe_line(frames[SONDE_STACK_KEEP_LEAF + 1 + i]) ==
                                 (int32_t)(n - SONDE_STACK_KEEP_ROOT + i + 1);
    check(leaf_ok, "limit_keeps_leaf_frames", "innermost frames changed");
    check(root_ok && sonde_aframe_line(frames[depth - 1]) == (int32_t)n, "limit_keeps_root_frames",
          "outermost kept is line %d", sonde_aframe_line(frames[depth - 1]));
    sonde_aframe_t marker = frames[SONDE_STACK_KEEP_LEAF];
    check(sonde_aframe_is_marker(marker) && sonde_aframe_marker_count(marker) == left_out,
          "limit_marker_between", "marker %d count %u", sonde_aframe_is_marker(marker),
          sonde_aframe_marker_count(marker));

    /* One frame over the limit: one frame left out. */
    depth = SONDE_STACK_MAX_DEPTH + 1;
    for (uint32_t i = 0; i < depth; i++)
        frames[i] = sonde_aframe(1, (int32_t)i + 1);
    check(sonde_stack_limit(frames, &depth, false) == 2 && depth == SONDE_STACK_MAX_DEPTH,
          "limit_one_over", "depth %u", depth);

    /* A walk cut before its root: the marker ends the stack. */
    depth = 1024;
    for (uint32_t i = 0; i < depth; i++)
        frames[i] = sonde_aframe(1, (int32_t)i + 1);
    left_out = sonde_stack_limit(frames, &depth, true);
    check(depth == SONDE_STACK_MAX_DEPTH && sonde_aframe_is_marker(frames[depth - 1]) &&
              left_out == 1024 - (SONDE_STACK_MAX_DEPTH - 1) &&
              sonde_aframe_line(frames[depth - 2]) == SONDE_STACK_MAX_DEPTH - 1,
          "limit_cut_walk_marker_at_root", "depth %u left out %u", depth, left_out);

    /* Read one frame at a time into a buffer of the limit's size: the same
     * stack as the limit leaves of all of them, at any depth. */
    static const uint32_t reads[] = {1, 127, 128, 255, 256, 257, 384, 385, 1000, 1999};
    bool same = true;
    uint32_t failed_at = 0;
    for (size_t r = 0; r < SONDE_ARRAY_LEN(reads) && same; r++) {
        sonde_aframe_t ring[SONDE_STACK_MAX_DEPTH];
        uint32_t n_read = reads[r], kept_depth = 0, want_depth = n_read;
        for (uint32_t i = 0; i < n_read; i++) {
            frames[i] = sonde_aframe(1, (int32_t)i + 1);
            sonde_stack_keep(ring, i, frames[i]);
        }
        uint32_t want = sonde_stack_limit(frames, &want_depth, false);
        same = sonde_stack_keep_end(ring, n_read, &kept_depth, false) == want &&
               kept_depth == want_depth && memcmp(ring, frames, want_depth * sizeof *ring) == 0;
        failed_at = n_read;
    }
    check(same, "keep_streamed_equals_limit", "differs after %u frames", failed_at);
    {
        sonde_aframe_t ring[SONDE_STACK_MAX_DEPTH];
        uint32_t kept_depth = 0;
        for (uint32_t i = 0; i < 1000; i++)
            sonde_stack_keep(ring, i, sonde_aframe(1, (int32_t)i + 1));
        left_out = sonde_stack_keep_end(ring, 1000, &kept_depth, true);
        check(kept_depth == SONDE_STACK_KEEP_LEAF + 1 && left_out == 1000 - SONDE_STACK_KEEP_LEAF &&
                  sonde_aframe_is_marker(ring[kept_depth - 1]) &&
                  sonde_aframe_line(ring[kept_depth - 2]) == SONDE_STACK_KEEP_LEAF,
              "keep_cut_walk_marker_at_root", "depth %u left out %u", kept_depth, left_out);
    }

    char name[48];
    check(strcmp(sonde_stack_marker_name(744, name, sizeof name), "<744 frames left out>") == 0 &&
              strcmp(sonde_stack_marker_name(1, name, sizeof name), "<1 frame left out>") == 0,
          "marker_name", "%s", name);
}

/* ---- which unchecked walk a sample keeps (walk.c) ------------------------- */

static void test_walk_prefer(void)
{
    /* The walk of the first try read 603 frames of a stack the thread
     * then left (its spin() frame popped, its callers' frames read after
     * that); the next read the 5 frames the thread stood in by then. The
     * later one is the sample: keeping the deeper kept a stale root. */
    check(sonde_walk_prefer(2, 603, 2, 5), "later_complete_walk_kept",
          "a deeper earlier walk kept");
    check(sonde_walk_prefer(0, 0, 1, 3) && sonde_walk_prefer(1, 40, 2, 3) &&
              !sonde_walk_prefer(2, 3, 1, 40),
          "complete_walk_over_doubtful", "rank ignored");
    /* Doubtful walks: one cut short at a generator that yields reads
     * fewer frames than one read through it. */
    check(sonde_walk_prefer(1, 3, 1, 9) && !sonde_walk_prefer(1, 9, 1, 3),
          "deepest_doubtful_walk_kept", "a shorter doubtful walk kept");
}

/* ---- accumulators and conversion ---------------------------------------------- */

static const sonde_stack_frame_t *frame_of(const sonde_profile_t *prof, const sonde_stack_t *s,
                                           uint32_t i)
{
    return &prof->frames[s->frames[i]];
}

static void test_accum(void)
{
    sonde_accum_t acc;
    sonde_accum_init(&acc);
    sonde_aframe_t main_line = sonde_aframe(0, 3), deep_line = sonde_aframe(1, 12);

    check(sonde_accum_charge(&acc, main_line, 100, 20, 0) != NULL &&
              sonde_accum_charge(&acc, main_line, 50, 0, 7) != NULL &&
              sonde_accum_charge(&acc, deep_line, 10, 0, 0) != NULL,
          "accum_charge_lines", "NULL");
    check(sonde_accum_charge(&acc, 0, 30, 5, 5) == NULL && acc.unattributed_ns == 40,
          "accum_unattributed", "%llu ns", (unsigned long long)acc.unattributed_ns);
    sonde_line_acc_t *line = sonde_accum_line(&acc, main_line);
    check(line && line->python_ns == 150 && line->native_ns == 20 && line->system_ns == 7 &&
              line->samples == 2 && acc.lines_used == 2,
          "accum_line_sums", "python %llu samples %llu",
          line ? (unsigned long long)line->python_ns : 0,
          line ? (unsigned long long)line->samples : 0);

    uint32_t main_slot = sonde_accum_slot(&acc, 4242);
    uint32_t worker_slot = sonde_accum_slot(&acc, 4250);
    check(main_slot == 0 && worker_slot == 1 && sonde_accum_slot(&acc, 4242) == 0 &&
              acc.n_slots == 2,
          "accum_slots", "%u %u", main_slot, worker_slot);

    /* A short stack twice on one thread, once on another. */
    sonde_aframe_t shallow[] = {deep_line, main_line}; /* innermost first */
    check(sonde_accum_add_stack(&acc, main_slot, shallow, 2, 1, 1000) == 0 &&
              sonde_accum_add_stack(&acc, main_slot, shallow, 2, 1, 500) == 0 &&
              sonde_accum_add_stack(&acc, worker_slot, shallow, 2, 1, 10) == 0,
          "accum_add_stacks", "rc");
    check(acc.stacks_used == 2 && acc.partial.frames_left_out == 0, "accum_stacks_merge",
          "%zu stacks, %llu left out", acc.stacks_used,
          (unsigned long long)acc.partial.frames_left_out);

    /* A recursion of 600 frames, cut by the limit: the marker's count is
     * added to frames_left_out for each sample. */
    static sonde_aframe_t deep[1024];
    uint32_t depth = 0;
    for (; depth < 599; depth++)
        deep[depth] = deep_line;
    deep[depth++] = main_line;
    uint32_t left_out = sonde_stack_limit(deep, &depth, false);
    check(sonde_accum_add_stack(&acc, main_slot, deep, depth, 3, 300) == 0 &&
              acc.partial.frames_left_out == 3ull * left_out && left_out == 600 - 255,
          "accum_frames_left_out", "%llu left out (limit said %u)",
          (unsigned long long)acc.partial.frames_left_out, left_out);
    acc.partial.failed_reads = 2;

    /* Into the model, per thread. */
    sonde_profile_t prof;
    sonde_profile_init(&prof);
    sonde_codenames_t names = {test_code, NULL, "/srv"};
    sonde_accum_convert_t how = {.per_thread = true, .main_tid = 4242};
    int rc = sonde_accum_to_profile(&acc, &names, &how, &prof);
    check(rc == 0, "convert_rc", "%d", rc);
    sonde_file_stats_t *file = sonde_profile_file(&prof, "/srv/app.py");
    check(file && file->n_lines == 2 && prof.n_files == 1, "convert_lines_under_cwd", "%zu files",
          prof.n_files);
    bool line_ok = false, func_ok = false;
    for (size_t i = 0; file && i < file->n_lines; i++)
        if (file->lines[i].lineno == 3)
            line_ok = file->lines[i].python_ns == 150 && file->lines[i].native_ns == 20 &&
                      file->lines[i].system_ns == 7 && file->lines[i].samples == 2;
    for (size_t i = 0; file && i < file->n_funcs; i++)
        if (strcmp(file->funcs[i].name, "recurse") == 0)
            func_ok = file->funcs[i].firstlineno == 10 && file->funcs[i].python_ns == 10;
    check(line_ok, "convert_line_times", "line 3 wrong");
    check(func_ok, "convert_function", "recurse wrong");
    check(prof.unattributed_ns == 40 && prof.partial.failed_reads == 2 &&
              prof.partial.frames_left_out == 3ull * left_out,
          "convert_unattributed_and_partial", "unattributed %llu failed %llu left out %llu",
          (unsigned long long)prof.unattributed_ns, (unsigned long long)prof.partial.failed_reads,
          (unsigned long long)prof.partial.frames_left_out);
    check(prof.n_threads == 2 && strcmp(prof.thread_names[0], "MainThread") == 0 &&
              strcmp(prof.thread_names[1], "thread 4250") == 0,
          "convert_thread_names", "%zu threads", prof.n_threads);
    check(prof.n_stacks == 3, "convert_stacks", "%zu stacks", prof.n_stacks);

    /* Stacks are root first; the deep one keeps its root, its leaf and the
     * marker frame between them. */
    const sonde_stack_t *shallow_main = NULL, *cut = NULL;
    for (size_t i = 0; i < prof.n_stacks; i++) {
        const sonde_stack_t *s = &prof.stacks[i];
        if (s->depth == 2 && s->thread == 0) shallow_main = s;
        if (s->depth == SONDE_STACK_MAX_DEPTH) cut = s;
    }
    check(shallow_main && shallow_main->samples == 2 && shallow_main->ns == 1500 &&
              strcmp(frame_of(&prof, shallow_main, 0)->func, "main") == 0 &&
              strcmp(frame_of(&prof, shallow_main, 1)->func, "recurse") == 0 &&
              strcmp(frame_of(&prof, shallow_main, 0)->file, "/srv/app.py") == 0,
          "convert_stack_root_first", "wrong stack");
    char expect[48];
    sonde_stack_marker_name(left_out, expect, sizeof expect);
    const sonde_stack_frame_t *mark = cut ? frame_of(&prof, cut, SONDE_STACK_KEEP_ROOT) : NULL;
    check(cut && cut->samples == 3 && strcmp(frame_of(&prof, cut, 0)->func, "main") == 0 && mark &&
              strcmp(mark->func, expect) == 0 && mark->file[0] == 0 &&
              strcmp(frame_of(&prof, cut, SONDE_STACK_MAX_DEPTH - 1)->func, "recurse") == 0,
          "convert_marker_frame", "marker %s", mark ? mark->func : "-");
    sonde_profile_free(&prof);

    /* Merged stacks, and thread names of several processes. */
    sonde_profile_init(&prof);
    how.per_thread = false;
    rc = sonde_accum_to_profile(&acc, &names, &how, &prof);
    bool merged = rc == 0 && prof.n_stacks == 2 && prof.n_threads == 0;
    for (size_t i = 0; i < prof.n_stacks; i++)
        merged = merged && prof.stacks[i].thread == -1 &&
                 (prof.stacks[i].depth != 2 || prof.stacks[i].samples == 3);
    check(merged, "convert_merged_threads", "%zu stacks", prof.n_stacks);
    sonde_profile_free(&prof);
    sonde_profile_init(&prof);
    how.per_thread = true;
    how.process_pid = 4242;
    rc = sonde_accum_to_profile(&acc, &names, &how, &prof);
    check(rc == 0 && prof.n_threads == 2 &&
              strcmp(prof.thread_names[0], "process 4242 MainThread") == 0,
          "convert_process_prefix", "%s", prof.n_threads ? prof.thread_names[0] : "-");
    sonde_profile_free(&prof);
    sonde_accum_free(&acc);
}

/* Many distinct lines and stacks: the tables grow and keep every figure. */
static void test_growth(void)
{
    sonde_accum_t acc;
    sonde_accum_init(&acc);
    bool ok = true;
    for (uint32_t i = 1; i <= 5000 && ok; i++) {
        sonde_aframe_t f[3] = {sonde_aframe(1, (int32_t)i), sonde_aframe(1, 7), sonde_aframe(0, 1)};
        ok = sonde_accum_charge(&acc, f[0], i, 0, 0) != NULL &&
             sonde_accum_add_stack(&acc, i % 3, f, 3, 1, i) == 0;
    }
    size_t wrong = 0;
    for (uint32_t i = 1; i <= 5000; i++) {
        sonde_line_acc_t *line = sonde_accum_line(&acc, sonde_aframe(1, (int32_t)i));
        if (!line || line->python_ns != i || line->samples != 1) wrong++;
    }
    check(ok && wrong == 0 && acc.lines_used == 5000 && acc.stacks_used == 5000 &&
              acc.partial.dropped_samples == 0,
          "accum_growth", "%zu wrong, %zu lines, %zu stacks", wrong, acc.lines_used,
          acc.stacks_used);
    sonde_accum_free(&acc);
}

/* ---- threads ------------------------------------------------------------------ */

typedef struct test_thread {
    sonde_thread_key_t key;
    int value;
} test_thread_t;

static int released;

static void test_release(void *entry)
{
    released += ((test_thread_t *)entry)->value;
}

static void test_threads(void)
{
    sonde_threadreg_t reg;
    sonde_threadreg_init(&reg, sizeof(test_thread_t), test_release);
    bool is_new = false, ok = true;
    for (int i = 0; i < 40 && ok; i++) {
        test_thread_t *t = sonde_threadreg_get(&reg, 0x1000 + (uint64_t)i, 100 + i, &is_new);
        ok = t && is_new && t->value == 0 && t->key.seen;
        if (t) t->value = 1;
    }
    check(ok && reg.n == 40, "threads_new_entries", "%zu", reg.n);
    check(sonde_threadreg_sweep(&reg) == 0 && released == 0, "threads_sweep_keeps_seen",
          "released %d", released);
    /* Next tick: only the even ones are seen, one with a new tid. */
    for (int i = 0; i < 40; i += 2) {
        test_thread_t *t = sonde_threadreg_get(&reg, 0x1000 + (uint64_t)i, 100 + i, &is_new);
        if (!t || is_new || t->value != 1) ok = false;
        if (t) t->value = 2;
    }
    test_thread_t *reused = sonde_threadreg_get(&reg, 0x1000, 999, &is_new);
    check(ok && reused && is_new, "threads_found_again_and_tid_identity", "wrong entries");
    size_t dropped = sonde_threadreg_sweep(&reg);
    bool kept_ok = reg.n == 21;
    for (size_t i = 0; i < reg.n; i++) {
        test_thread_t *t = sonde_threadreg_at(&reg, i);
        kept_ok = kept_ok && !t->key.seen && (t->value == 2 || t->key.tid == 999);
    }
    check(dropped == 20 && released == 20 && kept_ok, "threads_sweep_drops_unseen",
          "dropped %zu released %d kept %zu", dropped, released, reg.n);
    /* The index follows the entries the sweep moved; touch keeps an
     * entry without creating one. */
    test_thread_t *again = sonde_threadreg_get(&reg, 0x1000 + 38, 138, &is_new);
    check(again && !is_new && again->value == 2 && sonde_threadreg_touch(&reg, 0x1000, 999) &&
              !sonde_threadreg_touch(&reg, 0x1000 + 1, 101) && reg.n == 21,
          "threads_index_after_sweep_and_touch", "n %zu", reg.n);
    check(sonde_threadreg_sweep(&reg) == 19 && reg.n == 2, "threads_touched_are_kept", "n %zu",
          reg.n);
    released = 0;
    sonde_threadreg_free(&reg);
    check(released == 2 && reg.n == 0 && !reg.index, "threads_free_releases", "released %d",
          released);

    /* A tick's order: the main thread, then the others in turn from where
     * the last tick's budget stopped. */
    sonde_threadlist_t list;
    sonde_partial_t partial = {0};
    sonde_pythread_t listed[5];
    sonde_threadlist_init(&list);
    for (int i = 0; i < 5; i++)
        listed[i].tstate = (uint64_t)i; /* 0: the main thread */
    list.threads = listed;
    list.n = 5;
    uint64_t order[5];
    for (size_t k = 0; k < 5; k++)
        order[k] = sonde_threadlist_nth(&list, k)->tstate;
    sonde_threadlist_tick_end(&list, 3, &partial); /* sampled 0, 1, 2 */
    uint64_t next[3];
    for (size_t k = 0; k < 3; k++)
        next[k] = sonde_threadlist_nth(&list, k)->tstate;
    check(order[0] == 0 && order[4] == 4 && partial.threads_left_out == 2 && next[0] == 0 &&
              next[1] == 3 && next[2] == 4,
          "threadlist_rotation", "left out %llu, next %llu %llu %llu",
          (unsigned long long)partial.threads_left_out, (unsigned long long)next[0],
          (unsigned long long)next[1], (unsigned long long)next[2]);
    sonde_threadlist_tick_end(&list, 5, &partial);
    check(partial.threads_left_out == 2, "threadlist_whole_tick_leaves_none", "%llu",
          (unsigned long long)partial.threads_left_out);
}

int main(void)
{
    test_limit();
    test_walk_prefer();
    test_accum();
    test_growth();
    test_threads();
    return check_exit_code();
}
