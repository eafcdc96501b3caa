/* launch.c — replaces the launcher with the interpreter (see launch.h).
 *
 * Owns: the environment hand-over of `sonde run`. Called by the CLI and by
 * the extension module (`python3 -m sonde run`). Runs in an ordinary
 * process before the program starts; nothing here is signal-safe.
 */
#include "launch.h"

#include "../core/buf.h"
#include "../core/file.h"

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

/* Whether a `run` asks for memory profiling: its option tokens parsed
 * again (on copies: the parser splits lists in place). */
static bool launch_wants_memory(const char *mode, char *const *tokens, int n_tokens)
{
    char *copies[256];
    int n = n_tokens < 256 ? n_tokens : 256;
    bool memory = false;
    if (strcmp(mode, "run") != 0) return false;
    for (int i = 0; i < n; i++) copies[i] = strdup(tokens[i]);
    sonde_run_opts_t opts;
    sonde_run_opts_default(&opts);
    bool copied = true;
    for (int i = 0; i < n; i++) copied = copied && copies[i];
    if (copied && sonde_run_opts_parse(&opts, n, copies, false, NULL, 0) == 0) memory = opts.memory;
    for (int i = 0; i < n; i++) free(copies[i]);
    return memory;
}

/* --memory: the allocator shim goes first on LD_PRELOAD, and the user's
 * value travels to the boot hook, which puts it back. Returns 0 or -errno
 * with a message in err. */
static int launch_preload_shim(const char *pkg_dir, char *err, size_t err_len)
{
    sonde_buf_t preload = SONDE_BUF_INIT;
    char shim[4200];
    int rc = 0;
    snprintf(shim, sizeof shim, "%s/" SONDE_SHIM_NAME, pkg_dir);
    if (access(shim, R_OK) != 0) {
        snprintf(err, err_len, "--memory needs the allocator shim %s, which is missing; run 'make'",
                 shim);
        return -ENOENT;
    }
    if (strpbrk(shim, ": \t")) {
        snprintf(err, err_len,
                 "--memory cannot preload the allocator shim from '%s': LD_PRELOAD paths may not "
                 "contain ':' or spaces; move the sonde build elsewhere",
                 shim);
        return -EINVAL;
    }
    const char *orig = getenv("LD_PRELOAD");
    sonde_buf_puts(&preload, shim);
    if (orig && *orig) {
        sonde_buf_putc(&preload, ':');
        sonde_buf_puts(&preload, orig);
    }
    if (sonde_buf_error(&preload)) {
        snprintf(err, err_len, "out of memory");
        rc = -ENOMEM;
    } else if ((rc = launch_setenv(SONDE_ENV_HAD_PRELOAD, orig ? "1" : "0")) ||
               (rc = launch_setenv(SONDE_ENV_PRELOAD, orig ? orig : "")) ||
               (rc = launch_setenv("LD_PRELOAD", preload.data))) {
        snprintf(err, err_len, "cannot set the environment: %s", strerror(-rc));
    }
    sonde_buf_free(&preload);
    return rc;
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

    if (launch_wants_memory(mode, tokens, n_tokens) &&
        (rc = launch_preload_shim(pkg_dir, err, err_len)) < 0)
        goto error;

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
