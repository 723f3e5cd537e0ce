// Philox4x32-10 against Random123's known-answer vectors (tests/data).
#include "trainer/philox.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace dmlp {
namespace {

struct KatRow {
  PhiloxBlock counter;
  PhiloxKey key;
  PhiloxBlock expected;
};

// Rows: "c0 c1 c2 c3<TAB>k0 k1<TAB>o0 o1 o2 o3" in hex; '#' starts a comment line.
std::vector<KatRow> ReadKat() {
  std::ifstream in(std::string(DMLP_TEST_DATA_DIR) + "/data/philox4x32_10_kat.tsv");
  std::vector<KatRow> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    KatRow row;
    fields >> std::hex >> row.counter.w0 >> row.counter.w1 >> row.counter.w2 >> row.counter.w3 >>
        row.key.k0 >> row.key.k1 >> row.expected.w0 >> row.expected.w1 >> row.expected.w2 >>
        row.expected.w3;
    EXPECT_FALSE(fields.fail()) << "unparsable KAT line: " << line;
    rows.push_back(row);
  }
  return rows;
}

TEST(PhiloxTest, MatchesEveryKnownAnswer) {
  const std::vector<KatRow> rows = ReadKat();
  ASSERT_GE(rows.size(), 3u) << "KAT file missing or empty";
  for (const KatRow& row : rows) {
    const PhiloxBlock out = Philox4x32_10(row.counter, row.key);
    EXPECT_EQ(out.w0, row.expected.w0);
    EXPECT_EQ(out.w1, row.expected.w1);
    EXPECT_EQ(out.w2, row.expected.w2);
    EXPECT_EQ(out.w3, row.expected.w3);
  }
}

TEST(PhiloxTest, KeyIsLowThenHighHalfOfSeed) {
  const PhiloxKey key = PhiloxKeyFromSeed(0x0123456789ABCDEFull);
  EXPECT_EQ(key.k0, 0x89ABCDEFu);
  EXPECT_EQ(key.k1, 0x01234567u);
  const PhiloxKey largest = PhiloxKeyFromSeed(0x7FFFFFFFFFFFFFFFull);
  EXPECT_EQ(largest.k0, 0xFFFFFFFFu);
  EXPECT_EQ(largest.k1, 0x7FFFFFFFu);
}

TEST(PhiloxTest, EveryCounterWordAndKeyWordMatters) {
  const PhiloxBlock base = Philox4x32_10(PhiloxBlock{1, 2, 3, 4}, PhiloxKey{5, 6});
  const PhiloxBlock variants[] = {
      Philox4x32_10(PhiloxBlock{0, 2, 3, 4}, PhiloxKey{5, 6}),
      Philox4x32_10(PhiloxBlock{1, 0, 3, 4}, PhiloxKey{5, 6}),
      Philox4x32_10(PhiloxBlock{1, 2, 0, 4}, PhiloxKey{5, 6}),
      Philox4x32_10(PhiloxBlock{1, 2, 3, 0}, PhiloxKey{5, 6}),
      Philox4x32_10(PhiloxBlock{1, 2, 3, 4}, PhiloxKey{0, 6}),
      Philox4x32_10(PhiloxBlock{1, 2, 3, 4}, PhiloxKey{5, 0}),
  };
  for (const PhiloxBlock& v : variants) EXPECT_NE(v.w0, base.w0);
}

}  // namespace
}  // namespace dmlp
