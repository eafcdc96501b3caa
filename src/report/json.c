/* json.c — the JSON report (sonde_report_json, docs/json-format.md).
 *
 * Owns: the JSON layout. Field names follow Scalene's where the meaning is
 * the same, so tools written for Scalene's JSON read ours. Per-line and
 * per-function figures come from sonde__columns, so a new figure appears
 * here without touching this file. Every string goes through
 * sonde_buf_json_string (which also keeps "</script>" out of the output,
 * for the HTML viewer) and every fraction through sonde_buf_json_number.
 * Always writes "partial", the counts of what the profile misses (zeros
 * when it is complete), "exit" (null when unknown) and "processes" (the
 * processes the profile covers; json_load.c reads all of it back). Also writes each file's source text (so that a report viewer can show
 * the lines around the hot ones) and, when the profile has call stacks,
 * the top-level "call_stacks" object (flame graphs). Called by the CLI,
 * the extension and the HTML writer after sampling; never in a signal
 * handler.
 */
#include "report_internal.h"

#include <inttypes.h>
#include <stdlib.h>

#define JSON_PERCENT_DIGITS 4
#define JSON_SECONDS_DIGITS 6
#define JSON_INTERVAL_DIGITS 9

static void json_key(sonde_buf_t *out, const char *indent, const char *key)
{
    sonde_buf_puts(out, indent);
    sonde_buf_json_string(out, key);
    sonde_buf_puts(out, ": ");
}

static void json_string_or_null(sonde_buf_t *out, const char *s)
{
    if (s)
        sonde_buf_json_string(out, s);
    else
        sonde_buf_puts(out, "null");
}

static void json_count(sonde_buf_t *out, uint64_t v)
{
    sonde_buf_printf(out, "%" PRIu64, v);
}

/* The figures of one line or function, each as ", \"name\": value". */
static void json_figures(sonde_buf_t *out, const sonde_profile_t *prof, const sonde__row_t *row)
{
    for (size_t i = 0; i < sonde__n_columns; i++) {
        const sonde__column_t *col = &sonde__columns[i];
        if (!sonde__column_applies(col, prof, row)) continue;
        sonde_buf_puts(out, ", ");
        sonde_buf_json_string(out, col->json_name);
        sonde_buf_puts(out, ": ");
        double v = col->value(col, row, prof);
        if (col->unit == SONDE__UNIT_COUNT)
            json_count(out, (uint64_t)v);
        else
            sonde_buf_json_number(out, v, JSON_PERCENT_DIGITS);
    }
}

/* "partial": what the profile misses (sonde_partial_t), always written,
 * zeros when complete; followed by ",\n". */
static void json_partial(sonde_buf_t *out, const sonde_partial_t *partial)
{
    json_key(out, "  ", "partial");
    sonde_buf_puts(out, "{\"failed_reads\": ");
    json_count(out, partial->failed_reads);
    sonde_buf_puts(out, ", \"dropped_samples\": ");
    json_count(out, partial->dropped_samples);
    sonde_buf_puts(out, ", \"threads_left_out\": ");
    json_count(out, partial->threads_left_out);
    sonde_buf_puts(out, ", \"frames_left_out\": ");
    json_count(out, partial->frames_left_out);
    sonde_buf_puts(out, ", \"processes_lost\": ");
    json_count(out, partial->processes_lost);
    sonde_buf_puts(out, ", \"processes_running\": ");
    json_count(out, partial->processes_running);
    sonde_buf_puts(out, "},\n");
}

/* "exit": how the program ended when the profile knows ({"status": N,
 * "exception": type name or null}), else null; followed by ",\n". */
static void json_exit(sonde_buf_t *out, const sonde_profile_t *prof)
{
    json_key(out, "  ", "exit");
    if (!prof->exit_known) {
        sonde_buf_puts(out, "null,\n");
        return;
    }
    sonde_buf_printf(out, "{\"status\": %d, \"exception\": ", prof->exit_status);
    json_string_or_null(out, prof->exit_exception[0] ? prof->exit_exception : NULL);
    sonde_buf_puts(out, "},\n");
}

/* "processes": one entry per process profiled (sonde_process_t), in the
 * profile's order; followed by ",\n". */
