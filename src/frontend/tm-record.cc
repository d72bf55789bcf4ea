// tm-record: record a link's capacity as a Mahimahi trace (server, client), or rebuild one (distill).
#include <boost/program_options.hpp>
#include <iostream>

#include "config.h"
#include "record/distill.hh"
#include "record/record_cli.hh"
#include "util/error.hh"

namespace po = boost::program_options;
namespace rec = tracemod::record;
using tracemod::UsageError;

namespace {

const char* const kUsage =
    "usage: tm-record server --token T [OPTIONS]\n"
    "       tm-record client --token T [OPTIONS] SERVER\n"
    "       tm-record distill [-o PREFIX] RAW";

// One write per message: a server and a client may share the terminal.
void print_error(const std::string& text) {
  std::cerr << text << std::flush;
}

int usage_error(const std::string& message) {
  print_error("tm-record: " + message + "\n" + kUsage + "\nTry 'tm-record --help' for more information.\n");
  return 2;
}

int distill(const po::variables_map& vm) {
  auto get = [&](const char* name) { return vm.count(name) ? vm[name].as<std::string>() : std::string(); };
  const std::string raw = get("raw");
  if (raw.empty()) throw UsageError("missing RAW: the raw record to distill");
  const std::string prefix = vm.count("output") ? get("output") : rec::default_distill_prefix(raw);
  const std::string report = rec::distill(raw, prefix);  // the summary, then any warning
  const size_t newline = std::min(report.find('\n'), report.size());
  std::cout << report.substr(0, newline) << "\n" << std::flush;
  if (newline < report.size()) print_error("tm-record: " + report.substr(newline + 1) + "\n");
  return 0;
}

void help(const std::string& sub) {
  std::cout << kUsage << "\n"
            << "Record a link's capacity as a Mahimahi trace: the client and the server keep the bottleneck\n"
               "queue of one direction backlogged, the receiver writes each arrival; feedback travels apart.\n\n";
  if (sub != "distill") std::cout << rec::common_options() << "\n";
  if (sub != "server" && sub != "distill") std::cout << rec::client_options() << "\n";
  if (sub != "client" && sub != "distill") std::cout << rec::server_options() << "\n";
  if (sub.empty() || sub == "distill")
    std::cout << "distill RAW [-o PREFIX]: rebuild PREFIX (the trace), PREFIX.delay and PREFIX.loss from a raw\n"
                 "record (default PREFIX: RAW without .raw).\n";
}

int run(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) throw UsageError("missing subcommand: server, client or distill");
  const std::string sub = args[0];
  if (sub == "--help" || sub == "-h") return help(""), 0;
  if (sub == "--version") return std::cout << "tm-record (" PACKAGE_NAME ") " PACKAGE_VERSION "\n", 0;
  if (sub != "server" && sub != "client" && sub != "distill")
    throw UsageError("unknown subcommand '" + sub + "': expected server, client or distill");
  po::options_description opts("Options");
  po::positional_options_description positional;
  if (sub == "distill")
    opts.add_options()("output,o", po::value<std::string>())("help,h", "")("version", "");
  else
    opts.add(rec::common_options());
  if (sub == "client") opts.add(rec::client_options()), positional.add("server", 1);
  if (sub == "server") opts.add(rec::server_options());
  if (sub == "distill") opts.add_options()("raw", po::value<std::string>(), "raw record"), positional.add("raw", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(std::vector<std::string>(args.begin() + 1, args.end()))
                .options(opts)
                .positional(positional)
                .run(),
            vm);
  po::notify(vm);
  if (vm.count("help")) return help(sub), 0;
  if (vm.count("version")) return std::cout << "tm-record (" PACKAGE_NAME ") " PACKAGE_VERSION "\n", 0;
  if (sub == "client") return rec::run_client(rec::client_config(vm));
  if (sub == "server") return rec::run_server(rec::server_config(vm));
  return distill(vm);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const po::error& e) {
    return usage_error(e.what());
  } catch (const UsageError& e) {
    return usage_error(e.what());
  } catch (const std::exception& e) {
    print_error(std::string("tm-record: ") + e.what() + "\n");
    return 1;
  }
}
