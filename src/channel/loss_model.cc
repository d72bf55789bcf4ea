#include "channel/loss_model.hh"

#include <cmath>
#include <sstream>

#include "util/error.hh"
#include "util/parse.hh"

namespace tracemod {
namespace {

std::string text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

const char* const kModels =
    "a probability (e.g. 0.01 or 1%), gilbert:p=P,r=R[,h=H][,k=K], markov4:p13=P[,p31=..,p32=..,p23=..,p14=..] "
    "or ber:B";

// A probability from the KEY=VALUE list; FALLBACK if absent, and required if FALLBACK is NaN.
double probability(const KeyValues& args, const std::string& key, double fallback) {
  const std::string* v = args.find(key);
  if (!v && std::isnan(fallback))
    throw UsageError(args.option() + ": " + args.what() + " needs " + key + "= (e.g. " + key + "=1%)");
  return v ? parse_probability(args.name(key), *v) : fallback;
}

std::unique_ptr<LossModel> gilbert(const std::string& option, const std::string& args, RandomStream random) {
  const KeyValues a(option, "gilbert", args, {"p", "r", "h", "k"});
  GilbertElliottLoss::Params g;
  g.p = probability(a, "p", NAN);
  g.r = probability(a, "r", NAN);
  g.h = probability(a, "h", 0);
  g.k = probability(a, "k", 1);
  // R=0 makes the bad state absorbing (a correlation of 100%): the first burst would never end.
  if (g.p > 0 && g.r <= 0)
    throw UsageError(option + ": gilbert: r=0 with p above 0 means the first burst never ends (r must be above 0)");
  return std::make_unique<GilbertElliottLoss>(g, random);
}

std::unique_ptr<LossModel> markov4(const std::string& option, const std::string& args, RandomStream random) {
  const KeyValues a(option, "markov4", args, {"p13", "p31", "p32", "p23", "p14"});
  Markov4Loss::Params m;
  m.p13 = probability(a, "p13", NAN);
  m.p31 = probability(a, "p31", 1 - m.p13);
  m.p32 = probability(a, "p32", 0);
  m.p23 = probability(a, "p23", 1);
  m.p14 = probability(a, "p14", 0);
  if (m.p13 + m.p14 > 1)
    throw UsageError(option + ": markov4: p13 + p14 is above 1 (they leave state 1 on the same draw)");
  if (m.p31 + m.p32 > 1)
    throw UsageError(option + ": markov4: p31 + p32 is above 1 (they leave state 3 on the same draw)");
  // Once in a burst the chain must be able to get back to the gap: else it is stuck in a burst for good.
  if (m.p13 > 0 && m.p31 <= 0)
    throw UsageError(option +
                     ": markov4: p31=0 with p13 above 0 means the first burst never ends (p31 must be above 0)");
  if (m.p13 > 0 && m.p32 > 0 && m.p23 <= 0)
    throw UsageError(option + ": markov4: p23=0 with p32 above 0 means the chain stays in state 2 for good");
  return std::make_unique<Markov4Loss>(m, random);
}

}  // namespace

std::string IidLoss::describe() const {
  return text(rate_);
}

bool GilbertElliottLoss::chance(double probability) {
  if (probability <= 0) return false;
  if (probability >= 1) return true;
  return random_.uniform() < probability;
}

bool GilbertElliottLoss::hit(uint32_t) {
  const bool lost = chance(bad_ ? 1 - params_.h : 1 - params_.k);
  bad_ = bad_ ? !chance(params_.r) : chance(params_.p);
  return lost;
}

double GilbertElliottLoss::mean_loss() const {
  const double bad = params_.p + params_.r > 0 ? params_.p / (params_.p + params_.r) : 0;
  return bad * (1 - params_.h) + (1 - bad) * (1 - params_.k);
}

std::string GilbertElliottLoss::describe() const {
  return "gilbert:p=" + text(params_.p) + ",r=" + text(params_.r) + ",h=" + text(params_.h) + ",k=" + text(params_.k) +
         " (mean loss " + text(mean_loss()) + ")";
}

bool Markov4Loss::hit(uint32_t) {
  const double u = random_.uniform();  // one draw per packet, whatever the state
  const Params& m = params_;
  switch (state_) {
    case 1:
      state_ = u < m.p14 ? 4 : u < m.p14 + m.p13 ? 3 : 1;
      break;
    case 2:
      state_ = u < m.p23 ? 3 : 2;
      break;
    case 3:
      state_ = u < m.p32 ? 2 : u < m.p32 + m.p31 ? 1 : 3;
      break;
    default:
      state_ = 1;
  }
  return state_ >= 3;
}

// From the balance equations: pi4 = p14 pi1, pi3 = p13/p31 pi1, pi2 = p32/p23 pi3.
double Markov4Loss::mean_loss() const {
  const Params& m = params_;
  if (m.p13 <= 0) return m.p14 / (1 + m.p14);
  if (m.p31 <= 0 || (m.p32 > 0 && m.p23 <= 0)) return NAN;  // caught in a burst, or in state 2, for good
  const double pi3 = m.p13 / m.p31, pi2 = m.p32 > 0 ? pi3 * m.p32 / m.p23 : 0;
  return (pi3 + m.p14) / (1 + m.p14 + pi3 + pi2);
}

std::string Markov4Loss::describe() const {
  const Params& m = params_;
  std::string s = "markov4:p13=" + text(m.p13) + ",p31=" + text(m.p31) + ",p32=" + text(m.p32) + ",p23=" + text(m.p23) +
                  ",p14=" + text(m.p14);
  const double loss = mean_loss();
  return std::isnan(loss) ? s : s + " (mean loss " + text(loss) + ")";
}

BitErrorLoss::BitErrorLoss(double ber, RandomStream random)
    : ber_(ber), log_keep_per_bit_(std::log1p(-ber)), random_(random) {}

double BitErrorLoss::probability(uint32_t ip_bytes) const {
  if (ip_bytes == 0 || ber_ <= 0) return 0;
  if (ber_ >= 1) return 1;
  return -std::expm1(8.0 * ip_bytes * log_keep_per_bit_);
}

bool BitErrorLoss::hit(uint32_t ip_bytes) {
  if (ip_bytes != last_bytes_) {
    last_bytes_ = ip_bytes;
    last_probability_ = probability(ip_bytes);
  }
  return random_.uniform() < last_probability_;
}

std::string BitErrorLoss::describe() const {
  return "ber:" + text(ber_);
}

std::unique_ptr<LossModel> make_loss_model(const std::string& option, const std::string& spec, RandomStream random) {
  const size_t colon = spec.find(':');
  const std::string name = spec.substr(0, colon), args = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (colon == std::string::npos) {
    double rate = -1;
    if (!parse_double(spec, rate) && spec.find('%') == std::string::npos)
      throw UsageError("invalid " + option + " '" + spec + "': expected " + kModels);
    return std::make_unique<IidLoss>(parse_probability(option, spec), random);
  }
  if (name == "gilbert") return gilbert(option, args, random);
  if (name == "markov4") return markov4(option, args, random);
  if (name == "ber") return std::make_unique<BitErrorLoss>(parse_probability(option + " (ber)", args), random);
  throw UsageError("invalid " + option + " '" + spec + "': unknown model '" + name + "' (expected " + kModels + ")");
}

}  // namespace tracemod