static void json_processes(sonde_buf_t *out, const sonde_profile_t *prof)
{
    json_key(out, "  ", "processes");
    sonde_buf_putc(out, '[');
    for (size_t i = 0; i < prof->n_processes; i++) {
        const sonde_process_t *p = &prof->processes[i];
        sonde_buf_puts(out, i ? ",\n    " : "\n    ");
        sonde_buf_printf(out, "{\"pid\": %d, \"ppid\": %d, \"cmdline\": ", p->pid, p->ppid);
        sonde_buf_json_string(out, p->cmdline ? p->cmdline : "");
        sonde_buf_puts(out, ", \"cpu_sec\": ");
        sonde_buf_json_number(out, p->cpu_sec, JSON_SECONDS_DIGITS);
        sonde_buf_puts(out, ", \"wall_sec\": ");
        sonde_buf_json_number(out, p->wall_sec, JSON_SECONDS_DIGITS);
        sonde_buf_puts(out, ", \"peak_mb\": ");
        sonde_buf_json_number(out, p->peak_mb, JSON_PERCENT_DIGITS);
        sonde_buf_printf(out, ", \"followed\": %d", p->followed);
        sonde_buf_puts(out, p->complete ? ", \"complete\": true}" : ", \"complete\": false}");
    }
    sonde_buf_puts(out, prof->n_processes ? "\n  ],\n" : "],\n");
}

static void json_run(sonde_buf_t *out, const sonde_profile_t *prof)
{
    const char *in = "  ";
    json_key(out, in, "sonde_version");
    sonde_buf_json_string(out, SONDE_VERSION);
    sonde_buf_puts(out, ",\n");
    json_key(out, in, "program");
    json_string_or_null(out, prof->program);
    sonde_buf_puts(out, ",\n");
    json_key(out, in, "args");
    sonde_buf_putc(out, '[');
    for (int i = 1; i < prof->argc; i++) { /* argv[0] is the program itself */
        if (i > 1) sonde_buf_puts(out, ", ");
        sonde_buf_json_string(out, prof->argv[i]);
    }
    sonde_buf_puts(out, "],\n");
    json_key(out, in, "python_version");
    json_string_or_null(out, prof->python_version);
    sonde_buf_puts(out, ",\n");
    json_key(out, in, "elapsed_time_sec");
    sonde_buf_json_number(out, prof->elapsed_sec, JSON_SECONDS_DIGITS);
    sonde_buf_puts(out, ",\n");
    json_key(out, in, "interval_sec");
    sonde_buf_json_number(out, prof->interval_sec, JSON_INTERVAL_DIGITS);
    sonde_buf_puts(out, ",\n");
    json_key(out, in, "virtual_time");
    sonde_buf_puts(out, prof->virtual_time ? "true" : "false");
    sonde_buf_puts(out, ",\n");
    json_key(out, in, "n_samples");
    json_count(out, prof->samples);
    sonde_buf_puts(out, ",\n");
    json_key(out, in, "profiled_time_sec");
    sonde_buf_json_number(out, (double)prof->total_ns / SONDE_NS_PER_SEC, JSON_SECONDS_DIGITS);
    sonde_buf_puts(out, ",\n");

    sonde__row_t total = sonde__row_of_profile(prof);
    for (size_t i = 0; i < sonde__n_columns; i++) {
        const sonde__column_t *col = &sonde__columns[i];
        if (!col->json_total_name) continue;
        json_key(out, in, col->json_total_name);
        sonde_buf_json_number(out, col->value(col, &total, prof), JSON_PERCENT_DIGITS);
        sonde_buf_puts(out, ",\n");
    }
    json_key(out, in, "unattributed_percent");
    sonde_buf_json_number(
        out, sonde__percent(prof->unattributed_ns, prof->total_ns + prof->unattributed_ns),
        JSON_PERCENT_DIGITS);
    sonde_buf_puts(out, ",\n");
    json_partial(out, &prof->partial);
    json_exit(out, prof);
    json_processes(out, prof);
}

/* ---- memory (sonde run --memory; only when prof->has_memory) ------------- */

/* A timeline as [[seconds, MB], ...]. */
static void json_timeline(sonde_buf_t *out, const sonde_timeline_t *tl)
{
    sonde_buf_putc(out, '[');
    for (size_t i = 0; i < tl->n; i++) {
        sonde_buf_puts(out, i ? ", [" : "[");
        sonde_buf_json_number(out, tl->points[i].t_sec, JSON_SECONDS_DIGITS);
        sonde_buf_puts(out, ", ");
        sonde_buf_json_number(out, tl->points[i].mb, JSON_PERCENT_DIGITS);
        sonde_buf_putc(out, ']');
    }
    sonde_buf_putc(out, ']');
}

