// tm-webrecord: every HTTP exchange the command makes, recorded while it goes on to the real origins. The
// shell redirects the link's TCP, to any port but DNS's, to its recorder, which it starts in its parent namespace
// as libexec's `webrecord-proxy --dir DIR` (man/tm-webrecord.1).
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "certs/certs.hh"
#include "effects/delay_queue.hh"
#include "shells/tool.hh"
#include "shell/command.hh"
#include "util/error.hh"
#include "util/parse.hh"
#include "webrecord/proxy.hh"

namespace tracemod {
namespace {

namespace fs = std::filesystem;

// Under sudo the recorder runs as the invoking user (as the command does), who must write records into DIR and
// read the CA's key: what root made here just now (DIR, if it was made; the CA's files) is handed to that user.
void hand_to_invoking_user(const fs::path& dir, bool made) {
  const Identity id = command_identity();
  if (!id.change) return;
  for (const fs::path& p : {dir, dir / "ca.pem", dir / "ca.key"}) {
    struct stat st {};
    if ((p == dir && !made) || ::stat(p.c_str(), &st) < 0 || st.st_uid != 0) continue;
    if (::chown(p.c_str(), id.uid, id.gid) < 0)
      throw UsageError(p.string() + ": cannot hand it to " + id.user + ": " + std::strerror(errno));
  }
}

// DIR, made if missing: a directory the user can write, with the recording's CA in it.
std::string recording_directory(const po::variables_map& vm) {
  const std::string given = option_text(vm, "dir");
  if (given.empty()) throw UsageError("missing DIR: give the directory to record into");
  const fs::path dir = absolute_path("DIR", given);
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) throw UsageError(given + ": not a directory");
  const bool made = !fs::exists(dir, ec);
  if (made && ::mkdir(dir.c_str(), 0755) < 0)
    throw UsageError(given + ": cannot make the directory: " + std::strerror(errno));
  if (::access(dir.c_str(), W_OK | X_OK) < 0) throw UsageError(given + ": cannot write there: " + std::strerror(errno));
  try {
    certs::CertificateAuthority::load_or_create(dir.string());
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  hand_to_invoking_user(dir, made);
  return dir.string();
}

// --upstream-ca's FILE made absolute (the recorder starts elsewhere), a regular file of CA certificates, or "".
std::string read_upstream_ca(const po::variables_map& vm) {
  if (!vm.count("upstream-ca")) return "";
  const std::string given = option_text(vm, "upstream-ca");
  if (given.empty()) throw UsageError("--upstream-ca: give a file of CA certificates (PEM), not ''");
  const std::string path = absolute_path("--upstream-ca", given);
  try {
    open_regular(given);  // a FIFO would hang OpenSSL's read of it
    webrecord::check_upstream_ca(path);
  } catch (const Error& e) {
    throw UsageError(std::string("--upstream-ca ") + e.what());
  }
  return path;
}

QueueFactory configure(const po::variables_map& vm, ShellOptions& shell) {
  if (!shell.outside.command.empty())
    throw UsageError("--outside: tm-webrecord runs its recorder there; nest the shell instead");
  const bool insecure = vm.count("insecure-upstream") && vm["insecure-upstream"].as<bool>();
  const std::string upstream_ca = read_upstream_ca(vm);
  if (!upstream_ca.empty() && insecure) throw UsageError("--upstream-ca and --insecure-upstream: give one of them");
  const uint64_t max_body = vm.count("max-body")
                                ? parse_bytes("--max-body", option_text(vm, "max-body"), 1, kMaxQueueLimit)
                                : webrecord::kDefaultMaxBody;
  const std::string dir = recording_directory(vm);
  shell.outside.argv = {helper_program("webrecord-proxy"), "--dir", dir, "--max-body", std::to_string(max_body)};
  if (!upstream_ca.empty()) shell.outside.argv.insert(shell.outside.argv.end(), {"--upstream-ca", upstream_ca});
  if (insecure) shell.outside.argv.push_back("--insecure-upstream");
  if (shell.verbose) shell.outside.argv.push_back("--verbose");
  shell.outside.intercept_tcp_port = webrecord::kProxyPort;
  shell.outside.program_status_counts = true;  // a record not written fails the run
  shell.outside.name = "the recorder";
  shell.environment.push_back({"TM_WEBRECORD_CA", dir + "/ca.pem"});
  shell.prompt_tag = "[webrecord " + fs::path(dir).filename().string() + "]";
  shell.log_lines.push_back("recording into " + dir);
  return [](Ferry::Direction, BufferPool&) -> std::unique_ptr<PacketQueue> {
    return std::make_unique<DelayQueue>(0, kQueueMemoryLimit);
  };
}

void describe(Tool& tool) {
  tool.options.add_options()                                                                           //
      ("dir", text_value("DIR"), "the recording's directory (made if missing; its CA is kept there)")  //
      ("upstream-ca", text_value("FILE"),
       "check the origins' certificates against the CA certificates in FILE (PEM) instead of the system's")  //
      ("insecure-upstream", po::bool_switch(), "do not check the origins' certificates at all")              //
      ("max-body", text_value("SIZE"),
       "record no exchange with a body over SIZE (default 256MiB): relayed whole, said, not recorded");
  tool.positional.add("dir", 1);
  tool.configure = configure;
  tool.files = [](const po::variables_map& vm) {  // the origins' CA, which a capture must not overwrite
    const std::string ca = option_text(vm, "upstream-ca");
    return ca.empty() ? std::vector<NamedFile>{} : std::vector<NamedFile>{{"--upstream-ca", ca}};
  };
}

}  // namespace
}  // namespace tracemod

int main(int argc, char** argv) {
  tracemod::Tool tool("tm-webrecord", "[OPTIONS] DIR [-- COMMAND [ARGS...]]",
      "Run COMMAND (default: your $SHELL) and record every HTTP exchange it makes into DIR, while it goes on to\n"
      "the real origins: TCP to every port but 53 is intercepted on the link (no proxy setting), HTTP and TLS\n"
      "told by their first bytes, TLS terminated with a CA made for the recording (DIR/ca.pem,\n"
      "$TM_WEBRECORD_CA); other protocols pass as they are. tm-webreplay DIR serves the recording.");
  tracemod::describe(tool);
  return tracemod::run_tool(argc, argv, tool);
}
