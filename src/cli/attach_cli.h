/* attach_cli.h — shared by the CLI files of `sonde attach/record/dump`.
 *
 * Owns: the parsed command line of the three commands (attach.c) and the
 * helpers that turn results into output and messages (attach_report.c).
 * Part of the command's edge: these print (one line "sonde: ..." per
 * error) and never call exit(). No libpython.
 */
#ifndef SONDE_ATTACH_CLI_H
#define SONDE_ATTACH_CLI_H

#include "cli.h"

#include "../attach/attach.h"

typedef enum sonde_attach_format {
    SONDE_AFMT_NONE = 0, /* not given: from -o's extension, else text */
    SONDE_AFMT_TEXT,
    SONDE_AFMT_JSON,
    SONDE_AFMT_FOLDED,
    SONDE_AFMT_SVG,
    SONDE_AFMT_SPEEDSCOPE,
} sonde_attach_format_t;

/* Parses a --format name; SONDE_AFMT_NONE when unknown. */
sonde_attach_format_t sonde_attach_cli_format_named(const char *name);
/* The format an output path asks for by its extension (.svg, .folded,
 * .collapsed, .speedscope.json, .json, .txt); SONDE_AFMT_NONE when its
 * extension says nothing. */
sonde_attach_format_t sonde_attach_cli_format_of_path(const char *path);
const char *sonde_attach_cli_format_name(sonde_attach_format_t format);

/* Prints the one-line message for a failed open of pid (errno codes of
 * sonde_atarget_open); version: the Python version found, or "". */
void sonde_attach_cli_open_error(pid_t pid, int rc, const char *version);

/* Builds the profile of everything sampled and writes it in format to
 * outfile (atomically; a device or FIFO directly), or to fd when outfile
 * is NULL. Returns 0, or 1 after printing why it failed. */
int sonde_attach_cli_write(const sonde_attach_t *a, sonde_attach_format_t format,
                           const char *outfile, int fd);

/* Progress on stderr (the sampler's callback): a line rewritten in place
 * on a terminal, otherwise a line every few seconds. arg: unused. */
void sonde_attach_cli_progress(const sonde_attach_progress_t *progress, void *arg);
/* Ends the progress line, if one is on the terminal. */
void sonde_attach_cli_progress_end(void);

#endif
