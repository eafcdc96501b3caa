/* view.c — `sonde view`: turn a JSON profile into the HTML report.
 *
 * Owns: the CLI side of `sonde view profile.json [-o profile.html]`: its
 * option table (-o/--output, alias --outfile, as in every command; the
 * grammar is src/core/opt.c's; an output name that the format registry
 * gives to another format is refused). Reads
 * the file, has sonde_report_html_from_json check and wrap it with the
 * viewer installed in <package>/viewer, writes the page (atomically for a
 * file), and without -o opens it with the user's browser ($BROWSER, else
 * xdg-open on a desktop) when one can be started — never an error when
 * none can. Linked into build/bin/sonde only, with html_json.c (cJSON);
 * main.c reaches it through a weak reference. No signal handlers.
 */
#include "cli.h"

#include "../core/opt.h"
#include "../report/report.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define VIEW_MAX_INPUT ((size_t)1 << 30) /* a profile larger than 1 GiB is refused */
#define VIEW_MAX_BROWSER_ARGS 32

/* The options' target: -o's value, --force. */
typedef struct view_opts {
    const char *out;
    bool force;
} view_opts_t;

static int view_apply(void *target, const sonde_opt_t *opt, const char *word, const char *value,
                      char *err, size_t err_len)
{
    view_opts_t *o = target;
    if (opt->id == 1)
        o->force = true;
    else
        o->out = value;
    return 0;
}

static const sonde_opt_t view_table[] = {
    {"--output", "--outfile", 'o', SONDE_OPT_VALUE, 0, SONDE_OPT_NONEMPTY, "FILE", "a file name",
     "write the page to FILE ('-' for standard output) and do not open it", NULL},
    {"--force", NULL, 0, SONDE_OPT_FLAG, 1, 0, NULL, NULL,
     "replace the output file even when it is not a report sonde wrote", NULL},
};
static const sonde_opt_family_t view_options = {
    NULL, view_table, SONDE_ARRAY_LEN(view_table), view_apply, NULL,
};

/* The other formats, from the registry: view writes html only. */
static void view_help_formats(sonde_buf_t *out)
{
    sonde_buf_t text = SONDE_BUF_INIT;
    sonde_buf_puts(&text, "The other formats (");
    for (size_t i = 0, n = 0; i < sonde_n_formats; i++)
        if (strcmp(sonde_formats[i].name, "html") != 0)
            sonde_buf_printf(&text, "%s%s", n++ ? ", " : "", sonde_formats[i].name);
    sonde_buf_puts(&text, ") are written while profiling: 'sonde run --format FORMAT' or 'sonde "
                          "attach --format FORMAT'.");
    if (sonde_buf_error(&text))
        out->error = -ENOMEM;
    else
        sonde_opt_help_item(out, NULL, text.data, 0);
    sonde_buf_free(&text);
}

static const sonde_opt_family_t view_formats_note = {NULL, NULL, 0, NULL, view_help_formats};
static const sonde_opt_family_t *const view_families[] = {&view_options, &view_formats_note, NULL};

/* The one profile to read. */
static int view_positional(void *arg, const char *word, char *err, size_t err_len)
{
    const char **in = arg;
    if (*in)
        return sonde_errf(err, err_len, "'sonde view' takes one profile; '%s' is one too many",
                          word);
    *in = word;
    return 1;
}

static const sonde_opt_cmd_t view_command = {
    "view",
    "usage: sonde view [-o FILE] profile.json\n"
    "\n"
    "Builds the HTML report of a JSON profile (written by 'sonde run --json'):\n"
    "one self-contained file that works offline. Without -o it is written next\n"
    "to the profile (profile.html) and opened with your web browser ($BROWSER,\n"
    "else xdg-open) when one is available.\n",
    NULL,
    view_families,
    false,
    view_positional,
};

static void view_help(sonde_buf_t *out)
{
    sonde_opt_help(&view_command, out);
}

/* The default output path: profile.json -> profile.html, else path.html. */
static void view_default_out(const char *in, sonde_buf_t *out)
{
    size_t n = strlen(in);
    if (n > 5 && strcmp(in + n - 5, ".json") == 0)
        sonde_buf_printf(out, "%.*s.html", (int)(n - 5), in);
    else
        sonde_buf_printf(out, "%s.html", in);
}

static bool view_env_set(const char *name)
{
    const char *v = getenv(name);
    return v && *v;
}

