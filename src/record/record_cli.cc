// The command line of tm-record's server and client, turned into their configurations.
#include "record/record_cli.hh"

#include <cstdlib>
#include <sstream>

#include "link/trace.hh"
#include "record/raw_record.hh"
#include "util/error.hh"
#include "util/file_descriptor.hh"
#include "util/parse.hh"

namespace tracemod::record {
namespace {

constexpr tracemod::Nanos kSecond = 1000 * tracemod::kMillisecond;

// Seconds as tm-record has always taken them ("30", "0.5"), or a duration with a unit ("2min"), LOW to HIGH.
tracemod::Nanos seconds(const std::string& option, const std::string& text, tracemod::Nanos low,
                        tracemod::Nanos high) {
  return tracemod::parse_duration_between(option, text, kSecond, low, high);
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

// The first line of PATH, read as every text file is (a regular file, a line of at most a MiB).
std::string read_token(const std::string& path) {
  try {
    LineReader in(path);
    std::string_view line;
    return in.next(line) ? std::string(line) : std::string();
  } catch (const UsageError& e) {
    const std::string why = e.what(), named = path + ":";
    throw UsageError("invalid --token-file '" + path + "'" +
                     (why.rfind(named, 0) == 0 ? why.substr(path.size()) : ": " + why));
  }
}

void fill_common(const po::variables_map& vm, CommonConfig& c) {
  if (vm.count("token") && vm.count("token-file"))
    throw UsageError("--token and --token-file exclude each other: give the secret one way");
  c.token = get(vm, "token");
  if (vm.count("token-file")) c.token = read_token(get(vm, "token-file"));
  if (c.token.empty() && std::getenv("TM_RECORD_TOKEN")) c.token = std::getenv("TM_RECORD_TOKEN");
  if (c.token.empty())
    throw UsageError("missing --token (or --token-file, TM_RECORD_TOKEN): server and client must share a secret");
  if (vm.count("output")) c.output = get(vm, "output");
  if (vm.count("token-file")) {  // a recording over the secret (a server's later sessions add "-N" to PREFIX)
    std::vector<NamedFile> files = {{"--token-file", get(vm, "token-file")}};
    for (const char* suffix : {".up", ".down", ".up.raw", ".down.raw"})
      files.push_back({"the recording", c.output + suffix, true});
    check_outputs(files);
  }
  c.data_dev = get(vm, "data-dev");
  c.feedback_dev = get(vm, "feedback-dev");
  c.max_rate_bps = vm.count("max-rate") ? max_rate("--max-rate", get(vm, "max-rate")) : 100000000;
  if (vm.count("feedback-timeout"))
    c.feedback_silence = seconds("--feedback-timeout", get(vm, "feedback-timeout"), kSecond / 2, 3600 * kSecond);
  c.quiet = vm.count("quiet") > 0;
}

uint32_t count(const po::variables_map& vm, const char* name, uint32_t low, uint32_t high, uint32_t fallback) {
  if (!vm.count(name)) return fallback;
  return static_cast<uint32_t>(parse_whole_number(std::string("--") + name, get(vm, name), low, high));
}

void fill_window(const po::variables_map& vm, WindowParams& w) {
  const std::string profile = vm.count("profile") ? get(vm, "profile") : "auto";
  if (profile == "auto")
    w = auto_window();
  else if (profile == "lte")
    w = lte_window();
  else if (profile == "wifi")
    w = wifi_window();
  else
    throw UsageError("invalid --profile '" + profile + "': expected auto, wifi or lte");
  if (vm.count("low-delay")) w.low_delay = parse_delay("--low-delay", get(vm, "low-delay"));
  if (vm.count("high-delay")) w.high_delay = parse_delay("--high-delay", get(vm, "high-delay"));
  if (w.low_delay > w.high_delay) throw UsageError("invalid --low-delay: it is above --high-delay");
  w.min_window = count(vm, "min-window", 1, 1000000, w.min_window);
  w.max_window = count(vm, "max-window", 1, 1000000, w.max_window);
  if (w.min_window > w.max_window) throw UsageError("invalid --min-window: it is above --max-window");
  w.initial_window = count(vm, "initial-window", 1, 1000000, w.initial_window);
  if (vm.count("loss-timeout")) w.loss_timeout = parse_delay("--loss-timeout", get(vm, "loss-timeout"));
}

}  // namespace

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
      ("profile", po::value<std::string>()->value_name("P"),
       "window thresholds: auto (default: Wi-Fi's, raised if the link proves bursty), wifi or lte")           //
      ("low-delay", po::value<std::string>()->value_name("MS"), "grow the window below this queueing delay")  //
      ("high-delay", po::value<std::string>()->value_name("MS"), "shrink it above this one")                  //
      ("min-window", po::value<std::string>()->value_name("N"), "packets")                                    //
      ("max-window", po::value<std::string>()->value_name("N"), "packets")                                    //
      ("initial-window", po::value<std::string>()->value_name("N"), "packets")                                //
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

ClientConfig client_config(const po::variables_map& vm) {
  ClientConfig c;
  fill_common(vm, c);
  c.server = get(vm, "server");
  if (c.server.empty()) throw UsageError("missing SERVER: the address the data packets go to");
  if (vm.count("data-port")) c.data_port = parse_port("--data-port", get(vm, "data-port"));
  c.feedback = get(vm, "feedback");
  const std::string dir = vm.count("direction") ? get(vm, "direction") : "up";
  if (dir != "up" && dir != "down" && dir != "both")
    throw UsageError("invalid --direction '" + dir + "': expected up, down or both");
  c.up = dir != "down";
  c.down = dir != "up";
  if (vm.count("duration")) c.duration = seconds("--duration", get(vm, "duration"), kSecond, kMaxRecording);
  if (vm.count("packet-size"))
    c.ip_packet_bytes =
        static_cast<uint32_t>(parse_bytes("--packet-size", get(vm, "packet-size"), kMinPacketBytes, kMaxPacketBytes));
  fill_window(vm, c.window);
  return c;
}

ServerConfig server_config(const po::variables_map& vm) {
  ServerConfig c;
  fill_common(vm, c);
  c.listen = get(vm, "listen");
  if (vm.count("data-port")) c.data_port = parse_port("--data-port", get(vm, "data-port"));
  c.feedback = get(vm, "feedback");
  c.once = vm.count("once") > 0;
  return c;
}

}  // namespace tracemod::record
