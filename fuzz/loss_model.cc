// Loss models as users write them (tm-loss's --uplink-loss and Mahimahi's RATE, a schedule's loss=): a
// probability, gilbert:..., markov4:... or ber:.... make_loss_model must build the model or refuse with a
// UsageError; a model it builds describes itself and is asked about packets of several sizes.
#include "channel/loss_model.hh"

#include "fuzz.hh"

using namespace tracemod;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::unique_ptr<LossModel> m;
  if (!fuzz::accepted(
          [&] { m = make_loss_model("--uplink-loss", std::string(fuzz::text(data, size)), RandomStream(1, 2)); }))
    return 0;
  m->describe();
  for (uint32_t i = 0; i < 1000; ++i) {
    const bool hit = m->hit(40 + i * 61 % 65000);
    FUZZ_CHECK(!(hit && m->never()));
  }
  return 0;
}
