// What a link does with a packet a loss model hits (the error mode), and duplication: small pieces a queue
// applies per wire packet, after asking its LossModel. Seawind names the three error modes: "drop" (the link
// layer detects the error and discards the packet), "corrupt" (a transparent link delivers it damaged; see
// corrupt.hh) and "delay" (a reliable link layer retransmits: here `arq`).
#pragma once

#include <cstdint>
#include <string>

#include "channel/loss_model.hh"
#include "util/clock.hh"
#include "util/random.hh"

namespace tracemod {

struct ErrorMode {
  enum class Kind { kDrop, kCorrupt, kArq };
  Kind kind = Kind::kDrop;
  Nanos retry_delay = 0;         // arq: what each failed attempt costs
  uint32_t retries = 0;          // arq: retransmissions after the first attempt before the packet is given up
  std::string describe() const;  // "drop", "corrupt", "arq:delay=5,retries=3" (ms)
};

// "drop", "corrupt" or "arq:delay=MS,retries=N" (both required; MS with a unit or in milliseconds, from 0 to
// 1 hour; N from 0 to 1000). Errors throw UsageError naming OPTION.
ErrorMode parse_error_mode(const std::string& option, const std::string& text);

// An in-order link layer that retransmits (ARQ, as 802.11's retries or LTE's RLC acknowledged mode): a packet
// whose attempt the model hits is sent again after RETRY_DELAY, each retry drawing again from the model; one
// that fails RETRIES+1 times is given up. The link handles one packet at a time and keeps their order: a packet
// behind one being retried waits for it (head-of-line blocking).
class ArqLink {
 public:
  ArqLink(Nanos retry_delay, uint32_t retries) : delay_(retry_delay), retries_(retries) {}
  // A wire packet of IP_BYTES reaches the link at ARRIVAL; FIRST_HIT is the model's verdict on its first
  // attempt, MODEL decides the retries. Returns when it leaves (k failures then a success: k*RETRY_DELAY after
  // the link took it up), or kNever if it is given up (the link then spent (RETRIES+1)*RETRY_DELAY on it).
  Nanos transmit(Nanos arrival, bool first_hit, LossModel& model, uint32_t ip_bytes);
  // A packet the model does not judge (link control): leaves as soon as the link is free.
  Nanos pass(Nanos arrival);
  uint64_t retransmissions() const { return retransmissions_; }

 private:
  Nanos delay_;
  uint32_t retries_;
  Nanos free_at_ = 0;  // when the link is done with the packet ahead
  uint64_t retransmissions_ = 0;
};

// An extra copy of a delivered packet with probability P (netem's `duplicate`), drawn once per wire packet,
// whether or not the loss model hit it, so that which packets are duplicated does not depend on the loss.
class Duplicator {
 public:
  Duplicator(double p, RandomStream random) : p_(p), random_(random) {}
  bool copy() { return p_ > 0 && random_.uniform() < p_; }
  bool never() const { return p_ <= 0; }

 private:
  double p_;
  RandomStream random_;
};

}  // namespace tracemod
