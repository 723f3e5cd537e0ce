// The strict receipt line reader: every defect, in order, and the fast path.
#include "common/receipt_reader.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "common/float_repr.h"

namespace dmlp {
namespace {

const std::string kHash = "3f0e5e2fb6a1a4f3f9a0c1b2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2";

std::string Line(const std::string& loss = "2.3025851249694824", const std::string& hash = kHash,
                 const std::string& rank = "0", const std::string& step = "1") {
  return "{\"loss\": \"" + loss + "\", \"params_sha256\": \"" + hash + "\", \"rank\": " + rank +
         ", \"step\": " + step + "}";
}

ReceiptDefect DefectOf(const std::string& line, bool expect_rank = true) {
  return ParseReceiptLine(line, expect_rank).defect;
}

TEST(ReceiptReaderTest, AcceptsWhatTheWriterWrites) {
  Receipt receipt{1200, Float32Repr(0.125f), kHash, 7};
  std::string line = FormatReceiptLine(receipt);
  line.pop_back();
  ReceiptLineParse parse = ParseReceiptLine(line, true);
  ASSERT_TRUE(parse.ok()) << parse.detail;
  EXPECT_TRUE(parse.usable);
  EXPECT_EQ(parse.receipt, receipt);
}

TEST(ReceiptReaderTest, MetricsLineHasNoRank) {
  Receipt receipt{3, "0.5", kHash, std::nullopt};
  std::string line = FormatReceiptLine(receipt);
  line.pop_back();
  EXPECT_TRUE(ParseReceiptLine(line, false).ok());
  EXPECT_EQ(DefectOf(line, true), ReceiptDefect::kFieldMissing);
  EXPECT_EQ(DefectOf(Line(), false), ReceiptDefect::kFieldExtra);
}

TEST(ReceiptReaderTest, EveryFloat32ReprRowIsAValidLoss) {
  std::ifstream table(std::string(DMLP_TEST_DATA_DIR) + "/data/float32_repr.tsv");
  ASSERT_TRUE(table.good());
  std::string row;
  int checked = 0;
  while (std::getline(table, row)) {
    std::istringstream fields(row);
    std::string bits, repr;
    if (row.starts_with("#") || !std::getline(fields, bits, '\t') || !std::getline(fields, repr, '\t') ||
        repr == "nan" || repr == "inf" || repr == "-inf")
      continue;
    ReceiptLineParse parse = ParseReceiptLine(Line(repr), true);
    EXPECT_TRUE(parse.ok()) << repr << ": " << parse.detail;
    ++checked;
  }
  EXPECT_GT(checked, 100);
}

TEST(ReceiptReaderTest, FramingDefects) {
  EXPECT_EQ(DefectOf(std::string(kMaxReceiptLineBytes + 1, ' ')), ReceiptDefect::kTooLong);
  EXPECT_EQ(DefectOf(Line().insert(5, 1, '\0')), ReceiptDefect::kNul);
  EXPECT_EQ(DefectOf("\xEF\xBB\xBF" + Line()), ReceiptDefect::kBom);
  EXPECT_EQ(DefectOf(""), ReceiptDefect::kEmpty);
  EXPECT_EQ(DefectOf(" \r"), ReceiptDefect::kEmpty);
  EXPECT_EQ(DefectOf("hello"), ReceiptDefect::kNotJson);
  EXPECT_EQ(DefectOf("[1, 2]"), ReceiptDefect::kNotJson);
  EXPECT_EQ(DefectOf("\"text\""), ReceiptDefect::kNotJson);
  EXPECT_EQ(DefectOf(Line() + "x"), ReceiptDefect::kNotJson);
}

TEST(ReceiptReaderTest, TruncatedAndGlued) {
  const std::string full = Line();
  for (size_t keep : {size_t{1}, size_t{5}, size_t{12}, size_t{40}, size_t{100}, full.size() - 1})
    EXPECT_EQ(DefectOf(full.substr(0, keep)), ReceiptDefect::kTruncated) << keep;
  ReceiptLineParse glued = ParseReceiptLine(full.substr(0, 30) + Line("1.5", kHash, "0", "2"), true);
  EXPECT_EQ(glued.defect, ReceiptDefect::kGlued);
  EXPECT_EQ(glued.glued_offset, 30u);
  EXPECT_EQ(DefectOf(full + full), ReceiptDefect::kGlued);
}

TEST(ReceiptReaderTest, KeysAndTypes) {
  EXPECT_EQ(DefectOf(Line().insert(1, "\"step\": 1, ")), ReceiptDefect::kDuplicateKey);
  EXPECT_EQ(DefectOf("{\"loss\": \"1.0\", \"rank\": 0, \"step\": 1}"), ReceiptDefect::kFieldMissing);
  EXPECT_EQ(DefectOf(Line().insert(1, "\"extra\": 1, ")), ReceiptDefect::kFieldExtra);
  for (const char* step : {"1.0", "1e0", "\"1\"", "true", "null", "[1]", "{\"a\": 1}"})
    EXPECT_EQ(DefectOf(Line("1.0", kHash, "0", step)), ReceiptDefect::kFieldType) << step;
  for (const char* rank : {"0.0", "\"0\"", "false"})
    EXPECT_EQ(DefectOf(Line("1.0", kHash, rank)), ReceiptDefect::kFieldType) << rank;
  EXPECT_EQ(DefectOf("{\"loss\": 1.5, \"params_sha256\": \"" + kHash + "\", \"rank\": 0, \"step\": 1}"),
            ReceiptDefect::kFieldType);
  EXPECT_EQ(DefectOf(Line("1.0", kHash, "0", "0")), ReceiptDefect::kFieldRange);
  EXPECT_EQ(DefectOf(Line("1.0", kHash, "0", "-3")), ReceiptDefect::kFieldRange);
  EXPECT_EQ(DefectOf(Line("1.0", kHash, "-1")), ReceiptDefect::kFieldRange);
  EXPECT_EQ(DefectOf(Line("1.0", kHash, "0", "9223372036854775808")), ReceiptDefect::kFieldRange);
  EXPECT_EQ(DefectOf(Line("1.0", kHash, "0", "9007199254740993")), ReceiptDefect::kFieldRange);  // 2^53 + 1
  EXPECT_TRUE(ParseReceiptLine(Line("1.0", kHash, "0", "9007199254740992"), true).ok());
  EXPECT_EQ(DefectOf(Line("1.0", kHash, "9007199254740993")), ReceiptDefect::kFieldRange);
}

TEST(ReceiptReaderTest, HashAndLoss) {
  std::string upper = kHash;
  upper[0] = 'F';
  EXPECT_EQ(DefectOf(Line("1.0", upper)), ReceiptDefect::kHashFormat);
  EXPECT_EQ(DefectOf(Line("1.0", kHash.substr(1))), ReceiptDefect::kHashFormat);
  EXPECT_EQ(DefectOf(Line("1.0", kHash + "0")), ReceiptDefect::kHashFormat);
  for (const char* loss : {"nan", "inf", "-inf", "NaN", "infinity"})
    EXPECT_EQ(DefectOf(Line(loss)), ReceiptDefect::kLossNonfinite) << loss;
  for (const char* loss : {"1", "1.50", "+1.5", " 1.5", "1e0", "", "abc", "0x1p0", "1e999", "1.5\\u0030"})
    EXPECT_EQ(DefectOf(Line(loss)), ReceiptDefect::kLossNotRepr) << loss;
  EXPECT_EQ(DefectOf(Line("0.1")), ReceiptDefect::kLossNotFloat32);
  EXPECT_EQ(DefectOf(Line("1e+300")), ReceiptDefect::kLossNotFloat32);
  EXPECT_TRUE(ParseReceiptLine(Line("-0.0"), true).ok());
  EXPECT_EQ(DefectOf(Line("1e-45")), ReceiptDefect::kLossNotFloat32);  // the float32 is 1.401298464324817e-45
  EXPECT_TRUE(ParseReceiptLine(Line(Float32Repr(1e-45f)), true).ok());
}

TEST(ReceiptReaderTest, ValueDefectsKeepTheRecordUsable) {
  ReceiptLineParse parse = ParseReceiptLine(Line("0.1", kHash, "2", "9"), true);
  EXPECT_EQ(parse.defect, ReceiptDefect::kLossNotFloat32);
  EXPECT_TRUE(parse.usable);
  EXPECT_EQ(parse.receipt.step, 9);
  EXPECT_EQ(parse.receipt.rank, 2);
  EXPECT_FALSE(ParseReceiptLine(Line("1.0", kHash, "0", "1.0"), true).usable);
}

TEST(ReceiptReaderTest, NotCanonical) {
  for (const std::string& line :
       {"{\"loss\":\"1.0\", \"params_sha256\": \"" + kHash + "\", \"rank\": 0, \"step\": 1}",
        "{\"params_sha256\": \"" + kHash + "\", \"loss\": \"1.0\", \"rank\": 0, \"step\": 1}",
        Line() + " ", Line() + "\r", " " + Line(), Line("1.0", kHash, "-0"), Line("\\u0031.0")}) {
    ReceiptLineParse parse = ParseReceiptLine(line, true);
    EXPECT_EQ(parse.defect, ReceiptDefect::kNotCanonical) << line;
    EXPECT_TRUE(parse.usable);
  }
  EXPECT_EQ(DefectOf(Line("1.0", kHash, "0", "01")), ReceiptDefect::kNotJson);  // JSON forbids leading zeros
}

TEST(ReceiptReaderTest, DefectIdsAreStable) {
  EXPECT_STREQ(ReceiptDefectId(ReceiptDefect::kNone), "");
  EXPECT_STREQ(ReceiptDefectId(ReceiptDefect::kGlued), "line.torn_glued");
  EXPECT_STREQ(ReceiptDefectId(ReceiptDefect::kDuplicateKey), "line.duplicate_key");
  EXPECT_STREQ(ReceiptDefectId(ReceiptDefect::kLossNotRepr), "line.loss_not_repr");
}

TEST(ReceiptReaderTest, ReadReceiptLineStatusText) {
  Result<Receipt> bad = ReadReceiptLine(Line("nan"), true);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().ToString(), "RECEIPT_INVALID: line.loss_nonfinite: loss \"nan\" is not finite");
  Result<Receipt> good = ReadReceiptLine(Line(), true);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(good->step, 1);
}

}  // namespace
}  // namespace dmlp
