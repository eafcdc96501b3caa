/* opt.c — the one option parser of every sonde command, and the help made
 * from the same tables (see opt.h).
 *
 * Owns: sonde_opt_parse (the grammar: long and short names, "=" and
 * attached values, flags, "--", -h/--help, unique prefixes where a command
 * allows them), the messages of the grammar's errors (unknown, ambiguous,
 * missing or refused values), sonde_opt_set (one option by name, for the
 * decoders of a hand-over), and the help writer. Called by the command's
 * parsers (src/launch/, src/cli/) and, for sonde.start(), by the extension
 * (src/ext/module.c through src/launch/options.c). Reads argv without
 * changing it; allocates nothing but the help's buffer. No signal or hook
 * context.
 */
#include "opt.h"

#include "buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#define OPT_WORD_MAX 64     /* an option's name as given, for messages */
#define OPT_CHOICES_MAX 256 /* a list of choices, for messages */

/* An option found for a word: opt NULL with help set for -h/--help. */
typedef struct opt_found {
    const sonde_opt_t *opt;
    size_t family;
    bool help;
} opt_found_t;

static bool opt_visible(const sonde_opt_t *opt, bool embedded)
{
    return !(embedded && (opt->flags & SONDE_OPT_COMMAND));
}

/* Whether long name `name` (NULL: none) is arg[0..len-1], or starts with
 * it when prefix. */
static bool opt_name_is(const char *name, const char *arg, size_t len, bool prefix)
{
    if (!name || strncmp(name, arg, len) != 0) return false;
    return prefix || name[len] == 0;
}

/* Finds the long option arg[0..len-1] names; prefix: shortened names
 * count. Returns the number of options found (the first in *found). */
static int opt_find_long(const sonde_opt_cmd_t *cmd, bool embedded, const char *arg, size_t len,
                         bool prefix, opt_found_t *found, const char **second)
{
    int n = 0;
    if (!embedded && opt_name_is("--help", arg, len, prefix)) {
        *found = (opt_found_t){NULL, 0, true};
        n++;
    }
    for (size_t f = 0; cmd->families[f]; f++) {
        const sonde_opt_family_t *fam = cmd->families[f];
        for (size_t k = 0; k < fam->n_opts; k++) {
            const sonde_opt_t *opt = &fam->opts[k];
            if (!opt_visible(opt, embedded)) continue;
            if (!opt_name_is(opt->name, arg, len, prefix) &&
                !opt_name_is(opt->alias, arg, len, prefix))
                continue;
            if (n == 0)
                *found = (opt_found_t){opt, f, false};
            else if (n == 1)
                *second = opt->name ? opt->name : opt->alias;
            n++;
        }
    }
    return n;
}

static int opt_find_short(const sonde_opt_cmd_t *cmd, bool embedded, char letter,
                          opt_found_t *found)
{
    if (!embedded && letter == 'h') {
        *found = (opt_found_t){NULL, 0, true};
        return 1;
    }
    for (size_t f = 0; cmd->families[f]; f++) {
        const sonde_opt_family_t *fam = cmd->families[f];
        for (size_t k = 0; k < fam->n_opts; k++) {
            const sonde_opt_t *opt = &fam->opts[k];
            if (opt->short_name == letter && opt_visible(opt, embedded)) {
                *found = (opt_found_t){opt, f, false};
                return 1;
            }
        }
    }
    return 0;
}

/* The choices as "a, b, c" into buf. */
static void opt_choices_text(const char *const *choices, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = 0;
    for (const char *const *c = choices; c && *c && used < len; c++) {
        int k = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", *c);
        if (k < 0) return;
        used += (size_t)k;
    }
}

/* "option WORD needs NEEDS (CHOICES)[, got 'VALUE']" into err. */
static int opt_needs(const sonde_opt_t *opt, const char *word, const char *value, char *err,
                     size_t err_len)
{
    char choices[OPT_CHOICES_MAX] = "";
    opt_choices_text(opt->choices, choices, sizeof choices);
    return sonde_errf(err, err_len, "option %s needs %s%s%s%s%s%s%s", word,
                      opt->needs ? opt->needs : "a value", choices[0] ? " (" : "", choices,
                      choices[0] ? ")" : "", value ? ", got '" : "", value ? value : "",
                      value ? "'" : "");
}

/* Checks value against opt's rules and applies it. Returns 0 or -errno
 * with the message in err. */
