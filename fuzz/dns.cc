// The replay's DNS responder: the input as one query message, as a datagram and over TCP
// (DnsResponder::reply), for a recording of a few names, one of them with more addresses than a datagram holds.
// A reply is empty (too short to answer, or itself a reply) or a DNS message with the query's id, QR set and its
// opcode; over UDP it is never longer than 512 bytes, or the query's EDNS size; where the TCP reply is longer
// than that, the UDP one is cut to its question with TC set, and otherwise the two are the same.
#include "webserve/dns.hh"

#include <ldns/ldns.h>

#include <boost/asio/io_context.hpp>

#include "fuzz.hh"

using namespace tracemod;

namespace {

std::vector<web::Origin> origins() {
  std::vector<web::Origin> out = {{"192.0.2.1", 443, web::Scheme::kHttps, {"a.test", "www.a.test"}},
                                  {"2001:db8::1", 443, web::Scheme::kHttps, {"a.test"}},
                                  {"192.0.2.2", 80, web::Scheme::kHttp, {"B.Test."}}};
  // Forty addresses and ten IPv6 ones for one name: over 512 bytes in a reply.
  for (int i = 0; i < 50; ++i) {
    const std::string address = i < 40 ? "198.51.100." + std::to_string(i + 1) : "2001:db8::" + std::to_string(i);
    out.push_back({address, 443, web::Scheme::kHttps, {"many.test"}});
  }
  return out;
}

const webserve::DnsResponder& responder() {
  static boost::asio::io_context io;  // never run: reply() is a function of its bytes alone
  static const webserve::DnsResponder dns(io, origins());
  return dns;
}

uint16_t u16(const std::string& m, size_t at) {
  return static_cast<uint16_t>(static_cast<uint8_t>(m[at]) << 8 | static_cast<uint8_t>(m[at + 1]));
}

// What the query asked a datagram to hold at most: 512 bytes, or its EDNS size if larger.
size_t udp_limit(const std::string& query) {
  ldns_pkt* p = nullptr;
  if (ldns_wire2pkt(&p, reinterpret_cast<const uint8_t*>(query.data()), query.size()) != LDNS_STATUS_OK) return 512;
  const size_t limit = ldns_pkt_edns(p) ? std::max<size_t>(512, ldns_pkt_edns_udp_size(p)) : 512;
  ldns_pkt_free(p);
  return limit;
}

void check_reply(const std::string& query, const std::string& reply) {
  if (reply.empty()) return;
  FUZZ_CHECK(reply.size() >= 12);
  FUZZ_CHECK(u16(reply, 0) == u16(query, 0));          // its id
  FUZZ_CHECK(reply[2] & 0x80);                         // QR: a reply, never answered in turn
  FUZZ_CHECK((reply[2] & 0x78) == (query[2] & 0x78));  // its opcode
  ldns_pkt* p = nullptr;                               // a message a resolver can read
  FUZZ_CHECK(ldns_wire2pkt(&p, reinterpret_cast<const uint8_t*>(reply.data()), reply.size()) == LDNS_STATUS_OK);
  ldns_pkt_free(p);
}

// UDP's reply cut from TCP's: TC set, no answers, the same question.
bool cut(const std::string& udp, const std::string& tcp) {
  return (udp[2] & 0x02) && u16(udp, 6) == 0 && u16(udp, 4) == u16(tcp, 4);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string query(fuzz::text(data, size));
  const std::string udp = responder().reply(query, true), tcp = responder().reply(query, false);
  FUZZ_CHECK(udp.empty() == tcp.empty());
  FUZZ_CHECK(!tcp.empty() || size < 12 || (query[2] & 0x80));  // only what is no query goes unanswered
  check_reply(query, udp);
  check_reply(query, tcp);
  FUZZ_CHECK(tcp.size() <= 65535);  // a TCP message's length is two bytes
  if (tcp.empty()) return 0;
  const size_t limit = udp_limit(query);
  FUZZ_CHECK(udp.size() <= limit);
  FUZZ_CHECK(tcp.size() <= limit ? udp == tcp : cut(udp, tcp));
  return 0;
}
