// Errors the user reads: "what was attempted: why". Tools catch them at the top of main.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tracemod {

// A failure of the environment or the kernel: the shell cannot run. Exit status 1.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad user input (option, value, trace file). Exit status 2.
class UsageError : public Error {
 public:
  using Error::Error;
};

// Throws Error("WHAT: strerror(errno)") when ret < 0; returns ret otherwise.
long check_syscall(const std::string& what, long ret);

// "WHAT: strerror(err)" for an explicit errno value.
[[noreturn]] void throw_errno(const std::string& what, int err);

// TEXT as an error message quotes what a file or a user wrote: in single quotes, at most MAX bytes of it, each
// byte that is not printable ASCII as \xNN (so a binary file's bytes never reach the terminal), "..." if cut.
std::string quote_text(std::string_view text, size_t max = 40);

}  // namespace tracemod
