// Line framing: lines across buffer boundaries, the last line, too-long lines.
#include "verify/line_reader.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <vector>

#include "common/receipt_reader.h"
#include "tests/unit/verify_test_util.h"

namespace dmlp::verify {
namespace {

struct Seen {
  std::string text;
  uint64_t length;
  bool has_newline, is_last, too_long;
  friend bool operator==(const Seen&, const Seen&) = default;
};

std::vector<Seen> ReadAllLines(const std::string& content) {
  testing::TempDir dir;
  dir.Write("f", content);
  LineReader reader(UniqueFd(::open(dir.File("f").c_str(), O_RDONLY)), "f");
  std::vector<Seen> lines;
  Line line;
  for (;;) {
    Result<bool> more = reader.Next(&line);
    EXPECT_TRUE(more.ok());
    if (!more.ok() || !*more) break;
    EXPECT_EQ(line.number, static_cast<int64_t>(lines.size()) + 1);
    lines.push_back({std::string(line.text), line.length, line.has_newline, line.is_last, line.too_long});
  }
  EXPECT_EQ(reader.bytes_read(), content.size());
  return lines;
}

TEST(LineReaderTest, SmallFiles) {
  EXPECT_TRUE(ReadAllLines("").empty());
  EXPECT_EQ(ReadAllLines("a"), (std::vector<Seen>{{"a", 1, false, true, false}}));
  EXPECT_EQ(ReadAllLines("a\n"), (std::vector<Seen>{{"a", 1, true, true, false}}));
  EXPECT_EQ(ReadAllLines("a\nbc"), (std::vector<Seen>{{"a", 1, true, false, false}, {"bc", 2, false, true, false}}));
  EXPECT_EQ(ReadAllLines("\n\n"), (std::vector<Seen>{{"", 0, true, false, false}, {"", 0, true, true, false}}));
}

TEST(LineReaderTest, LinesAcrossBufferBoundaries) {
  // Line lengths that do not divide the buffer size, so lines straddle every refill.
  std::string content;
  std::vector<std::string> expected;
  for (int i = 0; content.size() < 5 * LineReader::kBufferBytes; ++i) {
    expected.push_back(std::string(97 + i % 300, static_cast<char>('a' + i % 26)));
    content += expected.back() + "\n";
  }
  std::vector<Seen> lines = ReadAllLines(content);
  ASSERT_EQ(lines.size(), expected.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i].text, expected[i]);
    EXPECT_EQ(lines[i].is_last, i + 1 == lines.size());
  }
}

TEST(LineReaderTest, NewlineExactlyAtTheEndOfABuffer) {
  for (size_t extra : {0, 1, 2}) {
    std::string first(LineReader::kBufferBytes - 1, 'x');  // too long, ends at the buffer's last byte
    std::string content = "short\n" + first.substr(6) + "\n" + std::string(extra, 'y');
    std::vector<Seen> lines = ReadAllLines(content);
    ASSERT_EQ(lines.size(), extra == 0 ? 2u : 3u);
    EXPECT_TRUE(lines[1].too_long);
    EXPECT_EQ(lines[1].is_last, extra == 0);
  }
  // A short line ending exactly where the first read ends.
  std::string content(LineReader::kBufferBytes - 10, 'z');
  for (size_t i = 100; i < content.size(); i += 100) content[i] = '\n';
  content.back() = '\n';
  std::vector<Seen> lines = ReadAllLines(content + "{\"tail\"}");
  EXPECT_FALSE(lines[lines.size() - 2].is_last);
  EXPECT_EQ(lines.back().text, "{\"tail\"}");
  EXPECT_TRUE(lines.back().is_last);
}

TEST(LineReaderTest, TooLongLinesAreSkippedNotBuffered) {
  const size_t limit = kMaxReceiptLineBytes;
  std::string content = std::string(limit, 'a') + "\n" + std::string(limit + 1, 'b') + "\n" +
                        std::string(300000, 'c') + "\nend\n" + std::string(200000, 'd');
  std::vector<Seen> lines = ReadAllLines(content);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_FALSE(lines[0].too_long);
  EXPECT_EQ(lines[0].length, limit);
  EXPECT_TRUE(lines[1].too_long);
  EXPECT_EQ(lines[1].length, limit + 1);
  EXPECT_TRUE(lines[2].too_long);
  EXPECT_EQ(lines[2].length, 300000u);
  EXPECT_TRUE(lines[2].has_newline);
  EXPECT_EQ(lines[3].text, "end");
  EXPECT_TRUE(lines[4].too_long);
  EXPECT_FALSE(lines[4].has_newline);
  EXPECT_TRUE(lines[4].is_last);
  EXPECT_EQ(lines[4].length, 200000u);
}

}  // namespace
}  // namespace dmlp::verify