static int opt_apply(const sonde_opt_family_t *fam, void *target, const sonde_opt_t *opt,
                     const char *word, const char *value, char *err, size_t err_len)
{
    if (opt->kind != SONDE_OPT_FLAG) {
        if (!value || ((opt->flags & SONDE_OPT_NONEMPTY) && !value[0]))
            return opt_needs(opt, word, NULL, err, err_len);
        bool listed = !opt->choices;
        for (const char *const *c = opt->choices; c && *c && !listed; c++)
            listed = strcmp(*c, value) == 0;
        if (!listed) return opt_needs(opt, word, value, err, err_len);
    }
    err[0] = 0;
    int rc = fam->apply(target, opt, word, value, err, err_len);
    if (rc == -EINVAL && !err[0]) return opt_needs(opt, word, value, err, err_len);
    return rc;
}

size_t sonde_opt_distance(const char *a, size_t alen, const char *b)
{
    /* optimal string alignment: edits, plus a swap of two neighbours */
    size_t blen = strlen(b);
    if (alen > OPT_WORD_MAX || blen > OPT_WORD_MAX) return SIZE_MAX;
    size_t rows[3][OPT_WORD_MAX + 1];
    size_t *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
    for (size_t j = 0; j <= blen; j++)
        prev[j] = j;
    for (size_t i = 1; i <= alen; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= blen; j++) {
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t best = prev[j] + 1;
            if (cur[j - 1] + 1 < best) best = cur[j - 1] + 1;
            if (prev[j - 1] + cost < best) best = prev[j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                prev2[j - 2] + 1 < best)
                best = prev2[j - 2] + 1;
            cur[j] = best;
        }
        size_t *spare = prev2;
        prev2 = prev;
        prev = cur;
        cur = spare;
    }
    return prev[blen];
}

bool sonde_opt_near(const char *word, size_t len, const char *name)
{
    size_t d = sonde_opt_distance(word, len, name);
    /* one edit in a short name, two in a longer one */
    return d > 0 && d <= (len >= 7 ? 2 : 1);
}

/* The one visible long option word[0..len-1] is closest to, when it is
 * near one (sonde_opt_near) and no other is as near; else NULL. */
static const char *opt_nearest(const sonde_opt_cmd_t *cmd, bool embedded, const char *word,
                               size_t len)
{
    const char *best = NULL;
    size_t best_d = SIZE_MAX;
    bool tie = false;
    for (size_t f = 0; cmd->families[f]; f++) {
        const sonde_opt_family_t *fam = cmd->families[f];
        for (size_t k = 0; k < fam->n_opts; k++) {
            const sonde_opt_t *opt = &fam->opts[k];
            if (!opt_visible(opt, embedded)) continue;
            const char *names[2] = {opt->name, opt->alias};
            for (size_t n = 0; n < 2; n++) {
                if (!names[n] || !sonde_opt_near(word, len, names[n])) continue;
                size_t d = sonde_opt_distance(word, len, names[n]);
                if (d < best_d) {
                    best = names[n];
                    best_d = d;
                    tie = false;
                } else if (d == best_d && strcmp(best, names[n]) != 0) {
                    tie = true;
                }
            }
        }
    }
    return tie ? NULL : best;
}

static int opt_unknown(const sonde_opt_cmd_t *cmd, bool embedded, const char *word, char *err,
                       size_t err_len)
{
    const char *eq = word[1] == '-' ? strchr(word, '=') : NULL;
    size_t len = eq ? (size_t)(eq - word) : strlen(word);
    const char *near = word[1] == '-' ? opt_nearest(cmd, embedded, word, len) : NULL;
    if (near)
        return sonde_errf(err, err_len,
                          "unknown option '%.*s'; did you mean '%s'? (see 'sonde%s%s --help')",
                          (int)len, word, near, cmd->name[0] ? " " : "", cmd->name);
    return sonde_errf(err, err_len, "unknown option '%s' (see 'sonde%s%s --help')", word,
                      cmd->name[0] ? " " : "", cmd->name);
}

/* One option word at argv[*i] (*i moves past a separate value). Returns
 * 1 when the options end here (help, or a program option), 0 to go on,
 * or -errno with the message in err. */
