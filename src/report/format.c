/* format.c — the format registry: every report format sonde writes, in one
 * table.
 *
 * Owns: sonde_formats (name, summary, aliases, file name endings, whether
 * the format is built from call stacks, where it goes without -o, its
 * writer), the look-ups by name and by file name, the formats' section of
 * every command's --help (sonde_format_help), the one decision about colour and
 * terminal width, and sonde_report_emit (render, then write to a file or a
 * stream). Every command reaches every format through here: `sonde run`
 * and sonde.start() (through the run options, src/launch/options.c, and
 * src/ext/session.c), `sonde attach/record` and `sonde merge` (through the
 * report options, src/launch/report_options.c; attach_report.c) and `sonde
 * view` (src/cli/view.c, which writes HTML only and uses the table to tell
 * other names apart); their help lists the formats from here. Adding a format is its
 * writer file plus one entry below. Plain C, no libpython; runs on the
 * caller's thread (the session's report may be written on the sampler
 * thread after SIGTERM), never in a signal handler.
 */
#include "report.h"

#include "../core/opt.h"
#include "../prim/prim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define FORMAT_MIN_WIDTH 40 /* a narrower terminal keeps the default width */

/* ---- adapters: every writer behind one signature ------------------------------- */

static int format_text(const sonde_profile_t *prof, const sonde_report_ctx_t *ctx, sonde_buf_t *out)
{
    return sonde_report_text(prof, &ctx->text, out);
}

static int format_json(const sonde_profile_t *prof, const sonde_report_ctx_t *ctx, sonde_buf_t *out)
{
    return sonde_report_json(prof, out);
}

static int format_html(const sonde_profile_t *prof, const sonde_report_ctx_t *ctx, sonde_buf_t *out)
{
    if (!ctx->viewer_dir) return -ENOENT;
    return sonde_report_html(prof, ctx->viewer_dir, out);
}

static int format_folded(const sonde_profile_t *prof, const sonde_report_ctx_t *ctx,
                         sonde_buf_t *out)
{
    return sonde_report_folded(prof, out);
}

static int format_svg(const sonde_profile_t *prof, const sonde_report_ctx_t *ctx, sonde_buf_t *out)
{
    return sonde_report_flamegraph(prof, out);
}

static int format_speedscope(const sonde_profile_t *prof, const sonde_report_ctx_t *ctx,
                             sonde_buf_t *out)
{
    return sonde_report_speedscope(prof, out);
}

static int format_pprof(const sonde_profile_t *prof, const sonde_report_ctx_t *ctx,
                        sonde_buf_t *out)
{
    return sonde_report_pprof(prof, &ctx->pprof, out);
}

/* ---- the table ------------------------------------------------------------------ */

static const char *const format_no_names[] = {NULL};
static const char *const format_text_ext[] = {".txt", NULL};
static const char *const format_json_ext[] = {".json", NULL};
static const char *const format_html_ext[] = {".html", ".htm", NULL};
static const char *const format_folded_alias[] = {"collapsed", NULL};
static const char *const format_folded_ext[] = {".folded", ".collapsed", NULL};
static const char *const format_svg_alias[] = {"flamegraph", NULL};
static const char *const format_svg_ext[] = {".svg", NULL};
static const char *const format_speedscope_ext[] = {".speedscope.json", NULL};
static const char *const format_pprof_ext[] = {".pb.gz", ".pprof", NULL};

/* The first entry is the default. pprof is binary (sonde_buf_t holds any
 * bytes) and drawn from stacks when the profile has them, else from lines:
 * it does not make a command record stacks. */
const sonde_format_t sonde_formats[] = {
    {"text", "the line-level report", format_no_names, format_text_ext, NULL, false, format_text},
    {"json", "the whole profile as JSON (docs/json-format.md)", format_no_names, format_json_ext,
     NULL, false, format_json},
    {"html", "one self-contained page that works offline", format_no_names, format_html_ext,
     "profile.html", false, format_html},
    {"folded", "folded stacks (FlameGraph's input)", format_folded_alias, format_folded_ext, NULL,
     true, format_folded},
    {"svg", "an interactive flame graph", format_svg_alias, format_svg_ext, NULL, true, format_svg},
    {"speedscope", "speedscope's JSON (speedscope.app)", format_no_names, format_speedscope_ext,
     NULL, true, format_speedscope},
    {"pprof",
     "gzipped profile.proto for go tool pprof and Pyroscope-style backends (per line, or from "
     "call stacks when they are recorded)",
     format_no_names, format_pprof_ext, "profile.pb.gz", false, format_pprof},
};
const size_t sonde_n_formats = SONDE_ARRAY_LEN(sonde_formats);

