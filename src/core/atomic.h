/* atomic.h — atomics with the memory order in the name.
 *
 * Owns: the one place where sonde's C code spells C11 atomics (mimalloc's
 * atomic.h style): every load, store and read-modify-write says which
 * ordering it relies on, so a reader never has to guess. Header only, no
 * allocation, async-signal-safe and usable inside allocator hooks.
 */
#ifndef SONDE_ATOMIC_H
#define SONDE_ATOMIC_H

#include <stdatomic.h>

#define sonde_atomic_load_relaxed(p) atomic_load_explicit((p), memory_order_relaxed)
#define sonde_atomic_load_acquire(p) atomic_load_explicit((p), memory_order_acquire)
#define sonde_atomic_load_seq_cst(p) atomic_load_explicit((p), memory_order_seq_cst)
#define sonde_atomic_store_relaxed(p, v) atomic_store_explicit((p), (v), memory_order_relaxed)
#define sonde_atomic_store_release(p, v) atomic_store_explicit((p), (v), memory_order_release)
#define sonde_atomic_store_seq_cst(p, v) atomic_store_explicit((p), (v), memory_order_seq_cst)
#define sonde_atomic_add_relaxed(p, v) atomic_fetch_add_explicit((p), (v), memory_order_relaxed)
#define sonde_atomic_add_seq_cst(p, v) atomic_fetch_add_explicit((p), (v), memory_order_seq_cst)
#define sonde_atomic_sub_seq_cst(p, v) atomic_fetch_sub_explicit((p), (v), memory_order_seq_cst)
#define sonde_atomic_or_relaxed(p, v) atomic_fetch_or_explicit((p), (v), memory_order_relaxed)
#define sonde_atomic_and_relaxed(p, v) atomic_fetch_and_explicit((p), (v), memory_order_relaxed)
#define sonde_atomic_cas_weak_relaxed(p, expected, desired)                                        \
    atomic_compare_exchange_weak_explicit((p), (expected), (desired), memory_order_relaxed,        \
                                          memory_order_relaxed)
#define sonde_atomic_flag_test_and_set_acquire(p)                                                  \
    atomic_flag_test_and_set_explicit((p), memory_order_acquire)
#define sonde_atomic_flag_clear_release(p) atomic_flag_clear_explicit((p), memory_order_release)

#endif
