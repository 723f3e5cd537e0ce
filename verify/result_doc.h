// defines: ResultDoc, ResultParse, ParseResultJson, kMaxResultJsonBytes
//
// result.json as the reference writes it (json.dumps(doc, sort_keys=True,
// indent=2) + "\n") and as dmlp writes it (`jax_version` -> `dmlp_version`,
// plus `fingerprint`, `state_file`). The parser is strict where nlohmann is
// lenient: duplicate keys anywhere, nesting deeper than 64, or integers written
// as 1.0 / "1" / true make the document invalid (result.invalid). Fields it
// does not know are allowed (dmlp's `build` among them). Checks against the receipts are in result_check.h.
//
// Required (both formats): complete (bool), steps (int >= 0), final_loss
// (string), params_sha256, final_params_sha256, final_opt_state_sha256 (64
// lower-case hex), processes (int >= 1), rank_files (array of strings), plan
// (object with integer steps), dataset, optimizer, digest_policy, digest_cost
// (strings), model (object), updates_per_metric_step and
// heartbeat_timeout_seconds (int), and exactly one of jax_version (reference)
// or dmlp_version (dmlp). dmlp also requires fingerprint (object) and
// state_file (string); the reference may name a state_file too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace dmlp::verify {

inline constexpr size_t kMaxResultJsonBytes = 1 << 20;

struct ResultDoc {
  enum class Format { kReference, kDmlp };
  Format format = Format::kReference;
  std::string version;  // jax_version or dmlp_version
  bool complete = false;
  int64_t steps = 0;
  int64_t plan_steps = 0;
  std::string final_loss;
  std::string params_sha256;
  std::string final_params_sha256;
  std::string final_opt_state_sha256;
  int64_t processes = 0;
  std::vector<std::string> rank_files;
  std::optional<int64_t> model_processes;  // model.processes when present
  std::optional<std::string> state_file;
  // What --against compares to decide whether two runs must match
  // (comparability.h): null where the document has none.
  nlohmann::json plan, model, fingerprint, build;
  // plan, model and fingerprint flattened for people ("plan.batch" -> "8"):
  // strings as they are, other values as JSON text. Shown, never checked.
  std::vector<std::pair<std::string, std::string>> settings;
};

struct ResultParse {
  std::optional<ResultDoc> doc;  // set when the document is valid
  std::string problem;           // why it is not (result.invalid), when doc is empty
};

/// Parses and validates result.json's text (no I/O; any bytes are safe input).
ResultParse ParseResultJson(std::string_view text);
/// "reference" or "dmlp".
std::string_view FormatName(ResultDoc::Format format);

}  // namespace dmlp::verify
