/* copy.c — copy volume: the interposed memcpy and memmove.
 *
 * Owns: memcpy, memmove, __memcpy_chk and __memmove_chk as this process
 * sees them. Each call subtracts its length from a per-thread countdown
 * (one TLS subtraction and a test) and forwards to libc. When the
 * countdown runs out (on average every copy_sample_bytes, exponentially
 * spaced so that periodic copies cannot alias with it), the bytes copied
 * since the previous sample are reported on this thread, to be charged to
 * its current line. THESE ARE HOOKS called from everywhere, including
 * the shim's and the extension's own code and the dynamic loader's
 * callers before the real functions are known (a plain byte loop then).
 */
#include "shim_internal.h"

#include <string.h>

/* glibc has no prototypes for the fortified entry points we define. */
SONDE_EXPORT void *__memcpy_chk(void *restrict dst, const void *restrict src, size_t n,
                                size_t dst_len);
SONDE_EXPORT void *__memmove_chk(void *dst, const void *src, size_t n, size_t dst_len);

/* A byte loop that the compiler must not turn back into a memcpy call
 * (the shim is built with -fno-tree-loop-distribute-patterns). */
static void *shim_copy_bytes(void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (d == s || n == 0) return dst;
    if (d < s || d >= s + n) {
        for (size_t i = 0; i < n; i++)
            d[i] = s[i];
    } else {
        for (size_t i = n; i-- > 0;)
            d[i] = s[i];
    }
    return dst;
}

/* The countdown ran out: charge the marks passed (when counting on this
 * thread) and re-arm. Marks are a Poisson process over the bytes copied
 * (exponential spacing); each charges the spacing that ends at it, so a
 * line's expected charge is exactly what it copied, large copies (which
 * pass several marks) and small ones alike. */
static void shim_copy_slow(sonde__shim_thread_t *t)
{
    uint32_t gen = sonde_atomic_load_relaxed(&sonde__shim_gen);
    if (gen == 0 || t->guard) {
        /* Inert or nested: look again after a while. */
        t->copy_armed = t->copy_countdown = SHIM_IDLE_COUNTDOWN;
        return;
    }
    if (t->gen != gen) {
        sonde__shim_thread_reset(t, gen);
        return;
    }
    uint64_t mean = sonde__shim_config.copy_sample_bytes;
    int64_t charged = 0;
    if (t->copy_countdown < -(int64_t)(SHIM_MAX_MARKS * mean)) {
        /* One huge copy: count it whole rather than mark by mark. */
        charged = t->copy_armed - t->copy_countdown;
        t->copy_armed = t->copy_countdown = sonde__shim_exp_draw(t, mean);
    }
    while (t->copy_countdown <= 0) {
        charged += t->copy_armed;
        t->copy_armed = sonde__shim_exp_draw(t, mean);
        t->copy_countdown += t->copy_armed;
    }
    sonde_shim_event_t event = {.kind = SONDE_SHIM_EV_COPY, .bytes = charged};
    sonde__shim_emit(t, &event);
}

static inline void shim_copy_count(size_t n)
{
    sonde__shim_thread_t *t = &sonde__shim_thread;
    t->copy_countdown -= (int64_t)n;
    if (SONDE_UNLIKELY(t->copy_countdown <= 0)) shim_copy_slow(t);
}

SONDE_EXPORT void *memcpy(void *restrict dst, const void *restrict src, size_t n)
{
    shim_copy_count(n);
    void *(*real)(void *, const void *, size_t) = sonde__shim_real.memcpy;
    if (SONDE_UNLIKELY(!real)) return shim_copy_bytes(dst, src, n);
    return real(dst, src, n);
}

SONDE_EXPORT void *memmove(void *dst, const void *src, size_t n)
{
    shim_copy_count(n);
    void *(*real)(void *, const void *, size_t) = sonde__shim_real.memmove;
    if (SONDE_UNLIKELY(!real)) return shim_copy_bytes(dst, src, n);
    return real(dst, src, n);
}

/* The fortified variants (_FORTIFY_SOURCE): an overflow goes to libc's own
 * check, which reports it and aborts as it would have without us. */
SONDE_EXPORT void *__memcpy_chk(void *restrict dst, const void *restrict src, size_t n,
                                size_t dst_len)
{
    if (SONDE_LIKELY(n <= dst_len)) return memcpy(dst, src, n);
    if (sonde__shim_real.memcpy_chk) return sonde__shim_real.memcpy_chk(dst, src, n, dst_len);
    __builtin_trap();
}

SONDE_EXPORT void *__memmove_chk(void *dst, const void *src, size_t n, size_t dst_len)
{
    if (SONDE_LIKELY(n <= dst_len)) return memmove(dst, src, n);
    if (sonde__shim_real.memmove_chk) return sonde__shim_real.memmove_chk(dst, src, n, dst_len);
    __builtin_trap();
}
