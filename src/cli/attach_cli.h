/* attach_cli.h — shared by the CLI files of `sonde attach/record/dump`.
 *
 * Owns: the parsed command line of the three commands (attach_options.c,
 * pure, unit-tested), and the helpers that turn results into output and
 * messages (attach_report.c). attach.c runs the commands. Part of the
 * command's edge: the helpers print (one line "sonde: ..." per error) and
 * never call exit(). No libpython.
 */
#ifndef SONDE_ATTACH_CLI_H
#define SONDE_ATTACH_CLI_H

#include "cli.h"

#include "../attach/attach.h"
#include "../fleet/fleet.h"
#include "../launch/options.h"
#include "../report/report.h"

/* ---- the command lines (attach_options.c) ------------------------------- */

typedef enum sonde_attach_mode {
    SONDE_ATTACH_MODE_ATTACH, /* sonde attach [options] PID */
    SONDE_ATTACH_MODE_RECORD, /* sonde record [options] -- COMMAND ARGS */
    SONDE_ATTACH_MODE_DUMP,   /* sonde dump PID */
    SONDE_ATTACH_MODE_TOP,    /* sonde top [options] PID (top.c) */
} sonde_attach_mode_t;

typedef struct sonde_attach_args {
    sonde_attach_opts_t opts;
    const sonde_format_t *format; /* --format, else -o's ending, else text;
                                     never NULL after a successful parse */
    const char *outfile;          /* -o/--output (alias --outfile), borrowed
                                     from argv; NULL: the command's stream */
    pid_t pid;                    /* attach, dump */
    char *const *command;         /* record: borrowed from argv, NULL-terminated there */
    bool help;                    /* -h/--help: nothing else is set */
    sonde_period_args_t period;   /* attach only */
    /* --profile-all, --profile-only, --profile-exclude, parsed by `run`'s
     * own table (sonde_run_file_options) into these options, which own the
     * patterns; opts.files points into them. */
    sonde_run_opts_t files;
    bool inject;            /* --inject (attach): profile from inside, PEP 768 */
    double inject_wait_sec; /* --inject-wait: for the target's safe point (5) */
    double refresh_sec;     /* --refresh (top): the view's interval (1) */
} sonde_attach_args_t;

/* Parses the words after the command name (argv is not modified; args
 * borrows from it). Pure: checks only the words (the caller checks that
 * the output can be written). Returns 0, or -EINVAL (-ENOMEM) with a
 * one-line message in err (no "sonde: " prefix). Call
 * sonde_attach_args_free afterwards in every case. */
int sonde_attach_args_parse(sonde_attach_mode_t mode, int argc, char *const *argv,
                            sonde_attach_args_t *args, char *err, size_t err_len);
/* Frees what args owns (the patterns). Idempotent. */
void sonde_attach_args_free(sonde_attach_args_t *args);
/* Appends the help of the command (its options from the same tables). */
void sonde_attach_help(sonde_attach_mode_t mode, sonde_buf_t *out);

/* ---- output and messages (attach_report.c) --------------------------------- */

/* Prints the one-line message for a failed open of pid (errno codes of
 * sonde_atarget_open); version: the Python version found, or "". */
void sonde_attach_cli_open_error(pid_t pid, int rc, const char *version);

/* Builds the profile of everything sampled and writes it in format
 * (src/report/format.c) to outfile (atomically; a device or FIFO
 * directly), or to fd when outfile is NULL. Returns 0, or 1 after printing
 * why it failed. */
int sonde_attach_cli_write(const sonde_attach_t *a, const sonde_format_t *format,
                           const char *outfile, int fd);

/* Builds the profile of everything sampled (the current period's, after
 * sonde_attach_period_begin) into prof (initialised), finished. Returns 0
 * or -errno. */
int sonde_attach_cli_profile(const sonde_attach_t *a, sonde_profile_t *prof);
/* Writes prof (finished) as sonde_attach_cli_write does. Returns 0, or 1
 * after printing why it failed. */
int sonde_attach_cli_write_profile(const sonde_profile_t *prof, const sonde_format_t *format,
                                   const char *outfile, int fd);

/* Renders what was sampled (the current period's, after
 * sonde_attach_period_begin) in format into out. Returns 0 or -errno. */
int sonde_attach_cli_render(const sonde_attach_t *a, const sonde_format_t *format,
                            sonde_buf_t *out);

/* ---- signals (attach.c) ---------------------------------------------------------------- */

/* attach's SIGINT, SIGTERM and SIGHUP handler (async-signal-safe: one
 * store): installs it and returns the flag it sets (cleared here);
 * sonde_attach_cli_signals_off puts the previous handlers back. */
volatile sig_atomic_t *sonde_attach_cli_signals_on(void);
void sonde_attach_cli_signals_off(void);

/* ---- profiling from inside (inject.c) ------------------------------------------------ */

/* `sonde attach --inject PID`: asks the target (CPython 3.14+) to load
 * sonde's extension and profile itself until *stop, the duration or its
 * end, then to hand the profile back and stop; writes the report as
 * attach does. Returns 0 or 1 (after one line saying why), or
 * SONDE_INJECT_OUTSIDE after one line saying why injection is not
 * possible (the caller samples from outside instead). */
#define SONDE_INJECT_OUTSIDE 3
int sonde_attach_cli_inject(const sonde_attach_args_t *args, volatile sig_atomic_t *stop);

/* ---- continuous profiles (attach_period.c) ------------------------------------------ */

/* Samples a in periods of args->period.period_sec until *stop, the
 * duration or the target's end, handing each period's profile (the last,
 * partial one included) to the period directory and/or the upload
 * (src/fleet/), then waits a little for the backlog to be sent. Prints
 * its errors and a closing line. Returns 0, or 1 after printing why. */
int sonde_attach_cli_periods(sonde_attach_t *a, const sonde_attach_args_t *args,
                             volatile sig_atomic_t *stop);

/* Progress on stderr (the sampler's callback): a line rewritten in place
 * on a terminal, otherwise a line every few seconds. arg: unused. */
void sonde_attach_cli_progress(const sonde_attach_progress_t *progress, void *arg);
/* Ends the progress line, if one is on the terminal. */
void sonde_attach_cli_progress_end(void);

#endif
