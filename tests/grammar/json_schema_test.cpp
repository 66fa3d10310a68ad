// The JSON-schema compiler: exact sets for integers, formats, lengths and keys; refusals in
// strict mode; limits; and every schema of the corpus sampled with random logits through the
// matcher ending in JSON (validation against the schemas themselves is done by ajv in
// tests/e2e/structured_random.test.mjs).
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

#include "core/error.h"
#include "grammar/json_schema.h"
#include "grammar/work_budget.h"
#include "grammar/grammar_test_util.h"
#include "runtime/sampler.h"

namespace k3::grammar {
namespace {

using test::matches;
using text::Json;

std::string compile(const std::string& schema, bool strict = true) {
  return json_schema_to_gbnf(text::parse_json_exact(schema), {strict, ""});
}
bool ok(const std::string& schema, const std::string& value) { return matches(compile(schema), value); }
std::string error_of(const std::string& schema, bool strict = true) {
  try {
    compile(schema, strict);
  } catch (const k3::Error& e) { return e.what(); }
  return "";
}

Json corpus() {
  std::ifstream in(std::string(K3_TEST_DATA_DIR) + "/grammar/schemas.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return text::parse_json_exact(ss.str());
}

TEST(GrammarSchema, PrimitivesEnumsConst) {
  EXPECT_TRUE(ok(R"({"type":"string"})", R"("a\"\\\u00e9é")"));
  EXPECT_FALSE(ok(R"({"type":"string"})", "\"a\nb\""));     // raw control character
  EXPECT_FALSE(ok(R"({"type":"string"})", R"("\ud800")"));  // a lone surrogate escape
  EXPECT_TRUE(ok(R"({"type":"integer"})", "-42"));
  EXPECT_FALSE(ok(R"({"type":"integer"})", "042"));
  EXPECT_FALSE(ok(R"({"type":"integer"})", "1.5"));
  EXPECT_TRUE(ok(R"({"type":"number"})", "-0.25e+10"));
  EXPECT_FALSE(ok(R"({"type":"number"})", "1."));
  EXPECT_TRUE(ok(R"({"type":"boolean"})", "false"));
  EXPECT_TRUE(ok(R"({"type":["string","null"]})", "null"));
  EXPECT_TRUE(ok(R"({"enum":["a\"b",1,null,{"k":[true]}]})", R"({"k":[true]})"));
  EXPECT_TRUE(ok(R"({"enum":["a\"b",1,null]})", R"("a\"b")"));
  EXPECT_FALSE(ok(R"({"enum":["a",1]})", "2"));
  EXPECT_TRUE(ok(R"({"const":"Grüße\n"})", R"("Grüße\n")"));
  EXPECT_TRUE(ok("{}", R"([1,{"a":null},"x"])"));
  EXPECT_TRUE(ok("true", "3"));
}

TEST(GrammarSchema, IntegerBoundsAreExact) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 40; ++trial) {
    int64_t lo = static_cast<int64_t>(rng() % 2400) - 1200, hi = lo + static_cast<int64_t>(rng() % 1500);
    std::string schema = fmt::format(R"({{"type":"integer","minimum":{},"maximum":{}}})", lo, hi);
    if (trial % 4 == 1)
      schema = fmt::format(R"({{"type":"integer","exclusiveMinimum":{},"maximum":{}}})", lo - 1, hi);
    if (trial % 4 == 2) schema = fmt::format(R"({{"type":"integer","minimum":{}}})", lo), hi = INT64_MAX;
    auto g = std::make_shared<const Grammar>(parse_gbnf(compile(schema)));
    for (int64_t v = -1300; v <= 2800; v += (v > -30 && v < 30) ? 1 : 7) {
      GrammarMatcher m(g, test::byte_vocab());
      const bool in = test::feed_bytes(m, std::to_string(v)) && m.can_end();
      ASSERT_EQ(in, v >= lo && v <= hi) << schema << " value " << v;
    }
  }
  EXPECT_TRUE(ok(R"({"type":"integer","format":"int32"})", "-2147483648"));
  EXPECT_FALSE(ok(R"({"type":"integer","format":"int32"})", "2147483648"));
  EXPECT_NE(error_of(R"({"type":"integer","minimum":5,"maximum":4})").find("no integer"), std::string::npos);
}

