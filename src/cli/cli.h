/* cli.h — subcommands of the `sonde` command.
 *
 * Owns: the entry points main() dispatches to. The command is a separate
 * process from the profiled program and never loads libpython. Each
 * subcommand returns the process exit status and prints its own errors as
 * one line "sonde: ..." on stderr.
 */
#ifndef SONDE_CLI_H
#define SONDE_CLI_H

#include "../core/common.h"

/* The whole command: argv[0] is the program name. Returns the exit status. */
int sonde_cli_main(int argc, char **argv);

struct sonde_buf;
/* gzip (RFC 1952) of len bytes of data, appended to out, with zlib: the
 * command's compress callback for pprof (sonde_compress_fn, report.h;
 * gzip.c). Returns 0, -ENOMEM or -EIO; on error out is as it was. */
int sonde_cli_gzip(const void *data, size_t len, struct sonde_buf *out, void *unused);

/* `sonde run`: argv[0..argc-1] are the words after "run". */
int sonde_cli_run(int argc, char **argv);
/* `sonde _periods DIR ROOT_PID RUN_WORDS...`: the period helper. Returns
 * its exit status. */
int sonde_cli_run_periods_main(int argc, char **argv);

/* `sonde trace`: argv[0..argc-1] are the words after "trace". */
int sonde_cli_trace(int argc, char **argv);

/* `sonde view`: argv[0..argc-1] are the words after "view" (view.c; it
 * needs libcjson, which only the command links). */
int sonde_cli_view(int argc, char **argv);

/* `sonde merge`: argv are the words after "merge" (merge.c; libcjson, as
 * view). */
int sonde_cli_merge(int argc, char **argv);

/* `sonde attach`, `sonde record`, `sonde dump` (attach.c): argv are the
 * words after the command name. */
int sonde_cli_attach(int argc, char **argv);
int sonde_cli_record(int argc, char **argv);
int sonde_cli_dump(int argc, char **argv);
/* `sonde top` (top.c): the live view of a running process; argv are the
 * words after "top". */
int sonde_cli_top(int argc, char **argv);

struct sonde_program;
/* The common end of `sonde run` and `sonde trace` (start.c): checks the
 * program and the outfile, finds the package and an interpreter it has a
 * module for, runs before_exec (NULL: none; `sonde run --period` starts
 * its period helper there: run.c; it returns 0, or an exit status after
 * printing why), and replaces the process with the interpreter in the
 * given mode, handing over the mode's encoded options (launch.h);
 * preload_shim: run --memory. Returns (an exit status) only on failure,
 * after printing the error. */
int sonde_cli_launch(const char *mode, const struct sonde_program *prog, const char *outfile,
                     const char *options, bool preload_shim, int (*before_exec)(void));

/* Prints a command's help, which write appends to a buffer, on standard
 * output (message.c). Returns 0 (the exit status of --help), or 1 after saying that
 * memory ran out. */
int sonde_cli_help(void (*write)(struct sonde_buf *out));

/* Prints "sonde: <message>\n" on stderr (message.c). */
void sonde_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Directory of the sonde Python package that belongs to this command
 * (start.c), <prefix>/bin/sonde: the first of sonde_cli_pkg_dir_nth's, else (none
 * found) <prefix>/lib/sonde, where the build puts it. Returns 0 or -errno. */
int sonde_cli_pkg_dir(char *buf, size_t len);
/* The nth (from 0) directory below <prefix> that holds the package, in
 * the order start.c's start_pkg_layouts gives: the build tree's lib/sonde,
 * `make install`'s lib/sonde/sonde, pip's lib/python3.N/site-packages/sonde
 * (a venv, --user) and .../dist-packages/sonde. Returns 0, or -ENOENT past
 * the last, or -errno. */
int sonde_cli_pkg_dir_nth(int nth, char *buf, size_t len);

/* The interpreter `sonde run` and `sonde trace` start (python.c), as the
 * user named it: --python, else $SONDE_PYTHON, else "python3". */
const char *sonde_cli_python(void);
/* Records --python PATH (the global option, or `run`'s); NULL or "" is
 * ignored. */
void sonde_cli_choose_python(const char *path);
/* The interpreter to start: sonde_cli_python() searched on PATH as the
 * shell would (when it has no '/'), checked against the extension modules
 * in pkg_dir (a version this sonde has no build for is refused, naming
 * the command that builds one). Returns 0 with its path in path, or
 * -errno with a one-line message in err (no "sonde: " prefix). */
int sonde_cli_find_python(const char *pkg_dir, char *path, size_t len, char *err, size_t err_len);

#endif
