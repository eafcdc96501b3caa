/* report_options.c — the report's format and output options (see
 * report_options.h).
 *
 * Owns: the tables of -f/--format, --json, --html and -o/--output, their
 * apply function and the message naming the registry's formats. Used by
 * every command that writes a report and by sonde.start(); no signal or
 * hook context.
 */
#include "report_options.h"

#include "../core/buf.h"
#include "../report/report.h"

#include <stdio.h>
#include <string.h>

enum { REPORT_FORMAT, REPORT_JSON, REPORT_HTML, REPORT_OUTPUT };

/* Records a format choice; a second choice naming another format is an
 * error. */
static int report_choose(sonde_report_choice_t *choice, const char *name, const char *word,
                         char *err, size_t err_len)
{
    const sonde_format_t *format = sonde_format_named(name);
    if (!format) {
        char names[256];
        sonde_format_list(names, sizeof names, false);
        return sonde_errf(err, err_len, "unknown format '%s' (%s)", name, names);
    }
    if (choice->format && choice->format != format)
        return sonde_errf(err, err_len, "%s and %s ask for different formats (%s, %s); give one",
                          choice->format_word, word, choice->format->name, format->name);
    choice->format = format;
    snprintf(choice->format_word, sizeof choice->format_word, "%s", word);
    return 0;
}

static int report_apply(void *target, const sonde_opt_t *opt, const char *word, const char *value,
                        char *err, size_t err_len)
{
    sonde_report_choice_t *choice = target;
    switch (opt->id) {
    case REPORT_FORMAT:
        return report_choose(choice, value, word, err, err_len);
    case REPORT_JSON:
        return report_choose(choice, "json", word, err, err_len);
    case REPORT_HTML:
        return report_choose(choice, "html", word, err, err_len);
    default:
        choice->outfile = value;
        return 0;
    }
}

static const sonde_opt_t report_format_table[] = {
    {"--format", NULL, 'f', SONDE_OPT_VALUE, REPORT_FORMAT, SONDE_OPT_NONEMPTY, "FORMAT",
     "a format name",
     "the report's format, one of the formats below (without it, the output file's name picks "
     "one)",
     NULL},
    {"--json", NULL, 0, SONDE_OPT_FLAG, REPORT_JSON, 0, NULL, NULL,
     "the same as --format json, --format html", NULL},
    {"--html", NULL, 0, SONDE_OPT_FLAG, REPORT_HTML, 0, NULL, NULL, NULL, NULL},
};

static const sonde_opt_t report_output_table[] = {
    {"--output", "--outfile", 'o', SONDE_OPT_VALUE, REPORT_OUTPUT, SONDE_OPT_NONEMPTY, "FILE",
     "a file name",
     "write the report to FILE (atomically; a symbolic link stays a link) instead of the "
     "command's stream; without --format, its ending picks the format",
     NULL},
};

const sonde_opt_family_t sonde_report_format_options = {
    NULL,         report_format_table, SONDE_ARRAY_LEN(report_format_table),
    report_apply, sonde_format_help,
};

const sonde_opt_family_t sonde_report_output_options = {
    NULL, report_output_table, SONDE_ARRAY_LEN(report_output_table), report_apply, NULL,
};
