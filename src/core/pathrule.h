/* pathrule.h — which source files are the program's own: pure string rules.
 *
 * Owns: the path tests behind sonde's default "profile the program, not its
 * libraries" rule, shared by `sonde run`'s filter (src/ext/filter.c, which
 * learns the library directories from the running interpreter) and the
 * attach reader (src/attach/, which infers them from the target's
 * executable). Pure functions of their arguments; no allocation except in
 * sonde_path_dir_prefix; safe anywhere but a signal handler.
 */
#ifndef SONDE_PATHRULE_H
#define SONDE_PATHRULE_H

#include "common.h"

/* True for a name that is not a real file: NULL, "", "<frozen os>",
 * "<string>", "<stdin>". */
bool sonde_path_is_pseudo(const char *path);
/* True for the name IPython gives a cell's code in a terminal
 * ("<ipython-input-3-5f1c2a...>"): not a file, but the user's own code,
 * whose text Python's linecache holds. */
bool sonde_path_is_ipython_cell(const char *path);
/* True when the last component of dir is site-packages or dist-packages
 * (trailing slashes ignored). */
bool sonde_path_is_site_dir(const char *dir);
/* True when some directory component of path is site-packages or
 * dist-packages. */
bool sonde_path_in_site_dir(const char *path);
/* True when path starts with one of the n prefixes (each a directory
 * ending in '/', as sonde_path_dir_prefix makes them). */
bool sonde_path_has_prefix(const char *path, char *const *prefixes, int n);
/* dir as a prefix: trailing slashes dropped (but the first character
 * kept), one '/' added ("/usr/lib/" for "/usr/lib//"). Returns a malloc'd string, or NULL when dir
 * is NULL or empty (errno 0) or memory ran out (errno ENOMEM). */
char *sonde_path_dir_prefix(const char *dir);

#endif
