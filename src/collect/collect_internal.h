/* collect_internal.h — what the files of src/collect/ share.
 *
 * Owns: the pieces of collect.c (the collector of `sonde run --period`)
 * that children.c (the merge at the end of a run with followed processes)
 * uses too. Runs in the `sonde` process only.
 */
#ifndef SONDE_COLLECT_INTERNAL_H
#define SONDE_COLLECT_INTERNAL_H

#include "collect.h"

#include <stdbool.h>

/* The single-process profiles a merge was made of (pprof's per-process
 * samples, sonde_pprof_opts_t.parts), each with its process's pid. */
typedef struct sonde__collect_parts {
    sonde_profile_t *items;
    size_t n, cap;
} sonde__collect_parts_t;

/* Keeps one (moved in: the caller no longer frees it); on failure frees it. */
void sonde__collect_parts_keep(sonde__collect_parts_t *parts, sonde_profile_t *one);
void sonde__collect_parts_free(sonde__collect_parts_t *parts);
/* Removes the directory and its files. */
void sonde__collect_remove_dir(const char *dir);
/* Whether process pid runs (not a zombie). */
bool sonde__collect_alive(int pid);
/* Writes the merged report as opts asks (gen > 0: the report of the
 * program's image after that many os.exec*, FILE.execN). Prints a
 * one-line error on failure. Returns 0 or -errno. */
int sonde__collect_report(sonde_profile_t *prof, const sonde__collect_parts_t *parts,
                          const sonde_run_opts_t *opts, const char *pkg_dir, int gen,
                          sonde_compress_fn compress);

#endif