const sonde_format_t *sonde_format_default(void)
{
    return &sonde_formats[0];
}

const sonde_format_t *sonde_format_named(const char *name)
{
    for (size_t i = 0; name && i < sonde_n_formats; i++) {
        const sonde_format_t *f = &sonde_formats[i];
        if (strcmp(name, f->name) == 0) return f;
        for (const char *const *alias = f->aliases; *alias; alias++)
            if (strcmp(name, *alias) == 0) return f;
    }
    return NULL;
}

const sonde_format_t *sonde_format_of_path(const char *path)
{
    const sonde_format_t *best = NULL;
    size_t best_len = 0, n = path ? strlen(path) : 0;
    for (size_t i = 0; path && i < sonde_n_formats; i++) {
        for (const char *const *ext = sonde_formats[i].extensions; *ext; ext++) {
            size_t m = strlen(*ext);
            /* the longest ending wins: .speedscope.json over .json */
            if (n > m && m > best_len && path[n - m - 1] != '/' &&
                strcasecmp(path + n - m, *ext) == 0) {
                best = &sonde_formats[i];
                best_len = m;
            }
        }
    }
    return best;
}

void sonde_format_list(char *buf, size_t len, bool extensions)
{
    size_t used = 0;
    if (!len) return;
    buf[0] = 0;
    for (size_t i = 0; i < sonde_n_formats; i++) {
        const char *const *names = extensions ? sonde_formats[i].extensions : NULL;
        const char *one[] = {sonde_formats[i].name, NULL};
        for (const char *const *w = names ? names : one; *w && used < len; w++) {
            int k = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", *w);
            if (k < 0) return;
            used += (size_t)k;
        }
    }
}

void sonde_format_help(sonde_buf_t *out)
{
    sonde_buf_puts(out, "formats (--format NAME, or the ending of the output's name):\n");
    for (size_t i = 0; i < sonde_n_formats; i++) {
        const sonde_format_t *f = &sonde_formats[i];
        sonde_buf_t label = SONDE_BUF_INIT, text = SONDE_BUF_INIT;
        sonde_buf_puts(&label, f->name);
        for (const char *const *alias = f->aliases; *alias; alias++)
            sonde_buf_printf(&label, ", %s", *alias);
        sonde_buf_puts(&text, f->summary);
        if (f->needs_stacks) sonde_buf_puts(&text, ", drawn from call stacks (it records them)");
        if (f == sonde_format_default()) sonde_buf_puts(&text, "; the default");
        if (f->default_file) sonde_buf_printf(&text, "; default file %s", f->default_file);
        for (const char *const *ext = f->extensions; *ext; ext++)
            sonde_buf_printf(&text, "%s%s", ext == f->extensions ? "; files " : " ", *ext);
        if (sonde_buf_error(&label) || sonde_buf_error(&text))
            out->error = -ENOMEM;
        else
            sonde_opt_help_item(out, label.data, text.data, SONDE_OPT_HELP_COLUMN);
        sonde_buf_free(&label);
        sonde_buf_free(&text);
    }
}

/* ---- colour, width, and where the bytes go ---------------------------------------- */

void sonde_report_ctx_init(sonde_report_ctx_t *ctx, int fd)
{
    memset(ctx, 0, sizeof *ctx);
    sonde_text_opts_default(&ctx->text);
    if (fd < 0) return;
    int width = sonde_prim_terminal_width(fd);
    const char *columns = getenv("COLUMNS");
    if (width <= 0 && columns) width = atoi(columns);
    if (width >= FORMAT_MIN_WIDTH) ctx->text.width = width;
    ctx->text.color = sonde_prim_terminal_color(fd);
}

int sonde_report_emit(const sonde_format_t *format, const sonde_profile_t *prof,
                      const sonde_report_ctx_t *ctx, const char *path, int fd, const char **what)
{
    sonde_buf_t out = SONDE_BUF_INIT;
    *what = "build the report";
    int rc = format->write(prof, ctx, &out);
    if (rc == 0 && sonde_buf_error(&out)) rc = -ENOMEM;
    if (rc == 0) {
        *what = "write the report";
        rc = path ? sonde_write_output(path, out.data ? out.data : "", out.len)
                  : sonde_write_fd(fd, out.data ? out.data : "", out.len);
    }
    sonde_buf_free(&out);
    return rc;
}
