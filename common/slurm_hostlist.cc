#include "common/slurm_hostlist.h"

#include <cstdint>

#include "common/env.h"
#include "common/format/error_codes.h"

namespace dmlp {
namespace {

Status Invalid(const std::string& detail) { return Status::Error(kEnvInvalid, detail); }

// One bracket's contents, "01-04,07", as the strings it stands for.
Result<std::vector<std::string>> ExpandBracket(std::string_view body) {
  std::vector<std::string> values;
  if (body.empty()) return Invalid("has an empty '[]'");
  size_t start = 0;
  while (start <= body.size()) {
    size_t comma = body.find(',', start);
    std::string_view item = body.substr(start, comma == std::string_view::npos ? body.npos : comma - start);
    size_t dash = item.find('-');
    std::string_view low_text = item.substr(0, dash);
    std::string_view high_text = dash == std::string_view::npos ? low_text : item.substr(dash + 1);
    Result<int64_t> low = ParseInteger(low_text, 0, INT32_MAX);
    Result<int64_t> high = ParseInteger(high_text, 0, INT32_MAX);
    if (!low.ok() || !high.ok())
      return Invalid("has '" + std::string(item) + "' in brackets, not a number or range");
    if (*high < *low) return Invalid("has the descending range '" + std::string(item) + "'");
    if (static_cast<size_t>(*high - *low) >= kMaxSlurmHosts)
      return Invalid("expands to more than " + std::to_string(kMaxSlurmHosts) + " hosts");
    // Zero padding is the lower bound's width: Slurm writes [08-10], not [8-10], for 08 09 10.
    const size_t width = low_text.size();
    for (int64_t value = *low; value <= *high; ++value) {
      std::string digits = std::to_string(value);
      if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
      values.push_back(std::move(digits));
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return values;
}

// One host expression (no top-level commas), appended to `hosts`.
Status ExpandExpression(std::string_view expression, std::vector<std::string>& hosts) {
  if (expression.empty()) return Invalid("has an empty host name");
  std::vector<std::string> prefixes = {""};
  size_t at = 0;
  while (at < expression.size()) {
    size_t open = expression.find('[', at);
    std::string_view literal = expression.substr(at, open == std::string_view::npos ? open : open - at);
    if (literal.find(']') != std::string_view::npos) return Invalid("has a ']' without its '['");
    for (std::string& prefix : prefixes) prefix += literal;
    if (open == std::string_view::npos) break;
    size_t close = expression.find(']', open);
    if (close == std::string_view::npos) return Invalid("has an unclosed '['");
    std::string_view body = expression.substr(open + 1, close - open - 1);
    if (body.find('[') != std::string_view::npos) return Invalid("has a '[' inside brackets");
    DMLP_ASSIGN_OR_RETURN(std::vector<std::string> values, ExpandBracket(body));
    if (prefixes.size() * values.size() + hosts.size() > kMaxSlurmHosts)
      return Invalid("expands to more than " + std::to_string(kMaxSlurmHosts) + " hosts");
    std::vector<std::string> next;
    next.reserve(prefixes.size() * values.size());
    for (const std::string& prefix : prefixes)
      for (const std::string& value : values) next.push_back(prefix + value);
    prefixes = std::move(next);
    at = close + 1;
  }
  hosts.insert(hosts.end(), prefixes.begin(), prefixes.end());
  return Status::Ok();
}

}  // namespace

Result<std::vector<std::string>> ExpandSlurmHostlist(std::string_view text) {
  if (text.empty()) return Invalid("is an empty host list");
  std::vector<std::string> hosts;
  // Top-level commas separate expressions; commas inside brackets separate numbers.
  size_t start = 0;
  int depth = 0;
  for (size_t at = 0; at <= text.size(); ++at) {
    char c = at < text.size() ? text[at] : ',';
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ' ' || c == '\t' || c == '\n') return Invalid("has white space");
    if (at < text.size() && (c != ',' || depth > 0)) continue;
    DMLP_RETURN_IF_ERROR(ExpandExpression(text.substr(start, at - start), hosts));
    start = at + 1;
  }
  return hosts;
}

Result<std::string> FirstSlurmHost(std::string_view text) {
  DMLP_ASSIGN_OR_RETURN(std::vector<std::string> hosts, ExpandSlurmHostlist(text));
  return hosts.front();
}

}  // namespace dmlp
