// The JSON-schema compiler: exact sets for integers, formats, lengths and keys; refusals in
// strict mode; limits; and every schema of the corpus sampled with random logits through the
// matcher ending in JSON (validation against the schemas themselves is done by ajv in
// tests/e2e/structured_random.test.mjs).
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <regex>
#include <sstream>

#include "core/error.h"
#include "grammar/json_schema.h"
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

}  // namespace
}  // namespace k3::grammar
