#include "webserve/server_command.hh"

#include <boost/program_options.hpp>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "web/snapshot.hh"
#include "webserve/serve.hh"

namespace tracemod::webserve {

namespace po = boost::program_options;

int server_command(int argc, char** argv) {
  po::options_description options("webreplay-server");
  ServeConfig config;
  std::string ca_dir;
  std::vector<std::string> ignored;
  uint64_t seed = 0;
  options.add_options()                                                               //
      ("ca-dir", po::value(&ca_dir)->required(), "the CA's directory")                //
      ("ready-fd", po::value(&config.ready_fd), "where to say it is ready")            //
      ("ignore-param", po::value(&ignored)->composing(), "ignored parameters")        //
      ("strict", po::bool_switch(&config.server.strict), "strict")                    //
      ("keep-dates", po::bool_switch(&config.server.keep_dates), "dates as recorded")  //
      ("deterministic", po::bool_switch(&config.deterministic), "the deterministic script")  //
      ("seed", po::value(&seed), "its seed");
  try {
    po::variables_map vm;
    po::store(po::parse_command_line(argc, argv, options), vm);
    po::notify(vm);
    const web::Recording recording = web::read_snapshot(0);
    config.recording = &recording;
    config.ca_dir = ca_dir;
    config.match.strict = config.server.strict;
    config.match.ignored_params = ignored;
    if (vm.count("seed")) config.seed = seed;
    for (const char* v : {"TM_OUTER", "TM_OUTER6"})
      if (const char* a = std::getenv(v); a && *a) config.dns_addresses.push_back(a);
    return serve(config);
  } catch (const std::exception& e) {
    std::cerr << "tm-webreplay: the replay's server: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace tracemod::webserve
