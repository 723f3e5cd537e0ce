#include "common/strict_json.h"

#include <utility>
#include <vector>

namespace dmlp {
namespace {

using nlohmann::json;

constexpr size_t kMaxDepth = 64;

// Builds a DOM like nlohmann's own SAX-DOM parser, but refuses duplicate keys
// (nlohmann keeps the last value silently) and deep nesting.
class StrictDomBuilder : public nlohmann::json_sax<json> {
 public:
  bool null() override { return Put(nullptr); }
  bool boolean(bool value) override { return Put(value); }
  bool number_integer(number_integer_t value) override { return Put(value); }
  bool number_unsigned(number_unsigned_t value) override { return Put(value); }
  bool number_float(number_float_t value, const string_t&) override { return Put(value); }
  bool string(string_t& value) override { return Put(value); }
  bool binary(binary_t&) override { return Fail("binary value"); }
  bool start_object(std::size_t) override { return Open(json::object()); }
  bool start_array(std::size_t) override { return Open(json::array()); }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }
  bool key(string_t& key) override {
    if (stack_.back()->contains(key)) return Fail("duplicate key \"" + key.substr(0, 80) + "\"");
    pending_ = &(*stack_.back())[key];
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception&) override {
    if (problem_.empty()) problem_ = "not valid JSON (error at byte " + std::to_string(position) + ")";
    return false;
  }

  json& root() { return root_; }
  const std::string& problem() const { return problem_; }

 private:
  bool Fail(std::string why) {
    problem_ = std::move(why);
    return false;
  }
  json* Place(json value) {
    if (stack_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    if (stack_.back()->is_array()) {
      stack_.back()->push_back(std::move(value));
      return &stack_.back()->back();
    }
    *pending_ = std::move(value);
    return pending_;
  }
  bool Put(json value) {
    Place(std::move(value));
    return true;
  }
  bool Open(json container) {
    if (stack_.size() >= kMaxDepth) return Fail("nested deeper than " + std::to_string(kMaxDepth));
    stack_.push_back(Place(std::move(container)));
    return true;
  }
  bool Close() {
    stack_.pop_back();
    return true;
  }

  json root_;
  std::vector<json*> stack_;
  json* pending_ = nullptr;
  std::string problem_;
};

}  // namespace

StrictJsonParse ParseStrictJson(std::string_view text) {
  StrictJsonParse parse;
  StrictDomBuilder builder;
  if (!json::sax_parse(text.begin(), text.end(), &builder, nlohmann::detail::input_format_t::json, true)) {
    parse.problem = builder.problem().empty() ? "not valid JSON" : builder.problem();
    return parse;
  }
  parse.value = std::move(builder.root());
  return parse;
}

}  // namespace dmlp
