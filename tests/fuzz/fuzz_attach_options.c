/* fuzz_attach_options.c — libFuzzer target: the command lines of `sonde
 * attach`, `record` and `dump` (src/cli/attach_options.c).
 *
 * Input: one byte choosing the command (attach, record, dump), then the
 * words, separated by NUL bytes. Checked: a parse fails with a one-line
 * message (unless it quotes a word holding a newline), or gives options within their documented bounds (rate,
 * duration, a pid in the kernel's range), a format always, an output name
 * and a record command borrowed from the words.
 */
#include "cli/attach_cli.h"

#include "fuzz.h"

#define FUZZ_MAX_WORDS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    static const sonde_attach_mode_t modes[] = {SONDE_ATTACH_MODE_ATTACH, SONDE_ATTACH_MODE_RECORD,
                                                SONDE_ATTACH_MODE_DUMP};
    sonde_attach_mode_t mode = modes[data[0] % 3];
    int argc = 0;
    char **argv = fuzz_words(data + 1, size - 1, FUZZ_MAX_WORDS, &argc);
    const char *text_start = (const char *)(argv + argc + 1);
    const char *text_end = text_start + (size - 1);
    sonde_attach_args_t args;
    char err[512] = "";
    /* a message quoting a word that holds a newline spans lines */
    bool words_newline = memchr(data, '\n', size) != NULL;

    int rc = sonde_attach_args_parse(mode, argc, argv, &args, err, sizeof err);
    if (rc != 0) {
        fuzz_assert(rc == -EINVAL, "unexpected error %d", rc);
        fuzz_assert(err[0] && (!strchr(err, '\n') || words_newline),
                    "an error without a one-line message: %s", err);
        sonde_attach_args_free(&args);
        free(argv);
        return 0;
    }
    if (args.help) {
        sonde_attach_args_free(&args);
        free(argv);
        return 0;
    }
    fuzz_assert(args.format != NULL, "no format after a successful parse");
    fuzz_assert(args.opts.rate_hz >= 1 && args.opts.rate_hz <= SONDE_ATTACH_MAX_RATE, "rate %g",
                args.opts.rate_hz);
    fuzz_assert(args.opts.duration_sec >= 0 && args.opts.duration_sec <= 1e7, "duration %g",
                args.opts.duration_sec);
    fuzz_assert(!args.outfile ||
                    (args.outfile[0] && args.outfile >= text_start && args.outfile <= text_end),
                "the output name is empty or not borrowed from the words");
    if (mode == SONDE_ATTACH_MODE_RECORD) {
        fuzz_assert(args.command && args.command >= argv && args.command < argv + argc &&
                        args.command[argc - (args.command - argv)] == NULL,
                    "record's command is not the last words");
    } else {
        fuzz_assert(args.pid > 0 && args.pid <= (1 << 22), "pid %d", (int)args.pid);
    }
    fuzz_assert(args.opts.files.n_only == args.files.n_profile_only &&
                    args.opts.files.n_exclude == args.files.n_profile_exclude &&
                    args.files.n_profile_only <= SONDE_MAX_PATTERNS &&
                    args.files.n_profile_exclude <= SONDE_MAX_PATTERNS,
                "the file choice does not match the parsed patterns");
    sonde_attach_args_free(&args);
    free(argv);
    return 0;
}
