/* test_trace_options.c — unit tests of the `sonde trace` option parser
 * (src/launch/trace_options.c).
 *
 * The parser must accept what `python3 -m cProfile` (optparse) accepts:
 * -o FILE, -oFILE, --outfile FILE, --outfile=FILE and unique prefixes such
 * as --out=FILE; -s with exactly cProfile's choices; -m as a flag naming
 * the first argument a module; options ending at the program; and, at
 * boot, the same words again without a program.
 */
#include "launch/trace_options.h"

#include "check.h"

static int parse(sonde_trace_opts_t *o, bool need_program, char *err, size_t len, int argc, ...)
{
    static char *argv[32];
    va_list ap;
    va_start(ap, argc);
    for (int i = 0; i < argc; i++)
        argv[i] = va_arg(ap, char *);
    va_end(ap);
    return sonde_trace_opts_parse(o, argc, argv, need_program, err, len);
}

static void test_spellings(void)
{
    sonde_trace_opts_t o;
    char err[256] = "";
    int rc = parse(&o, true, err, sizeof err, 5, "-o", "out.prof", "-s", "tottime", "app.py");
    check(rc == 0 && strcmp(o.outfile, "out.prof") == 0 && strcmp(o.sort, "tottime") == 0 &&
              strcmp(o.script, "app.py") == 0 && !o.module && o.prog_argc == 1 &&
              o.n_option_tokens == 4,
          "topts_short_separate", "rc %d err %s", rc, err);
    rc = parse(&o, true, err, sizeof err, 4, "-oout.prof", "-scalls", "app.py", "-o");
    check(rc == 0 && strcmp(o.outfile, "out.prof") == 0 && strcmp(o.sort, "calls") == 0 &&
              o.prog_argc == 2 && strcmp(o.prog_argv[1], "-o") == 0 && o.n_option_tokens == 2,
          "topts_short_attached_and_program_args", "rc %d err %s", rc, err);
    rc = parse(&o, true, err, sizeof err, 4, "--outfile=a.prof", "--sort", "nfl", "app.py");
    check(rc == 0 && strcmp(o.outfile, "a.prof") == 0 && strcmp(o.sort, "nfl") == 0, "topts_long",
          "rc %d err %s", rc, err);
    rc = parse(&o, true, err, sizeof err, 4, "--out", "b.prof", "--so=name", "app.py");
    check(rc == 0 && strcmp(o.outfile, "b.prof") == 0 && strcmp(o.sort, "name") == 0,
          "topts_long_prefixes", "rc %d err %s", rc, err);
    rc = parse(&o, true, err, sizeof err, 4, "-m", "-s", "pcalls", "pkg.mod");
    check(rc == 0 && o.module && strcmp(o.module, "pkg.mod") == 0 && !o.script &&
              o.n_option_tokens == 3 && o.prog_argc == 1,
          "topts_module_flag", "rc %d err %s", rc, err);
    rc = parse(&o, true, err, sizeof err, 3, "--", "-weird.py", "x");
    check(rc == 0 && strcmp(o.script, "-weird.py") == 0 && o.prog_argc == 2, "topts_double_dash",
          "rc %d err %s", rc, err);
    rc = parse(&o, true, err, sizeof err, 1, "--help");
    check(rc == 0 && o.help, "topts_help", "rc %d", rc);
    rc = parse(&o, true, err, sizeof err, 1, "app.py");
    check(rc == 0 && !o.sort && !o.outfile && o.n_option_tokens == 0, "topts_defaults", "rc %d",
          rc);
}

static void test_errors(void)
{
    sonde_trace_opts_t o;
    char err[256];
    err[0] = 0;
    check(parse(&o, true, err, sizeof err, 3, "-s", "cum", "app.py") == -EINVAL &&
              strstr(err, "'cum'") && strstr(err, "tottime"),
          "topts_sort_abbreviation_rejected", "err %s", err);
    err[0] = 0;
    check(parse(&o, true, err, sizeof err, 3, "-s", "file", "app.py") == -EINVAL,
          "topts_sort_file_not_a_choice", "err %s", err);
    err[0] = 0;
    check(parse(&o, true, err, sizeof err, 0) == -EINVAL && strstr(err, "no program"),
          "topts_no_program", "err %s", err);
    err[0] = 0;
    check(parse(&o, true, err, sizeof err, 1, "-m") == -EINVAL && strstr(err, "module"),
          "topts_m_without_module", "err %s", err);
    err[0] = 0;
    check(parse(&o, true, err, sizeof err, 1, "-o") == -EINVAL && strstr(err, "-o"),
          "topts_o_without_file", "err %s", err);
    err[0] = 0;
    check(parse(&o, true, err, sizeof err, 2, "--verbose", "app.py") == -EINVAL &&
              strstr(err, "unknown option '--verbose'"),
          "topts_unknown", "err %s", err);
    err[0] = 0;
    check(parse(&o, true, err, sizeof err, 2, "--outfile-x=a", "app.py") == -EINVAL,
          "topts_not_a_prefix", "err %s", err);
}

static void test_boot_reparse(void)
{
    sonde_trace_opts_t o;
    char err[256] = "";
    int rc = parse(&o, false, err, sizeof err, 5, "-m", "-o", "x.prof", "-s", "time");
    check(rc == 0 && strcmp(o.outfile, "x.prof") == 0 && strcmp(o.sort, "time") == 0 &&
              o.module_flag && !o.module,
          "topts_boot_options_only", "rc %d err %s", rc, err);
    rc = parse(&o, false, err, sizeof err, 0);
    check(rc == 0 && !o.outfile && !o.sort, "topts_boot_empty", "rc %d", rc);
    rc = parse(&o, false, err, sizeof err, 2, "-o", "x.prof");
    check(rc == 0, "topts_boot_outfile", "rc %d", rc);
    rc = parse(&o, false, err, sizeof err, 1, "app.py");
    check(rc == -EINVAL, "topts_boot_rejects_program", "rc %d", rc);
}

int main(void)
{
    test_spellings();
    test_errors();
    test_boot_reparse();
    return check_exit_code();
}
