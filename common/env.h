// defines: Environment, ParseInteger, ParseFiniteDouble, RequireString, RequireInteger, RequirePositiveNumber
//
// Strict reading of configuration values, as reference/runtime.py does it:
//   missing variable          -> ENV_MISSING: NAME
//   empty or blank            -> ENV_EMPTY: NAME
//   unparsable / out of range -> ENV_INVALID: NAME ...
// Integers are plain decimal digits (a leading '-' only where negatives are
// allowed); no whitespace, no '+', no trailing garbage, no overflow.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace dmlp {

/// A name -> value map of configuration (process environment, YAML file, or a test's literal).
class Environment {
 public:
  using Map = std::map<std::string, std::string, std::less<>>;
  Environment() = default;
  explicit Environment(Map values) : values_(std::move(values)) {}
  /// Snapshot of the process environment (environ).
  static Environment FromProcess();

  std::optional<std::string> Get(std::string_view name) const;
  void Set(std::string name, std::string value) { values_[std::move(name)] = std::move(value); }
  /// Adds `other`'s entries that this one lacks (this one wins).
  void FillFrom(const Environment& other);
  const Map& values() const { return values_; }

 private:
  Map values_;
};

/// Parses decimal digits (optional '-' when min < 0) into [min, max]; the error
/// detail is a sentence without a name ("is not an integer", "must be >= 1").
Result<int64_t> ParseInteger(std::string_view text, int64_t min, int64_t max);
/// Parses a finite double with strtod semantics; whole text must be consumed.
Result<double> ParseFiniteDouble(std::string_view text);

/// ENV_MISSING / ENV_EMPTY, otherwise the value.
Result<std::string> RequireString(const Environment& env, std::string_view name);
/// ENV_MISSING / ENV_EMPTY / ENV_INVALID: NAME ..., otherwise the value in [min, max].
Result<int64_t> RequireInteger(const Environment& env, std::string_view name, int64_t min,
                               int64_t max = INT32_MAX);
/// A finite number > 0 (LEARNING_RATE).
Result<double> RequirePositiveNumber(const Environment& env, std::string_view name);

}  // namespace dmlp