/* Whether an executable named name is on $PATH. */
static bool view_on_path(const char *name)
{
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    char dir[PATH_MAX];
    while (*path) {
        size_t n = strcspn(path, ":");
        char file[PATH_MAX + 64];
        snprintf(dir, sizeof dir, "%.*s", (int)n, path);
        snprintf(file, sizeof file, "%s/%s", n ? dir : ".", name);
        if (access(file, X_OK) == 0) return true;
        path += n;
        if (*path == ':') path++;
    }
    return false;
}

/* Starts argv[0] detached (own session, stdio on /dev/null, not our
 * child: a double fork), without waiting for it. Returns 0 once it has
 * been exec'd, or -errno (the exec's error, reported through a
 * close-on-exec pipe). */
static int view_spawn(char *const argv[])
{
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) return -errno;
    pid_t pid = fork();
    if (pid < 0) {
        int rc = -errno;
        close(pipefd[0]);
        close(pipefd[1]);
        return rc;
    }
    if (pid == 0) { /* only async-signal-safe calls from here on */
        close(pipefd[0]);
        setsid();
        pid_t grandchild = fork();
        if (grandchild != 0) _exit(grandchild < 0 ? 1 : 0);
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
            dup2(null, 2);
            if (null > 2) close(null);
        }
        execvp(argv[0], argv);
        int err = errno;
        ssize_t ignored = write(pipefd[1], &err, sizeof err);
        (void)ignored;
        _exit(127);
    }
    close(pipefd[1]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    int err = 0;
    ssize_t got;
    while ((got = read(pipefd[0], &err, sizeof err)) < 0 && errno == EINTR) {
    }
    close(pipefd[0]);
    if (got == (ssize_t)sizeof err) return -err;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return -ECHILD;
    return 0;
}

/* Opens path with the user's browser. On success *how names the command.
 * Returns 0, -ENOENT when no browser is configured or reachable, or the
 * error of starting it. */
static int view_open(const char *path, char *how, size_t how_len)
{
    char words[4096];
    char *argv[VIEW_MAX_BROWSER_ARGS + 2];
    int argc = 0;
    bool placed = false;
    const char *browser = getenv("BROWSER");

    if (browser && *browser) {
        /* $BROWSER: commands separated by ':'; the first is used, split on
         * blanks, "%s" standing for the file (else it is appended). */
        snprintf(words, sizeof words, "%.*s", (int)strcspn(browser, ":"), browser);
        for (char *save = NULL, *w = strtok_r(words, " \t", &save);
             w && argc < VIEW_MAX_BROWSER_ARGS; w = strtok_r(NULL, " \t", &save)) {
            if (strcmp(w, "%s") == 0) {
                argv[argc++] = (char *)path;
                placed = true;
            } else {
                argv[argc++] = w;
            }
        }
    } else if ((view_env_set("DISPLAY") || view_env_set("WAYLAND_DISPLAY")) &&
               view_on_path("xdg-open")) {
        snprintf(words, sizeof words, "xdg-open");
        argv[argc++] = words;
    }
    if (argc == 0) return -ENOENT;
    if (!placed) argv[argc++] = (char *)path;
    argv[argc] = NULL;
    snprintf(how, how_len, "%s", argv[0]);
    return view_spawn(argv);
}

/* Parses the words after "view". Returns 0, 1 for --help, or -1 (message
 * printed). */
static int view_parse(int argc, char **argv, const char **in, const char **out, bool *force)
{
    char err[512] = "";
    view_opts_t opts = {NULL, false};
    void *targets[] = {&opts, NULL};
    sonde_opt_ctx_t ctx = {.targets = targets, .arg = in};
    *in = NULL;
    *out = NULL;
    *force = false;
    if (sonde_opt_parse(&view_command, &ctx, argc, argv, err, sizeof err) < 0) {
        sonde_cli_error("%s", err);
        return -1;
    }
    *out = opts.out;
    *force = opts.force;
    if (ctx.help) return 1;
    if (!*in) {
        sonde_cli_error("no profile given: sonde view profile.json [-o profile.html]");
        return -1;
    }
    /* The registry knows every format's file name; view writes html only. */
    const sonde_format_t *asked = *out ? sonde_format_of_path(*out) : NULL;
    if (asked && strcmp(asked->name, "html") != 0) {
        sonde_cli_error(
            "'sonde view' writes the HTML report only, and '%s' names a %s file; "
            "write %s while profiling ('sonde run --format %s') or give -o a .html name",
            *out, asked->name, asked->name, asked->name);
        return -1;
    }
    return 0;
}

