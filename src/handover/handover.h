/* handover.h — the hand-over between profiled processes and whoever merges
 * their profiles: its private directory's names and its private format.
 *
 * Owns: everything that crosses the private directory of `sonde run`
 * (src/prim/privdir.c makes it): every file name, suffix and marker, made
 * and parsed here only (names.c); the binary format a followed process
 * hands its profile over in (codec.c frames it, walk.c walks the profile
 * model, one function per struct; docs/ARCHITECTURE.md, "The hand-over of
 * profiles");
 * writing it atomically and reading it back (file.c); the merge the
 * collectors call. Writers: the profiled processes (src/ext/session.c,
 * children.c), at exit or on the sampler thread (no Python API, no stdio;
 * it allocates, under the allocator shim's guard with --memory). Readers:
 * the command's `sonde _children` and `sonde _periods` (src/collect/),
 * which read files other processes wrote: the reader trusts nothing in
 * them. The public JSON report stays an output (src/report/json.c), never
 * the hand-over's format.
 */
#ifndef SONDE_HANDOVER_H
#define SONDE_HANDOVER_H

#include "../core/buf.h"
#include "../model/model.h"

#include <sys/types.h>

/* ---- the directory's names (names.c) ----------------------------------------- */

/* A process's stem: "<pid>-<ns>-g<gen>" (a followed process), "<pid>-root"
 * (the root's profile at its end), "<stem>-x<n>" (the n-th piece handed
 * over before an os.exec*); never a '.', at most this long with its NUL. */
#define SONDE_HANDOVER_STEM_MAX 64

/* What one file of a process says, "<stem><suffix>". */
typedef enum sonde_handover_kind {
    SONDE_HANDOVER_OTHER = 0, /* not a name of the hand-over (a temporary file) */
    SONDE_HANDOVER_LIVE,      /* ".live": the process is profiled (made at its start) */
    SONDE_HANDOVER_SERVICE,   /* ".svc": one of multiprocessing's helpers, which end
                                 after the root: never waited for, never missed */
    SONDE_HANDOVER_PROFILE,   /* ".sonde": its profile, handed over at its end */
    SONDE_HANDOVER_PERIOD,    /* ".p<N>.sonde": what it sampled in period N */
    SONDE_HANDOVER_FAILED,    /* ".e<errno>": it could not hand its profile over
                                 (an empty file: a name needs no room in blocks) */
} sonde_handover_kind_t;

/* The files of the directory itself (`sonde run --period`). */
typedef enum sonde_handover_dirfile {
    SONDE_HANDOVER_PERIOD_WORD, /* "period": the count of periods ended, a page the
                                   helper maps read-write and every process read-only */
    SONDE_HANDOVER_HELPER,      /* "helper": the period helper's pid, in text */
    SONDE_HANDOVER_ENDING,      /* "ending": the root's last hand-over is in
                                   ("SIGTERM" in it: the root was stopped so) */
    SONDE_HANDOVER_DRAINED,     /* "drained": the helper sent the last period */
} sonde_handover_dirfile_t;

/* A file name taken apart (sonde_handover_parse). */
typedef struct sonde_handover_name {
    sonde_handover_kind_t kind;
    char stem[SONDE_HANDOVER_STEM_MAX];
    int pid;         /* the stem's process (its leading number) */
    uint64_t number; /* PERIOD: the period; FAILED: the errno (1..4095); else 0 */
} sonde_handover_name_t;

/* The stem of a followed process (pid, a monotonic ns that tells two
 * images of one pid apart, its os.exec* generation) into stem (len bytes).
 * Returns 0 or -ENAMETOOLONG. */
int sonde_handover_stem(char *stem, size_t len, int pid, uint64_t ns, int gen);
/* The stem the root's profile is handed over under at its end. Same returns. */
int sonde_handover_root_stem(char *stem, size_t len, int pid);
/* The stem of the piece-th piece a process (stem) hands over before an
 * os.exec*. Same returns. */
int sonde_handover_exec_stem(char *out, size_t len, const char *stem, unsigned piece);

/* "<dir>/<stem><suffix of kind>" into path (len bytes); number: PERIOD's
 * period, FAILED's errno. Returns 0, -EINVAL (kind OTHER, a stem with a
 * '.' or '/', or empty) or -ENAMETOOLONG. Allocates nothing. */
int sonde_handover_path(char *path, size_t len, const char *dir, const char *stem,
                        sonde_handover_kind_t kind, uint64_t number);
/* "<dir>/<name of which>" into path. Returns 0, -EINVAL or -ENAMETOOLONG. */
int sonde_handover_dir_path(char *path, size_t len, const char *dir,
                            sonde_handover_dirfile_t which);

