/* test_attach_options.c — unit tests of the command lines of `sonde
 * attach`, `record` and `dump` (src/cli/attach_options.c).
 *
 * Every option in its spellings (short, long, --long=VALUE, the --outfile
 * alias), options after the pid, "--", the format from --format or from
 * -o's ending through the registry, and each error with its message.
 */
#include "cli/attach_cli.h"

#include "check.h"

#include <stdarg.h>

static int parse(sonde_attach_mode_t mode, sonde_attach_args_t *a, char *err, size_t len, int argc,
                 ...)
{
    static char *argv[32];
    va_list ap;
    va_start(ap, argc);
    for (int i = 0; i < argc; i++)
        argv[i] = va_arg(ap, char *);
    va_end(ap);
    err[0] = 0;
    return sonde_attach_args_parse(mode, argc, argv, a, err, len);
}

static void test_attach_spellings(void)
{
    sonde_attach_args_t a;
    char err[512];
    int rc = parse(SONDE_ATTACH_MODE_ATTACH, &a, err, sizeof err, 1, "4242");
    check(rc == 0 && a.pid == 4242 && a.opts.rate_hz == 100 && a.opts.duration_sec == 0 &&
              !a.outfile && a.format == sonde_format_named("text") && !a.opts.per_thread &&
              !a.opts.idle && !a.opts.gil_only && !a.opts.subprocesses,
          "aopts_defaults", "rc %d err %s", rc, err);
    /* -xVALUE, as in every command (issue #24: it was refused here) */
    rc = parse(SONDE_ATTACH_MODE_ATTACH, &a, err, sizeof err, 10, "-r", "250", "-d", "1.5", "42",
               "--threads", "--idle", "--gil", "--subprocesses", "-ff.folded");
    check(rc == -EINVAL && strstr(err, "unknown format 'f.folded'"), "aopts_attached_short_value",
          "rc %d err %s", rc, err);
    rc = parse(SONDE_ATTACH_MODE_ATTACH, &a, err, sizeof err, 4, "-r250", "-ffolded", "-ox.txt",
               "42");
    check(rc == 0 && a.opts.rate_hz == 250 && a.format == sonde_format_named("folded") &&
              strcmp(a.outfile, "x.txt") == 0,
          "aopts_attached_short", "rc %d err %s", rc, err);
    /* --json and --html, as in run (issue #24: refused before) */
    rc = parse(SONDE_ATTACH_MODE_ATTACH, &a, err, sizeof err, 2, "--json", "42");
    check(rc == 0 && a.format == sonde_format_named("json"), "aopts_json", "rc %d err %s", rc, err);
    rc = parse(SONDE_ATTACH_MODE_RECORD, &a, err, sizeof err, 4, "--html", "-o", "p.x", "prog");
    check(rc == 0 && a.format == sonde_format_named("html") && strcmp(a.command[0], "prog") == 0,
          "aopts_html", "rc %d err %s", rc, err);
    rc = parse(SONDE_ATTACH_MODE_ATTACH, &a, err, sizeof err, 3, "--json", "-f", "svg", "42");
    check(rc == -EINVAL && strstr(err, "--json and -f ask for different formats (json, svg)"),
          "aopts_format_conflict_as_run", "rc %d err %s", rc, err);
    rc = parse(SONDE_ATTACH_MODE_ATTACH, &a, err, sizeof err, 9, "-r", "250", "-d", "1.5", "42",
               "--threads", "--idle", "--gil", "--subprocesses");
    check(rc == 0 && a.opts.rate_hz == 250 && a.opts.duration_sec == 1.5 && a.pid == 42 &&
              a.opts.per_thread && a.opts.idle && a.opts.gil_only && a.opts.subprocesses,
          "aopts_short_and_flags_after_pid", "rc %d err %s", rc, err);
    rc = parse(SONDE_ATTACH_MODE_ATTACH, &a, err, sizeof err, 4, "--rate=10", "--duration=2",
               "--format=speedscope", "7");
    check(rc == 0 && a.opts.rate_hz == 10 && a.opts.duration_sec == 2 &&
              a.format == sonde_format_named("speedscope"),
          "aopts_equals_forms", "rc %d err %s", rc, err);
    rc = parse(SONDE_ATTACH_MODE_ATTACH, &a, err, sizeof err, 2, "7", "--inject");
    check(rc == 0 && a.inject && a.inject_wait_sec == 5, "aopts_inject_default_wait",
          "rc %d err %s wait %g", rc, err, a.inject_wait_sec);
    rc = parse(SONDE_ATTACH_MODE_ATTACH, &a, err, sizeof err, 3, "--inject", "--inject-wait=0.25",
               "7");
    check(rc == 0 && a.inject && a.inject_wait_sec == 0.25, "aopts_inject_wait", "rc %d err %s", rc,
          err);
    rc = parse(SONDE_ATTACH_MODE_ATTACH, &a, err, sizeof err, 1, "7");
    check(rc == 0 && !a.inject, "aopts_inject_off_by_default", "rc %d err %s", rc, err);
    rc = parse(SONDE_ATTACH_MODE_ATTACH, &a, err, sizeof err, 3, "--output", "x.svg", "7");
    check(rc == 0 && strcmp(a.outfile, "x.svg") == 0 && a.format == sonde_format_named("svg"),
          "aopts_output_picks_svg", "rc %d err %s", rc, err);
    rc =
        parse(SONDE_ATTACH_MODE_ATTACH, &a, err, sizeof err, 2, "--outfile=p.speedscope.json", "7");
    check(rc == 0 && a.format == sonde_format_named("speedscope"),
          "aopts_outfile_alias_longest_ending", "rc %d err %s", rc, err);
    rc = parse(SONDE_ATTACH_MODE_ATTACH, &a, err, sizeof err, 3, "-o", "P.JSON", "7");
    check(rc == 0 && a.format == sonde_format_named("json"), "aopts_ending_any_case",
          "rc %d err %s", rc, err);
    rc = parse(SONDE_ATTACH_MODE_ATTACH, &a, err, sizeof err, 3, "-o", "page.html", "7");
    check(rc == 0 && a.format == sonde_format_named("html"), "aopts_html_from_registry",
          "rc %d err %s", rc, err);
    rc = parse(SONDE_ATTACH_MODE_ATTACH, &a, err, sizeof err, 5, "-f", "collapsed", "-o", "out.txt",
               "7");
    check(rc == 0 && a.format == sonde_format_named("folded"), "aopts_format_beats_ending",
          "rc %d err %s", rc, err);
    rc = parse(SONDE_ATTACH_MODE_ATTACH, &a, err, sizeof err, 3, "-f", "flamegraph", "7");
    check(rc == 0 && a.format == sonde_format_named("svg"), "aopts_alias_flamegraph",
          "rc %d err %s", rc, err);
    rc = parse(SONDE_ATTACH_MODE_ATTACH, &a, err, sizeof err, 2, "--", "99");
    check(rc == 0 && a.pid == 99, "aopts_pid_after_double_dash", "rc %d err %s", rc, err);
    rc = parse(SONDE_ATTACH_MODE_ATTACH, &a, err, sizeof err, 2, "--help", "--bogus");
    check(rc == 0 && a.help, "aopts_help_first", "rc %d err %s", rc, err);
}