/* Whether path may be written: it does not exist, is not a regular file
 * (a device, a FIFO), or is a report sonde wrote (its generator tag
 * within the first 4 KiB). */
static bool view_may_replace(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return true;
    if (st.st_size == 0) return true;
    FILE *f = fopen(path, "rb");
    if (!f) return true; /* the write says why */
    char head[4097];
    size_t n = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    head[n] = 0;
    return strstr(head, "<meta name=\"generator\" content=\"sonde ") != NULL;
}

int sonde_cli_view(int argc, char **argv)
{
    const char *in = NULL, *out_path = NULL;
    sonde_buf_t json = SONDE_BUF_INIT, page = SONDE_BUF_INIT, default_out = SONDE_BUF_INIT;
    char pkg_dir[4096], viewer_dir[4200], why[256] = "", how[4096] = "";
    char *abs_path = NULL;
    int status = 1;

    bool force = false;
    int parsed = view_parse(argc, argv, &in, &out_path, &force);
    if (parsed != 0) return parsed > 0 ? sonde_cli_help(view_help) : 2;
    int rc = sonde_buf_read_file(&json, in, VIEW_MAX_INPUT, NULL);
    if (rc < 0) {
        sonde_cli_error("cannot read %s: %s", in,
                        rc == -EFBIG    ? "larger than 1 GiB, not a profile"
                        : rc == -EINVAL ? "not a regular file (give the JSON file that "
                                          "'sonde run --json -o FILE' wrote)"
                                        : strerror(-rc));
        goto done;
    }
    if ((rc = sonde_cli_pkg_dir(pkg_dir, sizeof pkg_dir)) < 0) {
        sonde_cli_error("cannot find the sonde package next to this command: %s", strerror(-rc));
        goto done;
    }
    snprintf(viewer_dir, sizeof viewer_dir, "%s/viewer", pkg_dir);
    rc = sonde_report_html_from_json(json.data ? json.data : "", json.len, viewer_dir, &page, why,
                                     sizeof why);
    if (rc == -EBADMSG || rc == -EPROTO) {
        sonde_cli_error("%s is not a sonde profile: %s; give the file 'sonde run --json -o "
                        "FILE' wrote",
                        in, why);
        goto done;
    }
    if (rc < 0) {
        sonde_cli_error(
            "cannot build the report with the viewer in %s: %s; run 'make' first", viewer_dir,
            rc == -EINVAL ? "a viewer file would end its <script> early" : strerror(-rc));
        goto done;
    }

    if (out_path && strcmp(out_path, "-") == 0) {
        if ((rc = sonde_write_fd(1, page.data, page.len)) < 0) {
            sonde_cli_error("cannot write to standard output: %s", strerror(-rc));
            goto done;
        }
        status = 0;
        goto done;
    }
    const char *target = out_path;
    if (!target) {
        view_default_out(in, &default_out);
        if (sonde_buf_error(&default_out)) {
            sonde_cli_error("out of memory");
            goto done;
        }
        target = default_out.data;
    }
    if (!force && !view_may_replace(target)) {
        sonde_cli_error("%s exists and is not a report sonde wrote: give -o another name, or "
                        "--force to replace it",
                        target);
        goto done;
    }
    if ((rc = sonde_write_output(target, page.data, page.len)) < 0) {
        sonde_cli_error("cannot write %s: %s", target, strerror(-rc));
        goto done;
    }
    status = 0;
    if (out_path) {
        printf("wrote %s\n", target);
        goto done;
    }
    abs_path = realpath(target, NULL);
    const char *shown = abs_path ? abs_path : target;
    rc = view_open(shown, how, sizeof how);
    if (rc == 0)
        printf("wrote %s (opened with %s)\n", shown, how);
    else if (rc == -ENOENT && !how[0])
        printf("wrote %s; open it in a web browser (set $BROWSER to have sonde open it)\n", shown);
    else
        printf("wrote %s; could not start %s (%s): open it in a web browser\n", shown, how,
               strerror(-rc));
done:
    free(abs_path);
    sonde_buf_free(&default_out);
    sonde_buf_free(&page);
    sonde_buf_free(&json);
    return status;
}
