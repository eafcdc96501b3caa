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
# An upper bound on the accuracy assertions one make test makes: at most
# about 150 per interpreter in the CPU, memory, attach, children and pprof
# tests with their conditions and repeats (the oldest, Debian's and the
# newest interpreter repeat theirs), on 10 interpreters; doubled for margin.
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


def samples_to_catch_difference(defect_a, b_share, allowance):
    """The fewest samples n on each side at which two shares observed as
    defect_a and b_share (0..1: one form of the same work read off by the
    defect, the other right) give a Newcombe interval of their difference
    (shares_close) that excludes +- allowance: the power of shares_close.
    A test with unequal sides checks the smaller one against it."""
    n = 1
    while n < 10 ** 7:
        la, ha = wilson(defect_a, n)
        lb, hb = wilson(b_share, n)
        d = defect_a - b_share
        lo = d - math.sqrt((defect_a - la) ** 2 + (hb - b_share) ** 2)
        hi = d + math.sqrt((ha - defect_a) ** 2 + (b_share - lb) ** 2)
        if hi < -allowance or lo > allowance:
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


# ---- time charged by the clocks -------------------------------------------
#
# A line's seconds (or a stage's, a span's) against the seconds the program
# measured itself over the same work (time.thread_time, perf_counter). Each
# tick charges the time a thread used since the previous tick, read from the
# thread's own CPU clock (in wall-clock mode plus its run-queue wait, or the
# wall time it spent blocked), to the line it is on at the tick (docs/
# ARCHITECTURE.md, "How a sample travels to a report"). So a line that holds
# a thread for one unbroken span (a loop written on one line, a sleep) is
# charged that span exactly but for its two ends: the first tick on it also
# carries the time since the tick before, which began before the span, and
# the time after its last tick goes to the line after it. Each end is off by
# at most one tick's time: the interval and its jitter (TICK_SPREAD: +-25 %,
# src/ext/sampler.c and src/attach/sampler.c). This is no sampling
# estimate and no chance enters it: a Wilson or Poisson interval over the
# line's ticks would be some ten times wider than the truth allows (a
# Poisson count of 120 ticks: +- 42 %). The bound holds whenever the ticks
# come on time; a late tick (the sampler kept off its CPU for more than two
# intervals gives half its excess to each side of it), a failed stack read
# (its time charged nowhere) and start-up are the test's named allowance.
# In wall-clock mode a line is also charged the thread's run-queue wait,
# which the kernel reports once the thread runs again: a wait is charged
# where the thread is at the first tick after that, so one that straddles a
# span's end moves to the next line whole. On a machine with a free core
# that is a few milliseconds; on an overloaded one a thread waits 100 ms and
# more: so the tests measure CPU seconds under --virtual-time, or bound the
# wait (`extra`: the longest gap the program saw between its clock reads).

# The longest a tick's interval can be: the interval + 25 % jitter.
TICK_SPREAD = 1.25


def _seconds_interval(estimate, interval, edges, extra):
    half = edges * TICK_SPREAD * interval + extra
    return estimate - half, estimate + half


def seconds_near(what, estimate, truth, interval, allowance_rel, edges=2, extra=0.0):
    """Checks seconds charged by ticks of `interval` s (the run's
    --interval; a record's 1/--rate) against the truth the program
    measured: fails when estimate +- edges ticks' time (each unbroken span
    has two ends) +- extra (seconds: the printed figures' rounding, a
    run-queue wait that may cross an end) lies wholly outside
    truth x (1 +- allowance_rel)."""
    lo, hi = _seconds_interval(estimate, interval, edges, extra)
    ok = hi >= truth * (1 - allowance_rel) and lo <= truth * (1 + allowance_rel)
    return Bound(ok, "%s %.4g s of about %d ticks (interval %.4g-%.4g: %d ends of at most "
                     "%.3g s), truth %.4g s +- %.0f%%"
                 % (what, estimate, round(truth / interval), lo, hi, edges,
                    TICK_SPREAD * interval, truth, 100 * allowance_rel))


