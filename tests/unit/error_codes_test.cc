// The status code catalogue: its constants, its rows and the table of
// docs/troubleshooting.md are one list.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "common/format/error_codes.h"
#include "common/format/failure_line.h"

namespace dmlp {
namespace {

std::string ReadSource(const std::string& relative) {
  std::ifstream file(std::string(DMLP_SOURCE_DIR) + "/" + relative);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

bool MentionsWord(const std::string& text, std::string_view word) {
  const std::regex whole("(^|[^A-Z0-9_])" + std::string(word) + "([^A-Z0-9_]|$)");
  return std::regex_search(text, whole);
}

TEST(ErrorCodesTest, RowsAreUniqueInNameOrderAndWellFormed) {
  std::string previous;
  for (const ErrorCodeRow& row : ErrorCodes()) {
    EXPECT_LT(previous, row.code) << "out of order or twice: " << row.code;
    previous = row.code;
    EXPECT_EQ(row.code.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"), std::string_view::npos)
        << row.code;
    EXPECT_FALSE(row.programs.empty()) << row.code;
    EXPECT_FALSE(row.meaning.empty()) << row.code;
    EXPECT_EQ(FindErrorCode(row.code), &row);
  }
  EXPECT_EQ(FindErrorCode("NO_SUCH_CODE"), nullptr);
}

// A constant without a row (or a row without a constant) would be a code the
// docs do not list.
TEST(ErrorCodesTest, EveryConstantOfTheHeaderHasARow) {
  const std::string header = ReadSource("common/format/error_codes.h");
  const std::regex constant(R"re(inline constexpr char k[A-Za-z]+\[\] = "([A-Z0-9_]+)";)re");
  std::set<std::string> constants, rows;
  for (auto it = std::sregex_iterator(header.begin(), header.end(), constant); it != std::sregex_iterator(); ++it)
    constants.insert((*it)[1]);
  for (const ErrorCodeRow& row : ErrorCodes()) rows.insert(std::string(row.code));
  EXPECT_EQ(constants, rows);
}

TEST(ErrorCodesTest, TroubleshootingListsExactlyTheCatalogue) {
  const std::string page = ReadSource("docs/troubleshooting.md");
  const std::string begin = "<!-- codes:begin -->\n", end = "<!-- codes:end -->";
  const size_t from = page.find(begin), to = page.find(end);
  ASSERT_NE(from, std::string::npos);
  ASSERT_NE(to, std::string::npos);
  EXPECT_EQ(page.substr(from + begin.size(), to - from - begin.size()), FormatErrorCodeTable())
      << "docs/troubleshooting.md's table must be FormatErrorCodeTable()'s";
}

TEST(ErrorCodesTest, EachPageExplainsItsCode) {
  for (const ErrorCodeRow& row : ErrorCodes()) {
    const std::string page = ReadSource("docs/" + std::string(row.page));
    ASSERT_FALSE(page.empty()) << "docs/" << row.page << " for " << row.code;
    EXPECT_TRUE(MentionsWord(page, row.code)) << "docs/" << row.page << " never names " << row.code;
  }
}

TEST(ErrorCodesTest, TheFailureLineCodesEndWithTheirOwnExitCodes) {
  EXPECT_EQ(FindErrorCode(kRankDiverged)->exit_code, kRankDivergedExit);
  EXPECT_EQ(FindErrorCode(kShardAuditFailed)->exit_code, kShardAuditFailedExit);
  EXPECT_EQ(kRankDivergedExit, 4);
  EXPECT_EQ(kShardAuditFailedExit, 5);
}

TEST(ErrorCodesTest, ConstantsSpellTheCodesUsersSee) {
  EXPECT_STREQ(kEnvMissing, "ENV_MISSING");
  EXPECT_STREQ(kRankDiverged, "RANK_DIVERGED");
  EXPECT_STREQ(kShardAuditFailed, "SHARD_AUDIT_FAILED");
  EXPECT_STREQ(kOutputExists, "OUTPUT_EXISTS");
}

}  // namespace
}  // namespace dmlp
