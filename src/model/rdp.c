/* rdp.c — Ramer–Douglas–Peucker by point budget (see rdp.h).
 *
 * Owns: sonde_rdp_reduce. Called by the memory profiler (src/ext/), inside
 * allocator hooks with the shim's guard set and at report time. It
 * allocates only its scratch (a keep mark per point and a heap of
 * segments), never holds a lock, and does not print.
 *
 * The classic algorithm splits recursively wherever a point lies farther
 * than a tolerance from the chord; taking the splits in order of distance
 * (a max-heap of segments, each with its farthest interior point) and
 * stopping after a budget of points gives the same points as the tolerance
 * that yields that budget, without searching for the tolerance.
 */
#include "rdp.h"

#include <math.h>
#include <stdlib.h>

/* Distances (in units of each axis's range) below this are rounding. */
#define RDP_FLAT 1e-9

typedef struct rdp_segment {
    size_t lo, hi; /* ends, both kept */
    size_t far;    /* interior point farthest from the chord */
    double dist;   /* its distance */
} rdp_segment_t;

typedef struct rdp_scale {
    double t0, m0, t_scale, m_scale;
} rdp_scale_t;

static void rdp_norm(const rdp_scale_t *sc, const sonde_point_t *p, double *x, double *y)
{
    *x = (p->t_sec - sc->t0) * sc->t_scale;
    *y = (p->mb - sc->m0) * sc->m_scale;
}

/* Fills the farthest interior point of [lo, hi]. */
static void rdp_measure(const sonde_point_t *pts, const rdp_scale_t *sc, rdp_segment_t *seg)
{
    double ax, ay, bx, by;
    rdp_norm(sc, &pts[seg->lo], &ax, &ay);
    rdp_norm(sc, &pts[seg->hi], &bx, &by);
    double dx = bx - ax, dy = by - ay;
    double len = sqrt(dx * dx + dy * dy);
    seg->far = seg->lo;
    seg->dist = -1;
    for (size_t i = seg->lo + 1; i < seg->hi; i++) {
        double px, py;
        rdp_norm(sc, &pts[i], &px, &py);
        double d = len > 0 ? fabs(dx * (ay - py) - (ax - px) * dy) / len
                           : sqrt((px - ax) * (px - ax) + (py - ay) * (py - ay));
        if (d > seg->dist) {
            seg->dist = d;
            seg->far = i;
        }
    }
}

static void rdp_heap_push(rdp_segment_t *heap, size_t *n, rdp_segment_t seg)
{
    size_t i = (*n)++;
    heap[i] = seg;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (heap[parent].dist >= heap[i].dist) break;
        rdp_segment_t tmp = heap[parent];
        heap[parent] = heap[i];
        heap[i] = tmp;
        i = parent;
    }
}

static rdp_segment_t rdp_heap_pop(rdp_segment_t *heap, size_t *n)
{
    rdp_segment_t top = heap[0];
    heap[0] = heap[--*n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, big = i;
        if (l < *n && heap[l].dist > heap[big].dist) big = l;
        if (r < *n && heap[r].dist > heap[big].dist) big = r;
        if (big == i) break;
        rdp_segment_t tmp = heap[big];
        heap[big] = heap[i];
        heap[i] = tmp;
        i = big;
    }
    return top;
}

/* Keeps max_points evenly spaced points (the first and last included). */
static size_t rdp_decimate(sonde_point_t *pts, size_t n, size_t max_points)
{
    for (size_t k = 0; k < max_points; k++) {
        size_t from = (size_t)((double)k * (double)(n - 1) / (double)(max_points - 1) + 0.5);
        pts[k] = pts[from];
    }
    return max_points;
}

size_t sonde_rdp_reduce(sonde_point_t *pts, size_t n, size_t max_points)
{
    if (max_points < 2) max_points = 2;
    if (n <= max_points) return n;

    rdp_scale_t sc = {pts[0].t_sec, pts[0].mb, 0, 0};
    double t1 = pts[0].t_sec, m1 = pts[0].mb;
    for (size_t i = 1; i < n; i++) {
        if (pts[i].t_sec < sc.t0) sc.t0 = pts[i].t_sec;
        if (pts[i].t_sec > t1) t1 = pts[i].t_sec;
        if (pts[i].mb < sc.m0) sc.m0 = pts[i].mb;
        if (pts[i].mb > m1) m1 = pts[i].mb;
    }
    sc.t_scale = t1 > sc.t0 ? 1.0 / (t1 - sc.t0) : 0;
    sc.m_scale = m1 > sc.m0 ? 1.0 / (m1 - sc.m0) : 0;

    unsigned char *keep = calloc(n, 1);
    rdp_segment_t *heap = malloc((max_points + 1) * sizeof *heap);
    if (!keep || !heap) {
        free(keep);
        free(heap);
        return rdp_decimate(pts, n, max_points);
    }
    size_t heap_n = 0, kept = 2;
    keep[0] = keep[n - 1] = 1;
    rdp_segment_t whole = {0, n - 1, 0, 0};
    rdp_measure(pts, &sc, &whole);
    rdp_heap_push(heap, &heap_n, whole);
    while (kept < max_points && heap_n > 0) {
        rdp_segment_t seg = rdp_heap_pop(heap, &heap_n);
        if (seg.dist <= RDP_FLAT) break; /* everything left lies on the polyline */
        keep[seg.far] = 1;
        kept++;
        rdp_segment_t left = {seg.lo, seg.far, 0, 0}, right = {seg.far, seg.hi, 0, 0};
        if (left.hi - left.lo >= 2) {
            rdp_measure(pts, &sc, &left);
            rdp_heap_push(heap, &heap_n, left);
        }
        if (right.hi - right.lo >= 2) {
            rdp_measure(pts, &sc, &right);
            rdp_heap_push(heap, &heap_n, right);
        }
    }
    size_t out = 0;
    for (size_t i = 0; i < n; i++)
        if (keep[i]) pts[out++] = pts[i];
    free(keep);
    free(heap);
    return out;
}

void sonde_timeline_reduce(sonde_timeline_t *tl, size_t max_points)
{
    if (tl->points) tl->n = sonde_rdp_reduce(tl->points, tl->n, max_points);
}
