/* common.h — project-wide definitions shared by every part of sonde.
 *
 * Owns: the export macro, error conventions, tiered assertions, small
 * helpers. Included by the extension module, the allocator shim and the
 * command-line tool alike, so it must not pull in libpython or allocate.
 * Nothing here runs code by itself; the inline helpers are signal-safe.
 */
#ifndef SONDE_COMMON_H
#define SONDE_COMMON_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define SONDE_VERSION "0.1.0"

/* Everything is built with -fvisibility=hidden; only names marked with
 * SONDE_EXPORT leave a shared object (PyInit__sonde, the shim's hooks). */
#define SONDE_EXPORT __attribute__((visibility("default")))

#define SONDE_LIKELY(x) __builtin_expect(!!(x), 1)
#define SONDE_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define SONDE_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define SONDE_UNUSED __attribute__((unused))

/* Tiered assertions (never allocate, never print through stdio).
 * SONDE_DEBUG=0: none; 1: sonde_assert; 2: also sonde_assert_expensive. */
#ifndef SONDE_DEBUG
#define SONDE_DEBUG 0
#endif
void sonde_assert_fail(const char *expr, const char *file, int line) __attribute__((noreturn));
#if SONDE_DEBUG >= 1
#define sonde_assert(x) (SONDE_LIKELY(x) ? (void)0 : sonde_assert_fail(#x, __FILE__, __LINE__))
#else
#define sonde_assert(x) ((void)0)
#endif
#if SONDE_DEBUG >= 2
#define sonde_assert_expensive(x) sonde_assert(x)
#else
#define sonde_assert_expensive(x) ((void)0)
#endif

/* Nanoseconds, as everywhere in sonde's core. */
typedef uint64_t sonde_ns_t;
#define SONDE_NS_PER_SEC 1000000000ull

#endif
