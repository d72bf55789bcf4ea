#include "webserve/serve.hh"

#include <unistd.h>

#include <algorithm>
#include <boost/asio/signal_set.hpp>
#include <cerrno>
#include <csignal>
#include <thread>

#include "certs/certs.hh"
#include "util/error.hh"
#include "webserve/bodies.hh"
#include "webserve/dns.hh"
#include "webserve/server.hh"

namespace tracemod::webserve {
namespace {

std::string counts(const std::map<std::string, size_t>& by_coding) {
  std::string out;
  for (const auto& [coding, n] : by_coding) out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + coding;
  return out;
}

// "1 name", "2 names".
std::string count(size_t n, const std::string& one, std::string many = "") {
  if (many.empty()) many = one + "s";
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

void say_ready(int fd) {
  if (fd < 0) return;
  const char byte = 1;
  ssize_t n;
  while ((n = write(fd, &byte, 1)) < 0 && errno == EINTR) {
  }
  if (n < 0) throw_errno("serve: readiness fd", errno);
}

}  // namespace

int64_t recorded_start_ms(const web::Recording& recording) {
  int64_t earliest = -1;
  for (const web::Exchange& e : recording.exchanges)
    if (e.recorded_ms >= 0 && (earliest < 0 || e.recorded_ms < earliest)) earliest = e.recorded_ms;
  return earliest >= 0 ? earliest : 1577836800000;  // 2020-01-01T00:00:00Z
}

std::string start_line(const web::Recording& recording, size_t listeners, size_t names, const Bodies::Made& made) {
  std::string line = "serving " + count(recording.exchanges.size(), "exchange") + " on " +
                     count(listeners, "address and port", "addresses and ports") + " (" + count(names, "name") + ")";
  if (!made.encoded.empty())
    line += "; bodies a HAR holds decoded, encoded again to their recorded Content-Encoding: " + counts(made.encoded);
  if (!made.uncodable.empty())
    line += "; served decoded, without their recorded Content-Encoding (not made here): " + counts(made.uncodable);
  if (made.injected + made.not_injected)
    line += "; the deterministic script in " + count(made.injected, "HTML document") +
            (made.not_injected ? " (" + std::to_string(made.not_injected) + " could not take it)" : "");
  return line;
}

int serve(const ServeConfig& config) {
  if (!config.recording) throw Error("serve: no recording");
  const web::Recording& recording = *config.recording;
  std::ostream& log = *config.log;
  certs::CertificateAuthority ca = certs::CertificateAuthority::load_or_create(config.ca_dir);
  const web::Matcher matcher(recording, config.match);
  std::optional<Injection> injection;
  if (config.deterministic) {
    const int64_t start = recorded_start_ms(recording);
    injection = deterministic_script(start, config.seed.value_or(static_cast<uint64_t>(start)));
  }
  Bodies bodies(recording, injection ? &*injection : nullptr, std::max(1u, std::thread::hardware_concurrency()));
  boost::asio::io_context io{1};
  // Before any socket listens: a signal that arrives once the shell is told we are ready is never lost.
  boost::asio::signal_set signals(io, SIGTERM, SIGINT);
  signals.async_wait([&io](const boost::system::error_code&, int) { io.stop(); });
  ReplayServer server(io, matcher, bodies, ca, log, config.server);
  server.listen();
  DnsResponder dns(io, web::origins(recording));
  for (const std::string& address : config.dns_addresses) dns.listen(address, config.dns_port);
  log << start_line(recording, server.origin_count(), dns.name_count(), bodies.made()) << std::endl;
  say_ready(config.ready_fd);
  io.run();
  if (server.misses())
    log << count(server.misses(), "request was", "requests were") << " not in the recording (each said above as "
        << "unmatched)" << std::endl;
  return 0;
}

}  // namespace tracemod::webserve