/* The run's memory fields, each followed by ",\n". */
static void json_memory_run(sonde_buf_t *out, const sonde_profile_t *prof)
{
    const char *in = "  ";
    json_key(out, in, "memory");
    sonde_buf_puts(out, "true,\n");
    json_key(out, in, "max_footprint_mb");
    sonde_buf_json_number(out, prof->max_footprint_mb, JSON_PERCENT_DIGITS);
    sonde_buf_puts(out, ",\n");
    json_key(out, in, "max_footprint_fname");
    json_string_or_null(out, prof->max_footprint_file);
    sonde_buf_puts(out, ",\n");
    json_key(out, in, "max_footprint_lineno");
    sonde_buf_printf(out, "%d,\n", prof->max_footprint_file ? prof->max_footprint_lineno : 0);
    json_key(out, in, "heap_peak_mb");
    sonde_buf_json_number(out, prof->heap_peak_mb, JSON_PERCENT_DIGITS);
    sonde_buf_puts(out, ",\n");
    json_key(out, in, "growth_rate");
    sonde_buf_json_number(out, sonde__memory_growth_percent(prof), JSON_PERCENT_DIGITS);
    sonde_buf_puts(out, ",\n");
    json_key(out, in, "samples");
    json_timeline(out, &prof->footprint);
    sonde_buf_puts(out, ",\n");
}

/* ---- the sources' figures (src/model/figures.h) --------------------------- */

/* The run's fields of each source that ran, each followed by ",\n": its
 * flag, what it read and whether the figures are this process tree's own
 * (for a source that has those fields),
 * and its columns over every line (Scalene's names, from the source's
 * descriptor); then "figures", the list of the sources' columns
 * with their titles and units, which the viewer draws without knowing
 * the sources. */
static void json_fig_runs(sonde_buf_t *out, const sonde_profile_t *prof)
{
    static const char *const units[] = {[SONDE_FIG_UNIT_LEVEL_PERCENT] = "level_percent",
                                        [SONDE_FIG_UNIT_MB] = "mb",
                                        [SONDE_FIG_UNIT_COUNT] = "count"};
    const char *in = "  ";
    sonde_figs_t totals = sonde__figs_totals(prof);
    bool any = false;
    for (unsigned s = 0; s < SONDE_N_FIGSRCS; s++) {
        const sonde_fig_source_t *src = &sonde_fig_sources[s];
        const sonde_fig_run_t *run = &prof->fig_runs[s];
        if (!run->present) continue;
        any = true;
        json_key(out, in, src->name);
        sonde_buf_puts(out, "true,\n");
        if (src->detail_key) {
            json_key(out, in, src->detail_key);
            json_string_or_null(out, run->detail);
            sonde_buf_puts(out, ",\n");
        }
        if (src->own_key) {
            json_key(out, in, src->own_key);
            sonde_buf_puts(out, run->own ? "true,\n" : "false,\n");
        }
        for (size_t c = 0; c < src->n_columns; c++) {
            if (!src->columns[c].json_total_name) continue;
            json_key(out, in, src->columns[c].json_total_name);
            sonde_buf_json_number(out, src->columns[c].value(totals.v + src->first),
                                  JSON_PERCENT_DIGITS);
            sonde_buf_puts(out, ",\n");
        }
    }
    if (!any) return;
    json_key(out, in, "figures");
    sonde_buf_putc(out, '[');
    bool first = true;
    for (unsigned s = 0; s < SONDE_N_FIGSRCS; s++) {
        const sonde_fig_source_t *src = &sonde_fig_sources[s];
        if (!prof->fig_runs[s].present) continue;
        for (size_t c = 0; c < src->n_columns; c++) {
            const sonde_fig_column_t *col = &src->columns[c];
            sonde_buf_puts(out, first ? "{\"source\": " : ", {\"source\": ");
            first = false;
            sonde_buf_json_string(out, src->name);
            sonde_buf_puts(out, ", \"key\": ");
            sonde_buf_json_string(out, col->json_name);
            sonde_buf_puts(out, ", \"title\": ");
            json_string_or_null(out, col->title);
            sonde_buf_puts(out, ", \"unit\": ");
            sonde_buf_json_string(out, units[col->unit]);
            sonde_buf_putc(out, '}');
        }
    }
    sonde_buf_puts(out, "],\n");
}

