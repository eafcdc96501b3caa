/* fuzz_run_options.c — libFuzzer target: the options of `sonde run`
 * (src/launch/options.c): the parser of the user's words and the
 * hand-over encoding the boot decodes inside the interpreter.
 *
 * Input: one byte of flags (bit 0: a program is needed, as for `sonde
 * run`; clear, as for sonde.start()), then the words, separated by NUL
 * bytes. Checked: after a successful parse the struct is consistent (a
 * format; one program, whose arguments end the words; the option tokens
 * counted within the words), and its encoding decodes (the boot must
 * accept whatever the command accepted) into options that encode to the
 * same text. The same text after the flags, read as a hand-over, decodes
 * or fails cleanly, and what decodes re-encodes stably.
 */
#include "launch/options.h"
#include "report/report.h"

#include "fuzz.h"

#define FUZZ_MAX_WORDS 64

/* The words hold a newline: a message quoting one may then span lines. */
static bool words_newline;

/* encode(decode(text)) must equal text, which an encoding wrote. */
static void check_stable(const char *text)
{
    sonde_run_opts_t back;
    sonde_buf_t again = SONDE_BUF_INIT;
    char err[512] = "";
    int rc = sonde_run_opts_decode(&back, text, err, sizeof err);
    fuzz_assert(rc == 0, "the boot refuses what the command encoded: %s\n  text: %s", err, text);
    sonde_run_opts_encode(&back, &again);
    fuzz_assert(sonde_buf_error(&again) == 0, "out of memory");
    fuzz_assert(again.data && strcmp(again.data, text) == 0,
                "decoding changed the options:\n  before: %s\n  after:  %s", text,
                again.data ? again.data : "");
    sonde_buf_free(&again);
    sonde_run_opts_free(&back);
}

static void fuzz_parse(char **argv, int argc, bool need_program)
{
    sonde_run_opts_t opts;
    char err[512] = "";
    sonde_run_opts_default(&opts);
    int rc = sonde_run_opts_parse(&opts, argc, argv, need_program, err, sizeof err);
    if (rc != 0) {
        fuzz_assert(rc == -EINVAL || rc == -ENOMEM, "unexpected error %d", rc);
        fuzz_assert(err[0] && (!strchr(err, '\n') || words_newline),
                    "an error without a one-line message: %s", err);
        sonde_run_opts_free(&opts);
        return;
    }
    fuzz_assert(opts.format != NULL, "no format after a successful parse");
    fuzz_assert(opts.n_option_tokens >= 0 && opts.n_option_tokens <= argc,
                "%d option tokens of %d words", opts.n_option_tokens, argc);
    fuzz_assert(opts.interval_sec >= 0.0001 && opts.interval_sec <= 10, "interval %g",
                opts.interval_sec);
    fuzz_assert(opts.n_profile_only <= SONDE_MAX_PATTERNS &&
                    opts.n_profile_exclude <= SONDE_MAX_PATTERNS,
                "too many patterns");
    for (int k = 0; k < opts.n_profile_only; k++)
        fuzz_assert(opts.profile_only[k][0] && !strchr(opts.profile_only[k], ','),
                    "an empty pattern or one with a comma");
    if (need_program && !opts.help) {
        fuzz_assert((opts.script != NULL) + (opts.module != NULL) + (opts.command != NULL) == 1,
                    "not exactly one program (script, -m or -c)");
        fuzz_assert(opts.prog_argc >= 1 && opts.prog_argv >= argv &&
                        opts.prog_argv + opts.prog_argc == argv + argc,
                    "the program's arguments are not the last words");
        fuzz_assert(!opts.script || opts.script == opts.prog_argv[0], "script is not argv[0]");
    }

    sonde_buf_t text = SONDE_BUF_INIT;
    sonde_run_opts_encode(&opts, &text);
    fuzz_assert(sonde_buf_error(&text) == 0 && text.data, "no encoding");
    check_stable(text.data);
    sonde_buf_free(&text);
    sonde_run_opts_free(&opts);
}

static void fuzz_decode(const char *text)
{
    sonde_run_opts_t opts;
    char err[512] = "";
    int rc = sonde_run_opts_decode(&opts, text, err, sizeof err);
    if (rc == 0) {
        fuzz_assert(opts.format != NULL, "no format after a successful decode");
        sonde_buf_t again = SONDE_BUF_INIT;
        sonde_run_opts_encode(&opts, &again);
        fuzz_assert(sonde_buf_error(&again) == 0 && again.data, "no encoding");
        check_stable(again.data);
        sonde_buf_free(&again);
    } else {
        fuzz_assert(err[0] && (!strchr(err, '\n') || words_newline),
                    "an error without a one-line message: %s", err);
    }
    sonde_run_opts_free(&opts);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    bool need_program = data[0] & 1;
    words_newline = memchr(data, '\n', size) != NULL;
    int argc = 0;
    char **argv = fuzz_words(data + 1, size - 1, FUZZ_MAX_WORDS, &argc);
    fuzz_parse(argv, argc, need_program);
    fuzz_decode(argc > 0 ? argv[0] : "");
    free(argv);
    return 0;
}
