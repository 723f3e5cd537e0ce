#include "common/receipt_reader.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/float_repr.h"
#include "common/format/error_codes.h"

namespace dmlp {
namespace {

constexpr std::string_view kBom = "\xEF\xBB\xBF";

ReceiptLineParse Defect(ReceiptDefect defect, std::string detail) {
  ReceiptLineParse parse;
  parse.defect = defect;
  parse.detail = std::move(detail);
  return parse;
}

// Shortens untrusted text quoted in a detail message.
std::string Quote(std::string_view text) {
  constexpr size_t kMax = 80;
  std::string out = "\"" + std::string(text.substr(0, kMax)) + "\"";
  return text.size() > kMax ? out + "..." : out;
}

// 64 lower-case hex digits, without a branch per character (this runs once per line).
bool IsLowerHex64(std::string_view text) {
  static constexpr auto kTable = [] {
    std::array<uint8_t, 256> table{};
    for (char c = '0'; c <= '9'; ++c) table[static_cast<uint8_t>(c)] = 1;
    for (char c = 'a'; c <= 'f'; ++c) table[static_cast<uint8_t>(c)] = 1;
    return table;
  }();
  if (text.size() != 64) return false;
  unsigned all = 1;
  for (char c : text) all &= kTable[static_cast<uint8_t>(c)];
  return all != 0;
}

// Loss checks shared by both paths; returns kNone when the text is a valid loss.
ReceiptDefect CheckLoss(std::string_view text, std::string& detail) {
  // The ranks of a run write the same loss at a step and are read in lockstep, so
  // the last valid text recurs: remembering it skips the repr round trip. The
  // memo only ever holds a text that passed every check below.
  thread_local std::string last_valid;
  if (!text.empty() && text == last_valid) return ReceiptDefect::kNone;
  double value = 0;
  const char* end = text.data() + text.size();
  auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || stop != end) {
    detail = "loss " + Quote(text) + " is not a decimal number";
    return ReceiptDefect::kLossNotRepr;
  }
  if (!std::isfinite(value)) {
    detail = "loss " + Quote(text) + " is not finite";
    return ReceiptDefect::kLossNonfinite;
  }
  std::string repr = PythonFloatRepr(value);
  if (repr != text) {
    detail = "loss " + Quote(text) + " is not Python's repr " + Quote(repr);
    return ReceiptDefect::kLossNotRepr;
  }
  // The range test first: converting an out-of-range double to float is undefined.
  if (std::fabs(value) > std::numeric_limits<float>::max() ||
      static_cast<double>(static_cast<float>(value)) != value) {
    detail = "loss " + Quote(text) + " is not a float32 value";
    return ReceiptDefect::kLossNotFloat32;
  }
  last_valid.assign(text);
  return ReceiptDefect::kNone;
}

bool Consume(std::string_view& rest, std::string_view token) {
  if (!rest.starts_with(token)) return false;
  rest.remove_prefix(token.size());
  return true;
}

// A canonical non-negative JSON integer (no leading zeros) up to kMaxReceiptInteger.
bool ConsumeCanonicalInt(std::string_view& rest, int64_t& out) {
  size_t digits = 0;
  while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
  if (digits == 0 || digits > 18 || (digits > 1 && rest[0] == '0')) return false;
  std::from_chars(rest.data(), rest.data() + digits, out);
  rest.remove_prefix(digits);
  return out <= kMaxReceiptInteger;
}

// The exact bytes FormatReceiptLine writes, read into `receipt` (its storage
// reused); any deviation returns false and the slow path classifies it.
bool ParseCanonical(std::string_view rest, bool expect_rank, Receipt& receipt) {
  if (!Consume(rest, "{\"loss\": \"")) return false;
  size_t quote = rest.find('"');
  if (quote == std::string_view::npos) return false;
  for (char c : rest.substr(0, quote))
    if (c < 0x20 || c > 0x7e || c == '\\') return false;
  std::string_view loss = rest.substr(0, quote);
  rest.remove_prefix(quote);
  if (!Consume(rest, "\", \"params_sha256\": \"") || rest.size() < 64) return false;
  std::string_view hash = rest.substr(0, 64);
  if (!IsLowerHex64(hash)) return false;
  rest.remove_prefix(64);
  int64_t rank = 0;
  if (expect_rank) {
    if (!Consume(rest, "\", \"rank\": ") || !ConsumeCanonicalInt(rest, rank)) return false;
    if (!Consume(rest, ", \"step\": ")) return false;
  } else if (!Consume(rest, "\", \"step\": ")) {
    return false;
  }
  int64_t step = 0;
  if (!ConsumeCanonicalInt(rest, step) || step < 1 || rest != "}") return false;
  receipt.loss.assign(loss);
  receipt.params_sha256.assign(hash);
  receipt.step = step;
  receipt.rank = expect_rank ? std::optional<int64_t>(rank) : std::nullopt;
  return true;
}

// One top-level value of the object, as the SAX parser reported it.
struct TopField {
  enum Kind { kString, kUnsigned, kNegative, kFloat, kBool, kNull, kContainer } kind = kNull;
  std::string key;
  std::string text;    // kString: the value; kFloat: the number's text
  uint64_t unsigned_value = 0;
  int64_t negative_value = 0;
};

// Records top-level keys and scalar values; nested values only count as "container".
class LineHandler : public nlohmann::json_sax<nlohmann::json> {
 public:
  bool null() override { return Value(TopField{TopField::kNull}); }
  bool boolean(bool) override { return Value(TopField{TopField::kBool}); }
  bool number_integer(number_integer_t value) override {
    TopField field{TopField::kNegative};
    field.negative_value = value;
    return Value(std::move(field));
  }
  bool number_unsigned(number_unsigned_t value) override {
    TopField field{TopField::kUnsigned};
    field.unsigned_value = value;
    return Value(std::move(field));
  }
  bool number_float(number_float_t, const string_t& text) override {
    TopField field{TopField::kFloat};
    field.text = text;
    return Value(std::move(field));
  }
  bool string(string_t& value) override {
    TopField field{TopField::kString};
    field.text = value;
    return Value(std::move(field));
  }
  bool binary(binary_t&) override { return Value(TopField{TopField::kContainer}); }
  bool start_object(std::size_t) override { return Open(true); }
  bool start_array(std::size_t) override { return Open(false); }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }
  bool key(string_t& key) override {
    if (depth_ != 1) return true;
    for (const TopField& field : fields_)
      if (field.key == key && duplicate_.empty()) duplicate_ = key;
    pending_key_ = key;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception&) override {
    error_position_ = position;
    return false;
  }

