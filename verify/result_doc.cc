#include "verify/result_doc.h"

#include <nlohmann/json.hpp>

#include "common/format/result_json.h"
#include "common/sha256.h"
#include "common/strict_json.h"

namespace dmlp::verify {
namespace {

using nlohmann::json;

// Field readers: each returns an empty string on success, else the problem.
std::string Missing(const char* name) { return std::string("missing \"") + name + "\""; }

std::string GetInt(const json& doc, const char* name, int64_t minimum, int64_t& out) {
  auto it = doc.find(name);
  if (it == doc.end()) return Missing(name);
  if (it->is_number_unsigned() && it->get<uint64_t>() <= uint64_t{INT64_MAX})
    out = it->get<int64_t>();
  else if (it->is_number_integer() && !it->is_number_unsigned())
    out = it->get<int64_t>();
  else
    return std::string("\"") + name + "\" must be a JSON integer";
  if (out < minimum) return std::string("\"") + name + "\" must be >= " + std::to_string(minimum);
  return {};
}

std::string GetString(const json& doc, const char* name, std::string& out) {
  auto it = doc.find(name);
  if (it == doc.end()) return Missing(name);
  if (!it->is_string()) return std::string("\"") + name + "\" must be a string";
  out = it->get<std::string>();
  return {};
}

std::string GetHash(const json& doc, const char* name, std::string& out) {
  std::string problem = GetString(doc, name, out);
  if (problem.empty() && !IsLowerHexDigest(out))
    problem = std::string("\"") + name + "\" is not 64 lower-case hex digits";
  return problem;
}

std::string RequireKind(const json& doc, const char* name, json::value_t kind) {
  auto it = doc.find(name);
  if (it == doc.end()) return Missing(name);
  bool ok = kind == json::value_t::number_integer ? it->is_number_integer() : it->type() == kind;
  if (!ok) return std::string("\"") + name + "\" has the wrong type";
  return {};
}

void Flatten(const json& value, const std::string& key, std::vector<std::pair<std::string, std::string>>& out) {
  if (value.is_object()) {
    for (const auto& [name, item] : value.items()) Flatten(item, key + "." + name, out);
    return;
  }
  out.emplace_back(key, value.is_string() ? value.get<std::string>()
                                          : value.dump(-1, ' ', false, json::error_handler_t::replace));
}

std::string ReadDoc(const json& root, ResultDoc& doc) {
  if (!root.is_object()) return "not a JSON object";
  const bool has_jax = root.contains(kResultJaxVersion), has_dmlp = root.contains(kResultDmlpVersion);
  if (has_jax == has_dmlp)
    return std::string("needs exactly one of \"") + kResultJaxVersion + "\" and \"" + kResultDmlpVersion + "\"";
  doc.format = has_dmlp ? ResultDoc::Format::kDmlp : ResultDoc::Format::kReference;
  std::string problem = GetString(root, has_dmlp ? kResultDmlpVersion : kResultJaxVersion, doc.version);
  auto complete = root.find(kResultComplete);
  if (problem.empty() && complete == root.end()) problem = Missing(kResultComplete);
  if (problem.empty() && !complete->is_boolean())
    problem = std::string("\"") + kResultComplete + "\" must be true or false";
  if (problem.empty()) doc.complete = complete->get<bool>();
  for (const std::string& next :
       {problem, GetInt(root, kResultSteps, 0, doc.steps), GetString(root, kResultFinalLoss, doc.final_loss),
        GetHash(root, kResultParamsSha256, doc.params_sha256),
        GetHash(root, kResultFinalParamsSha256, doc.final_params_sha256),
        GetHash(root, kResultFinalOptStateSha256, doc.final_opt_state_sha256),
        GetInt(root, kResultProcesses, 1, doc.processes)}) {
    if (!next.empty()) return next;
  }
  for (auto [name, kind] : {std::pair<const char*, json::value_t>{kResultDataset, json::value_t::string},
                            {kResultOptimizer, json::value_t::string},
                            {kResultDigestPolicy, json::value_t::string}, {kResultDigestCost, json::value_t::string},
                            {kResultModel, json::value_t::object}, {kResultPlan, json::value_t::object},
                            {kResultRankFiles, json::value_t::array},
                            {kResultUpdatesPerMetricStep, json::value_t::number_integer},
                            {kResultHeartbeatTimeoutSeconds, json::value_t::number_integer}}) {
    if (std::string next = RequireKind(root, name, kind); !next.empty()) return next;
  }
  for (const json& name : root.at(kResultRankFiles)) {
    if (!name.is_string()) return std::string("\"") + kResultRankFiles + "\" must hold strings";
    doc.rank_files.push_back(name.get<std::string>());
  }
  if (std::string next = GetInt(root.at(kResultPlan), kPlanSteps, 0, doc.plan_steps); !next.empty())
    return "plan: " + next;
  const json& model = root.at(kResultModel);
  if (model.contains(kModelProcesses)) {
    int64_t processes = 0;
    if (std::string next = GetInt(model, kModelProcesses, 1, processes); !next.empty()) return "model: " + next;
    doc.model_processes = processes;
  }
  if (has_dmlp || root.contains(kResultStateFile)) {
    std::string state_file;
    if (std::string next = GetString(root, kResultStateFile, state_file); !next.empty()) return next;
    doc.state_file = state_file;
  }
  doc.plan = root.at(kResultPlan);
  doc.model = model;
  if (auto build = root.find(kResultBuild); build != root.end() && build->is_object()) doc.build = *build;
  if (has_dmlp) {
    if (std::string next = RequireKind(root, kResultFingerprint, json::value_t::object); !next.empty()) return next;
    doc.fingerprint = root.at(kResultFingerprint);
  }
  for (const char* name : {kResultPlan, kResultModel, kResultFingerprint, kResultBuild})
    if (root.contains(name)) Flatten(root.at(name), name, doc.settings);
  return {};
}

}  // namespace

ResultParse ParseResultJson(std::string_view text) {
  ResultParse parse;
  if (text.size() > kMaxResultJsonBytes) {
    parse.problem = "larger than " + std::to_string(kMaxResultJsonBytes) + " bytes";
    return parse;
  }
  StrictJsonParse strict = ParseStrictJson(text);
  if (!strict.ok()) {
    parse.problem = strict.problem;
    return parse;
  }
  ResultDoc doc;
  parse.problem = ReadDoc(strict.value, doc);
  if (parse.problem.empty()) parse.doc = std::move(doc);
  return parse;
}

std::string_view FormatName(ResultDoc::Format format) {
  return format == ResultDoc::Format::kDmlp ? "dmlp" : "reference";
}

}  // namespace dmlp::verify
