/* walk.c — one walk of a thread's stack, and the stack depth limit.
 *
 * Owns: sonde_walk_thread, the walk every front end does per sample (the
 * in-process sampler, the memory callback inside allocator hooks, the
 * attach reader), and sonde_stack_limit, the one depth limit of recorded
 * stacks: SONDE_STACK_MAX_DEPTH frames, root and leaf kept, a marker frame
 * between them. A walk reads the whole stack into a buffer of
 * SONDE_STACK_MAX_DEPTH frames (the innermost in place, the outermost in a
 * ring: sonde_stack_keep), so a stack of any depth read to its root keeps
 * the root. A walk reads at most w->max_read frames (a sample's walk
 * SONDE_WALK_MAX_READ, dump's up to src/pyread/'s own bound,
 * SONDE_PY_MAX_DEPTH, which also ends a walk on hostile or cyclic memory);
 * a walk cut there has no known root, so its marker ends the stack
 * instead. No signal handler; the walk
 * allocates only through the code cache.
 */
#include "sample.h"

#include <string.h>

uint32_t sonde_stack_limit(sonde_aframe_t *frames, uint32_t *depth, bool cut_at_root)
{
    uint32_t n = *depth;
    if (cut_at_root && n >= SONDE_STACK_MAX_DEPTH) {
        /* The outermost frames read are not the root: keep the innermost
         * ones and end the stack with the marker. */
        uint32_t keep = SONDE_STACK_MAX_DEPTH - 1;
        uint32_t left_out = n - keep;
        frames[keep] = sonde_aframe(SONDE_AFRAME_MARKER_CODE, (int32_t)left_out);
        *depth = SONDE_STACK_MAX_DEPTH;
        return left_out;
    }
    if (n <= SONDE_STACK_MAX_DEPTH) return 0;
    uint32_t left_out = n - SONDE_STACK_KEEP_LEAF - SONDE_STACK_KEEP_ROOT;
    frames[SONDE_STACK_KEEP_LEAF] = sonde_aframe(SONDE_AFRAME_MARKER_CODE, (int32_t)left_out);
    memmove(frames + SONDE_STACK_KEEP_LEAF + 1, frames + n - SONDE_STACK_KEEP_ROOT,
            SONDE_STACK_KEEP_ROOT * sizeof *frames);
    *depth = SONDE_STACK_MAX_DEPTH;
    return left_out;
}

/* Slots of the ring that keeps the outermost frames read so far: the
 * root frames kept and the marker's slot. */
#define WALK_RING (SONDE_STACK_MAX_DEPTH - SONDE_STACK_KEEP_LEAF)

void sonde_stack_keep(sonde_aframe_t *frames, uint32_t i, sonde_aframe_t frame)
{
    if (i < SONDE_STACK_KEEP_LEAF)
        frames[i] = frame;
    else
        frames[SONDE_STACK_KEEP_LEAF + (i - SONDE_STACK_KEEP_LEAF) % WALK_RING] = frame;
}

/* Reverses frames[from..to-1]. */
static void walk_reverse(sonde_aframe_t *frames, uint32_t from, uint32_t to)
{
    while (from + 1 < to) {
        sonde_aframe_t swap = frames[from];
        frames[from++] = frames[--to];
        frames[to] = swap;
    }
}

uint32_t sonde_stack_keep_end(sonde_aframe_t *frames, uint32_t read, uint32_t *depth,
                              bool cut_at_root)
{
    if (read <= SONDE_STACK_MAX_DEPTH) { /* all in place */
        *depth = read;
        return sonde_stack_limit(frames, depth, cut_at_root);
    }
    if (cut_at_root) {
        /* The outermost frames read are not the root: the innermost ones,
         * then the marker ending the stack. */
        uint32_t left_out = read - SONDE_STACK_KEEP_LEAF;
        frames[SONDE_STACK_KEEP_LEAF] = sonde_aframe(SONDE_AFRAME_MARKER_CODE, (int32_t)left_out);
        *depth = SONDE_STACK_KEEP_LEAF + 1;
        return left_out;
    }
    /* Rotate the ring so that it runs from the oldest frame it holds to
     * the root; the oldest one's slot becomes the marker. */
    uint32_t oldest = (read - SONDE_STACK_KEEP_LEAF) % WALK_RING;
    sonde_aframe_t *ring = frames + SONDE_STACK_KEEP_LEAF;
    walk_reverse(ring, 0, oldest);
    walk_reverse(ring, oldest, WALK_RING);
    walk_reverse(ring, 0, WALK_RING);
    uint32_t left_out = read - SONDE_STACK_KEEP_LEAF - SONDE_STACK_KEEP_ROOT;
    ring[0] = sonde_aframe(SONDE_AFRAME_MARKER_CODE, (int32_t)left_out);
    *depth = SONDE_STACK_MAX_DEPTH;
    return left_out;
}

