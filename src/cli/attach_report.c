/* attach_report.c — output and messages of `sonde attach/record/dump`.
 *
 * Owns: the writing of what was sampled (src/attach/profile.c builds the
 * model; the format registry, src/report/format.c, renders and writes it),
 * the one-line messages for a process that cannot be attached to, and the
 * progress line on stderr. Called by attach.c on the command's main
 * thread; nothing here runs in a signal handler.
 */
#include "attach_cli.h"

#include "../prim/prim.h"
#include "../report/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REPORT_PROGRESS_PLAIN_NS (5 * SONDE_NS_PER_SEC) /* off a terminal: one line per 5 s */

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

/* Fills what ctx needs beside the defaults: the viewer directory (html;
 * its path is kept in viewer) and the command's gzip (pprof). */
static void report_ctx_fill(sonde_report_ctx_t *ctx, sonde_buf_t *viewer)
{
    ctx->pprof.compress = sonde_cli_gzip;
    char pkg_dir[4096];
    if (sonde_cli_pkg_dir(pkg_dir, sizeof pkg_dir) == 0) {
        sonde_buf_printf(viewer, "%s/viewer", pkg_dir);
        if (!sonde_buf_error(viewer)) ctx->viewer_dir = viewer->data;
    }
}

/* Builds the model of what a sampled into prof (initialised). Returns 0
 * or -errno. */
static int report_build(const sonde_attach_t *a, sonde_profile_t *prof)
{
    int rc = sonde_attach_to_profile(a, NULL, 0, NULL, prof);
    prof->profile_all = a->opts.files.profile_all;
    return rc == 0 ? sonde_profile_finish(prof) : rc;
}

int sonde_attach_cli_render(const sonde_attach_t *a, const sonde_format_t *format, sonde_buf_t *out)
{
    sonde_profile_t prof;
    sonde_report_ctx_t ctx;
    sonde_buf_t viewer = SONDE_BUF_INIT;
    sonde_profile_init(&prof);
    sonde_report_ctx_init(&ctx, -1);
    report_ctx_fill(&ctx, &viewer);
    int rc = report_build(a, &prof);
    if (rc == 0) rc = format->write(&prof, &ctx, out);
    if (rc == 0) rc = sonde_buf_error(out);
    sonde_buf_free(&viewer);
    sonde_profile_free(&prof);
    return rc;
}

int sonde_attach_cli_profile(const sonde_attach_t *a, sonde_profile_t *prof)
{
    return report_build(a, prof);
}

/* Writes prof (finished, or NULL with build_rc the error of building it)
 * as sonde_attach_cli_write says. */
static int report_write(const sonde_profile_t *prof, int build_rc, const sonde_format_t *format,
                        const char *outfile, int fd)
{
    sonde_report_ctx_t ctx;
    sonde_buf_t viewer = SONDE_BUF_INIT;
    const char *what = "build the report";
    /* The terminal decides colour and width only when the output goes to
     * it; a file gets the defaults. */
    sonde_report_ctx_init(&ctx, outfile ? -1 : fd);
    report_ctx_fill(&ctx, &viewer);
    int rc = build_rc;
    if (rc == 0) {
        fflush(stdout);
        rc = sonde_report_emit(format, prof, &ctx, outfile, fd, &what);
    }
    if (rc < 0)
        sonde_cli_error("cannot %s%s%s: %s", what, outfile ? " to " : "", outfile ? outfile : "",
                        strerror(-rc));
    sonde_buf_free(&viewer);
    return rc < 0 ? 1 : 0;
}

int sonde_attach_cli_write_profile(const sonde_profile_t *prof, const sonde_format_t *format,
                                   const char *outfile, int fd)
{
    return report_write(prof, 0, format, outfile, fd);
}

int sonde_attach_cli_write(const sonde_attach_t *a, const sonde_format_t *format,
                           const char *outfile, int fd)
{
    sonde_profile_t prof;
    sonde_profile_init(&prof);
    int rc = report_build(a, &prof);
    rc = report_write(&prof, rc, format, outfile, fd);
    sonde_profile_free(&prof);
    return rc;
}
