#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fake.hh"
#include "util/file_descriptor.hh"

namespace tracemod {
namespace {

using fake::contents;

TEST(RecordFile, WritesWholeRecordsAndReportsNothingLost) {
  char path[] = "/tmp/tm-record-file-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  {
    RecordFile f("--log x", "log lines", FileDescriptor(fd));
    f.append("one\n", 4);
    f.end_record();
    f.appendf("%s %d\n", "two", 2);
    f.end_record();
    f.append("cut", 3);  // never ended: not a record, never written
    EXPECT_EQ(f.loss_line(), "");
    EXPECT_FALSE(f.failed());
  }
  EXPECT_EQ(contents(path), "one\ntwo 2\n");
  unlink(path);
}

TEST(RecordFile, AFullDiskIsCountedRecordByRecordAndNothingMoreIsWritten) {
  const int fd = ::open("/dev/full", O_WRONLY | O_CLOEXEC);  // every write fails with ENOSPC
  ASSERT_GE(fd, 0);
  RecordFile f("--uplink-log up.log", "log lines", FileDescriptor(fd));
  for (int i = 0; i < 3; ++i) {
    f.append("12.345 # 1500\n", 14);
    f.end_record();
  }
  f.flush();
  EXPECT_TRUE(f.failed());
  const std::string block(10, 'x');
  f.write(block.data(), block.size(), {4, 10});  // two records assembled elsewhere: counted, not written
  EXPECT_EQ(f.lost_records(), 5u);
  EXPECT_EQ(f.lost_bytes(), 3u * 14 + 10);
  EXPECT_EQ(f.loss_line(), "--uplink-log up.log: 5 log lines (52 bytes) not written (No space left on device)");
}

}  // namespace
}  // namespace tracemod
