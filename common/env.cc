#include "common/env.h"

#include <cctype>

#include "common/quote.h"

extern char** environ;

namespace dmlp {

Environment Environment::FromProcess() {
  Environment env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    size_t eq = text.find('=');
    if (eq == std::string_view::npos) continue;
    env.values_.emplace(std::string(text.substr(0, eq)), std::string(text.substr(eq + 1)));
  }
  return env;
}

std::optional<std::string> Environment::Get(std::string_view name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

void Environment::Set(std::string name, std::string value) {
  files_.erase(name);
  values_[std::move(name)] = std::move(value);
}

void Environment::SetFromFile(std::string name, std::string value, std::string file) {
  files_[name] = std::move(file);
  values_[std::move(name)] = std::move(value);
}

std::optional<std::string> Environment::FileOf(std::string_view name) const {
  auto it = files_.find(name);
  if (it == files_.end()) return std::nullopt;
  return it->second;
}

void Environment::FillFrom(const Environment& other) {
  for (const auto& [name, value] : other.values_) {
    if (!values_.emplace(name, value).second) continue;
    if (std::optional<std::string> file = other.FileOf(name)) files_[name] = *file;
  }
}

namespace {

// The file's key for a variable: its name in lower case (LoadConfigFile).
std::string ConfigKey(std::string_view name) {
  std::string key(name);
  for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return key;
}

}  // namespace

Status SettingError(const Environment& env, std::string_view name, std::string_view text) {
  std::optional<std::string> file = env.FileOf(name);
  if (!file) return Status::Error("ENV_INVALID", std::string(name) + std::string(text));
  return Status::Error("CONFIG_INVALID", *file + ": " + ConfigKey(name) + std::string(text));
}

std::string FileSources(const Environment& env, std::initializer_list<std::string_view> names) {
  std::string sources;
  for (std::string_view name : names) {
    std::optional<std::string> file = env.FileOf(name);
    if (file) sources += (sources.empty() ? " (" : ", ") + ConfigKey(name) + " from " + *file;
  }
  return sources.empty() ? sources : sources + ")";
}

Status InvalidValue(const Environment& env, std::string_view name, std::string_view detail) {
  return SettingError(env, name, "=" + QuoteValue(env.Get(name).value_or("")) + " " + std::string(detail));
}

Result<std::string> RequireString(const Environment& env, std::string_view name) {
  std::optional<std::string> value = env.Get(name);
  if (!value) return Status::Error("ENV_MISSING", std::string(name));
  if (value->find_first_not_of(" \t\r\n\v\f") == std::string::npos) {
    if (env.FileOf(name)) return SettingError(env, name, " is empty");
    return Status::Error("ENV_EMPTY", std::string(name));
  }
  // A NUL from a YAML "\0" would cut a path short where the C library reads
  // it, while result.json records the whole string; no setting needs one.
  if (HasControlCharacter(*value)) return InvalidValue(env, name, "holds a control character");
  return *value;
}

Result<int64_t> RequireInteger(const Environment& env, std::string_view name, int64_t min,
                               int64_t max) {
  DMLP_ASSIGN_OR_RETURN(std::string text, RequireString(env, name));
  Result<int64_t> value = ParseInteger(text, min, max);
  if (!value.ok()) return InvalidValue(env, name, value.status().detail());
  return value;
}

Result<double> RequirePositiveNumber(const Environment& env, std::string_view name) {
  DMLP_ASSIGN_OR_RETURN(std::string text, RequireString(env, name));
  Result<double> value = ParseFiniteDouble(text);
  if (value.ok() && *value <= 0) value = Status::Error("ENV_INVALID", "must be finite and > 0");
  if (!value.ok()) return InvalidValue(env, name, value.status().detail());
  return value;
}

}  // namespace dmlp
