/* pstats_model.c — the tracer's statistics as a flat profile model, for
 * the format registry's writers (`sonde trace -o x.pb.gz`: pprof).
 *
 * Owns: sonde_trace_report (pstats.h). Called by src/trace/boot.c at exit
 * with the GIL (the pprof writer's gzip callback calls Python's zlib).
 * Flat: each function is a one-frame stack of its own (leaf = root) whose
 * weight is its internal time (pstats' tt, in ns) and whose count is its
 * calls (nc); the caller edges are left out, because a tree built from
 * them would give wrong cumulative times. No libpython: built into the core with the other pstats
 * writers; never in a signal handler.
 */
#include "pstats.h"

#include "../report/report.h"

int sonde_trace_report(const sonde_trace_stats_t *s, const sonde_format_t *format,
                       const sonde_report_ctx_t *ctx, sonde_buf_t *out)
{
    sonde_profile_t prof;
    int rc = 0;
    double total_sec = 0;
    sonde_profile_init(&prof);
    for (size_t i = 0; i < s->n_rows && rc == 0; i++) {
        const sonde_trace_row_t *row = &s->rows[i];
        int line = row->line > 0 && row->line < INT32_MAX ? (int)row->line : 0;
        sonde_stack_frame_t frame = {row->name, row->file, line};
        sonde_ns_t ns = row->tt > 0 ? (sonde_ns_t)(row->tt * 1e9 + 0.5) : 0;
        total_sec += row->tt > 0 ? row->tt : 0;
        /* the function's entry gives its start line (pprof's start_line) */
        rc = sonde_profile_add(&prof, row->file, row->name, line, line, 0, 0, 0, 0);
        if (rc == 0) rc = sonde_profile_add_stack(&prof, &frame, 1, -1, row->nc, ns);
    }
    prof.elapsed_sec = total_sec;
    if (rc == 0) rc = format->write(&prof, ctx, out);
    sonde_profile_free(&prof);
    return rc;
}
