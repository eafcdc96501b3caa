/* start.c — the common start of `sonde run` and `sonde trace`: the
 * package beside this command, the interpreter, the exec.
 *
 * Owns: sonde_cli_pkg_dir and sonde_cli_pkg_dir_nth (where the sonde
 * package lies below this command's prefix: the build tree, `make
 * install`, pip's site-packages), and sonde_cli_launch (checks, finds the
 * package and an interpreter it has a module for, runs the caller's step
 * before the exec, then replaces this process with the interpreter:
 * src/launch/launch.c). The command only; ordinary code.
 */
#include "cli.h"

#include "../core/common.h"
#include "../launch/launch.h"
#include "../prim/prim.h"

#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where the package may lie below <prefix>, this command being
 * <prefix>/bin/sonde, in the order tried; glob patterns, a match being a
 * directory that holds _boot/sitecustomize.py:
 *   lib/sonde           the build tree (build/bin/sonde, build/lib/sonde)
 *   lib/sonde/sonde     `make install` (PYTHONPATH=<prefix>/lib/sonde then
 *                       imports it without the rest of <prefix>/lib)
 *   lib/python3.N/site-packages/sonde (lib64, dist-packages too: the last
 *                       pattern below)
 *                       `pip install`: the site-packages of a venv, of
 *                       ~/.local (--user), /usr/local's dist-packages on
 *                       Debian; one per interpreter a wheel was installed for */
static const char *const start_pkg_layouts[] = {"lib/sonde", "lib/sonde/sonde",
                                                "lib*/python3*/*-packages/sonde"};
#define START_PKG_PROBE "/_boot/sitecustomize.py"

/* <prefix> of this command (the directory above the one holding it) into
 * buf. Returns 0 or -errno. */
static int start_prefix(char *buf, size_t len)
{
    int rc = sonde_prim_self_exe(buf, len);
    if (rc < 0) return rc;
    for (int up = 0; up < 2; up++) {
        char *slash = strrchr(buf, '/');
        if (!slash) return -ENOENT;
        *slash = 0;
    }
    return 0;
}

/* text with glob's special characters escaped, into out (as long as
 * twice text, plus one). */
static void start_glob_escape(const char *text, char *out)
{
    for (; *text; text++) {
        if (strchr("*?[]\\", *text)) *out++ = '\\';
        *out++ = *text;
    }
    *out = 0;
}

int sonde_cli_pkg_dir_nth(int nth, char *buf, size_t len)
{
    char prefix[4096], escaped[2 * sizeof prefix + 1], pattern[sizeof escaped + 128];
    int rc = start_prefix(prefix, sizeof prefix);
    if (rc < 0) return rc;
    start_glob_escape(prefix, escaped);
    for (size_t i = 0; i < SONDE_ARRAY_LEN(start_pkg_layouts); i++) {
        snprintf(pattern, sizeof pattern, "%s/%s" START_PKG_PROBE, escaped, start_pkg_layouts[i]);
        glob_t found = {0};
        if (glob(pattern, 0, NULL, &found) != 0) continue;
        size_t n = found.gl_pathc;
        if ((size_t)nth < n) {
            const char *probe = found.gl_pathv[nth];
            int dir_len = (int)(strlen(probe) - strlen(START_PKG_PROBE));
            rc = (size_t)snprintf(buf, len, "%.*s", dir_len, probe) < len ? 0 : -ENAMETOOLONG;
            globfree(&found);
            return rc;
        }
        nth -= (int)n;
        globfree(&found);
    }
    return -ENOENT;
}

int sonde_cli_pkg_dir(char *buf, size_t len)
{
    if (sonde_cli_pkg_dir_nth(0, buf, len) == 0) return 0;
    char prefix[4096];
    int rc = start_prefix(prefix, sizeof prefix);
    if (rc < 0) return rc;
    if ((size_t)snprintf(buf, len, "%s/lib/sonde", prefix) >= len) return -ENAMETOOLONG;
    return 0;
}

int sonde_cli_launch(const char *mode, const sonde_program_t *prog, const char *outfile,
                     const char *options, bool preload_shim, int (*before_exec)(void))
{
    char err[512] = "", first_err[512] = "", pkg_dir[4096], python[4096];
    if (sonde_launch_check(prog, outfile, err, sizeof err) < 0) {
        sonde_cli_error("%s", err);
        return 2;
    }
    int rc = sonde_cli_pkg_dir(pkg_dir, sizeof pkg_dir);
    if (rc < 0) {
        sonde_cli_error("cannot find the sonde package next to this command: %s", strerror(-rc));
        return 2;
    }
    if (sonde_cli_pkg_dir_nth(0, pkg_dir, sizeof pkg_dir) < 0) {
        sonde_cli_error("the sonde package is missing from %s; run 'make' first", pkg_dir);
        return 2;
    }
    /* the first package with a module for the interpreter (pip --user for
     * two versions leaves two); when none has, the first one's complaint */
    rc = -ENOENT;
    for (int nth = 0; rc < 0 && sonde_cli_pkg_dir_nth(nth, pkg_dir, sizeof pkg_dir) == 0; nth++) {
        rc = sonde_cli_find_python(pkg_dir, python, sizeof python, err, sizeof err);
        if (nth == 0) snprintf(first_err, sizeof first_err, "%s", err);
    }
    if (rc < 0) {
        sonde_cli_error("%s", first_err);
        return 2;
    }
    if (before_exec && (rc = before_exec()) != 0) return rc; /* it said why */
    sonde_launch_exec(python, pkg_dir, mode, prog, options, preload_shim, err, sizeof err);
    sonde_cli_error("%s", err);
    return 127;
}
