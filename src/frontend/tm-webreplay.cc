// tm-webreplay: a recorded web site served from the far side of the link, every origin at its own address.
// The shell starts its servers in its parent namespace as `tm-webreplay --serve` (man/tm-webreplay.1).
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <set>

#include "frontend/tool.hh"
#include "queues/delay_queue.hh"
#include "shell/command.hh"
#include "util/error.hh"
#include "web/recording.hh"
#include "webserve/serve.hh"

namespace tracemod {
namespace {

namespace fs = std::filesystem;

// Where the CA lives unless --ca-dir says: in a recording tm-webrecord made, its own (ca.pem beside the records);
// for another's (Mahimahi's, which reads every file of its directory as a record, or a HAR file), one CA per
// user, made on first use, rather than a file written into the recording.
std::string default_ca_dir(const std::string& recording, const Identity& id) {
  const fs::path p = fs::absolute(recording);
  if (fs::is_directory(p) && fs::exists(p / "ca.pem")) return p.string();
  const char* state = id.change ? nullptr : std::getenv("XDG_STATE_HOME");
  if (state && *state == '/') return std::string(state) + "/tracemod/webreplay-ca";
  const char* home = id.change ? id.home.c_str() : std::getenv("HOME");
  if (!home || *home != '/') throw UsageError("no $HOME for the CA: give --ca-dir DIR");
  return std::string(home) + "/.local/state/tracemod/webreplay-ca";
}

std::vector<std::string> far_addresses(const web::Recording& recording) {
  std::set<std::string> addresses;
  for (const web::Origin& o : web::origins(recording)) addresses.insert(o.address);
  return {addresses.begin(), addresses.end()};
}

// Checks the recording before anything starts, so that a bad one is a usage error (exit 2) naming the file.
web::Recording read_recording(const po::variables_map& vm) {
  const std::string path = option_text(vm, "recording");
  if (path.empty()) throw UsageError("missing recording: give a recording directory or a HAR file");
  try {
    web::Recording recording = web::load_recording(path);
    web::give_addresses(recording);
    return recording;
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
}

// What a HAR file lacked, said once: the replay serves those entries with empty bodies, or not at all.
void say_what_is_missing(const web::Recording& r, ShellOptions& shell) {
  if (r.missing_bodies)
    std::cerr << shell.tool << ": " << r.path << ": " << r.missing_bodies
              << " responses were saved without their content: they are served with an empty body\n";
  if (r.skipped)
    std::cerr << shell.tool << ": " << r.path << ": " << r.skipped
              << " entries have no response or no http(s) URL: they are left out\n";
}

QueueFactory configure(const po::variables_map& vm, ShellOptions& shell) {
  if (!shell.outside.command.empty())
    throw UsageError("--outside: tm-webreplay runs its own servers there; nest the shell instead");
  const web::Recording recording = read_recording(vm);
  say_what_is_missing(recording, shell);
  const std::string path = fs::absolute(recording.path).string();
  const std::string ca_dir = vm.count("ca-dir") ? fs::absolute(option_text(vm, "ca-dir")).string()
                                                : default_ca_dir(recording.path, command_identity());
  shell.far_addresses = far_addresses(recording);
  shell.far_dns = true;
  shell.outside.argv = {own_executable(), "--serve", path, "--ca-dir", ca_dir};
  // A replay is the recorded site and nothing else: the outermost shell is not joined to the host.
  shell.outside.path = OutsideOptions::Path::kIsolated;
  shell.environment.push_back({"TM_WEBREPLAY_CA", ca_dir + "/ca.pem"});  // CertificateAuthority's file
  shell.prompt_tag = "[webreplay " + fs::path(path).filename().string() + "]";
  shell.log_lines.push_back("recording " + path + ": " + std::to_string(recording.exchanges.size()) +
                            " exchanges, " + std::to_string(shell.far_addresses.size()) + " addresses");
  return [](Ferry::Direction, BufferPool&) -> std::unique_ptr<PacketQueue> {
    return std::make_unique<DelayQueue>(0, kQueueMemoryLimit);
  };
}

void describe(Tool& tool) {
  tool.options.add_options()                                                   //
      ("recording", text_value("RECORDING"), "the recording: a directory, or a HAR file")  //
      ("ca-dir", text_value("DIR"),
       "the CA's directory (ca.pem, ca.key), made there if absent (default: the recording's own if it has one, "
       "else ~/.local/state/tracemod/webreplay-ca)");
  tool.positional.add("recording", 1);
  tool.configure = configure;
}

// The far side, `tm-webreplay --serve RECORDING --ca-dir DIR`, which the shell starts in its parent namespace:
// loads the recording, takes the CA and serves every origin, and DNS on $TM_OUTER, until SIGTERM.
int run_server(int argc, char** argv) {
  po::options_description options("tm-webreplay --serve");
  options.add_options()                                 //
      ("serve", text_value("RECORDING"), "the recording")  //
      ("ca-dir", text_value("DIR"), "the CA's directory");
  try {
    po::variables_map vm;
    po::store(po::parse_command_line(argc, argv, options), vm);
    po::notify(vm);
    web::Recording recording = web::load_recording(option_text(vm, "serve"));
    web::give_addresses(recording);  // as the shell did: the same addresses
    webserve::ServeConfig config;
    config.recording = &recording;
    config.ca_dir = option_text(vm, "ca-dir");
    for (const char* v : {"TM_OUTER", "TM_OUTER6"})
      if (const char* a = std::getenv(v); a && *a) config.dns_addresses.push_back(a);
    return webserve::serve(config);
  } catch (const std::exception& e) {
    std::cerr << "tm-webreplay: far side: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace
}  // namespace tracemod

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--serve") == 0) return tracemod::run_server(argc, argv);
  tracemod::Tool tool;
  tool.name = "tm-webreplay";
  tool.synopsis = "[OPTIONS] RECORDING [-- COMMAND [ARGS...]]";
  tool.summary =
      "Run COMMAND (default: your $SHELL) against a recorded web site: every recorded origin is served at its\n"
      "own address and port on the far side of the link (HTTP/1.1 and HTTP/2, TLS with a CA made for the\n"
      "recording), with DNS for every recorded name. RECORDING: a tracemod or Mahimahi directory, or a HAR file.";
  tracemod::describe(tool);
  return tracemod::run_tool(argc, argv, tool);
}
