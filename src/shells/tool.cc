#include "shells/tool.hh"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <utility>

#include "shells/fusion.hh"
#include "util/error.hh"
#include "util/parse.hh"
#include "util/random.hh"

namespace tracemod {
namespace {

// This program's own path (/proc/self/exe).
std::string own_executable() {
  char path[4096];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (n < 0) throw Error(std::string("cannot find my own executable (/proc/self/exe): ") + std::strerror(errno));
  return std::string(path, static_cast<size_t>(n));
}

void add_common(Tool& tool) {
  tool.options.add_options()                                                                                         //
      ("help,h", "show this help and exit")                                                                          //
      ("version", "show the version and exit")                                                                       //
      ("verbose,v", "say what the shell does (seed, counters at exit)")                                              //
      ("meter", "show both directions' rate, queue and drops live on the terminal's last line (tm-top shows more)")  //
      ("outside", po::value<std::string>()->value_name("CMD"),
       "run CMD (through sh -c) on this shell's outer side, reachable as $TM_OUTER, while the command runs")  //
      ("outside-wait", po::value<std::string>()->value_name("DURATION"),
       "how long to wait for --outside CMD to listen before the command starts (default 5s; 0: do not wait)")  //
      ("isolated", "do not connect the outermost shell to the host")                                           //
      ("pasta", "connect the outermost shell to the host through pasta, even as root")                         //
      ("forwarding",
       "as root: turn on the host's IP forwarding if it is off, so the command reaches beyond the host")  //
      ("pcap", po::value<std::string>()->value_name("FILE"),
       "write the frames that cross the link (both directions) to FILE, pcapng; drops beside it, FILE.drops.pcapng")  //
      ("uplink-pcap", po::value<std::string>()->value_name("FILE"), "the same for the uplink alone")                  //
      ("downlink-pcap", po::value<std::string>()->value_name("FILE"), "the same for the downlink alone")              //
      ("pcap-snaplen", po::value<std::string>()->value_name("BYTES"),
       "bytes kept of each captured frame (default 128: the headers; 0: all)")  //
      ("no-fuse", "give this shell a link of its own even where its command is a tracemod shell (as TM_NO_FUSE=1)");
}

// How the shell meets its outside, from the common options.
OutsideOptions outside_options(const po::variables_map& vm) {
  OutsideOptions o;
  if (vm.count("isolated") && vm.count("pasta")) throw UsageError("--isolated and --pasta exclude each other");
  if (vm.count("isolated")) o.path = OutsideOptions::Path::kIsolated;
  if (vm.count("pasta")) o.path = OutsideOptions::Path::kPasta;
  o.forwarding = vm.count("forwarding") > 0;
  if (vm.count("outside")) {
    o.command = vm["outside"].as<std::string>();
    if (o.command.empty()) throw UsageError("--outside: empty command");
  }
  if (vm.count("outside-wait")) {
    if (o.command.empty()) throw UsageError("--outside-wait needs --outside");
    o.command_wait = parse_duration("--outside-wait", vm["outside-wait"].as<std::string>(), 1000000000, 3600000000000);
  }
  return o;
}

// The capture options, checked (a direction captured twice...), or none given.
LinkCapture::Options capture_options(const po::variables_map& vm) {
  LinkCapture::Options o;
  o.both = option_text(vm, "pcap");
  o.uplink = option_text(vm, "uplink-pcap");
  o.downlink = option_text(vm, "downlink-pcap");
  const bool any = !(o.both.empty() && o.uplink.empty() && o.downlink.empty());
  if (const std::string snap = option_text(vm, "pcap-snaplen"); !snap.empty()) {
    if (!any) throw UsageError("--pcap-snaplen needs --pcap, --uplink-pcap or --downlink-pcap");
    o.snaplen = static_cast<uint32_t>(parse_bytes("--pcap-snaplen", snap, 0, LinkCapture::kMaxSnaplen));
  }
  LinkCapture::check(o);
  return o;
}

// The files of the command line: the captures' (each with its drops file), then the tool's own.
std::vector<NamedFile> command_files(const Tool& tool, const po::variables_map& vm, const LinkCapture::Options& o) {
  std::vector<NamedFile> files;
  for (const auto& [option, path] :
       {std::pair{"--pcap", o.both}, {"--uplink-pcap", o.uplink}, {"--downlink-pcap", o.downlink}}) {
    if (path.empty()) continue;
    files.push_back({option, path, true});
    files.push_back({std::string(option) + "'s drops file", LinkCapture::drops_path(path), true});
  }
  if (tool.files)
    for (NamedFile& f : tool.files(vm)) files.push_back(std::move(f));
  return files;
}

// The capture files, created now (before any namespace, as the invoking user), or null without --pcap.
std::shared_ptr<LinkCapture> open_capture(const LinkCapture::Options& o) {
  const bool any = !(o.both.empty() && o.uplink.empty() && o.downlink.empty());
  return any ? std::make_shared<LinkCapture>(o) : nullptr;
}

bool takes_value(const po::options_description& d, const std::string& token) {
  std::string name = token.substr(token.find_first_not_of('-'));
  if (name.find('=') != std::string::npos) return false;
  const bool is_short = token.size() >= 2 && token[1] != '-';
  if (is_short && name.size() > 1) return false;  // -x5: value attached
  const po::option_description* opt = d.find_nothrow(name, false, false, is_short);
  return opt && opt->semantic()->max_tokens() > 0;
}

// Splits ARGS into the tool's own arguments and the command: everything after `--`, or from the first
// positional argument beyond what the tool takes (so `tm-delay 40 curl URL` works as in Mahimahi). OWN comes
// back as options, `--`, positionals: so Boost reads "-5" as a (bad) value, not as an unknown option.
void split_command(const Tool& tool, const std::vector<std::string>& args, std::vector<std::string>& own,
                   std::vector<std::string>& command) {
  const unsigned max_positional = tool.positional.max_total_count();
  std::vector<std::string> positionals;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    const bool number = a.size() > 1 && (std::isdigit(static_cast<unsigned char>(a[1])) || a[1] == '.');
    if (a.size() > 1 && a[0] == '-' && !number) {
      own.push_back(a);
      if (takes_value(tool.options, a) && i + 1 < args.size()) own.push_back(args[++i]);
      continue;
    }
    if (positionals.size() == max_positional) break;
    positionals.push_back(a);
  }
  command.assign(args.begin() + static_cast<long>(i), args.end());
  own.push_back("--");
  own.insert(own.end(), positionals.begin(), positionals.end());
}

// ARG as a shell would need it written, so a logged command line can be run again and stays on one line:
// control characters (a script's newlines) in bash's $'...' form, anything else unusual in single quotes.
std::string shell_quote(const std::string& arg) {
  const bool plain = !arg.empty() && arg.find_first_not_of(
                                         "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                         "0123456789_./=:,+-@%") == std::string::npos;
  if (plain) return arg;
  const bool control = std::any_of(arg.begin(), arg.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; });
  std::string q = control ? "$'" : "'";
  for (unsigned char c : arg) {
    if (!control)
      q += c == '\'' ? std::string("'\\''") : std::string(1, static_cast<char>(c));
    else if (c == '\n')
      q += "\\n";
    else if (c == '\'' || c == '\\')
      q += std::string("\\") + static_cast<char>(c);
    else if (c < 0x20 || c == 0x7f)
      q += "\\x" + std::string(1, "0123456789abcdef"[c >> 4]) + "0123456789abcdef"[c & 15];
    else
      q += static_cast<char>(c);
  }
  return q + "'";
}

// Says what each log and capture could not write (a full disk: said once already, as it happened) and returns
// the exit status: the command's, or 1 if the command succeeded but a record of its run is short.
int report_losses(const std::string& tool, const ShellOptions& shell, int status) {
  std::vector<std::string> losses;
  if (shell.capture) losses = shell.capture->finish();
  for (const auto& log : shell.logs)
    if (std::string line = log->loss_line(); !line.empty()) losses.push_back(std::move(line));
  for (const std::string& line : losses) std::cerr << tool << ": " << line << "\n";
  return losses.empty() || status != 0 ? status : 1;
}

}  // namespace

