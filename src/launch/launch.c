/* launch.c — replaces the launcher with the interpreter (see launch.h).
 *
 * Owns: the environment hand-over of `sonde run`. Called by the CLI and by
 * the extension module (`python3 -m sonde run`). Runs in an ordinary
 * process before the program starts; nothing here is signal-safe.
 */
#include "launch.h"

#include "../core/buf.h"
#include "../report/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int sonde_launch_check(const sonde_program_t *prog, const char *outfile, char *err,
                       size_t err_len)
{
    if (prog->script) {
        struct stat st;
        if (stat(prog->script, &st) != 0) {
            int e = errno;
            snprintf(err, err_len, "cannot run '%s': %s", prog->script, strerror(e));
            return -e;
        }
        if (S_ISDIR(st.st_mode)) {
            char main_py[4096];
            snprintf(main_py, sizeof main_py, "%s/__main__.py", prog->script);
            if (access(main_py, R_OK) != 0) {
                snprintf(err, err_len, "cannot run '%s': it is a directory without __main__.py",
                         prog->script);
                return -EISDIR;
            }
        } else if (access(prog->script, R_OK) != 0) {
            int e = errno;
            snprintf(err, err_len, "cannot run '%s': %s", prog->script, strerror(e));
            return -e;
        }
    }
    if (outfile) {
        int rc = sonde_check_output(outfile);
        if (rc < 0) {
            snprintf(err, err_len, "cannot write the report to '%s': %s", outfile,
                     strerror(-rc));
            return rc;
        }
    }
    return 0;
}

/* Sets an environment variable; returns 0 or -errno. */
static int launch_setenv(const char *name, const char *value)
{
    return setenv(name, value, 1) == 0 ? 0 : -errno;
}

int sonde_launch_exec(const char *python, const char *pkg_dir, const char *mode,
                      const sonde_program_t *prog, char *const *tokens, int n_tokens,
                      char *err, size_t err_len)
{
    sonde_buf_t joined = SONDE_BUF_INIT, paths = SONDE_BUF_INIT, pypath = SONDE_BUF_INIT;
    char **argv = NULL;
    int rc = 0;

    for (int i = 0; i < n_tokens; i++) {
        if (strchr(tokens[i], SONDE_TOKEN_SEP)) {
            snprintf(err, err_len, "option '%s' contains a control character", tokens[i]);
            rc = -EINVAL;
            goto error;
        }
        if (i) sonde_buf_putc(&joined, SONDE_TOKEN_SEP);
        sonde_buf_puts(&joined, tokens[i]);
    }
    /* Only the _boot directory (holding sitecustomize.py) goes on the path;
     * the hook finds the package next to itself. */
    sonde_buf_printf(&paths, "%s/_boot", pkg_dir);
    char program[4200];
    if (prog->module)
        snprintf(program, sizeof program, "-m %s", prog->module);
    else
        snprintf(program, sizeof program, "%s", prog->script ? prog->script : "");
    const char *orig = getenv("PYTHONPATH");
    sonde_buf_puts(&pypath, paths.data ? paths.data : "");
    if (orig && *orig) {
        sonde_buf_putc(&pypath, ':');
        sonde_buf_puts(&pypath, orig);
    }
    if (sonde_buf_error(&joined) || sonde_buf_error(&paths) || sonde_buf_error(&pypath)) {
        rc = -ENOMEM;
        snprintf(err, err_len, "out of memory");
        goto error;
    }
    if ((rc = launch_setenv(SONDE_ENV_HAD_PYPATH, orig ? "1" : "0")) ||
        (rc = launch_setenv(SONDE_ENV_PYTHONPATH, orig ? orig : "")) ||
        (rc = launch_setenv(SONDE_ENV_OPTIONS, joined.data ? joined.data : "")) ||
        (rc = launch_setenv(SONDE_ENV_BOOT_PATHS, paths.data)) ||
        (rc = launch_setenv(SONDE_ENV_PROGRAM, program)) ||
        (rc = launch_setenv(SONDE_ENV_MODE, mode)) ||
        (rc = launch_setenv("PYTHONPATH", pypath.data))) {
        snprintf(err, err_len, "cannot set the environment: %s", strerror(-rc));
        goto error;
    }

    int n = prog->module ? prog->argc + 2 : prog->argc + 1;
    argv = calloc((size_t)n + 1, sizeof *argv);
    if (!argv) {
        rc = -ENOMEM;
        snprintf(err, err_len, "out of memory");
        goto error;
    }
    int k = 0;
    argv[k++] = (char *)python;
    if (prog->module) {
        argv[k++] = "-m";
        argv[k++] = (char *)prog->module;
        for (int i = 1; i < prog->argc; i++) argv[k++] = prog->argv[i];
    } else {
        for (int i = 0; i < prog->argc; i++) argv[k++] = prog->argv[i];
    }
    argv[k] = NULL;
    fflush(NULL);
    execv(python, argv);
    rc = -errno;
    snprintf(err, err_len, "cannot start the interpreter '%s': %s", python, strerror(errno));
error:
    free(argv);
    sonde_buf_free(&joined);
    sonde_buf_free(&paths);
    sonde_buf_free(&pypath);
    return rc;
}
