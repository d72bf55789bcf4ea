// tm-webreplay: a recorded web site served from the far side of the link, every origin at its own address.
// The recording is read and checked once, here, before anything starts; the shell's server in its parent
// namespace (libexec's webreplay-server) is handed what was read (web/snapshot.hh) and parses nothing again
// (man/tm-webreplay.1).
#include <sys/mman.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>

#include "certs/certs.hh"
#include "effects/delay_queue.hh"
#include "shells/tool.hh"
#include "shell/command.hh"
#include "util/error.hh"
#include "util/file_descriptor.hh"
#include "web/recording.hh"
#include "web/snapshot.hh"

namespace tracemod {
namespace {

namespace fs = std::filesystem;

constexpr Nanos kServerReadyWait = 120000 * kMillisecond;  // encoding a large HAR's bodies again takes a while

// Where the CA lives unless --ca-dir says: in a recording tm-webrecord made, its own (ca.pem beside the records);
// for another's (Mahimahi's, which reads every file of its directory as a record, or a HAR file), one CA per
// user, made on first use, rather than a file written into the recording.
std::string default_ca_dir(const std::string& recording, const Identity& id) {
  const fs::path p = absolute_path("RECORDING", recording);
  std::error_code ec;
  if (fs::is_directory(p, ec) && fs::exists(p / "ca.pem", ec)) return p.string();
  const char* state = id.change ? nullptr : std::getenv("XDG_STATE_HOME");
  if (state && *state == '/') return std::string(state) + "/tracemod/webreplay-ca";
  const char* home = id.change ? id.home.c_str() : std::getenv("HOME");
  if (!home || *home != '/') throw UsageError("no $HOME for the replay's CA: give --ca-dir DIR");
  return std::string(home) + "/.local/state/tracemod/webreplay-ca";
}

// The CA's directory, its CA loaded or made (and the directories above it) as the user the servers run as,
// before anything starts: what cannot be made there is a usage error naming the directory.
std::string ca_directory(const po::variables_map& vm, const std::string& recording) {
  const Identity id = command_identity();
  const bool given = vm.count("ca-dir") > 0;
  if (given && option_text(vm, "ca-dir").empty()) throw UsageError("--ca-dir: give a directory, not ''");
  const std::string dir = given ? absolute_path("--ca-dir", option_text(vm, "ca-dir")) : default_ca_dir(recording, id);
  try {
    const FilesAs as_user(id);
    certs::CertificateAuthority::load_or_create(dir);
  } catch (const Error& e) {
    throw UsageError(std::string(given ? "--ca-dir: " : "the replay's CA (give --ca-dir DIR to put it elsewhere): ") +
                     e.what());
  }
  return dir;
}

std::vector<std::string> far_addresses(const web::Recording& recording) {
  std::set<std::string> addresses;
  for (const web::Origin& o : web::origins(recording)) addresses.insert(o.address);
  return {addresses.begin(), addresses.end()};
}

// Reads and checks the recording before anything starts, so that a bad one is a usage error (exit 2) naming the
// file, and says what it left out or changed.
web::Recording read_recording(const po::variables_map& vm, const std::string& tool) {
  const std::string path = option_text(vm, "recording");
  if (path.empty()) throw UsageError("missing recording: give a recording directory or a HAR file");
  web::Recording recording;
  try {
    recording = web::load_recording(path);
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  for (const std::string& line : web::describe_notes(recording)) std::cerr << tool << ": " << line << "\n";
  web::give_addresses(recording);
  return recording;
}

// RECORDING in a memory file for the server's standard input (its bodies moved there).
std::shared_ptr<FileDescriptor> snapshot(web::Recording& recording) {
  const int fd = memfd_create("tm-webreplay recording", MFD_CLOEXEC);
  if (fd < 0) throw_errno("memfd_create", errno);
  auto file = std::make_shared<FileDescriptor>(fd);
  web::write_snapshot(recording, file->get());
  return file;
}

// The server's own options, as given to the shell.
std::vector<std::string> server_options(const po::variables_map& vm) {
  std::vector<std::string> out;
  for (const char* flag : {"strict", "keep-dates", "deterministic"})
    if (vm[flag].as<bool>()) out.push_back(std::string("--") + flag);
  if (vm.count("ignore-param"))
    for (const std::string& p : vm["ignore-param"].as<std::vector<std::string>>()) {
      if (p.empty()) throw UsageError("--ignore-param: give a query parameter's name, not ''");
      out.insert(out.end(), {"--ignore-param", p});
    }
  if (vm.count("seed")) {
    if (!vm["deterministic"].as<bool>()) throw UsageError("--seed seeds --deterministic's script: give both");
    out.insert(out.end(), {"--seed", std::to_string(parse_seed(option_text(vm, "seed")))});
  }
  return out;
}

QueueFactory configure(const po::variables_map& vm, ShellOptions& shell) {
  if (!shell.outside.command.empty())
    throw UsageError("--outside: tm-webreplay runs its own servers there; nest the shell instead");
  const std::vector<std::string> options = server_options(vm);
  std::shared_ptr<FileDescriptor> file;
  size_t exchanges = 0;
  std::string path;
  {
    web::Recording recording = read_recording(vm, shell.tool);  // freed once its snapshot is written
    path = absolute_path("RECORDING", recording.path);
    exchanges = recording.exchanges.size();
    shell.far_addresses = far_addresses(recording);
    file = snapshot(recording);
  }
  const std::string ca_dir = ca_directory(vm, path);
  shell.far_dns = true;
  shell.outside.argv = {helper_program("webreplay-server"), "--ca-dir", ca_dir, "--ready-fd", "3"};
  shell.outside.argv.insert(shell.outside.argv.end(), options.begin(), options.end());
  shell.outside.stdin_fd = file->get();
  shell.outside.says_ready = true;
  shell.outside.name = "the replay's server";
  shell.outside.command_wait = kServerReadyWait;
  // A replay is the recorded site and nothing else: the outermost shell is not joined to the host.
  shell.outside.path = OutsideOptions::Path::kIsolated;
  shell.environment.push_back({"TM_WEBREPLAY_CA", ca_dir + "/ca.pem"});  // CertificateAuthority's file
  shell.prompt_tag = "[webreplay " + fs::path(path).filename().string() + "]";
  shell.log_lines.push_back("recording " + path + ": " + std::to_string(exchanges) + " exchanges, " +
                            std::to_string(shell.far_addresses.size()) + " addresses");
  // The factory keeps the snapshot's file open until the shell has started its server.
  return [file](Ferry::Direction, BufferPool&) -> std::unique_ptr<PacketQueue> {
    return std::make_unique<DelayQueue>(0, kQueueMemoryLimit);
  };
}

void describe(Tool& tool) {
  tool.options.add_options()                                                               //
      ("recording", text_value("RECORDING"), "the recording: a directory, or a HAR file")  //
      ("ca-dir", text_value("DIR"),
       "the CA's directory (ca.pem, ca.key), made there if absent (default: the recording's own if it has one, "
       "else $XDG_STATE_HOME/tracemod/webreplay-ca, else ~/.local/state/tracemod/webreplay-ca)")  //
      ("ignore-param", po::value<std::vector<std::string>>()->value_name("NAME")->composing(),
       "a query parameter matching ignores on both sides (a cache-buster, a timestamp); repeatable")  //
      ("strict", po::bool_switch(),
       "match the whole query, and answer no request from another scheme's recording")  //
      ("keep-dates", po::bool_switch(),
       "serve Date, Expires, Last-Modified and cookie expiry as recorded (default: moved to the replay's time)")  //
      ("deterministic", po::bool_switch(),
       "put a script first in every HTML document that fixes Date, Math.random and crypto's random values "
       "(CSP rewritten to let it run)")  //
      ("seed", text_value("N"), "seed of --deterministic's randomness (default: the recording's time)");
  tool.positional.add("recording", 1);
  tool.configure = configure;
  tool.files = [](const po::variables_map& vm) {  // a HAR file a capture must not overwrite
    return std::vector<NamedFile>{{"the recording", option_text(vm, "recording")}};
  };
}

}  // namespace
}  // namespace tracemod

int main(int argc, char** argv) {
  tracemod::Tool tool("tm-webreplay", "[OPTIONS] RECORDING [-- COMMAND [ARGS...]]",
      "Run COMMAND (default: your $SHELL) against a recorded web site: every recorded origin is served at its\n"
      "own address and port on the far side of the link (HTTP/1.1 and HTTP/2 as each was recorded, TLS with a CA\n"
      "made for the replay), with DNS for every recorded name. RECORDING: a tracemod or Mahimahi directory, or a\n"
      "HAR file.");
  tracemod::describe(tool);
  return tracemod::run_tool(argc, argv, tool);
}
