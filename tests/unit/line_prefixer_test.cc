#include "launch/line_prefixer.h"

#include <gtest/gtest.h>

#include <string>

namespace dmlp {
namespace {

// Feeds `text` cut at every position in `cuts` and returns all output, Finish included.
std::string FeedInPieces(const std::string& text, const std::vector<size_t>& cuts,
                         size_t max_line = LinePrefixer::kDefaultMaxLineBytes) {
  LinePrefixer prefixer("[rank 3] ", max_line);
  std::string out;
  size_t start = 0;
  for (size_t cut : cuts) {
    out += prefixer.Feed(std::string_view(text).substr(start, cut - start));
    start = cut;
  }
  out += prefixer.Feed(std::string_view(text).substr(start));
  out += prefixer.Finish();
  return out;
}

TEST(LinePrefixer, PrefixesEveryWholeLine) {
  LinePrefixer prefixer("[rank 0] ");
  EXPECT_EQ(prefixer.Feed("a\nbb\n"), "[rank 0] a\n[rank 0] bb\n");
  EXPECT_FALSE(prefixer.has_partial_line());
  EXPECT_EQ(prefixer.Finish(), "");
}

TEST(LinePrefixer, HoldsAnUnfinishedLineUntilItsNewline) {
  LinePrefixer prefixer("[rank 1] ");
  EXPECT_EQ(prefixer.Feed("loss="), "");
  EXPECT_TRUE(prefixer.has_partial_line());
  EXPECT_EQ(prefixer.Feed("2.30"), "");
  EXPECT_EQ(prefixer.Feed("25\nnext"), "[rank 1] loss=2.3025\n");
  EXPECT_EQ(prefixer.Finish(), "[rank 1] next\n");
  EXPECT_EQ(prefixer.Finish(), "");
}

TEST(LinePrefixer, EmptyLinesAndEmptyPiecesSurvive) {
  LinePrefixer prefixer("> ");
  EXPECT_EQ(prefixer.Feed(""), "");
  EXPECT_EQ(prefixer.Feed("\n\n"), "> \n> \n");
}

TEST(LinePrefixer, SameOutputWhereverTheStreamIsCut) {
  const std::string text = "first line\n\nthird: with \r carriage\nlast without newline";
  const std::string expected =
      "[rank 3] first line\n[rank 3] \n[rank 3] third: with \r carriage\n[rank 3] last without "
      "newline\n";
  // Every single cut and every pair of cuts.
  for (size_t a = 0; a <= text.size(); ++a) {
    EXPECT_EQ(FeedInPieces(text, {a}), expected) << "cut at " << a;
    for (size_t b = a; b <= text.size(); ++b)
      ASSERT_EQ(FeedInPieces(text, {a, b}), expected) << "cuts at " << a << "," << b;
  }
  // One byte at a time.
  std::vector<size_t> every;
  for (size_t i = 1; i < text.size(); ++i) every.push_back(i);
  EXPECT_EQ(FeedInPieces(text, every), expected);
}

TEST(LinePrefixer, NulBytesPassThrough) {
  LinePrefixer prefixer("p ");
  EXPECT_EQ(prefixer.Feed(std::string("a\0b\n", 4)), std::string("p a\0b\n", 6));
}

TEST(LinePrefixer, OverlongLineIsCutTheSameWhereverTheStreamIsCut) {
  const std::string text = "abcdefg\nxy\nabcdef\nabc";
  const std::string expected =
      "[rank 3] abc\n[rank 3] def\n[rank 3] g\n[rank 3] xy\n[rank 3] abc\n[rank 3] def\n[rank 3] "
      "abc\n";
  for (size_t a = 0; a <= text.size(); ++a) {
    for (size_t b = a; b <= text.size(); ++b)
      ASSERT_EQ(FeedInPieces(text, {a, b}, 3), expected) << "cuts at " << a << "," << b;
  }
}

}  // namespace
}  // namespace dmlp