TEST(GrammarSchema, StringLengthsCountCodePoints) {
  const char* s = R"({"type":"string","minLength":2,"maxLength":3})";
  EXPECT_FALSE(ok(s, R"("é")"));
  EXPECT_TRUE(ok(s, R"("éé")"));
  EXPECT_TRUE(ok(s, R"("\u00e9\n中")"));
  EXPECT_FALSE(ok(s, R"("éééé")"));
  EXPECT_TRUE(ok(R"({"type":"string","maxLength":1})", "\"\xf0\x9f\x98\x80\""));  // one code point
}

TEST(GrammarSchema, Formats) {
  const char* date = R"({"type":"string","format":"date"})";
  EXPECT_TRUE(ok(date, R"("2024-02-28")"));
  EXPECT_TRUE(ok(date, R"("1999-12-31")"));
  EXPECT_FALSE(ok(date, R"("2024-02-30")"));
  EXPECT_FALSE(ok(date, R"("2024-04-31")"));
  EXPECT_FALSE(ok(date, R"("2024-13-01")"));
  const char* time = R"({"type":"string","format":"time"})";
  EXPECT_TRUE(ok(time, R"("23:59:59.123Z")"));
  EXPECT_TRUE(ok(time, R"("08:00:00+05:30")"));
  EXPECT_FALSE(ok(time, R"("24:00:00Z")"));
  EXPECT_FALSE(ok(time, R"("08:00:00")"));  // a time zone is required (RFC 3339)
  EXPECT_TRUE(ok(R"({"format":"date-time"})", R"("2026-12-04T03:00:00Z")"));
  EXPECT_TRUE(ok(R"({"type":"string","format":"uuid"})", R"("123e4567-e89b-12d3-a456-426614174000")"));
  EXPECT_FALSE(ok(R"({"type":"string","format":"uuid"})", R"("123e4567e89b12d3a456426614174000")"));
  EXPECT_TRUE(ok(R"({"type":"string","format":"ipv4"})", R"("255.0.10.199")"));
  EXPECT_FALSE(ok(R"({"type":"string","format":"ipv4"})", R"("256.0.0.1")"));
  EXPECT_FALSE(ok(R"({"type":"string","format":"ipv4"})", R"("01.0.0.1")"));
  EXPECT_TRUE(ok(R"({"type":"string","format":"email"})", R"("a.b@example.org")"));
}

TEST(GrammarSchema, ObjectsRequiredOptionalAndCommas) {
  const char* s =
      R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"},"c":{"type":"boolean"}},"required":["b"]})";
  EXPECT_TRUE(ok(s, R"({"b":"x"})"));
  EXPECT_TRUE(ok(s, R"({"a":1,"b":"x","c":true})"));
  EXPECT_TRUE(ok(s, R"({ "a": 1,
  "b": "x" })"));
  EXPECT_FALSE(ok(s, R"({"a":1})"));  // b is required
  EXPECT_FALSE(ok(s, R"({"a":1,,"b":"x"})"));
  EXPECT_FALSE(ok(s, R"({"b":"x",})"));
  EXPECT_FALSE(ok(s, R"({,"b":"x"})"));
  EXPECT_FALSE(ok(s, R"({"b":"x","a":1})"));  // declaration order
  EXPECT_FALSE(ok(s, R"({"b":"x","d":1})"));  // no extras unless allowed
  const char* none_required =
      R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}}})";
  EXPECT_TRUE(ok(none_required, "{}"));
  EXPECT_TRUE(ok(none_required, R"({"b":2})"));
  // A required name without a property schema takes any value.
  EXPECT_TRUE(ok(R"({"type":"object","required":["z"]})", R"({"z":[1,"2"]})"));
}

