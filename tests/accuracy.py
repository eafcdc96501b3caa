"""Bounds for the accuracy tests, derived from the samples each one rests on.

A profile's figure for a line is an estimate from a finite number of
samples; a fixed bound such as ">= 95 % Python" on a line of 60-300 samples
fails by chance alone now and then, and the suite makes many such
assertions on ten interpreters. So every accuracy assertion goes through
this module and states:

  - the truth it measured (the program's own clocks, allocation counts, or
    what the line is by construction: a pure-bytecode loop is 100 % Python);
  - the number of samples n its estimate rests on (the line's n_samples, a
    memory line's sample count);
  - a systematic allowance: how far sonde may be off by design (a per-
    sample misclassification rate, a boundary tick), stated beside the test;
  - the statistical bound: a Wilson score interval of the estimate at the
    per-assertion confidence below. The assertion fails only when the whole
    interval lies beyond truth +- allowance, i.e. when the data say, at that
    confidence, that sonde is off by more than its allowance.

Confidence. FAMILY_ALPHA is the chance that a correct sonde fails one or
more accuracy assertions in a whole `make test` (every interpreter, every
condition, the repeats). It is split evenly over ASSERTIONS, an upper bound
on the number of accuracy assertions such a run makes (Bonferroni), so
each assertion is checked at ALPHA = FAMILY_ALPHA / ASSERTIONS, two-sided:
Z below (about 4.6 standard deviations).

Power. A bound this wide needs enough samples to still catch the defect a
test was written for; `samples_to_catch` says how many, and a test whose
line has fewer takes more (runs longer or samples faster), never a looser
bound (`need_samples`).
"""
import math
import statistics

# The chance of one or more false failures in a whole make test.
FAMILY_ALPHA = 0.01
# An upper bound on the accuracy assertions one make test makes: about 60
# per interpreter in the CPU, memory, attach and children tests, their
# conditions and repeats (the oldest, Debian's and the newest interpreter
# repeat theirs: up to 10 runs), on 10 interpreters; counted generously.
ASSERTIONS = 3000
ALPHA = FAMILY_ALPHA / ASSERTIONS
# Two-sided normal quantile at ALPHA.
Z = statistics.NormalDist().inv_cdf(1 - ALPHA / 2)


def wilson(share, n, z=Z):
    """The Wilson score interval (lo, hi), both in [0, 1], of a proportion
    `share` (0..1) observed over n samples; (0, 1) when n is 0."""
    if n <= 0:
        return 0.0, 1.0
    p = min(max(share, 0.0), 1.0)
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def poisson_interval(count, z=Z):
    """An interval (lo, hi) for the mean of a Poisson count observed as
    `count` (the Wilson-like score interval: the means m with
    |count - m| <= z * sqrt(m))."""
    c = max(count, 0.0)
    half = z * math.sqrt(c + z * z / 4)
    centre = c + z * z / 2
    return max(0.0, centre - half), centre + half


class Bound:
    """The outcome of one check: ok, and a one-line note that states the
    truth, the estimate, the samples, the interval and the allowance."""

    def __init__(self, ok, note):
        self.ok = ok
        self.note = note

    def __str__(self):
        return self.note


def _pct(x):
    return "%.1f%%" % (100 * x)


def share_near(what, share_pct, n, truth_pct, allowance_pct):
    """Checks a share (percent) estimated from n samples against a truth
    (percent) the test measured: fails when the Wilson interval of the
    estimate lies wholly outside truth +- allowance."""
    lo, hi = wilson(share_pct / 100.0, n)
    t_lo = (truth_pct - allowance_pct) / 100.0
    t_hi = (truth_pct + allowance_pct) / 100.0
    ok = hi >= t_lo and lo <= t_hi
    return Bound(ok, "%s %.1f%% of n=%d (interval %s-%s at %.1e), truth %.1f%% +- %.1f"
                 % (what, share_pct, n, _pct(lo), _pct(hi), ALPHA, truth_pct, allowance_pct))


