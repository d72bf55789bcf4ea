// The loss models against their statistics: every tolerance is a number of standard deviations of the estimate
// (stated), with a fixed seed.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "channel/loss_model.hh"
#include "util/error.hh"

namespace tracemod {
namespace {

std::vector<bool> pattern(LossModel& m, size_t n, uint32_t bytes = 1000) {
  std::vector<bool> lost(n);
  for (size_t i = 0; i < n; ++i) lost[i] = m.hit(bytes);
  return lost;
}

double rate(const std::vector<bool>& lost) {
  size_t k = 0;
  for (bool b : lost) k += b;
  return static_cast<double>(k) / static_cast<double>(lost.size());
}

// Lengths of the runs of consecutive losses.
std::vector<size_t> bursts(const std::vector<bool>& lost) {
  std::vector<size_t> runs;
  size_t run = 0;
  for (bool b : lost) {
    if (b) {
      ++run;
    } else if (run) {
      runs.push_back(run);
      run = 0;
    }
  }
  return runs;
}

double mean(const std::vector<size_t>& v) {
  double s = 0;
  for (size_t x : v) s += static_cast<double>(x);
  return s / static_cast<double>(v.size());
}

std::string error_of(const std::string& spec) {
  try {
    make_loss_model("--uplink-loss", spec, RandomStream(1, 0));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(IidLoss, RateWithinFiveSigma) {
  IidLoss m(0.05, RandomStream(3, 0));
  const size_t n = 200000;
  const double sigma = std::sqrt(0.05 * 0.95 / n);
  EXPECT_NEAR(rate(pattern(m, n)), 0.05, 5 * sigma);
}

// Gilbert (h=0, k=1): the loss rate is P/(P+R) and bursts are geometric with mean 1/R.
TEST(GilbertElliottLoss, LossRateAndMeanBurstLength) {
  const double p = 0.01, r = 0.25;
  GilbertElliottLoss m({p, r, 0, 1}, RandomStream(7, 0));
  const size_t n = 2000000;
  const std::vector<bool> lost = pattern(m, n);
  const double pi = p / (p + r), lambda = 1 - p - r;
  // A two-state chain's losses are correlated: the variance of the rate grows by (1+lambda)/(1-lambda).
  const double rate_sigma = std::sqrt(pi * (1 - pi) / n * (1 + lambda) / (1 - lambda));
  EXPECT_NEAR(rate(lost), pi, 5 * rate_sigma);
  EXPECT_NEAR(m.mean_loss(), pi, 1e-12);
  const std::vector<size_t> runs = bursts(lost);
  const double burst_sigma = std::sqrt(1 - r) / r / std::sqrt(static_cast<double>(runs.size()));  // geometric
  EXPECT_NEAR(mean(runs), 1 / r, 5 * burst_sigma);
}

TEST(GilbertElliottLoss, LossInEachStateFollowsHAndK) {
  const GilbertElliottLoss::Params g{0.05, 0.2, 0.7, 0.99};  // 30% lost in the bad state, 1% in the good
  GilbertElliottLoss m(g, RandomStream(11, 0));
  const size_t n = 2000000;
  const double expected = 0.2 * 0.3 + 0.8 * 0.01;
  EXPECT_NEAR(m.mean_loss(), expected, 1e-12);
  // Loose bound: a chain with correlation 1-p-r = 0.75 (variance factor 7), 5 sigma.
  EXPECT_NEAR(rate(pattern(m, n)), expected, 5 * std::sqrt(expected * (1 - expected) / n * 7));
  EXPECT_EQ(m.describe(), "gilbert:p=0.05,r=0.2,h=0.7,k=0.99 (mean loss 0.068)");
}

TEST(GilbertElliottLoss, NeverWithoutABadStateOrGoodLosses) {
  EXPECT_TRUE(GilbertElliottLoss({0, 0.5, 0, 1}, RandomStream(1, 0)).never());
  EXPECT_TRUE(GilbertElliottLoss({0.5, 0.5, 1, 1}, RandomStream(1, 0)).never());
  EXPECT_FALSE(GilbertElliottLoss({0, 0.5, 0, 0.99}, RandomStream(1, 0)).never());
}

// p13 alone is netem's Bernoulli model: independent losses at rate p13.
TEST(Markov4Loss, P13AloneIsBernoulli) {
  auto m = make_loss_model("x", "markov4:p13=0.1", RandomStream(5, 0));
  const size_t n = 500000;
  const std::vector<bool> lost = pattern(*m, n);
  EXPECT_NEAR(rate(lost), 0.1, 5 * std::sqrt(0.09 / n));
  size_t both = 0;
  for (size_t i = 1; i < n; ++i) both += lost[i] && lost[i - 1];
  EXPECT_NEAR(static_cast<double>(both) / (n - 1), 0.01, 5 * std::sqrt(0.01 * 0.99 / n) * 2);
  EXPECT_EQ(m->describe(), "markov4:p13=0.1,p31=0.9,p32=0,p23=1,p14=0 (mean loss 0.1)");
}

// State 4 (isolated loss) is always followed by state 1 (received): p14's losses never come two in a row.
TEST(Markov4Loss, IsolatedLossesAreIsolated) {
  Markov4Loss m({0, 1, 0, 1, 0.1}, RandomStream(6, 0));
  const size_t n = 500000;
  const std::vector<bool> lost = pattern(m, n);
  for (size_t i = 1; i < n; ++i) ASSERT_FALSE(lost[i] && lost[i - 1]) << i;
  EXPECT_NEAR(rate(lost), 0.1 / 1.1, 5 * std::sqrt(0.09 / n));
}

// The four-state chain's long-run loss rate against its stationary distribution, found independently here by
// iterating the transition matrix.
TEST(Markov4Loss, LossRateMatchesTheStationaryDistribution) {
  const Markov4Loss::Params q{0.02, 0.3, 0.2, 0.4, 0.01};
  double pi[5] = {0, 1, 0, 0, 0};
  for (int it = 0; it < 100000; ++it) {
    double next[5] = {0, 0, 0, 0, 0};
    next[1] += pi[1] * (1 - q.p13 - q.p14) + pi[3] * q.p31 + pi[4];
    next[2] += pi[2] * (1 - q.p23) + pi[3] * q.p32;
    next[3] += pi[1] * q.p13 + pi[2] * q.p23 + pi[3] * (1 - q.p31 - q.p32);
    next[4] += pi[1] * q.p14;
    std::copy(next, next + 5, pi);
  }
  Markov4Loss m(q, RandomStream(9, 0));
  EXPECT_NEAR(m.mean_loss(), pi[3] + pi[4], 1e-9);
  const size_t n = 4000000;
  // Correlated losses: a generous variance factor of 20 (bursts of mean 1/(p31+p32) = 2 with gaps inside).
  EXPECT_NEAR(rate(pattern(m, n)), pi[3] + pi[4], 5 * std::sqrt((pi[3] + pi[4]) / n * 20));
}

TEST(BitErrorLoss, ProbabilityGrowsWithSize) {
  BitErrorLoss m(1e-6, RandomStream(1, 0));
  EXPECT_NEAR(m.probability(1500), 1 - std::pow(1 - 1e-6, 12000), 1e-11);  // pow loses digits of 1-1e-6
  EXPECT_NEAR(m.probability(1500), 0.0119, 0.0001);                        // the figures: 1.2% and 0.05%
  EXPECT_NEAR(m.probability(64), 0.000512, 0.000001);
  EXPECT_EQ(m.probability(0), 0);
  EXPECT_EQ(BitErrorLoss(1, RandomStream(1, 0)).probability(1), 1);
  EXPECT_TRUE(BitErrorLoss(0, RandomStream(1, 0)).never());
}

TEST(BitErrorLoss, HitsEachSizeAtItsRate) {
  BitErrorLoss m(1e-4, RandomStream(2, 0));
  const size_t n = 400000;
  for (uint32_t bytes : {64u, 1400u}) {
    const double p = m.probability(bytes);
    size_t k = 0;
    for (size_t i = 0; i < n; ++i) k += m.hit(bytes);
    EXPECT_NEAR(static_cast<double>(k) / n, p, 5 * std::sqrt(p * (1 - p) / n)) << bytes;
  }
}

TEST(MakeLossModel, FormsAndTheirDescriptions) {
  const auto describe = [](const std::string& spec) {
    return make_loss_model("--uplink-loss", spec, RandomStream(1, 0))->describe();
  };
  EXPECT_EQ(describe("0.01"), "0.01");
  EXPECT_EQ(describe("1%"), "0.01");
  EXPECT_EQ(describe("gilbert:p=1%,r=25%"), "gilbert:p=0.01,r=0.25,h=0,k=1 (mean loss 0.0384615)");
  EXPECT_EQ(describe("gilbert: p=0.1, r=0.5, h=0.5, k=0.9"), "gilbert:p=0.1,r=0.5,h=0.5,k=0.9 (mean loss 0.166667)");
  EXPECT_EQ(describe("markov4:p13=5%,p31=50%,p32=10%,p23=20%,p14=1%").rfind("markov4:p13=0.05,p31=0.5,p32=0.1,", 0),
            0u);
  EXPECT_EQ(describe("ber:1e-6"), "ber:1e-06");
  EXPECT_TRUE(make_loss_model("x", "0", RandomStream(1, 0))->never());
}

TEST(MakeLossModel, ErrorsNameTheOptionAndWhatIsWrong) {
  EXPECT_EQ(error_of("2"),
            "invalid --uplink-loss '2': expected a probability from 0 to 1, or a percentage (e.g. 0.01 or 1%)");
  EXPECT_NE(error_of("lots").find("expected a probability (e.g. 0.01 or 1%), gilbert:"), std::string::npos);
  EXPECT_NE(error_of("gilbrt:p=1").find("unknown model 'gilbrt'"), std::string::npos);
  EXPECT_EQ(error_of("gilbert:p=0.1"), "--uplink-loss: gilbert needs r= (e.g. r=1%)");
  EXPECT_EQ(error_of("gilbert:p=0.1,r=0.2,q=1"), "--uplink-loss: unknown key 'q' for gilbert (expected p, r, h, k)");
  EXPECT_EQ(error_of("gilbert:p=0.1,r=2"),
            "invalid --uplink-loss (gilbert r=) '2': expected a probability from 0 to 1, or a percentage (e.g. 0.01 "
            "or 1%)");
  EXPECT_EQ(error_of("markov4:p31=0.1"), "--uplink-loss: markov4 needs p13= (e.g. p13=1%)");
  EXPECT_EQ(error_of("markov4:p13=0.6,p14=0.5"),
            "--uplink-loss: markov4: p13 + p14 is above 1 (they leave state 1 on the same draw)");
  EXPECT_EQ(error_of("markov4:p13=0.1,p31=0.6,p32=0.5"),
            "--uplink-loss: markov4: p31 + p32 is above 1 (they leave state 3 on the same draw)");
  EXPECT_NE(error_of("ber:x").find("invalid --uplink-loss (ber) 'x'"), std::string::npos);
  EXPECT_EQ(error_of("gilbert:p"), "--uplink-loss: 'p' is not KEY=VALUE (keys for gilbert: p, r, h, k)");
}

// A correlation of 100% between successive states makes a burst absorbing: refused, where netem gets stuck.
TEST(MakeLossModel, ChainsStuckInABurstAreRefused) {
  EXPECT_EQ(error_of("gilbert:p=0.1,r=0"),
            "--uplink-loss: gilbert: r=0 with p above 0 means the first burst never ends (r must be above 0)");
  EXPECT_EQ(error_of("markov4:p13=1"),
            "--uplink-loss: markov4: p31=0 with p13 above 0 means the first burst never ends (p31 must be above 0)");
  EXPECT_EQ(error_of("markov4:p13=0.1,p31=0,p32=0.5"),
            "--uplink-loss: markov4: p31=0 with p13 above 0 means the first burst never ends (p31 must be above 0)");
  EXPECT_EQ(error_of("markov4:p13=0.1,p31=0.5,p32=0.2,p23=0"),
            "--uplink-loss: markov4: p23=0 with p32 above 0 means the chain stays in state 2 for good");
  // Where no burst can start, nothing is stuck: the chain never leaves the gap.
  EXPECT_TRUE(make_loss_model("x", "gilbert:p=0,r=0", RandomStream(1, 0))->never());
  EXPECT_TRUE(make_loss_model("x", "markov4:p13=0,p31=0", RandomStream(1, 0))->never());
}

TEST(LossModels, SameSeedSamePattern) {
  for (const std::string spec : {"0.2", "gilbert:p=0.1,r=0.3", "markov4:p13=0.1,p31=0.5,p32=0.2,p23=0.3", "ber:1e-4"}) {
    auto a = make_loss_model("x", spec, RandomStream(42, 0)), b = make_loss_model("x", spec, RandomStream(42, 0));
    auto c = make_loss_model("x", spec, RandomStream(43, 0));
    const auto pa = pattern(*a, 10000), pb = pattern(*b, 10000), pc = pattern(*c, 10000);
    EXPECT_EQ(pa, pb) << spec;
    EXPECT_NE(pa, pc) << spec;
  }
}

}  // namespace
}  // namespace tracemod
