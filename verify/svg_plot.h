// defines: StepAxis, CurveColumn, CurveColumns, LossCurve, StepMarker, LossChart, LossChartSvg,
//          AgreementStripSvg
//
// The HTML report's two pictures as inline SVG (no script, no external file):
//   - the loss chart: one or two curves (--against), drawn per pixel column as
//     the min..max of the losses that fall in it, so a run of 10^6 steps is at
//     most kPlotWidth columns and a one-step spike still shows; steps on a log
//     axis when the run is longer than kLogStepsAbove (a loss curve's start is
//     where it moves), markers for the first divergence and the last complete
//     step, gaps as shaded bands;
//   - the rank x step strip: a row per rank (at most kMaxStripRows; the rest
//     share the last row), green where the rank agreed with the majority, red
//     where it differed, grey where it had no record, equal neighbours drawn
//     as one rectangle.
// Every label that comes from the run passes through HtmlEscape.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "verify/run_trace.h"

namespace dmlp::verify {

inline constexpr int kPlotWidth = 1000;         // pixel columns of both pictures
inline constexpr int64_t kLogStepsAbove = 1000;
inline constexpr size_t kMaxStripRows = 64;

/// Steps 1..last_step onto [0, 1]: linear, or log10 for long runs.
struct StepAxis {
  int64_t last_step = 1;
  bool log = false;
  static StepAxis For(int64_t last_step);
  double At(double step) const;
};

/// One pixel column of a curve: the extremes of the losses that fall in it.
struct CurveColumn {
  int column = 0;
  double min = 0, max = 0;
  int64_t first_step = 0, last_step = 0;
};

/// A trace's curve folded to at most `columns` pixel columns, in column order.
std::vector<CurveColumn> CurveColumns(const RunTrace& trace, const StepAxis& axis, int columns);

struct LossCurve {
  std::string label;  // untrusted: escaped when drawn
  const RunTrace* trace = nullptr;
};

struct StepMarker {
  int64_t step = 0;
  std::string label;      // untrusted: escaped when drawn
  std::string css_class;  // "divergence", "complete", "runs"
};

struct LossChart {
  std::vector<LossCurve> curves;  // one, or two with --against
  std::vector<StepMarker> markers;
  int64_t last_step = 0;          // the axis' end: the highest step of any run
};

/// The loss chart as an <svg> element.
std::string LossChartSvg(const LossChart& chart);
/// The rank x step strip of one run as an <svg> element.
std::string AgreementStripSvg(const RunTrace& trace);

}  // namespace dmlp::verify
