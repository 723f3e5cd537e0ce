// defines: StrictJsonParse, ParseStrictJson
//
// JSON for formats dmlp checks (result.json, the state file header): like
// nlohmann::json::parse, but a key that appears twice in one object is an
// error instead of silently keeping the last value (so a forged first entry
// cannot hide behind a valid second one), and nesting is bounded.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace dmlp {

struct StrictJsonParse {
  nlohmann::json value;  // the document when problem is empty
  std::string problem;   // "duplicate key \"x\"", "not valid JSON (error at byte N)", ...
  bool ok() const { return problem.empty(); }
};

/// Parses `text` as one JSON document; duplicate keys and depth > 64 are problems.
StrictJsonParse ParseStrictJson(std::string_view text);

}  // namespace dmlp