static int opt_word(const sonde_opt_cmd_t *cmd, sonde_opt_ctx_t *ctx, int argc, char *const *argv,
                    int *i, char *err, size_t err_len)
{
    const char *arg = argv[*i], *value = NULL, *second = NULL;
    opt_found_t found = {0};
    bool attached = false;
    size_t len = 2;
    int n = 0;
    if (arg[1] == '-') {
        const char *eq = strchr(arg, '=');
        len = eq ? (size_t)(eq - arg) : strlen(arg);
        value = eq ? eq + 1 : NULL;
        attached = eq != NULL;
        n = opt_find_long(cmd, ctx->embedded, arg, len, false, &found, &second);
        if (n == 0 && cmd->abbrev && len > 2)
            n = opt_find_long(cmd, ctx->embedded, arg, len, true, &found, &second);
        if (n > 1)
            return sonde_errf(err, err_len, "option '%.*s' is ambiguous (%s, %s, ...)", (int)len,
                              arg, found.opt ? found.opt->name : "--help", second);
    } else {
        n = opt_find_short(cmd, ctx->embedded, arg[1], &found);
        attached = arg[2] != 0;
        if (attached) value = arg + 2;
        /* a flag's word is exactly "-x" */
        if (n && attached && (found.help || found.opt->kind == SONDE_OPT_FLAG)) n = 0;
    }
    if (n == 0) return opt_unknown(cmd, ctx->embedded, arg, err, err_len);
    if (found.help) {
        if (attached) return sonde_errf(err, err_len, "option %.*s takes no value", (int)len, arg);
        ctx->help = true;
        return 1;
    }
    const sonde_opt_t *opt = found.opt;
    char word[OPT_WORD_MAX];
    snprintf(word, sizeof word, "%.*s", (int)len, arg);
    if (opt->kind == SONDE_OPT_FLAG && attached)
        return sonde_errf(err, err_len, "option %s takes no value", word);
    if (opt->kind == SONDE_OPT_PROGRAM && ctx->embedded)
        return sonde_errf(err, err_len, "unexpected option '%s'", arg);
    int start = *i;
    if (opt->kind != SONDE_OPT_FLAG && !attached && *i + 1 < argc) value = argv[++*i];
    int rc = opt_apply(cmd->families[found.family], ctx->targets[found.family], opt, word, value,
                       err, err_len);
    if (rc < 0) return rc;
    if (opt->kind != SONDE_OPT_PROGRAM) return 0;
    ctx->end = start;
    ctx->program = *i;
    ctx->program_opt = opt;
    return 1;
}

int sonde_opt_parse(const sonde_opt_cmd_t *cmd, sonde_opt_ctx_t *ctx, int argc, char *const *argv,
                    char *err, size_t err_len)
{
    bool dashes = false; /* after "--": every word is positional */
    ctx->help = false;
    ctx->end = argc;
    ctx->program = -1;
    ctx->program_opt = NULL;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (!dashes && strcmp(arg, "--") == 0) {
            dashes = true;
            continue;
        }
        if (dashes || arg[0] != '-' || arg[1] == 0) {
            int rc = cmd->positional ? cmd->positional(ctx->arg, arg, err, err_len) : 0;
            if (rc < 0) return rc;
            if (rc > 0) continue;
            ctx->end = ctx->program = i;
            return 0;
        }
        int rc = opt_word(cmd, ctx, argc, argv, &i, err, err_len);
        if (rc != 0) return rc < 0 ? rc : 0;
    }
    return 0;
}

int sonde_opt_set(const sonde_opt_family_t *family, void *target, const char *name,
                  const char *value, char *err, size_t err_len)
{
    for (size_t k = 0; name && k < family->n_opts; k++) {
        const sonde_opt_t *opt = &family->opts[k];
        const char *names[] = {opt->name, opt->alias};
        for (int j = 0; j < 2; j++) {
            if (!names[j] || strncmp(names[j], "--", 2) != 0 || strcmp(names[j] + 2, name) != 0)
                continue;
            if (opt->kind == SONDE_OPT_FLAG && value)
                return sonde_errf(err, err_len, "option %s takes no value", names[j]);
            return opt_apply(family, target, opt, names[j], value, err, err_len);
        }
    }
    return sonde_errf(err, err_len, "no option --%s", name ? name : "");
}

/* ---- the help ---------------------------------------------------------------------- */

static void opt_pad(sonde_buf_t *out, size_t *col, size_t to)
{
    for (; *col < to; (*col)++)
        sonde_buf_putc(out, ' ');
}

