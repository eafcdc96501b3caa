/* handover_internal.h — shared by the files of src/handover/ only.
 *
 * Owns: the one cursor that both writes and reads the format (codec.c),
 * so that the model's walk (walk.c) is written once for both directions: a
 * field walked is a field written and read back, in the same place. A
 * cursor's error is sticky: after the first one every call does nothing,
 * and the walk checks once at the end.
 */
#ifndef SONDE_HANDOVER_INTERNAL_H
#define SONDE_HANDOVER_INTERNAL_H

#include "handover.h"

/* The records, in the order they come (each exactly once). */
enum {
    SONDE__HO_RUN = 1,   /* what was run, how it ended, its totals and partial counts */
    SONDE__HO_MEMORY,    /* the run's memory figures and footprint timeline */
    SONDE__HO_FIGURES,   /* what the profile knows of each source with figures */
    SONDE__HO_FILES,     /* files, their functions, lines and sources */
    SONDE__HO_STACKS,    /* interned frames, threads, stacks */
    SONDE__HO_PROCESSES, /* the processes the profile covers */
    SONDE__HO_END,       /* empty: nothing was cut at a record's end */
};

typedef struct sonde__ho_io {
    bool reading;
    sonde_buf_t *out;         /* writing: appended to */
    const unsigned char *at;  /* reading: the next byte */
    const unsigned char *end; /* reading: the end of the record being read */
    int rc;                   /* the first error; 0 */
    const char *why;          /* what was wrong (static text) */
} sonde__ho_io_t;

/* Records the first error (rc < 0) with its reason. */
void sonde__ho_fail(sonde__ho_io_t *io, int rc, const char *why);
static inline bool sonde__ho_ok(const sonde__ho_io_t *io)
{
    return io->rc == 0;
}

/* One field each way: writing appends *v, reading sets *v. */
void sonde__ho_u64(sonde__ho_io_t *io, uint64_t *v);
void sonde__ho_u32(sonde__ho_io_t *io, uint32_t *v);
void sonde__ho_int(sonde__ho_io_t *io, int *v);
void sonde__ho_bool(sonde__ho_io_t *io, bool *v);
/* A double, bit for bit; read back, it must be finite and within
 * +-SONDE__HO_MAX_NUMBER (every conversion to an integer stays defined). */
void sonde__ho_f64(sonde__ho_io_t *io, double *v);
#define SONDE__HO_MAX_NUMBER 9007199254740992.0 /* 2^53 */
/* A string: NULL allowed only with nullable (else writing one fails with
 * -EINVAL and reading one with -EPROTO); read back, it is allocated, holds
 * no NUL and *s must have been NULL. */
void sonde__ho_str(sonde__ho_io_t *io, char **s, bool nullable);
/* A string into a fixed array of size bytes (NUL-terminated). */
void sonde__ho_chars(sonde__ho_io_t *io, char *s, size_t size);

/* A count of elements that each take at least min_bytes of the format:
 * written, it must fit in 32 bits (-EOVERFLOW); read back, the record must
 * have that many bytes left (-EPROTO), so that no count allocates more
 * than the file's size allows. Returns whether the walk goes on. */
bool sonde__ho_count(sonde__ho_io_t *io, size_t *n, size_t min_bytes);
/* Reading: *items becomes n zeroed elements (NULL for n 0). Writing:
 * nothing. Returns whether the walk goes on (-ENOMEM). */
bool sonde__ho_alloc(sonde__ho_io_t *io, void **items, size_t n, size_t elem);

/* A record around the fields walked between begin and end. Writing:
 * begin appends the tag and room for the length, end fills the length in.
 * Reading: begin checks the tag and that the length fits, end that the
 * record was read to its last byte. *mark carries what end needs. */
void sonde__ho_record_begin(sonde__ho_io_t *io, uint32_t tag, uintptr_t *mark);
void sonde__ho_record_end(sonde__ho_io_t *io, uintptr_t mark);

/* The profile's walk (walk.c): every field of sonde_profile_t and of what
 * it holds, in records. Reading fills prof (empty; on error it holds part
 * of the file, which sonde_profile_free frees). */
void sonde__ho_walk(sonde__ho_io_t *io, sonde_profile_t *prof);

#endif
