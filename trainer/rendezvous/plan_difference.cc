#include "trainer/rendezvous/plan_difference.h"

#include <optional>
#include <utility>
#include <vector>

namespace dmlp {
namespace {

using Items = std::vector<std::pair<std::string, std::string>>;

// Splits "A=1\nB=2" or "A=1;B=2" into items; nullopt when it is not such a list.
std::optional<Items> ParseItems(std::string_view text) {
  Items items;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find_first_of("\n;", start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view item = text.substr(start, end - start);
    if (!item.empty()) {
      size_t eq = item.find('=');
      if (eq == 0 || eq == std::string_view::npos) return std::nullopt;
      std::string name(item.substr(0, eq));
      for (const auto& existing : items) {
        if (existing.first == name) return std::nullopt;
      }
      items.emplace_back(std::move(name), std::string(item.substr(eq + 1)));
    }
    start = end + 1;
  }
  if (items.empty()) return std::nullopt;
  return items;
}

const std::string* Find(const Items& items, const std::string& name) {
  for (const auto& [key, value] : items) {
    if (key == name) return &value;
  }
  return nullptr;
}

}  // namespace

std::string DescribePlanDifference(std::string_view rank0_fingerprint, std::string_view other_fingerprint,
                                   std::string_view reference) {
  const std::string has = " (" + std::string(reference) + " has ";
  std::optional<Items> ours = ParseItems(rank0_fingerprint);
  std::optional<Items> theirs = ParseItems(other_fingerprint);
  if (ours && theirs) {
    for (const auto& [name, value] : *ours) {
      const std::string* other = Find(*theirs, name);
      if (other == nullptr) return name + " missing" + has + name + "=" + value + ")";
      if (*other != value) return name + "=" + *other + has + name + "=" + value + ")";
    }
    for (const auto& [name, value] : *theirs) {
      if (Find(*ours, name) == nullptr) return name + "=" + value + has + "no " + name + ")";
    }
  }
  return "fingerprint \"" + std::string(other_fingerprint) + "\"" + has + "\"" +
         std::string(rank0_fingerprint) + "\")";
}

}  // namespace dmlp
