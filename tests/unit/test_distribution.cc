// Distributions: the moments of each shape (sampled, or by quadrature where sampling converges too slowly), the
// forms users write, sample files, and correlated sampling.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "channel/distribution.hh"
#include "fake.hh"
#include "util/error.hh"

namespace tracemod {
namespace {

struct Moments {
  double mean, sd;
};

Moments sampled(Sampler s, size_t n, std::vector<double>* keep = nullptr) {
  double sum = 0, squares = 0;
  for (size_t i = 0; i < n; ++i) {
    const double x = s.next();
    sum += x, squares += x * x;
    if (keep) keep->push_back(x);
  }
  const double mean = sum / n;
  return {mean, std::sqrt(squares / n - mean * mean)};
}

// The mean and SD of D by Simpson's rule on its quantile function, in slices that shrink toward 1 so that a
// heavy right tail is integrated too.
Moments integrated(const Distribution& d) {
  double m1 = 0, m2 = 0;
  const auto slice = [&](double a, double b) {
    const int n = 2000;
    const double h = (b - a) / n;
    for (int i = 0; i <= n; ++i) {
      const double w = (i == 0 || i == n) ? 1 : (i % 2 ? 4 : 2), x = d.quantile(a + i * h);
      m1 += w * h / 3 * x, m2 += w * h / 3 * x * x;
    }
  };
  slice(1e-12, 0.5);
  for (double a = 0.5; a < 1 - 1e-15; a = 1 - (1 - a) / 10) slice(a, 1 - (1 - a) / 10);
  return {m1, std::sqrt(m2 - m1 * m1)};
}

std::string error_of(const std::string& text) {
  try {
    parse_distribution("--uplink-on", text, 1000 * kMillisecond);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(accepted)";
}

// Sample mean and SD: 5 sigma, sigma from the shape's kurtosis (normal 3, uniform 1.8, exponential 9).
TEST(Distribution, SampledMomentsOfTheLightTailedShapes) {
  const size_t n = 400000;
  struct Case {
    Distribution d;
    double kurtosis;
  };
  for (const Case& c : {Case{Distribution::normal(20, 5), 3}, Case{Distribution::uniform(-5, 5), 1.8},
                        Case{Distribution::exponential(3), 9}, Case{Distribution::constant(7), 1}}) {
    const Moments m = sampled(Sampler(c.d, 0, RandomStream(1, 3)), n);
    const double sd = c.d.stddev();
    EXPECT_NEAR(m.mean, c.d.mean(), 5 * sd / std::sqrt(n) + 1e-12) << c.d.describe();
    EXPECT_NEAR(m.sd, sd, 5 * sd * std::sqrt((c.kurtosis - 1) / (4.0 * n)) + 1e-12) << c.d.describe();
  }
}

// netem's heavy-tailed shapes, centred, with exactly the SD asked for (the constant behind paretonormal's
// scale checked here by quadrature, independently of how it was computed).
TEST(Distribution, ParetoShapesHaveMeanZeroAndTheirStandardDeviation) {
  for (const Distribution& d : {Distribution::pareto_jitter(0, 4), Distribution::paretonormal(0, 4)}) {
    const Moments m = integrated(d);
    EXPECT_NEAR(m.mean, 0, 0.002) << d.describe();
    EXPECT_NEAR(m.sd, 4, 0.01) << d.describe();
  }
  const Distribution p = Distribution::pareto(10, 3);  // ns-2's on/off form: mean 10, shape 3
  EXPECT_NEAR(integrated(p).mean, 10, 0.01);
  EXPECT_NEAR(p.quantile(1e-9), 10.0 * 2 / 3, 1e-6);  // the scale, its minimum
  EXPECT_NEAR(integrated(p).sd, p.stddev(), 0.05);
}

TEST(Distribution, NamedJitterShapes) {
  const Nanos j = 5 * kMillisecond;
  const Distribution u = jitter_distribution("x", "uniform", j);
  EXPECT_EQ(u.quantile(0.0), -5e6);
  EXPECT_EQ(u.quantile(0.5), 0);
  EXPECT_EQ(jitter_distribution("x", "normal", j).stddev(), 5e6);
  EXPECT_NEAR(jitter_distribution("x", "normal", j).quantile(0.975), 1.959964 * 5e6, 10);
  EXPECT_EQ(jitter_distribution("x", "pareto", j).describe(), "pareto, SD 5ms");
  EXPECT_EQ(jitter_distribution("x", "paretonormal", j).describe(), "paretonormal, SD 5ms");
  EXPECT_EQ(jitter_distribution("x", "uniform", j).describe(), "uniform:-5ms:5ms");
}

// A file of samples: each equally likely, moved to mean 0 and the SD asked for (or the samples' own).
TEST(Distribution, TableFromAFile) {
  const std::string path = fake::scratch_file("samples.txt", "# delays in ms\n10\n12 14\n\n16  # four samples\n");
  const Distribution d = jitter_distribution("--distribution", path, 2 * kMillisecond);
  const double sd = std::sqrt(5.0);  // of 10, 12, 14, 16 (population)
  EXPECT_NEAR(d.quantile(0.1), (10 - 13) / sd * 2e6, 1e-6);
  EXPECT_NEAR(d.quantile(0.9), (16 - 13) / sd * 2e6, 1e-6);
  const Distribution own = jitter_distribution("--distribution", path, 0);
  EXPECT_NEAR(own.quantile(0.3), -1e6, 1e-6);  // 12 ms is 1 ms below the mean
  const Moments m = sampled(Sampler(d, 0, RandomStream(2, 3)), 200000);
  EXPECT_NEAR(m.mean, 0, 5 * 2e6 / std::sqrt(200000.0));
  EXPECT_NEAR(m.sd, 2e6, 0.02 * 2e6);
}

TEST(Distribution, BadFilesNameTheLine) {
  const auto error = [](const std::string& path) {
    try {
      read_samples(path);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  const std::string bad = fake::scratch_file("bad.txt", "1\n2\n3x\n");
  EXPECT_EQ(error(bad), bad + ":3: '3x' is not a number");
  const std::string binary = fake::scratch_file("binary.txt", std::string("1 2\n\x1b[31m\x00\xff\n", 12));
  EXPECT_EQ(error(binary), binary + ":2: '\\x1b[31m\\x00\\xff' is not a number");  // no byte reaches a terminal raw
  const std::string one = fake::scratch_file("one.txt", "# only\n5\n");
  EXPECT_EQ(error(one), one + ": fewer than two samples");
  const std::string flat = fake::scratch_file("flat.txt", "5 5 5\n");
  EXPECT_EQ(error(flat), flat + ": all samples are equal: no spread to draw from");
  EXPECT_EQ(error("/nonexistent/table"), "/nonexistent/table: cannot open: No such file or directory");
  // Samples whose spread a double cannot hold would make every delay NaN (fuzz/regressions/distribution).
  const std::string huge = fake::scratch_file("huge.txt", "-18 1e240 20\n");
  EXPECT_EQ(error(huge), huge +
                             ": the samples' mean and standard deviation are out of a double's range (values too "
                             "large or too close together)");
  const std::string tiny = fake::scratch_file("tiny.txt", "1e-320 0 0\n");
  EXPECT_EQ(error(tiny), tiny +
                             ": the samples' mean and standard deviation are out of a double's range (values too "
                             "large or too close together)");
}

TEST(Distribution, AFileOwnSpreadIsAtMostAnHourAsAJittersIs) {
  const std::string path = fake::scratch_file("wide.txt", "0 20000000\n");  // ms: a standard deviation of 10^7 ms
  EXPECT_THROW(jitter_distribution("--distribution", path, 0), UsageError);
  EXPECT_EQ(jitter_distribution("--distribution", path, 5 * kMillisecond).stddev(), 5e6);  // scaled: fine
}

TEST(ParseDistribution, Forms) {
  const auto d = [](const std::string& text) { return parse_distribution("x", text, 1000 * kMillisecond); };
  EXPECT_EQ(d("exp:2").describe(), "exp:2000ms");
  EXPECT_EQ(d("exp:250ms").mean(), 250e6);
  EXPECT_EQ(d("uniform:1:3s").describe(), "uniform:1000ms:3000ms");
  EXPECT_EQ(d("const:0.5").quantile(0.9), 500e6);
  EXPECT_EQ(d("normal:1s:100ms").stddev(), 100e6);
  EXPECT_EQ(d("pareto:1s:1.5").describe(), "pareto:1000ms:1.5");
  EXPECT_TRUE(std::isinf(d("pareto:1s:1.5").stddev()));
}

TEST(ParseDistribution, Errors) {
  const std::string expected =
      "': expected exp:MEAN, uniform:A:B, const:X, normal:MEAN:SD or pareto:MEAN:SHAPE (e.g. exp:2s)";
  EXPECT_EQ(error_of("gauss:1"), "invalid --uplink-on 'gauss:1" + expected);
  EXPECT_EQ(error_of("exp"), "invalid --uplink-on 'exp" + expected);
  EXPECT_EQ(error_of("uniform:1"), "invalid --uplink-on 'uniform:1" + expected);
  EXPECT_EQ(error_of("uniform:3:1"), "invalid --uplink-on 'uniform:3:1': uniform:A:B needs A <= B");
  EXPECT_NE(error_of("exp:-1").find("invalid --uplink-on (exp) '-1'"), std::string::npos);
  const std::string shape = "': expected a shape above 1 (a Pareto of shape 1 or less has no mean), at most 1000";
  EXPECT_EQ(error_of("pareto:10:1"), "invalid --uplink-on (pareto shape) '1" + shape);
  EXPECT_EQ(error_of("pareto:10:1001"), "invalid --uplink-on (pareto shape) '1001" + shape);
  EXPECT_EQ(error_of("pareto:10:x"), "invalid --uplink-on (pareto shape) 'x" + shape);
  EXPECT_NO_THROW(parse_distribution("x", "pareto:10:1.000001", 1000 * kMillisecond));
}

// Correlated samples keep their distribution (netem's averaging would narrow it) and correlate as asked.
TEST(Sampler, CorrelationKeepsTheDistribution) {
  const size_t n = 200000;
  for (double rho : {0.25, 0.5, 0.9}) {
    std::vector<double> x;
    const Moments m = sampled(Sampler(Distribution::normal(0, 1), rho, RandomStream(3, 3)), n, &x);
    double lag = 0;
    for (size_t i = 1; i < n; ++i) lag += x[i] * x[i - 1];
    lag /= (n - 1);
    // An AR(1) sample's variance is inflated by (1+rho^2)/(1-rho^2) for the mean of products, (1+rho)/(1-rho)
    // for the mean: 5 sigma each.
    EXPECT_NEAR(lag, rho, 5 * std::sqrt((1 + rho * rho) / n * (1 + rho * rho) / (1 - rho * rho))) << rho;
    EXPECT_NEAR(m.mean, 0, 5 * std::sqrt((1 + rho) / (1 - rho) / n)) << rho;
    EXPECT_NEAR(m.sd, 1, 5 * std::sqrt((1 + rho * rho) / (1 - rho * rho) / (2.0 * n))) << rho;
  }
  const Moments u = sampled(Sampler(Distribution::uniform(-1, 1), 0.5, RandomStream(4, 3)), n);
  EXPECT_NEAR(u.sd, 1 / std::sqrt(3.0), 0.01);
}

TEST(Sampler, SameSeedSameSamples) {
  Sampler a(Distribution::normal(0, 1), 0.3, RandomStream(7, 3)),
      b(Distribution::normal(0, 1), 0.3, RandomStream(7, 3));
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next(), b.next());
}

TEST(Normal, QuantileAndCdfInvertEachOther) {
  for (double u : {1e-12, 0.001, 0.1, 0.5, 0.8, 0.999999})
    EXPECT_NEAR(normal_cdf(normal_quantile(u)), u, 1e-12 + u * 1e-12);
  EXPECT_NEAR(normal_quantile(0.975), 1.959963984540054, 1e-12);
}

}  // namespace
}  // namespace tracemod
