#include "util/sysctl.hh"

#include <fcntl.h>

#include "util/file_descriptor.hh"

namespace tracemod {

void write_sysctl(const std::string& key, const std::string& value) {
  const std::string path = "/proc/sys/" + key;
  FileDescriptor fd = FileDescriptor::open(path, O_WRONLY);
  write_all(fd.get(), value + "\n", "set sysctl " + key);
}

}  // namespace tracemod
