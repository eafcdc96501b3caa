/* model_internal.h — shared by the files of src/model/ only.
 *
 * Owns: the source-text loader used by sonde_profile_finish. Not part of
 * the model's interface; writers read sonde_file_stats_t.source instead.
 */
#ifndef SONDE_MODEL_INTERNAL_H
#define SONDE_MODEL_INTERNAL_H

#include "model.h"

/* Bounds on what is loaded from a source file: longer files keep their
 * first lines only (a partial last line is dropped). */
#define SONDE_SOURCE_MAX_BYTES ((size_t)16 << 20)
#define SONDE_SOURCE_MAX_LINES ((size_t)1 << 20)

/* Loads the lines of the regular file at path (UTF-8 or not, bytes are kept
 * as they are; "\n", "\r\n" and "\r" end lines as they do for Python's
 * line numbers; a leading UTF-8 BOM is dropped; tabs are kept). On success
 * *lines_out is an owned array (non-NULL even for an empty file) of
 * *n_out owned strings. Returns 0, -ENOMEM, or another -errno when the file
 * cannot be read (then nothing is allocated). */
int sonde__source_load(const char *path, char ***lines_out, size_t *n_out);

/* Splits text held in memory (len bytes; no size cap beyond the line
 * count) into lines by the same rules. Returns 0 or -ENOMEM. */
int sonde__source_split(const char *text, size_t len, bool truncated, char ***lines_out,
                        size_t *n_out);

/* Frees what sonde__source_load returned (NULL is fine). */
void sonde__source_free(char **lines, size_t n);

/* Frees the stacks, frames and thread names of a profile (stacks.c). */
void sonde__stacks_free(sonde_profile_t *prof);

#endif
