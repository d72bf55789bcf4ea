#include "webrecord/proxy_command.hh"

#include <boost/program_options.hpp>
#include <cstdlib>
#include <iostream>

#include "webrecord/proxy.hh"

namespace tracemod::webrecord {

namespace po = boost::program_options;

int proxy_command(int argc, char** argv) {
  po::options_description options("webrecord-proxy");
  ProxyConfig config;
  options.add_options()                                                               //
      ("dir", po::value(&config.dir)->required(), "the recording's directory")        //
      ("upstream-ca", po::value(&config.upstream_ca), "the origins' CA")              //
      ("insecure-upstream", po::bool_switch(&config.insecure_upstream), "no checks")  //
      ("max-body", po::value(&config.max_body), "bytes")                              //
      ("verbose", po::bool_switch(&config.verbose), "a line per exchange");
  try {
    po::variables_map vm;
    po::store(po::parse_command_line(argc, argv, options), vm);
    po::notify(vm);
    for (const char* v : {"TM_OUTER", "TM_OUTER6"})
      if (const char* a = std::getenv(v); a && *a) config.addresses.push_back(a);
    run_proxy(config);
  } catch (const std::exception& e) {
    std::cerr << "tm-webrecord: recorder: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace tracemod::webrecord
