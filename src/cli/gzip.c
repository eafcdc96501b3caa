/* gzip.c — gzip for the command's pprof output, with zlib.
 *
 * Owns: sonde_cli_gzip, the compress callback the command gives the
 * report context (sonde_pprof_opts_t) for `sonde attach/record --format
 * pprof`. Only the command links zlib (-lz, Debian's zlib1g-dev): the
 * extension module compresses with the interpreter's own zlib module
 * (src/ext/gzip.c). Never in a signal handler.
 */
#include "cli.h"

#include "../core/buf.h"

#include <string.h>

#include <zlib.h>

#define GZIP_WINDOW_BITS (15 + 16) /* the largest window, with a gzip header */
#define GZIP_CHUNK 65536

int sonde_cli_gzip(const void *data, size_t len, sonde_buf_t *out, void *unused)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, GZIP_WINDOW_BITS, 8,
                     Z_DEFAULT_STRATEGY) != Z_OK)
        return -ENOMEM;
    size_t before = out->len;
    const unsigned char *next = data;
    size_t left = len;
    int zrc = Z_OK;
    unsigned char chunk[GZIP_CHUNK];
    do {
        /* z.avail_in is an unsigned int: feed at most 1 GiB at a time */
        size_t feed = left < (1u << 30) ? left : (1u << 30);
        z.next_in = (unsigned char *)next;
        z.avail_in = (unsigned)feed;
        next += feed;
        left -= feed;
        int flush = left ? Z_NO_FLUSH : Z_FINISH;
        do {
            z.next_out = chunk;
            z.avail_out = sizeof chunk;
            zrc = deflate(&z, flush);
            if (zrc == Z_STREAM_ERROR) break;
            sonde_buf_append(out, chunk, sizeof chunk - z.avail_out);
        } while (z.avail_out == 0);
    } while (left && zrc != Z_STREAM_ERROR);
    deflateEnd(&z);
    if (zrc != Z_STREAM_END || sonde_buf_error(out)) {
        if (!sonde_buf_error(out)) out->len = before;
        return zrc == Z_STREAM_END ? -ENOMEM : -EIO;
    }
    return 0;
}
