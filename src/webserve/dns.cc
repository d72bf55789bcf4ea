#include "webserve/dns.hh"

#include <ldns/ldns.h>

#include <algorithm>
#include <array>

#include "util/error.hh"

namespace tracemod::webserve {
namespace {

namespace asio = boost::asio;
using udp = asio::ip::udp;

constexpr uint32_t kTtl = 60;

struct PktFree {
  void operator()(ldns_pkt* p) const { ldns_pkt_free(p); }
};
using PktPtr = std::unique_ptr<ldns_pkt, PktFree>;

std::string canonical(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  while (!name.empty() && name.back() == '.') name.pop_back();
  return name;
}

// A header-only error reply for a message ldns cannot parse: its id and opcode echoed, RCODE set. (Built from
// the fixed 12-byte header, the one part of a message that needs no parsing.)
std::string header_only_reply(const std::string& query, ldns_pkt_rcode rcode) {
  std::string out(12, '\0');
  out[0] = query[0];
  out[1] = query[1];
  out[2] = static_cast<char>(0x80 | (query[2] & 0x78));  // QR, the query's opcode
  out[3] = static_cast<char>(rcode);
  return out;
}

ldns_rr* address_record(const ldns_rdf* owner, const asio::ip::address& a) {
  ldns_rr* rr = ldns_rr_new();
  ldns_rr_set_owner(rr, ldns_rdf_clone(owner));
  ldns_rr_set_class(rr, LDNS_RR_CLASS_IN);
  ldns_rr_set_ttl(rr, kTtl);
  if (a.is_v4()) {
    const auto bytes = a.to_v4().to_bytes();
    ldns_rr_set_type(rr, LDNS_RR_TYPE_A);
    ldns_rr_push_rdf(rr, ldns_rdf_new_frm_data(LDNS_RDF_TYPE_A, bytes.size(), bytes.data()));
  } else {
    const auto bytes = a.to_v6().to_bytes();
    ldns_rr_set_type(rr, LDNS_RR_TYPE_AAAA);
    ldns_rr_push_rdf(rr, ldns_rdf_new_frm_data(LDNS_RDF_TYPE_AAAA, bytes.size(), bytes.data()));
  }
  return rr;
}

std::string wire(const ldns_pkt* p) {
  uint8_t* data = nullptr;
  size_t size = 0;
  if (ldns_pkt2wire(&data, p, &size) != LDNS_STATUS_OK) return {};
  std::string out(reinterpret_cast<char*>(data), size);
  free(data);
  return out;
}

}  // namespace

struct DnsResponder::Socket {
  udp::socket socket;
  udp::endpoint peer;
  std::array<char, 65536> buffer;
};

DnsResponder::DnsResponder(asio::io_context& io, const std::vector<web::Origin>& origins) : io_(io) {
  for (const web::Origin& o : origins) {
    boost::system::error_code ec;
    const asio::ip::address a = asio::ip::make_address(o.address, ec);
    if (ec) throw Error("origin " + o.address + ": not an IP address");
    for (const std::string& name : o.names) {
      std::vector<asio::ip::address>& addresses = names_[canonical(name)];
      if (std::find(addresses.begin(), addresses.end(), a) == addresses.end()) addresses.push_back(a);
    }
  }
}

DnsResponder::~DnsResponder() = default;

void DnsResponder::listen(const std::string& address, uint16_t port) {
  boost::system::error_code ec;
  const asio::ip::address a = asio::ip::make_address(address, ec);
  if (ec) throw Error("DNS: '" + address + "' is not an IP address");
  const udp::endpoint at{a, port};
  auto s = std::make_unique<Socket>(Socket{udp::socket{io_}, {}, {}});
  s->socket.open(at.protocol(), ec);
  if (!ec && a.is_v6()) s->socket.set_option(asio::ip::v6_only(true), ec);
  if (!ec) s->socket.bind(at, ec);
  if (ec) throw Error("DNS: listen on " + address + " port " + std::to_string(port) + ": " + ec.message());
  receive(*s);
  sockets_.push_back(std::move(s));
}

void DnsResponder::receive(Socket& s) {
  s.socket.async_receive_from(asio::buffer(s.buffer), s.peer, [this, &s](boost::system::error_code ec, size_t n) {
    if (ec == asio::error::operation_aborted) return;
    if (!ec) {
      const std::string answer = reply(std::string(s.buffer.data(), n));
      if (!answer.empty()) s.socket.send_to(asio::buffer(answer), s.peer, 0, ec);  // UDP: never blocks for long
    }
    receive(s);
  });
}

std::string DnsResponder::reply(const std::string& query) const {
  if (query.size() < 12 || (query[2] & 0x80)) return {};  // not a query: no answer, so no reflection loops
  ldns_pkt* parsed = nullptr;
  if (ldns_wire2pkt(&parsed, reinterpret_cast<const uint8_t*>(query.data()), query.size()) != LDNS_STATUS_OK)
    return header_only_reply(query, LDNS_RCODE_FORMERR);
  PktPtr q(parsed);
  if (ldns_pkt_get_opcode(q.get()) != LDNS_PACKET_QUERY) return header_only_reply(query, LDNS_RCODE_NOTIMPL);
  if (ldns_pkt_qdcount(q.get()) != 1) return header_only_reply(query, LDNS_RCODE_FORMERR);
  const ldns_rr* question = ldns_rr_list_rr(ldns_pkt_question(q.get()), 0);
  PktPtr r(ldns_pkt_new());
  ldns_pkt_set_id(r.get(), ldns_pkt_id(q.get()));
  ldns_pkt_set_qr(r.get(), true);
  ldns_pkt_set_aa(r.get(), true);
  ldns_pkt_set_rd(r.get(), ldns_pkt_rd(q.get()));
  ldns_pkt_set_ra(r.get(), true);
  ldns_pkt_push_rr(r.get(), LDNS_SECTION_QUESTION, ldns_rr_clone(question));
  char* owner_text = ldns_rdf2str(ldns_rr_owner(question));
  const auto found = names_.find(canonical(owner_text ? owner_text : ""));
  free(owner_text);
  const ldns_rr_type type = ldns_rr_get_type(question);
  if (found == names_.end() || ldns_rr_get_class(question) != LDNS_RR_CLASS_IN) {
    ldns_pkt_set_rcode(r.get(), LDNS_RCODE_NXDOMAIN);
  } else if (type == LDNS_RR_TYPE_A || type == LDNS_RR_TYPE_AAAA || type == LDNS_RR_TYPE_ANY) {
    for (const asio::ip::address& a : found->second)
      if (type == LDNS_RR_TYPE_ANY || a.is_v4() == (type == LDNS_RR_TYPE_A))
        ldns_pkt_push_rr(r.get(), LDNS_SECTION_ANSWER, address_record(ldns_rr_owner(question), a));
  }
  return wire(r.get());
}

}  // namespace tracemod::webserve
