// The user's files as every tool reads them (util/file_descriptor): regular files only, a line at a time with a
// bound on a line, and no output over an input or another output.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "analysis/link_log_reader.hh"
#include "channel/distribution.hh"
#include "effects/onoff_queue.hh"
#include "fake.hh"
#include "link/trace.hh"
#include "modulate/schedule.hh"
#include "util/error.hh"
#include "util/file_descriptor.hh"

namespace tracemod {
namespace {

// Every line OPEN's reader gives, or the error that ended the opening or the reading as the last element.
template <class Open>
std::vector<std::string> lines_of(const Open& open) {
  std::vector<std::string> out;
  try {
    LineReader in = open();
    for (std::string_view line; in.next(line);) out.emplace_back(line);
  } catch (const UsageError& e) {
    out.push_back(std::string("error: ") + e.what());
  }
  return out;
}

std::vector<std::string> path_lines(const std::string& path) {
  return lines_of([&] { return LineReader(path); });
}

std::vector<std::string> file_lines(const std::string& text) {
  return path_lines(fake::scratch_file("lines.txt", text));
}

std::vector<std::string> text_lines(const std::string& text) {
  return lines_of([&] { return LineReader::of_text(text, "t"); });
}

std::string refusal(const std::vector<NamedFile>& files) {
  try {
    check_outputs(files);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

using Lines = std::vector<std::string>;

TEST(LineReader, SplitsLinesAndTakesALastLineWithoutNewline) {
  EXPECT_EQ(file_lines(""), Lines{});
  EXPECT_EQ(file_lines("a\n\nb"), (Lines{"a", "", "b"}));
  EXPECT_EQ(text_lines("a\n\nb\n"), (Lines{"a", "", "b"}));
  LineReader in = LineReader::of_text("x\ny\n", "t");
  std::string_view line;
  ASSERT_TRUE(in.next(line) && in.next(line));
  EXPECT_EQ(in.line_number(), 2u);
  EXPECT_THROW(in.fail("bad"), UsageError);
}

TEST(LineReader, ReadsLinesAcrossItsBuffer) {
  std::string text;
  Lines expected;
  for (int i = 0; text.size() < 3 * (LineReader::kMaxLine + 1); ++i) {
    expected.push_back(std::string(static_cast<size_t>(i % 1000), 'x') + std::to_string(i));
    text += expected.back() + "\n";
  }
  EXPECT_EQ(file_lines(text), expected);
}

TEST(LineReader, ALineOfMoreThanAMebibyteIsRefusedFromAFileAsFromMemory) {
  const std::string longest(LineReader::kMaxLine, '0');
  EXPECT_EQ(file_lines("1\n" + longest + "\n2"), (Lines{"1", longest, "2"}));
  EXPECT_EQ(file_lines("1\n" + longest), (Lines{"1", longest}));
  EXPECT_EQ(text_lines(longest), Lines{longest});
  const std::string why = ":2: a line of more than 1048575 bytes";
  const std::string path = fake::scratch_file("long.txt", "1\n" + longest + "0\n3\n");
  EXPECT_EQ(path_lines(path), (Lines{"1", "error: " + path + why}));
  const std::string cut = fake::scratch_file("cut.txt", "1\n" + longest + "0");  // the last line, without a newline
  EXPECT_EQ(path_lines(cut), (Lines{"1", "error: " + cut + why}));
  EXPECT_EQ(text_lines("1\n" + longest + "0\n"), (Lines{"1", "error: t" + why}));
  EXPECT_EQ(text_lines("1\n" + longest + "0"), (Lines{"1", "error: t" + why}));
}

TEST(LineReader, OnlyARegularFileIsOpened) {
  fake::TempDir dir;
  const std::string fifo = dir / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(path_lines(fifo), Lines{"error: " + fifo + ": not a regular file (a FIFO)"});
  EXPECT_EQ(path_lines("/dev/zero"), Lines{"error: /dev/zero: not a regular file (a character device)"});
  EXPECT_EQ(path_lines(dir.path()), Lines{"error: " + dir.path() + ": cannot open: Is a directory"});
  EXPECT_EQ(path_lines(dir / "none"), Lines{"error: " + dir / "none" + ": cannot open: No such file or directory"});
  try {
    open_regular(fifo, "give a HAR file");
    ADD_FAILURE() << "opened";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), fifo + ": not a regular file (give a HAR file)");
  }
}

// Each reader of the user's text files, by the error it throws for PATH ("" if it reads it).
std::string reader_error(int reader, const std::string& path) {
  try {
    switch (reader) {
      case 0:
        DeliveryTrace::load(path);
        break;
      case 1:
        modulate::Schedule::load(path);
        break;
      case 2:
        read_samples(path);
        break;
      case 3:
        FileOnOff::load(path);
        break;
      default: {
        LineReader in(path);
        read_link_log(in, 500 * kMillisecond);
      }
    }
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

// A sparse 2 GiB of NULs: read whole, it would take the memory the reader is limited to here.
TEST(LineReader, EveryTextReaderRefusesAGiganticLineAndAFifo) {
  fake::TempDir dir;
  const std::string nul = dir / "nul", fifo = dir / "fifo";
  std::ofstream{nul}.close();
  ASSERT_EQ(truncate(nul.c_str(), 2LL << 30), 0);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (int reader = 0; reader < 5; ++reader) {
    EXPECT_EQ(reader_error(reader, nul), nul + ":1: a line of more than 1048575 bytes") << "reader " << reader;
    EXPECT_EQ(reader_error(reader, fifo), fifo + ": not a regular file (a FIFO)") << "reader " << reader;
  }
}

TEST(CheckOutputs, AnOutputOverAnInputIsRefusedByInode) {
  fake::TempDir dir;
  const std::string in = dir / "in", link = dir / "link";
  { std::ofstream(in) << "1\n"; }
  ASSERT_EQ(::link(in.c_str(), link.c_str()), 0);
  EXPECT_EQ(refusal({{"the trace", in}, {"--log", link, true}}),
            "--log '" + link + "' names the trace: the output would overwrite it");
  EXPECT_EQ(refusal({{"the trace", in}, {"--log", dir / "other", true}}), "");
  EXPECT_EQ(refusal({{"the trace", in}, {"the other trace", in}}), "") << "one input read twice";
  EXPECT_EQ(refusal({{"the trace", dir / "missing"}, {"--log", dir / "missing", true}}), "")
      << "a missing input is its reader's to refuse";
}

TEST(CheckOutputs, TwoNamesOfAnOutputNotYetMadeAreRefused) {
  fake::TempDir dir;
  ASSERT_EQ(mkdir((dir / "sub").c_str(), 0700), 0);
  EXPECT_EQ(refusal({{"--svg", dir / "x", true}, {"--png", dir / "sub/../x", true}}),
            "--png '" + dir / "sub/../x" + "' names the same file as --svg: each output needs a file of its own");
  ASSERT_EQ(symlink("target", (dir / "dangling").c_str()), 0);  // the output is made where it points
  EXPECT_NE(refusal({{"--svg", dir / "target", true}, {"--png", dir / "dangling", true}}), "");
  EXPECT_EQ(refusal({{"--svg", dir / "x", true}, {"--png", dir / "y", true}}), "");
  EXPECT_EQ(refusal({{"--uplink-log", "/dev/null", true}, {"--downlink-log", "/dev/null", true}}), "")
      << "a device is no file to overwrite";
}

}  // namespace
}  // namespace tracemod
