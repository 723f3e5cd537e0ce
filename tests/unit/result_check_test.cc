// result.json: the strict parser and the checks against receipts.
#include <gtest/gtest.h>

#include "common/py_json.h"
#include "tests/unit/verify_test_util.h"
#include "verify/result_check.h"
#include "verify/result_doc.h"

namespace dmlp::verify {
namespace {

nlohmann::json ReferenceDoc() {
  return {{"complete", true}, {"dataset", "d"}, {"digest_cost", "c"}, {"digest_policy", "p"},
          {"final_loss", "0.5"}, {"final_opt_state_sha256", testing::TestHash(-1)},
          {"final_params_sha256", testing::TestHash(-2)}, {"heartbeat_timeout_seconds", 60},
          {"jax_version", "0.4.35"}, {"model", {{"processes", 2}}}, {"optimizer", "adam"},
          {"params_sha256", testing::TestHash(3)}, {"plan", {{"steps", 3}, {"learning_rate", 0.001}}},
          {"processes", 2}, {"rank_files", {"rank-0.jsonl", "rank-1.jsonl"}}, {"steps", 3},
          {"updates_per_metric_step", 1}};
}

std::string Problem(const nlohmann::json& doc) { return ParseResultJson(PyJsonDumps(doc, 2)).problem; }

TEST(ResultDocTest, ReferenceAndDmlpFormats) {
  ResultParse parse = ParseResultJson(PyJsonDumps(ReferenceDoc(), 2) + "\n");
  ASSERT_TRUE(parse.doc) << parse.problem;
  EXPECT_EQ(parse.doc->format, ResultDoc::Format::kReference);
  EXPECT_EQ(parse.doc->rank_files.size(), 2u);
  EXPECT_EQ(parse.doc->model_processes, 2);
  EXPECT_FALSE(parse.doc->state_file);

  nlohmann::json dmlp = ReferenceDoc();
  dmlp.erase("jax_version");
  dmlp["dmlp_version"] = "0.1.0";
  EXPECT_EQ(Problem(dmlp), "missing \"state_file\"");
  dmlp["state_file"] = "state.safetensors";
  EXPECT_EQ(Problem(dmlp), "missing \"fingerprint\"");
  dmlp["fingerprint"] = nlohmann::json::object();
  ResultParse ok = ParseResultJson(PyJsonDumps(dmlp));
  ASSERT_TRUE(ok.doc) << ok.problem;
  EXPECT_EQ(ok.doc->format, ResultDoc::Format::kDmlp);
  dmlp["jax_version"] = "0.4.35";
  EXPECT_EQ(Problem(dmlp), "needs exactly one of \"jax_version\" and \"dmlp_version\"");
}

TEST(ResultDocTest, StrictTypes) {
  for (const char* field : {"steps", "processes", "heartbeat_timeout_seconds", "updates_per_metric_step"}) {
    nlohmann::json doc = ReferenceDoc();
    doc[field] = 3.0;
    EXPECT_FALSE(Problem(doc).empty()) << field;
    doc[field] = "3";
    EXPECT_FALSE(Problem(doc).empty()) << field;
  }
  nlohmann::json doc = ReferenceDoc();
  doc["complete"] = 1;
  EXPECT_EQ(Problem(doc), "\"complete\" must be true or false");
  doc = ReferenceDoc();
  doc["params_sha256"] = "ABC";
  EXPECT_EQ(Problem(doc), "\"params_sha256\" is not 64 lower-case hex digits");
  doc = ReferenceDoc();
  doc["plan"].erase("steps");
  EXPECT_EQ(Problem(doc), "plan: missing \"steps\"");
  doc = ReferenceDoc();
  doc["rank_files"] = {"rank-0.jsonl", 1};
  EXPECT_EQ(Problem(doc), "\"rank_files\" must hold strings");
  doc = ReferenceDoc();
  doc.erase("digest_cost");
  EXPECT_EQ(Problem(doc), "missing \"digest_cost\"");
}

TEST(ResultDocTest, DuplicateKeysAnywhereAndDepth) {
  std::string text = PyJsonDumps(ReferenceDoc(), 2);
  EXPECT_EQ(ParseResultJson("{\"a\": 1, \"a\": 1}").problem, "duplicate key \"a\"");
  std::string nested = text;
  nested.insert(nested.find("\"steps\": 3"), "\"steps\": 4, ");  // inside plan, the first "steps"
  EXPECT_EQ(ParseResultJson(nested).problem, "duplicate key \"steps\"");
  EXPECT_EQ(ParseResultJson(std::string(100, '[') + std::string(100, ']')).problem, "nested deeper than 64");
  EXPECT_EQ(ParseResultJson(std::string(kMaxResultJsonBytes + 1, ' ')).problem, "larger than 1048576 bytes");
  EXPECT_EQ(ParseResultJson("[]").problem, "not a JSON object");
  EXPECT_EQ(ParseResultJson("{").problem, "not valid JSON (error at byte 2)");
}

ReceiptSetSummary Receipts(int ranks, int steps) {
  ReceiptSetSummary summary;
  for (int rank = 0; rank < ranks; ++rank) {
    FileSummary file;
    file.name = "rank-" + std::to_string(rank) + ".jsonl";
    file.display = "run/" + file.name;
    file.rank = rank;
    file.records = steps;
    file.first_step = 1;
    file.last_step = steps;
    file.last = Receipt{steps, "0.5", testing::TestHash(steps), rank};
    summary.ranks.push_back(file);
  }
  summary.last_step = steps;
  return summary;
}

std::map<std::string, size_t> Check(const nlohmann::json& json, const ReceiptSetSummary& receipts) {
  ResultParse parse = ParseResultJson(PyJsonDumps(json));
  EXPECT_TRUE(parse.doc) << parse.problem;
  FindingSink sink;
  if (parse.doc) CheckResultDoc(*parse.doc, receipts, "run/result.json", sink);
  std::map<std::string, size_t> ids;
  for (const Finding& finding : sink.kept()) ++ids[finding.id];
  return ids;
}

TEST(ResultCheckTest, AgreesWithReceipts) {
  EXPECT_TRUE(Check(ReferenceDoc(), Receipts(2, 3)).empty());
  EXPECT_EQ(Check(ReferenceDoc(), Receipts(2, 4)),
            (std::map<std::string, size_t>{{"result.steps_mismatch", 2}, {"result.params_sha256_mismatch", 1}}));
  nlohmann::json doc = ReferenceDoc();
  doc["complete"] = false;
  doc["final_loss"] = "0.50";
  doc["plan"]["steps"] = 4;
  EXPECT_EQ(Check(doc, Receipts(2, 3)), (std::map<std::string, size_t>{{"result.not_complete", 1},
                                                                      {"result.final_loss_mismatch", 1},
                                                                      {"result.steps_mismatch", 1}}));
}

TEST(ResultCheckTest, RankFilesAndProcesses) {
  nlohmann::json doc = ReferenceDoc();
  doc["rank_files"] = {"rank-0.jsonl", "/etc/passwd", "rank-1.jsonl"};
  doc["model"]["processes"] = 3;
  EXPECT_EQ(Check(doc, Receipts(2, 3)), (std::map<std::string, size_t>{{"result.rank_files_invalid", 2},
                                                                      {"result.processes_mismatch", 2}}));
  doc = ReferenceDoc();
  doc["rank_files"] = {"rank-1.jsonl", "rank-0.jsonl"};
  EXPECT_EQ(Check(doc, Receipts(2, 3)), (std::map<std::string, size_t>{{"result.rank_files_invalid", 2}}));
}

TEST(ResultCheckTest, TornReceiptsContradictCompletion) {
  ReceiptSetSummary receipts = Receipts(2, 3);
  receipts.ranks[1].torn_last = true;
  EXPECT_EQ(Check(ReferenceDoc(), receipts), (std::map<std::string, size_t>{{"result.torn_receipts", 1}}));
}

}  // namespace
}  // namespace dmlp::verify