/* ", \"leaks\": {...}" of a file: its likely leaks by line number. */
static void json_leaks(sonde_buf_t *out, const sonde_file_stats_t *file)
{
    sonde_buf_puts(out, ",\n");
    json_key(out, "      ", "leaks");
    sonde_buf_putc(out, '{');
    bool any = false;
    for (size_t i = 0; i < file->n_lines; i++) {
        const sonde_line_memory_t *mem = &file->lines[i].mem;
        if (!sonde__memory_is_leak(mem)) continue;
        sonde_buf_printf(out, "%s\"%d\": {\"likelihood\": ", any ? ", " : "",
                         file->lines[i].lineno);
        sonde_buf_json_number(out, mem->leak_likelihood, JSON_PERCENT_DIGITS);
        sonde_buf_puts(out, ", \"velocity_mb_s\": ");
        sonde_buf_json_number(out, mem->leak_velocity_mb_s, JSON_PERCENT_DIGITS);
        sonde_buf_putc(out, '}');
        any = true;
    }
    sonde_buf_putc(out, '}');
}

static void json_file(sonde_buf_t *out, const sonde_profile_t *prof, const sonde_file_stats_t *file)
{
    sonde_buf_puts(out, "    ");
    sonde_buf_json_string(out, file->path);
    sonde_buf_puts(out, ": {\n");
    json_key(out, "      ", "percent_cpu_time");
    sonde_buf_json_number(out, sonde__percent(file->total_ns, prof->total_ns), JSON_PERCENT_DIGITS);
    sonde_buf_puts(out, ",\n");

    json_key(out, "      ", "lines");
    sonde_buf_puts(out, "[");
    for (size_t i = 0; i < file->n_lines; i++) {
        const sonde_line_stats_t *line = &file->lines[i];
        const char *text = "";
        if (file->source && line->lineno >= 1 && (size_t)line->lineno <= file->n_source)
            text = file->source[line->lineno - 1];
        sonde_buf_puts(out, i ? ",\n        " : "\n        ");
        sonde_buf_printf(out, "{\"lineno\": %d, \"line\": ", line->lineno);
        sonde_buf_json_string(out, text);
        if (line->func_name) {
            sonde_buf_puts(out, ", \"function\": ");
            sonde_buf_json_string(out, line->func_name);
            sonde_buf_printf(out, ", \"function_lineno\": %d", line->func_firstlineno);
        }
        sonde__row_t row = sonde__row_of_line(line);
        json_figures(out, prof, &row);
        if (prof->has_memory) {
            sonde_buf_puts(out, ", \"memory_samples\": ");
            json_timeline(out, &line->mem.timeline);
        }
        sonde_buf_putc(out, '}');
    }
    sonde_buf_puts(out, file->n_lines ? "\n      ],\n" : "],\n");

    json_key(out, "      ", "functions");
    sonde_buf_puts(out, "[");
    for (size_t i = 0; i < file->n_funcs; i++) {
        const sonde_func_stats_t *func = &file->funcs[i];
        sonde_buf_puts(out, i ? ",\n        " : "\n        ");
        sonde_buf_puts(out, "{\"line\": ");
        sonde_buf_json_string(out, func->name);
        sonde_buf_printf(out, ", \"lineno\": %d", func->firstlineno);
        sonde__row_t row = sonde__row_of_func(func);
        json_figures(out, prof, &row);
        sonde_buf_putc(out, '}');
    }
    sonde_buf_puts(out, file->n_funcs ? "\n      ]" : "]");
    if (prof->has_memory) json_leaks(out, file);

    if (file->source) {
        sonde_buf_puts(out, ",\n");
        json_key(out, "      ", "source");
        sonde_buf_putc(out, '[');
        for (size_t i = 0; i < file->n_source; i++) {
            sonde_buf_puts(out, i ? ",\n        " : "\n        ");
            sonde_buf_json_string(out, file->source[i]);
        }
        sonde_buf_puts(out, file->n_source ? "\n      ]" : "]");
    }
    sonde_buf_puts(out, "\n    }");
}

/* "call_stacks": interned frames, thread names, and each unique stack as
 * root-first frame indices with its weight (docs/json-format.md). */
