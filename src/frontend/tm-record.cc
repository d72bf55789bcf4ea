// tm-record: record a link's capacity as a Mahimahi trace (server, client), or rebuild one (distill).
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "config.h"
#include "frontend/tool.hh"
#include "packet/trace.hh"
#include "record/config.hh"
#include "record/distill.hh"
#include "record/net.hh"
#include "util/error.hh"
#include "util/parse.hh"

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

double parse_number(const std::string& option, const std::string& text, double low, double high, const char* unit) {
  double v = NAN;
  if (!tracemod::parse_double(text, v) || !(v >= low && v <= high)) {
    std::ostringstream s;
    s << "invalid " << option << " '" << text << "': expected " << unit << " from " << low << " to " << high;
    throw UsageError(s.str());
  }
  return v;
}

tracemod::Nanos millis(const std::string& option, const std::string& text) {
  return static_cast<tracemod::Nanos>(tracemod::parse_milliseconds(option, text) * 1e6);
}

// A rate as tm-link takes it ("12mbit", "1.5mbit"...), or 0 for no cap; bits per second.
uint64_t max_rate(const std::string& option, const std::string& text) {
  if (text == "0") return 0;
  try {
    return tracemod::parse_rate(text);
  } catch (const UsageError& e) {
    throw UsageError(option + ": " + e.what() + " (or 0: no cap)");
  }
}

std::string get(const po::variables_map& vm, const char* name) {
  return vm.count(name) ? vm[name].as<std::string>() : std::string();
}

po::options_description common_options() {
  po::options_description d("Options of server and client");
  d.add_options()                                                                                               //
      ("token", po::value<std::string>()->value_name("T"), "shared secret (or TM_RECORD_TOKEN, --token-file)")  //
      ("token-file", po::value<std::string>()->value_name("FILE"), "read the shared secret from FILE")          //
      ("output,o", po::value<std::string>()->value_name("PREFIX"),
       "write PREFIX.up / PREFIX.down and PREFIX.*.raw (default tm-record)")                                      //
      ("data-dev", po::value<std::string>()->value_name("IFACE"), "send and receive data packets only on IFACE")  //
      ("feedback-dev", po::value<std::string>()->value_name("IFACE"), "carry feedback only on IFACE")             //
      ("data-port", po::value<std::string>()->value_name("PORT"), "UDP port of the server's data socket (9473)")  //
      ("feedback", po::value<std::string>()->value_name("ADDR"),
       "feedback path: HOST:PORT, [IPV6]:PORT or /unix/socket (client default SERVER:9474, server :9474)")  //
      ("max-rate", po::value<std::string>()->value_name("RATE"),
       "never send faster than RATE (default 100mbit; 0: no cap)")  //
      ("feedback-timeout", po::value<std::string>()->value_name("S"),
       "stop sending after S seconds without feedback (3)")  //
      ("quiet,q", "no progress lines")                       //
      ("help,h", "show this help and exit")                  //
      ("version", "show the version and exit");
  return d;
}

po::options_description client_options() {
  po::options_description d("Options of client");
  d.add_options()                                                                                                //
      ("direction", po::value<std::string>()->value_name("DIR"), "up (default), down, or both (cellular only)")  //
      ("duration", po::value<std::string>()->value_name("S"), "seconds to record, from the first arrival (30)")  //
      ("packet-size", po::value<std::string>()->value_name("B"), "IP packet bytes (1500 = one opportunity)")     //
      ("profile", po::value<std::string>()->value_name("P"), "window defaults: wifi (default) or lte")           //
      ("low-delay", po::value<std::string>()->value_name("MS"), "grow the window below this queueing delay")     //
      ("high-delay", po::value<std::string>()->value_name("MS"), "shrink it above this one")                     //
      ("min-window", po::value<std::string>()->value_name("N"), "packets")                                       //
      ("max-window", po::value<std::string>()->value_name("N"), "packets")                                       //
      ("initial-window", po::value<std::string>()->value_name("N"), "packets")                                   //
      ("loss-timeout", po::value<std::string>()->value_name("MS"),
       "floor of the time after which an unacknowledged packet is lost")  //
      ("server", po::value<std::string>()->value_name("SERVER"), "the server's data address");
  return d;
}

po::options_description server_options() {
  po::options_description d("Options of server");
  d.add_options()                                                                                              //
      ("listen", po::value<std::string>()->value_name("ADDR"), "bind the data socket to ADDR (default: all)")  //
      ("once", "exit after one session");
  return d;
}

