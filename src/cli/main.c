/* main.c — the `sonde` command: dispatch, help, version, --python.
 *
 * Owns: sonde_cli_main, called by main() (entry.c) of build/bin/sonde only:
 * the extension module links no command line; `python3 -m sonde ...` execs
 * this command as `sonde --python <its sys.executable> ...`. No libpython,
 * no signal handlers.
 */
#include "cli.h"
#include "period.h"

#include "../collect/collect.h"

#include "../launch/launch.h"
#include "../prim/prim.h"

#include <glob.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char main_usage[] =
    "usage: sonde <command> [options] ...\n"
    "\n"
    "sonde is a profiler for Python programs.\n"
    "\n"
    "commands:\n"
    "  run      run a program and report where its time goes, line by line,\n"
    "           split into Python, native and system time (threads included)\n"
    "           e.g. sonde run app.py args   |   sonde run -m package.module\n"
    "  trace    run a program and record every function call, as cProfile does\n"
    "           (same report and pstats files, a fraction of the overhead)\n"
    "           e.g. sonde trace app.py args   |   sonde trace -o out.prof -m mod\n"
    "  view     turn a JSON profile into one self-contained HTML report\n"
    "           e.g. sonde view profile.json   |   sonde view p.json -o p.html\n"
    "  merge    add JSON profiles (runs, hosts, processes) up into one report\n"
    "           e.g. sonde merge a.json b.json -o merged.json\n"
    "  attach   sample a running Python process from outside: flame graphs, reports\n"
    "           e.g. sonde attach 4242 -d 30 -o profile.svg\n"
    "  record   run a command and sample it from outside\n"
    "           e.g. sonde record -o out.json -- python3 app.py args\n"
    "  dump     print every thread's current Python stack of a running process\n"
    "           e.g. sonde dump 4242\n"
    "\n"
    "options:\n"
    "  -h, --help     show this help ('sonde run --help' for a command's options)\n"
    "  --version      show the version\n"
    "  --python PATH  the interpreter 'run' and 'trace' start (default: $SONDE_PYTHON,\n"
    "                 else python3 as found on PATH, so an activated venv's)\n"
    "\n"
    "The same commands are available as `python3 -m sonde ...`, which runs this\n"
    "command with --python set to that python3.\n";