/* Takes a directory entry's name apart. Returns true for a name of a
 * process's file (kind not OTHER, *out filled); false for anything else
 * (temporary files, the directory's own files, names too long). */
bool sonde_handover_parse(const char *name, sonde_handover_name_t *out);

/* Makes the empty marker "<stem><suffix>" (LIVE, SERVICE or FAILED with its
 * errno). Returns 0 or -errno. */
int sonde_handover_mark(const char *dir, const char *stem, sonde_handover_kind_t kind,
                        uint64_t number);
/* Removes "<stem><suffix>" (best effort). */
void sonde_handover_unmark(const char *dir, const char *stem, sonde_handover_kind_t kind,
                           uint64_t number);
/* Whether "<stem><suffix>" exists. */
bool sonde_handover_has(const char *dir, const char *stem, sonde_handover_kind_t kind,
                        uint64_t number);

/* Writes the directory's file which (HELPER, ENDING, DRAINED) with text
 * (NULL: empty) atomically (a temporary file, then a rename). Returns 0 or
 * -errno. */
int sonde_handover_dir_mark(const char *dir, sonde_handover_dirfile_t which, const char *text);
/* Whether the directory's file which exists. */
bool sonde_handover_dir_has(const char *dir, sonde_handover_dirfile_t which);
/* Reads at most len - 1 bytes of the directory's file which into text
 * (NUL-terminated). Returns the bytes read or -errno. */
ssize_t sonde_handover_dir_read(const char *dir, sonde_handover_dirfile_t which, char *text,
                                size_t len);

/* ---- the format (codec.c, walk.c) ------------------------------------------------ */

/* The format: "SONDEHO\n", a version, the body's length, then records
 * (tag, length, body), in a fixed order, each read to its last byte. A
 * reader takes its own version only: the writer and the reader are one
 * build of sonde. */
#define SONDE_HANDOVER_VERSION 1u
/* The largest hand-over file read back. */
#define SONDE_HANDOVER_MAX_BYTES ((size_t)1 << 30)

/* Appends the whole profile (run, files with their lines, functions and
 * sources, memory figures with timelines, the sources' figures, stacks, frames, threads,
 * processes, exit, partial counts) to out. Returns 0, -ENOMEM, -EOVERFLOW
 * (a count past the format's 32 bits) or -EINVAL (the profile breaks the
 * model's rules: a line's function not among its file's, a NULL that may
 * not be). */
int sonde_handover_encode(const sonde_profile_t *prof, sonde_buf_t *out);

/* Reads len bytes that sonde_handover_encode wrote into prof (initialised,
 * empty). Everything is checked: lengths, counts (against the bytes left),
 * indices, the model's order (files, lines, functions sorted), numbers
 * finite, strings without NUL. Returns 0; -EINVAL (not a hand-over: no
 * magic), -EPROTO (another version, or anything malformed) or -ENOMEM,
 * with prof left empty and *why (when why is not NULL) naming the problem
 * (a static string). */
int sonde_handover_decode(sonde_profile_t *prof, const void *data, size_t len, const char **why);

/* ---- files and the merge (file.c) ------------------------------------------------- */

/* Hands prof over as "<dir>/<stem><suffix of kind>" (PROFILE or PERIOD
 * with its number): encoded, written to a temporary file beside it, then
 * renamed (a reader never sees half of it), without fsync (the directory
 * is private and temporary), with SIGXFSZ held back on the calling thread
 * (a file size limit fails the write, never kills the process). Returns 0
 * or -errno; on error nothing is left but perhaps nothing at all. */
int sonde_handover_write(const char *dir, const char *stem, sonde_handover_kind_t kind,
                         uint64_t number, const sonde_profile_t *prof);

/* Reads the hand-over file at path into prof (initialised, empty). Returns
 * 0 or -errno (sonde_handover_decode's, or the file's), prof empty on
 * error and *why naming a malformed file's problem (NULL for an -errno of
 * the file system). */
int sonde_handover_read(const char *path, sonde_profile_t *prof, const char **why);

/* The collectors' merge: reads the hand-over file at path into one
 * (initialised, empty) and adds it into merged (sonde_profile_merge).
 * Returns 0 (one holds the process's profile, the caller's to free) or
 * -errno (one empty; merged may hold part of it only on -ENOMEM from the
 * merge), *why as sonde_handover_read. */
int sonde_handover_take(sonde_profile_t *merged, const char *path, sonde_profile_t *one,
                        const char **why);

#endif
