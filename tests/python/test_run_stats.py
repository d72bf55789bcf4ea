"""Statistics against reference values (SciPy 1.11's, computed once), values counted by hand, brute force and
published tables."""
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
    ([(i * 7919) % 101 / 10 for i in range(25)], [((i * 104729) % 103) / 10 + 1.3 for i in range(30)],
     280.0, 0.11013824244770337),  # normal approximation
    ([round((i * 7919) % 101 / 10) for i in range(25)], [round(((i * 104729) % 103) / 10 + 1.3) for i in range(30)],
     276.5, 0.09624702510122994),  # normal approximation, many ties
])
def test_mann_whitney_u_matches_scipy(a, b, u, p):
    got_u, got_p = stats.mann_whitney_u(a, b)
    assert got_u == u
    assert got_p == pytest.approx(p, rel=1e-9)


@pytest.mark.parametrize("a,b,u,p", [
    # Pooled 1, 2, 2, 3: average ranks 1, 2.5, 2.5, 4. The 6 ways to take two of them give U = 0.5, 0.5, 2, 2,
    # 3.5, 3.5 around a mean of 2; four are 1.5 or more away, as the observed 0.5.
    ([1, 2], [2, 3], 0.5, 4 / 6),
    # Two blocks of ties: of the C(6, 3) = 20 splits only A = the three 1s (U = 0) and A = the three 2s (U = 9)
    # are as extreme. (The normal approximation says 0.047, "significant" at 0.05.)
    ([1, 1, 1], [2, 2, 2], 0.0, 2 / 20),
    ([5, 5], [5, 5, 5], 3.0, 1.0),  # all tied: every split gives U = 3
    # Replications' retransmission counts: pooled 0, 0, 0, 1, 1, 2 (ranks 2, 2, 2, 4.5, 4.5, 6), U = 2.5 for A,
    # 2 from the mean 4.5. The 20 splits by how many 0s, 1s and 2s A takes: (3,0,0) 1 way U 0; (2,1,0) 6 ways
    # U 2.5; (2,0,1) 3 ways U 4; (1,2,0) 3 ways U 5; (1,1,1) 6 ways U 6.5; (0,2,1) 1 way U 9. At least 2 away:
    # 1 + 6 + 6 + 1 = 14.
    ([0, 0, 1], [0, 1, 2], 2.5, 14 / 20),
])
def test_mann_whitney_u_exact_with_ties_by_hand(a, b, u, p):
    got_u, got_p = stats.mann_whitney_u(a, b)
    assert got_u == u
    assert got_p == pytest.approx(p, rel=1e-12)


def enumerated_p(a, b):
    """The two-sided exact p by brute force: every way to take len(A) of the pooled values."""
    import itertools

    pooled = list(a) + list(b)
    ranks, _ = stats._ranks(pooled)
    n1, n2 = len(a), len(b)

    def u(idx):
        return sum(ranks[i] for i in idx) - n1 * (n1 + 1) / 2
    far = abs(u(range(n1)) - n1 * n2 / 2)
    splits = list(itertools.combinations(range(len(pooled)), n1))
    return sum(abs(u(c) - n1 * n2 / 2) >= far - 1e-9 for c in splits) / len(splits)


def test_exact_p_with_ties_equals_enumeration():
    rng = random.Random(5)
    for _ in range(60):
        n1, n2 = rng.randint(1, 7), rng.randint(1, 7)
        a = [rng.randint(0, 4) for _ in range(n1)]  # few values: many ties
        b = [rng.randint(1, 5) for _ in range(n2)]
        assert stats.mann_whitney_u(a, b)[1] == pytest.approx(enumerated_p(a, b), rel=1e-12), (a, b)


# Critical values of U for a two-sided test at 0.05 with n1 = n2 = n, as published tables of the Mann-Whitney
# test give them: the largest U whose exact p is below 0.05.
@pytest.mark.parametrize("n,critical", [(4, 0), (5, 2), (6, 5), (7, 8), (8, 13), (9, 17), (10, 23)])
def test_exact_p_agrees_with_the_published_critical_values(n, critical):
    def p(u):
        """p of samples without ties with U = u: B is 0..n-1, A's i-th value lies above c_i of them."""
        a, left = [], u
        for i in range(n):
            c = min(n, left)
            left -= c
            a.append(c - 0.5 + i * 0.001)
        got_u, got_p = stats.mann_whitney_u(a, list(range(n)))
        assert got_u == u
        return got_p

    assert p(critical) < 0.05 <= p(critical + 1)
