// Whether a wire packet is lost: the channel models of tm-loss, as small pieces any queue can use (tm-loss's
// LossQueue, and later tools that change the loss over time). A model owns its random stream and is asked
// once per wire packet (and once more per link-layer retry), in the order the packets cross the link.
//
// The models and their names elsewhere:
//   RATE              independent loss: netem `loss random`, Mahimahi mm-loss, Seawind's per-packet error
//                     probability
//   gilbert:p,r,h,k   Gilbert-Elliott two-state loss: netem `loss gemodel p r 1-h 1-k`, Seawind's two-state
//                     Markov distribution
//   markov4:p13,...   netem's four-state Markov loss (`loss state p13 p31 p32 p23 p14`)
//   ber:B             a bit-error rate: Seawind's per-bit error probability
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "util/random.hh"

namespace tracemod {

class LossModel {
 public:
  virtual ~LossModel() = default;
  // Whether the next wire packet, of IP_BYTES, is hit.
  virtual bool hit(uint32_t ip_bytes) = 0;
  // True if the model can never hit a packet (a rate of 0): its queue may skip it.
  virtual bool never() const { return false; }
  // The effective parameters, as -v and log headers print them (e.g. "0.01", "gilbert:p=0.01,r=0.25,h=0,k=1").
  virtual std::string describe() const = 0;
};

// Independent loss: each packet is hit with probability RATE.
class IidLoss : public LossModel {
 public:
  IidLoss(double rate, RandomStream random) : rate_(rate), random_(random) {}
  bool hit(uint32_t) override { return random_.uniform() < rate_; }
  bool never() const override { return rate_ <= 0; }
  std::string describe() const override;

 private:
  double rate_;
  RandomStream random_;
};

// Gilbert-Elliott: a good and a bad state. Each packet is hit with the loss probability of the state it finds
// (1-K in the good state, 1-H in the bad), then the state moves on: good to bad with probability P, bad to good
// with probability R. It starts good. With H=0, K=1 (the Gilbert model) the long-run loss rate is P/(P+R) and
// losses come in bursts of mean length 1/R.
class GilbertElliottLoss : public LossModel {
 public:
  struct Params {
    double p = 0, r = 1, h = 0, k = 1;
  };
  GilbertElliottLoss(const Params& params, RandomStream random) : params_(params), random_(random) {}
  bool hit(uint32_t) override;
  bool never() const override { return params_.k >= 1 && (params_.p <= 0 || params_.h >= 1); }
  std::string describe() const override;
  // The long-run fraction of packets hit.
  double mean_loss() const;

 private:
  bool chance(double probability);
  Params params_;
  RandomStream random_;
  bool bad_ = false;
};

// netem's four-state Markov chain (Salsano et al., "the GI model"), with netem's parameter names. States: 1
// packets received in a gap, 2 received within a burst, 3 lost within a burst, 4 isolated losses in a gap.
// Each packet moves the chain once (1->3 with p13, 1->4 with p14, 3->1 with p31, 3->2 with p32, 2->3 with p23,
// 4->1 always) and is lost if the state it enters is 3 or 4. It starts in state 1.
class Markov4Loss : public LossModel {
 public:
  struct Params {
    double p13 = 0, p31 = 1, p32 = 0, p23 = 1, p14 = 0;
  };
  Markov4Loss(const Params& params, RandomStream random) : params_(params), random_(random) {}
  bool hit(uint32_t) override;
  bool never() const override { return params_.p13 <= 0 && params_.p14 <= 0; }
  std::string describe() const override;
  // The long-run fraction of packets hit (NaN where the chain does not settle to one answer).
  double mean_loss() const;

 private:
  Params params_;
  RandomStream random_;
  int state_ = 1;
};

// A bit-error rate: a packet of S IP bytes is hit with probability 1-(1-B)^(8*S), so big packets more often
// than small ones (B=1e-6: 1.2% of 1500-byte packets, 0.05% of 64-byte ones).
class BitErrorLoss : public LossModel {
 public:
  BitErrorLoss(double ber, RandomStream random);
  bool hit(uint32_t ip_bytes) override;
  bool never() const override { return ber_ <= 0; }
  std::string describe() const override;
  // The probability that a packet of IP_BYTES is hit.
  double probability(uint32_t ip_bytes) const;

 private:
  double ber_, log_keep_per_bit_;
  RandomStream random_;
  uint32_t last_bytes_ = 0;  // packets come in runs of one size: remember the last probability
  double last_probability_ = 0;
};

// A model as a user writes it (tm-loss's --uplink-loss, Mahimahi's RATE): a probability ("0.01", "1%"), or
//   gilbert:p=P,r=R[,h=H][,k=K]                  P, R required; H=0, K=1 by default
//   markov4:p13=P[,p31=..][,p32=..][,p23=..][,p14=..]   netem's defaults: p31=1-p13, p32=0, p23=1, p14=0
//   ber:B                                         B from 0 to 1 (e.g. 1e-6)
// where every probability may be a percentage. A chain that would be stuck in a burst for good (gilbert r=0,
// markov4 p31=0, or p23=0 with p32 above 0, once a burst can start) is refused. Errors throw UsageError naming
// OPTION. RANDOM becomes the model's own stream.
std::unique_ptr<LossModel> make_loss_model(const std::string& option, const std::string& spec, RandomStream random);

}  // namespace tracemod
