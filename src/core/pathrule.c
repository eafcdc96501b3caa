/* pathrule.c — which source files are the program's own (pathrule.h).
 *
 * Owns: the pure path tests of sonde's default file rule. Called by the
 * in-process filter (src/ext/filter.c) once per code object, and by the
 * attach reader (src/attach/) once per code object of the target. Nothing
 * here runs in a signal handler.
 */
#include "pathrule.h"

#include <stdlib.h>
#include <string.h>

bool sonde_path_is_pseudo(const char *path)
{
    return !path || !*path || path[0] == '<';
}

bool sonde_path_is_ipython_cell(const char *path)
{
    return path && strncmp(path, "<ipython-input-", 15) == 0;
}

/* Whether the n bytes at name are "site-packages" or "dist-packages". */
static bool pathrule_site_name(const char *name, size_t n)
{
    return (n == 13 && memcmp(name, "site-packages", 13) == 0) ||
           (n == 13 && memcmp(name, "dist-packages", 13) == 0);
}

bool sonde_path_is_site_dir(const char *dir)
{
    if (!dir) return false;
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    size_t start = n;
    while (start > 0 && dir[start - 1] != '/')
        start--;
    return pathrule_site_name(dir + start, n - start);
}

bool sonde_path_in_site_dir(const char *path)
{
    if (!path) return false;
    const char *component = path;
    for (const char *slash = strchr(component, '/'); slash; slash = strchr(component, '/')) {
        if (pathrule_site_name(component, (size_t)(slash - component))) return true;
        component = slash + 1;
    }
    return false; /* the last component is the file itself */
}

bool sonde_path_has_prefix(const char *path, char *const *prefixes, int n)
{
    if (!path) return false;
    for (int i = 0; i < n; i++)
        if (prefixes[i] && strncmp(path, prefixes[i], strlen(prefixes[i])) == 0) return true;
    return false;
}

char *sonde_path_dir_prefix(const char *dir)
{
    errno = 0;
    if (!dir || !*dir) return NULL;
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    char *copy = malloc(n + 2);
    if (!copy) {
        errno = ENOMEM;
        return NULL;
    }
    memcpy(copy, dir, n);
    copy[n] = '/';
    copy[n + 1] = 0;
    return copy;
}