static void test_attach_errors(void)
{
    sonde_attach_args_t a;
    char err[512];
    static const struct {
        const char *name, *words[4], *message;
        int n;
    } cases[] = {
        {"aopts_err_rate_range",
         {"-r", "0", "1"},
         "--rate must be a number of samples per "
         "second from 1 to 10000, not '0'",
         3},
        {"aopts_err_rate_text", {"--rate=fast", "1"}, "not 'fast'", 2},
        {"aopts_err_duration",
         {"-d", "-1", "1"},
         "--duration must be a positive number of "
         "seconds, not '-1'",
         3},
        {"aopts_err_missing_value", {"1", "--rate"}, "option --rate needs a value", 2},
        {"aopts_err_inject_wait",
         {"--inject-wait", "0", "1"},
         "--inject-wait must be a positive number of seconds (at most 3600), not '0'",
         3},
        {"aopts_err_missing_output", {"1", "-o"}, "option -o needs a file name", 2},
        {"aopts_err_format",
         {"-f", "png", "1"},
         "unknown format 'png' (text, json, html, "
         "folded, svg, speedscope, pprof)",
         3},
        {"aopts_err_ending",
         {"-o", "out.prof", "1"},
         "cannot tell the format from the name "
         "'out.prof'",
         3},
        {"aopts_err_unknown",
         {"--bogus", "1"},
         "unknown option '--bogus' (see 'sonde attach "
         "--help')",
         2},
        {"aopts_err_no_pid", {"-r", "5"}, "attach needs the id of a process", 2},
        {"aopts_err_two_pids", {"1", "2"}, "attach takes one process id, not '2'", 2},
        {"aopts_err_not_pid", {"12x"}, "'12x' is not a process id", 1},
        {"aopts_err_pid_zero", {"0"}, "'0' is not a process id", 1},
    };
    for (size_t k = 0; k < SONDE_ARRAY_LEN(cases); k++) {
        char *words[4];
        for (int i = 0; i < cases[k].n; i++)
            words[i] = (char *)cases[k].words[i];
        err[0] = 0;
        int rc = sonde_attach_args_parse(SONDE_ATTACH_MODE_ATTACH, cases[k].n, words, &a, err,
                                         sizeof err);
        check(rc == -EINVAL && strstr(err, cases[k].message), cases[k].name, "rc %d err %s", rc,
              err);
    }
    int rc = parse(SONDE_ATTACH_MODE_ATTACH, &a, err, sizeof err, 3, "-o", "out.prof", "1");
    check(rc < 0 && strstr(err, ".svg") && strstr(err, ".speedscope.json") && strstr(err, ".html"),
          "aopts_err_ending_lists_registry", "err %s", err);
}

