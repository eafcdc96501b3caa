/* python.c — which interpreter `sonde run` and `sonde trace` start.
 *
 * Owns: the choice of the interpreter (--python PATH, else $SONDE_PYTHON,
 * else, with no virtual environment activated, the python3 of the venv
 * this command is installed in, else `python3` found on PATH as the shell
 * finds it, so an activated virtual environment comes first), its search
 * on PATH, and the check
 * that this sonde has an extension module for that interpreter's version
 * (one line naming the command that builds one when it has not). Called
 * by sonde_cli_launch (start.c) just before the hand-over. The version is
 * read without running the interpreter: from the name its path resolves
 * to (python3.12), else from a virtual environment's pyvenv.cfg; when
 * neither says, the check is left to the boot hook (sonde/_boot/
 * sitecustomize.py reports an extension that does not load). No
 * libpython, no signal handlers.
 */
#include "cli.h"

#include "../core/buf.h"
#include "../prim/prim.h"
#include "../pyread/pyversions.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PYTHON_DEFAULT "python3"
#define PYTHON_EXT_PREFIX "_sonde.cpython-" /* the extension's file name, up to its ABI tag */
#define PYTHON_TAG_MAX 16                   /* "312", "313t", "311d": digits and ABI flags */
#define PYTHON_CFG_LINES 64                 /* lines of pyvenv.cfg read */

static bool python_is_executable(const char *path);

/* The interpreter given with --python (global or `run`'s); NULL when none. */
static const char *python_chosen;

void sonde_cli_choose_python(const char *path)
{
    if (path && *path) python_chosen = path;
}

/* The interpreter of the virtual environment this command is installed
 * in (pip install sonde into a venv: <venv>/bin/sonde beside
 * <venv>/bin/python3, <venv>/pyvenv.cfg above), as every console script of
 * a venv runs its own; NULL elsewhere. */
static const char *python_own_venv(void)
{
    static char own[PATH_MAX];
    char exe[PATH_MAX], cfg[PATH_MAX + 32];
    if (sonde_prim_self_exe(exe, sizeof exe) < 0) return NULL;
    char *slash = strrchr(exe, '/');
    if (!slash) return NULL;
    *slash = 0; /* <venv>/bin */
    if (snprintf(cfg, sizeof cfg, "%s/../pyvenv.cfg", exe) >= (int)sizeof cfg ||
        access(cfg, R_OK) != 0)
        return NULL;
    if (snprintf(own, sizeof own, "%s/" PYTHON_DEFAULT, exe) >= (int)sizeof own) return NULL;
    return python_is_executable(own) ? own : NULL;
}

const char *sonde_cli_python(void)
{
    if (python_chosen) return python_chosen;
    const char *env = getenv("SONDE_PYTHON");
    if (env && *env) return env;
    /* an activated venv wins (its python3 comes first on PATH); without
     * one, a sonde installed in a venv runs that venv's interpreter */
    const char *active = getenv("VIRTUAL_ENV");
    const char *own = active && *active ? NULL : python_own_venv();
    return own ? own : PYTHON_DEFAULT;
}

