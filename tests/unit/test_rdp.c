/* test_rdp.c — unit tests of the timeline reduction (src/model/rdp.c).
 *
 * Checks the promises of sonde_rdp_reduce: a timeline within the budget is
 * left alone; a longer one comes back with at most the budget, its ends,
 * its points in time order and a subset of the originals; points on a
 * straight line collapse to the ends; the corners of a step and the peak of
 * a spike survive; a smooth curve stays close to its reduction; a budget
 * under 2 means 2.
 */
#include "model/rdp.h"

#include "check.h"

#include <math.h>

#define N_POINTS 5000

static sonde_point_t pts[N_POINTS], orig[N_POINTS];

static void fill(size_t n, double (*f)(size_t, size_t))
{
    for (size_t i = 0; i < n; i++) {
        pts[i].t_sec = 0.01 * (double)i;
        pts[i].mb = f(i, n);
        orig[i] = pts[i];
    }
}

static double line_f(size_t i, size_t n)
{
    return 3.0 + 2.0 * (double)i;
}
static double step_f(size_t i, size_t n)
{
    return i < n / 2 ? 100.0 : 600.0;
}
static double spike_f(size_t i, size_t n)
{
    return i == n / 3 ? 900.0 : 50.0;
}
static double sine_f(size_t i, size_t n)
{
    return 500.0 + 400.0 * sin((double)i / 150.0);
}

static uint64_t walk_state = 88172645463325252ull;
static double walk_f(size_t i, size_t n)
{
    static double level = 100;
    walk_state ^= walk_state << 13;
    walk_state ^= walk_state >> 7;
    walk_state ^= walk_state << 17;
    level += (double)(walk_state % 2001) / 100.0 - 10.0;
    return i == 0 ? (level = 100) : level;
}

/* Time order, ends kept, every point one of the originals. */
static bool well_formed(size_t n_orig, size_t n)
{
    if (n < 2) return false;
    if (pts[0].t_sec != orig[0].t_sec || pts[n - 1].t_sec != orig[n_orig - 1].t_sec) return false;
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (i && !(pts[i].t_sec > pts[i - 1].t_sec)) return false;
        while (j < n_orig && orig[j].t_sec != pts[i].t_sec)
            j++;
        if (j == n_orig || orig[j].mb != pts[i].mb) return false;
    }
    return true;
}

static bool kept_time(size_t n, double t)
{
    for (size_t i = 0; i < n; i++)
        if (pts[i].t_sec == t) return true;
    return false;
}

/* Largest gap between an original point and the reduced polyline, in MB. */
static double max_error(size_t n_orig, size_t n)
{
    double worst = 0;
    size_t seg = 0;
    for (size_t i = 0; i < n_orig; i++) {
        while (seg + 1 < n - 1 && pts[seg + 1].t_sec < orig[i].t_sec)
            seg++;
        const sonde_point_t *a = &pts[seg], *b = &pts[seg + 1];
        double w = (orig[i].t_sec - a->t_sec) / (b->t_sec - a->t_sec);
        double err = fabs(a->mb + w * (b->mb - a->mb) - orig[i].mb);
        if (err > worst) worst = err;
    }
    return worst;
}

int main(void)
{
    fill(80, walk_f);
    size_t n = sonde_rdp_reduce(pts, 80, 100);
    check(n == 80 && memcmp(pts, orig, sizeof(sonde_point_t) * 80) == 0, "rdp_short_untouched",
          "n %zu", n);

    fill(N_POINTS, walk_f);
    n = sonde_rdp_reduce(pts, N_POINTS, 100);
    check(n == 100 && well_formed(N_POINTS, n), "rdp_walk_bounded", "n %zu", n);

    fill(N_POINTS, line_f);
    n = sonde_rdp_reduce(pts, N_POINTS, 100);
    check(n == 2 && well_formed(N_POINTS, n), "rdp_line_collapses", "n %zu", n);

    fill(N_POINTS, step_f);
    n = sonde_rdp_reduce(pts, N_POINTS, 100);
    check(well_formed(N_POINTS, n) && n <= 4 && kept_time(n, orig[N_POINTS / 2 - 1].t_sec) &&
              kept_time(n, orig[N_POINTS / 2].t_sec),
          "rdp_step_corners", "n %zu", n);

    fill(N_POINTS, spike_f);
    n = sonde_rdp_reduce(pts, N_POINTS, 100);
    check(well_formed(N_POINTS, n) && kept_time(n, orig[N_POINTS / 3].t_sec) &&
              max_error(N_POINTS, n) < 1e-9,
          "rdp_spike_peak", "n %zu error %g", n, max_error(N_POINTS, n));

    fill(N_POINTS, sine_f);
    n = sonde_rdp_reduce(pts, N_POINTS, 100);
    double err = max_error(N_POINTS, n);
    check(n == 100 && well_formed(N_POINTS, n) && err < 0.03 * 800, "rdp_sine_close",
          "n %zu error %.2f MB of an 800 MB range", n, err);

    fill(N_POINTS, walk_f);
    n = sonde_rdp_reduce(pts, N_POINTS, 0);
    check(n == 2 && well_formed(N_POINTS, n), "rdp_budget_min_two", "n %zu", n);

    sonde_timeline_t tl = {NULL, 0, 0};
    for (int i = 0; i < 1000; i++)
        sonde_timeline_add(&tl, i, i % 7);
    sonde_timeline_reduce(&tl, 100);
    check(tl.n == 100 && tl.points[0].t_sec == 0 && tl.points[99].t_sec == 999,
          "rdp_timeline_reduce", "n %zu", tl.n);
    sonde_timeline_free(&tl);
    return check_exit_code();
}