static void test_record_and_dump(void)
{
    sonde_attach_args_t a;
    char err[512];
    int rc = parse(SONDE_ATTACH_MODE_RECORD, &a, err, sizeof err, 6, "-o", "x.folded", "--",
                   "python3", "-o", "app.py");
    check(rc == 0 && a.format == sonde_format_named("folded") &&
              strcmp(a.command[0], "python3") == 0 && strcmp(a.command[1], "-o") == 0 &&
              strcmp(a.command[2], "app.py") == 0,
          "aopts_record_command_after_dash", "rc %d err %s", rc, err);
    rc = parse(SONDE_ATTACH_MODE_RECORD, &a, err, sizeof err, 3, "--gil", "python3", "--gil");
    check(rc == 0 && a.opts.gil_only && strcmp(a.command[0], "python3") == 0 &&
              strcmp(a.command[1], "--gil") == 0,
          "aopts_record_command_without_dash", "rc %d err %s", rc, err);
    rc = parse(SONDE_ATTACH_MODE_RECORD, &a, err, sizeof err, 1, "--gil");
    check(rc == -EINVAL && strstr(err, "record needs a command"), "aopts_record_no_command",
          "rc %d err %s", rc, err);
    rc = parse(SONDE_ATTACH_MODE_RECORD, &a, err, sizeof err, 2, "--bogus", "python3");
    check(rc == -EINVAL && strstr(err, "see 'sonde record --help'"), "aopts_record_unknown",
          "rc %d err %s", rc, err);
    rc = parse(SONDE_ATTACH_MODE_DUMP, &a, err, sizeof err, 1, "314");
    check(rc == 0 && a.pid == 314, "aopts_dump_pid", "rc %d err %s", rc, err);
    rc = parse(SONDE_ATTACH_MODE_DUMP, &a, err, sizeof err, 2, "-r", "314");
    check(rc == -EINVAL && strstr(err, "unknown option '-r' (see 'sonde dump --help')"),
          "aopts_dump_no_options", "rc %d err %s", rc, err);
    rc = parse(SONDE_ATTACH_MODE_DUMP, &a, err, sizeof err, 0);
    check(rc == -EINVAL && strstr(err, "dump needs the id of a process"), "aopts_dump_no_pid",
          "rc %d err %s", rc, err);
}

