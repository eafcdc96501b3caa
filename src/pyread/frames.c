/* frames.c — walking one thread's Python frames, innermost first.
 *
 * Owns: sonde_pyframe_iter_begin / sonde_pyframe_iter_next. Called per
 * sample by the in-process sampler thread (no GIL: frames may be freed or
 * rewritten under us) and by the attach reader. Per frame: one read of the
 * frame (back link, code, instruction, owner lie within a few words) and,
 * the first time the walk meets its code object, one read of the code
 * header by the cache (code.c). The frame models:
 *   <= 3.10  tstate->frame, PyFrameObject, f_back; f_lasti is a byte offset
 *            (3.8, 3.9) or a code-unit index (3.10), -1 before the start;
 *   3.11/12  tstate->cframe->current_frame, _PyInterpreterFrame, previous;
 *            prev_instr points at the last code unit executed (possibly an
 *            inline cache entry); 3.12 adds entry frames owned by the C
 *            stack, which are skipped;
 *   3.13+    tstate->current_frame; instr_ptr points at the instruction
 *            executing; f_executable may be something other than a code
 *            object (skipped; frames owned by the C stack, skipped too);
 *            3.14+ f_executable is a tagged _PyStackRef (its low tag bits
 *            cleared before use), and frames owned by the interpreter (its
 *            entry frames, and the C stack in 3.14: owner >= 3) are
 *            skipped. Generator and coroutine frames (owner GENERATOR)
 *            are Python frames like the others.
 * The walk is bounded by SONDE_PY_MAX_DEPTH and stops at a cycle (Brent).
 * Nothing here runs in a signal handler.
 */
#include "pyread_internal.h"

#include <string.h>

#define FRAME_NULL_OBJECT_MAX 4096 /* an f_executable below this is no object */

/* FRAME_OWNED_BY_GENERATOR: the same value in every version with an owner
 * field (3.11+). */
#define FRAME_OWNER_GENERATOR 1
/* <= 3.10: PyFrameObject's f_gen (the generator owning the frame, or NULL)
 * is the pointer just before f_lasti (3.8, 3.9, 3.10; the in-process
 * sampler checks it against the headers it is built with). */
#define FRAME_GEN_BEFORE_LASTI 8
/* <= 3.10: the byte 12 after f_lasti says whether the frame is executing:
 * f_executing (3.8, 3.9: 1 while executing), f_state (3.10: executing is
 * FRAME_EXECUTING 0 or FRAME_UNWINDING 2; suspended -1, created -2,
 * returned 1, raised 3, cleared 4). Every frame on a thread's chain is
 * executing; one that is not was met by a read that raced a return or a
 * yield (a frame object freed and reused, a generator suspended). */
#define FRAME_STATE_AFTER_LASTI 12

static uint64_t frames_rd64(const uint8_t *bytes, int32_t at)
{
    uint64_t value = 0;
    memcpy(&value, bytes + at, sizeof value);
    return value;
}

static void frames_finish(sonde_pyframe_iter_t *it)
{
    it->next_frame = 0;
}

/* Starts a walk of the thread state at tstate (pyread.h). */
int sonde_pyframe_iter_begin(sonde_pyproc_t *proc, uint64_t tstate, sonde_pyframe_iter_t *it)
{
    const sonde_pyoffsets_t *off = proc->off;
    uint64_t frame = 0;

    memset(it, 0, sizeof *it);
    it->proc = proc;
    sonde_pycode_new_walk(proc);
    int rc = sonde_mem_read(&proc->mem, tstate + (uint64_t)off->tstate_frame, &frame, sizeof frame);
    if (rc == 0 && off->frame_model == SONDE_PYFRAMES_CFRAME && frame != 0) {
        uint64_t cframe = frame;
        frame = 0;
        rc = sonde_mem_read(&proc->mem, cframe + (uint64_t)off->cframe_current_frame, &frame,
                            sizeof frame);
    }
    if (rc != 0) {
        proc->sample_errors++;
        return rc;
    }
    it->next_frame = frame;
    return 0;
}

/* Byte offset of the frame's current instruction; negative when the frame
 * has not started. */
static int64_t frames_offset(const sonde_pyoffsets_t *off, const uint8_t *span, int32_t lo,
                             uint64_t code_addr)
{
    if (off->instr_kind == SONDE_PYINSTR_LASTI_BYTES ||
        off->instr_kind == SONDE_PYINSTR_LASTI_UNITS) {
        int32_t lasti = 0;
        memcpy(&lasti, span + (off->frame_instr - lo), sizeof lasti);
        return off->instr_kind == SONDE_PYINSTR_LASTI_UNITS ? 2 * (int64_t)lasti : lasti;
    }
    uint64_t instr = frames_rd64(span, off->frame_instr - lo);
    uint64_t first = code_addr + (uint64_t)off->code_code_adaptive;
    if (instr < first) return -2;
    return (int64_t)((instr - first) & ~(uint64_t)1);
}

