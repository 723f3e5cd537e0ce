#include "common/py_json.h"

#include <gtest/gtest.h>

namespace dmlp {
namespace {

// Expected strings were printed by CPython 3.11's json.dumps(doc, sort_keys=True[, indent=2]).
nlohmann::json Document() {
  nlohmann::json doc;
  doc["b"] = nlohmann::json::array({1, 2.5, {{"z", nullptr}, {"a", true}}});
  doc["a"] = "h\u00e9\u2603\U0001F600\"\\\n\x01\x7f";
  doc["c"] = nlohmann::json::object();
  doc["d"] = nlohmann::json::array();
  doc["e"] = 1e-05;
  doc["f"] = 1e16;
  doc["g"] = -0.0;
  doc["h"] = 0.001;
  return doc;
}

TEST(PyJsonTest, CompactMatchesPython) {
  EXPECT_EQ(PyJsonDumps(Document()),
            R"({"a": "h\u00e9\u2603\ud83d\ude00\"\\\n\u0001\u007f", "b": [1, 2.5, {"a": true, )"
            R"("z": null}], "c": {}, "d": [], "e": 1e-05, "f": 1e+16, "g": -0.0, "h": 0.001})");
}

TEST(PyJsonTest, IndentedMatchesPython) {
  EXPECT_EQ(PyJsonDumps(Document(), 2) + "\n",
            "{\n  \"a\": \"h\\u00e9\\u2603\\ud83d\\ude00\\\"\\\\\\n\\u0001\\u007f\",\n"
            "  \"b\": [\n    1,\n    2.5,\n    {\n      \"a\": true,\n      \"z\": null\n    }\n"
            "  ],\n  \"c\": {},\n  \"d\": [],\n  \"e\": 1e-05,\n  \"f\": 1e+16,\n  \"g\": -0.0,\n"
            "  \"h\": 0.001\n}\n");
}

TEST(PyJsonTest, InvalidUtf8BecomesSurrogateEscapes) {
  EXPECT_EQ(PyJsonDumps(std::string("a\xff" "b")), R"("a\udcffb")");
  EXPECT_EQ(PyJsonDumps(std::string("\xc3")), R"("\udcc3")");
}

TEST(PyJsonTest, NonFiniteFloats) {
  EXPECT_EQ(PyJsonDumps(nlohmann::json::array({1.0 / 0.0, -1.0 / 0.0})), "[Infinity, -Infinity]");
}

}  // namespace
}  // namespace dmlp
