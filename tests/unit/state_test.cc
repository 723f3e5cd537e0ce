// State layout, digests and the state file, checked against the reference's
// canonical digest vector (tests/data/digest_vector.json).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "common/file_util.h"
#include "common/sha256.h"
#include "common/state_digest.h"
#include "common/state_file.h"
#include "common/state_layout.h"

namespace dmlp {
namespace {

nlohmann::json LoadVector() {
  std::ifstream file(std::string(DMLP_TEST_DATA_DIR) + "/data/digest_vector.json");
  return nlohmann::json::parse(file);
}

void AppendLeaves(const StateLayout& layout, const nlohmann::json& tree, std::vector<uint8_t>& out) {
  for (const StateLeaf& leaf : layout.leaves()) {
    std::string layer = leaf.name.substr(0, leaf.name.find('/'));
    const nlohmann::json& array = tree[layer][leaf.is_kernel ? "kernel" : "bias"];
    std::vector<float> values;
    if (leaf.is_kernel)
      for (const auto& row : array)
        for (const auto& v : row) values.push_back(v.get<float>());
    else
      for (const auto& v : array) values.push_back(v.get<float>());
    ASSERT_EQ(values.size(), leaf.size);
    const auto* bytes = reinterpret_cast<const uint8_t*>(values.data());
    out.insert(out.end(), bytes, bytes + 4 * values.size());
  }
}

std::vector<uint8_t> ImageFromVector(const StateLayout& layout, const nlohmann::json& vector) {
  std::vector<uint8_t> image;
  AppendLeaves(layout, vector["params"], image);
  int32_t count = vector["adam_count"].get<int32_t>();
  const auto* count_bytes = reinterpret_cast<const uint8_t*>(&count);
  image.insert(image.end(), count_bytes, count_bytes + 4);
  AppendLeaves(layout, vector["adam_mu"], image);
  AppendLeaves(layout, vector["adam_nu"], image);
  return image;
}

StateLayout VectorLayout(const nlohmann::json& vector) {
  return *StateLayout::Create({vector["features"], vector["width"], vector["layers"],
                               vector["classes"]});
}

TEST(StateLayoutTest, LayerNamesSortAsStrings) {
  StateLayout layout = *StateLayout::Create({3, 4, 10, 2});
  std::vector<std::string> names;
  for (const auto& leaf : layout.leaves()) names.push_back(leaf.name);
  ASSERT_EQ(names.size(), 22u);
  EXPECT_EQ(names[0], "Dense_0/bias");
  EXPECT_EQ(names[2], "Dense_1/bias");
  EXPECT_EQ(names[4], "Dense_10/bias");  // Dense_10 is the output layer
  EXPECT_EQ(names[6], "Dense_2/bias");
  EXPECT_EQ(layout.kernel(10).shape, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(layout.bias(10).offset, 4u + 12 + 4 + 16);
  EXPECT_EQ(layout.image_bytes(), 12 * layout.parameter_count() + 4);
}

TEST(StateLayoutTest, RejectsEmptyDimensions) {
  EXPECT_EQ(StateLayout::Create({0, 4, 1, 2}).status().code(), "MODEL_INVALID");
}

TEST(StateDigestTest, ReproducesTheReferenceDigestVector) {
  nlohmann::json vector = LoadVector();
  StateLayout layout = VectorLayout(vector);
  std::vector<uint8_t> image = ImageFromVector(layout, vector);
  ASSERT_EQ(image.size(), layout.image_bytes());
  StateDigests digests = DigestStateImage(layout, image.data());
  EXPECT_EQ(digests.state, vector["params_sha256"].get<std::string>());
  EXPECT_EQ(digests.params, vector["final_params_sha256"].get<std::string>());
  EXPECT_EQ(digests.opt, vector["final_opt_state_sha256"].get<std::string>());
  EXPECT_EQ(DigestStateStep(image.data(), image.size()),
            vector["params_sha256"].get<std::string>());
}

class StateFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = std::filesystem::temp_directory_path() /
                 ("dmlp-state-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(directory_);
    vector_ = LoadVector();
    path_ = (directory_ / "state.safetensors").string();
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }

  std::filesystem::path directory_;
  nlohmann::json vector_;
  std::string path_;
};

TEST_F(StateFileTest, RoundTripKeepsDigestsAndTheDataSectionIsTheImage) {
  StateLayout layout = VectorLayout(vector_);
  std::vector<uint8_t> image = ImageFromVector(layout, vector_);
  ASSERT_TRUE(WriteStateFile(path_, layout, image.data(), {{"step", "7"}}).ok());
  EXPECT_FALSE(std::filesystem::exists(path_ + ".tmp"));
  Result<StateDigests> digests = DigestStateFile(path_);
  ASSERT_TRUE(digests.ok()) << digests.status().ToString();
  EXPECT_EQ(digests->state, vector_["params_sha256"].get<std::string>());
  EXPECT_EQ(digests->params, vector_["final_params_sha256"].get<std::string>());
  EXPECT_EQ(digests->opt, vector_["final_opt_state_sha256"].get<std::string>());
  Result<StateFileIndex> index = ReadStateFileIndex(path_);
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(index->metadata.at("step"), "7");
  EXPECT_EQ(index->data_offset % 8, 0u);
  std::string contents = *ReadFileToString(path_);
  EXPECT_EQ(Sha256Hex(contents.data() + index->data_offset, index->data_size),
            vector_["params_sha256"].get<std::string>());
  Result<std::vector<uint8_t>> loaded = LoadStateImage(path_, layout);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(*loaded, image);
}

TEST_F(StateFileTest, RejectsAnotherModel) {
  StateLayout layout = VectorLayout(vector_);
  std::vector<uint8_t> image = ImageFromVector(layout, vector_);
  ASSERT_TRUE(WriteStateFile(path_, layout, image.data(), {}).ok());
  StateLayout other = *StateLayout::Create({3, 4, 1, 3});
  EXPECT_EQ(LoadStateImage(path_, other).status().code(), "STATE_FILE_INVALID");
}

TEST_F(StateFileTest, DamagedFilesAreInvalidNeverCrash) {
  StateLayout layout = VectorLayout(vector_);
  std::vector<uint8_t> image = ImageFromVector(layout, vector_);
  ASSERT_TRUE(WriteStateFile(path_, layout, image.data(), {}).ok());
  std::string good = *ReadFileToString(path_);
  auto check = [&](std::string contents, const char* what) {
    ASSERT_TRUE(WriteFileAtomically(path_, contents).ok());
    EXPECT_EQ(DigestStateFile(path_).status().code(), "STATE_FILE_INVALID") << what;
  };
  check(good.substr(0, good.size() - 1), "truncated data");
  check(good + "x", "trailing byte");
  check(good.substr(0, 5), "shorter than the length field");
  std::string huge = good;
  huge[7] = '\x7f';
  check(huge, "header length beyond the file");
  std::string garbled = good;
  garbled[8] = '[';
  check(garbled, "header not an object");
  std::string renamed = good;
  renamed.replace(renamed.find("opt/count"), 9, "opt/cnt__");
  check(renamed, "unknown tensor");
  EXPECT_EQ(DigestStateFile((directory_ / "absent").string()).status().code(), "NOT_FOUND");
}

// A header is [u64 length][JSON]: `entry` goes in first, the length follows it.
std::string WithFirstHeaderEntry(const std::string& file, const std::string& entry) {
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = (length << 8) | static_cast<uint8_t>(file[i]);
  std::string header = file.substr(8, length);
  header.insert(1, entry + ",");
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return bytes + header + file.substr(8 + length);
}

TEST_F(StateFileTest, DuplicateTensorNameIsInvalid) {
  StateLayout layout = VectorLayout(vector_);
  std::vector<uint8_t> image = ImageFromVector(layout, vector_);
  ASSERT_TRUE(WriteStateFile(path_, layout, image.data(), {}).ok());
  std::string good = *ReadFileToString(path_);
  // nlohmann's own parse keeps the last "opt/count", and this file passed.
  ASSERT_TRUE(WriteFileAtomically(path_, WithFirstHeaderEntry(
      good, R"("opt/count":{"dtype":"I32","shape":[999],"data_offsets":[0,4]})")).ok());
  EXPECT_EQ(DigestStateFile(path_).status().ToString(),
            "STATE_FILE_INVALID: " + path_ + ": header: duplicate key \"opt/count\"");
  EXPECT_EQ(LoadStateImage(path_, layout).status().code(), "STATE_FILE_INVALID");
}

}  // namespace
}  // namespace dmlp
