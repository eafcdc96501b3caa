/* merge.c — `sonde merge`: add JSON profiles up into one report.
 *
 * Owns: the CLI side of `sonde merge A.json B.json ... [-o FILE]
 * [--format NAME]` (the report options every command shares,
 * src/launch/report_options.c; the grammar is src/core/opt.c's): reads
 * each profile (sonde_profile_load_json, cJSON), adds them up (sonde_profile_merge: the same file, line and function add,
 * processes are appended) and writes the report in the format --format
 * names, else the one -o's ending names (the format registry), else the
 * terminal report on standard output. A file is written atomically
 * (sonde_report_emit); on any bad input nothing is written. Linked into
 * build/bin/sonde only (it needs libcjson). No signal handlers.
 */
#include "cli.h"

#include "../core/opt.h"
#include "../launch/report_options.h"
#include "../report/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MERGE_MAX_INPUT ((size_t)1 << 30) /* a profile larger than 1 GiB is refused */

typedef struct merge_args {
    const char **inputs; /* borrowed from argv */
    int n_inputs;
    const char *outfile;
    const sonde_format_t *format;
} merge_args_t;

static const sonde_opt_family_t *const merge_families[] = {&sonde_report_format_options,
                                                           &sonde_report_output_options, NULL};

/* A profile to add (inputs has room for every word). */
static int merge_positional(void *arg, const char *word, char *err, size_t err_len)
{
    merge_args_t *args = arg;
    args->inputs[args->n_inputs++] = word;
    return 1;
}

static const sonde_opt_cmd_t merge_command = {
    "merge",
    "usage: sonde merge [-o FILE] [--format NAME] profile.json profile.json ...\n"
    "\n"
    "Adds JSON profiles (written by 'sonde run --json', 'sonde attach -o x.json')\n"
    "up into one report: the same file, line and function add up across the\n"
    "profiles (runs on several hosts, or processes of one program), and the\n"
    "report lists every process profiled. Percentages are of all the profiles'\n"
    "time together. Without -o (or with -o -) the report goes to standard\n"
    "output, as text unless --format says.\n",
    NULL,
    merge_families,
    false,
    merge_positional,
};

static void merge_help(sonde_buf_t *out)
{
    sonde_opt_help(&merge_command, out);
}

/* Returns 0, 1 for --help (usage printed by the caller) or -1 after
 * printing an error. */
static int merge_parse(int argc, char **argv, merge_args_t *args)
{
    sonde_report_choice_t report = {0};
    void *targets[] = {&report, &report};
    sonde_opt_ctx_t ctx = {.targets = targets, .arg = args};
    char err[512] = "";
    args->inputs = calloc((size_t)(argc ? argc : 1), sizeof *args->inputs);
    if (!args->inputs) {
        sonde_cli_error("out of memory");
        return -1;
    }
    if (sonde_opt_parse(&merge_command, &ctx, argc, argv, err, sizeof err) < 0) {
        sonde_cli_error("%s", err);
        return -1;
    }
    if (ctx.help) return 1;
    if (!args->n_inputs) {
        sonde_cli_error("no profiles given: sonde merge A.json B.json ... -o merged.json");
        return -1;
    }
    args->outfile = report.outfile;
    args->format = report.format;
    char names[512];
    if (!args->format && args->outfile && strcmp(args->outfile, "-") != 0 &&
        !(args->format = sonde_format_of_path(args->outfile))) {
        sonde_format_list(names, sizeof names, true);
        sonde_cli_error("cannot tell the format from the name '%s'; use an extension (%s) or "
                        "--format",
                        args->outfile, names);
        return -1;
    }
    if (!args->format) args->format = sonde_format_default();
    return 0;
}

/* Reads and adds the profile at path into merged. Returns 0, or -1 after
 * printing the error. */
static int merge_one(const char *path, sonde_profile_t *merged)
{
    sonde_buf_t text = SONDE_BUF_INIT;
    sonde_profile_t prof;
    char why[320] = "";
    sonde_profile_init(&prof);
    int rc = sonde_buf_read_file(&text, path, MERGE_MAX_INPUT, NULL);
    if (rc < 0) {
        sonde_cli_error("cannot read %s: %s", path,
                        rc == -EFBIG    ? "larger than 1 GiB, not a profile"
                        : rc == -EINVAL ? "not a regular file"
                                        : strerror(-rc));
        goto done;
    }
    rc = sonde_profile_load_json(&prof, text.data ? text.data : "", text.len, why, sizeof why);
    if (rc == -EINVAL) {
        /* what to do: merge reads the JSON every command writes */
        sonde_cli_error("%s is not a sonde JSON profile: %s; merge reads the JSON of 'sonde run "
                        "--json -o FILE' (or attach/record --json), then writes any format "
                        "with -o",
                        path, why);
        goto done;
    }
    if (rc == 0) rc = sonde_profile_merge(merged, &prof);
    if (rc < 0) sonde_cli_error("cannot merge %s: %s", path, strerror(-rc));
done:
    sonde_profile_free(&prof);
    sonde_buf_free(&text);
    return rc < 0 ? -1 : 0;
}

int sonde_cli_merge(int argc, char **argv)
{
    merge_args_t args = {0};
    sonde_profile_t merged;
    sonde_buf_t viewer = SONDE_BUF_INIT;
    char pkg_dir[4096];
    int status = 1;
    sonde_profile_init(&merged);

    int parsed = merge_parse(argc, argv, &args);
    if (parsed != 0) {
        status = parsed > 0 ? sonde_cli_help(merge_help) : 2;
        goto done;
    }
    for (int i = 0; i < args.n_inputs; i++)
        if (merge_one(args.inputs[i], &merged) < 0) goto done;

    const char *outfile = args.outfile && strcmp(args.outfile, "-") != 0 ? args.outfile : NULL;
    sonde_report_ctx_t ctx;
    sonde_report_ctx_init(&ctx, outfile ? -1 : STDOUT_FILENO);
    if (sonde_cli_pkg_dir(pkg_dir, sizeof pkg_dir) == 0) {
        sonde_buf_printf(&viewer, "%s/viewer", pkg_dir);
        if (!sonde_buf_error(&viewer)) ctx.viewer_dir = viewer.data;
    }
    const char *what = "build the report";
    int rc = sonde_report_emit(args.format, &merged, &ctx, outfile, STDOUT_FILENO, &what);
    if (rc < 0) {
        sonde_cli_error("cannot %s%s%s: %s", what, outfile ? " to " : "", outfile ? outfile : "",
                        strerror(-rc));
        goto done;
    }
    status = 0;
done:
    sonde_buf_free(&viewer);
    sonde_profile_free(&merged);
    free(args.inputs);
    return status;
}