po::typed_value<std::string>* text_value(const char* value_name) {
  return po::value<std::string>()->value_name(value_name);
}

std::string option_text(const po::variables_map& vm, const std::string& name) {
  return vm.count(name) ? vm[name].as<std::string>() : std::string();
}

std::string absolute_path(const std::string& named, const std::string& path) {
  if (path.empty()) throw UsageError(named + ": give a path, not ''");
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::absolute(path, ec);
  if (ec) throw UsageError(named + " '" + path + "': cannot make it absolute: " + ec.message());
  return p.string();
}

std::string helper_program(const std::string& name) {
  const std::string beside = std::filesystem::path(own_executable()).parent_path().parent_path() / "libexec" / name;
  const std::string installed = std::string(TM_PKGLIBEXECDIR) + "/" + name;
  for (const std::string& path : {beside, installed})
    if (::access(path.c_str(), X_OK) == 0) return path;
  throw Error("its helper program " + name + " is neither at " + beside + " nor at " + installed +
              ": the installation is incomplete");
}

uint64_t read_seed(const po::variables_map& vm) {
  return vm.count("seed") ? parse_seed(option_text(vm, "seed")) : random_seed();
}

void add_seed_option(po::options_description& options, const std::string& what) {
  const std::string help = "seed of " + what + " (default: random; -v shows it)";
  options.add_options()("seed", text_value("N"), help.c_str());
}

