#include "verify/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <optional>

#include "verify/html_text.h"

namespace dmlp::verify {
namespace {

constexpr int kLeft = 80;                       // plot area starts here (room for y labels)
constexpr int kSvgWidth = kLeft + kPlotWidth + 20;
constexpr int kChartTop = 34, kChartHeight = 300;
constexpr const char* kCurveClasses[] = {"curve-a", "curve-b"};
constexpr int kStripColumns = kPlotWidth / 2;  // 2 px per column: legible, and bounds the rectangles
constexpr size_t kMaxTitledSegments = 50;      // hover titles only where they stay few

// A stretch of a strip row that is not "agrees", at pixel-column resolution.
struct StripSegment {
  int64_t first = 0, last = 0;  // steps
  uint8_t state = kRankDiffers;
};

// Folds a row's runs into kStripColumns columns (a column showing the worst
// state in it, so one differing step stays visible) and collapses equal
// neighbours. At most kStripColumns / 2 segments come out, whatever the input.
std::vector<StripSegment> StripSegments(const std::vector<StateRun>& runs, int64_t last_step) {
  const double steps_per_column = static_cast<double>(last_step) / kStripColumns;
  std::vector<uint8_t> columns(kStripColumns, kRankAgrees);
  auto rank_of = [](uint8_t state) { return state == kRankDiffers ? 2 : state == kRankAbsent ? 1 : 0; };
  for (const StateRun& run : runs) {
    // Every column the run's steps overlap: [first - 1, last) in step units.
    const int begin = std::clamp(static_cast<int>(static_cast<double>(run.first - 1) / steps_per_column), 0,
                                 kStripColumns - 1);
    const int end = std::clamp(static_cast<int>(std::ceil(static_cast<double>(run.last) / steps_per_column)) - 1,
                               begin, kStripColumns - 1);
    for (int c = begin; c <= end; ++c)
      if (rank_of(run.state) > rank_of(columns[static_cast<size_t>(c)])) columns[static_cast<size_t>(c)] = run.state;
  }
  std::vector<StripSegment> segments;
  for (int c = 0; c < kStripColumns; ++c) {
    const uint8_t state = columns[static_cast<size_t>(c)];
    if (state == kRankAgrees) continue;
    // The steps column c overlaps.
    const int64_t first = static_cast<int64_t>(std::floor(c * steps_per_column)) + 1;
    const int64_t last = std::min(last_step, std::max(first, static_cast<int64_t>(std::ceil((c + 1) * steps_per_column))));
    if (!segments.empty() && segments.back().state == state && segments.back().last + 1 >= first)
      segments.back().last = std::max(segments.back().last, last);
    else if (const int64_t from = segments.empty() ? first : std::max(first, segments.back().last + 1); from <= last)
      segments.push_back(StripSegment{from, last, state});
  }
  return segments;
}

std::string Number(double value, const char* format = "%.1f") {
  char text[48];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

std::string Steps(int64_t first, int64_t last) {
  return first == last ? "step " + std::to_string(first)
                       : "steps " + std::to_string(first) + "\xE2\x80\x93" + std::to_string(last);
}

// The x pixel of the left edge of `step` (steps are drawn as equal slots on a linear axis).
double X(const StepAxis& axis, double step) { return kLeft + axis.At(step) * (kPlotWidth - 1); }

std::vector<int64_t> StepTicks(const StepAxis& axis) {
  std::vector<int64_t> ticks;
  if (axis.log) {
    for (int64_t tick = 1; tick <= axis.last_step; tick *= 10) ticks.push_back(tick);
    return ticks;
  }
  const double raw = std::max(1.0, static_cast<double>(axis.last_step) / 6);
  const double magnitude = std::pow(10, std::floor(std::log10(raw)));
  int64_t spacing = static_cast<int64_t>(magnitude);
  for (int factor : {1, 2, 5, 10})
    if (factor * magnitude >= raw) {
      spacing = static_cast<int64_t>(factor * magnitude);
      break;
    }
  ticks.push_back(1);
  for (int64_t tick = spacing; tick <= axis.last_step; tick += spacing) ticks.push_back(tick);
  return ticks;
}

void AppendStepAxis(std::string& svg, const StepAxis& axis, int baseline,
                    const std::function<double(int64_t)>& x_of) {
  for (int64_t tick : StepTicks(axis)) {
    const std::string x = Number(x_of(tick));
    svg += "<line class=\"tick\" x1=\"" + x + "\" x2=\"" + x + "\" y1=\"" + std::to_string(baseline) + "\" y2=\"" +
           std::to_string(baseline + 5) + "\"/><text class=\"tick-label\" x=\"" + x + "\" y=\"" +
           std::to_string(baseline + 18) + "\" text-anchor=\"middle\">" + std::to_string(tick) + "</text>";
  }
  svg += "<text class=\"axis-label\" x=\"" + std::to_string(kLeft + kPlotWidth / 2) + "\" y=\"" +
         std::to_string(baseline + 34) + "\" text-anchor=\"middle\">step" + (axis.log ? " (log scale)" : "") +
         "</text>";
}

struct LossRange {
  double low = std::numeric_limits<double>::infinity(), high = -std::numeric_limits<double>::infinity();
  double Y(double loss) const { return kChartTop + kChartHeight - (loss - low) / (high - low) * kChartHeight; }
};

void AppendCurve(std::string& svg, const std::vector<CurveColumn>& columns, const LossRange& range,
                 const std::string& css_class) {
  std::string path;
  const CurveColumn* previous = nullptr;
  for (const CurveColumn& column : columns) {
    // A step missing from the curve breaks the line: a gap must not look like data.
    const bool joined = previous != nullptr && previous->last_step + 1 >= column.first_step;
    const std::string x = Number(kLeft + column.column);
    path += (joined ? "L" : "M") + x + " " + Number(range.Y(column.max));
    if (column.min != column.max) path += "L" + x + " " + Number(range.Y(column.min));
    previous = &column;
  }
  if (!path.empty()) svg += "<path class=\"" + css_class + "\" d=\"" + path + "\"/>";
}

void AppendMarker(std::string& svg, const StepAxis& axis, const StepMarker& marker, int row) {
  const std::string x = Number(X(axis, static_cast<double>(marker.step)));
  const std::string label = HtmlEscape(marker.label, 200);
  svg += "<g class=\"marker " + marker.css_class + "\"><title>" + label + "</title><line x1=\"" + x + "\" x2=\"" +
         x + "\" y1=\"" + std::to_string(kChartTop) + "\" y2=\"" + std::to_string(kChartTop + kChartHeight) +
         "\"/><text x=\"" + x + "\" y=\"" + std::to_string(12 + 14 * row) + "\" text-anchor=\"" +
         (X(axis, static_cast<double>(marker.step)) > kLeft + kPlotWidth * 0.7 ? "end" : "start") + "\">" + label +
         "</text></g>";
}

}  // namespace

StepAxis StepAxis::For(int64_t last_step) {
  StepAxis axis;
  axis.last_step = std::max<int64_t>(1, last_step);
  axis.log = axis.last_step > kLogStepsAbove;
  return axis;
}

double StepAxis::At(double step) const {
  if (last_step <= 1) return 0.5;
  if (log) return std::log10(std::max(1.0, step)) / std::log10(static_cast<double>(last_step));
  return (step - 1) / static_cast<double>(last_step - 1);
}

std::vector<CurveColumn> CurveColumns(const RunTrace& trace, const StepAxis& axis, int columns) {
  std::vector<std::optional<CurveColumn>> folded(static_cast<size_t>(columns));
  auto add = [&](const LossCell& cell) {
    if (cell.empty()) return;
    const double middle = (static_cast<double>(cell.first_step) + static_cast<double>(cell.last_step)) / 2;
    const int column = std::clamp(static_cast<int>(axis.At(middle) * (columns - 1)), 0, columns - 1);
    std::optional<CurveColumn>& slot = folded[static_cast<size_t>(column)];
    if (!slot) {
      slot = CurveColumn{column, cell.min, cell.max, cell.first_step, cell.last_step};
      return;
    }
    slot->min = std::min(slot->min, cell.min);
    slot->max = std::max(slot->max, cell.max);
    slot->first_step = std::min(slot->first_step, cell.first_step);
    slot->last_step = std::max(slot->last_step, cell.last_step);
  };
  // On a log axis the first steps spread over many columns: draw them exactly,
  // from the head, as long as the head lines up with the coarse buckets.
  const bool use_head = axis.log && trace.loss().width() <= RunTrace::kHeadSteps;
  if (use_head)
    for (const LossCell& cell : trace.loss_head().cells()) add(cell);
  for (const LossCell& cell : trace.loss().cells())
    if (!use_head || cell.first_step > RunTrace::kHeadSteps) add(cell);
  std::vector<CurveColumn> out;
  for (const auto& slot : folded)
    if (slot) out.push_back(*slot);
  return out;
}

std::string LossChartSvg(const LossChart& chart) {
  const StepAxis axis = StepAxis::For(chart.last_step);
  std::vector<std::vector<CurveColumn>> curves;
  LossRange range;
  for (const LossCurve& curve : chart.curves) {
    curves.push_back(CurveColumns(*curve.trace, axis, kPlotWidth));
    for (const CurveColumn& column : curves.back()) {
      range.low = std::min(range.low, column.min);
      range.high = std::max(range.high, column.max);
    }
  }
  if (!(range.low <= range.high)) range = LossRange{0, 1};
  const double pad = range.high > range.low ? (range.high - range.low) * 0.05 : 0.5;
  range.low -= pad;
  range.high += pad;
  const int height = kChartTop + kChartHeight + 46 + 18 * static_cast<int>(chart.curves.size());
  std::string svg = "<svg class=\"chart\" role=\"img\" viewBox=\"0 0 " + std::to_string(kSvgWidth) + " " +
                    std::to_string(height) + "\">";
  svg += "<rect class=\"plot\" x=\"" + std::to_string(kLeft) + "\" y=\"" + std::to_string(kChartTop) +
         "\" width=\"" + std::to_string(kPlotWidth) + "\" height=\"" + std::to_string(kChartHeight) + "\"/>";
  for (const LossCurve& curve : chart.curves) {
    for (const StepGap& gap : curve.trace->gaps()) {
      const double left = X(axis, static_cast<double>(gap.first));
      const double width = std::max(2.0, X(axis, static_cast<double>(gap.last + 1)) - left);
      svg += "<rect class=\"gap\" x=\"" + Number(left) + "\" y=\"" + std::to_string(kChartTop) + "\" width=\"" +
             Number(width) + "\" height=\"" + std::to_string(kChartHeight) + "\"><title>gap in " +
             HtmlEscape(curve.label, 200) + ": " + Steps(gap.first, gap.last) + "</title></rect>";
    }
  }
  for (int i = 0; i <= 4; ++i) {
    const double loss = range.low + (range.high - range.low) * i / 4;
    const std::string y = Number(range.Y(loss));
    svg += "<line class=\"grid\" x1=\"" + std::to_string(kLeft) + "\" x2=\"" + std::to_string(kLeft + kPlotWidth) +
           "\" y1=\"" + y + "\" y2=\"" + y + "\"/><text class=\"tick-label\" x=\"" + std::to_string(kLeft - 6) +
           "\" y=\"" + y + "\" text-anchor=\"end\" dominant-baseline=\"middle\">" + Number(loss, "%.4g") + "</text>";
  }
  for (size_t i = 0; i < curves.size(); ++i) AppendCurve(svg, curves[i], range, kCurveClasses[i % 2]);
  for (size_t i = 0; i < chart.markers.size(); ++i) AppendMarker(svg, axis, chart.markers[i], static_cast<int>(i));
  AppendStepAxis(svg, axis, kChartTop + kChartHeight,
                 [&](int64_t step) { return X(axis, static_cast<double>(step)); });
  for (size_t i = 0; i < chart.curves.size(); ++i) {
    const int y = kChartTop + kChartHeight + 52 + 18 * static_cast<int>(i);
    svg += "<line class=\"" + std::string(kCurveClasses[i % 2]) + "\" x1=\"" + std::to_string(kLeft) + "\" x2=\"" +
           std::to_string(kLeft + 24) + "\" y1=\"" + std::to_string(y) + "\" y2=\"" + std::to_string(y) +
           "\"/><text class=\"legend\" x=\"" + std::to_string(kLeft + 30) + "\" y=\"" + std::to_string(y + 4) +
           "\">" + HtmlEscape(chart.curves[i].label, 300) + "</text>";
  }
  return svg + "</svg>";
}

std::string AgreementStripSvg(const RunTrace& trace) {
  const std::vector<int64_t>& ranks = trace.ranks();
  const size_t rows = std::min(ranks.size(), kMaxStripRows);
  const int row_height = rows <= 16 ? 18 : std::max(4, 288 / static_cast<int>(rows));
  const int top = 6, height = top + static_cast<int>(rows) * row_height + 46;
  const int64_t last_step = std::max<int64_t>(1, trace.last_step());
  // Steps are equal slots: step s spans [s - 1, s) of last_step, scaled to the plot.
  auto left_of = [&](int64_t step) {
    return kLeft + static_cast<double>(step - 1) / static_cast<double>(last_step) * kPlotWidth;
  };
  std::string svg = "<svg class=\"strip\" role=\"img\" viewBox=\"0 0 " + std::to_string(kSvgWidth) + " " +
                    std::to_string(height) + "\">";
  for (size_t row = 0; row < rows; ++row) {
    // Ranks beyond the last row share it, showing the worst of them.
    const bool shared = row + 1 == kMaxStripRows && ranks.size() > kMaxStripRows;
    const std::string label = shared ? "ranks " + std::to_string(ranks[row]) + "\xE2\x80\x93" +
                                           std::to_string(ranks.back())
                                     : "rank " + std::to_string(ranks[row]);
    const int y = top + static_cast<int>(row) * row_height;
    const std::string h = std::to_string(row_height > 6 ? row_height - 2 : row_height);
    if (row_height >= 10)
      svg += "<text class=\"tick-label\" x=\"" + std::to_string(kLeft - 6) + "\" y=\"" +
             std::to_string(y + row_height / 2) + "\" text-anchor=\"end\" dominant-baseline=\"middle\">" + label +
             "</text>";
    svg += "<rect class=\"agrees\" x=\"" + std::to_string(kLeft) + "\" y=\"" + std::to_string(y) +
           "\" width=\"" + std::to_string(kPlotWidth) + "\" height=\"" + h + "\"/>";
    const std::vector<StripSegment> segments =
        StripSegments(trace.RankRuns(row, shared ? ranks.size() : row + 1), last_step);
    const bool titled = segments.size() <= kMaxTitledSegments;
    for (const StripSegment& segment : segments) {
      const char* what = segment.state == kRankDiffers ? "differs" : "absent";
      const double x = left_of(segment.first);
      svg += "<rect class=\"" + std::string(what) + "\" x=\"" + Number(x) + "\" y=\"" + std::to_string(y) +
             "\" width=\"" + Number(std::max(1.0, left_of(segment.last + 1) - x)) + "\" height=\"" + h + "\">";
      if (titled) svg += "<title>" + label + ": " + what + ", " + Steps(segment.first, segment.last) + "</title>";
      svg += "</rect>";
    }
  }
  AppendStepAxis(svg, StepAxis{last_step, false}, top + static_cast<int>(rows) * row_height,
                 [&](int64_t step) { return left_of(step) + kPlotWidth / (2.0 * static_cast<double>(last_step)); });
  return svg + "</svg>";
}

}  // namespace dmlp::verify
