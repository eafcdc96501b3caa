/* main.c — the `sonde` command: dispatch, help, version, --python.
 *
 * Owns: sonde_cli_main, called by main() (entry.c) of build/bin/sonde only:
 * the options before the command (one table, src/core/opt.c's grammar),
 * the table of commands and the help made from both;
 * the extension module links no command line; `python3 -m sonde ...` execs
 * this command as `sonde --python <its sys.executable> ...`. No libpython,
 * no signal handlers.
 */
#include "cli.h"
#include "period.h"

#include "../collect/collect.h"
#include "../core/buf.h"
#include "../core/opt.h"

#include "../launch/launch.h"
#include "../prim/prim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the command line ------------------------------------------------------------------ */

/* The options before the command. */
typedef struct main_args {
    bool version;       /* --version, -V */
    const char *python; /* --python PATH, borrowed; NULL if not given */
} main_args_t;

static int main_apply(void *target, const sonde_opt_t *opt, const char *word, const char *value,
                      char *err, size_t err_len)
{
    main_args_t *args = target;
    if (opt->kind == SONDE_OPT_FLAG)
        args->version = true;
    else
        args->python = value;
    return 0;
}

static const sonde_opt_t main_table[] = {
    {"--version", NULL, 'V', SONDE_OPT_FLAG, 0, 0, NULL, NULL, "show the version", NULL},
    {"--python", NULL, 0, SONDE_OPT_VALUE, 0, SONDE_OPT_NONEMPTY, "PATH",
     "a path to an interpreter",
     "the interpreter 'run' and 'trace' start (default: $SONDE_PYTHON, else python3 as found on "
     "PATH, so an activated venv's)",
     NULL},
};
static const sonde_opt_family_t main_options = {
    NULL, main_table, SONDE_ARRAY_LEN(main_table), main_apply, NULL,
};
static const sonde_opt_family_t *const main_families[] = {&main_options, NULL};

static const sonde_opt_cmd_t main_command = {
    "",
    "",
    "'sonde COMMAND --help' shows a command's options. The same commands are\n"
    "available as `python3 -m sonde ...`, which runs this command with --python\n"
    "set to that python3.\n",
    main_families,
    false,
    NULL,
};

static int main_children(int argc, char **argv)
{
    return sonde_collect_children_main(argc, argv, sonde_cli_gzip);
}

/* The commands: name, entry, whether it launches the program (run, trace),
 * and what the help says of it and an example (NULL: internal, not
 * listed). */
static const struct main_cmd {
    const char *name;
    int (*main)(int argc, char **argv);
    bool launches;
    const char *about;
    const char *example;
} main_commands[] = {
    {"run", sonde_cli_run, true,
     "run a program and report where its time goes, line by line, split into Python, native "
     "and system time (threads included)",
     "sonde run app.py args  |  sonde run -m package.module"},
    {"trace", sonde_cli_trace, true,
     "run a program and record every function call, as cProfile does (same report and pstats "
     "files, a fraction of the overhead)",
     "sonde trace app.py args  |  sonde trace -o out.prof -m mod"},
    {"view", sonde_cli_view, false, "turn a JSON profile into one self-contained HTML report",
     "sonde view profile.json  |  sonde view p.json -o p.html"},
    {"merge", sonde_cli_merge, false,
     "add JSON profiles (runs, hosts, processes) up into one report",
     "sonde merge a.json b.json -o merged.json"},
    {"attach", sonde_cli_attach, false,
     "sample a running Python process from outside: flame graphs, reports",
     "sonde attach 4242 -d 30 -o profile.svg"},
    {"record", sonde_cli_record, false, "run a command and sample it from outside",
     "sonde record -o out.json -- python3 app.py args"},
    {"top", sonde_cli_top, false,
     "watch a running Python process: its hot lines and functions, redrawn every second",
     "sonde top 4242"},
    {"dump", sonde_cli_dump, false,
     "print every thread's current Python stack of a running process", "sonde dump 4242"},
    {"_periods", sonde_cli_run_periods_main, false, NULL, NULL},
    {"_children", main_children, false, NULL, NULL},
};

#define MAIN_HELP_COLUMN 11 /* the commands' column in the help */

static void main_help(sonde_buf_t *out)
{
    sonde_buf_puts(out, "usage: sonde [options] <command> [options] ...\n"
                        "\n"
                        "sonde is a profiler for Python programs.\n"
                        "\n"
                        "commands:\n");
    for (size_t i = 0; i < SONDE_ARRAY_LEN(main_commands); i++)
        if (main_commands[i].about) {
            sonde_opt_help_item(out, main_commands[i].name, main_commands[i].about,
                                MAIN_HELP_COLUMN);
            sonde_buf_printf(out, "%*se.g. %s\n", MAIN_HELP_COLUMN, "", main_commands[i].example);
        }
    sonde_opt_help(&main_command, out);
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
    main_args_t args = {0};
    void *targets[] = {&args};
    sonde_opt_ctx_t ctx = {.targets = targets};
    char err[512] = "";
    if (sonde_opt_parse(&main_command, &ctx, argc - 1, argv + 1, err, sizeof err) < 0) {
        sonde_cli_error("%s", err);
        return 2;
    }
    if (args.python) sonde_cli_choose_python(args.python);
    if (ctx.help) return sonde_cli_help(main_help);
    if (args.version) {
        printf("sonde %s (Python: %s)\n", SONDE_VERSION, sonde_cli_python());
        return 0;
    }
    if (ctx.program < 0) {
        sonde_buf_t text = SONDE_BUF_INIT;
        main_help(&text);
        fputs(text.data ? text.data : "", stderr);
        sonde_buf_free(&text);
        return 2;
    }
    /* the command's words: argv[first..] */
    int first = 1 + ctx.program;
    const char *cmd = argv[first];
    if (strcmp(cmd, "help") == 0) return sonde_cli_help(main_help);
    for (size_t i = 0; i < SONDE_ARRAY_LEN(main_commands); i++) {
        const struct main_cmd *c = &main_commands[i];
        if (strcmp(cmd, c->name) != 0) continue;
        if (!c->launches) return c->main(argc - first - 1, argv + first + 1);
        /* run and trace: a signal from here on waits for the boot's
         * handlers (or, if the launch fails, ends the launcher after its
         * message) */
        int block_rc = sonde_launch_block_signals();
        if (block_rc < 0) {
            sonde_cli_error("cannot block signals: %s", strerror(-block_rc));
            return 2;
        }
        return main_unblock(c->main(argc - first - 1, argv + first + 1));
    }
    for (size_t i = 0; i < SONDE_ARRAY_LEN(main_commands); i++) {
        if (main_commands[i].name[0] == '_') continue; /* internal */
        if (sonde_opt_near(cmd, strlen(cmd), main_commands[i].name)) {
            sonde_cli_error("unknown command '%s'; did you mean '%s'? (see 'sonde --help')", cmd,
                            main_commands[i].name);
            return 2;
        }
    }
    sonde_cli_error("unknown command '%s' (see 'sonde --help')", cmd);
    return 2;
}