  bool top_is_object() const { return top_is_object_; }
  const std::string& duplicate() const { return duplicate_; }
  const std::vector<TopField>& fields() const { return fields_; }
  size_t error_position() const { return error_position_; }

 private:
  bool Value(TopField field) {
    if (depth_ == 1) {
      field.key = pending_key_;
      fields_.push_back(std::move(field));
    }
    return true;
  }
  bool Open(bool is_object) {
    if (depth_ == 0) top_is_object_ = is_object;
    if (depth_ == 1) Value(TopField{TopField::kContainer});
    ++depth_;
    return true;
  }
  bool Close() {
    --depth_;
    return true;
  }

  int depth_ = 0;
  bool top_is_object_ = false;
  std::string pending_key_, duplicate_;
  std::vector<TopField> fields_;
  size_t error_position_ = 0;
};

const char* KindName(TopField::Kind kind) {
  switch (kind) {
    case TopField::kString: return "a string";
    case TopField::kUnsigned:
    case TopField::kNegative: return "an integer";
    case TopField::kFloat: return "a non-integer number";
    case TopField::kBool: return "a boolean";
    case TopField::kNull: return "null";
    case TopField::kContainer: return "an object or array";
  }
  return "?";
}

// Checks an integer field; fills `out` or returns the defect.
ReceiptLineParse CheckInteger(const TopField& field, int64_t minimum, int64_t& out) {
  if (field.kind != TopField::kUnsigned && field.kind != TopField::kNegative)
    return Defect(ReceiptDefect::kFieldType, "\"" + field.key + "\" must be a JSON integer, got " +
                                                 KindName(field.kind) +
                                                 (field.kind == TopField::kFloat ? " " + field.text : ""));
  if (field.kind == TopField::kNegative) {
    out = field.negative_value;
  } else if (field.unsigned_value > uint64_t{kMaxReceiptInteger}) {
    return Defect(ReceiptDefect::kFieldRange, "\"" + field.key + "\" is above 2^53");
  } else {
    out = static_cast<int64_t>(field.unsigned_value);
  }
  if (out < minimum)
    return Defect(ReceiptDefect::kFieldRange,
                  "\"" + field.key + "\" must be >= " + std::to_string(minimum) + ", got " +
                      std::to_string(out));
  return {};
}

