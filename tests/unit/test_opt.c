/* test_opt.c — unit tests of the one option parser and its help
 * (src/core/opt.c), on a command of its own and on the real tables.
 *
 * The grammar: --name VALUE, --name=VALUE, -x VALUE, -xVALUE, aliases,
 * flags (no value), "--", -h/--help, repeats, unique prefixes only where
 * the command allows them, program options that end the options, an
 * embedded parse (sonde.start()), positional words; each error's one-line
 * message (unknown, ambiguous, missing, refused, flag given a value,
 * unexpected); values borrowed from argv, which stays as it was;
 * sonde_opt_set (a decoder's way in); the help made from the tables (the
 * labels, aliases, choices, sections, the width) and, for run and trace,
 * from the format registry.
 */
#include "core/buf.h"
#include "core/opt.h"
#include "launch/options.h"
#include "launch/trace_options.h"
#include "report/report.h"

#include "check.h"

#include <stdarg.h>

/* What the test command's options set. */
typedef struct topt {
    bool flag, command_only;
    int no_flag, count;
    const char *name, *colour, *program, *path;
    const char *positional[8];
    int n_positional;
    bool stop_at_positional; /* the positional callback ends the options */
} topt_t;

enum { T_FLAG, T_NO_FLAG, T_NAME, T_COLOUR, T_COUNT, T_PROGRAM, T_PATH, T_CMD, T_REFUSE };

static int topt_apply(void *target, const sonde_opt_t *opt, const char *word, const char *value,
                      char *err, size_t err_len)
{
    topt_t *t = target;
    switch (opt->id) {
    case T_FLAG:
        t->flag = true;
        break;
    case T_NO_FLAG:
        t->no_flag++;
        break;
    case T_NAME:
        t->name = value;
        break;
    case T_COLOUR:
        t->colour = value;
        break;
    case T_COUNT:
        t->count++;
        break;
    case T_PROGRAM:
        t->program = value;
        break;
    case T_PATH:
        t->path = value;
        break;
    case T_CMD:
        t->command_only = true;
        break;
    default:
        if (strcmp(value, "own") == 0)
            return sonde_errf(err, err_len, "%s: its own message for '%s'", word, value);
        if (strcmp(value, "bad") == 0) return -EINVAL;
        break;
    }
    return 0;
}

static const char *const topt_colours[] = {"red", "green", NULL};

static const sonde_opt_t topt_table[] = {
    {"--flag", NULL, 'F', SONDE_OPT_FLAG, T_FLAG, 0, NULL, NULL, "turn it on", NULL},
    {"--no-flag", NULL, 0, SONDE_OPT_FLAG, T_NO_FLAG, 0, NULL, NULL, NULL, NULL},
    {"--name", "--other", 'n', SONDE_OPT_VALUE, T_NAME, 0, "NAME", NULL, "a name", NULL},
    {"--nap", NULL, 0, SONDE_OPT_VALUE, T_PATH, SONDE_OPT_NONEMPTY, "PATH", "a path",
     "where to nap", NULL},
    {"--colour", NULL, 'c', SONDE_OPT_VALUE, T_COLOUR, 0, "C", "a colour",
     "the colour, one of {choices}", topt_colours},
    {"--count", NULL, 0, SONDE_OPT_FLAG, T_COUNT, 0, NULL, NULL, "count (repeatable)", NULL},
    {"--refuse", NULL, 0, SONDE_OPT_VALUE, T_REFUSE, 0, "V", "a value it likes", "refuses", NULL},
    {NULL, NULL, 'p', SONDE_OPT_PROGRAM, T_PROGRAM, 0, "PROG", "a program", "run PROG", NULL},
    {"--cmd-only", NULL, 0, SONDE_OPT_FLAG, T_CMD, SONDE_OPT_COMMAND, NULL, NULL,
     "the command line's only", NULL},
};
static const sonde_opt_t topt_titled_table[] = {
    {"--later", NULL, 0, SONDE_OPT_FLAG, T_COUNT, 0, NULL, NULL,
     "a long help line that the writer must wrap at the help's width, word by word, with "
     "its hanging indent, however long it goes on",
     NULL},
};

