/* live_internal.h — what view.c and screen.c share.
 *
 * Owns: sonde_live_t's fields and the screen's start and stop. The `sonde`
 * process only; no signal context.
 */
#ifndef SONDE_LIVE_INTERNAL_H
#define SONDE_LIVE_INTERNAL_H

#include "live.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

struct sonde_live_screen; /* screen.c's */

struct sonde_live {
    sonde_live_opts_t opts;             /* title and quit_say point at the copies below */
    char *title, *quit_say, *quit_line; /* owned */
    pthread_mutex_t lock;               /* protects now, all, from_sec, to_sec,
                               generation, ending */
    sonde_profile_t now;                /* the last interval's profile */
    sonde_profile_t all;                /* the sum of every one fed */
    double from_sec, to_sec;
    uint64_t generation;              /* changes on each feed and ending */
    char ending[256];                 /* why the view ends ("" while it runs) */
    atomic_bool quit;                 /* q was pressed (set by the screen) */
    atomic_bool closed;               /* the screen gave the terminal back */
    atomic_uint_fast64_t keys;        /* keys read by the screen */
    sonde_live_rows_t plain_rows;     /* the plain table's (producer's thread) */
    struct sonde_live_screen *screen; /* owned; NULL when plain or stopped */
};

/* Takes the terminal and starts the screen's thread. Returns 0 or -errno
 * (nothing is left taken). */
int sonde__live_screen_start(sonde_live_t *v);
/* Stops the thread and gives the terminal back; idempotent. */
void sonde__live_screen_stop(sonde_live_t *v);

#endif
