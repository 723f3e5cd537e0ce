#include "verify/comparability.h"

#include <map>
#include <set>

namespace dmlp::verify {
namespace {

using json = nlohmann::json;

// "section.key.subkey" -> the value's JSON text, for every leaf of `doc`.
void Flatten(const json& doc, const std::string& prefix, std::map<std::string, std::string>& out) {
  if (doc.is_object()) {
    for (const auto& [key, value] : doc.items()) Flatten(value, prefix + "." + key, out);
  } else {
    out[prefix] = doc.dump();
  }
}

// Fields that never change a receipt's bits (see comparability.h).
std::set<std::string> IgnoredFields(bool ordered) {
  std::set<std::string> ignored = {"plan.out_dir",        "plan.steps",      "plan.checkpoint_every",
                                   "plan.resume",         "model.port",      "model.process_id",
                                   "model.heartbeat_timeout_s", "fingerprint.blas.threads"};
  if (ordered) {
    // The ordered reduction adds in dmlp's own code in shard order: the world
    // size and whatever carries the bytes cannot change a bit.
    for (const char* field : {"model.processes", "fingerprint.collectives"}) ignored.insert(field);
  }
  return ignored;
}

bool IsIgnored(const std::string& field, const std::set<std::string>& ignored) {
  if (ignored.contains(field)) return true;
  // NCCL's variables choose transports; they only move bytes under the ordered reduction.
  return ignored.contains("fingerprint.collectives") && field.rfind("fingerprint.nccl_env", 0) == 0;
}

void CompareSection(const char* section, const json& golden, const json& run, const std::set<std::string>& ignored,
                    std::vector<std::string>& reasons) {
  std::map<std::string, std::string> golden_fields, run_fields;
  Flatten(golden, section, golden_fields);
  Flatten(run, section, run_fields);
  auto report = [&](const std::string& field, const std::string& golden_value, const std::string& run_value) {
    if (!IsIgnored(field, ignored)) reasons.push_back(field + ": " + golden_value + " vs " + run_value);
  };
  for (const auto& [field, value] : golden_fields) {
    auto other = run_fields.find(field);
    if (other == run_fields.end())
      report(field, value, "(absent)");
    else if (other->second != value)
      report(field, value, other->second);
  }
  for (const auto& [field, value] : run_fields)
    if (!golden_fields.contains(field)) report(field, "(absent)", value);
}

}  // namespace

Comparability CompareSetups(const std::optional<ResultDoc>& golden, const std::optional<ResultDoc>& run) {
  Comparability result;
  for (const auto& [doc, name] : {std::pair{&golden, "GOLDEN"}, std::pair{&run, "RUN"}}) {
    if (!*doc)
      result.reasons.push_back(std::string(name) + " has no valid result.json");
    else if ((*doc)->format != ResultDoc::Format::kDmlp || (*doc)->build.is_null())
      result.reasons.push_back(std::string(name) + "'s result.json records no build");
  }
  if (!result.reasons.empty()) return result;  // unknown
  const bool ordered = golden->plan.value("reduction", "") == "ordered" && run->plan.value("reduction", "") == "ordered";
  const std::set<std::string> ignored = IgnoredFields(ordered);
  CompareSection("plan", golden->plan, run->plan, ignored, result.reasons);
  CompareSection("model", golden->model, run->model, ignored, result.reasons);
  CompareSection("build", golden->build, run->build, ignored, result.reasons);
  CompareSection("fingerprint", golden->fingerprint, run->fingerprint, ignored, result.reasons);
  if (!result.reasons.empty()) {
    result.kind = Comparability::Kind::kNotComparable;
    return result;
  }
  // The same commit with uncommitted changes (or no commit) names no sources:
  // two such builds may differ although every recorded field agrees.
  if (golden->build.value("git_dirty", "unknown") != "false") {
    result.reasons.push_back("the build has uncommitted changes or no known commit (build.git_dirty: " +
                             golden->build.value("git_dirty", "unknown") + ")");
    return result;  // unknown
  }
  result.kind = Comparability::Kind::kMustMatch;
  return result;
}

const char* ComparabilityName(Comparability::Kind kind) {
  switch (kind) {
    case Comparability::Kind::kMustMatch: return "must_match";
    case Comparability::Kind::kNotComparable: return "not_comparable";
    case Comparability::Kind::kUnknown: return "unknown";
  }
  return "unknown";
}

}  // namespace dmlp::verify
