#include "common/receipt.h"

#include <gtest/gtest.h>

#include "common/float_repr.h"

namespace dmlp {
namespace {

const std::string kHash(64, 'a');

TEST(ReceiptTest, RankLineMatchesJsonDumpsSortKeys) {
  Receipt receipt{1, Float32Repr(2.3025851f), kHash, 0};
  EXPECT_EQ(FormatReceiptLine(receipt),
            "{\"loss\": \"2.3025851249694824\", \"params_sha256\": \"" + kHash +
                "\", \"rank\": 0, \"step\": 1}\n");
}

TEST(ReceiptTest, MetricsLineHasNoRank) {
  Receipt receipt{1200, "0.5", kHash, std::nullopt};
  EXPECT_EQ(FormatReceiptLine(receipt),
            "{\"loss\": \"0.5\", \"params_sha256\": \"" + kHash + "\", \"step\": 1200}\n");
}

}  // namespace
}  // namespace dmlp