static void topt_section(sonde_buf_t *out)
{
    sonde_buf_puts(out, "a section of its own\n");
}

static const sonde_opt_family_t topt_family = {
    NULL, topt_table, SONDE_ARRAY_LEN(topt_table), topt_apply, NULL,
};
static const sonde_opt_family_t topt_titled = {
    "more", topt_titled_table, SONDE_ARRAY_LEN(topt_titled_table), topt_apply, topt_section,
};
static const sonde_opt_family_t *const topt_families[] = {&topt_family, &topt_titled, NULL};

static int topt_positional(void *arg, const char *word, char *err, size_t err_len)
{
    topt_t *t = arg;
    if (strcmp(word, "wrong") == 0) return sonde_errf(err, err_len, "'%s' is wrong", word);
    if (t->stop_at_positional) return 0;
    t->positional[t->n_positional++] = word;
    return 1;
}

static sonde_opt_cmd_t topt_command = {
    "test",          "usage: sonde test [options] WORDS\n", "the end\n", topt_families, false,
    topt_positional,
};

static sonde_opt_ctx_t ctx;
static topt_t got;
static char *words[32];

/* Parses the words into got (cleared); ctx holds the results. */
static int parse(bool abbrev, bool embedded, char *err, size_t len, int argc, ...)
{
    static void *targets[2];
    va_list ap;
    va_start(ap, argc);
    for (int i = 0; i < argc; i++)
        words[i] = va_arg(ap, char *);
    va_end(ap);
    memset(&got, 0, sizeof got);
    targets[0] = targets[1] = &got;
    ctx = (sonde_opt_ctx_t){.targets = targets, .arg = &got, .embedded = embedded};
    topt_command.abbrev = abbrev;
    err[0] = 0;
    return sonde_opt_parse(&topt_command, &ctx, argc, words, err, len);
}