void fill_common(const po::variables_map& vm, rec::CommonConfig& c) {
  c.token = get(vm, "token");
  if (vm.count("token-file")) {
    std::ifstream f(get(vm, "token-file"));
    if (!f) throw UsageError("invalid --token-file '" + get(vm, "token-file") + "': cannot read it");
    std::getline(f, c.token);
  }
  if (c.token.empty() && std::getenv("TM_RECORD_TOKEN")) c.token = std::getenv("TM_RECORD_TOKEN");
  if (c.token.empty())
    throw UsageError("missing --token (or --token-file, TM_RECORD_TOKEN): server and client must share a secret");
  if (vm.count("output")) c.output = get(vm, "output");
  c.data_dev = get(vm, "data-dev");
  c.feedback_dev = get(vm, "feedback-dev");
  c.max_rate_bps = vm.count("max-rate") ? max_rate("--max-rate", get(vm, "max-rate")) : 100000000;
  if (vm.count("feedback-timeout"))
    c.feedback_silence = static_cast<tracemod::Nanos>(
        parse_number("--feedback-timeout", get(vm, "feedback-timeout"), 0.5, 3600, "seconds") * 1e9);
  c.quiet = vm.count("quiet") > 0;
}

uint32_t count(const po::variables_map& vm, const char* name, uint32_t low, uint32_t high, uint32_t fallback) {
  if (!vm.count(name)) return fallback;
  const double v = parse_number(std::string("--") + name, get(vm, name), low, high, "a whole number");
  if (v != std::floor(v))
    throw UsageError(std::string("invalid --") + name + " '" + get(vm, name) + "': expected a whole number");
  return static_cast<uint32_t>(v);
}

void fill_window(const po::variables_map& vm, rec::WindowParams& w) {
  const std::string profile = vm.count("profile") ? get(vm, "profile") : "wifi";
  if (profile == "lte")
    w = rec::lte_window();
  else if (profile == "wifi")
    w = rec::wifi_window();
  else
    throw UsageError("invalid --profile '" + profile + "': expected wifi or lte");
  if (vm.count("low-delay")) w.low_delay = millis("--low-delay", get(vm, "low-delay"));
  if (vm.count("high-delay")) w.high_delay = millis("--high-delay", get(vm, "high-delay"));
  if (w.low_delay > w.high_delay) throw UsageError("invalid --low-delay: it is above --high-delay");
  w.min_window = count(vm, "min-window", 1, 1000000, w.min_window);
  w.max_window = count(vm, "max-window", 1, 1000000, w.max_window);
  if (w.min_window > w.max_window) throw UsageError("invalid --min-window: it is above --max-window");
  w.initial_window = count(vm, "initial-window", 1, 1000000, w.initial_window);
  if (vm.count("loss-timeout")) w.loss_timeout = millis("--loss-timeout", get(vm, "loss-timeout"));
}

int client(const po::variables_map& vm) {
  rec::ClientConfig c;
  fill_common(vm, c);
  c.server = get(vm, "server");
  if (c.server.empty()) throw UsageError("missing SERVER: the address the data packets go to");
  if (vm.count("data-port")) c.data_port = rec::parse_port("--data-port", get(vm, "data-port"));
  c.feedback = get(vm, "feedback");
  const std::string dir = vm.count("direction") ? get(vm, "direction") : "up";
  if (dir != "up" && dir != "down" && dir != "both")
    throw UsageError("invalid --direction '" + dir + "': expected up, down or both");
  c.up = dir != "down";
  c.down = dir != "up";
  if (vm.count("duration"))
    c.duration =
        static_cast<tracemod::Nanos>(parse_number("--duration", get(vm, "duration"), 1, 86400, "seconds") * 1e9);
  c.ip_packet_bytes = count(vm, "packet-size", 128, 9000, 1500);
  fill_window(vm, c.window);
  return rec::run_client(c);
}

int server(const po::variables_map& vm) {
  rec::ServerConfig c;
  fill_common(vm, c);
  c.listen = get(vm, "listen");
  if (vm.count("data-port")) c.data_port = rec::parse_port("--data-port", get(vm, "data-port"));
  c.feedback = get(vm, "feedback");
  c.once = vm.count("once") > 0;
  return rec::run_server(c);
}

int distill(const po::variables_map& vm) {
  const std::string raw = get(vm, "raw");
  if (raw.empty()) throw UsageError("missing RAW: the raw record to distill");
  const std::string prefix = vm.count("output") ? get(vm, "output") : rec::default_distill_prefix(raw);
  std::cout << rec::distill(raw, prefix) << "\n";
  return 0;
}

void help(const std::string& sub) {
  std::cout << kUsage << "\n"
            << "Record a link's capacity as a Mahimahi trace: the client and the server keep the bottleneck\n"
               "queue of one direction backlogged, the receiver writes each arrival; feedback travels apart.\n\n";
  if (sub != "distill") std::cout << common_options() << "\n";
  if (sub != "server" && sub != "distill") std::cout << client_options() << "\n";
  if (sub != "client" && sub != "distill") std::cout << server_options() << "\n";
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
    opts.add(common_options());
  if (sub == "client") opts.add(client_options()), positional.add("server", 1);
  if (sub == "server") opts.add(server_options());
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
  if (sub == "client") return client(vm);
  if (sub == "server") return server(vm);
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
