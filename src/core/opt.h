/* opt.h — option tables, their one parser and the help made from them
 * (opt.c).
 *
 * Owns: the grammar every sonde command parses its words with, and the
 * layout of every command's --help. A command declares its options in
 * tables (one per family of options: run's own, the files to profile, the
 * report's format, its output, the periods, ...), each entry a name, a
 * short name, an argument kind, what a missing value is, a help line and
 * an id its family's apply function takes; `sonde CMD --help` is written
 * from the same tables. One grammar for all:
 *   --name VALUE, --name=VALUE, -x VALUE, -xVALUE   a valued option
 *   --name, -x                                      a flag
 *   --                                              ends the options
 *   -h, --help                                      every command's help
 * Options may repeat (their family decides what a repeat means); long
 * names may be shortened to a unique prefix where the command says so
 * (`trace`, as cProfile's optparse). The parser never modifies argv and
 * copies nothing: values are borrowed. Plain C, no libpython, no printing:
 * an error comes back as one line in the caller's buffer (no "sonde: "
 * prefix). Linked into the extension too (sonde.start() parses run's
 * options with it); no signal or hook context.
 */
#ifndef SONDE_OPT_H
#define SONDE_OPT_H

#include "common.h"

struct sonde_buf;

typedef enum sonde_opt_kind {
    SONDE_OPT_FLAG,  /* no value */
    SONDE_OPT_VALUE, /* one value */
    /* A value after which the options end, the words that follow being
     * the program's arguments (run's -m MODULE, -c CODE). */
    SONDE_OPT_PROGRAM,
} sonde_opt_kind_t;

/* An empty value is a missing one. */
#define SONDE_OPT_NONEMPTY 0x1u
/* The command line's only: unknown in an embedded parse (sonde.start()). */
#define SONDE_OPT_COMMAND 0x2u

typedef struct sonde_opt {
    const char *name;  /* the long name, "--interval"; NULL: short only */
    const char *alias; /* another long name for it ("--outfile"), or NULL */
    char short_name;   /* 'o' for -o, or 0 */
    sonde_opt_kind_t kind;
    int id;         /* what the family's apply switches on */
    unsigned flags; /* SONDE_OPT_NONEMPTY, SONDE_OPT_COMMAND */
    /* For the help: the value's name ("SEC"); what a valued option needs,
     * said when the value is missing or refused ("a number of seconds";
     * NULL: "a value"). */
    const char *metavar;
    const char *needs;
    /* The help line, one paragraph (the help writer wraps it; "{choices}"
     * stands for the choices); NULL: the option is listed beside the one
     * before it ("--gpu, --no-gpu"), which says what both do. */
    const char *help;
    /* The values it takes, NULL-terminated (the parser refuses others,
     * the help lists them); NULL: any value its family accepts. */
    const char *const *choices;
} sonde_opt_t;

/* A family of options: one table and what applies its options. */
typedef struct sonde_opt_family {
    const char *title; /* a section of its own in the help; NULL: "options" */
    const sonde_opt_t *opts;
    size_t n_opts;
    /* Applies opt to target; value is NULL for a flag, word the option as
     * given (without "=value"), for messages. Returns 0, or -EINVAL /
     * -ENOMEM with a one-line message in err; -EINVAL with err left empty
     * has the parser say "option WORD needs NEEDS, got 'VALUE'". */
    int (*apply)(void *target, const sonde_opt_t *opt, const char *word, const char *value,
                 char *err, size_t err_len);
    /* Writes a section after the options of the help (the formats), or
     * NULL. */
    void (*help_section)(struct sonde_buf *out);
} sonde_opt_family_t;

/* A command's options: its families and how its other words are read. */
typedef struct sonde_opt_cmd {
    const char *name;   /* "run": "sonde run" in messages; "" for `sonde` itself */
    const char *usage;  /* the help's beginning: usage lines and what the command does */
    const char *epilog; /* the help's end, or NULL */
    const sonde_opt_family_t *const *families; /* NULL-terminated */
    bool abbrev; /* a unique prefix of a long name is that name (optparse's rule) */
    /* A word that is no option (or any word after "--"): returns 1 when
     * it took it (parsing goes on), 0 when the options end there (the
     * program and its arguments), or -EINVAL with the message in err.
     * NULL: the options end at the first such word. */
    int (*positional)(void *arg, const char *word, char *err, size_t err_len);
} sonde_opt_cmd_t;

/* One parse: where the options go, and what it found. */
typedef struct sonde_opt_ctx {
    void *const *targets; /* targets[k]: what cmd->families[k] applies to */
    void *arg;            /* cmd->positional's */
    /* Inside the interpreter (sonde.start()): there is no program, and
     * -h/--help and SONDE_OPT_COMMAND options are unknown, a
     * SONDE_OPT_PROGRAM option unexpected. */
    bool embedded;
    /* Results. help: -h/--help was given (the parse stopped at it).
     * end: the index of the first word that is no option of sonde's (the
     * word of a SONDE_OPT_PROGRAM option; argc if none). program: the
     * index of the program's first word (a SONDE_OPT_PROGRAM option's
     * value, or the word where positional said the options end), or -1.
     * program_opt: the SONDE_OPT_PROGRAM option that ended the options,
     * or NULL. */
    bool help;
    int end;
    int program;
    const sonde_opt_t *program_opt;
} sonde_opt_ctx_t;

/* Parses argv[0..argc-1] (the words after the command's name) with cmd's
 * tables into ctx->targets. Returns 0 (see ctx's results), or -EINVAL /
 * -ENOMEM with a one-line message in err. argv is not modified. */
int sonde_opt_parse(const sonde_opt_cmd_t *cmd, sonde_opt_ctx_t *ctx, int argc, char *const *argv,
                    char *err, size_t err_len);

/* Applies the option of family named name (its long name without "--":
 * "outfile") to target with value, checked as the parser checks it (a
 * decoder of the options handed over runs the parser's checks). Returns
 * 0, or -EINVAL (no such option, or the value refused) / -ENOMEM with a
 * message in err. */
int sonde_opt_set(const sonde_opt_family_t *family, void *target, const char *name,
                  const char *value, char *err, size_t err_len);

/* Appends cmd's help: usage, the options by section, -h/--help, the
 * families' sections, the epilog. Check sonde_buf_error. */
void sonde_opt_help(const sonde_opt_cmd_t *cmd, struct sonde_buf *out);
/* Appends one item of a help list: label at column 2, text wrapped to
 * the width of the help from column `column` (SONDE_OPT_HELP_COLUMN for
 * options; on the next line when the label is too long; label NULL: a
 * paragraph). For the families' sections and the list of commands. */
void sonde_opt_help_item(struct sonde_buf *out, const char *label, const char *text, size_t column);
#define SONDE_OPT_HELP_COLUMN 29
#define SONDE_OPT_HELP_WIDTH 79

/* Value helpers of the families: a finite number (the whole text);
 * an unsigned whole number in [lo, hi]. */
bool sonde_opt_number(const char *text, double *value);
bool sonde_opt_count(const char *text, double lo, double hi, uint64_t *value);
/* The edits (insert, delete, change, swap of neighbours) between
 * a[0..alen-1] and b; SIZE_MAX for words over 64 bytes. Pure. */
size_t sonde_opt_distance(const char *a, size_t alen, const char *b);
/* Whether word[0..len-1], not name itself, is a likely mistyping of name:
 * one edit away, two for a word of 7 bytes or more ("did you mean"). */
bool sonde_opt_near(const char *word, size_t len, const char *name);

#endif
