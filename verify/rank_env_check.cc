#include "verify/rank_env_check.h"

#include <sys/stat.h>

#include <set>

#include "common/file_util.h"
#include "common/format/rank_env.h"
#include "common/strict_json.h"

namespace dmlp::verify {
namespace {

using json = nlohmann::json;

void Flatten(const json& doc, const std::string& prefix, std::map<std::string, std::string>& out) {
  if (doc.is_object()) {
    for (const auto& [key, value] : doc.items()) Flatten(value, prefix + "." + key, out);
  } else {
    out[prefix] = doc.dump(-1, ' ', false, json::error_handler_t::replace);
  }
}

// The whole recorded stack of a line, for "what changed" between two lines of one rank.
std::map<std::string, std::string> FullStack(const EnvRecord& record) {
  std::map<std::string, std::string> fields;
  Flatten(record.device, kEnvDevice, fields);
  Flatten(record.stack, kEnvStack, fields);
  Flatten(record.build, kEnvBuild, fields);
  return fields;
}

// "device.name: \"A\" -> \"B\"; ..." for every field that differs.
std::string Changes(const std::map<std::string, std::string>& before,
                    const std::map<std::string, std::string>& after) {
  std::string text;
  auto add = [&text](const std::string& field, const std::string& from, const std::string& to) {
    text += (text.empty() ? "" : "; ") + field + ": " + from + " -> " + to;
  };
  for (const auto& [field, value] : before) {
    auto other = after.find(field);
    if (other == after.end()) add(field, value, "(absent)");
    else if (other->second != value) add(field, value, other->second);
  }
  for (const auto& [field, value] : after)
    if (!before.contains(field)) add(field, "(absent)", value);
  return text;
}

// Why `text` is not a valid record of `rank`'s file, or "".
std::string Parse(const std::string& text, int64_t rank, EnvRecord& record) {
  // Strict: a key given twice is a damaged line, not its last value.
  StrictJsonParse parse = ParseStrictJson(text);
  if (!parse.ok() && parse.problem.starts_with("duplicate key")) return parse.problem;
  const json& doc = parse.value;
  if (!parse.ok() || !doc.is_object()) return "not one JSON object";
  for (const char* key : {kEnvEvent, kEnvTime, kEnvHost, kEnvBootId})
    if (!doc.contains(key) || !doc[key].is_string()) return std::string(key) + " is missing or not a string";
  for (const char* key : {kEnvRank, kEnvAfterStep})
    if (!doc.contains(key) || !doc[key].is_number_integer()) return std::string(key) + " is missing or not an integer";
  for (const char* key : {kEnvDevice, kEnvStack, kEnvBuild})
    if (!doc.contains(key) || !doc[key].is_object()) return std::string(key) + " is missing or not an object";
  if (doc[kEnvRank].get<int64_t>() != rank)
    return std::string(kEnvRank) + " " + doc[kEnvRank].dump() + " in the file of rank " + std::to_string(rank);
  record.event = doc[kEnvEvent].get<std::string>();
  if (record.event != kEnvEventStart && record.event != kEnvEventResume && record.event != kEnvEventRestored)
    return std::string(kEnvEvent) + " is not " + kEnvEventStart + ", " + kEnvEventResume + " or " + kEnvEventRestored;
  if (doc.contains(kEnvWhy) && !doc[kEnvWhy].is_string()) return std::string(kEnvWhy) + " is not a string";
  record.after_step = doc[kEnvAfterStep].get<int64_t>();
  if (record.after_step < 0) return std::string(kEnvAfterStep) + " is negative";
  record.time = doc[kEnvTime].get<std::string>();
  record.host = doc[kEnvHost].get<std::string>();
  record.boot_id = doc[kEnvBootId].get<std::string>();
  record.why = doc.value(kEnvWhy, "");
  record.device = doc[kEnvDevice];
  record.stack = doc[kEnvStack];
  record.build = doc[kEnvBuild];
  return "";
}

Status ReadOne(const RunDir& dir, int64_t rank, const std::string& name, FindingSink& sink,
               RankEnvironment& env) {
  env.rank = rank;
  env.name = name;
  DMLP_ASSIGN_OR_RETURN(RunFile file, dir.OpenFile(name));
  if (file.kind == FileKind::kAbsent) return Status::Ok();  // gone since the listing
  if (file.kind == FileKind::kNotRegular) {
    sink.Add(Finding::Of("env.damaged", dir.Display(name), "not a regular file (not followed)"));
    return Status::Ok();
  }
  struct stat info {};
  if (::fstat(file.fd.get(), &info) == 0 && static_cast<uint64_t>(info.st_size) > kMaxEnvFileBytes) {
    sink.Add(Finding::Of("env.damaged", dir.Display(name),
                         std::to_string(info.st_size) + " bytes, more than " + std::to_string(kMaxEnvFileBytes) +
                             " (not read)"));
    return Status::Ok();
  }
  DMLP_ASSIGN_OR_RETURN(std::string text, ReadFdToString(file.fd.get(), dir.Display(name)));
  if (text.size() > kMaxEnvFileBytes) text.resize(kMaxEnvFileBytes);  // grew since fstat
  size_t start = 0;
  for (int64_t number = 1; start < text.size(); ++number) {
    const size_t end = text.find('\n', start);
    const bool torn = end == std::string::npos;
    const std::string line = text.substr(start, torn ? std::string::npos : end - start);
    start = torn ? text.size() : end + 1;
    EnvRecord record;
    record.line = number;
    std::string problem = torn ? "the last line has no newline (a torn write)" : Parse(line, rank, record);
    if (problem.empty() && line.find('\0') != std::string::npos) problem = "a NUL byte in the line";
    if (!problem.empty()) {
      ++env.damaged_lines;
      sink.Add(Finding::Of("env.damaged", dir.Display(name), problem + " (line skipped)").AtLine(number));
      continue;
    }
    env.records.push_back(std::move(record));
  }
  return Status::Ok();
}

void CheckStackChanges(const RunDir& dir, const RankEnvironment& env, FindingSink& sink) {
  for (size_t i = 1; i < env.records.size(); ++i) {
    const EnvRecord& now = env.records[i];
    const std::string changes = Changes(FullStack(env.records[i - 1]), FullStack(now));
    if (changes.empty()) continue;
    sink.Add(Finding::Of("env.stack_changed", dir.Display(env.name),
                         "rank " + std::to_string(env.rank) + " line " + std::to_string(now.line) + " (" +
                             now.event + " after step " + std::to_string(now.after_step) + "): " + changes)
                 .AtLine(now.line));
  }
}

void CheckMixedDevices(const RunDir& dir, const std::vector<RankEnvironment>& envs, FindingSink& sink) {
  std::map<std::string, std::vector<int64_t>> ranks_by_device;
  for (const RankEnvironment& env : envs) {
    if (env.records.empty()) continue;
    const json& device = env.records.back().device;
    ranks_by_device[device.value(kEnvDeviceKind, "") + " " + device.value(kEnvDeviceName, "")].push_back(env.rank);
  }
  if (ranks_by_device.size() < 2) return;
  std::string text;
  for (const auto& [device, ranks] : ranks_by_device) {
    text += (text.empty() ? "" : "; ") + device + ": rank";
    for (int64_t rank : ranks) text += " " + std::to_string(rank);
  }
  sink.Add(Finding::Of("env.mixed_devices", dir.path(), "ranks compute on different devices: " + text));
}

}  // namespace

Result<std::vector<RankEnvironment>> ReadEnvironments(const RunDir& dir, const DirListing& listing,
                                                      FindingSink& sink) {
  std::vector<RankEnvironment> envs;
  for (const auto& [rank, name] : listing.env_files) {
    RankEnvironment env;
    DMLP_RETURN_IF_ERROR(ReadOne(dir, rank, name, sink, env));
    CheckStackChanges(dir, env, sink);
    envs.push_back(std::move(env));
  }
  CheckMixedDevices(dir, envs, sink);
  return envs;
}

std::string DescribeEnvironment(const RankEnvironment& env) {
  if (env.records.empty()) return "no valid line (" + std::to_string(env.damaged_lines) + " damaged)";
  const EnvRecord& last = env.records.back();
  auto text = [&last](const char* key) {
    return last.device.contains(key) && last.device[key].is_string() ? last.device[key].get<std::string>() : "";
  };
  std::string line = "host " + last.host + ", " + text(kEnvDeviceKind) + " " + text(kEnvDeviceName);
  if (!text(kEnvDeviceUuid).empty()) line += " " + text(kEnvDeviceUuid);
  if (!text(kEnvDevicePciBusId).empty()) line += " (" + text(kEnvDevicePciBusId) + ")";
  if (!text(kEnvDeviceDriver).empty()) line += ", driver " + text(kEnvDeviceDriver);
  const size_t count = env.records.size();
  line += "; " + std::to_string(count) + (count == 1 ? " (re)start: " : " (re)starts: ");
  constexpr size_t kListed = 4;  // the first and the last few
  for (size_t i = 0; i < count; ++i) {
    if (count > kListed && i > 0 && i < count - (kListed - 1)) {
      if (i == 1) line += ", ...";
      continue;
    }
    const EnvRecord& record = env.records[i];
    line += (i == 0 ? "" : ", ") + record.event;
    if (record.event != kEnvEventStart) line += " after step " + std::to_string(record.after_step);
    if (!record.why.empty()) line += " (" + record.why + ")";
  }
  if (env.damaged_lines > 0) line += "; " + std::to_string(env.damaged_lines) + " damaged line(s)";
  return line;
}

nlohmann::json EnvironmentsToJson(const std::vector<RankEnvironment>& envs) {
  json out = json::array();
  for (const RankEnvironment& env : envs) {
    json lines = json::array();
    for (const EnvRecord& record : env.records)
      lines.push_back({{"line", record.line},
                       {"event", record.event},
                       {"after_step", record.after_step},
                       {"time", record.time},
                       {"host", record.host},
                       {"boot_id", record.boot_id},
                       {"why", record.why.empty() ? json(nullptr) : json(record.why)},
                       {"device", record.device}});
    out.push_back({{"rank", env.rank}, {"file", env.name}, {"damaged_lines", env.damaged_lines},
                   {"lines", std::move(lines)}});
  }
  return out;
}

std::map<std::string, std::string> StackSignature(const EnvRecord& record) {
  std::map<std::string, std::string> fields;
  for (const char* key : {kEnvDeviceKind, kEnvDeviceName, kEnvDeviceDriver})
    fields[std::string(kEnvDevice) + "." + key] = record.device.contains(key) ? record.device[key].dump() : "(absent)";
  Flatten(record.stack, "fingerprint", fields);
  Flatten(record.build, kEnvBuild, fields);
  for (const char* ignored : {"fingerprint.blas.threads", "fingerprint.blas.isa", "fingerprint.collectives",
                              "fingerprint.transport", "build.image_id"})
    fields.erase(ignored);
  for (const char* ignored : kDeviceDescriptionFields) fields.erase(ignored);
  return fields;
}

}  // namespace dmlp::verify
