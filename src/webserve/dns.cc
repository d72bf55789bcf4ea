#include "webserve/dns.hh"

#include <ldns/ldns.h>

#include <algorithm>
#include <array>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "util/error.hh"

namespace tracemod::webserve {
namespace {

namespace asio = boost::asio;
using udp = asio::ip::udp;
using tcp = asio::ip::tcp;

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

// A reply to Q: its id, RD flag and QUESTION echoed, authoritative.
PktPtr reply_header(const ldns_pkt* q, const ldns_rr* question) {
  PktPtr r(ldns_pkt_new());
  ldns_pkt_set_id(r.get(), ldns_pkt_id(q));
  ldns_pkt_set_qr(r.get(), true);
  ldns_pkt_set_aa(r.get(), true);
  ldns_pkt_set_rd(r.get(), ldns_pkt_rd(q));
  ldns_pkt_set_ra(r.get(), true);
  ldns_pkt_push_rr(r.get(), LDNS_SECTION_QUESTION, ldns_rr_clone(question));
  return r;
}

// The recorded ADDRESSES of the question's type (A, AAAA, or both for ANY); none for other types (NOERROR, no
// data: the name exists).
void add_addresses(ldns_pkt* r, const ldns_rr* question, const std::vector<asio::ip::address>& addresses) {
  const ldns_rr_type type = ldns_rr_get_type(question);
  for (const asio::ip::address& a : addresses)
    if (type == LDNS_RR_TYPE_ANY || (type == LDNS_RR_TYPE_A && a.is_v4()) || (type == LDNS_RR_TYPE_AAAA && a.is_v6()))
      ldns_pkt_push_rr(r, LDNS_SECTION_ANSWER, address_record(ldns_rr_owner(question), a));
}

std::string wire(const ldns_pkt* p) {
  uint8_t* data = nullptr;
  size_t size = 0;
  if (ldns_pkt2wire(&data, p, &size) != LDNS_STATUS_OK) return {};
  std::string out(reinterpret_cast<char*>(data), size);
  free(data);
  return out;
}

// DNS over TCP: each message behind its two-byte length, answered in turn until the client closes.
class TcpSession : public std::enable_shared_from_this<TcpSession> {
 public:
  TcpSession(tcp::socket socket, const DnsResponder& dns) : socket_(std::move(socket)), dns_(dns) {}

  void read() {
    asio::async_read(socket_, asio::buffer(length_), [self = shared_from_this()](boost::system::error_code ec, size_t) {
      if (ec) return;
      self->message_.resize(self->length_[0] << 8 | self->length_[1]);
      asio::async_read(self->socket_, asio::buffer(self->message_), [self](boost::system::error_code e, size_t) {
        if (!e) self->answer();
      });
    });
  }

 private:
  void answer() {
    const std::string reply = dns_.reply(message_);
    if (reply.empty()) return;
    out_ = {static_cast<char>(reply.size() >> 8), static_cast<char>(reply.size() & 0xff)};
    out_ += reply;
    asio::async_write(socket_, asio::buffer(out_), [self = shared_from_this()](boost::system::error_code ec, size_t) {
      if (!ec) self->read();
    });
  }