static bool same(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

static void test_values(void)
{
    char err[256];
    int rc = parse(false, false, err, sizeof err, 2, "--name", "a");
    check(rc == 0 && same(got.name, "a") && got.name == words[1] && ctx.end == 2 &&
              ctx.program == -1 && !ctx.help,
          "opt_long_separate", "rc %d err %s", rc, err);
    rc = parse(false, false, err, sizeof err, 1, "--name=b=c");
    check(rc == 0 && same(got.name, "b=c") && got.name == words[0] + 7, "opt_long_equals",
          "rc %d err %s", rc, err);
    rc = parse(false, false, err, sizeof err, 2, "-n", "d");
    check(rc == 0 && same(got.name, "d"), "opt_short_separate", "rc %d err %s", rc, err);
    rc = parse(false, false, err, sizeof err, 1, "-ne");
    check(rc == 0 && same(got.name, "e"), "opt_short_attached", "rc %d err %s", rc, err);
    rc = parse(false, false, err, sizeof err, 1, "--other=f");
    check(rc == 0 && same(got.name, "f"), "opt_alias", "rc %d err %s", rc, err);
    rc = parse(false, false, err, sizeof err, 2, "--name", "-x");
    check(rc == 0 && same(got.name, "-x"), "opt_value_with_dash", "rc %d err %s", rc, err);
    rc = parse(false, false, err, sizeof err, 2, "--name=", "x");
    check(rc == 0 && same(got.name, "") && got.n_positional == 1, "opt_empty_value_allowed",
          "rc %d err %s", rc, err);
    rc = parse(false, false, err, sizeof err, 4, "--count", "--count", "--name=a", "--name=b");
    check(rc == 0 && got.count == 2 && same(got.name, "b"), "opt_repeats", "rc %d err %s", rc, err);
    rc = parse(false, false, err, sizeof err, 2, "--colour", "green");
    check(rc == 0 && same(got.colour, "green"), "opt_choice", "rc %d err %s", rc, err);
}

static void test_flags_and_words(void)
{
    char err[256];
    int rc = parse(false, false, err, sizeof err, 3, "-F", "--no-flag", "--later");
    check(rc == 0 && got.flag && got.no_flag == 1 && got.count == 1, "opt_flags", "rc %d err %s",
          rc, err);
    rc = parse(false, false, err, sizeof err, 6, "a", "-F", "b", "--", "-n", "--flag");
    check(rc == 0 && got.n_positional == 4 && same(got.positional[0], "a") &&
              same(got.positional[2], "-n") && same(got.positional[3], "--flag") && !got.name &&
              ctx.end == 6,
          "opt_positionals_and_double_dash", "rc %d err %s n %d", rc, err, got.n_positional);
    got.stop_at_positional = true;
    static void *targets[2] = {&got, &got};
    topt_t stop = {.stop_at_positional = true};
    targets[0] = targets[1] = &stop;
    char *argv[] = {"-F", "prog", "-n", "x"};
    ctx = (sonde_opt_ctx_t){.targets = targets, .arg = &stop};
    rc = sonde_opt_parse(&topt_command, &ctx, 4, argv, err, sizeof err);
    check(rc == 0 && stop.flag && !stop.name && ctx.end == 1 && ctx.program == 1,
          "opt_positional_ends_options", "rc %d end %d program %d", rc, ctx.end, ctx.program);
    rc = parse(false, false, err, sizeof err, 2, "-F", "wrong");
    check(rc == -EINVAL && same(err, "'wrong' is wrong"), "opt_positional_error", "err %s", err);
    rc = parse(false, false, err, sizeof err, 3, "--count", "-p", "prog");
    check(rc == 0 && same(got.program, "prog") && ctx.end == 1 && ctx.program == 2 &&
              ctx.program_opt && ctx.program_opt->short_name == 'p',
          "opt_program_separate", "rc %d end %d program %d", rc, ctx.end, ctx.program);
    rc = parse(false, false, err, sizeof err, 3, "-pprog", "-F", "x");
    check(rc == 0 && same(got.program, "prog") && !got.flag && ctx.end == 0 && ctx.program == 0,
          "opt_program_attached", "rc %d end %d program %d", rc, ctx.end, ctx.program);
}

static void test_help(void)
{
    char err[256];
    int rc = parse(false, false, err, sizeof err, 3, "-F", "-h", "--bogus");
    check(rc == 0 && ctx.help && got.flag, "opt_help_ends", "rc %d err %s", rc, err);
    rc = parse(false, false, err, sizeof err, 2, "--bogus", "--help");
    check(rc == -EINVAL && strstr(err, "--bogus"), "opt_error_before_help", "rc %d", rc);
    rc = parse(false, false, err, sizeof err, 1, "--help=x");
    check(rc == -EINVAL && same(err, "option --help takes no value"), "opt_help_value", "err %s",
          err);
}

static void test_errors(void)
{
    static const struct {
        const char *name, *words[3], *message;
        int n;
    } cases[] = {
        {"opt_err_unknown",
         {"--bogus=1"},
         "unknown option '--bogus=1' (see 'sonde test --help')",
         1},
        {"opt_err_unknown_short", {"-z"}, "unknown option '-z' (see 'sonde test --help')", 1},
        {"opt_err_flag_attached", {"-Fx"}, "unknown option '-Fx' (see 'sonde test --help')", 1},
        {"opt_err_flag_value", {"--flag=1"}, "option --flag takes no value", 1},
        {"opt_err_missing", {"x", "--name"}, "option --name needs a value", 2},
        {"opt_err_missing_short", {"-n"}, "option -n needs a value", 1},
        {"opt_err_empty", {"--nap="}, "option --nap needs a path", 1},
        {"opt_err_empty_separate", {"--nap", ""}, "option --nap needs a path", 2},
        {"opt_err_choice", {"-c", "blue"}, "option -c needs a colour (red, green), got 'blue'", 2},
        {"opt_err_choice_missing", {"--colour"}, "option --colour needs a colour (red, green)", 1},
        {"opt_err_refused",
         {"--refuse=bad"},
         "option --refuse needs a value it likes, got 'bad'",
         1},
        {"opt_err_own_message", {"--refuse", "own"}, "--refuse: its own message for 'own'", 2},
        {"opt_err_no_prefix", {"--na=x"}, "unknown option '--na'; did you mean '--nap'?", 1},
        {"opt_err_did_you_mean",
         {"--colur=red"},
         "unknown option '--colur'; did you mean '--colour'? (see 'sonde test --help')",
         1},
        {"opt_err_swapped_letters",
         {"--falg"},
         "unknown option '--falg'; did you mean '--flag'?",
         1},
        {"opt_err_escaped", {"--a\nb\x1b"}, "unknown option '--a\\nb\\x1b'", 1},
    };
    char err[256];
    for (size_t k = 0; k < SONDE_ARRAY_LEN(cases); k++) {
        static void *targets[2];
        topt_t t = {0};
        targets[0] = targets[1] = &t;
        ctx = (sonde_opt_ctx_t){.targets = targets, .arg = &t};
        topt_command.abbrev = false;
        err[0] = 0;
        int rc = sonde_opt_parse(&topt_command, &ctx, cases[k].n, (char *const *)cases[k].words,
                                 err, sizeof err);
        check(rc == -EINVAL && strncmp(err, cases[k].message, strlen(cases[k].message)) == 0,
              cases[k].name, "rc %d err %s", rc, err);
    }
}

static void test_abbrev_and_embedded(void)
{
    char err[256];
    int rc = parse(true, false, err, sizeof err, 2, "--col=red", "--fl");
    check(rc == 0 && same(got.colour, "red") && got.flag, "opt_abbrev", "rc %d err %s", rc, err);
    rc = parse(true, false, err, sizeof err, 1, "--oth=x");
    check(rc == 0 && same(got.name, "x"), "opt_abbrev_alias", "rc %d err %s", rc, err);
    rc = parse(true, false, err, sizeof err, 1, "--na=x");
    check(rc == -EINVAL && strstr(err, "option '--na' is ambiguous (--name, --nap"),
          "opt_abbrev_ambiguous", "rc %d err %s", rc, err);
    rc = parse(true, false, err, sizeof err, 1, "--no");
    check(rc == 0 && got.no_flag == 1, "opt_abbrev_exact_prefix_unique", "rc %d err %s", rc, err);
    rc = parse(true, false, err, sizeof err, 1, "--flag-x");
    check(rc == -EINVAL && strstr(err, "unknown option '--flag-x'"), "opt_abbrev_not_longer",
          "rc %d err %s", rc, err);
    rc = parse(false, true, err, sizeof err, 1, "--cmd-only");
    check(rc == -EINVAL && strstr(err, "unknown option '--cmd-only'"), "opt_embedded_command_only",
          "rc %d err %s", rc, err);
    rc = parse(false, false, err, sizeof err, 1, "--cmd-only");
    check(rc == 0 && got.command_only, "opt_command_only", "rc %d err %s", rc, err);
    rc = parse(false, true, err, sizeof err, 1, "-h");
    check(rc == -EINVAL && strstr(err, "unknown option '-h'"), "opt_embedded_no_help", "err %s",
          err);
    rc = parse(false, true, err, sizeof err, 2, "-p", "x");
    check(rc == -EINVAL && same(err, "unexpected option '-p'"), "opt_embedded_program", "err %s",
          err);
}

/* The parser reads its words without changing them. */
static void test_input_untouched(void)
{
    char w0[] = "--name=abc", w1[] = "-cred", w2[] = "--", w3[] = "-F";
    char *argv[] = {w0, w1, w2, w3};
    topt_t t = {0};
    void *targets[] = {&t, &t};
    char err[256] = "";
    ctx = (sonde_opt_ctx_t){.targets = targets, .arg = &t};
    int rc = sonde_opt_parse(&topt_command, &ctx, 4, argv, err, sizeof err);
    check(rc == 0 && same(w0, "--name=abc") && same(w1, "-cred") && t.name == w0 + 7 &&
              t.colour == w1 + 2 && t.n_positional == 1 && t.positional[0] == w3,
          "opt_input_untouched", "rc %d err %s", rc, err);
}

static void test_set(void)
{
    topt_t t = {0};
    char err[256] = "";
    int rc = sonde_opt_set(&topt_family, &t, "other", "v", err, sizeof err);
    check(rc == 0 && same(t.name, "v"), "opt_set_alias", "rc %d err %s", rc, err);
    rc = sonde_opt_set(&topt_family, &t, "colour", "blue", err, sizeof err);
    check(rc == -EINVAL && strstr(err, "needs a colour (red, green), got 'blue'"),
          "opt_set_checks_choices", "rc %d err %s", rc, err);
    rc = sonde_opt_set(&topt_family, &t, "nap", "", err, sizeof err);
    check(rc == -EINVAL && strstr(err, "needs a path"), "opt_set_checks_empty", "err %s", err);
    rc = sonde_opt_set(&topt_family, &t, "flag", "1", err, sizeof err);
    check(rc == -EINVAL && strstr(err, "takes no value"), "opt_set_flag_value", "err %s", err);
    rc = sonde_opt_set(&topt_family, &t, "bogus", "1", err, sizeof err);
    check(rc == -EINVAL && strstr(err, "no option --bogus"), "opt_set_unknown", "err %s", err);
}

/* Every line at most the help's width (a word longer than a line
 * excepted, which the test texts do not have). */
static bool lines_fit(const char *text, size_t width, size_t *longest)
{
    *longest = 0;
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, "\n");
        if (n > *longest) *longest = n;
        p += n;
        if (*p) p++;
    }
    return *longest <= width;
}

