/* test_pathrule.c — unit tests of the shared file rule (src/core/pathrule.c):
 * pseudo-files, site-packages / dist-packages as the last component of a
 * directory and anywhere in a path, prefix matching, and the normalisation
 * of directories into prefixes. */
#include "core/pathrule.h"

#include "check.h"

#include <stdlib.h>
#include <string.h>

int main(void)
{
    check(sonde_path_is_pseudo(NULL) && sonde_path_is_pseudo("") &&
              sonde_path_is_pseudo("<frozen importlib._bootstrap>") &&
              sonde_path_is_pseudo("<string>"),
          "pseudo_files", "a pseudo-file passed");
    check(!sonde_path_is_pseudo("/app/x.py") && !sonde_path_is_pseudo("x.py"), "real_files",
          "a real file was called pseudo");

    check(sonde_path_is_site_dir("/usr/lib/python3/dist-packages") &&
              sonde_path_is_site_dir("/v/lib/python3.11/site-packages/") &&
              sonde_path_is_site_dir("site-packages"),
          "site_dirs", "missed");
    check(!sonde_path_is_site_dir("/usr/lib/python3.11") &&
              !sonde_path_is_site_dir("/x/my-site-packages") && !sonde_path_is_site_dir(NULL),
          "not_site_dirs", "false positive");

    check(sonde_path_in_site_dir("/v/lib/python3.11/site-packages/pkg/mod.py") &&
              sonde_path_in_site_dir("/usr/lib/python3/dist-packages/numpy/core.py"),
          "in_site_dir", "missed");
    check(!sonde_path_in_site_dir("/app/site-packages.py") &&
              !sonde_path_in_site_dir("/app/mysite-packages/x.py") &&
              !sonde_path_in_site_dir("/app/x.py") && !sonde_path_in_site_dir(NULL),
          "not_in_site_dir", "false positive");

    char *prefixes[2] = {sonde_path_dir_prefix("/usr/lib/python3.11//"),
                         sonde_path_dir_prefix("/opt/py/lib/python3.11")};
    check(prefixes[0] && strcmp(prefixes[0], "/usr/lib/python3.11/") == 0 && prefixes[1] &&
              strcmp(prefixes[1], "/opt/py/lib/python3.11/") == 0,
          "dir_prefix_normalised", "%s %s", prefixes[0] ? prefixes[0] : "(null)",
          prefixes[1] ? prefixes[1] : "(null)");
    check(sonde_path_has_prefix("/usr/lib/python3.11/os.py", prefixes, 2) &&
              sonde_path_has_prefix("/opt/py/lib/python3.11/json/decoder.py", prefixes, 2),
          "prefix_matches", "missed");
    check(!sonde_path_has_prefix("/usr/lib/python3.110/x.py", prefixes, 2) &&
              !sonde_path_has_prefix("/usr/lib/python3.1", prefixes, 2) &&
              !sonde_path_has_prefix(NULL, prefixes, 2) &&
              !sonde_path_has_prefix("/usr/lib/python3.11/os.py", prefixes, 0),
          "prefix_is_a_directory", "false positive");
    check(sonde_path_dir_prefix(NULL) == NULL && sonde_path_dir_prefix("") == NULL && errno == 0,
          "empty_dir_no_prefix", "made one");
    free(prefixes[0]);
    free(prefixes[1]);
    return check_exit_code();
}
