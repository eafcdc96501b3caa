/* launch.c — replaces the launcher with the interpreter (see launch.h).
 *
 * Owns: the environment hand-over of `sonde run`. Called by the CLI and by
 * the extension module (`python3 -m sonde run`). Runs in an ordinary
 * process before the program starts; nothing here is signal-safe.
 */
#include "launch.h"

#include "../core/buf.h"
#include "../core/file.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int sonde_launch_check(const sonde_program_t *prog, const char *outfile, char *err, size_t err_len)
{
    if (prog->script && strcmp(prog->script, "-") != 0) {
        struct stat st;
        if (stat(prog->script, &st) != 0) {
            int e = errno;
            snprintf(err, err_len, "cannot run '%s': %s", prog->script, strerror(e));
            return -e;
        }
        if (S_ISDIR(st.st_mode)) {
            sonde_buf_t main_py = SONDE_BUF_INIT;
            sonde_buf_printf(&main_py, "%s/__main__.py", prog->script);
            bool readable = !sonde_buf_error(&main_py) && access(main_py.data, R_OK) == 0;
            sonde_buf_free(&main_py);
            if (!readable) {
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
            snprintf(err, err_len, "cannot write the report to '%s': %s", outfile, strerror(-rc));
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

/* --memory: the allocator shim goes first on LD_PRELOAD, and the user's
 * value travels to the boot hook, which puts it back. Returns 0 or -errno
 * with a message in err. */
static int launch_preload_shim(const char *pkg_dir, char *err, size_t err_len)
{
    sonde_buf_t preload = SONDE_BUF_INIT, shim_path = SONDE_BUF_INIT;
    int rc = 0;
    sonde_buf_printf(&shim_path, "%s/" SONDE_SHIM_NAME, pkg_dir);
    if (sonde_buf_error(&shim_path)) {
        snprintf(err, err_len, "out of memory");
        return -ENOMEM;
    }
    const char *shim = shim_path.data;
    if (access(shim, R_OK) != 0) {
        snprintf(err, err_len, "--memory needs the allocator shim %s, which is missing; run 'make'",
                 shim);
        sonde_buf_free(&shim_path);
        return -ENOENT;
    }
    if (strpbrk(shim, ": \t")) {
        snprintf(err, err_len,
                 "--memory cannot preload the allocator shim from '%s': LD_PRELOAD paths may not "
                 "contain ':' or spaces; move the sonde build elsewhere",
                 shim);
        sonde_buf_free(&shim_path);
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
    sonde_buf_free(&shim_path);
    return rc;
}

static bool launch_signals_blocked;
static sigset_t launch_old_mask; /* the mask before launch_block_signals */

int sonde_launch_block_signals(void)
{
    if (launch_signals_blocked) return 0;
    sigset_t ours;
    sigemptyset(&ours);
    if (sigprocmask(SIG_SETMASK, NULL, &launch_old_mask) != 0) return -errno;
    const int sigs[] = {SIGINT, SIGTERM};
    char list[32] = "";
    for (size_t i = 0; i < SONDE_ARRAY_LEN(sigs); i++) {
        if (sigismember(&launch_old_mask, sigs[i])) continue;
        sigaddset(&ours, sigs[i]);
        size_t len = strlen(list);
        snprintf(list + len, sizeof list - len, "%s%d", len ? "," : "", sigs[i]);
    }
    int rc = launch_setenv(SONDE_ENV_BLOCKED, list);
    if (rc == 0 && sigprocmask(SIG_BLOCK, &ours, NULL) != 0) rc = -errno;
    if (rc == 0) launch_signals_blocked = true;
    return rc;
}

void sonde_launch_unblock_signals(void)
{
    if (!launch_signals_blocked) return;
    launch_signals_blocked = false;
    unsetenv(SONDE_ENV_BLOCKED);
    sigprocmask(SIG_SETMASK, &launch_old_mask, NULL);
}

int sonde_launch_exec(const char *python, const char *pkg_dir, const char *mode,
                      const sonde_program_t *prog, const char *options, bool preload_shim,
                      char *err, size_t err_len)
{
    sonde_buf_t paths = SONDE_BUF_INIT, pypath = SONDE_BUF_INIT, program = SONDE_BUF_INIT;
    char **argv = NULL;
    int rc = 0;

    /* Only the _boot directory (holding sitecustomize.py) goes on the path;
     * the hook finds the package next to itself. */
    sonde_buf_printf(&paths, "%s/_boot", pkg_dir);
    if (prog->module)
        sonde_buf_printf(&program, "-m %s", prog->module);
    else if (prog->command)
        sonde_buf_puts(&program, "-c");
    else
        sonde_buf_puts(&program, prog->script ? prog->script : "");
    const char *orig = getenv("PYTHONPATH");
    sonde_buf_puts(&pypath, paths.data ? paths.data : "");
    if (orig && *orig) {
        sonde_buf_putc(&pypath, ':');
        sonde_buf_puts(&pypath, orig);
    }
    if (sonde_buf_error(&paths) || sonde_buf_error(&pypath) || sonde_buf_error(&program)) {
        rc = -ENOMEM;
        snprintf(err, err_len, "out of memory");
        goto error;
    }
    if ((rc = launch_setenv(SONDE_ENV_HAD_PYPATH, orig ? "1" : "0")) ||
        (rc = launch_setenv(SONDE_ENV_PYTHONPATH, orig ? orig : "")) ||
        (rc = launch_setenv(SONDE_ENV_OPTIONS, options ? options : "")) ||
        (rc = launch_setenv(SONDE_ENV_BOOT_PATHS, paths.data)) ||
        (rc = launch_setenv(SONDE_ENV_PROGRAM, program.data ? program.data : "")) ||
        (rc = launch_setenv(SONDE_ENV_MODE, mode)) ||
        (rc = launch_setenv("PYTHONPATH", pypath.data))) {
        snprintf(err, err_len, "cannot set the environment: %s", strerror(-rc));
        goto error;
    }

    if (preload_shim && (rc = launch_preload_shim(pkg_dir, err, err_len)) < 0) goto error;

    /* -m MODULE / -c CODE, then the arguments after argv[0] */
    const char *flag = prog->module ? "-m" : prog->command ? "-c" : NULL;
    int n = flag ? prog->argc + 2 : prog->argc + 1;
    argv = calloc((size_t)n + 1, sizeof *argv);
    if (!argv) {
        rc = -ENOMEM;
        snprintf(err, err_len, "out of memory");
        goto error;
    }
    int k = 0;
    argv[k++] = (char *)python;
    if (flag) {
        argv[k++] = (char *)flag;
        argv[k++] = (char *)(prog->module ? prog->module : prog->command);
        for (int i = 1; i < prog->argc; i++)
            argv[k++] = prog->argv[i];
    } else {
        for (int i = 0; i < prog->argc; i++)
            argv[k++] = prog->argv[i];
    }
    argv[k] = NULL;
    fflush(NULL);
    if ((rc = sonde_launch_block_signals()) < 0) {
        snprintf(err, err_len, "cannot block signals: %s", strerror(-rc));
        goto error;
    }
    execv(python, argv);
    rc = -errno;
    snprintf(err, err_len, "cannot start the interpreter '%s': %s", python, strerror(-rc));
error:
    sonde_launch_unblock_signals(); /* one that came meanwhile ends the launcher */
    free(argv);
    sonde_buf_free(&paths);
    sonde_buf_free(&pypath);
    sonde_buf_free(&program);
    return rc;
}
