#include "verify/finding_catalog.h"

namespace dmlp::verify {
namespace {

constexpr Severity E = Severity::kError;
constexpr Severity I = Severity::kIncomplete;
constexpr Severity W = Severity::kWarning;
constexpr Severity N = Severity::kInfo;

// The meaning column is what --list-checks and verify/README.md print.
const std::vector<CheckInfo> kCatalog = {
    // One line of a receipt file (rank-N.jsonl or metrics.jsonl).
    {"line.torn_last", I, "the last line of a file is cut short (no newline, or JSON that ends early); its record is not counted"},
    {"line.torn_glued", E, "a record cut short with another record glued to it, not at the end of the file"},
    {"line.truncated", E, "a line ends inside its JSON object, not at the end of the file"},
    {"line.too_long", E, "a line longer than 4096 bytes (not parsed)"},
    {"line.empty", E, "an empty line"},
    {"line.nul", E, "a NUL byte in a line"},
    {"line.nul_tail", I, "the file ends in NUL bytes from a line boundary on: receipts lost when a process was restored (steps estimated)"},
    {"line.bom", E, "a line starts with a UTF-8 byte order mark"},
    {"line.not_json", E, "a line is not one JSON object"},
    {"line.duplicate_key", E, "a key appears twice in one record"},
    {"line.field_missing", E, "a record lacks loss, params_sha256, step or (rank files) rank"},
    {"line.field_extra", E, "a record has a field besides those (rank is extra in metrics.jsonl)"},
    {"line.field_type", E, "loss or params_sha256 is not a string, or step or rank is not a JSON integer (1.0, \"1\", true)"},
    {"line.field_range", E, "step < 1, rank < 0, or either above 2^53"},
    {"line.hash_format", E, "params_sha256 is not 64 lower-case hex digits"},
    {"line.loss_nonfinite", E, "loss is nan or inf"},
    {"line.loss_not_repr", E, "loss is not Python's repr() of the number it denotes"},
    {"line.loss_not_float32", E, "loss is not a float32 value widened to double"},
    {"line.not_canonical", E, "a valid record whose bytes differ from json.dumps(record, sort_keys=True)"},
    {"rank.field_mismatch", E, "a record's rank differs from the N of its file rank-N.jsonl"},
    // Files of the run directory.
    {"file.not_regular", E, "a receipt, result or state file is a symlink, directory or device (never followed)"},
    {"file.too_large", E, "a receipt file (rank-N.jsonl, metrics.jsonl) is larger than result.json's steps allow (steps x 4097 bytes): refused from its size, never read"},
    {"ranks.none", E, "no receipts beside a result.json: no rank-N.jsonl file at all, or receipt files without a record"},
    {"ranks.not_started", I, "no rank-N.jsonl file yet and no result.json: a job starting up (before or after it takes dmlp.lock), or one stopped before creating them"},
    {"ranks.no_record", I, "the receipt files exist but hold no record yet, and there is no result.json (a job before its first step)"},
    {"run.changing", I, "receipt files were created, renamed or removed while being read, in 10 passes in a row (a job starting or resuming): verify again"},
    {"ranks.missing_file", E, "rank-N.jsonl is missing for a rank in 0..P-1 of a result.json"},
    {"ranks.not_created", I, "rank-N.jsonl is missing for a rank below the highest rank file present, and there is no result.json (a job whose ranks are still creating their receipt files, or a start stopped by a signal)"},
    {"ranks.extra_file", E, "rank-N.jsonl exists for N >= P (result.json's processes)"},
    {"ranks.bad_file_name", E, "a rank-*.jsonl name that is not rank-<decimal without leading zeros>.jsonl"},
    {"ranks.too_many", E, "more than 1024 rank files"},
    {"ranks.hash_divergence", E, "ranks disagree on params_sha256 at a step (first step; the ranks that differ from the majority, or all without one, as dmlp-train's RANK_DIVERGED names them; rank groups)"},
    {"ranks.loss_divergence", E, "ranks disagree on loss at a step (first step and rank groups reported)"},
    // Step sequence of one file.
    {"steps.gap", E, "steps skip from s to more than s+1"},
    {"steps.duplicate", E, "a step repeated with the same record"},
    {"steps.conflicting_duplicate", E, "a step repeated with a different record"},
    {"steps.restart", E, "the steps start again at 1"},
    {"steps.out_of_order", E, "a step smaller than the one before it (other than a restart or duplicate)"},
    {"steps.count_mismatch", I, "receipt files end at different steps (ranks stopped early)"},
    // metrics.jsonl against rank 0.
    {"metrics.missing", E, "metrics.jsonl is absent while rank-0.jsonl holds bytes"},
    {"metrics.mismatch", E, "metrics.jsonl differs from rank-0.jsonl without its rank field"},
    // result.json.
    {"result.missing", I, "no result.json: the run did not finish (or is still running)"},
    {"result.tmp_unrenamed", I, "result.json.tmp without result.json: the run stopped while writing its summary"},
    {"result.tmp_leftover", E, "result.json.tmp beside result.json: the atomic rename did not happen as written"},
    {"result.invalid", E, "result.json is not a JSON object with the required fields and types (also duplicate keys)"},
    {"result.not_complete", E, "result.json says complete is not true"},
    {"result.steps_mismatch", E, "result.json steps differ from plan.steps or from a rank's last step"},
    {"result.final_loss_mismatch", E, "result.json final_loss differs from the last receipt's loss string"},
    {"result.params_sha256_mismatch", E, "result.json params_sha256 differs from the last receipt's hash"},
    {"result.processes_mismatch", E, "processes differs from len(rank_files) or model.processes"},
    {"result.rank_files_invalid", E, "rank_files is not exactly [\"rank-0.jsonl\", ..., \"rank-(P-1).jsonl\"] (paths are never opened)"},
    {"result.torn_receipts", E, "result.json says the run is complete but a receipt file ends in a torn line"},
    // state.safetensors.
    {"state.absent", N, "no state_file named (reference format): the receipts, their agreement across ranks and steps, and result.json's steps, final_loss and params_sha256 against the last receipt are checked; the final state itself is not (final_params_sha256 and final_opt_state_sha256 are taken on trust)"},
    {"state.invalid", E, "the state file named by result.json is missing, unsafe or not a valid state file"},
    {"state.digest_mismatch", E, "a digest recomputed from the state file differs from result.json or the last receipt"},
    // Where each rank ran (rank-N.env.jsonl): never a failure, the receipts are the proof.
    {"env.damaged", W, "a rank-N.env.jsonl line is not a valid record (torn, not JSON, a field missing or of the wrong type, another rank), or the file is not regular or larger than 1 MiB; skipped"},
    {"env.stack_changed", W, "a rank's device, driver, libraries or build differ between two lines of its rank-N.env.jsonl (its process was restored or moved elsewhere mid-run)"},
    {"env.mixed_devices", N, "the ranks' last rank-N.env.jsonl lines name different devices (kind and model)"},
    // --against.
    {"against.differs", E, "RUN's receipts differ from GOLDEN's at a step (first step reported; info when the runs are not comparable)"},
    {"against.prefix", E, "a finished run's receipts are a strict prefix of the other's, or with --tolerance its loss curve ends first (info when the runs are not comparable, without --tolerance)"},
    {"against.incomplete", I, "RUN (or GOLDEN) has not finished and its receipts so far equal the other's (with --tolerance: its loss curve ends first)"},
    {"against.loss_exceeds", E, "with --tolerance REL: a step's loss differs from GOLDEN's by more than REL relative, or both curves have steps and none in common (first step, how many exceed, and the largest difference reported)"},
    {"against.not_comparable", N, "the runs need not match: plan, build or stack differ (error under --require-comparable, which also refuses runs whose comparability is unknown)"},
    {"against.other_experiment", E, "the runs are two experiments (SEED, BATCH, MICROBATCHES, LEARNING_RATE, FEATURES, WIDTH, LAYERS, CLASSES or the data definition differ), with or without --tolerance: whether one reproduces the other has no answer (info under --allow-different-experiment)"},
    // --replay (replay_audit.h): the receipts recomputed on this machine.
    {"replay.not_run", N, "--replay: nothing replayed, because the ordinary checks did not pass (their findings decide the verdict)"},
    {"replay.checkpoint_invalid", E, "--replay: a kept checkpoint does not hash to its recorded digest, or that digest is not the run's receipt of its step; no segment starts there"},
    {"replay.not_reproducible", I, "--replay: this machine's dmlp-train cannot give the run's bits (a field of a bits row of common/bit_settings.h differs, e.g. DMLP_CPU_GEMM=blis, or the plan does not run here): nothing replayed"},
    {"replay.mismatch", E, "--replay: a recomputed receipt (params_sha256, loss) or final digest differs from the run's (REPLAY_MISMATCH: the first step of the segment that differs, and what)"},
    {"replay.segment_failed", I, "--replay: dmlp-train could not replay a segment here (its error); the segment proves nothing"},
    {"replay.from_start", N, "--replay: no kept checkpoint, so the one segment replays the whole run from the plan's initial state"},
    {"replay.coverage", N, "--replay: steps replayed of the run's steps, segments, the seed that repeats the choice, and the chance that the sample missed every wrong segment"},
};

}  // namespace

const std::vector<CheckInfo>& FindingCatalog() { return kCatalog; }

const CheckInfo* FindCheck(std::string_view id) {
  for (const CheckInfo& check : kCatalog)
    if (check.id == id) return &check;
  return nullptr;
}

std::string_view SeverityName(Severity severity) {
  switch (severity) {
    case Severity::kError: return "error";
    case Severity::kIncomplete: return "incomplete";
    case Severity::kWarning: return "warning";
    case Severity::kInfo: return "info";
  }
  return "error";
}

}  // namespace dmlp::verify
