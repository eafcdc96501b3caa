/* test_run_options.c — unit tests of `sonde run`'s options
 * (src/launch/options.c) and their hand-over encoding.
 *
 * Every option in each spelling (--name VALUE, --name=VALUE, the short
 * forms, the aliases --outfile, --json, --html), -m and "--", the format
 * from --format or the output's ending (and the stacks the stack formats
 * turn on), every error with its message, values of any length, argv left
 * exactly as it was, and the hand-over: what the command encodes, the boot
 * decodes to the same options, whatever bytes the values hold; the program
 * word of a Python command line (for an exec of the same interpreter).
 */
#include "core/buf.h"
#include "launch/launch.h"
#include "launch/netstring.h"
#include "launch/options.h"
#include "report/report.h"

#include "check.h"

#include <stdarg.h>

#define MAX_WORDS 64

/* Parses the given words into *o (after sonde_run_opts_free of the
 * previous result); err gets the message. */
static int parse(sonde_run_opts_t *o, bool need_program, char *err, size_t len, int argc, ...)
{
    static char *argv[MAX_WORDS];
    va_list ap;
    va_start(ap, argc);
    for (int i = 0; i < argc; i++)
        argv[i] = va_arg(ap, char *);
    va_end(ap);
    sonde_run_opts_free(o);
    sonde_run_opts_default(o);
    err[0] = 0;
    return sonde_run_opts_parse(o, argc, argv, need_program, err, len);
}

