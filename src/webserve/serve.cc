#include "webserve/serve.hh"

#include <unistd.h>

#include <boost/asio/signal_set.hpp>
#include <cerrno>
#include <csignal>

#include "util/error.hh"
#include "webserve/certs.hh"
#include "webserve/dns.hh"
#include "webserve/server.hh"

namespace tracemod::webserve {

int serve(const ServeConfig& config) {
  if (!config.recording) throw Error("serve: no recording");
  const web::Recording& recording = *config.recording;
  std::ostream& log = *config.log;
  CertificateAuthority ca = CertificateAuthority::load_or_create(config.ca_dir);
  const web::Matcher matcher(recording);
  boost::asio::io_context io{1};
  // Before any socket listens: a signal that arrives once the shell is told we are ready is never lost.
  boost::asio::signal_set signals(io, SIGTERM, SIGINT);
  signals.async_wait([&io](const boost::system::error_code&, int) { io.stop(); });
  ReplayServer server(io, recording, matcher, ca, log);
  server.listen();
  const std::vector<web::Origin> origins = web::origins(recording);
  DnsResponder dns(io, origins);
  for (const std::string& address : config.dns_addresses) dns.listen(address, config.dns_port);
  log << "serving " << recording.exchanges.size() << " exchanges from " << origins.size() << " origins ("
      << dns.name_count() << " names)" << std::endl;
  if (config.ready_fd >= 0) {
    const char byte = 1;
    ssize_t n;
    while ((n = write(config.ready_fd, &byte, 1)) < 0 && errno == EINTR) {
    }
    if (n < 0) throw_errno("serve: readiness fd", errno);
  }
  io.run();
  return 0;
}

}  // namespace tracemod::webserve