/* The parser reads its words without changing them. */
static void test_input_untouched(void)
{
    sonde_attach_args_t a;
    char err[512];
    char w0[] = "--rate=50", w1[] = "-o", w2[] = "a,b.svg", w3[] = "--", w4[] = "123";
    char *argv[] = {w0, w1, w2, w3, w4};
    int rc = sonde_attach_args_parse(SONDE_ATTACH_MODE_ATTACH, 5, argv, &a, err, sizeof err);
    check(rc == 0 && strcmp(w0, "--rate=50") == 0 && strcmp(w2, "a,b.svg") == 0 &&
              strcmp(w4, "123") == 0 && a.outfile == w2,
          "aopts_input_untouched", "rc %d err %s", rc, err);
}

/* --profile-all, --profile-only, --profile-exclude: run's own parser, with
 * run's meaning and messages. */
static void test_file_options(void)
{
    sonde_attach_args_t a;
    sonde_run_opts_t run;
    char err[512], run_err[512];
    int rc = parse(SONDE_ATTACH_MODE_ATTACH, &a, err, sizeof err, 5, "--profile-only=mypkg,,lib",
                   "42", "--profile-exclude", "tests/", "--profile-all");
    check(rc == 0 && a.pid == 42 && a.opts.files.profile_all && a.opts.files.n_only == 2 &&
              strcmp(a.opts.files.only[0], "mypkg") == 0 &&
              strcmp(a.opts.files.only[1], "lib") == 0 && a.opts.files.n_exclude == 1 &&
              strcmp(a.opts.files.exclude[0], "tests/") == 0,
          "aopts_file_options", "rc %d err %s", rc, err);
    sonde_attach_args_free(&a);
    check(a.opts.files.n_only == 0 && a.files.owned == NULL, "aopts_file_options_freed",
          "still owns patterns");
    rc = parse(SONDE_ATTACH_MODE_RECORD, &a, err, sizeof err, 3, "--profile-only", "x", "python3");
    check(rc == 0 && a.opts.files.n_only == 1 && !a.opts.files.profile_all &&
              strcmp(a.command[0], "python3") == 0,
          "aopts_record_file_options", "rc %d err %s", rc, err);
    sonde_attach_args_free(&a);
    rc = parse(SONDE_ATTACH_MODE_ATTACH, &a, err, sizeof err, 2, "42", "--profile-only=,");
    sonde_attach_args_free(&a);
    char *run_words[] = {"--profile-only=,", "app.py"};
    sonde_run_opts_default(&run);
    int run_rc = sonde_run_opts_parse(&run, 2, run_words, true, run_err, sizeof run_err);
    sonde_run_opts_free(&run);
    check(rc == -EINVAL && run_rc == -EINVAL && strcmp(err, run_err) == 0,
          "aopts_file_options_errors_as_run", "attach: %s; run: %s", err, run_err);
    rc = parse(SONDE_ATTACH_MODE_DUMP, &a, err, sizeof err, 2, "--profile-all", "42");
    check(rc == -EINVAL && strstr(err, "unknown option '--profile-all' (see 'sonde dump --help')"),
          "aopts_dump_no_file_options", "rc %d err %s", rc, err);
    sonde_attach_args_free(&a);
}