/* Reads the frame at addr: 1 with *frame filled, 0 for a frame to skip,
 * or -errno. Sets it->next_frame to the caller's frame. */
static int frames_read_one(sonde_pyframe_iter_t *it, uint64_t addr, sonde_pyframe_t *frame)
{
    sonde_pyproc_t *proc = it->proc;
    const sonde_pyoffsets_t *off = proc->off;
    bool lasti = off->instr_kind == SONDE_PYINSTR_LASTI_BYTES ||
                 off->instr_kind == SONDE_PYINSTR_LASTI_UNITS;
    int32_t gen_at = lasti ? off->frame_instr - FRAME_GEN_BEFORE_LASTI : -1;
    int32_t state_at = lasti ? off->frame_instr + FRAME_STATE_AFTER_LASTI : -1;
    int32_t fields[] = {off->frame_back,  off->frame_code, off->frame_instr,
                        off->frame_owner, gen_at,          state_at};
    int32_t lo = INT32_MAX, hi = 0;
    uint8_t span[SONDE_PYREAD_FRAME_SPAN_MAX];
    sonde_pycode_hit_t hit;

    for (size_t i = 0; i < SONDE_ARRAY_LEN(fields); i++) {
        if (fields[i] < 0) continue;
        lo = fields[i] < lo ? fields[i] : lo;
        hi = fields[i] + 8 > hi ? fields[i] + 8 : hi;
    }
    if (hi - lo > SONDE_PYREAD_FRAME_SPAN_MAX) return -EINVAL;
    int rc = sonde_mem_read(&proc->mem, addr + (uint64_t)lo, span, (size_t)(hi - lo));
    if (rc != 0) return rc;
    it->next_frame = frames_rd64(span, off->frame_back - lo);

    if (off->frame_owner >= 0 && off->frame_owner_cstack >= 0 &&
        (int8_t)span[off->frame_owner - lo] >= off->frame_owner_cstack)
        return 0;
    /* A generator's frame links to its caller only while it runs: one read
     * with no caller was suspended by the time the walk reached it. */
    if (it->next_frame == 0 && off->frame_owner >= 0 &&
        (int8_t)span[off->frame_owner - lo] == FRAME_OWNER_GENERATOR)
        it->detached = true;
    if (it->next_frame == 0 && gen_at >= 0 && frames_rd64(span, gen_at - lo) != 0)
        it->detached = true;
    if (state_at >= 0) {
        int8_t state = (int8_t)span[state_at - lo];
        bool executing =
            off->instr_kind == SONDE_PYINSTR_LASTI_BYTES ? state == 1 : state == 0 || state == 2;
        if (!executing) it->detached = true;
    }
    /* 3.14+: a _PyStackRef; its tag bits cleared as PyStackRef_AsPyObjectBorrow does */
    uint64_t code_addr =
        frames_rd64(span, off->frame_code - lo) & ~(uint64_t)off->frame_code_tag_bits;
    /* 3.14+: a frame being popped has f_executable cleared to the NULL
     * stack reference (tag bits only) before tstate->current_frame leaves
     * it: a sampler racing the return sees it; its caller is the sample */
    if (code_addr < FRAME_NULL_OBJECT_MAX && off->frame_model == SONDE_PYFRAMES_DIRECT) return 0;
    rc = sonde_pycode_get(proc, code_addr, &hit);
    if (rc == -EINVAL && off->frame_model == SONDE_PYFRAMES_DIRECT) {
        it->doubtful++;
        return 0; /* 3.13+: f_executable is not a code object */
    }
    if (rc != 0) return rc;
    int64_t offset = frames_offset(off, span, lo, code_addr);
    frame->code_id = hit.code_id;
    frame->lineno = sonde_pycode_line(&hit, offset);
    frame->in_call = sonde_pycode_in_call(&hit, offset);
    frame->instr_offset = offset < 0 ? -1 : offset > INT32_MAX ? INT32_MAX : (int32_t)offset;
    return 1;
}

/* Reads the next frame (pyread.h). */
int sonde_pyframe_iter_next(sonde_pyframe_iter_t *it, sonde_pyframe_t *frame)
{
    while (it->next_frame != 0) {
        uint64_t addr = it->next_frame;
        if (it->depth >= SONDE_PY_MAX_DEPTH) {
            it->truncated = true;
            frames_finish(it);
            return 0;
        }
        int rc = frames_read_one(it, addr, frame);
        if (rc < 0) {
            it->proc->sample_errors++;
            frames_finish(it);
            return rc;
        }
        /* Brent: remember the frame at every power-of-two depth; meeting
         * it again means the chain loops. */
        it->depth++;
        if ((it->depth & (it->depth - 1)) == 0)
            it->cycle_mark = addr;
        else if (it->next_frame == it->cycle_mark) {
            it->truncated = true;
            frames_finish(it);
        }
        if (rc == 1) {
            it->frame_addr = addr;
            return 1;
        }
    }
    return 0;
}
