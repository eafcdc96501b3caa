/* test_trace_options.c — unit tests of the `sonde trace` option parser
 * (src/launch/trace_options.c).
 *
 * The parser must accept what `python3 -m cProfile` (optparse) accepts:
 * -o FILE, -oFILE, --outfile FILE, --outfile=FILE and unique prefixes such
 * as --out=FILE (--output too, as in every command); -s with exactly
 * cProfile's choices; -m as a flag naming the first argument a module;
 * options ending at the program; and the hand-over: the boot decodes what
 * the command parsed (nothing parsed twice), with the parser's checks.
 */
#include "core/buf.h"
#include "launch/trace_options.h"

#include "check.h"

static int parse(sonde_trace_opts_t *o, char *err, size_t len, int argc, ...)
{
    static char *argv[32];
    va_list ap;
    va_start(ap, argc);
    for (int i = 0; i < argc; i++)
        argv[i] = va_arg(ap, char *);
    va_end(ap);
    return sonde_trace_opts_parse(o, argc, argv, err, len);
}

static void test_spellings(void)
{
    sonde_trace_opts_t o;
    char err[256] = "";
    int rc = parse(&o, err, sizeof err, 5, "-o", "out.prof", "-s", "tottime", "app.py");
    check(rc == 0 && strcmp(o.outfile, "out.prof") == 0 && strcmp(o.sort, "tottime") == 0 &&
              strcmp(o.script, "app.py") == 0 && !o.module && o.prog_argc == 1 &&
              o.n_option_tokens == 4,
          "topts_short_separate", "rc %d err %s", rc, err);
    rc = parse(&o, err, sizeof err, 4, "-oout.prof", "-scalls", "app.py", "-o");
    check(rc == 0 && strcmp(o.outfile, "out.prof") == 0 && strcmp(o.sort, "calls") == 0 &&
              o.prog_argc == 2 && strcmp(o.prog_argv[1], "-o") == 0 && o.n_option_tokens == 2,
          "topts_short_attached_and_program_args", "rc %d err %s", rc, err);
    rc = parse(&o, err, sizeof err, 4, "--outfile=a.prof", "--sort", "nfl", "app.py");
    check(rc == 0 && strcmp(o.outfile, "a.prof") == 0 && strcmp(o.sort, "nfl") == 0, "topts_long",
          "rc %d err %s", rc, err);
    rc = parse(&o, err, sizeof err, 4, "--out", "b.prof", "--so=name", "app.py");
    check(rc == 0 && strcmp(o.outfile, "b.prof") == 0 && strcmp(o.sort, "name") == 0,
          "topts_long_prefixes", "rc %d err %s", rc, err);
    rc = parse(&o, err, sizeof err, 4, "-m", "-s", "pcalls", "pkg.mod");
    check(rc == 0 && o.module && strcmp(o.module, "pkg.mod") == 0 && !o.script &&
              o.n_option_tokens == 3 && o.prog_argc == 1,
          "topts_module_flag", "rc %d err %s", rc, err);
    rc = parse(&o, err, sizeof err, 3, "--", "-weird.py", "x");
    check(rc == 0 && strcmp(o.script, "-weird.py") == 0 && o.prog_argc == 2, "topts_double_dash",
          "rc %d err %s", rc, err);
    rc = parse(&o, err, sizeof err, 3, "--output=c.prof", "--f=pprof", "app.py");
    check(rc == 0 && strcmp(o.outfile, "c.prof") == 0 && strcmp(o.format, "pprof") == 0,
          "topts_output_alias_and_prefix", "rc %d err %s", rc, err);
    rc = parse(&o, err, sizeof err, 1, "--help");
    check(rc == 0 && o.help, "topts_help", "rc %d", rc);
    rc = parse(&o, err, sizeof err, 2, "--he", "--bogus");
    check(rc == 0 && o.help, "topts_help_prefix_first", "rc %d err %s", rc, err);
    rc = parse(&o, err, sizeof err, 1, "app.py");
    check(rc == 0 && !o.sort && !o.outfile && o.n_option_tokens == 0, "topts_defaults", "rc %d",
          rc);
}

