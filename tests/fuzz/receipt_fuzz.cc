// libFuzzer target: the receipt line reader and one receipt file's framing and
// step tracking. Input: the bytes of a receipt file. Besides "no crash, no
// sanitizer report", it checks three invariants:
//   - an accepted line is exactly what FormatReceiptLine writes for its values;
//   - a glued defect points inside the line;
//   - the records a stream yields have strictly increasing steps.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/receipt.h"
#include "common/receipt_reader.h"
#include "verify/receipt_stream.h"

namespace {

void CheckLine(std::string_view line, bool expect_rank) {
  dmlp::ReceiptLineParse parse = dmlp::ParseReceiptLine(line, expect_rank);
  if (parse.ok()) {
    std::string again = dmlp::FormatReceiptLine(parse.receipt);
    again.pop_back();
    if (again != line) __builtin_trap();
  }
  if (parse.defect == dmlp::ReceiptDefect::kGlued) {
    if (parse.glued_offset == 0 || parse.glued_offset >= line.size()) __builtin_trap();
    dmlp::ParseReceiptLine(line.substr(parse.glued_offset), expect_rank);
  }
}

void CheckFile(std::string_view content) {
  int fd = ::memfd_create("receipts", MFD_CLOEXEC);
  if (fd < 0) return;
  size_t written = 0;
  while (written < content.size()) {
    ssize_t got = ::write(fd, content.data() + written, content.size() - written);
    if (got <= 0) break;
    written += static_cast<size_t>(got);
  }
  ::lseek(fd, 0, SEEK_SET);
  dmlp::verify::FindingSink sink;
  dmlp::verify::ReceiptStream stream(dmlp::verify::LineReader(dmlp::verify::UniqueFd(fd), "fuzz"), "rank-0.jsonl",
                                     0, "fuzz", &sink);
  dmlp::Receipt record;
  int64_t last = 0;
  for (;;) {
    dmlp::Result<bool> more = stream.Next(&record);
    if (!more.ok() || !*more) break;
    if (record.step <= last) __builtin_trap();
    last = record.step;
  }
  if (sink.kept().size() > dmlp::verify::FindingSink::kKeepTotal) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string_view first_line = input.substr(0, input.find('\n'));
  CheckLine(first_line, true);
  CheckLine(first_line, false);
  CheckFile(input);
  return 0;
}
