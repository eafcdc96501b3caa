/* curl_load.c — libcurl, loaded when a run uploads (--upload).
 *
 * Owns the table of libcurl's functions (fleet_internal.h). Linking
 * libcurl made every `sonde` command load it and the thirty libraries it
 * needs (TLS, Kerberos, LDAP, SSH...): about 5 ms of each start, for a
 * feature only --upload uses. So the command links none of it; the first
 * fleet that uploads opens libcurl.so.4 (the soname of every libcurl since
 * 7.16, which is also what linking used) and looks its functions up.
 * Called by fleet.c on the thread that starts the fleet, before its upload
 * thread exists; nothing here runs in a signal handler.
 */
#include "fleet_internal.h"

#include "../core/buf.h"
#include "../core/common.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#define CURL_LOAD_LIBRARY "libcurl.so.4"

sonde__curl_api_t sonde__curl;

static const struct {
    const char *name;
    size_t offset; /* of the member in sonde__curl_api_t */
} curl_load_symbols[] = {
#define CURL_LOAD_SYM(member, name)                                                                \
    {                                                                                              \
        name, offsetof(sonde__curl_api_t, member)                                                  \
    }
    CURL_LOAD_SYM(global_init, "curl_global_init"),
    CURL_LOAD_SYM(easy_init, "curl_easy_init"),
    CURL_LOAD_SYM(easy_cleanup, "curl_easy_cleanup"),
    CURL_LOAD_SYM(easy_reset, "curl_easy_reset"),
    CURL_LOAD_SYM(easy_setopt, "curl_easy_setopt"),
    CURL_LOAD_SYM(easy_perform, "curl_easy_perform"),
    CURL_LOAD_SYM(easy_getinfo, "curl_easy_getinfo"),
    CURL_LOAD_SYM(easy_strerror, "curl_easy_strerror"),
    CURL_LOAD_SYM(easy_escape, "curl_easy_escape"),
    CURL_LOAD_SYM(free, "curl_free"),
    CURL_LOAD_SYM(slist_append, "curl_slist_append"),
    CURL_LOAD_SYM(slist_free_all, "curl_slist_free_all"),
    CURL_LOAD_SYM(mime_init, "curl_mime_init"),
    CURL_LOAD_SYM(mime_addpart, "curl_mime_addpart"),
    CURL_LOAD_SYM(mime_name, "curl_mime_name"),
    CURL_LOAD_SYM(mime_filename, "curl_mime_filename"),
    CURL_LOAD_SYM(mime_type, "curl_mime_type"),
    CURL_LOAD_SYM(mime_data, "curl_mime_data"),
    CURL_LOAD_SYM(mime_free, "curl_mime_free"),
#undef CURL_LOAD_SYM
};

int sonde__curl_load(char *err, size_t err_len)
{
    static bool loaded; /* once per process; the caller runs before any thread */
    if (loaded) return 0;
    /* Test-only: the tests name a library that does not exist to see the
     * message a system without libcurl gets (tests/e2e/test_fleet.py). */
    const char *library = getenv("SONDE_TEST_LIBCURL");
    if (!library || !library[0]) library = CURL_LOAD_LIBRARY;
    void *lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        sonde_errf(err, err_len,
                   "--upload needs libcurl, which cannot be loaded (%s); install it (Debian "
                   "and Ubuntu: apt install libcurl4; Fedora: dnf install libcurl)",
                   why ? why : library);
        return -ENOENT;
    }
    sonde__curl_api_t api;
    for (size_t i = 0; i < SONDE_ARRAY_LEN(curl_load_symbols); i++) {
        void *fn = dlsym(lib, curl_load_symbols[i].name);
        if (!fn) {
            dlclose(lib);
            sonde_errf(err, err_len,
                       "--upload needs libcurl 7.56 or newer; %s has no %s: upgrade libcurl",
                       library, curl_load_symbols[i].name);
            return -ENOENT;
        }
        *(void **)((char *)&api + curl_load_symbols[i].offset) = fn;
    }
    if (api.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        dlclose(lib);
        sonde_errf(err, err_len, "cannot start libcurl (curl_global_init failed)");
        return -ENOMEM;
    }
    sonde__curl = api; /* lib stays open for the process's life */
    loaded = true;
    return 0;
}