std::string number_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

std::string direction_option(const po::variables_map& vm, const std::string& dir, const std::string& key) {
  return vm.count(dir + "-" + key) ? "--" + dir + "-" + key : vm.count(key) ? "--" + key : "";
}

void add_per_direction(po::options_description& options, const std::string& key, const char* value_name,
                       const std::string& help, bool both) {
  const std::string up = both ? "the same, outward only" : help + ", outward";
  const std::string down = both ? "the same, toward the command only" : "the same, toward the command";
  for (const auto& [name, what] : {std::pair{key, help + ", both directions"}, std::pair{"uplink-" + key, up},
                                   std::pair{"downlink-" + key, down}}) {
    if (name == key && !both) continue;
    if (value_name)
      options.add_options()(name.c_str(), text_value(value_name), what.c_str());
    else
      options.add_options()(name.c_str(), what.c_str());
  }
}

void read_command_line(const Tool& tool, const std::vector<std::string>& argv, po::variables_map& vm,
                       ShellOptions& shell) {
  std::vector<std::string> own, command;
  split_command(tool, std::vector<std::string>(argv.begin() + 1, argv.end()), own, command);
  po::store(po::command_line_parser(own).options(tool.options).positional(tool.positional).run(), vm);
  po::notify(vm);
  shell.tool = tool.name;
  for (size_t i = 0; i < argv.size(); ++i) shell.command_line += (i ? " " : "") + shell_quote(argv[i]);
  for (const std::string& a : own)
    if (a != "--") shell.arguments += (shell.arguments.empty() ? "" : " ") + shell_quote(a);
  shell.command = command;
  shell.verbose = vm.count("verbose") > 0;
  shell.meter = vm.count("meter") > 0;
}

std::vector<QueueFactory> configure_shell(const Tool& tool, const po::variables_map& vm, ShellOptions& shell) {
  shell.outside = outside_options(vm);
  const LinkCapture::Options capture = capture_options(vm);
  check_outputs(command_files(tool, vm, capture));
  std::vector<QueueFactory> queues =
      tool.configure_paths ? tool.configure_paths(vm, shell) : std::vector{tool.configure(vm, shell)};
  shell.capture = open_capture(capture);
  return queues;
}

Tool& with_common_options(Tool& tool) {
  add_common(tool);
  return tool;
}

int run_tool(int argc, char** argv, Tool& tool) {
  add_common(tool);
  po::variables_map vm;
  ShellOptions shell;
  std::vector<QueueFactory> queues;
  const bool fused = started_fused();  // a shell fusing this one runs its queues: nothing here to configure
  try {
    read_command_line(tool, std::vector<std::string>(argv, argv + argc), vm, shell);
    if (answered_help_or_version(vm, tool)) return 0;
    if (!fused) queues = configure_shell(tool, vm, shell);
  } catch (const po::error& e) {
    return usage_error(tool, e.what());
  } catch (const UsageError& e) {
    return usage_error(tool, e.what());
  } catch (const std::exception& e) {  // not the user's doing, yet said in a line rather than an abort
    std::cerr << tool.name << ": " << e.what() << "\n";
    return 1;
  }
  try {
    if (fused) return run_fused_shell(shell);
    shell.fused = fuse_command(shell, vm);
    // Each fused level's short record makes the status 1, as its own process would have made it unfused.
    int status = run_shell(shell, queues);
    for (auto it = shell.fused.rbegin(); it != shell.fused.rend(); ++it)
      status = report_losses(it->options.tool, it->options, status);
    return report_losses(tool.name, shell, status);
  } catch (const UsageError& e) {  // an option that only the shell's situation shows to be wrong
    return usage_error(tool, e.what());
  } catch (const std::exception& e) {
    std::cerr << tool.name << ": " << e.what() << "\n";
    return 1;
  }
}

}  // namespace tracemod