static void test_help_text(void)
{
    sonde_buf_t out = SONDE_BUF_INIT;
    size_t longest = 0;
    sonde_opt_help(&topt_command, &out);
    const char *h = out.data ? out.data : "";
    char item[128], indent[64];
    snprintf(item, sizeof item, "\n%-*s%s\n", SONDE_OPT_HELP_COLUMN, "  -n, --name NAME",
             "a name (--other is the same option)");
    snprintf(indent, sizeof indent, "\n%*sindent, however", SONDE_OPT_HELP_COLUMN, "");
    check(strncmp(h, "usage: sonde test", 17) == 0 && strstr(h, "\noptions:\n") &&
              strstr(h, item) && strstr(h, "\n  -F, --flag, --no-flag  ") &&
              strstr(h, "the colour, one of red, green\n") && strstr(h, "\n  -p PROG  ") &&
              strstr(h, "\n  -h, --help  ") && strstr(h, "\nmore:\n  --later") &&
              strstr(h, "\na section of its own\n") && strstr(h, "\nthe end\n"),
          "opt_help_layout", "%s", h);
    check(strstr(h, "-h, --help") < strstr(h, "\nmore:\n"), "opt_help_before_sections", "%s", h);
    check(lines_fit(h, SONDE_OPT_HELP_WIDTH, &longest), "opt_help_width", "a line of %zu: %s",
          longest, h);
    /* a help item wraps with its hanging indent */
    check(strstr(h, indent) != NULL, "opt_help_wraps", "%s", h);
    sonde_buf_free(&out);
}