TEST(GrammarSchema, ExtraKeysNeverRepeatADeclaredKey) {
  const char* s =
      R"({"type":"object","properties":{"a":{"type":"integer"},"ab":{"type":"integer"},"name":{"type":"string"}},
                     "additionalProperties":{"type":"boolean"}})";
  EXPECT_TRUE(ok(s, R"({"a":1,"zz":true})"));
  EXPECT_TRUE(ok(s, R"({"abc":false,"b":true,"nam":true,"names":false})"));
  EXPECT_FALSE(ok(s, R"({"a":1,"a":true})"));
  EXPECT_FALSE(ok(s, R"({"ab":true})"));  // ab as an extra would need a boolean... and is declared
  EXPECT_FALSE(ok(s, R"({"name":true})"));
  EXPECT_FALSE(ok(s, R"({"zz":1})"));  // extras follow their schema
  EXPECT_TRUE(ok(R"({"type":"object","additionalProperties":true})", R"({"k":{"x":[null]}})"));
}

TEST(GrammarSchema, ArraysTuplesAndCounts) {
  const char* s = R"({"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":3})";
  EXPECT_FALSE(ok(s, "[1]"));
  EXPECT_TRUE(ok(s, "[1, 2]"));
  EXPECT_TRUE(ok(s, "[1,2,3]"));
  EXPECT_FALSE(ok(s, "[1,2,3,4]"));
  EXPECT_FALSE(ok(s, "[1,2,]"));
  const char* t = R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false})";
  EXPECT_TRUE(ok(t, "[]"));
  EXPECT_TRUE(ok(t, R"(["a"])"));
  EXPECT_TRUE(ok(t, R"(["a",1])"));
  EXPECT_FALSE(ok(t, R"(["a",1,2])"));
  EXPECT_FALSE(ok(t, R"([1])"));
  const char* tr =
      R"({"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"boolean"},"minItems":2})";
  EXPECT_FALSE(ok(tr, R"(["a"])"));
  EXPECT_TRUE(ok(tr, R"(["a",true,false])"));
  EXPECT_FALSE(ok(tr, R"(["a","b"])"));
  EXPECT_TRUE(ok(R"({"type":"array","maxItems":0})", "[]"));
  EXPECT_FALSE(ok(R"({"type":"array","maxItems":0})", "[1]"));
  for (int n = 0; n <= 4; ++n) {  // maxItems alone (found by the e2e corpus: one item too many)
    std::string v = "[";
    for (int i = 0; i < n; ++i) v += i ? ",1" : "1";
    EXPECT_EQ(ok(R"({"type":"array","maxItems":2})", v + "]"), n <= 2) << v;
    EXPECT_EQ(ok(R"({"type":"array","prefixItems":[{"type":"integer"}],"maxItems":2})", v + "]"), n <= 2)
        << v;
    EXPECT_EQ(ok(R"({"type":"array","minItems":1,"maxItems":3})", v + "]"), n >= 1 && n <= 3) << v;
  }
  EXPECT_TRUE(
      ok(R"({"type":"array","maxItems":5000,"items":{"type":"null"}})", "[null]"));  // lowered to 1000
}

