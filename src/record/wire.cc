#include "record/wire.hh"

namespace tracemod::record {
namespace {
constexpr uint32_t kMagic = 0x544d5244;  // "TMRD"

void put(uint8_t*& p, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) *p++ = static_cast<uint8_t>(v >> (8 * i));
}
uint64_t get(const uint8_t*& p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | *p++;
  return v;
}
}  // namespace

void encode(const DataHeader& h, uint8_t* out) {
  put(out, kMagic, 4);
  put(out, static_cast<uint8_t>(h.kind), 1);
  put(out, h.up ? 1 : 0, 1);
  put(out, h.session, 8);
  put(out, h.seq, 8);
  put(out, static_cast<uint64_t>(h.send_ns), 8);
}

std::optional<DataHeader> decode(const uint8_t* buf, size_t len) {
  if (len < kHeaderBytes) return std::nullopt;
  const uint8_t* p = buf;
  if (get(p, 4) != kMagic) return std::nullopt;
  DataHeader h;
  const uint64_t kind = get(p, 1);
  if (kind != 1 && kind != 2) return std::nullopt;
  h.kind = static_cast<PacketKind>(kind);
  h.up = get(p, 1) != 0;
  h.session = get(p, 8);
  h.seq = get(p, 8);
  h.send_ns = static_cast<Nanos>(get(p, 8));
  return h;
}

}  // namespace tracemod::record
