/* test_keytab.c — the accumulator table (src/core/keytab.h) the sampler
 * and the memory callback keep their per-line figures in.
 *
 * Fills a table far past its first capacity with keys that collide in the
 * low bits, and checks after every growth that each key still finds its
 * own entry (with the figures it was given), that new entries come zeroed,
 * that the count matches, and that the table never runs fuller than three
 * quarters. Entries of two sizes are used.
 */
#include "core/keytab.h"

#include "check.h"

typedef struct {
    uint64_t key;
    uint64_t hits;
    double sum;
    char pad[40];
} big_entry_t;

typedef struct {
    uint64_t key;
    uint32_t hits;
} small_entry_t;

static void test_big(void)
{
    big_entry_t *slots = NULL;
    size_t cap = 0, used = 0;
    const size_t n = 5000;
    bool zeroed = true, ok = true, load_ok = true;
    for (size_t i = 1; i <= n; i++) {
        uint64_t key = (uint64_t)i << 32; /* low 32 bits all zero */
        big_entry_t *e = sonde_keytab_get((void **)&slots, &cap, &used, sizeof *slots, 16, key);
        if (!e) {
            ok = false;
            break;
        }
        if (e->hits || e->sum != 0) zeroed = false;
        e->hits = i;
        e->sum = (double)i / 2;
        if (used * 4 > cap * 3) load_ok = false;
    }
    check(ok && used == n, "keytab_fills", "used %zu of %zu", used, n);
    check(zeroed, "keytab_new_entries_zeroed", "a new entry held old figures");
    check(load_ok && (cap & (cap - 1)) == 0, "keytab_load_and_power_of_two", "cap %zu", cap);
    size_t wrong = 0;
    for (size_t i = 1; i <= n; i++) {
        big_entry_t *e =
            sonde_keytab_get((void **)&slots, &cap, &used, sizeof *slots, 16, (uint64_t)i << 32);
        if (!e || e->key != (uint64_t)i << 32 || e->hits != i || e->sum != (double)i / 2) wrong++;
    }
    check(wrong == 0 && used == n, "keytab_finds_every_key", "%zu wrong, used %zu", wrong, used);
    size_t counted = 0;
    for (size_t i = 0; i < cap; i++)
        counted += slots[i].key != 0;
    check(counted == n, "keytab_iterable", "%zu keys in the slots", counted);
    free(slots);
}

static void test_small(void)
{
    small_entry_t *slots = NULL;
    size_t cap = 0, used = 0;
    for (int round = 0; round < 3; round++)
        for (uint64_t key = 1; key <= 100; key++) {
            small_entry_t *e =
                sonde_keytab_get((void **)&slots, &cap, &used, sizeof *slots, 4, key * 0x9e37);
            if (e) e->hits++;
        }
    bool ok = used == 100;
    for (uint64_t key = 1; key <= 100 && ok; key++) {
        small_entry_t *e =
            sonde_keytab_get((void **)&slots, &cap, &used, sizeof *slots, 4, key * 0x9e37);
        ok = e && e->hits == 3;
    }
    check(ok && used == 100, "keytab_small_entries_accumulate", "used %zu", used);
    free(slots);
}

/* find: what get made, never creates; NULL for a missing key or table. */
static void test_find(void)
{
    small_entry_t *slots = NULL;
    size_t cap = 0, used = 0;
    for (uint64_t key = 1; key <= 50; key++) {
        small_entry_t *e = sonde_keytab_get((void **)&slots, &cap, &used, sizeof *slots, 4, key);
        if (e) e->hits = key;
    }
    bool ok = true;
    for (uint64_t key = 1; key <= 50 && ok; key++) {
        small_entry_t *e = sonde_keytab_find(slots, cap, sizeof *slots, key);
        ok = e && e->hits == key;
    }
    check(ok && !sonde_keytab_find(slots, cap, sizeof *slots, 51) &&
              !sonde_keytab_find(slots, cap, sizeof *slots, 0) &&
              !sonde_keytab_find(NULL, 0, sizeof *slots, 3) && used == 50,
          "keytab_find", "used %zu", used);
    free(slots);
}

int main(void)
{
    test_find();
    test_big();
    test_small();
    return check_exit_code();
}
