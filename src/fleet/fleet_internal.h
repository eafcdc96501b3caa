/* fleet_internal.h — libcurl's functions as upload.c calls them: a table
 * filled at run time (curl_load.c), so that the `sonde` command does not
 * load libcurl and its thirty libraries at every start, only when a run
 * uploads. Private to src/fleet/; the types and constants come from
 * libcurl's own header (the build needs it, the command does not link it).
 */
#ifndef SONDE_FLEET_INTERNAL_H
#define SONDE_FLEET_INTERNAL_H

#include <curl/curl.h>

#include <stddef.h>

/* Each member has the type of the libcurl function it names. Filled once
 * by sonde__curl_load; read-only afterwards. */
typedef struct sonde__curl_api {
    __typeof__(curl_global_init) *global_init;
    __typeof__(curl_easy_init) *easy_init;
    __typeof__(curl_easy_cleanup) *easy_cleanup;
    __typeof__(curl_easy_reset) *easy_reset;
    __typeof__(curl_easy_setopt) *easy_setopt;
    __typeof__(curl_easy_perform) *easy_perform;
    __typeof__(curl_easy_getinfo) *easy_getinfo;
    __typeof__(curl_easy_strerror) *easy_strerror;
    __typeof__(curl_easy_escape) *easy_escape;
    __typeof__(curl_free) *free;
    __typeof__(curl_slist_append) *slist_append;
    __typeof__(curl_slist_free_all) *slist_free_all;
    __typeof__(curl_mime_init) *mime_init;
    __typeof__(curl_mime_addpart) *mime_addpart;
    __typeof__(curl_mime_name) *mime_name;
    __typeof__(curl_mime_filename) *mime_filename;
    __typeof__(curl_mime_type) *mime_type;
    __typeof__(curl_mime_data) *mime_data;
    __typeof__(curl_mime_free) *mime_free;
} sonde__curl_api_t;

/* The table; valid once sonde__curl_load returned 0. */
extern sonde__curl_api_t sonde__curl;

/* Loads libcurl (libcurl.so.4) and runs its global set-up, once per
 * process; call it before any thread of sonde's starts (libcurl's set-up
 * is not thread-safe). Returns 0, or -ENOENT (no libcurl, or one without a
 * function sonde calls) / -ENOMEM (its set-up failed) with a one-line
 * reason in err that says what to install. */
int sonde__curl_load(char *err, size_t err_len);

#endif
