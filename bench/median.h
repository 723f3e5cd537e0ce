// defines: Median
//
// The benchmarks' summary of repeated timings: the middle value (the upper of
// the two middle ones for an even count), 0 for none.
#pragma once

#include <algorithm>
#include <vector>

namespace dmlp::bench {

inline double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace dmlp::bench