/* Whether path is an executable regular file. */
static bool python_is_executable(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* Finds name on PATH as execvp would (an empty entry is the current
 * directory; no PATH: the system's default). Returns 0 with the path in
 * out, or -ENOENT / -ENAMETOOLONG. */
static int python_search_path(const char *name, char *out, size_t len)
{
    char fallback[256] = "/bin:/usr/bin";
    const char *path = getenv("PATH");
    if (!path) {
        size_t n = confstr(_CS_PATH, fallback, sizeof fallback);
        if (n == 0 || n > sizeof fallback) snprintf(fallback, sizeof fallback, "/bin:/usr/bin");
        path = fallback;
    }
    for (const char *p = path;;) {
        size_t n = strcspn(p, ":");
        int w = n ? snprintf(out, len, "%.*s/%s", (int)n, p, name) : snprintf(out, len, "%s", name);
        if (w > 0 && (size_t)w < len && python_is_executable(out)) return 0;
        if (!p[n]) break;
        p += n + 1;
    }
    return -ENOENT;
}

/* The ABI tag of "python3.N[flags]" ("3N[flags]", as in the extension's
 * file name) in tag; false when name is not of that form. */
static bool python_tag_of_name(const char *name, char *tag, size_t len)
{
    if (strncmp(name, "python3.", 8) != 0) return false;
    const char *p = name + 8;
    size_t digits = strspn(p, "0123456789");
    if (digits == 0 || digits > 3) return false;
    for (const char *f = p + digits; *f; f++)
        if (*f < 'a' || *f > 'z') return false;
    return (size_t)snprintf(tag, len, "3%s", p) < len;
}

/* The ABI tag from a virtual environment's pyvenv.cfg ("version = 3.12.1"
 * or "version_info = 3.12.1.final.0"), two directories above path (the
 * path as given, not resolved: the environment's bin/python3). */
static bool python_tag_of_venv(const char *path, char *tag, size_t len)
{
    sonde_buf_t cfg_path = SONDE_BUF_INIT;
    const char *slash = strrchr(path, '/');
    bool found = false;
    sonde_buf_printf(&cfg_path, "%.*s/../pyvenv.cfg", slash ? (int)(slash - path) : 1,
                     slash ? path : ".");
    FILE *cfg = sonde_buf_error(&cfg_path) ? NULL : fopen(cfg_path.data, "r");
    sonde_buf_free(&cfg_path);
    if (!cfg) return false;
    char line[256];
    for (int lines = 0; !found && lines < PYTHON_CFG_LINES && fgets(line, sizeof line, cfg);
         lines++) {
        char key[32];
        unsigned major = 0, minor = 0;
        if (sscanf(line, " %31[a-z_] = %u.%u", key, &major, &minor) == 3 &&
            (strcmp(key, "version") == 0 || strcmp(key, "version_info") == 0) && major == 3)
            found = (size_t)snprintf(tag, len, "3%u", minor) < len;
    }
    fclose(cfg);
    return found;
}

/* "3.12" (and flags: "3.13t") for an ABI tag "312". */
static void python_tag_text(const char *tag, char *out, size_t len)
{
    snprintf(out, len, "%c.%s", tag[0], tag + 1);
}

/* The tags of the extension modules in pkg_dir, as "3.11, 3.12" in have;
 * whether one has the tag want. n_have: how many there are. */
static bool python_pkg_has(const char *pkg_dir, const char *want, char *have, size_t len,
                           int *n_have)
{
    bool found = false;
    *n_have = 0;
    have[0] = 0;
    DIR *dir = opendir(pkg_dir);
    if (!dir) return false;
    size_t prefix = strlen(PYTHON_EXT_PREFIX);
    for (struct dirent *e = readdir(dir); e; e = readdir(dir)) {
        if (strncmp(e->d_name, PYTHON_EXT_PREFIX, prefix) != 0) continue;
        const char *tag = e->d_name + prefix;
        size_t n = strcspn(tag, "-.");
        if (n == 0 || n >= PYTHON_TAG_MAX) continue;
        char text[PYTHON_TAG_MAX + 2], own[PYTHON_TAG_MAX];
        snprintf(own, sizeof own, "%.*s", (int)n, tag);
        if (strcmp(own, want) == 0) found = true;
        python_tag_text(own, text, sizeof text);
        size_t used = strlen(have);
        snprintf(have + used, len - used, "%s%s", used ? ", " : "", text);
        (*n_have)++;
    }
    closedir(dir);
    return found;
}

/* Whether this sonde can serve the interpreter at path (named word by the
 * user): 0, or -ENOEXEC with a one-line message in err. An interpreter
 * whose version cannot be told without running it passes (the boot hook
 * reports a module that does not load). */
static int python_check_version(const char *word, const char *path, const char *pkg_dir, char *err,
                                size_t err_len)
{
    char tag[PYTHON_TAG_MAX] = "", shown[PYTHON_TAG_MAX + 2], have[256];
    char *real = realpath(path, NULL);
    const char *base = real ? strrchr(real, '/') : NULL;
    bool known = base && python_tag_of_name(base + 1, tag, sizeof tag);
    bool python2 = base && strncmp(base + 1, "python2", 7) == 0;
    free(real);
    if (python2) {
        snprintf(err, err_len,
                 "%s is Python 2, which sonde cannot profile (it reads CPython %s); name "
                 "another interpreter with --python PATH or SONDE_PYTHON",
                 path, SONDE_PY_RANGE_TEXT);
        return -ENOEXEC;
    }
    if (!known) known = python_tag_of_venv(path, tag, sizeof tag);
    if (!known) return 0;
    python_tag_text(tag, shown, sizeof shown);
    int n_have = 0;
    if (python_pkg_has(pkg_dir, tag, have, sizeof have, &n_have) || n_have == 0) return 0;
    const char *named = strcmp(word, path) == 0 ? "" : " (";
    unsigned minor = (unsigned)atoi(tag + 1);
    if (!SONDE_PY_SUPPORTED(3, minor))
        snprintf(err, err_len,
                 "%s%s%s%s is Python %s, which sonde cannot profile (it reads CPython "
                 "%s); name another interpreter with --python PATH or SONDE_PYTHON",
                 word, named, *named ? path : "", *named ? ")" : "", shown, SONDE_PY_RANGE_TEXT);
    else
        snprintf(err, err_len,
                 "%s%s%s%s is Python %s, and this sonde is built for Python %s only; build it "
                 "for this interpreter with 'make PYTHON=%s', or name another with --python PATH",
                 word, named, *named ? path : "", *named ? ")" : "", shown, have, path);
    return -ENOEXEC;
}

int sonde_cli_find_python(const char *pkg_dir, char *path, size_t len, char *err, size_t err_len)
{
    const char *word = sonde_cli_python();
    if (strchr(word, '/')) {
        if ((size_t)snprintf(path, len, "%s", word) >= len) {
            snprintf(err, err_len, "the interpreter's path is too long: %s", word);
            return -ENAMETOOLONG;
        }
    } else if (python_search_path(word, path, len) < 0) {
        snprintf(err, err_len,
                 "cannot find '%s' on PATH; name the interpreter with --python PATH or "
                 "SONDE_PYTHON",
                 word);
        return -ENOENT;
    }
    return python_check_version(word, path, pkg_dir, err, err_len);
}
