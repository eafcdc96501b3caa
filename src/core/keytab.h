/* keytab.h — a hash table of accumulators keyed by a non-zero 64-bit key.
 *
 * Owns: the open-addressing table (linear probing, power-of-two capacity,
 * at most three quarters full) that the sampling core's line accumulators
 * (src/sample/accum.c: the in-process sampler and the attach reader) and
 * the memory callback (src/ext/memory_hook.c) keep their per-line figures
 * in. Entries are plain structs of any size whose first member
 * is the uint64_t key, 0 meaning an empty slot; the table is the caller's
 * array with its capacity and count, so callers iterate it directly. No
 * locking (callers hold their own); allocates with calloc, so it is not
 * for signal handlers, but it is fine inside the allocator shim's events,
 * which run with the shim's guard set.
 */
#ifndef SONDE_KEYTAB_H
#define SONDE_KEYTAB_H

#include "common.h"

/* The entry of key (non-zero) in the table *slots of *cap entries of
 * entry_size bytes, *used of them taken: found, or created zeroed with
 * its key set. The table is allocated (initial_cap entries, a power of
 * two) or doubled as needed; pointers into it are valid until the next
 * call. Returns NULL when memory runs out (the table is then unchanged). */
void *sonde_keytab_get(void **slots, size_t *cap, size_t *used, size_t entry_size,
                       size_t initial_cap, uint64_t key);

/* The entry of key in the table, or NULL when it has none (or no table).
 * Pure. */
void *sonde_keytab_find(void *slots, size_t cap, size_t entry_size, uint64_t key);

#endif
