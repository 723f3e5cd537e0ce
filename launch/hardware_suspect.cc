#include "launch/hardware_suspect.h"

#include <cstddef>

namespace dmlp {
namespace {

// "1 and 2", "1, 2 and 3": 1-based attempt numbers.
std::string AttemptList(const std::vector<size_t>& indices) {
  std::string list;
  for (size_t i = 0; i < indices.size(); ++i) {
    if (i > 0) list += i + 1 == indices.size() ? " and " : ", ";
    list += std::to_string(indices[i] + 1);
  }
  return list;
}

// A line that did not say the step or the ranks matches nothing, and differs from nothing either.
bool Comparable(const Divergence& divergence) {
  return divergence.step.has_value() && !divergence.ranks.empty();
}

}  // namespace

std::vector<std::string> HardwareSuspectLines(const std::vector<JobReport>& attempts) {
  std::vector<std::string> lines;
  std::vector<bool> repeated(attempts.size(), false);
  for (size_t first = 0; first < attempts.size(); ++first) {
    const std::optional<Divergence>& place = attempts[first].divergence;
    if (!place || repeated[first]) continue;
    std::vector<size_t> group = {first};
    for (size_t later = first + 1; later < attempts.size(); ++later) {
      const std::optional<Divergence>& other = attempts[later].divergence;
      if (other && place->SamePlace(*other)) group.push_back(later);
    }
    if (group.size() < 2) continue;
    for (size_t index : group) repeated[index] = true;
    // The latest attempt's labels: the device the rank ran on most recently.
    const Divergence& latest = *attempts[group.back()].divergence;
    lines.push_back("hardware suspect: " + DivergencePlace(latest) + " in attempts " +
                    AttemptList(group) + ", on " + DescribeDevices(latest));
  }
  std::optional<size_t> previous;  // the last attempt so far that diverged
  for (size_t index = 0; index < attempts.size(); ++index) {
    const std::optional<Divergence>& divergence = attempts[index].divergence;
    if (!divergence) continue;
    if (previous && !repeated[index]) {
      const Divergence& earlier = *attempts[*previous].divergence;
      std::string verdict = Comparable(*divergence) && Comparable(earlier)
                                ? "): not a hardware suspect"
                                : "): cannot tell whether it repeats (step or ranks unknown)";
      lines.push_back("attempt " + std::to_string(index + 1) + ": " +
                      DescribeDivergence(*divergence) + ", not as in attempt " +
                      std::to_string(*previous + 1) + " (" + DivergencePlace(earlier) + verdict);
    }
    previous = index;
  }
  return lines;
}

}  // namespace dmlp
