// defines: Environment, SettingError, InvalidValue, RequireString, FileSources, RequireInteger,
//          RequirePositiveNumber
//
// Strict reading of configuration values, as reference/runtime.py does it:
//   missing variable          -> ENV_MISSING: NAME
//   empty or blank            -> ENV_EMPTY: NAME
//   unparsable / out of range -> ENV_INVALID: NAME ...
// A value that came from a --config file is the file's error, not the
// environment's: CONFIG_INVALID: FILE: name ... with the file's lower-case key,
// so the user edits the right place.
// Numbers are read by the one grammar of common/number_grammar.h: plain
// decimal digits, a fraction and an exponent for a number; no whitespace, no
// '+', no hex, no inf or nan, no trailing garbage, no overflow.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/number_grammar.h"
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
  void Set(std::string name, std::string value);
  /// Sets `name` as read from the configuration file `file`, which errors about it then name.
  void SetFromFile(std::string name, std::string value, std::string file);
  /// The file `name`'s value came from; nullopt for the environment or a value Set directly.
  std::optional<std::string> FileOf(std::string_view name) const;
  /// Adds `other`'s entries that this one lacks (this one wins), with their files.
  void FillFrom(const Environment& other);
  const Map& values() const { return values_; }

 private:
  Map values_;
  Map files_;  // name -> configuration file, for the values that came from one
};

/// An error about the setting `name`, `text` following its name: "ENV_INVALID: NAME" + text,
/// or for a value from a file "CONFIG_INVALID: FILE: name" + text.
Status SettingError(const Environment& env, std::string_view name, std::string_view text);
/// " (batch from FILE, ...)" naming those of `names` whose values came from a
/// file, for an error about several settings; "" when none did.
std::string FileSources(const Environment& env, std::initializer_list<std::string_view> names);
/// SettingError "='value' detail" for the value `name` holds.
/// REQUIRES: env holds `name`.
Status InvalidValue(const Environment& env, std::string_view name, std::string_view detail);

/// ENV_MISSING / ENV_EMPTY, otherwise the value (CONFIG_INVALID: FILE: name is empty, for a file's).
Result<std::string> RequireString(const Environment& env, std::string_view name);
/// ENV_MISSING / ENV_EMPTY / ENV_INVALID: NAME ..., otherwise the value in [min, max].
Result<int64_t> RequireInteger(const Environment& env, std::string_view name, int64_t min,
                               int64_t max = INT32_MAX);
/// A finite number > 0 (LEARNING_RATE).
Result<double> RequirePositiveNumber(const Environment& env, std::string_view name);

}  // namespace dmlp
