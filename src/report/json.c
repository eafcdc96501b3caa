/* json.c — the JSON report (sonde_report_json, docs/json-format.md).
 *
 * Owns: the JSON layout. Field names follow Scalene's where the meaning is
 * the same, so tools written for Scalene's JSON read ours. Per-line and
 * per-function figures come from sonde__columns, so a new figure appears
 * here without touching this file. Every string goes through
 * sonde_buf_json_string (which also keeps "</script>" out of the output,
 * for the HTML viewer) and every fraction through sonde_buf_json_number.
 * Called by the CLI and the extension after sampling; never in a signal
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
        sonde_buf_puts(out, ", ");
        sonde_buf_json_string(out, col->json_name);
        sonde_buf_puts(out, ": ");
        double v = col->value(row, prof);
        if (col->unit == SONDE__UNIT_COUNT)
            json_count(out, (uint64_t)v);
        else
            sonde_buf_json_number(out, v, JSON_PERCENT_DIGITS);
    }
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
        sonde_buf_json_number(out, col->value(&total, prof), JSON_PERCENT_DIGITS);
        sonde_buf_puts(out, ",\n");
    }
    json_key(out, in, "unattributed_percent");
    sonde_buf_json_number(
        out, sonde__percent(prof->unattributed_ns, prof->total_ns + prof->unattributed_ns),
        JSON_PERCENT_DIGITS);
    sonde_buf_puts(out, ",\n");
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
        sonde__row_t row = sonde__row_of_line(line);
        json_figures(out, prof, &row);
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
    sonde_buf_puts(out, file->n_funcs ? "\n      ]\n" : "]\n");
    sonde_buf_puts(out, "    }");
}

int sonde_report_json(const sonde_profile_t *prof, sonde_buf_t *out)
{
    size_t *order = NULL;
    int rc = sonde__files_by_time(prof, &order);
    if (rc) return rc;

    sonde_buf_puts(out, "{\n");
    json_run(out, prof);
    json_key(out, "  ", "files");
    sonde_buf_putc(out, '{');
    for (size_t i = 0; i < prof->n_files; i++) {
        sonde_buf_puts(out, i ? ",\n" : "\n");
        json_file(out, prof, &prof->files[order[i]]);
    }
    sonde_buf_puts(out, prof->n_files ? "\n  }\n}\n" : "}\n}\n");
    free(order);
    return sonde_buf_error(out);
}
