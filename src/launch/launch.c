/* launch.c — replaces the launcher with the interpreter (see launch.h).
 *
 * Owns: the environment hand-over of `sonde run`. Called by the CLI and by
 * the extension module (`python3 -m sonde run`). Runs in an ordinary
 * process before the program starts; nothing here is signal-safe.
 */
#include "launch.h"

#include "../core/buf.h"
#include "../prim/file.h"

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
static const char *launch_self_get(void *ctx, const char *name)
{
    return getenv(name);
}

static int launch_self_set(void *ctx, const char *name, const char *value)
{
    return setenv(name, value, 1) == 0 ? 0 : -errno;
}

static int launch_setenv(const char *name, const char *value)
{
    return launch_self_set(NULL, name, value);
}

/* --memory: the allocator shim goes first on LD_PRELOAD, and the user's
 * value travels to the boot hook, which puts it back. Returns 0 or -errno
 * with a message in err. */
static int launch_preload_shim(const sonde_launch_env_t *env, const char *pkg_dir, char *err,
                               size_t err_len)
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
    const char *orig = env->get(env->ctx, "LD_PRELOAD");
    sonde_buf_puts(&preload, shim);
    if (orig && *orig) {
        sonde_buf_putc(&preload, ':');
        sonde_buf_puts(&preload, orig);
    }
    if (sonde_buf_error(&preload)) {
        snprintf(err, err_len, "out of memory");
        rc = -ENOMEM;
    } else if ((rc = env->set(env->ctx, SONDE_ENV_HAD_PRELOAD, orig ? "1" : "0")) ||
               (rc = env->set(env->ctx, SONDE_ENV_PRELOAD, orig ? orig : "")) ||
               (rc = env->set(env->ctx, "LD_PRELOAD", preload.data))) {
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

int sonde_launch_handover(const sonde_launch_env_t *env, const char *pkg_dir, const char *mode,
                          const char *program, const char *options, bool preload_shim, char *err,
                          size_t err_len)
{
    sonde_buf_t paths = SONDE_BUF_INIT, pypath = SONDE_BUF_INIT;
    int rc = 0;

    /* Only the _boot directory (holding sitecustomize.py) goes on the path;
     * the hook finds the package next to itself. */
    sonde_buf_printf(&paths, "%s/_boot", pkg_dir);
    const char *orig = env->get(env->ctx, "PYTHONPATH");
    sonde_buf_puts(&pypath, paths.data ? paths.data : "");
    if (orig && *orig) {
        sonde_buf_putc(&pypath, ':');
        sonde_buf_puts(&pypath, orig);
    }
    if (sonde_buf_error(&paths) || sonde_buf_error(&pypath)) {
        rc = -ENOMEM;
        snprintf(err, err_len, "out of memory");
        goto done;
    }
    /* (orig is read before PYTHONPATH is set: set last) */
    if ((rc = env->set(env->ctx, SONDE_ENV_HAD_PYPATH, orig ? "1" : "0")) ||
        (rc = env->set(env->ctx, SONDE_ENV_PYTHONPATH, orig ? orig : "")) ||
        (rc = env->set(env->ctx, SONDE_ENV_OPTIONS, options ? options : "")) ||
        (rc = env->set(env->ctx, SONDE_ENV_BOOT_PATHS, paths.data)) ||
        (rc = env->set(env->ctx, SONDE_ENV_PROGRAM, program)) ||
        (rc = env->set(env->ctx, SONDE_ENV_MODE, mode)) ||
        (rc = env->set(env->ctx, "PYTHONPATH", pypath.data))) {
        snprintf(err, err_len, "cannot set the environment: %s", strerror(-rc));
        goto done;
    }
    if (preload_shim) rc = launch_preload_shim(env, pkg_dir, err, err_len);
done:
    sonde_buf_free(&paths);
    sonde_buf_free(&pypath);
    return rc;
}

int sonde_launch_exec(const char *python, const char *pkg_dir, const char *mode,
                      const sonde_program_t *prog, const char *options, bool preload_shim,
                      char *err, size_t err_len)
{
    sonde_buf_t program = SONDE_BUF_INIT;
    const sonde_launch_env_t self = {launch_self_get, launch_self_set, NULL};
    char **argv = NULL;
    int rc = 0;

    if (prog->module)
        sonde_buf_printf(&program, "-m %s", prog->module);
    else if (prog->command)
        sonde_buf_puts(&program, "-c");
    else
        sonde_buf_puts(&program, prog->script ? prog->script : "");
    if (sonde_buf_error(&program)) {
        rc = -ENOMEM;
        snprintf(err, err_len, "out of memory");
        goto error;
    }
    rc = sonde_launch_handover(&self, pkg_dir, mode, program.data ? program.data : "", options,
                               preload_shim, err, err_len);
    if (rc < 0) goto error;

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
    sonde_buf_free(&program);
    return rc;
}

int sonde_launch_exec_name(const char *base, int gen, sonde_buf_t *out)
{
    const char *slash = strrchr(base, '/');
    const char *dot = strrchr(slash ? slash + 1 : base, '.');
    if (!dot || dot == (slash ? slash + 1 : base)) dot = base + strlen(base);
    sonde_buf_printf(out, "%.*s.exec%d%s", (int)(dot - base), base, gen, dot);
    return sonde_buf_error(out) ? -ENOMEM : 0;
}

/* ---- a Python command line -------------------------------------------------- */

int sonde_launch_program_word(int argc, char *const *argv, sonde_buf_t *out)
{
    /* Python's one-letter options taking a value (in the same word or the
     * next), and those taking none; anything else is not understood. */
    static const char with_value[] = "WX";
    static const char without[] = "bBdEhiIOPqRsSuvVx?";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!a) return -EINVAL;
        if (strcmp(a, "-") == 0 || a[0] != '-') {
            sonde_buf_puts(out, a);
            return sonde_buf_error(out) ? -ENOMEM : 0;
        }
        if (strcmp(a, "--") == 0) {
            if (i + 1 >= argc || !argv[i + 1]) return -EINVAL;
            sonde_buf_puts(out, argv[i + 1]);
            return sonde_buf_error(out) ? -ENOMEM : 0;
        }
        if (a[1] == '-') {
            if (strcmp(a, "--check-hash-based-pycs") == 0) {
                i++;
                continue;
            }
            return -EINVAL; /* --help, --version...: no program runs */
        }
        for (const char *c = a + 1; *c; c++) {
            if (*c == 'c') {
                sonde_buf_puts(out, "-c");
                return sonde_buf_error(out) ? -ENOMEM : 0;
            }
            if (*c == 'm') {
                const char *module = c[1] ? c + 1 : i + 1 < argc ? argv[i + 1] : NULL;
                if (!module || !*module) return -EINVAL;
                sonde_buf_printf(out, "-m %s", module);
                return sonde_buf_error(out) ? -ENOMEM : 0;
            }
            if (strchr(with_value, *c)) {
                if (!c[1]) i++; /* the value is the next word */
                break;
            }
            if (!strchr(without, *c)) return -EINVAL;
        }
    }
    return -EINVAL; /* the interactive prompt */
}
