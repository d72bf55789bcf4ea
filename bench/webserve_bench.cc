// bench/webserve's server: tm-webreplay's replay server on a synthetic recording (ORIGINS HTTPS origins at
// 127.0.1.1, 127.0.1.2, ... on PORT, OBJECTS objects of SIZE bytes spread over them), timed from nothing to every
// socket listening. Prints "start_ms N" and the cost of a leaf certificate, creates READY_FILE once it serves,
// prints its service times since the last report ("service_us n p50 p99 max") on SIGUSR1 and exits on SIGTERM.
// Writes BODY_FILE (one object's body) and a leaf certificate and key for the baseline server to serve with.
//
// usage: bench/webserve_bench DIR PORT ORIGINS OBJECTS SIZE    (files go to DIR: ca/, ready, body, leaf.pem, leaf.key)
#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <chrono>
#include <cmath>
#include <csignal>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>

#include "certs/certs.hh"
#include "web/matcher.hh"
#include "web/recording.hh"
#include "webserve/bodies.hh"
#include "webserve/server.hh"

using namespace tracemod;
using Clock = std::chrono::steady_clock;

namespace {

web::Recording synthetic(int origins, int objects, size_t size, uint16_t port) {
  web::Recording r;
  const std::string body(size, 'x');
  for (int i = 0; i < objects; ++i) {
    const int o = i % origins;
    web::Exchange e;
    e.scheme = web::Scheme::kHttps;
    e.host = "o" + std::to_string(o) + ".bench.test";
    e.address = "127.0.1." + std::to_string(o + 1);
    e.port = port;
    e.request.method = "GET";
    e.request.target = "/obj" + std::to_string(i / origins);
    e.response.status = 200;
    e.response.headers = {{"Content-Type", "application/octet-stream"}, {"Cache-Control", "max-age=3600"}};
    e.response.body = body;
    r.exchanges.push_back(std::move(e));
  }
  return r;
}

// Nearest-rank percentile P of sorted V, in microseconds.
double percentile_us(const std::vector<int64_t>& v, double p) {
  const size_t rank = std::max<size_t>(1, static_cast<size_t>(std::ceil(p / 100 * v.size())));
  return v[rank - 1] / 1000.0;
}

void report(webserve::ReplayServer& server) {
  std::vector<int64_t> v = server.service_times_ns();
  server.clear_service_times();
  std::sort(v.begin(), v.end());
  if (v.empty()) {
    std::cout << "service_us 0 - - -" << std::endl;
    return;
  }
  std::cout << "service_us " << v.size() << ' ' << percentile_us(v, 50) << ' ' << percentile_us(v, 99) << ' '
            << v.back() / 1000.0 << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::cerr << "usage: webserve_bench DIR PORT ORIGINS OBJECTS SIZE\n";
    return 2;
  }
  const std::string dir = argv[1];
  const auto port = static_cast<uint16_t>(std::stoi(argv[2]));
  const web::Recording recording = synthetic(std::stoi(argv[3]), std::stoi(argv[4]), std::stoul(argv[5]), port);
  try {
    const Clock::time_point t0 = Clock::now();
    certs::CertificateAuthority ca = certs::CertificateAuthority::load_or_create(dir + "/ca");
    const web::Matcher matcher(recording);
    webserve::Bodies bodies(recording, nullptr, 1);
    boost::asio::io_context io{1};
    webserve::ReplayServer server(io, matcher, bodies, ca, std::cerr);
    server.listen();
    const double start_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    std::cout << "start_ms " << start_ms << " origins " << server.origin_count() << " objects "
              << recording.exchanges.size() << std::endl;
    const Clock::time_point t1 = Clock::now();
    for (int i = 0; i < 100; ++i) ca.leaf("leaf" + std::to_string(i) + ".bench.test");
    std::cout << "leaf_us " << std::chrono::duration<double, std::micro>(Clock::now() - t1).count() / 100 << std::endl;
    std::ofstream(dir + "/body", std::ios::binary) << recording.exchanges[0].response.body;
    std::ofstream(dir + "/leaf.pem") << certs::pem(ca.leaf("127.0.1.1")) << certs::pem(ca.certificate());
    std::ofstream(dir + "/leaf.key") << certs::pem(ca.leaf_key());
    server.keep_service_times(true);
    boost::asio::signal_set stop(io, SIGTERM, SIGINT), usr1(io, SIGUSR1);
    stop.async_wait([&io](const boost::system::error_code&, int) { io.stop(); });
    std::function<void()> wait_usr1 = [&] {
      usr1.async_wait([&](const boost::system::error_code& ec, int) {
        if (ec) return;
        report(server);
        wait_usr1();
      });
    };
    wait_usr1();
    std::ofstream(dir + "/ready") << "ready\n";
    io.run();
  } catch (const std::exception& e) {
    std::cerr << "webserve_bench: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}