static bool same(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

static void test_defaults(void)
{
    sonde_run_opts_t o = {0};
    char err[512];
    int rc = parse(&o, true, err, sizeof err, 2, "app.py", "--json");
    check(rc == 0 && same(o.script, "app.py") && !o.module && o.prog_argc == 2 &&
              same(o.prog_argv[1], "--json") && o.n_option_tokens == 0 && o.interval_sec == 0.01 &&
              o.cpu_percent_threshold == 1.0 &&
              o.malloc_threshold == SONDE_DEFAULT_MALLOC_THRESHOLD && o.gpu == -1 && !o.stacks &&
              !o.memory && !o.gc && !o.outfile && o.format == sonde_format_default() &&
              same(o.format->name, "text"),
          "ropts_defaults_and_program_args", "rc %d err %s", rc, err);
    sonde_run_opts_free(&o);
}

static void test_every_option(void)
{
    sonde_run_opts_t o = {0};
    char err[512];
    int rc = parse(&o, true, err, sizeof err, 24, "--interval", "0.005", "--virtual-time",
                   "--profile-all", "--profile-only", "a,,b", "--profile-exclude", "c",
                   "--cpu-percent-threshold", "2.5", "--all-lines", "--stacks", "--memory",
                   "--malloc-threshold", "2M", "--gpu", "--gc", "-v", "--json", "-o", "out.dat",
                   "--", "-script.py", "x");
    check(rc == 0 && o.interval_sec == 0.005 && o.virtual_time && o.profile_all &&
              o.n_profile_only == 2 && same(o.profile_only[0], "a") &&
              same(o.profile_only[1], "b") && o.n_profile_exclude == 1 &&
              same(o.profile_exclude[0], "c") && o.cpu_percent_threshold == 2.5 && o.all_lines &&
              o.stacks && o.memory && o.malloc_threshold == (2u << 20) && o.gpu == 1 && o.gc &&
              o.verbose && same(o.format->name, "json") && same(o.outfile, "out.dat") &&
              same(o.script, "-script.py") && o.prog_argc == 2 && o.n_option_tokens == 22,
          "ropts_every_option", "rc %d err %s", rc, err);
    rc = parse(&o, true, err, sizeof err, 9, "--interval=0.2", "--cpu-percent-threshold=0",
               "--profile-only=x", "--profile-exclude=y,z", "--malloc-threshold=64k",
               "--format=svg", "--output=o.txt", "--no-gpu", "app.py");
    check(rc == 0 && o.interval_sec == 0.2 && o.cpu_percent_threshold == 0 &&
              o.n_profile_only == 1 && o.n_profile_exclude == 2 &&
              o.malloc_threshold == (64u << 10) && same(o.format->name, "svg") &&
              same(o.outfile, "o.txt") && o.gpu == 0 && o.stacks,
          "ropts_equals_forms", "rc %d err %s", rc, err);
    rc = parse(&o, true, err, sizeof err, 6, "--profile-only", "a", "--profile-only", "b,c",
               "--verbose", "app.py");
    check(rc == 0 && o.n_profile_only == 3 && same(o.profile_only[2], "c") && o.verbose,
          "ropts_patterns_accumulate", "rc %d err %s", rc, err);
    /* -h ends the options, as in every command; an error before it stays */
    rc = parse(&o, true, err, sizeof err, 3, "-h", "--bogus-after-help?", "x");
    check(rc == 0 && o.help, "ropts_help_ends_the_options", "rc %d err %s", rc, err);
    rc = parse(&o, true, err, sizeof err, 3, "--bogus", "-h", "x");
    check(rc == -EINVAL && strstr(err, "--bogus"), "ropts_error_before_help", "rc %d", rc);
    rc = parse(&o, false, err, sizeof err, 1, "--help");
    check(rc == -EINVAL && strstr(err, "unknown option '--help'"), "ropts_no_help_in_start",
          "rc %d err %s", rc, err);
    rc = parse(&o, true, err, sizeof err, 1, "--help");
    check(rc == 0 && o.help && !o.script, "ropts_help", "rc %d err %s", rc, err);
    sonde_run_opts_free(&o);
}

static void test_formats(void)
{
    sonde_run_opts_t o = {0};
    char err[512];
    static const struct {
        const char *name, *word, *value, *format;
        bool stacks;
        const char *outfile;
    } cases[] = {
        {"ropts_fmt_outfile_alias_svg", "--outfile", "flame.svg", "svg", true, "flame.svg"},
        {"ropts_fmt_o_folded", "-o", "x.folded", "folded", true, "x.folded"},
        {"ropts_fmt_o_collapsed", "-o", "x.collapsed", "folded", true, "x.collapsed"},
        {"ropts_fmt_o_speedscope", "-o", "p.speedscope.json", "speedscope", true,
         "p.speedscope.json"},
        {"ropts_fmt_o_json", "-o", "P.JSON", "json", false, "P.JSON"},
        {"ropts_fmt_o_html", "-o", "r.html", "html", false, "r.html"},
        {"ropts_fmt_o_txt", "-o", "r.txt", "text", false, "r.txt"},
        {"ropts_fmt_o_unknown_is_text", "-o", "report", "text", false, "report"},
        {"ropts_fmt_o_stream_is_text", "-o", "/dev/stdout", "text", false, "/dev/stdout"},
        {"ropts_fmt_format_folded", "--format", "folded", "folded", true, NULL},
        {"ropts_fmt_f_speedscope", "-f", "speedscope", "speedscope", true, NULL},
        {"ropts_fmt_alias_flamegraph", "--format", "flamegraph", "svg", true, NULL},
        {"ropts_fmt_html_default_file", "--format", "html", "html", false, "profile.html"},
    };
    for (size_t k = 0; k < SONDE_ARRAY_LEN(cases); k++) {
        int rc = parse(&o, true, err, sizeof err, 3, cases[k].word, cases[k].value, "app.py");
        check(rc == 0 && same(o.format->name, cases[k].format) && o.stacks == cases[k].stacks &&
                  (cases[k].outfile ? same(o.outfile, cases[k].outfile) : !o.outfile),
              cases[k].name, "rc %d err %s format %s outfile %s", rc, err,
              o.format ? o.format->name : "-", o.outfile ? o.outfile : "-");
    }
    int rc = parse(&o, true, err, sizeof err, 2, "--html", "app.py");
    check(rc == 0 && same(o.format->name, "html") && same(o.outfile, "profile.html"),
          "ropts_html_alias", "rc %d err %s", rc, err);
    rc = parse(&o, true, err, sizeof err, 4, "--format", "json", "-o", "x.svg", "app.py");
    check(rc == -EINVAL && strstr(err, "no program"), "ropts_no_program_after_options", "rc %d",
          rc);
    rc = parse(&o, true, err, sizeof err, 5, "--format", "json", "-o", "x.svg", "app.py");
    check(rc == 0 && same(o.format->name, "json") && !o.stacks, "ropts_format_beats_ending",
          "rc %d err %s", rc, err);
    rc = parse(&o, true, err, sizeof err, 4, "--json", "--format", "json", "app.py");
    check(rc == 0 && same(o.format->name, "json"), "ropts_same_format_twice", "rc %d err %s", rc,
          err);
    rc = parse(&o, true, err, sizeof err, 3, "--html", "--json", "app.py");
    check(rc == -EINVAL && strstr(err, "--html and --json ask for different formats (html, json)"),
          "ropts_json_html_conflict", "err %s", err);
    rc = parse(&o, true, err, sizeof err, 4, "-f", "svg", "--json", "app.py");
    check(rc == -EINVAL && strstr(err, "-f and --json"), "ropts_format_conflict", "err %s", err);
    sonde_run_opts_free(&o);
}

static void test_module(void)
{
    sonde_run_opts_t o = {0};
    char err[512];
    int rc = parse(&o, true, err, sizeof err, 6, "--stacks", "-m", "pkg.mod", "-o", "x", "--json");
    check(rc == 0 && same(o.module, "pkg.mod") && !o.script && o.prog_argc == 4 &&
              same(o.prog_argv[0], "pkg.mod") && same(o.prog_argv[1], "-o") && !o.outfile &&
              o.n_option_tokens == 1 && o.stacks && same(o.format->name, "text"),
          "ropts_module_args_are_the_programs", "rc %d err %s", rc, err);
    rc = parse(&o, true, err, sizeof err, 3, "-o", "m.svg", "-mpkg");
    check(rc == 0 && same(o.module, "pkg") && o.prog_argc == 1 && same(o.format->name, "svg") &&
              o.stacks,
          "ropts_module_attached", "rc %d err %s", rc, err);
    rc = parse(&o, true, err, sizeof err, 1, "-m");
    check(rc == -EINVAL && strstr(err, "option -m needs a module name"), "ropts_module_missing",
          "err %s", err);
    rc = parse(&o, false, err, sizeof err, 2, "-m", "x");
    check(rc == -EINVAL && strstr(err, "unexpected option '-m'"), "ropts_module_not_at_start",
          "err %s", err);
    sonde_run_opts_free(&o);
}

/* -c CODE, - (standard input) and --python: python3's own forms. */
static void test_command_and_stdin(void)
{
    sonde_run_opts_t o = {0};
    char err[512];
    int rc = parse(&o, true, err, sizeof err, 5, "--json", "-c", "print(1)", "-o", "x");
    check(rc == 0 && same(o.command, "print(1)") && !o.script && !o.module && o.prog_argc == 3 &&
              same(o.prog_argv[0], "print(1)") && same(o.prog_argv[1], "-o") && !o.outfile &&
              o.n_option_tokens == 1 && same(o.format->name, "json"),
          "ropts_command_args_are_the_programs", "rc %d err %s", rc, err);
    rc = parse(&o, true, err, sizeof err, 1, "-cpass");
    check(rc == 0 && same(o.command, "pass") && o.prog_argc == 1, "ropts_command_attached",
          "rc %d err %s", rc, err);
    rc = parse(&o, true, err, sizeof err, 1, "-c");
    check(rc == -EINVAL && strstr(err, "option -c needs the code to run"), "ropts_command_missing",
          "err %s", err);
    rc = parse(&o, false, err, sizeof err, 2, "-c", "x");
    check(rc == -EINVAL && strstr(err, "unexpected option '-c'"), "ropts_command_not_at_start",
          "err %s", err);
    rc = parse(&o, true, err, sizeof err, 3, "-", "a", "-c");
    check(rc == 0 && same(o.script, "-") && !o.command && o.prog_argc == 3, "ropts_stdin_script",
          "rc %d err %s", rc, err);
    rc = parse(&o, true, err, sizeof err, 4, "--python", "/v/bin/python3", "--python=py", "a.py");
    check(rc == 0 && same(o.python, "py") && same(o.script, "a.py"), "ropts_python", "rc %d err %s",
          rc, err);
    rc = parse(&o, true, err, sizeof err, 1, "--python");
    check(rc == -EINVAL && strstr(err, "--python needs a path"), "ropts_python_missing", "err %s",
          err);
    rc = parse(&o, false, err, sizeof err, 2, "--python", "x");
    check(rc == -EINVAL && strstr(err, "unknown option '--python'"), "ropts_python_not_in_start",
          "rc %d err %s", rc, err);
    sonde_run_opts_free(&o);
}

static void test_errors(void)
{
    sonde_run_opts_t o = {0};
    char err[512];
    static const struct {
        const char *name, *words[3], *message;
        int n;
    } cases[] = {
        {"ropts_err_interval",
         {"--interval", "20", "a.py"},
         "--interval needs a number of seconds between 0.0001 and 10, got '20'",
         3},
        {"ropts_err_interval_text", {"--interval=abc", "a.py"}, "got 'abc'", 2},
        {"ropts_err_interval_missing", {"--interval"}, "--interval needs a number", 1},
        {"ropts_err_threshold",
         {"--cpu-percent-threshold", "101", "a.py"},
         "--cpu-percent-threshold needs a percentage between 0 and 100, got '101'",
         3},
        {"ropts_err_malloc_small",
         {"--malloc-threshold", "1K", "a.py"},
         "--malloc-threshold needs a byte count between 64K and 1G, got '1K'",
         3},
        {"ropts_err_malloc_big", {"--malloc-threshold=2G", "a.py"}, "got '2G'", 2},
        {"ropts_err_malloc_negative", {"--malloc-threshold=-65536", "a.py"}, "got '-65536'", 2},
        {"ropts_err_patterns_empty",
         {"--profile-only", ",,", "a.py"},
         "--profile-only needs a comma-separated list of at most 32 patterns",
         3},
        {"ropts_err_exclude_missing", {"--profile-exclude"}, "--profile-exclude needs", 1},
        {"ropts_err_output_empty", {"-o", "", "a.py"}, "option -o needs a file name", 3},
        {"ropts_err_output_missing", {"--outfile"}, "option --outfile needs a file name", 1},
        {"ropts_err_format",
         {"--format", "png", "a.py"},
         "unknown format 'png' (text, json, html, folded, svg, speedscope, pprof)",
         3},
        {"ropts_err_format_missing", {"-f"}, "option -f needs a format name", 1},
        {"ropts_err_flag_value", {"--stacks=1", "a.py"}, "option --stacks takes no value", 2},
        {"ropts_err_flag_attached", {"-vx", "a.py"}, "unknown option '-vx'", 2},
        {"ropts_err_unknown",
         {"--bogus", "a.py"},
         "unknown option '--bogus' (see 'sonde run --help')",
         2},
        {"ropts_err_no_program", {"--stacks"}, "no program given: sonde run [options]", 1},
        {"ropts_err_not_a_prefix",
         {"--outfile-x=a", "a.py"},
         "unknown option '--outfile-x'; did you mean '--outfile'?",
         2},
    };
    for (size_t k = 0; k < SONDE_ARRAY_LEN(cases); k++) {
        char *words[3];
        for (int i = 0; i < cases[k].n; i++)
            words[i] = (char *)cases[k].words[i];
        sonde_run_opts_free(&o);
        sonde_run_opts_default(&o);
        err[0] = 0;
        int rc = sonde_run_opts_parse(&o, cases[k].n, words, true, err, sizeof err);
        check(rc == -EINVAL && strstr(err, cases[k].message), cases[k].name, "rc %d err %s", rc,
              err);
    }
    /* 33 patterns: one too many */
    sonde_buf_t many = SONDE_BUF_INIT;
    for (int i = 0; i < SONDE_MAX_PATTERNS + 1; i++)
        sonde_buf_printf(&many, "%sp%d", i ? "," : "", i);
    int rc = parse(&o, true, err, sizeof err, 3, "--profile-only", many.data, "a.py");
    check(rc == -EINVAL && strstr(err, "at most 32"), "ropts_err_too_many_patterns", "err %s", err);
    sonde_buf_free(&many);
    sonde_run_opts_free(&o);
}

/* Values of any length, and argv exactly as it was after parsing. */
static void test_input_untouched(void)
{
    sonde_run_opts_t o = {0};
    char err[512];
    size_t n = 100000;
    char *path = malloc(n + 5), *arg = malloc(n + 1);
    memset(path, 'p', n);
    memcpy(path + n, ".svg", 5);
    memset(arg, 'a', n);
    arg[n] = 0;
    char w_only[] = "alpha,beta,,gamma", w_excl[] = "--profile-exclude=x,y";
    char *words[] = {"-o", path, "--profile-only", w_only, w_excl, "app.py", arg};
    char *copies[SONDE_ARRAY_LEN(words)];
    for (size_t i = 0; i < SONDE_ARRAY_LEN(words); i++)
        copies[i] = strdup(words[i]);
    sonde_run_opts_default(&o);
    int rc = sonde_run_opts_parse(&o, (int)SONDE_ARRAY_LEN(words), words, true, err, sizeof err);
    bool untouched = true;
    for (size_t i = 0; i < SONDE_ARRAY_LEN(words); i++)
        untouched = untouched && strcmp(words[i], copies[i]) == 0;
    check(rc == 0 && untouched, "ropts_input_untouched", "rc %d err %s", rc, err);
    check(rc == 0 && o.outfile == path && strlen(o.outfile) == n + 4 &&
              same(o.format->name, "svg") && o.prog_argv[1] == arg && strlen(o.prog_argv[1]) == n,
          "ropts_long_values_intact", "rc %d err %s", rc, err);
    check(rc == 0 && o.n_profile_only == 3 && same(o.profile_only[0], "alpha") &&
              same(o.profile_only[2], "gamma") && o.n_profile_exclude == 2 &&
              same(o.profile_exclude[1], "y"),
          "ropts_patterns_copied", "rc %d", rc);
    for (size_t i = 0; i < SONDE_ARRAY_LEN(words); i++)
        free(copies[i]);
    free(path);
    free(arg);
    sonde_run_opts_free(&o);
    check(o.owned == NULL, "ropts_free_idempotent_state", "owned %p", (void *)o.owned);
    sonde_run_opts_free(&o);
}

/* The hand-over: decode(encode(opts)) gives the same options. */
static void test_handover_round_trip(void)
{
    sonde_run_opts_t o = {0}, back = {0};
    char err[512];
    const char *odd_path = "/tmp/a,b:c;d\x1f"
                           "e\n12:x,.speedscope.json";
    int rc = parse(&o, true, err, sizeof err, 19, "--interval", "0.0123", "--virtual-time",
                   "--profile-only", "x:1,y;2", "--profile-exclude", "z", "--all-lines",
                   "--cpu-percent-threshold", "0.25", "--memory", "--malloc-threshold", "3M",
                   "--no-gpu", "--gc", "-v", "-o", odd_path, "app.py");
    sonde_buf_t enc = SONDE_BUF_INIT;
    sonde_run_opts_encode(&o, &enc);
    int drc = rc == 0 ? sonde_run_opts_decode(&back, enc.data, err, sizeof err) : -1;
    check(rc == 0 && drc == 0 && back.interval_sec == o.interval_sec && back.virtual_time &&
              !back.profile_all && back.n_profile_only == 2 && same(back.profile_only[0], "x:1") &&
              same(back.profile_only[1], "y;2") && back.n_profile_exclude == 1 &&
              same(back.profile_exclude[0], "z") && back.all_lines &&
              back.cpu_percent_threshold == 0.25 && back.memory &&
              back.malloc_threshold == (3u << 20) && back.gpu == 0 && back.gc && back.verbose &&
              back.stacks && back.format == sonde_format_named("speedscope") &&
              same(back.outfile, odd_path) && back.outfile != odd_path,
          "ropts_handover_round_trip", "rc %d drc %d err %s enc %s", rc, drc, err,
          enc.data ? enc.data : "");
    sonde_run_opts_free(&back);
    /* The defaults (text, no output) round-trip too. */
    rc = parse(&o, true, err, sizeof err, 1, "app.py");
    sonde_buf_reset(&enc);
    sonde_run_opts_encode(&o, &enc);
    drc = sonde_run_opts_decode(&back, enc.data, err, sizeof err);
    check(drc == 0 && !back.outfile && back.format == sonde_format_default() && back.gpu == -1 &&
              !back.gc && back.interval_sec == 0.01 && !back.stacks,
          "ropts_handover_defaults", "drc %d err %s", drc, err);
    sonde_run_opts_free(&back);
    /* A 100,000-byte output path survives. */
    size_t n = 100000;
    char *path = malloc(n + 1);
    memset(path, 'q', n);
    path[n] = 0;
    rc = parse(&o, true, err, sizeof err, 3, "-o", path, "app.py");
    sonde_buf_reset(&enc);
    sonde_run_opts_encode(&o, &enc);
    drc = sonde_run_opts_decode(&back, enc.data, err, sizeof err);
    check(drc == 0 && back.outfile && strcmp(back.outfile, path) == 0, "ropts_handover_long_path",
          "drc %d err %s", drc, err);
    free(path);
    sonde_run_opts_free(&back);
    sonde_run_opts_free(&o);
    sonde_buf_free(&enc);
}

static void test_handover_malformed(void)
{
    sonde_run_opts_t back = {0};
    char err[512];
    static const char *const bad[] = {
        "8:interval",              /* no comma */
        "8:interval,4:0.01",       /* value not closed */
        "9:interval,4:0.01,",      /* length off by one */
        "99999999999999999999:x,", /* absurd length */
        "8:interval,1:0,",         /* value out of range */
        "5:bogus,1:1,",            /* unknown key */
        "6:format,3:png,",         /* unknown format */
        "3:gpu,1:2,",              /* not -1, 0, 1 */
        "6:stacks,3:yes,",         /* not a flag */
        "2:gc,2:on,",              /* not a flag */
        "12:profile_only,3:a,b,",  /* one pattern per field */
        "7:outfile,0:,",           /* empty file name */
        "x:",                      /* not a netstring */
    };
    for (size_t k = 0; k < SONDE_ARRAY_LEN(bad); k++) {
        err[0] = 0;
        int rc = sonde_run_opts_decode(&back, bad[k], err, sizeof err);
        check(rc == -EINVAL && strstr(err, "cannot be read"), "ropts_handover_malformed",
              "case %zu (%s): rc %d err %s", k, bad[k], rc, err);
        sonde_run_opts_free(&back);
    }
    int rc = sonde_run_opts_decode(&back, "", err, sizeof err);
    check(rc == 0 && back.format == sonde_format_default(), "ropts_handover_empty_is_defaults",
          "rc %d", rc);
    sonde_run_opts_free(&back);
}

static void test_netstring_words(void)
{
    char w0[] = "-o", w1[] = "a,b:c\x1f\n", w2[] = "";
    char *words[] = {w0, w1, w2};
    sonde_buf_t enc = SONDE_BUF_INIT;
    sonde_netstring_put_words(&enc, words, 3);
    char **back = NULL;
    int n = 0;
    int rc = sonde_netstring_get_words(enc.data, &back, &n);
    check(rc == 0 && n == 3 && same(back[0], "-o") && same(back[1], w1) && same(back[2], "") &&
              !back[3],
          "ropts_netstring_words", "rc %d n %d enc %s", rc, n, enc.data);
    sonde_netstring_free_words(back);
    rc = sonde_netstring_get_words("2:ab,3:c", &back, &n);
    check(rc == -EINVAL && !back, "ropts_netstring_truncated", "rc %d", rc);
    rc = sonde_netstring_get_words("", &back, &n);
    check(rc == 0 && n == 0 && back && !back[0], "ropts_netstring_empty", "rc %d", rc);
    sonde_netstring_free_words(back);
    sonde_buf_free(&enc);
}

/* sonde_launch_program_word: the first argument after Python's options. */
static void test_program_word(void)
{
    static const struct {
        const char *words[6];
        const char *want; /* NULL: -EINVAL */
    } cases[] = {
        {{"python", "app.py", "a"}, "app.py"},
        {{"python", "-u", "-X", "utf8", "app.py"}, "app.py"},
        {{"python", "-Wignore", "-Xdev", "-B", "app.py"}, "app.py"},
        {{"python", "-W", "ignore", "-m", "pkg.mod", "x"}, "-m pkg.mod"},
        {{"python", "-mhttp.server"}, "-m http.server"},
        {{"python", "-uc", "print(1)"}, "-c"},
        {{"python", "-c", "print(1)", "app.py"}, "-c"},
        {{"python", "-"}, "-"},
        {{"python", "--", "-odd.py"}, "-odd.py"},
        {{"python", "--check-hash-based-pycs", "always", "app.py"}, "app.py"},
        {{"python"}, NULL},
        {{"python", "-i"}, NULL},
        {{"python", "--version"}, NULL},
        {{"python", "-m"}, NULL},
        {{"python", "-Z", "app.py"}, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int argc = 0;
        while (argc < 6 && cases[i].words[argc])
            argc++;
        sonde_buf_t out = SONDE_BUF_INIT;
        int rc = sonde_launch_program_word(argc, (char *const *)cases[i].words, &out);
        bool ok = cases[i].want ? rc == 0 && out.data && strcmp(out.data, cases[i].want) == 0
                                : rc == -EINVAL;
        check(ok, "program_word", "case %zu: rc %d word %s", i, rc, out.data ? out.data : "-");
        sonde_buf_free(&out);
    }
}

int main(void)
{
    test_defaults();
    test_every_option();
    test_formats();
    test_module();
    test_command_and_stdin();
    test_errors();
    test_input_untouched();
    test_handover_round_trip();
    test_handover_malformed();
    test_netstring_words();
    test_program_word();
    return check_exit_code();
}
