// The replay's DNS: every name of the recording resolves to the addresses recorded for it, every other name
// does not exist. UDP and TCP, on the replay server's io_context.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "web/recording.hh"

namespace tracemod::webserve {

class DnsResponder {
 public:
  // Names (lower case, no trailing dot) and their addresses, from the recording's origins.
  DnsResponder(boost::asio::io_context& io, const std::vector<web::Origin>& origins);
  ~DnsResponder();

  // Binds UDP and TCP ADDRESS:PORT and answers there; throws Error naming the address that fails.
  void listen(const std::string& address, uint16_t port);
  size_t name_count() const { return names_.size(); }

  // The reply to one query message (wire format); empty if QUERY is too short to answer at all. Over UDP, a
  // reply longer than 512 bytes (or the query's EDNS size) is cut to its question with TC set.
  std::string reply(const std::string& query, bool udp = false) const;

 private:
  struct Socket;
  void receive(Socket& s);
  void accept(boost::asio::ip::tcp::acceptor& a);

  boost::asio::io_context& io_;
  std::map<std::string, std::vector<boost::asio::ip::address>> names_;
  std::vector<std::unique_ptr<Socket>> sockets_;
  std::vector<std::unique_ptr<boost::asio::ip::tcp::acceptor>> acceptors_;
};

}  // namespace tracemod::webserve
