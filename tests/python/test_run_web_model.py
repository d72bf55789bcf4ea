"""The web workload's generated sizes and counts follow IPB's model: KS tests over 10,000 draws (p > 0.01),
and the same tests reject a model with one parameter changed, so they can fail."""
import random
import statistics

import pytest

from tracemod_run import stats
from tracemod_run.workloads import registry, web

N = 10000


def model(**changes):
    return web.Model(registry.validate(dict({"kind": "web"}, **changes)))


def draws(draw, seed=11):
    rng = random.Random(seed)
    return [draw(rng) for _ in range(N)]


def geometric(mean):
    return (lambda k: web.Model.geometric_cdf(mean, k)), (lambda k: web.Model.geometric_cdf(mean, k - 1))


CASES = {
    "request_bytes": (lambda m: m.request, lambda m: (m.request_cdf, m.request_cdf_left)),
    "reply_bytes": (lambda m: m.reply, lambda m: (m.reply_cdf, m.reply_cdf_left)),
    "files_per_page": (lambda m: m.files, lambda m: geometric(m.p["files_mean"])),
    "pages_per_session": (lambda m: m.pages, lambda m: geometric(m.p["pages_mean"])),
    "think_s": (lambda m: m.think, lambda m: (m.think_cdf, None)),
    "session_gap_s": (lambda m: m.session_gap, lambda m: (m.gap_cdf, None)),
}
WRONG = {"request_bytes": {"request_large_fraction": 0.22}, "reply_bytes": {"reply_mean": 10500.0},
         "files_per_page": {"files_mean": 3.2}, "pages_per_session": {"pages_mean": 4.3},
         "think_s": {"think_median": 16.0}, "session_gap_s": {"session_interval": 16.0}}


@pytest.mark.parametrize("name", CASES)
def test_draws_match_the_model(name):
    draw, cdfs = CASES[name]
    m = model()
    d, p = stats.ks_1samp(draws(draw(m)), *cdfs(m))
    print(f"KS {name}: D = {d:.4f}, p = {p:.3f} over {N} draws")
    assert p > 0.01


@pytest.mark.parametrize("name", CASES)
def test_a_different_model_is_rejected(name):
    draw, cdfs = CASES[name]
    assert stats.ks_1samp(draws(draw(model(**WRONG[name]))), *cdfs(model()))[1] < 0.01


def test_the_reply_distribution_has_ipbs_median_and_mean():
    m = model()
    assert m.alpha == pytest.approx(0.90, abs=0.01)  # capped at 1 MB, so a heavier tail than uncapped
    replies = draws(m.reply, seed=12)
    assert statistics.median(replies) == pytest.approx(1700, rel=0.04)
    assert max(replies) <= 1000000
    big = random.Random(13)
    mean = statistics.fmean(m.reply(big) for _ in range(400000))
    assert mean == pytest.approx(9000, rel=0.05)


def test_requests_are_bimodal():
    reqs = draws(model().request)
    small = [r for r in reqs if r < 500]
    large = [r for r in reqs if r >= 500]
    assert len(large) / N == pytest.approx(0.15 / 0.85, abs=0.015)  # IPB: ~70% small, ~15% large
    assert statistics.median(small) == pytest.approx(250, abs=3)
    assert statistics.median(large) == pytest.approx(1024, abs=12)


def test_an_impossible_reply_distribution_is_refused():
    with pytest.raises(registry.UsageError, match="reply_median < reply_mean < reply_cap"):
        model(reply_mean=1000.0)
