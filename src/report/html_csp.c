/* html_csp.c — hashes for the HTML report's Content-Security-Policy.
 *
 * Owns: SHA-256 and the 'sha256-...' source expressions (html_internal.h).
 * The page html.c builds lists the hash of each of its inline scripts, so a
 * browser runs those scripts and refuses any other script or event-handler
 * attribute, should profile text ever reach the DOM as markup. Called by
 * html.c while building a page; plain computation, no allocation beyond the
 * output buffer, never in a signal handler.
 */
#include "html_internal.h"

#include <string.h>

#define CSP_BLOCK 64

static const uint32_t csp_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t csp_rotr(uint32_t x, unsigned n)
{
    return (x >> n) | (x << (32 - n));
}

static void csp_block(uint32_t state[8], const uint8_t block[CSP_BLOCK])
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)block[4 * i] << 24 | (uint32_t)block[4 * i + 1] << 16 |
               (uint32_t)block[4 * i + 2] << 8 | (uint32_t)block[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = csp_rotr(w[i - 15], 7) ^ csp_rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = csp_rotr(w[i - 2], 17) ^ csp_rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
    uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
    for (int i = 0; i < 64; i++) {
        uint32_t s1 = csp_rotr(e, 6) ^ csp_rotr(e, 11) ^ csp_rotr(e, 25);
        uint32_t ch = (e & f) ^ (~e & g);
        uint32_t t1 = h + s1 + ch + csp_k[i] + w[i];
        uint32_t s0 = csp_rotr(a, 2) ^ csp_rotr(a, 13) ^ csp_rotr(a, 22);
        uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
        uint32_t t2 = s0 + maj;
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    state[0] += a;
    state[1] += b;
    state[2] += c;
    state[3] += d;
    state[4] += e;
    state[5] += f;
    state[6] += g;
    state[7] += h;
}

void sonde__sha256(const void *data, size_t len, uint8_t digest[SONDE__SHA256_LEN])
{
    uint32_t state[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                         0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    const uint8_t *p = data;
    size_t left = len;
    for (; left >= CSP_BLOCK; p += CSP_BLOCK, left -= CSP_BLOCK)
        csp_block(state, p);

    /* The tail, a 1 bit, zeros, and the length in bits (big-endian). */
    uint8_t tail[2 * CSP_BLOCK] = {0};
    memcpy(tail, p, left);
    tail[left] = 0x80;
    size_t tail_len = left + 1 + 8 <= CSP_BLOCK ? CSP_BLOCK : 2 * CSP_BLOCK;
    uint64_t bits = (uint64_t)len * 8;
    for (int i = 0; i < 8; i++)
        tail[tail_len - 1 - i] = (uint8_t)(bits >> (8 * i));
    csp_block(state, tail);
    if (tail_len == 2 * CSP_BLOCK) csp_block(state, tail + CSP_BLOCK);

    for (int i = 0; i < 8; i++) {
        digest[4 * i] = (uint8_t)(state[i] >> 24);
        digest[4 * i + 1] = (uint8_t)(state[i] >> 16);
        digest[4 * i + 2] = (uint8_t)(state[i] >> 8);
        digest[4 * i + 3] = (uint8_t)state[i];
    }
}

void sonde__csp_hash_source(sonde_buf_t *out, const void *data, size_t len)
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    uint8_t d[SONDE__SHA256_LEN];
    sonde__sha256(data, len, d);
    sonde_buf_puts(out, "'sha256-");
    size_t i = 0;
    for (; i + 3 <= sizeof d; i += 3) {
        uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8 | d[i + 2];
        char chunk[4] = {b64[v >> 18], b64[(v >> 12) & 63], b64[(v >> 6) & 63], b64[v & 63]};
        sonde_buf_append(out, chunk, 4);
    }
    /* 32 = 30 + 2: two bytes left, one '=' of padding. */
    uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8;
    char chunk[4] = {b64[v >> 18], b64[(v >> 12) & 63], b64[(v >> 6) & 63], '='};
    sonde_buf_append(out, chunk, 4);
    sonde_buf_putc(out, '\'');
}