void sonde_opt_help_item(sonde_buf_t *out, const char *label, const char *text, size_t column)
{
    size_t col = label ? 2 + strlen(label) : 0;
    if (label) sonde_buf_printf(out, "  %s", label);
    if (label && col + 2 > column) {
        sonde_buf_putc(out, '\n');
        col = 0;
    }
    opt_pad(out, &col, column);
    bool line_start = true;
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, " ");
        if (n) {
            if (!line_start && col + 1 + n > SONDE_OPT_HELP_WIDTH) {
                sonde_buf_putc(out, '\n');
                col = 0;
                opt_pad(out, &col, column);
                line_start = true;
            }
            if (!line_start) {
                sonde_buf_putc(out, ' ');
                col++;
            }
            sonde_buf_append(out, p, n);
            col += n;
            line_start = false;
        }
        p += n;
        while (*p == ' ')
            p++;
    }
    sonde_buf_putc(out, '\n');
}

/* An option's label: "-o, --output FILE", "--stacks", "-m MODULE". */
static void opt_label(sonde_buf_t *label, const sonde_opt_t *opt)
{
    if (opt->short_name) sonde_buf_printf(label, "-%c", opt->short_name);
    if (opt->name) sonde_buf_printf(label, "%s%s", opt->short_name ? ", " : "", opt->name);
    if (opt->kind != SONDE_OPT_FLAG)
        sonde_buf_printf(label, " %s", opt->metavar ? opt->metavar : "VALUE");
}

/* An option's help: "{choices}" replaced, its alias named. */
static void opt_text(sonde_buf_t *text, const sonde_opt_t *opt)
{
    const char *help = opt->help, *mark = strstr(help, "{choices}");
    char choices[OPT_CHOICES_MAX];
    opt_choices_text(opt->choices, choices, sizeof choices);
    if (mark)
        sonde_buf_printf(text, "%.*s%s%s", (int)(mark - help), help, choices,
                         mark + strlen("{choices}"));
    else
        sonde_buf_puts(text, help);
    if (opt->alias) sonde_buf_printf(text, " (%s is the same option)", opt->alias);
}

static void opt_help_family(sonde_buf_t *out, const sonde_opt_family_t *fam)
{
    for (size_t k = 0; k < fam->n_opts; k++) {
        const sonde_opt_t *opt = &fam->opts[k];
        if (!opt->help) continue; /* listed with the one before it */
        sonde_buf_t label = SONDE_BUF_INIT, text = SONDE_BUF_INIT;
        opt_label(&label, opt);
        for (size_t j = k + 1; j < fam->n_opts && !fam->opts[j].help; j++) {
            sonde_buf_puts(&label, ", ");
            opt_label(&label, &fam->opts[j]);
        }
        opt_text(&text, opt);
        if (sonde_buf_error(&label) || sonde_buf_error(&text))
            out->error = -ENOMEM;
        else
            sonde_opt_help_item(out, label.data, text.data, SONDE_OPT_HELP_COLUMN);
        sonde_buf_free(&label);
        sonde_buf_free(&text);
    }
}

void sonde_opt_help(const sonde_opt_cmd_t *cmd, sonde_buf_t *out)
{
    sonde_buf_puts(out, cmd->usage);
    sonde_buf_puts(out, "\noptions:\n");
    for (size_t f = 0; cmd->families[f]; f++)
        if (!cmd->families[f]->title) opt_help_family(out, cmd->families[f]);
    sonde_opt_help_item(out, "-h, --help", "show this help", SONDE_OPT_HELP_COLUMN);
    for (size_t f = 0; cmd->families[f]; f++) {
        if (!cmd->families[f]->title) continue;
        sonde_buf_printf(out, "\n%s:\n", cmd->families[f]->title);
        opt_help_family(out, cmd->families[f]);
    }
    for (size_t f = 0; cmd->families[f]; f++) {
        if (!cmd->families[f]->help_section) continue;
        sonde_buf_putc(out, '\n');
        cmd->families[f]->help_section(out);
    }
    if (cmd->epilog) sonde_buf_printf(out, "\n%s", cmd->epilog);
}

/* ---- value helpers ------------------------------------------------------------------- */

bool sonde_opt_number(const char *text, double *value)
{
    char *end = NULL;
    *value = strtod(text, &end);
    return text[0] && !*end && *value == *value;
}

bool sonde_opt_count(const char *text, double lo, double hi, uint64_t *value)
{
    double v = 0;
    if (!sonde_opt_number(text, &v) || v < lo || v > hi || v != (double)(uint64_t)v) return false;
    *value = (uint64_t)v;
    return true;
}