/* run's and trace's help: every format and file name ending of the
 * registry (run), trace's choices, nothing wider than the help. */
static void test_real_help(void)
{
    sonde_buf_t out = SONDE_BUF_INIT;
    size_t longest = 0;
    sonde_run_help(NULL, &out);
    for (size_t i = 0; i < sonde_n_formats; i++) {
        const sonde_format_t *f = &sonde_formats[i];
        char label[64];
        snprintf(label, sizeof label, "\n  %s", f->name);
        check(out.data && strstr(out.data, label), "opt_run_help_lists_format", "%s", f->name);
        for (const char *const *ext = f->extensions; *ext; ext++)
            check(out.data && strstr(out.data, *ext), "opt_run_help_lists_ending", "%s", *ext);
        for (const char *const *alias = f->aliases; *alias; alias++)
            check(out.data && strstr(out.data, *alias), "opt_run_help_lists_alias", "%s", *alias);
    }
    check(out.data && strstr(out.data, "-o, --output FILE") && strstr(out.data, "--outfile") &&
              strstr(out.data, "--json, --html") && strstr(out.data, "--gpu, --no-gpu") &&
              !strstr(out.data, "--period"),
          "opt_run_help_options", "%s", out.data ? out.data : "");
    check(lines_fit(out.data ? out.data : "", SONDE_OPT_HELP_WIDTH, &longest), "opt_run_help_width",
          "a line of %zu", longest);
    sonde_buf_reset(&out);
    sonde_trace_help(&out);
    for (int k = 0; sonde_trace_sort_choices[k]; k++)
        check(out.data && strstr(out.data, sonde_trace_sort_choices[k]),
              "opt_trace_help_lists_sort", "%s", sonde_trace_sort_choices[k]);
    check(out.data && strstr(out.data, "pstats, pprof") &&
              strstr(out.data, "-o, --outfile OUTFILE") && strstr(out.data, "--output"),
          "opt_trace_help_options", "%s", out.data ? out.data : "");
    check(lines_fit(out.data ? out.data : "", SONDE_OPT_HELP_WIDTH, &longest),
          "opt_trace_help_width", "a line of %zu", longest);
    sonde_buf_free(&out);
}

