// defines: Status, Result<T>, DMLP_RETURN_IF_ERROR, DMLP_ASSIGN_OR_RETURN
//
// Errors are values. A Status carries a stable, upper-case code that users and
// tests can rely on (`ENV_MISSING`, `OUTPUT_EXISTS`, `NCCL_ERROR`, ...) and a
// free-form detail. ToString() is the exact text a program prints after
// "<program>: error: ", e.g. "ENV_MISSING: STEPS".
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace dmlp {

class [[nodiscard]] Status {
 public:
  /// The success value.
  Status() = default;
  /// An error with a stable code (never empty) and an optional detail.
  static Status Error(std::string code, std::string detail = {});
  static Status Ok() { return Status(); }

  bool ok() const { return code_.empty(); }
  const std::string& code() const { return code_; }
  const std::string& detail() const { return detail_; }
  /// "CODE: detail", "CODE" without a detail, "OK" for success.
  std::string ToString() const;
  /// Prefixes context to the detail, keeping the code: "CODE: context: detail".
  Status WithContext(const std::string& context) const;

  // Spelled out, not defaulted: a defaulted comparison is C++20, and this
  // header is also compiled as C++17 (the CUDA kernels under CUDA 11.8's nvcc,
  // tools/gpu-sim.sh). Equal when code and detail are.
  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.detail_ == b.detail_;
  }
  friend bool operator!=(const Status& a, const Status& b) { return !(a == b); }

 private:
  std::string code_;
  std::string detail_;
};

/// A value or an error Status. REQUIRES: never built from an ok Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}                      // NOLINT
  Result(Status status) : data_(std::move(status)) {}               // NOLINT

  bool ok() const { return std::holds_alternative<T>(data_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(data_);
  }
  T& value() & { return std::get<T>(data_); }
  const T& value() const& { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> data_;
};

}  // namespace dmlp

#define DMLP_STATUS_CONCAT_INNER(a, b) a##b
#define DMLP_STATUS_CONCAT(a, b) DMLP_STATUS_CONCAT_INNER(a, b)

/// Returns the Status from the enclosing function when `expr` is an error.
#define DMLP_RETURN_IF_ERROR(expr)                    \
  do {                                                \
    ::dmlp::Status dmlp_status_ = (expr);             \
    if (!dmlp_status_.ok()) return dmlp_status_;      \
  } while (0)

/// `DMLP_ASSIGN_OR_RETURN(auto x, MakeX());` declares x from a Result or returns its error.
#define DMLP_ASSIGN_OR_RETURN(decl, expr) \
  DMLP_ASSIGN_OR_RETURN_IMPL(DMLP_STATUS_CONCAT(dmlp_result_, __LINE__), decl, expr)
#define DMLP_ASSIGN_OR_RETURN_IMPL(tmp, decl, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  decl = std::move(tmp).value()
