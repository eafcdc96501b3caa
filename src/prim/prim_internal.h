/* prim_internal.h — what linux.c and remote.c share inside src/prim.
 *
 * Owns: the kept-open reader of /proc/.../task/TID/<file> and the parsers of
 * a schedstat line and of a stat line, used by the in-process thread handles (linux.c, the
 * sampler thread) and the handles of another process's threads (remote.c,
 * the attach reader). Not for use outside src/prim; never in a signal
 * handler.
 */
#ifndef SONDE_PRIM_INTERNAL_H
#define SONDE_PRIM_INTERNAL_H

#include "prim.h"

#include <sys/types.h>

/* Reads /proc/PID/task/TID/<name> (PID 0: /proc/self, its descriptor
 * checked before each use) through *kept, opened on first use and kept
 * open (in this process, while sonde_prim_kept_room allows; else opened
 * for the one read), opened again when the program took it over; closed
 * again when a read fails. Returns the length read, NUL-terminated in buf, or -errno
 * (-ESRCH when the thread or process is gone; -EAGAIN, nothing opened, in
 * this process while sonde_prim_kept_quiet()). */
ssize_t sonde__prim_task_read(pid_t pid, pid_t tid, const char *name, sonde_prim_kept_fd_t *kept,
                              char *buf, size_t len);

/* Parses "<ns on cpu> <ns waiting on a run queue> <timeslices>". Returns 0
 * (runq 0 when its field is missing) or -EINVAL. Pure. */
int sonde__prim_parse_schedstat(const char *text, sonde_ns_t *cpu_ns, sonde_ns_t *runq_ns);

/* Parses a stat file, "pid (comm) S ppid ...": comm may hold anything
 * (spaces, parentheses, newlines), so the state follows the last ')'.
 * state and ppid may be NULL. Returns 0 or -EINVAL (ppid outside
 * 0..2^22). Pure (remote.c; also the fuzz target tests/fuzz/fuzz_maps.c). */
int sonde__prim_parse_stat(const char *text, char *state, pid_t *ppid);

#endif