static void test_values_helpers(void)
{
    double v = 0;
    uint64_t n = 0;
    check(sonde_opt_number("1.5", &v) && v == 1.5 && !sonde_opt_number("", &v) &&
              !sonde_opt_number("1x", &v) && !sonde_opt_number("nan", &v),
          "opt_number", "%g", v);
    check(sonde_opt_count("12", 1, 100, &n) && n == 12 && !sonde_opt_count("1.5", 1, 100, &n) &&
              !sonde_opt_count("0", 1, 100, &n) && !sonde_opt_count("101", 1, 100, &n),
          "opt_count", "%llu", (unsigned long long)n);
}

static void test_distance(void)
{
    check(sonde_opt_distance("--memroy", 8, "--memory") == 1 &&
              sonde_opt_distance("--mem", 5, "--memory") == 3 &&
              sonde_opt_distance("", 0, "ab") == 2 && sonde_opt_distance("ab", 2, "ab") == 0,
          "opt_distance", "%zu %zu", sonde_opt_distance("--memroy", 8, "--memory"),
          sonde_opt_distance("--mem", 5, "--memory"));
    check(sonde_opt_near("--memroy", 8, "--memory") && sonde_opt_near("trce", 4, "trace") &&
              !sonde_opt_near("run", 3, "run") && !sonde_opt_near("--json-out", 10, "--json") &&
              !sonde_opt_near("vew", 3, "merge"),
          "opt_near", "wrong guess");
}

int main(void)
{
    test_distance();
    test_values();
    test_flags_and_words();
    test_help();
    test_errors();
    test_abbrev_and_embedded();
    test_input_untouched();
    test_set();
    test_help_text();
    test_real_help();
    test_values_helpers();
    return check_exit_code();
}
