#include "verify/state_check.h"

#include <unistd.h>

#include "common/format/error_codes.h"
#include "common/format/result_json.h"
#include "common/state_file.h"

namespace dmlp::verify {
namespace {

bool IsPlainName(const std::string& name) {
  return !name.empty() && name.size() <= 255 && name != "." && name != ".." &&
         name.find('/') == std::string::npos && name.find('\0') == std::string::npos;
}

// DigestStateFile takes a path; /proc/self/fd/N reopens exactly the file we
// checked, so a rename between the check and the read cannot redirect it.
std::string PathOfDescriptor(int fd, const std::string& fallback) {
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  return ::access(path.c_str(), R_OK) == 0 ? path : fallback;
}

// The reader's messages name the path it was given; users know the file by its name.
Status NamedAs(const Status& status, const std::string& opened, const std::string& display) {
  std::string detail = status.detail();
  for (size_t at = detail.find(opened); at != std::string::npos; at = detail.find(opened, at + display.size()))
    detail.replace(at, opened.size(), display);
  return Status::Error(status.code(), detail);
}

}  // namespace

Result<StateCheck> CheckStateFile(const RunDir& dir, const ResultDoc& doc,
                                  const std::optional<Receipt>& last_record, FindingSink& sink) {
  const std::string result = dir.Display(kResultFile);
  if (!doc.state_file) {
    sink.Add(Finding::Of("state.absent", result,
                         "no state_file: final_params_sha256 and final_opt_state_sha256 not recomputed"));
    return StateCheck("absent");
  }
  const std::string& name = *doc.state_file;
  if (!IsPlainName(name)) {
    sink.Add(Finding::Of("state.invalid", result, "state_file is not a plain file name (never opened)")
                 .Expect("state.safetensors", name.substr(0, 200)));
    return StateCheck("invalid");
  }
  const std::string display = dir.Display(name);
  DMLP_ASSIGN_OR_RETURN(RunFile file, dir.OpenFile(name));
  if (file.kind == FileKind::kAbsent) {
    sink.Add(Finding::Of("state.invalid", display, "the state file named by result.json is missing"));
    return StateCheck("invalid");
  }
  if (file.kind == FileKind::kNotRegular) {
    sink.Add(Finding::Of("file.not_regular", display, "not a regular file (not followed)"));
    return StateCheck("invalid");
  }
  const std::string opened = PathOfDescriptor(file.fd.get(), display);
  Result<StateDigests> digests = DigestStateFile(opened);
  if (!digests.ok()) {
    const Status named = NamedAs(digests.status(), opened, display);
    if (named.code() == kIoError) return named;
    sink.Add(Finding::Of("state.invalid", display, named.ToString()));
    return StateCheck("invalid");
  }
  bool match = true;
  auto compare = [&](const std::string& expected, const std::string& actual, const std::string& what) {
    if (expected == actual) return;
    match = false;
    sink.Add(Finding::Of("state.digest_mismatch", display, what).Expect(expected, actual));
  };
  if (last_record)
    compare(last_record->params_sha256, digests->state,
            "SHA-256 of the whole state differs from the last receipt's params_sha256");
  compare(doc.final_params_sha256, digests->params,
          "SHA-256 of the params differs from result.json final_params_sha256");
  compare(doc.final_opt_state_sha256, digests->opt,
          "SHA-256 of the optimizer state differs from result.json final_opt_state_sha256");
  return StateCheck(match ? "verified" : "mismatch");
}

}  // namespace dmlp::verify
