// Errors the user reads: "what was attempted: why". Tools catch them at the top of main.
#pragma once

#include <stdexcept>
#include <string>

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

}  // namespace tracemod
