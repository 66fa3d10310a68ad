// Python-exact JSON printing: values checked against CPython 3.11 repr()/json.dumps output.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.h"
#include "text/json_py.h"

using namespace k3::text;

TEST(JsonPy, FloatReprMatchesPython) {
  // (value, repr(value)) pairs from CPython 3.11.
  const std::pair<double, const char*> cases[] = {
      {0.30000000000000004, "0.30000000000000004"},
      {1e20, "1e+20"},
      {1.0, "1.0"},
      {-0.0, "-0.0"},
      {1e-7, "1e-07"},
      {-1.25e-10, "-1.25e-10"},
      {0.5, "0.5"},
      {1e16, "1e+16"},
      {9999999999999998.0, "9999999999999998.0"},
      {1e15, "1000000000000000.0"},
      {0.0001, "0.0001"},
      {0.00001, "1e-05"},
      {123.456, "123.456"},
      {2.5, "2.5"},
      {1.7976931348623157e308, "1.7976931348623157e+308"},
      {5e-324, "5e-324"},
      {100.0, "100.0"},
      {1.5e300, "1.5e+300"},
      {0.1, "0.1"},
      {12345678901234567890.0, "1.2345678901234567e+19"},
  };
  for (auto [v, s] : cases) EXPECT_EQ(py_float_repr(v), s) << s;
  EXPECT_EQ(py_float_repr(std::numeric_limits<double>::infinity()), "Infinity");
  EXPECT_EQ(py_float_repr(std::nan("")), "NaN");
}

TEST(JsonPy, ExactParseKeepsOrderAndBigIntegers) {
  Json v = parse_json_exact(
      R"({"b":1,"a":[18446744073709551616,-9223372036854775809,2.50,1.0,-0],"c":"é\u0001"})");
  EXPECT_EQ(py_dumps(v),
            R"({"b":1,"a":[18446744073709551616,-9223372036854775809,2.5,1.0,0],"c":"é\u0001"})");
  EXPECT_EQ(py_dumps(v, {false, KeyOrder::CodePoint}),
            R"({"a": [18446744073709551616, -9223372036854775809, 2.5, 1.0, 0], "b": 1, "c": "é\u0001"})");
  EXPECT_TRUE(is_big_int(v["a"][0]));
  EXPECT_EQ(py_str(v["a"][0]), "18446744073709551616");
  EXPECT_TRUE(py_truthy(v["a"][0]));
  EXPECT_THROW(parse_json_exact("{\"a\":1,}", "test.json"), k3::Error);
  EXPECT_FALSE(try_parse_json_exact("{\"a\":1} x").has_value());
}

// Regression: a deep document is refused (not a stack overflow when it is walked or
// destroyed), and an object of many keys parses in linear time; repeated keys behave as
// Python's json.loads (first position, last value).
TEST(JsonPy, ExactParseBoundsDepthAndKeys) {
  const std::string ok = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_TRUE(try_parse_json_exact(ok).has_value());
  const std::string deeper = "[" + ok + "]";
  EXPECT_FALSE(try_parse_json_exact(deeper).has_value());
  try {
    parse_json_exact(deeper, "args");
    ADD_FAILURE() << "accepted";
  } catch (const k3::Error& e) {
    EXPECT_NE(std::string(e.what()).find("nested deeper than 256 levels"), std::string::npos) << e.what();
  }
  const size_t n = 1'000'000;
  const std::string huge = std::string(n, '[') + std::string(n, ']');
  EXPECT_FALSE(try_parse_json_exact(huge).has_value());
  EXPECT_FALSE(try_parse_json_exact(std::string(n, '{')).has_value());  // unterminated, too

  std::string many = "{";
  for (int i = 0; i < 200000; ++i)
    many += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":" + std::to_string(i);
  many += "}";
  Json v = parse_json_exact(many);  // quadratic before: minutes at this size
  ASSERT_EQ(v.size(), 200000u);
  EXPECT_EQ(v["k199999"], 199999);
  EXPECT_EQ(py_dumps(parse_json_exact(R"({"a":1,"b":2,"a":3})")), R"({"a":3,"b":2})");
}

TEST(JsonPy, KeyOrders) {
  Json v = parse_json_exact(R"({"url":1,"URL":2,"apiKey":3,"ID":4,"name":5})");
  EXPECT_EQ(py_dumps(v, {true, KeyOrder::CodePoint}), R"({"ID":4,"URL":2,"apiKey":3,"name":5,"url":1})");
  // Jinja's dictsort lowercases and is stable: url before URL (insertion order on ties).
  EXPECT_EQ(py_dumps(v, {true, KeyOrder::CaseInsensitive}),
            R"({"apiKey":3,"ID":4,"name":5,"url":1,"URL":2})");
}

TEST(JsonPy, StrAndStrip) {
  EXPECT_EQ(py_str(Json(true)), "True");
  EXPECT_EQ(py_str(Json(nullptr)), "None");
  EXPECT_EQ(py_str(Json(3)), "3");
  EXPECT_EQ(py_str(Json(2.0)), "2.0");
  EXPECT_EQ(py_str(parse_json_exact(R"({"a":[1,"x'y",null]})")), R"({'a': [1, "x'y", None]})");
  EXPECT_EQ(py_strip(" \t\u3000abc \u00a0\n"), "abc");
  EXPECT_EQ(py_strip("\x1c"), "");
  EXPECT_TRUE(py_is_blank("\u2003\r\n"));
  EXPECT_FALSE(py_is_blank("\u200b"));  // zero-width space is not whitespace in Python
}