int sonde_walk_thread(sonde_walk_t *w, sonde_pyproc_t *proc, uint64_t tstate,
                      sonde_codecache_t *codes, const sonde_codefilter_t *filter)
{
    sonde_pyframe_iter_t it;
    sonde_pyframe_t frame;
    sonde_codenames_t names = sonde_codenames_of_proc(proc, NULL);
    uint32_t read = 0;
    uint32_t max_read = w->max_read ? w->max_read : SONDE_WALK_MAX_READ;
    bool cut = false; /* stopped at max_read, before the root */

    w->depth = 0;
    w->left_out = 0;
    w->line_key = 0;
    w->have_innermost = false;
    w->innermost_addr = 0;
    w->innermost_back = 0;
    w->doubtful = false;
    w->detached = false;
    w->frames_read = 0;
    int rc = sonde_pyframe_iter_begin(proc, tstate, &it);
    if (rc < 0) return rc;
    w->innermost_addr = it.next_frame;
    while ((rc = sonde_pyframe_iter_next(&it, &frame)) == 1) {
        if (!w->have_innermost) {
            w->innermost = frame;
            w->innermost_addr = it.frame_addr;
            w->innermost_back = it.next_frame;
            w->have_innermost = true;
        }
        if (w->frames)
            sonde_stack_keep(w->frames, read++, sonde_aframe(frame.code_id, frame.lineno));
        if (!w->line_key && frame.lineno > 0 &&
            sonde_codecache_wants(codes, filter, &names, frame.code_id)) {
            w->line_key = sonde_aframe(frame.code_id, frame.lineno);
            if (!w->frames) break; /* the line is all that was asked */
        }
        if ((uint32_t)it.depth >= max_read && it.next_frame != 0) {
            cut = true;
            break;
        }
    }
    w->doubtful = it.doubtful > 0 || it.detached;
    w->detached = it.detached;
    w->frames_read = (uint32_t)it.depth;
    if (rc < 0) return rc;
    if (w->frames)
        w->left_out = sonde_stack_keep_end(w->frames, read, &w->depth, it.truncated || cut);
    return 0;
}

bool sonde_walk_prefer(int best_rank, uint32_t best_read, int rank, uint32_t read)
{
    if (rank != best_rank) return rank > best_rank;
    /* Doubtful walks: the deepest (one cut short at a yielding generator
     * reads fewer frames). Walks read to their end: the latest, as the
     * thread may have left the stack an earlier one began on, whose frames
     * that walk then read after they were popped (3.15: spin() at the
     * bottom of 600 frames, read with the stale frames under it as the
     * program returned and ran its exit code; the deepest kept a root of
     * dive() instead of <module>). */
    return rank == 1 ? read > best_read : true;
}

/* Whether the innermost frame of walk w is still on the thread's stack:
 * the same frame (address, code, caller) among the innermost
 * SONDE_WALK_RECHECK_FRAMES frames read now. A thread without frames
 * checks when it still has none. */
static bool walk_still_live(const sonde_walk_t *w, sonde_pyproc_t *proc, uint64_t tstate)
{
    sonde_pyframe_iter_t it;
    sonde_pyframe_t frame;
    int rc;

    if (sonde_pyframe_iter_begin(proc, tstate, &it) < 0) return false;
    if (!w->have_innermost) return it.next_frame == 0;
    for (int n = 0; n < SONDE_WALK_RECHECK_FRAMES; n++) {
        if ((rc = sonde_pyframe_iter_next(&it, &frame)) != 1) return false;
        if (it.frame_addr == w->innermost_addr)
            return frame.code_id == w->innermost.code_id && it.next_frame == w->innermost_back;
    }
    return false;
}

int sonde_walk_thread_checked(sonde_walk_t *w, sonde_pyproc_t *proc, uint64_t tstate,
                              sonde_codecache_t *codes, const sonde_codefilter_t *filter,
                              uint32_t *retries)
{
    sonde_walk_t best = {.frames = NULL};
    int best_rank = 0; /* 2: read to its end, 1: the same with a doubtful frame */
    bool best_is_last = false;
    int rc = 0;

    for (int attempt = 0; attempt < SONDE_WALK_TRIES_MAX; attempt++) {
        if (attempt >= SONDE_WALK_TRIES && best_rank == 2) break;
        if (attempt > 0) (*retries)++;
        best_is_last = false;
        rc = sonde_walk_thread(w, proc, tstate, codes, filter);
        if (rc < 0) continue;
        if (!w->doubtful && walk_still_live(w, proc, tstate)) return 0;
        int rank = w->doubtful ? 1 : 2;
        if (sonde_walk_prefer(best_rank, best.frames_read, rank, w->frames_read)) {
            best = *w;
            best_rank = rank;
            best_is_last = true;
            if (w->frames && w->spare) { /* the next walk writes into the other buffer */
                w->frames = best.spare;
                w->spare = best.frames;
            }
        }
    }
    if (best_rank == 0) return rc < 0 ? rc : -EAGAIN;
    bool own_frames = best_is_last || best.spare;
    *w = best;
    if (!own_frames) w->depth = 0; /* a later walk overwrote its frames */
    return 0;
}
