/* fuzz_trace_options.c — libFuzzer target: the options of `sonde trace`
 * (src/launch/trace_options.c), parsed once by the command from the user's
 * words, encoded for the tracer's boot and decoded there (src/cli/trace.c,
 * src/ext/boot.c).
 *
 * Input: one byte of flags (bit 0: the words are a command line; clear:
 * the first word is a hand-over text to decode), then the words,
 * separated by NUL bytes. Checked: a parse fails with a one-line message
 * (unless it quotes a word holding a newline) or gives consistent options
 * (values borrowed from the words; one program whose arguments end the
 * words; a sort key among the choices), and the options the command hands
 * over decode in the boot to the same options; any text decodes or fails
 * with a one-line message, and what decodes re-encodes to the same text.
 */
#include "core/buf.h"
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

/* The boot's side: the parsed options encoded, decoded, the same. */
static void check_handover(const sonde_trace_opts_t *opts)
{
    sonde_buf_t text = SONDE_BUF_INIT, again = SONDE_BUF_INIT;
    char err[512] = "";
    sonde_trace_opts_t back;

    sonde_trace_opts_encode(opts, &text);
    fuzz_assert(sonde_buf_error(&text) == 0, "out of memory");
    int rc = sonde_trace_opts_decode(&back, text.data ? text.data : "", err, sizeof err);
    fuzz_assert(rc == 0, "the boot refuses the options the command accepted: %s", err);
    fuzz_assert(same_text(back.outfile, opts->outfile) && same_text(back.sort, opts->sort) &&
                    same_text(back.format, opts->format),
                "the boot read other options than the command");
    sonde_trace_opts_encode(&back, &again);
    fuzz_assert(sonde_buf_error(&again) == 0 && same_text(again.data, text.data),
                "decoding changed the encoding");
    sonde_trace_opts_free(&back);
    sonde_buf_free(&again);
    sonde_buf_free(&text);
}

/* Any text: decoded with a one-line message, or stable. */
static void fuzz_decode(const char *text, bool words_newline)
{
    sonde_trace_opts_t opts;
    char err[512] = "";
    int rc = sonde_trace_opts_decode(&opts, text, err, sizeof err);
    if (rc == 0) {
        fuzz_assert(!opts.sort || sort_known(opts.sort), "decoded sort key '%s'", opts.sort);
        check_handover(&opts);
    } else {
        fuzz_assert(rc == -EINVAL || rc == -ENOMEM, "unexpected error %d", rc);
        fuzz_assert(err[0] && (!strchr(err, '\n') || words_newline),
                    "an error without a one-line message: %s", err);
    }
    sonde_trace_opts_free(&opts);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    bool command_line = data[0] & 1;
    int argc = 0;
    char **argv = fuzz_words(data + 1, size - 1, FUZZ_MAX_WORDS, &argc);
    const char *text_start = (const char *)(argv + argc + 1);
    const char *text_end = text_start + (size - 1);
    sonde_trace_opts_t opts;
    char err[512] = "";
    /* a message quoting a word that holds a newline spans lines */
    bool words_newline = memchr(data, '\n', size) != NULL;

    if (!command_line) {
        fuzz_decode(argc > 0 ? argv[0] : "", words_newline);
        free(argv);
        return 0;
    }
    int rc = sonde_trace_opts_parse(&opts, argc, argv, err, sizeof err);
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
    if (!opts.help) {
        fuzz_assert((opts.script != NULL) != (opts.module != NULL), "not exactly one program");
        fuzz_assert(opts.prog_argc >= 1 && opts.prog_argv + opts.prog_argc == argv + argc &&
                        opts.prog_argv[0] == (opts.script ? opts.script : opts.module),
                    "the program is not the last words");
        fuzz_assert(opts.prog_argv == argv + opts.n_option_tokens,
                    "words between the options and the program");
        check_handover(&opts);
    }
    free(argv);
    return 0;
}
