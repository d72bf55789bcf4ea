"""Statistics against reference values (SciPy 1.11's, computed once) and known tables."""
import math
import random

import pytest

from tracemod_run import stats


def test_percentiles_interpolate_as_numpy():
    xs = [5, 1, 4, 2, 3]
    assert stats.median(xs) == 3
    assert stats.percentile(xs, 10) == pytest.approx(1.4)
    assert stats.percentile(xs, 90) == pytest.approx(4.6)
    assert stats.percentile([7], 90) == 7


def test_mean_sd_and_confidence_interval():
    xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]
    assert stats.mean(xs) == 5
    assert stats.sd(xs) == pytest.approx(2.138089935)
    lo, hi = stats.ci95(xs)
    half = 2.364624252 * 2.138089935 / math.sqrt(8)  # t(0.975, 7)
    assert (lo, hi) == (pytest.approx(5 - half), pytest.approx(5 + half))
    assert stats.ci95([1.0]) is None
    assert stats.sd([1.0]) == 0


@pytest.mark.parametrize("df,t", [(1, 12.70620474), (2, 4.30265273), (5, 2.57058184), (10, 2.22813885),
                                  (30, 2.04227246)])
def test_t_quantiles(df, t):
    assert stats.t_quantile(0.975, df) == pytest.approx(t, rel=1e-6)


def test_jain():
    assert stats.jain([3, 3, 3]) == pytest.approx(1)
    assert stats.jain([5, 0, 0, 0]) == pytest.approx(0.25)
    assert stats.jain([1, 2]) == pytest.approx(9 / 10)


@pytest.mark.parametrize("a,b,u,p", [
    ([1, 2, 3, 4.5], [4, 5, 6, 1.5, 2.5], 6.0, 0.4126984126984127),  # exact
    ([1.1, 2.2, 3.3], [4.4, 5.5, 6.6], 0.0, 0.1),  # exact, the smallest p of 3 vs 3
    ([3.1, 2.9, 3.3, 3.0, 3.2, 3.1, 2.8, 3.4, 3.0, 3.1, 3.3, 2.9],
     [3.5, 3.4, 3.6, 3.3, 3.9, 3.5, 3.7, 3.2, 3.6, 3.5, 3.8, 3.4], 6.5, 0.00016377138652174107),  # ties
    ([(i * 7919) % 101 / 10 for i in range(25)], [((i * 104729) % 103) / 10 + 1.3 for i in range(30)],
     280.0, 0.11013824244770337),  # normal approximation
    ([round((i * 7919) % 101 / 10) for i in range(25)], [round(((i * 104729) % 103) / 10 + 1.3) for i in range(30)],
     276.5, 0.09624702510122994),  # many ties
])
def test_mann_whitney_u_matches_scipy(a, b, u, p):
    got_u, got_p = stats.mann_whitney_u(a, b)
    assert got_u == u
    assert got_p == pytest.approx(p, rel=1e-9)


def test_noble_criterion():
    assert stats.noble_indistinguishable([10, 12, 11], [11, 13, 12])
    assert not stats.noble_indistinguishable([10, 10.1, 9.9], [20, 20.2, 19.8])
    assert stats.noble_indistinguishable([0, 0], [0, 0, 0]) and not stats.noble_indistinguishable([0, 0], [1, 1])


def test_ks_matches_scipy_and_has_power():
    d, p = stats.ks_1samp([0.1, 0.2, 0.25, 0.7, 0.9], lambda x: min(max(x, 0.0), 1.0))
    assert d == pytest.approx(0.35)
    rng = random.Random(3)
    xs = [rng.random() for _ in range(10000)]
    assert stats.ks_1samp(xs, lambda x: min(max(x, 0.0), 1.0))[1] > 0.01
    shifted = [x ** 1.05 for x in xs]  # a slightly different distribution is told apart
    assert stats.ks_1samp(shifted, lambda x: min(max(x, 0.0), 1.0))[1] < 0.01


def test_ks_of_a_discrete_distribution_uses_left_limits():
    rng = random.Random(4)
    dice = [rng.randint(1, 6) for _ in range(10000)]
    cdf = lambda k: min(max(math.floor(k), 0), 6) / 6  # noqa: E731
    left = lambda k: min(max(math.ceil(k) - 1, 0), 6) / 6  # noqa: E731
    assert stats.ks_1samp(dice, cdf, left)[1] > 0.01
    loaded = [min(6, d + (rng.random() < 0.1)) for d in dice]
    assert stats.ks_1samp(loaded, cdf, left)[1] < 0.01


def test_pairwise_rate_median_is_robust_to_stalls_and_slow_start():
    # 10 s at 1 Mbit/s after a slow start of 0.3 s, with a 0.2 s stall at 8 s: fewer than half of the pairs
    # span a disturbance, so their median is the sustained rate itself, while the mean rate is 5% lower.
    times, counts, b = [], [], 0.0
    for i in range(1000):
        t = i * 0.01
        rate = 20000.0 if t < 0.3 else 0.0 if 8.0 <= t < 8.2 else 125000.0
        if i:
            b += rate * 0.01
        times.append(t)
        counts.append(b)
    assert stats.pairwise_rate_median(times, counts) == pytest.approx(125000, rel=0.02)
    assert stats.pairwise_rate_median(times, counts, max_points=100) == pytest.approx(125000, rel=0.02)
    assert counts[-1] / times[-1] < 0.96 * 125000