def seconds_at_least(what, estimate, truth, interval, allowance_rel, edges=2, extra=0.0):
    """seconds_near for a figure that may exceed its truth by design (in
    wall-clock mode a line is charged its CPU time and its run-queue wait:
    truth the CPU time): fails only when the whole interval lies below
    truth x (1 - allowance_rel)."""
    lo, hi = _seconds_interval(estimate, interval, edges, extra)
    ok = hi >= truth * (1 - allowance_rel)
    return Bound(ok, "%s %.4g s of about %d ticks (interval %.4g-%.4g: %d ends of at most "
                     "%.3g s), truth at least %.4g s - %.0f%%"
                 % (what, estimate, round(truth / interval), lo, hi, edges,
                    TICK_SPREAD * interval, truth, 100 * allowance_rel))


def ticks_to_catch(defect_ratio, allowance_rel, edges=2, extra_ticks=0.0):
    """The fewest ticks in the measured span (truth / interval) at which an
    estimate of defect_ratio x truth (a period lost: 2/3; counted twice: 2;
    a worker lost: 1/2) gives a seconds_near interval that excludes truth x
    (1 -+ allowance_rel): the counterpart of samples_to_catch. extra_ticks:
    seconds_near's extra in ticks (extra / interval). (When the allowance
    alone covers the defect, no number of ticks does: 10**7.)"""
    gap = (1 - allowance_rel - defect_ratio) if defect_ratio < 1 else \
        (defect_ratio - 1 - allowance_rel)
    if gap <= 0:
        return 10 ** 7
    return int((edges * TICK_SPREAD + extra_ticks) / gap) + 1


def check(bound):
    """Raises AssertionError with the bound's note unless it holds; returns
    the note (for the test's figures)."""
    if not bound.ok:
        raise AssertionError(bound.note)
    return bound.note


# ---- memory ------------------------------------------------------------
# Memory: the variance model of `sonde run --memory`'s sampled figures.
#
# Variance models of `sonde run --memory`'s sampled figures, for the bounds
# of tests/accuracy.py (the memory tests' additions to it).
#
# How sonde samples (src/shim/shim_internal.h, heap.c, pymem.c): marks fall
# on the bytes each thread requests (malloc and its family, and Python's
# allocator domains) as a Poisson process of mean `mean` (--memory-sample,
# default 512 KiB); a block of s bytes holds one with probability
# p = 1 - e^-x, x = s / mean, and is then charged its expected weight s / p
# (one sample, however many marks fell in it). A line's n_mallocs is its
# number of samples, n_malloc_mb the sum of their weights (MiB), n_live_mb
# that of the samples not yet freed (a freed sample takes its own weight
# back: exact), alloc_objects the sum of weight / size, n_python_fraction
# the weight of its Python-domain samples over n_malloc_mb.
#
# So the estimate of N blocks of s bytes is unbiased with variance
# N s^2 (1 - p) / p = truth x unit, unit = mean x / (e^x - 1): the
# estimate is a Poisson count of samples each worth `unit` (byte_unit). For
# blocks much smaller than the mean, unit -> mean (each sample stands for
# about mean bytes); for blocks much larger, unit -> 0 (every block is
# sampled and charged its size: exact, and a fixed small tolerance is right
# there). The "samples" of a count_near note are truth-equivalent counts
# (estimate / unit); a test states n_mallocs beside them.


MIB = 1 << 20
# The default --memory-sample (src/launch/options.h).
MEAN = 512 << 10


def byte_unit(size, mean=MEAN):
    """MiB per effective Poisson sample for blocks of `size` bytes sampled
    at `mean`: mean x / (e^x - 1), x = size / mean."""
    x = size / mean
    return (mean * x / math.expm1(x) if x > 0 else mean) / MIB