  tcp::socket socket_;
  const DnsResponder& dns_;
  std::array<uint8_t, 2> length_{};
  std::string message_, out_;
};

std::string where(const char* protocol, const asio::ip::address& ip, uint16_t port) {
  return std::string("DNS: listen on ") + protocol + " " + ip.to_string() + " port " + std::to_string(port);
}

udp::socket bound_udp(asio::io_context& io, const asio::ip::address& ip, uint16_t port) {
  boost::system::error_code ec;
  udp::socket s(io);
  s.open(ip.is_v6() ? udp::v6() : udp::v4(), ec);
  if (!ec && ip.is_v6()) s.set_option(asio::ip::v6_only(true), ec);
  if (!ec) s.bind({ip, port}, ec);
  if (ec) throw Error(where("UDP", ip, port) + ": " + ec.message());
  return s;
}

tcp::acceptor listening_tcp(asio::io_context& io, const asio::ip::address& ip, uint16_t port) {
  boost::system::error_code ec;
  tcp::acceptor a(io);
  a.open(ip.is_v6() ? tcp::v6() : tcp::v4(), ec);
  if (!ec) a.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec && ip.is_v6()) a.set_option(asio::ip::v6_only(true), ec);
  if (!ec) a.bind({ip, port}, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw Error(where("TCP", ip, port) + ": " + ec.message());
  return a;
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
  const asio::ip::address ip = asio::ip::make_address(address, ec);
  if (ec) throw Error("DNS: '" + address + "' is not an IP address");
  auto s = std::make_unique<Socket>(Socket{bound_udp(io_, ip, port), {}, {}});
  auto acceptor = std::make_unique<tcp::acceptor>(listening_tcp(io_, ip, port));
  receive(*s);
  sockets_.push_back(std::move(s));
  accept(*acceptor);
  acceptors_.push_back(std::move(acceptor));
}

void DnsResponder::accept(tcp::acceptor& a) {
  a.async_accept([this, &a](boost::system::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted) return;
    if (!ec) std::make_shared<TcpSession>(std::move(socket), *this)->read();
    accept(a);
  });
}

void DnsResponder::receive(Socket& s) {
  s.socket.async_receive_from(asio::buffer(s.buffer), s.peer, [this, &s](boost::system::error_code ec, size_t n) {
    if (ec == asio::error::operation_aborted) return;
    if (!ec) {
      const std::string answer = reply(std::string(s.buffer.data(), n), true);
      if (!answer.empty()) s.socket.send_to(asio::buffer(answer), s.peer, 0, ec);  // UDP: never blocks for long
    }
    receive(s);
  });
}

std::string DnsResponder::reply(const std::string& query, bool udp) const {
  if (query.size() < 12 || (query[2] & 0x80)) return {};  // not a query: no answer, so no reflection loops
  ldns_pkt* parsed = nullptr;
  if (ldns_wire2pkt(&parsed, reinterpret_cast<const uint8_t*>(query.data()), query.size()) != LDNS_STATUS_OK)
    return header_only_reply(query, LDNS_RCODE_FORMERR);
  PktPtr q(parsed);
  if (ldns_pkt_get_opcode(q.get()) != LDNS_PACKET_QUERY) return header_only_reply(query, LDNS_RCODE_NOTIMPL);
  if (ldns_pkt_qdcount(q.get()) != 1) return header_only_reply(query, LDNS_RCODE_FORMERR);
  const ldns_rr* question = ldns_rr_list_rr(ldns_pkt_question(q.get()), 0);
  PktPtr r = reply_header(q.get(), question);
  char* owner_text = ldns_rdf2str(ldns_rr_owner(question));
  const auto found = names_.find(canonical(owner_text ? owner_text : ""));
  free(owner_text);
  if (found == names_.end() || ldns_rr_get_class(question) != LDNS_RR_CLASS_IN)
    ldns_pkt_set_rcode(r.get(), LDNS_RCODE_NXDOMAIN);
  else
    add_addresses(r.get(), question, found->second);
  std::string out = wire(r.get());
  const size_t limit = !udp                     ? 65535
                       : ldns_pkt_edns(q.get()) ? std::max<size_t>(512, ldns_pkt_edns_udp_size(q.get()))
                                                : 512;
  if (out.size() <= limit) return out;
  // Too long for a datagram: no answers, TC set, so the resolver asks again over TCP.
  ldns_rr_list_deep_free(ldns_pkt_answer(r.get()));
  ldns_pkt_set_answer(r.get(), ldns_rr_list_new());
  ldns_pkt_set_ancount(r.get(), 0);
  ldns_pkt_set_tc(r.get(), true);
  return wire(r.get());
}

}  // namespace tracemod::webserve
