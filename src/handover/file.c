/* file.c — a hand-over file written, read back and merged (handover.h).
 *
 * Owns: writing a profile into the private directory (encoded, written to
 * "<name>.tmp" beside it and renamed, SIGXFSZ held back), reading one back
 * (at most SONDE_HANDOVER_MAX_BYTES) and the merge the collectors call.
 * The writer runs in the profiled process at its end or on the sampler
 * thread (with --memory under the allocator shim's guard): malloc, open,
 * write, rename; no stdio, no Python API. The reader and the merge run in
 * the `sonde` command (src/collect/). No signal handler.
 */
#include "handover.h"

#include "../prim/file.h"
#include "../prim/prim.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Writes data as path: "<path>.tmp", then a rename (a reader never sees
 * half of it); no fsync. Returns 0 or -errno (nothing left on error). */
static int file_write_atomic(const char *path, const void *data, size_t len)
{
    char tmp[PATH_MAX];
    int n = snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (n < 0 || (size_t)n >= sizeof tmp) return -ENAMETOOLONG;
    int rc = 0;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return -errno;
    rc = sonde_write_fd(fd, data, len);
    if (close(fd) != 0 && rc == 0) rc = -errno;
    if (rc == 0 && rename(tmp, path) != 0) rc = -errno;
    if (rc < 0) unlink(tmp);
    return rc;
}

int sonde_handover_write(const char *dir, const char *stem, sonde_handover_kind_t kind,
                         uint64_t number, const sonde_profile_t *prof)
{
    char path[PATH_MAX];
    if (kind != SONDE_HANDOVER_PROFILE && kind != SONDE_HANDOVER_PERIOD) return -EINVAL;
    int rc = sonde_handover_path(path, sizeof path, dir, stem, kind, number);
    if (rc < 0) return rc;
    sonde_buf_t bytes = SONDE_BUF_INIT;
    rc = sonde_handover_encode(prof, &bytes);
    if (rc == 0) {
        sigset_t old;
        bool had = false;
        sonde_prim_xfsz_hold(&old, &had);
        rc = file_write_atomic(path, bytes.data, bytes.len);
        sonde_prim_xfsz_release(&old, had);
    }
    sonde_buf_free(&bytes);
    return rc;
}

int sonde_handover_read(const char *path, sonde_profile_t *prof, const char **why)
{
    sonde_buf_t bytes = SONDE_BUF_INIT;
    if (why) *why = NULL;
    int rc = sonde_buf_read_file(&bytes, path, SONDE_HANDOVER_MAX_BYTES, NULL);
    if (rc == 0) rc = sonde_handover_decode(prof, bytes.data, bytes.len, why);
    sonde_buf_free(&bytes);
    return rc;
}

int sonde_handover_take(sonde_profile_t *merged, const char *path, sonde_profile_t *one,
                        const char **why)
{
    int rc = sonde_handover_read(path, one, why);
    if (rc == 0) rc = sonde_profile_merge(merged, one);
    if (rc < 0) {
        sonde_profile_free(one);
        if (why && !*why && rc == -ENOMEM) *why = "out of memory";
    }
    return rc;
}