void sonde_cli_error(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fputs("sonde: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

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
static const char *const main_pkg_layouts[] = {"lib/sonde", "lib/sonde/sonde",
                                               "lib*/python3*/*-packages/sonde"};
#define MAIN_PKG_PROBE "/_boot/sitecustomize.py"

/* <prefix> of this command (the directory above the one holding it) into
 * buf. Returns 0 or -errno. */
static int main_prefix(char *buf, size_t len)
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
static void main_glob_escape(const char *text, char *out)
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
    int rc = main_prefix(prefix, sizeof prefix);
    if (rc < 0) return rc;
    main_glob_escape(prefix, escaped);
    for (size_t i = 0; i < SONDE_ARRAY_LEN(main_pkg_layouts); i++) {
        snprintf(pattern, sizeof pattern, "%s/%s" MAIN_PKG_PROBE, escaped, main_pkg_layouts[i]);
        glob_t found = {0};
        if (glob(pattern, 0, NULL, &found) != 0) continue;
        size_t n = found.gl_pathc;
        if ((size_t)nth < n) {
            const char *probe = found.gl_pathv[nth];
            int dir_len = (int)(strlen(probe) - strlen(MAIN_PKG_PROBE));
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
    int rc = main_prefix(prefix, sizeof prefix);
    if (rc < 0) return rc;
    if ((size_t)snprintf(buf, len, "%s/lib/sonde", prefix) >= len) return -ENAMETOOLONG;
    return 0;
}

int sonde_cli_launch(const char *mode, const sonde_program_t *prog, const char *outfile,
                     const char *options, bool preload_shim, const sonde_run_opts_t *collect,
                     const sonde_period_args_t *period)
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
    if (collect && period) {
        /* the period helper, then the program in this process */
        char *dir = NULL;
        if (sonde_cli_run_start_periods(&dir) != 0) return 2;
        int set = setenv(SONDE_ENV_COLLECT, dir, 1);
        free(dir);
        if (set != 0) {
            sonde_cli_error("cannot set the environment: %s", strerror(errno));
            return 2;
        }
    }
    sonde_launch_exec(python, pkg_dir, mode, prog, options, preload_shim, err, sizeof err);
    sonde_cli_error("%s", err);
    return 127;
}

/* Takes a leading "--python PATH" or "--python=PATH" off the command line
 * (argv[1..]). Returns the number of words taken (0, 1 or 2), or -1 after
 * printing an error. */
static int main_take_python(int argc, char **argv)
{
    if (argc < 2) return 0;
    const char *word = argv[1];
    const char *python = NULL;
    if (strncmp(word, "--python=", 9) == 0) {
        python = word + 9;
    } else if (strcmp(word, "--python") == 0) {
        if (argc < 3) {
            sonde_cli_error("--python needs a path to an interpreter (see 'sonde --help')");
            return -1;
        }
        python = argv[2];
    } else {
        return 0;
    }
    if (!*python) {
        sonde_cli_error("--python needs a path to an interpreter (see 'sonde --help')");
        return -1;
    }
    sonde_cli_choose_python(python);
    return word[8] == '=' ? 1 : 2;
}

/* A run or trace that returns did not start the program (or was --help):
 * signals are no longer held back. */
static int main_unblock(int status)
{
    fflush(NULL);
    sonde_launch_unblock_signals();
    return status;
}

int sonde_cli_main(int argc, char **argv)
{
    int taken = main_take_python(argc, argv);
    if (taken < 0) return 2;
    if (taken > 0) {
        /* the command name moves up to argv[1]; argv[0] stays */
        argv[taken] = argv[0];
        argv += taken;
        argc -= taken;
    }
    if (argc < 2) {
        fputs(main_usage, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        fputs(main_usage, stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
        printf("sonde %s (Python: %s)\n", SONDE_VERSION, sonde_cli_python());
        return 0;
    }
    /* run and trace: a signal from here on waits for the boot's handlers
     * (or, if the launch fails, ends the launcher after its message) */
    bool launches = strcmp(cmd, "run") == 0 || strcmp(cmd, "trace") == 0;
    int block_rc = launches ? sonde_launch_block_signals() : 0;
    if (block_rc < 0) {
        sonde_cli_error("cannot block signals: %s", strerror(-block_rc));
        return 2;
    }
    if (strcmp(cmd, "run") == 0) return main_unblock(sonde_cli_run(argc - 2, argv + 2));
    if (strcmp(cmd, "trace") == 0) return main_unblock(sonde_cli_trace(argc - 2, argv + 2));
    if (strcmp(cmd, "view") == 0) return sonde_cli_view(argc - 2, argv + 2);
    if (strcmp(cmd, "merge") == 0) return sonde_cli_merge(argc - 2, argv + 2);
    if (strcmp(cmd, "attach") == 0) return sonde_cli_attach(argc - 2, argv + 2);
    if (strcmp(cmd, "record") == 0) return sonde_cli_record(argc - 2, argv + 2);
    if (strcmp(cmd, "dump") == 0) return sonde_cli_dump(argc - 2, argv + 2);
    if (strcmp(cmd, "_periods") == 0) return sonde_cli_run_periods_main(argc - 2, argv + 2);
    if (strcmp(cmd, "_children") == 0)
        return sonde_collect_children_main(argc - 2, argv + 2, sonde_cli_gzip);
    if (cmd[0] == '-')
        sonde_cli_error("unknown option '%s' (see 'sonde --help')", cmd);
    else
        sonde_cli_error("unknown command '%s' (see 'sonde --help')", cmd);
    return 2;
}
