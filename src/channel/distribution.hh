// Random quantities (jitter, on and off times) described once, the way users write them, and sampled with an
// optional correlation between successive samples. A distribution is held as its quantile function, so every
// kind -- a named shape, a table of measured samples -- is sampled the same way from one uniform draw.
//
// What users write (parse_distribution; tm-onoff's --uplink-on/--uplink-off, and what others will reuse):
//   exp:MEAN           exponential (Mahimahi mm-onoff's on and off times)
//   uniform:A:B        uniform from A to B
//   const:X            always X
//   normal:MEAN:SD     normal (a sample below 0 is taken as 0 where the caller needs a duration)
//   pareto:MEAN:SHAPE  Pareto with that mean and shape (SHAPE > 1; ns-2's Pareto on/off times)
// and the jitter shapes of netem (jitter_distribution; tm-delay's --distribution): uniform, normal, pareto,
// paretonormal, or a FILE of samples.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "util/clock.hh"
#include "util/random.hh"

namespace tracemod {

class Distribution {
 public:
  static Distribution constant(double x);
  static Distribution uniform(double low, double high);
  static Distribution exponential(double mean);
  static Distribution normal(double mean, double sd);
  // Pareto with shape ALPHA > 1 and the given mean (scale MEAN*(ALPHA-1)/ALPHA).
  static Distribution pareto(double mean, double alpha);
  // netem's pareto (shape 3) and paretonormal (its quantiles mixed 1:3 with a normal's) shapes, centred on MEAN
  // with standard deviation SD.
  static Distribution pareto_jitter(double mean, double sd);
  static Distribution paretonormal(double mean, double sd);
  // Each of SAMPLES equally likely, shifted and scaled to MEAN and SD (population SD; at least two values, not all
  // equal).
  static Distribution table(std::vector<double> samples, double mean, double sd);

  // The value whose cumulative probability is U, 0 < U < 1.
  double quantile(double u) const;
  double mean() const;
  double stddev() const;  // infinite for a Pareto with shape 2 or less
  // As a user writes it, values in milliseconds (the distributions here hold nanoseconds): "exp:200ms"; the
  // jitter shapes as "pareto, SD 5ms".
  std::string describe() const;
  bool is_normal() const { return kind_ == Kind::kNormal; }

 private:
  enum class Kind { kConstant, kUniform, kExponential, kNormal, kPareto, kParetoJitter, kParetoNormal, kTable };
  Distribution(Kind kind, double a, double b, double c = 0) : kind_(kind), a_(a), b_(b), c_(c) {}
  Kind kind_;
  double a_, b_, c_;                                  // the kind's parameters (see quantile())
  std::shared_ptr<const std::vector<double>> table_;  // sorted, mean 0, SD 1
};

// Successive samples of a distribution from one random stream. With CORRELATION rho (0 <= rho < 1), each sample's
// normal score follows the last one's: z' = rho*z + sqrt(1-rho^2)*e, e standard normal (a Gaussian AR(1) copula),
// so every sample still has the configured distribution and successive normal samples correlate exactly rho
// (other shapes: their rank correlation is (6/pi)*asin(rho/2), within 0.02 of rho). netem instead averages its
// uniform draws, which narrows the distribution as the correlation grows.
class Sampler {
 public:
  Sampler(Distribution d, double correlation, RandomStream random);
  double next();
  const Distribution& distribution() const { return d_; }

 private:
  Distribution d_;
  double rho_, z_ = 0;
  bool started_ = false;
  RandomStream random_;
};

// The standard normal's quantile and cumulative distribution functions.
double normal_quantile(double u);
double normal_cdf(double z);

// One of the forms above (exp:MEAN, ...), every value a duration (parse_duration: a unit, or BARE_UNIT for a bare
// number). Values are nanoseconds. Errors throw UsageError naming OPTION.
Distribution parse_distribution(const std::string& option, const std::string& text, Nanos bare_unit);

// tm-delay's jitter: NAME is uniform (from -JITTER to +JITTER, netem's default), normal, pareto or paretonormal
// (mean 0, standard deviation JITTER), or the path of a FILE of samples (mean 0, standard deviation JITTER, or
// the samples' own if JITTER is 0). Errors throw UsageError naming OPTION, and FILE:LINE for a bad file.
Distribution jitter_distribution(const std::string& option, const std::string& name, Nanos jitter);

// The samples in PATH: numbers separated by blanks or newlines ('#' starts a comment), as netem's maketable
// reads them; its .dist tables, which hold equally likely values, read the same.
std::vector<double> read_samples(const std::string& path);

}  // namespace tracemod