def count_to_catch(defect_ratio, allowance_rel):
    """The fewest effective samples (truth / unit) at which an estimate of
    defect_ratio x truth, observed exactly, gives a Poisson interval that
    excludes truth x (1 -+ allowance_rel): the counterpart of
    samples_to_catch for count_near."""
    n = 1
    while n < 10 ** 7:
        lo, hi = poisson_interval(n * defect_ratio)
        if (defect_ratio < 1 and hi < n * (1 - allowance_rel)) or \
                (defect_ratio > 1 and lo > n * (1 + allowance_rel)):
            return n
        n = n + max(1, n // 8)
    return n


def count_at_most(what, estimate, unit, limit):
    """A figure whose truth is at most `limit` (often about 0: the live
    bytes of a line that freed everything it made, other lines' share):
    fails when the whole interval of the Poisson count, scaled by unit,
    lies above limit."""
    count = estimate / unit if unit > 0 else 0.0
    lo, hi = poisson_interval(count)
    ok = lo * unit <= limit
    return Bound(ok, "%s %.4g of about %d samples (interval %.4g-%.4g at %.1e), truth "
                          "at most %.4g" % (what, estimate, round(count), lo * unit, hi * unit,
                                            ALPHA, limit))


def count_above_to_catch(limit_count):
    """The fewest samples (a Poisson count) whose interval lies wholly above
    limit_count: the power of count_at_most. A test passes the count its
    defect would put there (a worker's whole allocation charged to the main
    thread, frees not subtracted: the bytes / byte_unit) to need_samples
    against it."""
    n = 1
    while n < 10 ** 7:
        if poisson_interval(n)[0] > limit_count:
            return n
        n = n + max(1, n // 8)
    return n


def bytes_near(what, estimate, size, truth, allowance_rel, defect_ratio, mean=MEAN, n=None):
    """The usual memory check: an estimate (MiB, or objects with size in
    objects' bytes scaled by the caller) made of blocks of `size` bytes
    sampled at `mean`, against truth x (1 +- allowance_rel); first makes
    sure its samples suffice to catch an estimate of defect_ratio x truth
    (need_samples). n: the line's n_mallocs, added to the note. Returns the
    note."""
    unit = byte_unit(size, mean)
    need_samples(what, round(truth / unit), count_to_catch(defect_ratio, allowance_rel))
    note = check(count_near(what, estimate, unit, truth, allowance_rel))
    return note if n is None else "%s, n_mallocs %d" % (note, n)


def copy_near(what, estimate, truth, spacing, allowance_rel):
    """Copy volume (src/shim/copy.c): marks are a Poisson process of mean
    `spacing` over the bytes copied, each charging the spacing that ends at
    it to the line it falls in. A line that does (nearly) all the copying
    is charged exactly what it copied, but for its two ends: the spacing
    that ends at its first mark began before its first copy (+), the bytes
    after its last mark are not charged (-), each at most an exponential of
    mean spacing. So the error lies within +- spacing x ln(2 / ALPHA) at the
    per-assertion confidence (an exponential's tail). Fails when
    estimate +- that lies wholly outside truth x (1 +- allowance_rel)."""
    half = spacing * math.log(2 / ALPHA)
    lo, hi = estimate - half, estimate + half
    ok = hi >= truth * (1 - allowance_rel) and lo <= truth * (1 + allowance_rel)
    return Bound(ok, "%s %.4g (interval %.4g-%.4g at %.1e: two end spacings of mean "
                          "%.4g), truth %.4g +- %.0f%%" % (what, estimate, lo, hi, ALPHA,
                                                           spacing, truth, 100 * allowance_rel))


def copies_to_catch(defect_ratio, allowance_rel):
    """The fewest marks (truth / spacing) at which an estimate of
    defect_ratio x truth (copies counted once per call, not per byte; half
    the bytes lost) gives a copy_near interval that excludes truth x
    (1 - allowance_rel): the power of copy_near, whose half-width is
    ln(2 / ALPHA) spacings whatever the truth."""
    gap = 1 - allowance_rel - defect_ratio
    if gap <= 0:
        return 10 ** 7
    return int(math.log(2 / ALPHA) / gap) + 1