// Field set, types and ranges of a parsed object.
ReceiptLineParse CheckFields(const LineHandler& handler, bool expect_rank) {
  std::vector<std::string_view> required = {kReceiptLoss, kReceiptParamsSha256, kReceiptStep};
  if (expect_rank) required.push_back(kReceiptRank);
  const TopField* found[4] = {};
  for (size_t i = 0; i < required.size(); ++i)
    for (const TopField& field : handler.fields())
      if (field.key == required[i]) found[i] = &field;
  for (size_t i = 0; i < required.size(); ++i)
    if (found[i] == nullptr)
      return Defect(ReceiptDefect::kFieldMissing, "missing \"" + std::string(required[i]) + "\"");
  for (const TopField& field : handler.fields())
    if (std::find(required.begin(), required.end(), field.key) == required.end())
      return Defect(ReceiptDefect::kFieldExtra, "unexpected field " + Quote(field.key));
  for (int i = 0; i < 2; ++i)
    if (found[i]->kind != TopField::kString)
      return Defect(ReceiptDefect::kFieldType, "\"" + found[i]->key + "\" must be a string, got " +
                                                   KindName(found[i]->kind));
  ReceiptLineParse parse;
  parse.receipt.loss = found[0]->text;
  parse.receipt.params_sha256 = found[1]->text;
  ReceiptLineParse integer = CheckInteger(*found[2], 1, parse.receipt.step);
  if (!integer.ok()) return integer;
  if (expect_rank) {
    int64_t rank = 0;
    integer = CheckInteger(*found[3], 0, rank);
    if (!integer.ok()) return integer;
    parse.receipt.rank = rank;
  }
  parse.usable = true;
  return parse;
}

// Value checks common to both paths, then the canonical-bytes check.
ReceiptLineParse CheckValues(ReceiptLineParse parse, std::string_view line) {
  if (!IsLowerHex64(parse.receipt.params_sha256)) {
    parse.defect = ReceiptDefect::kHashFormat;
    parse.detail = "params_sha256 " + Quote(parse.receipt.params_sha256) +
                   " is not 64 lower-case hex digits";
    return parse;
  }
  parse.defect = CheckLoss(parse.receipt.loss, parse.detail);
  if (!parse.ok()) return parse;
  std::string canonical = FormatReceiptLine(parse.receipt);
  canonical.pop_back();  // the '\n'
  if (canonical != line) {
    parse.defect = ReceiptDefect::kNotCanonical;
    parse.detail = "not the bytes json.dumps(sort_keys=True) writes for these values";
  }
  return parse;
}

