"""Statistics of replication sets, comparisons and goodness of fit, in plain Python (no SciPy on the target).

Percentiles interpolate linearly between order statistics (NumPy's default). Confidence intervals of the mean
use Student's t. Mann-Whitney U is exact for small samples, with or without ties (the permutation distribution of
the average ranks), and otherwise the normal approximation with tie and continuity corrections (as SciPy's).
Noble's criterion (Noble et al., SIGCOMM '97): two conditions are indistinguishable when the difference of their
means is less than the sum of their standard deviations. KS tests compare samples with a model's CDF, including its left limits where it jumps.
"""
import math
from functools import lru_cache


def percentile(values, q):
    """The Q-th percentile (0..100) of VALUES, interpolating linearly between order statistics."""
    xs = sorted(values)
    if not xs:
        raise ValueError("percentile of no values")
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def median(values):
    return percentile(values, 50)


def mean(values):
    return math.fsum(values) / len(values)


def sd(values):
    """Sample standard deviation (n - 1); 0 for a single value."""
    n = len(values)
    if n < 2:
        return 0.0
    m = mean(values)
    return math.sqrt(math.fsum((x - m) ** 2 for x in values) / (n - 1))


def _betacf(a, b, x):
    """Continued fraction of the regularized incomplete beta function (modified Lentz)."""
    tiny, eps = 1e-300, 3e-16
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < eps:
            break
    return h


def betainc(a, b, x):
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t, df):
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


@lru_cache(maxsize=256)
def t_quantile(p, df):
    """The P-quantile of Student's t with DF degrees of freedom, by bisection on the CDF."""
    lo, hi = -1e6, 1e6
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def ci95(values):
    """The 95% confidence interval of the mean (Student's t); None for fewer than two values."""
    n = len(values)
    if n < 2:
        return None
    half = t_quantile(0.975, n - 1) * sd(values) / math.sqrt(n)
    m = mean(values)
    return (m - half, m + half)


def summarize(values):
    """n, median, p10, p90, mean, sd, ci95 (or None), min, max of a replication set."""
    values = [float(v) for v in values]
    return {"n": len(values), "median": median(values), "p10": percentile(values, 10),
            "p90": percentile(values, 90), "mean": mean(values), "sd": sd(values), "ci95": ci95(values),
            "min": min(values), "max": max(values)}


def jain(values):
    """Jain's fairness index (sum x)^2 / (n sum x^2): 1 when all equal, 1/n when one takes everything."""
    values = list(values)
    squares = math.fsum(x * x for x in values)
    return 1.0 if squares == 0 else math.fsum(values) ** 2 / (len(values) * squares)


def noble_indistinguishable(a, b):
    """Noble's criterion: |mean(a) - mean(b)| < sd(a) + sd(b); equal means count as indistinguishable even
    when neither varies (e.g. no retransmissions on either side)."""
    diff = abs(mean(a) - mean(b))
    return diff < sd(a) + sd(b) or diff == 0


