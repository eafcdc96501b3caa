/* html_internal.h — shared by the HTML report's files of src/report/ only.
 *
 * Owns: the Content-Security-Policy hash helper (html_csp.c) that html.c
 * uses to allow exactly the viewer's inline scripts and nothing else.
 * Plain C, no libpython, never in a signal handler or an allocator hook.
 */
#ifndef SONDE_REPORT_HTML_INTERNAL_H
#define SONDE_REPORT_HTML_INTERNAL_H

#include "report.h"

#define SONDE__SHA256_LEN 32

/* SHA-256 (FIPS 180-4) of data[0..len-1] into digest. */
void sonde__sha256(const void *data, size_t len, uint8_t digest[SONDE__SHA256_LEN]);

/* Appends the CSP source expression for an inline element whose text is
 * data[0..len-1]: 'sha256-<base64 of the digest>' (quotes included). */
void sonde__csp_hash_source(sonde_buf_t *out, const void *data, size_t len);

#endif
