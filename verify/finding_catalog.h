// defines: Severity, CheckInfo, FindingCatalog, FindCheck, SeverityName
//
// Every check dmlp-verify makes, with its stable id, severity and meaning, in
// one table (finding_catalog.cc). verify/README.md lists the same table
// (`dmlp-verify --list-checks` prints it; a unit test keeps the two equal).
//
// Severity decides the exit code: any error -> 1 (FAIL); otherwise any
// incomplete -> 3 (INCOMPLETE; 0 with --allow-incomplete); warning and info
// never change it (a warning is worth a look, an info is only a fact).
#pragma once

#include <string_view>
#include <vector>

namespace dmlp::verify {

enum class Severity { kError, kIncomplete, kWarning, kInfo };

struct CheckInfo {
  std::string_view id;  // "<area>.<what>", stable
  Severity severity;
  std::string_view meaning;
};

/// All checks, grouped by area, in documentation order.
const std::vector<CheckInfo>& FindingCatalog();
/// The catalog entry for `id`, or nullptr for an unknown id.
const CheckInfo* FindCheck(std::string_view id);
/// "error", "incomplete", "warning" or "info".
std::string_view SeverityName(Severity severity);

}  // namespace dmlp::verify