def share_at_least(what, share_pct, n, truth_pct, allowance_pct):
    """Checks a share that should be truth_pct (often 100: a pure-bytecode
    line's Python share) less at most allowance_pct: fails when the whole
    interval lies below truth - allowance."""
    lo, hi = wilson(share_pct / 100.0, n)
    ok = hi >= (truth_pct - allowance_pct) / 100.0
    return Bound(ok, "%s %.1f%% of n=%d (interval %s-%s at %.1e), truth %.1f%% - %.1f"
                 % (what, share_pct, n, _pct(lo), _pct(hi), ALPHA, truth_pct, allowance_pct))


def share_at_most(what, share_pct, n, truth_pct, allowance_pct):
    """The mirror of share_at_least: fails when the whole interval lies above
    truth + allowance (a share that should be about truth_pct, often 0)."""
    lo, hi = wilson(share_pct / 100.0, n)
    ok = lo <= (truth_pct + allowance_pct) / 100.0
    return Bound(ok, "%s %.1f%% of n=%d (interval %s-%s at %.1e), truth %.1f%% + %.1f"
                 % (what, share_pct, n, _pct(lo), _pct(hi), ALPHA, truth_pct, allowance_pct))


def shares_close(what, a_pct, na, b_pct, nb, allowance_pct):
    """Checks that two shares estimated from na and nb samples differ by at
    most allowance_pct (their truth: the same work written two ways):
    Newcombe's interval for the difference, from the two Wilson intervals;
    fails when it lies wholly beyond +- allowance."""
    a, b = a_pct / 100.0, b_pct / 100.0
    la, ha = wilson(a, na)
    lb, hb = wilson(b, nb)
    d = a - b
    lo = d - math.sqrt((a - la) ** 2 + (hb - b) ** 2)
    hi = d + math.sqrt((ha - a) ** 2 + (b - lb) ** 2)
    allow = allowance_pct / 100.0
    ok = hi >= -allow and lo <= allow
    return Bound(ok, "%s %.1f%% (n=%d) vs %.1f%% (n=%d): difference interval %+.1f..%+.1f "
                 "points at %.1e, allowance %.1f"
                 % (what, a_pct, na, b_pct, nb, 100 * lo, 100 * hi, ALPHA, allowance_pct))


def count_near(what, estimate, unit, truth, allowance_rel):
    """Checks an estimate made of Poisson-distributed samples each worth
    `unit` (byte sampling: a line's MB = samples x the mean sampling
    interval) against a truth: fails when the interval of the mean count,
    scaled by unit, lies wholly outside truth x (1 +- allowance_rel)."""
    count = estimate / unit if unit > 0 else 0.0
    lo, hi = poisson_interval(count)
    lo, hi = lo * unit, hi * unit
    ok = hi >= truth * (1 - allowance_rel) and lo <= truth * (1 + allowance_rel)
    return Bound(ok, "%s %.4g of about %d samples (interval %.4g-%.4g at %.1e), truth %.4g "
                 "+- %.0f%%" % (what, estimate, round(count), lo, hi, ALPHA, truth,
                                100 * allowance_rel))


def samples_to_catch(defect_share, truth_share, allowance, one_sided=True):
    """The fewest samples n at which a line whose true share is defect_share
    (0..1), observed exactly, gives a Wilson interval that excludes
    truth_share - allowance (or + allowance when the defect lies above):
    how many samples a test needs to still catch the defect it was written
    for."""
    edge = truth_share - allowance if defect_share < truth_share else truth_share + allowance
    n = 1
    while n < 10 ** 7:
        lo, hi = wilson(defect_share, n)
        if (defect_share < truth_share and hi < edge) or (defect_share > truth_share and lo > edge):
            return n
        n = n + max(1, n // 8)
    return n


def need_samples(what, n, needed):
    """Raises AssertionError unless n >= needed: a test calls it before a
    bound whose power it relies on, after taking more samples where it can
    (a longer run, a shorter --interval)."""
    if n < needed:
        raise AssertionError("%s: %d samples, fewer than the %d this bound needs to catch its "
                             "defect (the test should run longer)" % (what, n, needed))


def check(bound):
    """Raises AssertionError with the bound's note unless it holds; returns
    the note (for the test's figures)."""
    if not bound.ok:
        raise AssertionError(bound.note)
    return bound.note
