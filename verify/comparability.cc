#include "verify/comparability.h"

#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "common/bit_settings.h"
#include "common/format/result_json.h"

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

// The fields of result.json that decide no bit under the runs' reduction:
// the table in common/bit_settings.h. "a.*" stands for every field below a.
bool IsIgnored(const std::string& field, const std::vector<std::string>& ignored) {
  for (const std::string& entry : ignored) {
    if (field == entry) return true;
    if (entry.ends_with(".*") && field.starts_with(entry.substr(0, entry.size() - 1))) return true;
  }
  return false;
}

void CompareSection(const char* section, const json& golden, const json& run, const std::vector<std::string>& ignored,
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

using Signature = std::map<std::string, std::string>;

// At most this many env reasons are listed (a 1024-rank job on other GPUs would list every rank).
constexpr size_t kMaxEnvReasons = 16;

// rank -> StackSignature of its last valid env line.
std::map<int64_t, Signature> LastSignatures(const std::vector<RankEnvironment>& envs) {
  std::map<int64_t, Signature> signatures;
  for (const RankEnvironment& env : envs)
    if (!env.records.empty()) signatures[env.rank] = StackSignature(env.records.back());
  return signatures;
}

// "field: golden vs run; ..." for every field that differs.
std::string Differences(const Signature& golden, const Signature& run) {
  std::string text;
  auto add = [&text](const std::string& field, const std::string& a, const std::string& b) {
    text += (text.empty() ? "" : "; ") + field + ": " + a + " vs " + b;
  };
  for (const auto& [field, value] : golden) {
    auto other = run.find(field);
    if (other == run.end()) add(field, value, "(absent)");
    else if (other->second != value) add(field, value, other->second);
  }
  for (const auto& [field, value] : run)
    if (!golden.contains(field)) add(field, "(absent)", value);
  return text;
}

// What differs between the two runs' ranks (comparability.h), leaving out the
// fields that decide no bit (`ignored`, as for result.json); empty when they
// agree or either run has no env file.
std::vector<std::string> CompareEnvironments(const std::vector<RankEnvironment>& golden_envs,
                                             const std::vector<RankEnvironment>& run_envs,
                                             const std::vector<std::string>& ignored) {
  auto golden = LastSignatures(golden_envs), run = LastSignatures(run_envs);
  for (auto* side : {&golden, &run})
    for (auto& [rank, signature] : *side)
      std::erase_if(signature, [&ignored](const auto& field) { return IsIgnored(field.first, ignored); });
  std::vector<std::string> reasons;
  if (golden.empty() || run.empty()) return reasons;
  bool same_ranks = golden.size() == run.size();
  for (const auto& [rank, signature] : golden) same_ranks = same_ranks && run.contains(rank);
  if (same_ranks) {
    for (const auto& [rank, signature] : golden) {
      const std::string differences = Differences(signature, run.at(rank));
      if (!differences.empty()) reasons.push_back("rank " + std::to_string(rank) + " (env): " + differences);
    }
  } else {
    // Other ranks: each rank's stack must be one the other run has on some rank.
    auto unmatched = [&reasons](const std::map<int64_t, Signature>& side, const std::map<int64_t, Signature>& other,
                                const char* side_name, bool side_is_golden) {
      for (const auto& [rank, signature] : side) {
        bool found = false;
        for (const auto& [other_rank, other_signature] : other) found = found || other_signature == signature;
        if (found) continue;
        const Signature& closest = other.begin()->second;
        reasons.push_back(std::string(side_name) + " rank " + std::to_string(rank) +
                          " (env, no rank of the other run alike): " +
                          (side_is_golden ? Differences(signature, closest) : Differences(closest, signature)));
      }
    };
    unmatched(golden, run, "GOLDEN", true);
    unmatched(run, golden, "RUN", false);
  }
  if (reasons.size() > kMaxEnvReasons) {
    const size_t more = reasons.size() - kMaxEnvReasons;
    reasons.resize(kMaxEnvReasons);
    reasons.push_back(std::to_string(more) + " more ranks differ");
  }
  return reasons;
}

// The fields that decide no bit for these two runs (bit_settings.h): under
// their reduction, and with cuBLAS's rows where either ran cuBLAS. Without both
// result.json files, the fewest: every row that may decide a bit is compared.
std::vector<std::string> IgnoredFields(const std::optional<ResultDoc>& golden, const std::optional<ResultDoc>& run) {
  bool ordered = golden.has_value() && run.has_value(), cublas = !ordered;
  for (const auto* doc : {&golden, &run}) {
    if (!*doc || !(*doc)->plan.is_object()) continue;
    ordered = ordered && (*doc)->plan.value("reduction", "") == "ordered";
    cublas = cublas || (*doc)->plan.value("gemm", "") == "cublas";
  }
  std::vector<std::string> ignored = BitFreeResultFields(/*allreduce=*/!ordered, cublas);
  // A GPU's description (PCI bus id, ordinal, memory), which older builds
  // wrote into the fingerprint, decides no bit under any reduction.
  ignored.insert(ignored.end(), std::begin(kDeviceDescriptionFields), std::end(kDeviceDescriptionFields));
  return ignored;
}

// The decision from result.json alone (comparability.h).
Comparability CompareResults(const std::optional<ResultDoc>& golden, const std::optional<ResultDoc>& run,
                             const std::vector<std::string>& ignored) {
  Comparability result;
  for (const auto& [doc, name] : {std::pair{&golden, "GOLDEN"}, std::pair{&run, "RUN"}}) {
    if (!*doc)
      result.reasons.push_back(std::string(name) + " has no valid result.json");
    else if ((*doc)->format != ResultDoc::Format::kDmlp || (*doc)->build.is_null())
      result.reasons.push_back(std::string(name) + "'s result.json records no build");
  }
  if (!result.reasons.empty()) return result;  // unknown
  CompareSection(kResultPlan, golden->plan, run->plan, ignored, result.reasons);
  CompareSection(kResultModel, golden->model, run->model, ignored, result.reasons);
  CompareSection(kResultBuild, golden->build, run->build, ignored, result.reasons);
  CompareSection(kResultFingerprint, golden->fingerprint, run->fingerprint, ignored, result.reasons);
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

}  // namespace

Comparability CompareSetups(const std::optional<ResultDoc>& golden, const std::optional<ResultDoc>& run,
                            const std::vector<RankEnvironment>& golden_envs,
                            const std::vector<RankEnvironment>& run_envs) {
  const std::vector<std::string> ignored = IgnoredFields(golden, run);
  Comparability result = CompareResults(golden, run, ignored);
  std::vector<std::string> env_reasons = CompareEnvironments(golden_envs, run_envs, ignored);
  if (env_reasons.empty()) return result;
  // A rank on another stack decides "not comparable" even where result.json
  // could not (missing, or only rank 0's stack): the unknown's reasons go.
  if (result.kind != Comparability::Kind::kNotComparable) result.reasons.clear();
  result.kind = Comparability::Kind::kNotComparable;
  for (std::string& reason : env_reasons) result.reasons.push_back(std::move(reason));
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