static void test_errors(void)
{
    sonde_trace_opts_t o;
    char err[256];
    err[0] = 0;
    check(parse(&o, err, sizeof err, 3, "-s", "cum", "app.py") == -EINVAL && strstr(err, "'cum'") &&
              strstr(err, "tottime"),
          "topts_sort_abbreviation_rejected", "err %s", err);
    err[0] = 0;
    check(parse(&o, err, sizeof err, 3, "-s", "file", "app.py") == -EINVAL,
          "topts_sort_file_not_a_choice", "err %s", err);
    err[0] = 0;
    check(parse(&o, err, sizeof err, 0) == -EINVAL && strstr(err, "no program"), "topts_no_program",
          "err %s", err);
    err[0] = 0;
    check(parse(&o, err, sizeof err, 1, "-m") == -EINVAL && strstr(err, "module"),
          "topts_m_without_module", "err %s", err);
    err[0] = 0;
    check(parse(&o, err, sizeof err, 1, "-o") == -EINVAL && strstr(err, "-o"),
          "topts_o_without_file", "err %s", err);
    err[0] = 0;
    check(parse(&o, err, sizeof err, 2, "--verbose", "app.py") == -EINVAL &&
              strstr(err, "unknown option '--verbose'"),
          "topts_unknown", "err %s", err);
    err[0] = 0;
    check(parse(&o, err, sizeof err, 2, "--outfile-x=a", "app.py") == -EINVAL, "topts_not_a_prefix",
          "err %s", err);
}

/* The hand-over: decode(encode(parsed)) is what was parsed. */
static void test_handover(void)
{
    sonde_trace_opts_t o, back;
    char err[256] = "";
    const char *odd = "/tmp/a,b:c;d\x1f"
                      "e\n12:x,.prof";
    int rc = parse(&o, err, sizeof err, 7, "-m", "-o", odd, "-s", "time", "-fpstats", "mod");
    sonde_buf_t enc = SONDE_BUF_INIT;
    sonde_trace_opts_encode(&o, &enc);
    int drc = rc == 0 ? sonde_trace_opts_decode(&back, enc.data, err, sizeof err) : -1;
    check(rc == 0 && drc == 0 && back.outfile && strcmp(back.outfile, odd) == 0 &&
              back.outfile != odd && strcmp(back.sort, "time") == 0 &&
              strcmp(back.format, "pstats") == 0,
          "topts_handover_round_trip", "rc %d drc %d err %s", rc, drc, err);
    sonde_trace_opts_free(&back);
    sonde_trace_opts_free(&back);
    rc = parse(&o, err, sizeof err, 1, "app.py");
    sonde_buf_reset(&enc);
    sonde_trace_opts_encode(&o, &enc);
    drc = sonde_trace_opts_decode(&back, enc.data, err, sizeof err);
    check(drc == 0 && !back.outfile && !back.sort && !back.format, "topts_handover_empty",
          "drc %d err %s", drc, err);
    sonde_trace_opts_free(&back);
    static const char *const bad[] = {
        "4:sort,3:cum,",     /* not a choice */
        "6:format,3:png,",   /* not pstats or pprof */
        "6:format,5:pprof,", /* pprof without an outfile */
        "7:outfile,0:,",     /* empty file name */
        "5:bogus,1:1,",      /* unknown key */
        "4:sort,",           /* a key without its value */
        "7:outfile,3:x",     /* not a netstring */
    };
    for (size_t k = 0; k < SONDE_ARRAY_LEN(bad); k++) {
        err[0] = 0;
        drc = sonde_trace_opts_decode(&back, bad[k], err, sizeof err);
        check(drc == -EINVAL && strstr(err, "cannot be read"), "topts_handover_malformed",
              "case %zu (%s): rc %d err %s", k, bad[k], drc, err);
        sonde_trace_opts_free(&back);
    }
    sonde_buf_free(&enc);
}

int main(void)
{
    test_spellings();
    test_errors();
    test_handover();
    return check_exit_code();
}
