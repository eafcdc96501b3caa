/* report.h — the writers that turn a sonde_profile_t into reports.
 *
 * Owns: the one small interface every output format implements. Writers
 * only read the model; they never print on their own (the caller chooses
 * where the bytes go) and return 0 or -errno. Plain C, no libpython.
 */
#ifndef SONDE_REPORT_H
#define SONDE_REPORT_H

#include "../core/buf.h"
#include "../model/model.h"
#include "../prim/file.h"

typedef struct sonde_text_opts {
    double cpu_percent_threshold; /* lines below this share are hidden (1.0) */
    bool all_lines;               /* show every line of every profiled file */
    bool color;                   /* ANSI colours (caller decided: TTY and no NO_COLOR) */
    int width;                    /* terminal width in columns (>= 40) */
} sonde_text_opts_t;

/* Fills opts with the defaults above (width 100, no colour). */
void sonde_text_opts_default(sonde_text_opts_t *opts);

/* Terminal report. Appends to out. Returns 0 or -ENOMEM. An empty profile
 * (total_ns 0) gives a line or two "sonde: no samples...": the program
 * failed (when the profile knows its exit), how much time was outside the
 * profiled files and which option shows it, or else that the program ran
 * for less than one sampling interval. opts NULL means
 * the defaults; width is clamped to 40..1000 columns. */
int sonde_report_text(const sonde_profile_t *prof, const sonde_text_opts_t *opts, sonde_buf_t *out);

/* JSON report (docs/json-format.md). Appends to out. Returns 0 or -ENOMEM. */
int sonde_report_json(const sonde_profile_t *prof, sonde_buf_t *out);

/* Writing the finished bytes to a file or stream is the file
 * service (sonde_write_output and friends, prim/file.h), included here for
 * the writers' callers. */

/* HTML report (html.c): one self-contained page — the JSON report embedded,
 * the viewer's CSS and JS (every *.css and *.js file of viewer_dir, by
 * name) inlined, no network access. viewer_dir is <package>/viewer
 * (sonde_ext_pkg_dir, sonde_cli_pkg_dir). Appends to out; on error out is
 * left as it was. Returns 0, -ENOMEM, -ENOENT (no viewer in viewer_dir),
 * -EINVAL (a viewer file contains "</script", "</style" or "<!--") or
 * another -errno from reading viewer_dir. */
int sonde_report_html(const sonde_profile_t *prof, const char *viewer_dir, sonde_buf_t *out);

/* The same page around a JSON text that is already known to be a profile:
 * every '<', '>' and '&' byte of it is embedded as \u003c, \u003e, \u0026
 * (valid in JSON strings, impossible outside them), so no text can leave
 * the data element. Does not validate; errors as sonde_report_html. */
int sonde_report_html_page(const char *json_text, size_t len, const char *viewer_dir,
                           sonde_buf_t *out);

/* `sonde view` (html_json.c, linked into the command only: it parses with
 * cJSON): checks that json_text is JSON with a "files" object of file
 * entries (as sonde and Scalene write), then builds the page. A leading
 * UTF-8 byte-order mark is skipped. Returns 0; -EBADMSG (not JSON) or
 * -EPROTO (JSON, but not a profile), with a one-line reason in why; or an
 * error of sonde_report_html_page. why may be NULL. */
int sonde_report_html_from_json(const char *json_text, size_t len, const char *viewer_dir,
                                sonde_buf_t *out, char *why, size_t why_len);

/* One span (a test, `pytest --sonde-per-test`): a first line with its
 * wall time and name, then its n_lines lines of most time, each with its
 * share of the span's sampled time, file (relative to cwd when inside it),
 * line, function and source text, and a last line with the share outside
 * the profiled files when that is 1 % or more; every line sanitised and
 * clipped to width columns (at least 40), without colour. prof is built
 * from the span's samples alone. Appends to out. Returns 0 or -ENOMEM. */
int sonde_report_span_text(sonde_buf_t *out, const char *name, double wall_sec,
                           const sonde_profile_t *prof, const char *cwd, int n_lines, int width);

/* ---- call stacks (sonde attach/record; prof->stacks, prof->frames) ------
 * Each writer appends to out and returns 0 or -ENOMEM; a profile without
 * stacks gives a valid, empty document of its format. Names are untrusted
 * and escaped for each format (see each file's banner). */

/* Folded stacks (Brendan Gregg): "root;...;leaf count" per line, frames as
 * "func (file:line)", the thread's name first when stacks are per thread. */
int sonde_report_folded(const sonde_profile_t *prof, sonde_buf_t *out);

/* A self-contained interactive flame graph (SVG with its own script: hover,
 * click to zoom, search; nothing loaded from the network). */
int sonde_report_flamegraph(const sonde_profile_t *prof, sonde_buf_t *out);

/* speedscope's file format: shared frames and one sampled profile per
 * thread (one for the program when stacks are merged). */
int sonde_report_speedscope(const sonde_profile_t *prof, sonde_buf_t *out);

