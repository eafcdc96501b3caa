/* rdp.h — shrinking a timeline to a bounded number of points.
 *
 * Owns: the Ramer–Douglas–Peucker reduction every memory timeline goes
 * through before it is reported (seed 000 §5: at most 100 points), and
 * that the memory profiler also uses to keep its timelines bounded while it
 * runs. Pure; allocates scratch with malloc (inside an allocator hook that
 * is the real allocator, the shim's guard being set). No libpython.
 */
#ifndef SONDE_RDP_H
#define SONDE_RDP_H

#include "model.h"

/* Reduces points[0..n-1] (in time order) in place to at most max_points
 * of them (max_points < 2 counts as 2), keeping the first and the last.
 * The points kept are the ones Ramer–Douglas–Peucker keeps with the
 * tolerance chosen so that max_points remain: starting from the segment
 * between the ends, the point farthest from the current polyline is added
 * until there are max_points (or the rest lie on it). Distances are
 * measured with both axes scaled to their range, so seconds and megabytes
 * weigh alike. Returns the new count. If scratch memory cannot be had,
 * falls back to keeping evenly spaced points. */
size_t sonde_rdp_reduce(sonde_point_t *points, size_t n, size_t max_points);

/* sonde_rdp_reduce on a timeline (its capacity is kept). */
void sonde_timeline_reduce(sonde_timeline_t *tl, size_t max_points);

#endif