ReceiptLineParse ParseSlow(std::string_view line, bool expect_rank) {
  LineHandler handler;
  bool parsed = nlohmann::json::sax_parse(line.begin(), line.end(), &handler,
                                          nlohmann::detail::input_format_t::json, true);
  if (!parsed) {
    size_t glue = line.rfind("{\"");
    if (glue != std::string_view::npos && glue > 0) {
      ReceiptLineParse parse = Defect(ReceiptDefect::kGlued,
                                      "a record cut short with another glued to it at byte " +
                                          std::to_string(glue));
      parse.glued_offset = glue;
      return parse;
    }
    // nlohmann reports position length+1 when the input ended inside the value.
    if (handler.error_position() == line.size() + 1)
      return Defect(ReceiptDefect::kTruncated, "the JSON object is cut short");
    return Defect(ReceiptDefect::kNotJson,
                  "not valid JSON (error at byte " + std::to_string(handler.error_position()) + ")");
  }
  if (!handler.top_is_object()) return Defect(ReceiptDefect::kNotJson, "not a JSON object");
  if (!handler.duplicate().empty())
    return Defect(ReceiptDefect::kDuplicateKey, "key " + Quote(handler.duplicate()) + " appears twice");
  ReceiptLineParse parse = CheckFields(handler, expect_rank);
  if (!parse.ok()) return parse;
  return CheckValues(std::move(parse), line);
}

}  // namespace

ReceiptLineParse ParseReceiptLine(std::string_view line, bool expect_rank) {
  ReceiptLineParse parse;
  ParseReceiptLine(line, expect_rank, parse);
  return parse;
}

void ParseReceiptLine(std::string_view line, bool expect_rank, ReceiptLineParse& parse) {
  parse.defect = ReceiptDefect::kNone;
  parse.detail.clear();
  parse.usable = false;
  parse.glued_offset = 0;
  if (line.size() > kMaxReceiptLineBytes) {
    parse = Defect(ReceiptDefect::kTooLong, "line of " + std::to_string(line.size()) + " bytes");
  } else if (ParseCanonical(line, expect_rank, parse.receipt)) {
    parse.usable = true;
    parse.defect = CheckLoss(parse.receipt.loss, parse.detail);
  } else if (std::memchr(line.data(), '\0', line.size()) != nullptr) {
    parse = Defect(ReceiptDefect::kNul, "NUL byte at offset " + std::to_string(line.find('\0')));
  } else if (line.starts_with(kBom)) {
    parse = Defect(ReceiptDefect::kBom, "line starts with a UTF-8 BOM");
  } else if (line.find_first_not_of(" \t\r") == std::string_view::npos) {
    parse = Defect(ReceiptDefect::kEmpty, "empty line");
  } else {
    parse = ParseSlow(line, expect_rank);
  }
}

const char* ReceiptDefectId(ReceiptDefect defect) {
  switch (defect) {
    case ReceiptDefect::kNone: return "";
    case ReceiptDefect::kTooLong: return "line.too_long";
    case ReceiptDefect::kNul: return "line.nul";
    case ReceiptDefect::kBom: return "line.bom";
    case ReceiptDefect::kEmpty: return "line.empty";
    case ReceiptDefect::kNotJson: return "line.not_json";
    case ReceiptDefect::kTruncated: return "line.truncated";
    case ReceiptDefect::kGlued: return "line.torn_glued";
    case ReceiptDefect::kDuplicateKey: return "line.duplicate_key";
    case ReceiptDefect::kFieldMissing: return "line.field_missing";
    case ReceiptDefect::kFieldExtra: return "line.field_extra";
    case ReceiptDefect::kFieldType: return "line.field_type";
    case ReceiptDefect::kFieldRange: return "line.field_range";
    case ReceiptDefect::kHashFormat: return "line.hash_format";
    case ReceiptDefect::kLossNonfinite: return "line.loss_nonfinite";
    case ReceiptDefect::kLossNotRepr: return "line.loss_not_repr";
    case ReceiptDefect::kLossNotFloat32: return "line.loss_not_float32";
    case ReceiptDefect::kNotCanonical: return "line.not_canonical";
  }
  return "line.unknown";
}

Result<Receipt> ReadReceiptLine(std::string_view line, bool expect_rank) {
  ReceiptLineParse parse = ParseReceiptLine(line, expect_rank);
  if (!parse.ok())
    return Status::Error(kReceiptInvalid,
                         std::string(ReceiptDefectId(parse.defect)) + ": " + parse.detail);
  return std::move(parse.receipt);
}

}  // namespace dmlp