/* --period and its companions (continuous profiles, attach only). */
static void test_period_options(void)
{
    sonde_attach_args_t a;
    char err[512];
    int rc = parse(SONDE_ATTACH_MODE_ATTACH, &a, err, sizeof err, 14, "7", "--period", "0.5",
                   "--period-dir=d", "--keep", "3", "--upload", "http://h:4040", "--tag",
                   "env=prod", "--tag=zone=b", "--app-name", "svc", "--upload-timeout=2");
    check(rc == 0 && a.period.period_sec == 0.5 && strcmp(a.period.period_dir, "d") == 0 &&
              a.period.keep == 3 && strcmp(a.period.upload_url, "http://h:4040") == 0 &&
              a.period.n_tags == 2 && strcmp(a.period.tags[1], "zone=b") == 0 &&
              strcmp(a.period.app_name, "svc") == 0 && a.period.upload_timeout == 2 &&
              a.period.spool_max == SONDE_PERIOD_DEFAULT_SPOOL_MAX &&
              a.period.spool_max_bytes == SONDE_PERIOD_DEFAULT_SPOOL_BYTES,
          "aopts_period_all", "rc %d err %s", rc, err);
    const sonde_format_t *want =
        sonde_format_named("pprof") ? sonde_format_named("pprof") : sonde_format_named("json");
    check(rc == 0 && a.format == want, "aopts_period_default_format", "%s",
          a.format ? a.format->name : "NULL");
    sonde_attach_args_free(&a);
    rc = parse(SONDE_ATTACH_MODE_ATTACH, &a, err, sizeof err, 5, "7", "--period", "1",
               "--period-dir", "d");
    check(rc == 0 && a.period.keep == SONDE_PERIOD_DEFAULT_KEEP && !a.period.upload_url,
          "aopts_period_dir_only", "rc %d err %s", rc, err);
    sonde_attach_args_free(&a);
    struct {
        const char *name, *words[4], *message;
    } bad[] = {
        {"aopts_period_needs_destination", {"--period", "1"}, "--period needs somewhere"},
        {"aopts_period_too_small", {"--period", "0.001", "--period-dir", "d"}, "0.01 to 86400"},
        {"aopts_dir_needs_period", {"--period-dir", "d"}, "need --period SECONDS"},
        {"aopts_period_not_with_o", {"--period=1", "--period-dir=d", "-o", "x.json"}, "not -o"},
        {"aopts_tag_needs_upload",
         {"--period=1", "--period-dir=d", "--tag", "a=b"},
         "need --upload URL"},
        {"aopts_keep_needs_dir",
         {"--period=1", "--upload=http://h", "--keep", "2"},
         "--keep needs --period-dir"},
        {"aopts_keep_zero", {"--period=1", "--period-dir=d", "--keep", "0"}, "--keep must be"},
        {"aopts_upload_needs_value", {"--period=1", "--upload"}, "option --upload needs a value"},
    };
    for (size_t i = 0; i < SONDE_ARRAY_LEN(bad); i++) {
        int n = 0;
        while (n < 4 && bad[i].words[n])
            n++;
        char *argv[6] = {"7"};
        for (int k = 0; k < n; k++)
            argv[k + 1] = (char *)bad[i].words[k];
        err[0] = 0;
        rc = sonde_attach_args_parse(SONDE_ATTACH_MODE_ATTACH, n + 1, argv, &a, err, sizeof err);
        check(rc == -EINVAL && strstr(err, bad[i].message), bad[i].name, "rc %d err %s", rc, err);
        sonde_attach_args_free(&a);
    }
    rc = parse(SONDE_ATTACH_MODE_RECORD, &a, err, sizeof err, 6, "--period", "1", "--period-dir",
               "d", "--", "python3");
    check(rc == -EINVAL && strstr(err, "unknown option '--period'"), "aopts_period_not_record",
          "rc %d err %s", rc, err);
    sonde_attach_args_free(&a);
}

/* The help comes from the tables: attach's and record's list every
 * format and file name ending of the registry, their options, and only
 * attach has the period options. */
static void test_help(void)
{
    static const sonde_attach_mode_t modes[] = {SONDE_ATTACH_MODE_ATTACH, SONDE_ATTACH_MODE_RECORD};
    for (size_t m = 0; m < SONDE_ARRAY_LEN(modes); m++) {
        sonde_buf_t out = SONDE_BUF_INIT;
        sonde_attach_help(modes[m], &out);
        const char *h = out.data ? out.data : "";
        for (size_t i = 0; i < sonde_n_formats; i++) {
            check(strstr(h, sonde_formats[i].name) != NULL, "aopts_help_lists_format", "%s",
                  sonde_formats[i].name);
            for (const char *const *ext = sonde_formats[i].extensions; *ext; ext++)
                check(strstr(h, *ext) != NULL, "aopts_help_lists_ending", "%s", *ext);
        }
        check(strstr(h, "-r, --rate HZ") && strstr(h, "-o, --output FILE") &&
                  strstr(h, "--json, --html") && strstr(h, "--profile-only PAT[,PAT]") &&
                  (strstr(h, "--period S") != NULL) == (modes[m] == SONDE_ATTACH_MODE_ATTACH),
              "aopts_help_options", "%s", h);
        sonde_buf_free(&out);
    }
}

int main(void)
{
    test_help();
    test_period_options();
    test_attach_spellings();
    test_file_options();
    test_attach_errors();
    test_record_and_dump();
    test_input_untouched();
    return check_exit_code();
}