TEST(GrammarSchema, RefsDefsAndRecursion) {
  const char* s = R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},
    "kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"]}},"$ref":"#/$defs/node"})";
  EXPECT_TRUE(ok(s, R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[{"v":4}]}]})"));
  EXPECT_FALSE(ok(s, R"({"v":1,"kids":[{"w":2}]})"));
  EXPECT_TRUE(ok(R"({"definitions":{"a~b/c":{"type":"null"}},"$ref":"#/definitions/a~0b~1c"})", "null"));
  EXPECT_TRUE(ok(R"({"type":"object","properties":{"self":{"$ref":"#"}}})", R"({"self":{"self":{}}})"));
  EXPECT_NE(error_of(R"({"$ref":"#/$defs/missing"})").find("points at nothing"), std::string::npos);
  EXPECT_NE(error_of(R"({"$ref":"https://example.com/s.json"})").find("only local references"),
            std::string::npos);
}

TEST(GrammarSchema, AnyOfOneOfAllOf) {
  const char* s = R"({"anyOf":[{"type":"string"},{"type":"integer","minimum":0}]})";
  EXPECT_TRUE(ok(s, R"("x")"));
  EXPECT_TRUE(ok(s, "7"));
  EXPECT_FALSE(ok(s, "-7"));
  const char* all = R"({"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},
                                  {"properties":{"b":{"type":"string"}},"required":["b"]}]})";
  EXPECT_TRUE(ok(all, R"({"a":1,"b":"x"})"));
  EXPECT_FALSE(ok(all, R"({"a":1})"));
}

TEST(GrammarSchema, StrictRefusesWhatItCannotHonourAndNamesIt) {
  struct Case {
    const char* schema;
    const char* keyword;
    const char* where;
  } cases[] = {
      {R"({"type":"array","uniqueItems":true})", "uniqueItems", "(root)"},
      {R"({"type":"object","properties":{"tags":{"type":"string","pattern":"^a+$"}}})", "pattern",
       "/properties/tags"},
      {R"({"type":"integer","multipleOf":3})", "multipleOf", "(root)"},
      {R"({"type":"number","minimum":0.5})", "minimum", "(root)"},
      {R"({"type":"string","format":"hostname"})", "format: hostname", "(root)"},
      {R"({"type":"object","patternProperties":{"^x":{}}})", "patternProperties", "(root)"},
      {R"({"type":"object","minProperties":1})", "minProperties", "(root)"},
      {R"({"not":{"type":"null"}})", "not", "(root)"},
      {R"({"if":{"type":"string"},"then":{"minLength":1}})", "if", "(root)"},
      {R"({"type":"array","contains":{"type":"null"}})", "contains", "(root)"},
      {R"({"anyOf":[{"type":"string"}],"minLength":3})", "minLength' beside 'anyOf", "(root)"},
      {R"({"type":"object","properties":{"a":{"type":"array","items":{"type":"string","maxLength":3,"format":"date"}}}})",
       "minLength/maxLength' with 'format", "/properties/a/items"},
  };
  for (const Case& c : cases) {
    const std::string e = error_of(c.schema);
    EXPECT_NE(e.find(fmt::format("unsupported keyword '{}'", c.keyword)), std::string::npos)
        << c.schema << " → " << e;
    EXPECT_NE(e.find(c.where), std::string::npos) << e;
    EXPECT_EQ(error_of(c.schema, false), "") << "non-strict mode ignores it: " << c.schema;
  }
  // Not schemas at all: errors in both modes.
  EXPECT_NE(error_of("false").find("matches nothing"), std::string::npos);
  EXPECT_NE(error_of(R"({"type":"strin"})", false).find("unknown type"), std::string::npos);
  EXPECT_NE(error_of(R"({"enum":[]})", false).find("non-empty"), std::string::npos);
  EXPECT_NE(error_of(R"({"type":"array","minItems":5000})").find("larger than 1000"), std::string::npos);
  EXPECT_NE(error_of(R"({"type":"array","minItems":3,"maxItems":2})").find("maxItems < minItems"),
            std::string::npos);
  // Annotations are never refused.
  EXPECT_EQ(
      error_of(
          R"({"title":"t","description":"d","examples":[1],"default":1,"$schema":"x","type":"integer"})"),
      "");
}

TEST(GrammarSchema, LimitsHold) {
  std::string deep = R"({"type":"integer"})";
  for (int i = 0; i < 100; ++i) deep = R"({"type":"array","items":)" + deep + "}";
  EXPECT_NE(error_of(deep).find("nested deeper"), std::string::npos);
  // Many properties with huge enums: the grammar size limit, not memory, stops it.
  std::string big = R"({"type":"object","properties":{)";
  for (int i = 0; i < 2000; ++i) {
    big += fmt::format(R"({}"p{}":{{"enum":[)", i ? "," : "", i);
    for (int k = 0; k < 40; ++k) big += fmt::format(R"({}"value-{}-{}")", k ? "," : "", i, k);
    big += "]}";
  }
  big += "}}";
  EXPECT_NE(error_of(big).find("larger than"), std::string::npos);
}

TEST(GrammarSchema, PrefixNamesEveryRule) {
  for (const Json& item : corpus()) {
    const std::string g = json_schema_to_gbnf(item["schema"], {true, "zz-"});
    std::istringstream in(g);
    std::string line;
    std::regex def(R"(^([A-Za-z0-9_-]+) ::=)");
    while (std::getline(in, line)) {
      std::smatch m;
      if (std::regex_search(line, m, def)) { ASSERT_EQ(m[1].str().rfind("zz-", 0), 0u) << line; }
    }
    EXPECT_NO_THROW(parse_gbnf(g, "zz-root")) << item["name"];
  }
}

// Every corpus schema, sampled from random logits at temperature 1 with many seeds through a
// vocabulary of bytes plus JSON-shaped pieces, ends in a complete JSON text.
TEST(GrammarSchema, CorpusSampledWithRandomLogitsEndsInJson) {
  const Json c = corpus();
  ASSERT_GE(c.size(), 30u);
  auto vocab = test::byte_vocab({"\"",    "\",",  "\":", "\"}", "\"]", "{\"",  "[\"",   "true",
                                 "false", "null", "12",  "3.5", " \"", "\n  ", "name",  "value",
                                 "-0",    "e+1",  "},",  "]}",  "é",   "中文", "2024-", "T1"});
  const int32_t eos = static_cast<int32_t>(vocab->size()) - 1;
  int done = 0, runs = 0;
  for (const Json& item : c) {
    auto g = std::make_shared<const Grammar>(parse_gbnf(json_schema_to_gbnf(item["schema"])));
    for (uint64_t seed = 1; seed <= 12; ++seed) {
      GrammarMatcher m(g, vocab);
      runtime::SamplerParams sp;
      sp.temperature = 1.0f;
      sp.top_k = 0;
      sp.top_p = 1.0f;
      sp.min_p = 0.0f;
      sp.seed = seed;
      runtime::Sampler sampler(sp);
      std::mt19937 rng(static_cast<uint32_t>(seed));
      std::normal_distribution<float> nd(0.0f, 2.0f);
      std::vector<float> logits(vocab->size());
      std::string out;
      ++runs;
      for (int i = 0; i < 6000 && !m.must_end(); ++i) {
        for (float& x : logits) x = nd(rng);
        const int32_t t = sampler.sample(logits, m.allowed());
        m.accept(t);
        if (t == eos) break;
        out += vocab->piece(t);
      }
      if (!m.must_end() && !m.can_end()) continue;  // ran out of tokens (rare): nothing to check
      ++done;
      EXPECT_TRUE(text::try_parse_json_exact(out).has_value())
          << item["name"] << " seed " << seed << ": " << text::py_json_string(out.substr(0, 600));
    }
  }
  EXPECT_GE(done, runs * 95 / 100) << "most random runs must finish within 6000 tokens";
}

// ---- hostile schemas (issue 41): bounded compile, no std:: exception, no ambiguity blow-up ----

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A JSON object with n keys k0..k(n-1), values 0..n-1, written compactly.
std::string object_of(int n) {
  std::string o = "{";
  for (int i = 0; i < n; ++i) o += fmt::format(R"({}"k{}":{})", i ? "," : "", i, i);
  return o + "}";
}

// Row 5b: 3^10 spellings of one node ("0", "00" and "000" for each of ten array indices)
// aimed at a const of 1000 keys. The old compiler memoised on the spelling, so it compiled
// the target 59,049 times (590 MB of grammar) before the size check refused it.
TEST(GrammarSchemaHostile, RefSpellingsOfOneNodeCompileItOnce) {
  std::string target = R"({"const":)" + object_of(1000) + "}";
  for (int i = 0; i < 10; ++i) target = "[" + target + "]";
  std::string refs;
  std::vector<int> digit(10, 0);
  for (int n = 0; n < 59049; ++n) {
    std::string ptr = "#/$defs/t";
    for (int k = 0, m = n; k < 10; ++k, m /= 3) ptr += "/" + std::string(static_cast<size_t>(m % 3 + 1), '0');
    refs += fmt::format(R"({}{{"$ref":"{}"}})", n ? "," : "", ptr);
  }
  const std::string schema = R"({"$defs":{"t":)" + target + R"(},"anyOf":[)" + refs + "]}";
  ASSERT_GT(schema.size(), 2'500'000u);
  const Json parsed = text::parse_json_exact(schema);
  const auto t0 = std::chrono::steady_clock::now();
  std::string g;
  ASSERT_NO_THROW(g = json_schema_to_gbnf(parsed));
  const double s = seconds_since(t0);
  EXPECT_LT(s, 1.0) << "the old compiler took 7.8 s (31 s on a loaded 2-core VM)";
  EXPECT_LT(g.size(), 64u << 10) << "one rule for the node, one alternative for its 59,049 spellings";
  EXPECT_TRUE(matches(g, object_of(1000)));
  EXPECT_FALSE(matches(g, object_of(999)));
}

// Row 9: an array index too large for any integer type is the schema's mistake.
TEST(GrammarSchemaHostile, PointerIndexOverflowIsAnErrorNamingThePointer) {
  for (const char* ptr : {"#/prefixItems/99999999999999999999", "#/prefixItems/18446744073709551616",
                          "#/prefixItems/18446744073709551615", "#/prefixItems/1"}) {
    const std::string schema =
        fmt::format(R"({{"type":"array","prefixItems":[{{"type":"null"}}],"items":{{"$ref":"{}"}}}})", ptr);
    std::string e;
    try {
      compile(schema);
    } catch (const k3::Error& err) { e = err.what(); }  // any other exception escapes and fails the test
    EXPECT_NE(e.find("points at nothing"), std::string::npos) << ptr << " → " << e;
    EXPECT_NE(e.find(ptr), std::string::npos) << e;
  }
  EXPECT_TRUE(ok(R"({"type":"array","prefixItems":[{"type":"null"}],"items":{"$ref":"#/prefixItems/0"}})",
                 "[null,null]"));
}

// Row 9: a 10,000-value enum is a trie: one parse alive, not 10,000 ("more than 4096 parses
// alive" at the first token before), and a grammar about as large as its values.
TEST(GrammarSchemaHostile, LargeEnumIsATrie) {
  std::vector<std::string> values;
  std::string schema = R"({"enum":[)";
  size_t value_bytes = 0;
  for (int i = 0; i < 10000; ++i) {
    std::string v = fmt::format(R"("item-{:05d}-{}")", i * 7 % 10000, i % 3 ? "é" : "è");
    values.push_back(v);
    value_bytes += v.size();
    schema += (i ? "," : "") + v;
  }
  schema += R"(,12,123,-1.5,null,true,{"a":[1,"x"]},[],"item-0")";  // prefixes of each other, and a repeat
  schema += "]}";
  const auto t0 = std::chrono::steady_clock::now();
  const std::string g = compile(schema);
  EXPECT_LT(seconds_since(t0), 1.0);
  EXPECT_LT(g.size(), 3 * value_bytes) << "the grammar grows with the values' bytes";
  auto grammar = std::make_shared<const Grammar>(parse_gbnf(g));
  auto vocab = test::byte_vocab();
  for (size_t i = 0; i < values.size(); i += 97) {
    GrammarMatcher m(grammar, vocab);
    ASSERT_TRUE(test::feed_bytes(m, values[i]) && m.can_end()) << values[i];
  }
  for (const char* v : {"12", "123", "-1.5", "null", "true", R"({"a":[1,"x"]})", "[]", R"("item-0")"}) {
    GrammarMatcher m(grammar, vocab);
    EXPECT_TRUE(test::feed_bytes(m, v) && m.can_end()) << v;
  }
  for (const char* v : {"1", "1234", R"("item-00000-é)", R"("item-10000-é")", R"("item-00000-é")", "nul",
                        R"({"a":[1]})", R"("item-)"}) {
    GrammarMatcher m(grammar, vocab);
    EXPECT_FALSE(test::feed_bytes(m, v) && m.can_end()) << v;
  }
}

// The same for anyOf over const branches (the usual way to give each value a title), and a
// long const referenced from many places is one rule, not a copy per use.
TEST(GrammarSchemaHostile, AnyOfConstsAndLongConstsStaySmall) {
  std::string branches;
  for (int i = 0; i < 5000; ++i)
    branches += fmt::format(R"({}{{"const":"v{}","title":"t{}"}})", i ? "," : "", i, i);
  const std::string g = compile(R"({"anyOf":[)" + branches + R"(,{"type":"integer"}]})");
  EXPECT_TRUE(matches(g, R"("v4999")"));
  EXPECT_TRUE(matches(g, R"("v0")"));
  EXPECT_TRUE(matches(g, "-17"));
  EXPECT_FALSE(matches(g, R"("v5000")"));
  const std::string long_value(20'000, 'x');
  std::string props;
  for (int i = 0; i < 100; ++i) props += fmt::format(R"({}"p{}":{{"$ref":"#/$defs/long"}})", i ? "," : "", i);
  const std::string s = fmt::format(
      R"({{"$defs":{{"long":{{"const":"{}"}}}},"type":"object","properties":{{{}}}}})", long_value, props);
  std::string g2;
  ASSERT_NO_THROW(g2 = compile(s));
  EXPECT_LT(g2.size(), 40'000u);
  EXPECT_TRUE(matches(g2, fmt::format(R"({{"p7":"{}"}})", long_value)));
}

// The same branch many times (one $ref repeated, a repeated type) is one alternative: the old
// compiler wrote it 5000 times, 5000 parses of the same text, refused at the first token.
// Past 1024 distinct alternatives an anyOf is refused at compile time (a 400), not at decode.
TEST(GrammarSchemaHostile, RepeatedAlternativesAreOneParse) {
  std::string refs;
  for (int i = 0; i < 5000; ++i) refs += fmt::format(R"({}{{"$ref":"#/$defs/a"}})", i ? "," : "");
  EXPECT_TRUE(
      ok(R"({"$defs":{"a":{"type":"array","items":{"type":"integer"}}},"anyOf":[)" + refs + "]}", "[1,2]"));
  std::string types;
  for (int i = 0; i < 5000; ++i) types += i ? R"(,"string")" : R"("string")";
  EXPECT_TRUE(ok(R"({"type":[)" + types + R"(,"null"]})", R"("x")"));
  std::string distinct;
  for (int i = 0; i < 1025; ++i)
    distinct += fmt::format(R"({}{{"type":"string","minLength":{},"maxLength":{}}})", i ? "," : "", i / 2,
                            999 - i % 2);
  EXPECT_NE(error_of(R"({"anyOf":[)" + distinct + "]}").find("more than 1024 distinct alternatives"),
            std::string::npos);
}

// A $ref cycle that consumes nothing would be a left-recursive grammar: the compiler says so.
TEST(GrammarSchemaHostile, RefCycleWithoutContentIsAnError) {
  for (const char* s :
       {R"({"$ref":"#"})", R"({"anyOf":[{"type":"null"},{"$ref":"#"}]})",
        R"({"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"allOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"})"}) {
    const std::string e = error_of(s);
    EXPECT_NE(e.find("cycle"), std::string::npos) << s << " → " << e;
  }
  // Through an object or an array it is recursion, and fine.
  EXPECT_TRUE(ok(R"({"anyOf":[{"type":"null"},{"type":"array","items":{"$ref":"#"}}]})", "[[null],[]]"));
}

// Work that grew with a product of two sizes: properties × required, allOf merges, and
// references into a large $defs (each lookup scanned the object).
TEST(GrammarSchemaHostile, NoQuadraticPaths) {
  // Seconds to compile (or refuse) a parsed schema; the outcome is not the point here.
  auto seconds_for = [](const std::string& text) {
    const Json schema = text::parse_json_exact(text);
    const auto t0 = std::chrono::steady_clock::now();
    try {
      json_schema_to_gbnf(schema);
    } catch (const k3::Error&) {}
    return seconds_since(t0);
  };
  const int n = 40000;
  std::string props, req;
  for (int i = 0; i < n; ++i) {
    props += fmt::format(R"({}"p{}":{{}})", i ? "," : "", i);
    req += fmt::format(R"({}"p{}")", i ? "," : "", n - 1 - i);
  }
  // The old compiler: 0.75 s at 20,000 and 3 s at 40,000 (each required name searched among
  // the properties), and 2.2 s at 20,000 (each merged property searched among the merged
  // ones). Here 0.1 s.
  EXPECT_LT(
      seconds_for(fmt::format(R"({{"type":"object","properties":{{{}}},"required":[{}]}})", props, req)),
      1.0);
  EXPECT_LT(
      seconds_for(fmt::format(R"({{"allOf":[{{"properties":{{{}}}}},{{"required":[{}]}}]}})", props, req)),
      1.0);
  // 40,000 references into a $defs of 40,000 (each lookup scanned the object): 7 s before.
  const int m = 40000;
  std::string defs, refs;
  for (int i = 0; i < m; ++i) {
    defs += fmt::format(R"({}"d{}":{{"type":"null"}})", i ? "," : "", i);
    refs += fmt::format(R"({}{{"$ref":"#/$defs/d{}"}})", i ? "," : "", m - 1 - (i * 7919) % m);
  }
  EXPECT_LT(seconds_for(fmt::format(R"({{"$defs":{{{}}},"type":"array","prefixItems":[{}]}})", defs, refs)),
            1.0);
}

// Long keys on the way down: the old compiler built each node's JSON-pointer path as a
// string, so 20,000 properties under 40 levels of 25 KB keys copied 20 GB.
TEST(GrammarSchemaHostile, LongKeysOnThePathCostNothing) {
  std::string leaf = R"({"type":"object","properties":{)";
  for (int i = 0; i < 20000; ++i) leaf += fmt::format(R"({}"p{}":{{"type":"null"}})", i ? "," : "", i);
  leaf += "}}";
  std::string s = leaf;
  for (int level = 0; level < 40; ++level)
    s = fmt::format(R"({{"type":"object","properties":{{"{}{}":{}}}}})", level, std::string(25000, 'k'), s);
  const Json schema = text::parse_json_exact(s);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    json_schema_to_gbnf(schema);
  } catch (const k3::Error&) {
  }  // (the keys are written in the grammar too: over 1 MiB; the point is the time)
  EXPECT_LT(seconds_since(t0), 1.0);
}

bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

// The compile ticks its budget: past the deadline, or when the client has gone, it stops.
TEST(GrammarSchemaHostile, BudgetStopsTheCompile) {
  std::string values;
  for (int i = 0; i < 20000; ++i) values += fmt::format(R"({}"value-{}")", i ? "," : "", i);
  const Json schema = text::parse_json_exact(R"({"type":"array","items":{"enum":[)" + values + "]}}");
  WorkBudget expired("compiling the schema", std::chrono::milliseconds(0));
  EXPECT_THROW(json_schema_to_gbnf(schema, {true, "", &expired}), BudgetExceeded);
  int asked = 0;
  WorkBudget gone("compiling the schema", std::chrono::hours(1), [&] { return ++asked > 1; });
  EXPECT_THROW(json_schema_to_gbnf(schema, {true, "", &gone}), Cancelled);
  WorkBudget enough("compiling the schema", std::chrono::seconds(30));
  EXPECT_NO_THROW(json_schema_to_gbnf(schema, {true, "", &enough}));
  EXPECT_GT(enough.ticks(), 20000u) << "every value is counted";
}

// Messages repeat at most 200 bytes of what the client wrote, cut at a character boundary
// (the server puts them in a JSON answer), and every problem is a k3::Error.
TEST(GrammarSchemaHostile, MessagesAreShortAndEveryProblemIsAnError) {
  std::string name;
  for (int i = 0; i < 50000; ++i) name += "é";
  for (const std::string& s :
       {R"({"type":")" + name + R"("})", R"({"type":["string",")" + name + R"("]})",
        R"({"$ref":"#/$defs/)" + name + R"("})",
        R"({"type":"object","properties":{")" + name + R"(":{"type":"string","pattern":"x"}}})"}) {
    const std::string e = error_of(s);
    EXPECT_FALSE(e.empty());
    EXPECT_LT(e.size(), 600u) << e.substr(0, 300);
    EXPECT_TRUE(valid_utf8(e)) << "cut inside a character";
  }
  for (const char* s : {R"({"enum":5})", R"({"allOf":[{"required":[1]},{"required":["a"]}]})",
                        R"({"type":[1]})", R"({"$ref":7})", R"({"$ref":"#/$defs/x/~2"})", R"({"anyOf":{}})",
                        R"({"type":"array","items":{"$ref":"#/items/x"}})",
                        R"({"type":"integer","minimum":1e308,"maximum":1e309})"}) {
    try {
      compile(s);
    } catch (const k3::Error&) { continue; }
    ADD_FAILURE() << "no error for " << s;
  }
}

}  // namespace
}  // namespace k3::grammar
