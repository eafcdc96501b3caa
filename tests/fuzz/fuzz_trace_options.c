/* fuzz_trace_options.c — libFuzzer target: the options of `sonde trace`
 * (src/launch/trace_options.c), parsed by the command from the user's
 * words and again by the tracer's boot from the option words handed over
 * as netstrings (src/cli/trace.c, src/trace/boot.c).
 *
 * Input: one byte of flags (bit 0: a program is needed, as in the
 * command), then the words, separated by NUL bytes. Checked: a parse
 * fails with a one-line message (unless it quotes a word holding a
 * newline) or gives consistent options (values
 * borrowed from the words; one program whose arguments end the words;
 * a sort key among the choices), and the option words the command hands
 * over (its first n_option_tokens words) survive the netstring encoding
 * and parse in the boot, without a program, to the same options.
 */
#include "launch/netstring.h"
#include "launch/trace_options.h"

#include "fuzz.h"

#define FUZZ_MAX_WORDS 64

static bool sort_known(const char *sort)
{
    for (int k = 0; sonde_trace_sort_choices[k]; k++)
        if (strcmp(sort, sonde_trace_sort_choices[k]) == 0) return true;
    return false;
}

static bool same_text(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* The boot's side: the option words through netstrings, parsed again. */
static void check_handover(char **argv, const sonde_trace_opts_t *opts)
{
    sonde_buf_t text = SONDE_BUF_INIT;
    char **tokens = NULL;
    int n_tokens = 0;
    char err[512] = "";
    sonde_trace_opts_t again;

    sonde_netstring_put_words(&text, argv, opts->n_option_tokens);
    fuzz_assert(sonde_buf_error(&text) == 0, "out of memory");
    int rc = sonde_netstring_get_words(text.data ? text.data : "", &tokens, &n_tokens);
    fuzz_assert(rc == 0 && n_tokens == opts->n_option_tokens, "the hand-over lost words");
    rc = sonde_trace_opts_parse(&again, n_tokens, tokens, false, err, sizeof err);
    fuzz_assert(rc == 0, "the boot refuses the options the command accepted: %s", err);
    fuzz_assert(same_text(again.outfile, opts->outfile) && same_text(again.sort, opts->sort) &&
                    again.module_flag == opts->module_flag && again.help == opts->help,
                "the boot read other options than the command");
    sonde_netstring_free_words(tokens);
    sonde_buf_free(&text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    bool need_program = data[0] & 1;
    int argc = 0;
    char **argv = fuzz_words(data + 1, size - 1, FUZZ_MAX_WORDS, &argc);
    const char *text_start = (const char *)(argv + argc + 1);
    const char *text_end = text_start + (size - 1);
    sonde_trace_opts_t opts;
    char err[512] = "";
    /* a message quoting a word that holds a newline spans lines */
    bool words_newline = memchr(data, '\n', size) != NULL;

    int rc = sonde_trace_opts_parse(&opts, argc, argv, need_program, err, sizeof err);
    if (rc != 0) {
        fuzz_assert(rc == -EINVAL, "unexpected error %d", rc);
        fuzz_assert(err[0] && (!strchr(err, '\n') || words_newline),
                    "an error without a one-line message: %s", err);
        free(argv);
        return 0;
    }
    fuzz_assert(opts.n_option_tokens >= 0 && opts.n_option_tokens <= argc,
                "%d option tokens of %d words", opts.n_option_tokens, argc);
    fuzz_assert(!opts.outfile ||
                    (opts.outfile[0] && opts.outfile >= text_start && opts.outfile <= text_end),
                "the output name is empty or not borrowed from the words");
    fuzz_assert(!opts.sort || sort_known(opts.sort), "sort key '%s' is no choice", opts.sort);
    if (need_program && !opts.help) {
        fuzz_assert((opts.script != NULL) != (opts.module != NULL), "not exactly one program");
        fuzz_assert(opts.prog_argc >= 1 && opts.prog_argv + opts.prog_argc == argv + argc &&
                        opts.prog_argv[0] == (opts.script ? opts.script : opts.module),
                    "the program is not the last words");
        fuzz_assert(opts.prog_argv == argv + opts.n_option_tokens,
                    "words between the options and the program");
    }
    if (need_program) check_handover(argv, &opts);
    free(argv);
    return 0;
}
