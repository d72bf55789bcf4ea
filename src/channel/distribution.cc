#include "channel/distribution.hh"

#include <algorithm>
#include <boost/math/special_functions/erf.hpp>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>

#include "util/error.hh"
#include "util/file_descriptor.hh"
#include "util/parse.hh"

namespace tracemod {
namespace {

constexpr double kSqrt2 = 1.4142135623730951;
// netem's Pareto tables have shape 3: mean 1.5 and SD sqrt(3)/2 for scale 1.
constexpr double kJitterMean = 1.5, kJitterSd = 0.8660254037844386;
// The SD of Phi^-1(u)/4 + (1-u)^(-1/3) - 1.5, netem's paretonormal mix (its pareto is scaled by 4/3):
// sqrt(1/16 + 3/4 + c/2), c = E[Phi^-1(U) ((1-U)^(-1/3) - 1.5)] = 0.58747074847833542 (numerical quadrature).
constexpr double kParetoNormalSd = 1.0517772455416440;
constexpr size_t kMaxSamples = 10000000;

struct Moments {
  double mean, sd;  // sd: of the population, as netem's tables are
};

Moments moments(const std::vector<double>& x) {
  const double n = static_cast<double>(x.size());
  const double mean = std::accumulate(x.begin(), x.end(), 0.0) / n;
  double ss = 0;
  for (double v : x) ss += (v - mean) * (v - mean);
  return {mean, std::sqrt(ss / n)};
}

std::string ms(double ns) {
  std::ostringstream s;
  s << ns / 1e6 << "ms";
  return s.str();
}

}  // namespace

double normal_quantile(double u) {
  return -kSqrt2 * boost::math::erfc_inv(2 * u);
}

double normal_cdf(double z) {
  return 0.5 * std::erfc(-z / kSqrt2);
}

Distribution Distribution::constant(double x) {
  return Distribution(Kind::kConstant, x, 0);
}
Distribution Distribution::uniform(double low, double high) {
  return Distribution(Kind::kUniform, low, high);
}
Distribution Distribution::exponential(double mean) {
  return Distribution(Kind::kExponential, mean, 0);
}
Distribution Distribution::normal(double mean, double sd) {
  return Distribution(Kind::kNormal, mean, sd);
}
// Pareto: c + a*(1-u)^(-1/b).
Distribution Distribution::pareto(double mean, double alpha) {
  return Distribution(Kind::kPareto, mean * (alpha - 1) / alpha, alpha, 0);
}
Distribution Distribution::pareto_jitter(double mean, double sd) {
  return Distribution(Kind::kParetoJitter, mean, sd);
}
Distribution Distribution::paretonormal(double mean, double sd) {
  return Distribution(Kind::kParetoNormal, mean, sd);
}

Distribution Distribution::table(std::vector<double> samples, double mean, double sd) {
  const Moments m = moments(samples);
  for (double& x : samples) x = (x - m.mean) / m.sd;
  std::sort(samples.begin(), samples.end());
  Distribution d(Kind::kTable, mean, sd);
  d.table_ = std::make_shared<const std::vector<double>>(std::move(samples));
  return d;
}

double Distribution::quantile(double u) const {
  switch (kind_) {
    case Kind::kConstant:
      return a_;
    case Kind::kUniform:
      return a_ + (b_ - a_) * u;
    case Kind::kExponential:
      return -a_ * std::log1p(-u);
    case Kind::kNormal:
      return a_ + b_ * normal_quantile(u);
    case Kind::kPareto:
      return c_ + a_ * std::pow(1 - u, -1 / b_);
    case Kind::kParetoJitter:
      return a_ + b_ * (std::cbrt(1 / (1 - u)) - kJitterMean) / kJitterSd;
    case Kind::kParetoNormal:
      return a_ + b_ * (normal_quantile(u) / 4 + std::cbrt(1 / (1 - u)) - kJitterMean) / kParetoNormalSd;
    case Kind::kTable: {
      const std::vector<double>& t = *table_;
      return a_ + b_ * t[std::min(t.size() - 1, static_cast<size_t>(u * static_cast<double>(t.size())))];
    }
  }
  return a_;
}

double Distribution::mean() const {
  switch (kind_) {
    case Kind::kUniform:
      return (a_ + b_) / 2;
    case Kind::kPareto:
      return c_ + a_ * b_ / (b_ - 1);
    default:
      return a_;
  }
}

double Distribution::stddev() const {
  switch (kind_) {
    case Kind::kConstant:
      return 0;
    case Kind::kUniform:
      return (b_ - a_) / std::sqrt(12.0);
    case Kind::kExponential:
      return a_;
    case Kind::kPareto:
      return b_ <= 2 ? std::numeric_limits<double>::infinity() : a_ / (b_ - 1) * std::sqrt(b_ / (b_ - 2));
    default:
      return b_;
  }
}

std::string Distribution::describe() const {
  std::ostringstream s;
  switch (kind_) {
    case Kind::kConstant:
      return "const:" + ms(a_);
    case Kind::kUniform:
      return "uniform:" + ms(a_) + ":" + ms(b_);
    case Kind::kExponential:
      return "exp:" + ms(a_);
    case Kind::kNormal:
      return "normal:" + ms(a_) + ":" + ms(b_);
    case Kind::kPareto:
      s << b_;
      return "pareto:" + ms(mean()) + ":" + s.str();
    case Kind::kParetoJitter:
      return "pareto, SD " + ms(b_);
    case Kind::kParetoNormal:
      return "paretonormal, SD " + ms(b_);
    case Kind::kTable:
      s << table_->size();
      return "a table of " + s.str() + " samples, SD " + ms(b_);
  }
  return "";
}

Sampler::Sampler(Distribution d, double correlation, RandomStream random)
    : d_(std::move(d)), rho_(correlation), random_(random) {}

double Sampler::next() {
  if (rho_ <= 0) return d_.quantile(random_.open_uniform());
  const double e = normal_quantile(random_.open_uniform());
  z_ = started_ ? rho_ * z_ + std::sqrt(1 - rho_ * rho_) * e : e;
  started_ = true;
  if (d_.is_normal()) return d_.mean() + d_.stddev() * z_;
  // Phi(z) rounds to 0 or 1 beyond about 8 standard deviations: keep it inside (0, 1).
  const double u = std::clamp(normal_cdf(z_), 0x1.0p-54, 1 - 0x1.0p-53);
  return d_.quantile(u);
}

namespace {

// The fields of "NAME:A[:B]", split at colons.
std::vector<std::string> fields(const std::string& text) {
  std::vector<std::string> f;
  size_t start = 0;
  for (size_t colon; (colon = text.find(':', start)) != std::string::npos; start = colon + 1)
    f.push_back(text.substr(start, colon - start));
  f.push_back(text.substr(start));
  return f;
}

}  // namespace

Distribution parse_distribution(const std::string& option, const std::string& text, Nanos bare_unit) {
  const std::vector<std::string> f = fields(text);
  const std::string& name = f[0];
  const size_t want = name == "exp" || name == "const"                            ? 2
                      : name == "uniform" || name == "normal" || name == "pareto" ? 3
                                                                                  : 0;
  if (want == 0 || f.size() != want)
    throw UsageError("invalid " + option + " '" + text +
                     "': expected exp:MEAN, uniform:A:B, const:X, normal:MEAN:SD or pareto:MEAN:SHAPE (e.g. exp:2s)");
  const auto time = [&](size_t i) {
    return static_cast<double>(parse_duration(option + " (" + name + ")", f[i], bare_unit));
  };
  if (name == "exp") return Distribution::exponential(time(1));
  if (name == "const") return Distribution::constant(time(1));
  if (name == "normal") return Distribution::normal(time(1), time(2));
  if (name == "pareto") {
    // Not parse_number's "from LOW to HIGH": a shape of 1 has no mean, yet 1.000001 does.
    const std::string why = "invalid " + option + " (pareto shape) " + quote_text(f[2]) +
                            ": expected a shape above 1 (a Pareto of shape 1 or less has no mean), at most 1000";
    double alpha = 0;
    if (!parse_double(f[2], alpha)) throw UsageError(why);
    if (!(alpha > 1 && alpha <= 1000)) throw OutOfRange(why);
    return Distribution::pareto(time(1), alpha);
  }
  const double low = time(1), high = time(2);
  if (high < low) throw UsageError("invalid " + option + " '" + text + "': uniform:A:B needs A <= B");
  return Distribution::uniform(low, high);
}

std::vector<double> read_samples(const std::string& path) {
  LineReader in(path);
  std::vector<double> samples;
  std::string word;
  for (std::string_view line; in.next(line);) {
    std::istringstream words(std::string(line.substr(0, line.find('#'))));
    while (words >> word) {
      double x = 0;
      if (!parse_double(word, x)) in.fail(quote_text(word) + " is not a number");
      if (samples.size() == kMaxSamples) in.fail("more than 10000000 samples");
      samples.push_back(x);
    }
  }
  if (samples.size() < 2) throw UsageError(path + ": fewer than two samples");
  if (std::all_of(samples.begin(), samples.end(), [&](double x) { return x == samples[0]; }))
    throw UsageError(path + ": all samples are equal: no spread to draw from");
  // Their shape is taken relative to their mean and spread: both must be finite, the spread above 0 (values
  // near 1e200 square to infinity, values near 1e-320 to 0), or every sample would be NaN.
  const Moments m = moments(samples);
  if (!std::isfinite(m.mean) || !std::isfinite(m.sd) || m.sd <= 0)
    throw UsageError(path +
                     ": the samples' mean and standard deviation are out of a double's range (values too "
                     "large or too close together)");
  return samples;
}

Distribution jitter_distribution(const std::string& option, const std::string& name, Nanos jitter) {
  const double j = static_cast<double>(jitter);
  if (name == "uniform") return Distribution::uniform(-j, j);
  if (name == "normal") return Distribution::normal(0, j);
  if (name == "pareto") return Distribution::pareto_jitter(0, j);
  if (name == "paretonormal") return Distribution::paretonormal(0, j);
  if (name.empty())
    throw UsageError("invalid " + option + " '': expected uniform, normal, pareto, paretonormal or a file");
  std::vector<double> samples = read_samples(name);
  const double sd = jitter == 0 ? moments(samples).sd * 1e6 : j;  // the samples' own spread, in milliseconds
  if (sd > static_cast<double>(kMaxDelay))
    throw UsageError(name + ": the samples' standard deviation, " + ms(sd) +
                     ", is above an hour, the largest jitter (give --jitter to scale them)");
  return Distribution::table(std::move(samples), 0, sd);
}

}  // namespace tracemod
