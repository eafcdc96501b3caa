/* report_options.h — the options that choose a report: its format and its
 * output file (report_options.c).
 *
 * Owns: sonde_report_choice_t and the two option families (src/core/opt.h)
 * every command that writes a report shares: -f/--format NAME, --json and
 * --html (a format of the registry, src/report/format.c; two options
 * naming different formats are refused), and -o/--output FILE (alias
 * --outfile). `sonde run` and sonde.start() (options.c), `sonde attach`
 * and `record` (src/cli/attach_options.c) and `sonde merge`
 * (src/cli/merge.c) parse them so; each decides what no choice means.
 * Plain C, no libpython, no printing.
 */
#ifndef SONDE_REPORT_OPTIONS_H
#define SONDE_REPORT_OPTIONS_H

#include "../core/opt.h"

struct sonde_format;

typedef struct sonde_report_choice {
    const struct sonde_format *format; /* chosen by an option; NULL: none */
    char format_word[24];              /* the option that chose it (for the
                                          message of a second, other choice) */
    const char *outfile;               /* -o's value, borrowed; NULL: none */
} sonde_report_choice_t;

/* -f/--format NAME, --json, --html into a sonde_report_choice_t. Their
 * help ends with the registry's list of formats. */
extern const sonde_opt_family_t sonde_report_format_options;
/* -o/--output FILE (alias --outfile) into a sonde_report_choice_t. */
extern const sonde_opt_family_t sonde_report_output_options;

#endif
