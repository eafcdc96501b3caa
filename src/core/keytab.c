/* keytab.c — the accumulator table of keytab.h. Contracts there. */
#include "keytab.h"

#include <stdlib.h>
#include <string.h>

static size_t keytab_hash(uint64_t key)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return (size_t)key;
}

static inline uint64_t keytab_key(const char *slots, size_t entry_size, size_t i)
{
    uint64_t key;
    memcpy(&key, slots + i * entry_size, sizeof key);
    return key;
}

/* Doubles the table (or makes the first one). Returns 0 or -ENOMEM. */
static int keytab_grow(void **slots, size_t *cap, size_t entry_size, size_t initial_cap)
{
    size_t new_cap = *cap ? *cap * 2 : initial_cap;
    char *fresh = calloc(new_cap, entry_size);
    if (!fresh) return -ENOMEM;
    const char *old = *slots;
    for (size_t i = 0; i < *cap; i++) {
        uint64_t key = keytab_key(old, entry_size, i);
        if (!key) continue;
        size_t j = keytab_hash(key) & (new_cap - 1);
        while (keytab_key(fresh, entry_size, j))
            j = (j + 1) & (new_cap - 1);
        memcpy(fresh + j * entry_size, old + i * entry_size, entry_size);
    }
    free(*slots);
    *slots = fresh;
    *cap = new_cap;
    return 0;
}

void *sonde_keytab_get(void **slots, size_t *cap, size_t *used, size_t entry_size,
                       size_t initial_cap, uint64_t key)
{
    sonde_assert(key != 0 && entry_size >= sizeof key);
    if ((*used + 1) * 4 > *cap * 3 && keytab_grow(slots, cap, entry_size, initial_cap) < 0)
        return NULL;
    char *base = *slots;
    size_t j = keytab_hash(key) & (*cap - 1);
    uint64_t at;
    while ((at = keytab_key(base, entry_size, j)) && at != key)
        j = (j + 1) & (*cap - 1);
    char *entry = base + j * entry_size;
    if (!at) {
        memcpy(entry, &key, sizeof key);
        (*used)++;
    }
    return entry;
}

void *sonde_keytab_find(void *slots, size_t cap, size_t entry_size, uint64_t key)
{
    if (!slots || !cap || !key) return NULL;
    char *base = slots;
    size_t j = keytab_hash(key) & (cap - 1);
    uint64_t at;
    for (size_t n = 0; n < cap && (at = keytab_key(base, entry_size, j)); n++) {
        if (at == key) return base + j * entry_size;
        j = (j + 1) & (cap - 1);
    }
    return NULL;
}
