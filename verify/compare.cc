#include "verify/compare.h"

namespace dmlp::verify {
namespace {

// Reads the rest of a stream; returns its last accepted step (or `last` if none).
Result<int64_t> DrainLastStep(ReceiptStream& stream, Receipt& record, int64_t last) {
  for (;;) {
    DMLP_ASSIGN_OR_RETURN(bool more, stream.Next(&record));
    if (!more) return last;
    last = record.step;
  }
}

}  // namespace

Result<std::optional<Divergence>> CompareRuns(const RunDir& a, const std::string& a_name, int64_t a_rank,
                                              const RunDir& b, const std::string& b_name, int64_t b_rank,
                                              FindingSink& sink) {
  // Silent streams: each run's own defects were reported when it was verified.
  DMLP_ASSIGN_OR_RETURN(auto stream_a, OpenReceiptStream(a, a_name, a_rank, nullptr));
  DMLP_ASSIGN_OR_RETURN(auto stream_b, OpenReceiptStream(b, b_name, b_rank, nullptr));
  Receipt record_a, record_b;
  DMLP_ASSIGN_OR_RETURN(bool has_a, stream_a->Next(&record_a));
  DMLP_ASSIGN_OR_RETURN(bool has_b, stream_b->Next(&record_b));
  int64_t last_a = 0, last_b = 0;
  while (has_a && has_b) {
    std::optional<std::string> why;
    std::string expected, actual, differs_in;
    const int64_t step = std::min(record_a.step, record_b.step);
    const bool hash_differs = record_a.params_sha256 != record_b.params_sha256;
    const bool loss_differs = record_a.loss != record_b.loss;
    if (record_a.step != record_b.step) {
      why = "step " + std::to_string(step) + " is only in " + (record_a.step < record_b.step ? a.path() : b.path());
      expected = "step " + std::to_string(record_a.step);
      actual = "step " + std::to_string(record_b.step);
      differs_in = "step";
    } else if (hash_differs) {
      why = "params_sha256 differs at step " + std::to_string(step);
      expected = record_a.params_sha256;
      actual = record_b.params_sha256;
      differs_in = loss_differs ? "both" : "params_sha256";
    } else if (loss_differs) {
      differs_in = "loss";
      why = "loss differs at step " + std::to_string(step);
      expected = record_a.loss;
      actual = record_b.loss;
    }
    if (why) {
      sink.Add(Finding::Of("against.differs", b.Display(b_name), *why + " (expected: " + a.path() + ")")
                   .AtStep(step)
                   .Expect(expected, actual));
      return std::optional<Divergence>(Divergence{step, "runs", {}, {a.path(), b.path()}, differs_in});
    }
    last_a = record_a.step;
    last_b = record_b.step;
    DMLP_ASSIGN_OR_RETURN(has_a, stream_a->Next(&record_a));
    DMLP_ASSIGN_OR_RETURN(has_b, stream_b->Next(&record_b));
  }
  if (has_a || has_b) {
    if (has_a) {
      DMLP_ASSIGN_OR_RETURN(last_a, DrainLastStep(*stream_a, record_a, record_a.step));
    }
    if (has_b) {
      DMLP_ASSIGN_OR_RETURN(last_b, DrainLastStep(*stream_b, record_b, record_b.step));
    }
    const std::string& shorter = has_a ? b.path() : a.path();
    sink.Add(Finding::Of("against.prefix", b.Display(b_name),
                         shorter + " is a strict prefix of the other run: equal up to step " +
                             std::to_string(std::min(last_a, last_b)))
                 .AtStep(std::min(last_a, last_b) + 1)
                 .Expect(std::to_string(last_a) + " steps", std::to_string(last_b) + " steps"));
  }
  return std::optional<Divergence>();
}

}  // namespace dmlp::verify