/* Reads a JSON profile as json.c writes it (docs/json-format.md) into
 * prof, which must be empty (sonde_profile_init): run information, exit,
 * partial counts, processes, memory and the sources' figures with timelines, files
 * with lines, functions, leaks and source, call stacks with threads.
 * Percentages become times through profiled_time_sec. json_load.c, linked
 * into the command only (cJSON). A leading UTF-8 BOM is skipped. Returns 0;
 * -EINVAL with a one-line reason in err (not UTF-8, not JSON, a field of
 * the wrong type, a number out of its bounds) and prof left empty; or
 * -ENOMEM (prof left empty). err may be NULL. */
int sonde_profile_load_json(sonde_profile_t *prof, const char *text, size_t len, char *err,
                            size_t err_len);

/* ---- pprof (pprof.c) -----------------------------------------------------
 * profile.proto (https://github.com/google/pprof/blob/main/proto/profile.proto),
 * gzipped by the caller's compress callback. */

/* Compresses len bytes of data as gzip (RFC 1952) and appends them to out.
 * Returns 0 or -errno; -ENOSYS (no compressor here: out unchanged) has
 * the writer append the plain protobuf instead. The command gives one built on zlib
 * (src/cli/gzip.c); the extension module one that calls the interpreter's
 * own zlib module (src/ext/gzip.c), so that the module links no zlib. */
typedef int (*sonde_compress_fn)(const void *data, size_t len, sonde_buf_t *out, void *arg);

typedef struct sonde_pprof_opts {
    sonde_compress_fn compress; /* NULL: plain protobuf (pprof reads it too) */
    void *compress_arg;
    const char *count_type; /* the first sample type (NULL: "samples";
                               `sonde trace`: "calls") */
    int64_t time_nanos;     /* when profiling started (Unix ns); 0: now
                               less the profile's elapsed time */
    /* The single-process profiles a merged profile was made of (the
     * collector's; NULL: none): without call stacks, the line samples come
     * from each of them with its process's pid label, so that a backend
     * can tell the processes apart; the header still comes from the merged
     * profile. Each part's pid is its one process's. */
    const sonde_profile_t *parts;
    size_t n_parts;
} sonde_pprof_opts_t;

/* pprof's profile (see pprof.c's banner for what goes in). Appends to out;
 * on error out is left as it was. Returns 0, -ENOMEM or the compress
 * callback's error. */
int sonde_report_pprof(const sonde_profile_t *prof, const sonde_pprof_opts_t *opts,
                       sonde_buf_t *out);

/* ---- the format registry (format.c) -------------------------------------
 * One table of every format; every command picks from it (by --format, or
 * by the output file's name) and writes through sonde_report_emit. A new
 * format is its writer file plus one entry in format.c's table. */

/* What a writer may need besides the profile. */
typedef struct sonde_report_ctx {
    sonde_text_opts_t text;   /* the terminal report's options (sonde_report_ctx_init) */
    const char *viewer_dir;   /* html: <package>/viewer, borrowed; NULL: html fails */
    sonde_pprof_opts_t pprof; /* pprof: compression (the caller's), sample names */
} sonde_report_ctx_t;

typedef struct sonde_format {
    const char *name;              /* as --format takes it */
    const char *summary;           /* what it is, for the help (one phrase) */
    const char *const *aliases;    /* other names --format takes; NULL-terminated */
    const char *const *extensions; /* file name endings that choose it (matched
                                      without case, longest first); NULL-terminated */
    const char *default_file;      /* written there when no output is named
                                      (html: profile.html); NULL: the command's stream */
    bool needs_stacks;             /* drawn from call stacks: a command that
                                      picks it records them */
    /* Appends the report to out. Returns 0 or -errno. */
    int (*write)(const sonde_profile_t *prof, const struct sonde_report_ctx *ctx, sonde_buf_t *out);
} sonde_format_t;

extern const sonde_format_t sonde_formats[];
extern const size_t sonde_n_formats;

/* The format when nothing says otherwise (text). */
const sonde_format_t *sonde_format_default(void);
/* The format called name (or one of its aliases); NULL when none is. */
const sonde_format_t *sonde_format_named(const char *name);
/* The format path's ending asks for (".svg", ".speedscope.json", ...);
 * NULL when it names none. */
const sonde_format_t *sonde_format_of_path(const char *path);
/* Writes "text, json, ..." (the names, or with extensions the file name
 * endings) into buf for messages and help; cut to len. */
void sonde_format_list(char *buf, size_t len, bool extensions);
/* Appends the help's section on the formats (every format with its
 * aliases, summary, file name endings and default file), for every
 * command's --help. Check sonde_buf_error. */
void sonde_format_help(sonde_buf_t *out);

/* The one colour and width decision: fills ctx with the defaults and, when
 * the report goes to fd (>= 0; -1 for a file), that terminal's width (else
 * $COLUMNS) and colour (a terminal, NO_COLOR unset, TERM not dumb). */
void sonde_report_ctx_init(sonde_report_ctx_t *ctx, int fd);

/* Renders prof in format and writes it to path (sonde_write_output) or,
 * when path is NULL, to fd. Returns 0 or -errno; *what names the step that
 * failed ("build the report", "write the report"). */
int sonde_report_emit(const sonde_format_t *format, const sonde_profile_t *prof,
                      const sonde_report_ctx_t *ctx, const char *path, int fd, const char **what);

#endif
