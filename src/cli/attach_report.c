/* attach_report.c — output and messages of `sonde attach/record/dump`.
 *
 * Owns: the choice of output format (--format, or -o's extension), the
 * writing of what was sampled (src/attach/profile.c builds the model,
 * src/report/ writes it), the one-line messages for a process that cannot
 * be attached to, and the progress line on stderr. Called by attach.c on
 * the command's main thread; nothing here runs in a signal handler.
 *
 * Formats by extension: .svg -> svg; .folded, .collapsed -> folded;
 * .speedscope.json -> speedscope; .json -> json (the line report, as
 * `sonde run --json`); .txt -> text (the terminal report). Anything else
 * needs --format.
 */
#include "attach_cli.h"

#include "../prim/prim.h"
#include "../report/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define REPORT_PROGRESS_PLAIN_NS (5 * SONDE_NS_PER_SEC) /* off a terminal: one line per 5 s */

static const struct {
    const char *name;
    sonde_attach_format_t format;
} report_formats[] = {
    {"text", SONDE_AFMT_TEXT},
    {"json", SONDE_AFMT_JSON},
    {"folded", SONDE_AFMT_FOLDED},
    {"collapsed", SONDE_AFMT_FOLDED},
    {"svg", SONDE_AFMT_SVG},
    {"flamegraph", SONDE_AFMT_SVG},
    {"speedscope", SONDE_AFMT_SPEEDSCOPE},
};

sonde_attach_format_t sonde_attach_cli_format_named(const char *name)
{
    for (size_t i = 0; name && i < SONDE_ARRAY_LEN(report_formats); i++)
        if (strcmp(name, report_formats[i].name) == 0) return report_formats[i].format;
    return SONDE_AFMT_NONE;
}

const char *sonde_attach_cli_format_name(sonde_attach_format_t format)
{
    for (size_t i = 0; i < SONDE_ARRAY_LEN(report_formats); i++)
        if (report_formats[i].format == format) return report_formats[i].name;
    return "?";
}

static bool report_ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n > m && strcasecmp(s + n - m, suffix) == 0;
}

sonde_attach_format_t sonde_attach_cli_format_of_path(const char *path)
{
    if (!path) return SONDE_AFMT_NONE;
    if (report_ends_with(path, ".svg")) return SONDE_AFMT_SVG;
    if (report_ends_with(path, ".folded") || report_ends_with(path, ".collapsed"))
        return SONDE_AFMT_FOLDED;
    if (report_ends_with(path, ".speedscope.json")) return SONDE_AFMT_SPEEDSCOPE;
    if (report_ends_with(path, ".json")) return SONDE_AFMT_JSON;
    if (report_ends_with(path, ".txt")) return SONDE_AFMT_TEXT;
    return SONDE_AFMT_NONE;
}

/* ---- messages -------------------------------------------------------------------- */

static void report_permission_error(pid_t pid)
{
    int scope = sonde_prim_ptrace_scope();
    const char *yama = "";
    switch (scope) {
    case 1:
        yama = "; kernel.yama.ptrace_scope is 1, so only a parent may read its children: use "
               "sudo, 'sudo sysctl kernel.yama.ptrace_scope=0', or start the program under "
               "'sonde record'";
        break;
    case 2:
        yama = "; kernel.yama.ptrace_scope is 2, so only root (CAP_SYS_PTRACE) may";
        break;
    case 3:
        yama = "; kernel.yama.ptrace_scope is 3: attaching is disabled until reboot";
        break;
    default:
        break;
    }
    sonde_cli_error("cannot attach to pid %d: permission denied (reading another process's "
                    "memory needs ptrace access: run sonde as the same user as the target, or "
                    "as root%s; in a container, grant CAP_SYS_PTRACE, e.g. docker run "
                    "--cap-add SYS_PTRACE)",
                    (int)pid, yama);
}

