#include "launch/line_prefixer.h"

#include <utility>

namespace dmlp {

LinePrefixer::LinePrefixer(std::string prefix, size_t max_line_bytes)
    : prefix_(std::move(prefix)), max_line_bytes_(max_line_bytes == 0 ? 1 : max_line_bytes) {}

void LinePrefixer::Emit(std::string_view line_without_newline, std::string& out) const {
  out.append(prefix_);
  out.append(line_without_newline);
  out.push_back('\n');
}

std::string LinePrefixer::Feed(std::string_view data) {
  std::string out;
  while (!data.empty()) {
    size_t newline = data.find('\n');
    std::string_view piece = newline == std::string_view::npos ? data : data.substr(0, newline);
    // An overlong line is cut every max_line_bytes_ bytes, counted from its
    // start, so the output does not depend on where reads happened to end.
    while (pending_.size() + piece.size() > max_line_bytes_) {
      size_t take = max_line_bytes_ - pending_.size();
      pending_.append(piece.substr(0, take));
      Emit(pending_, out);
      pending_.clear();
      piece.remove_prefix(take);
    }
    if (newline == std::string_view::npos) {
      pending_.append(piece);
      break;
    }
    if (pending_.empty()) {
      Emit(piece, out);  // common case: no copy into pending_
    } else {
      pending_.append(piece);
      Emit(pending_, out);
      pending_.clear();
    }
    data.remove_prefix(newline + 1);
  }
  return out;
}

std::string LinePrefixer::Finish() {
  std::string out;
  if (!pending_.empty()) Emit(pending_, out);
  pending_.clear();
  return out;
}

}  // namespace dmlp