static void json_stacks(sonde_buf_t *out, const sonde_profile_t *prof)
{
    json_key(out, "  ", "call_stacks");
    sonde_buf_puts(out, "{\n");
    json_key(out, "    ", "frames");
    sonde_buf_putc(out, '[');
    for (size_t i = 0; i < prof->n_frames; i++) {
        const sonde_stack_frame_t *f = &prof->frames[i];
        sonde_buf_puts(out, i ? ",\n      " : "\n      ");
        sonde_buf_puts(out, "{\"name\": ");
        sonde_buf_json_string(out, f->func ? f->func : "");
        sonde_buf_puts(out, ", \"file\": ");
        sonde_buf_json_string(out, f->file ? f->file : "");
        sonde_buf_printf(out, ", \"line\": %d}", f->line);
    }
    sonde_buf_puts(out, prof->n_frames ? "\n    ],\n" : "],\n");

    json_key(out, "    ", "threads");
    sonde_buf_putc(out, '[');
    for (size_t i = 0; i < prof->n_threads; i++) {
        if (i) sonde_buf_puts(out, ", ");
        sonde_buf_json_string(out, prof->thread_names[i] ? prof->thread_names[i] : "");
    }
    sonde_buf_puts(out, "],\n");
    bool ids = false;
    for (size_t i = 0; i < prof->n_threads && prof->thread_ids; i++)
        ids = ids || prof->thread_ids[i].pid || prof->thread_ids[i].tid;
    if (ids) {
        json_key(out, "    ", "thread_ids");
        sonde_buf_putc(out, '[');
        for (size_t i = 0; i < prof->n_threads; i++)
            sonde_buf_printf(out, "%s[%d, %d]", i ? ", " : "", prof->thread_ids[i].pid,
                             prof->thread_ids[i].tid);
        sonde_buf_puts(out, "],\n");
    }

    json_key(out, "    ", "samples");
    sonde_buf_putc(out, '[');
    for (size_t i = 0; i < prof->n_stacks; i++) {
        const sonde_stack_t *s = &prof->stacks[i];
        sonde_buf_puts(out, i ? ",\n      " : "\n      ");
        sonde_buf_puts(out, "{\"frames\": [");
        for (uint32_t d = 0; d < s->depth; d++)
            sonde_buf_printf(out, d ? ", %u" : "%u", (unsigned)s->frames[d]);
        sonde_buf_puts(out, "], \"thread\": ");
        if (s->thread >= 0)
            sonde_buf_printf(out, "%d", s->thread);
        else
            sonde_buf_puts(out, "null");
        sonde_buf_puts(out, ", \"count\": ");
        json_count(out, s->samples);
        sonde_buf_puts(out, ", \"sec\": ");
        sonde_buf_json_number(out, (double)s->ns / SONDE_NS_PER_SEC, JSON_SECONDS_DIGITS);
        if (s->kind_ns[0] || s->kind_ns[1] || s->kind_ns[2]) {
            static const char *const kind_keys[SONDE_N_KINDS] = {"python_sec", "native_sec",
                                                                 "system_sec"};
            for (int k = 0; k < SONDE_N_KINDS; k++) {
                sonde_buf_printf(out, ", \"%s\": ", kind_keys[k]);
                sonde_buf_json_number(out, (double)s->kind_ns[k] / SONDE_NS_PER_SEC,
                                      JSON_SECONDS_DIGITS);
            }
        }
        sonde_buf_putc(out, '}');
    }
    sonde_buf_puts(out, prof->n_stacks ? "\n    ]\n  }" : "]\n  }");
}

int sonde_report_json(const sonde_profile_t *prof, sonde_buf_t *out)
{
    size_t *order = NULL;
    int rc = sonde__files_by_time(prof, &order);
    if (rc) return rc;

    sonde_buf_puts(out, "{\n");
    json_run(out, prof);
    if (prof->has_memory) json_memory_run(out, prof);
    json_fig_runs(out, prof);
    json_key(out, "  ", "files");
    sonde_buf_putc(out, '{');
    for (size_t i = 0; i < prof->n_files; i++) {
        sonde_buf_puts(out, i ? ",\n" : "\n");
        json_file(out, prof, &prof->files[order[i]]);
    }
    sonde_buf_puts(out, prof->n_files ? "\n  }" : "}");
    if (prof->n_stacks) {
        sonde_buf_puts(out, ",\n");
        json_stacks(out, prof);
    }
    sonde_buf_puts(out, "\n}\n");
    free(order);
    return sonde_buf_error(out);
}