def _ranks(values):
    """Average ranks (1-based) and the tied groups as (size, doubled average rank), in order."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    groups = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2.0 + 1
        groups.append((j - i + 1, i + j + 2))  # positions i+1..j+1: twice their mean is a whole number
        i = j + 1
    return ranks, groups


EXACT_MAX = 40  # pooled sizes up to this get the exact distribution; C(40, 20) counts fit in 64 bits


@lru_cache(maxsize=256)
def _rank_sum_counts(n1, groups):
    """How many of the C(N, N1) ways to take N1 of the pooled values give each doubled rank sum, the tied
    GROUPS ((size, doubled rank) as _ranks gives them) taking their average rank: the exact permutation
    distribution, with or without ties. Returned as {doubled rank sum: count}."""
    import numpy as np

    top = sum(t * r for t, r in groups)
    counts = np.zeros((n1 + 1, top + 1), dtype=np.int64)  # [taken][doubled sum]
    counts[0, 0] = 1
    for size, rank in groups:
        new = counts.copy()  # taking none of the group
        for j in range(1, min(size, n1) + 1):  # taking j of its SIZE values: C(size, j) ways, each adding j*rank
            new[j:, j * rank:] += math.comb(size, j) * counts[: n1 + 1 - j, : top + 1 - j * rank]
        counts = new
    return {s: int(c) for s, c in enumerate(counts[n1]) if c}


def _exact_p(n1, n2, groups, u1):
    """Two-sided p of U1: the chance, over every split of the pooled values, of a U at least as far from its
    mean n1 n2 / 2 (ties make the distribution lopsided, so both tails are counted, not twice one)."""
    offset = n1 * (n1 + 1)  # 2U = doubled rank sum - n1 (n1 + 1)
    far = abs(2 * u1 - n1 * n2)
    counts = _rank_sum_counts(n1, groups)
    # Doubled, U's distances are whole numbers: the margin only absorbs rounding in U1's float sum.
    hit = sum(c for s, c in counts.items() if abs(s - offset - n1 * n2) >= far - 1e-6)
    return min(1.0, hit / math.comb(n1 + n2, n1))


def mann_whitney_u(a, b):
    """(U of A, two-sided p-value) of the Mann-Whitney U test of A against B: the exact permutation
    distribution for pooled samples up to EXACT_MAX (ties or not), else the normal approximation with tie and
    continuity corrections."""
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        raise ValueError("Mann-Whitney U needs two non-empty samples")
    ranks, groups = _ranks(list(a) + list(b))
    u1 = math.fsum(ranks[:n1]) - n1 * (n1 + 1) / 2.0
    n = n1 + n2
    if n <= EXACT_MAX:
        return u1, _exact_p(n1, n2, tuple(groups), u1)
    mu = n1 * n2 / 2.0
    tie_term = math.fsum(t ** 3 - t for t, _ in groups) / (n * (n - 1))
    sigma = math.sqrt(n1 * n2 / 12.0 * ((n + 1) - tie_term))
    if sigma == 0:
        return u1, 1.0
    z = (abs(u1 - mu) - 0.5) / sigma
    return u1, min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2)))


def kolmogorov_sf(x):
    """P(K > x) for the Kolmogorov distribution."""
    if x <= 0:
        return 1.0
    if x < 0.27:
        return 1.0
    total = 0.0
    for k in range(1, 101):
        term = 2 * (-1) ** (k - 1) * math.exp(-2 * k * k * x * x)
        total += term
        if abs(term) < 1e-16:
            break
    return min(1.0, max(0.0, total))


def ks_1samp(samples, cdf, cdf_left=None):
    """(D, p) of the one-sample Kolmogorov-Smirnov test of SAMPLES against CDF. For a distribution with jumps
    (discrete, or capped), CDF_LEFT(x) gives P(X < x); D is then the exact supremum over the real line. The
    p-value uses Stephens' approximation, conservative for discrete distributions."""
    xs = sorted(samples)
    n = len(xs)
    left = cdf_left or cdf
    d = 0.0
    i = 0
    while i < n:
        j = i
        while j + 1 < n and xs[j + 1] == xs[i]:
            j += 1
        v = xs[i]
        d = max(d, abs((j + 1) / n - cdf(v)), abs(i / n - left(v)))
        i = j + 1
    root = math.sqrt(n)
    return d, kolmogorov_sf((root + 0.12 + 0.11 / root) * d)


def pairwise_rate_median(times, counts, max_points=1500):
    """The GSM measurements' maximum sustainable rate: the median over all pairs i < j of
    (counts[j] - counts[i]) / (times[j] - times[i]). Beyond MAX_POINTS samples an evenly spaced subset is used."""
    n = len(times)
    if n < 2:
        raise ValueError("the pairwise rate needs at least two samples")
    if n > max_points:
        idx = [round(k * (n - 1) / (max_points - 1)) for k in range(max_points)]
        times, counts = [times[i] for i in idx], [counts[i] for i in idx]
    import numpy as np

    t = np.asarray(times, dtype=float)
    c = np.asarray(counts, dtype=float)
    i, j = np.triu_indices(len(t), k=1)
    dt = t[j] - t[i]
    keep = dt > 0
    return float(np.median((c[j] - c[i])[keep] / dt[keep]))