void sonde_attach_cli_open_error(pid_t pid, int rc, const char *version)
{
    char exe[4096] = "";
    switch (rc) {
    case -ESRCH:
        sonde_cli_error("cannot attach to pid %d: no such process", (int)pid);
        break;
    case -EPERM:
    case -EACCES:
        report_permission_error(pid);
        break;
    case -ENOEXEC: {
        const char *name = "";
        if (sonde_prim_proc_exe(pid, exe, sizeof exe) == 0) {
            name = strrchr(exe, '/');
            name = name ? name + 1 : exe;
        }
        sonde_cli_error("pid %d%s%s%s is not a Python process (no libpython and no Python "
                        "executable with _PyRuntime is mapped in it)",
                        (int)pid, name[0] ? " (" : "", name, name[0] ? ")" : "");
        break;
    }
    case -ENOTSUP: {
        int major = 0, minor = 0, micro = 0;
        char why[256];
        if (version) sscanf(version, "%d.%d.%d", &major, &minor, &micro);
        sonde_pyversion_unsupported_text(why, sizeof why, major, minor, micro);
        sonde_cli_error("pid %d runs %s", (int)pid, why);
        break;
    }
    default:
        sonde_cli_error("cannot attach to pid %d: %s", (int)pid, strerror(-rc));
        break;
    }
}

/* ---- progress ---------------------------------------------------------------------- */

static bool report_progress_shown;      /* a progress line is on the terminal */
static sonde_ns_t report_progress_next; /* off a terminal: next line due */

void sonde_attach_cli_progress(const sonde_attach_progress_t *p, void *arg)
{
    (void)arg;
    bool tty = isatty(2);
    if (!tty) {
        sonde_ns_t now = sonde_prim_monotonic_ns();
        if (!report_progress_next) report_progress_next = now + REPORT_PROGRESS_PLAIN_NS;
        if (now < report_progress_next) return;
        report_progress_next = now + REPORT_PROGRESS_PLAIN_NS;
    }
    fprintf(stderr, "%ssonde: %llu samples, %.1f s, %llu error%s", tty ? "\r" : "",
            (unsigned long long)p->samples, p->elapsed_sec, (unsigned long long)p->errors,
            p->errors == 1 ? "" : "s");
    if (p->processes > 1) fprintf(stderr, ", %d processes", p->processes);
    fputs(tty ? "   " : "\n", stderr);
    fflush(stderr);
    report_progress_shown = tty;
}

void sonde_attach_cli_progress_end(void)
{
    if (report_progress_shown) fputc('\n', stderr);
    report_progress_shown = false;
}

/* ---- writing ------------------------------------------------------------------------- */

static int report_render(const sonde_profile_t *prof, sonde_attach_format_t format, int fd,
                         bool to_file, sonde_buf_t *out)
{
    switch (format) {
    case SONDE_AFMT_JSON:
        return sonde_report_json(prof, out);
    case SONDE_AFMT_FOLDED:
        return sonde_report_folded(prof, out);
    case SONDE_AFMT_SVG:
        return sonde_report_flamegraph(prof, out);
    case SONDE_AFMT_SPEEDSCOPE:
        return sonde_report_speedscope(prof, out);
    default: {
        sonde_text_opts_t topts;
        sonde_text_opts_default(&topts);
        if (!to_file) {
            int width = sonde_prim_terminal_width(fd);
            const char *columns = getenv("COLUMNS");
            if (width <= 0 && columns) width = atoi(columns);
            if (width >= 40) topts.width = width;
            topts.color = sonde_prim_terminal_color(fd);
        }
        return sonde_report_text(prof, &topts, out);
    }
    }
}

int sonde_attach_cli_write(const sonde_attach_t *a, sonde_attach_format_t format,
                           const char *outfile, int fd)
{
    sonde_profile_t prof;
    sonde_buf_t out = SONDE_BUF_INIT;
    const char *what = "build the report";
    sonde_profile_init(&prof);
    int rc = sonde_attach_to_profile(a, NULL, 0, NULL, &prof);
    if (rc == 0) rc = sonde_profile_finish(&prof);
    if (rc == 0) rc = report_render(&prof, format, fd, outfile != NULL, &out);
    if (rc == 0) {
        what = "write the report";
        fflush(stdout);
        rc = outfile ? sonde_write_output(outfile, out.data ? out.data : "", out.len)
                     : sonde_write_fd(fd, out.data ? out.data : "", out.len);
    }
    if (rc < 0)
        sonde_cli_error("cannot %s%s%s: %s", what, outfile ? " to " : "", outfile ? outfile : "",
                        strerror(-rc));
    sonde_buf_free(&out);
    sonde_profile_free(&prof);
    return rc < 0 ? 1 : 0;
}
