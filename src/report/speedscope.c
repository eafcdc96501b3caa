/* speedscope.c — call stacks in speedscope's file format.
 *
 * Owns: sonde_report_speedscope (report.h). Called by the CLI for
 * `sonde attach/record --format speedscope` (or -o *.speedscope.json).
 * The document follows https://www.speedscope.app/file-format-schema.json:
 *     {"$schema": ..., "shared": {"frames": [{"name", "file", "line"}]},
 *      "profiles": [{"type": "sampled", "name", "unit", "startValue",
 *                    "endValue", "samples": [[frame indices, root first]],
 *                    "weights": [...]}], "name", "activeProfileIndex",
 *      "exporter"}
 * with one sampled profile per thread when stacks are kept per thread
 * (else one for the whole program). Frames are the model's interned
 * frames, so indices are in range by construction. Weights are the time
 * each stack stood for, in nanoseconds (sample counts, unit "none", when
 * the profile carries no times). Strings go through sonde_buf_json_string
 * (escaped, invalid UTF-8 as U+FFFD). Plain C; never in a signal handler.
 */
#include "stackfmt.h"

#include <stdlib.h>

#define SPEEDSCOPE_SCHEMA "https://www.speedscope.app/file-format-schema.json"

static void speedscope_frames(const sonde_profile_t *prof, sonde_buf_t *out)
{
    sonde_buf_puts(out, "{\"frames\": [");
    for (size_t i = 0; i < prof->n_frames; i++) {
        const sonde_stack_frame_t *f = &prof->frames[i];
        sonde_buf_puts(out, i ? ",\n  {\"name\": " : "\n  {\"name\": ");
        sonde_buf_json_string(out, f->func ? f->func : "");
        sonde_buf_puts(out, ", \"file\": ");
        sonde_buf_json_string(out, f->file ? f->file : "");
        if (f->line > 0) sonde_buf_printf(out, ", \"line\": %d", f->line);
        sonde_buf_putc(out, '}');
    }
    sonde_buf_puts(out, "]}");
}

/* One sampled profile: the stacks of thread `thread` (-1: those merged). */
static void speedscope_profile(const sonde_profile_t *prof, int thread, const char *name,
                               sonde_buf_t *out)
{
    bool timed = true;
    uint64_t total = 0;
    for (size_t s = 0; s < prof->n_stacks; s++)
        if (prof->stacks[s].thread == thread && prof->stacks[s].samples && !prof->stacks[s].ns)
            timed = false;
    for (size_t s = 0; s < prof->n_stacks; s++)
        if (prof->stacks[s].thread == thread && prof->stacks[s].samples)
            total += timed ? prof->stacks[s].ns : prof->stacks[s].samples;

    sonde_buf_puts(out, "{\"type\": \"sampled\", \"name\": ");
    sonde_buf_json_string(out, name);
    sonde_buf_printf(
        out, ", \"unit\": \"%s\", \"startValue\": 0, \"endValue\": %llu,\n   \"samples\": [",
        timed ? "nanoseconds" : "none", (unsigned long long)total);
    bool first = true;
    for (size_t s = 0; s < prof->n_stacks; s++) {
        const sonde_stack_t *stack = &prof->stacks[s];
        if (stack->thread != thread || !stack->samples) continue;
        sonde_buf_puts(out, first ? "[" : ", [");
        bool first_frame = true;
        for (uint32_t d = 0; d < stack->depth; d++) {
            if (stack->frames[d] >= prof->n_frames) continue;
            sonde_buf_printf(out, first_frame ? "%u" : ",%u", stack->frames[d]);
            first_frame = false;
        }
        sonde_buf_putc(out, ']');
        first = false;
    }
    sonde_buf_puts(out, "],\n   \"weights\": [");
    first = true;
    for (size_t s = 0; s < prof->n_stacks; s++) {
        const sonde_stack_t *stack = &prof->stacks[s];
        if (stack->thread != thread || !stack->samples) continue;
        sonde_buf_printf(out, first ? "%llu" : ", %llu",
                         (unsigned long long)(timed ? stack->ns : stack->samples));
        first = false;
    }
    sonde_buf_puts(out, "]}");
}

int sonde_report_speedscope(const sonde_profile_t *prof, sonde_buf_t *out)
{
    /* Which threads have stacks: index thread + 1 (0 = merged). */
    size_t n_slots = prof->n_threads + 1;
    bool *present = calloc(n_slots, sizeof *present);
    if (!present) return -ENOMEM;
    for (size_t s = 0; s < prof->n_stacks; s++) {
        int thread = prof->stacks[s].thread;
        if (thread >= -1 && (size_t)(thread + 1) < n_slots && prof->stacks[s].samples)
            present[thread + 1] = true;
    }

    sonde_buf_puts(out, "{\"$schema\": \"" SPEEDSCOPE_SCHEMA "\",\n \"shared\": ");
    speedscope_frames(prof, out);
    sonde_buf_puts(out, ",\n \"profiles\": [");
    bool first = true;
    for (size_t slot = 0; slot < n_slots; slot++) {
        if (!present[slot]) continue;
        sonde_buf_puts(out, first ? "\n  " : ",\n  ");
        const char *name = slot == 0
                               ? (prof->program && prof->program[0] ? prof->program : "all threads")
                               : sonde__thread_name(prof, (int)slot - 1);
        speedscope_profile(prof, (int)slot - 1, name, out);
        first = false;
    }
    sonde_buf_puts(out, "],\n \"name\": ");
    sonde_buf_json_string(out, prof->program && prof->program[0] ? prof->program : "sonde");
    sonde_buf_puts(out,
                   ",\n \"activeProfileIndex\": 0,\n \"exporter\": \"sonde " SONDE_VERSION "\"}\n");
    free(present);
    return sonde_buf_error(out);
}
