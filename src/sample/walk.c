/* walk.c — one walk of a thread's stack, and the stack depth limit.
 *
 * Owns: sonde_walk_thread, the walk every front end does per sample (the
 * in-process sampler, the memory callback inside allocator hooks, the
 * attach reader), and sonde_stack_limit, the one depth limit of recorded
 * stacks: SONDE_STACK_MAX_DEPTH frames, root and leaf kept, a marker frame
 * between them. Frames are read through src/pyread/, whose own bound
 * (SONDE_PY_MAX_DEPTH) ends a walk on hostile or cyclic memory; a walk cut
 * there has no known root, so its marker ends the stack instead. No
 * signal handler; the walk allocates only through the code cache.
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

int sonde_walk_thread(sonde_walk_t *w, sonde_pyproc_t *proc, uint64_t tstate,
                      sonde_codecache_t *codes, const sonde_codefilter_t *filter)
{
    sonde_pyframe_iter_t it;
    sonde_pyframe_t frame;
    sonde_codenames_t names = sonde_codenames_of_proc(proc, NULL);
    uint32_t read = 0;

    w->depth = 0;
    w->left_out = 0;
    w->line_key = 0;
    w->have_innermost = false;
    w->innermost_addr = 0;
    int rc = sonde_pyframe_iter_begin(proc, tstate, &it);
    if (rc < 0) return rc;
    w->innermost_addr = it.next_frame;
    while ((rc = sonde_pyframe_iter_next(&it, &frame)) == 1) {
        if (!w->have_innermost) {
            w->innermost = frame;
            w->have_innermost = true;
        }
        if (w->frames && read < SONDE_PY_MAX_DEPTH)
            w->frames[read++] = sonde_aframe(frame.code_id, frame.lineno);
        if (!w->line_key && frame.lineno > 0 &&
            sonde_codecache_wants(codes, filter, &names, frame.code_id)) {
            w->line_key = sonde_aframe(frame.code_id, frame.lineno);
            if (!w->frames) break; /* the line is all that was asked */
        }
    }
    if (rc < 0) return rc;
    if (w->frames) {
        w->depth = read;
        w->left_out = sonde_stack_limit(w->frames, &w->depth, it.truncated);
    }
    return 0;
}
