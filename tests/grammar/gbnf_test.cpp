// GBNF parsing, compilation checks, UTF-8 range encoding, and sentence matching.
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "grammar/utf8_ranges.h"
#include "grammar/grammar_test_util.h"

namespace k3::grammar {
namespace {

using test::matches;

std::string error_of(const std::string& gbnf) {
  try {
    parse_gbnf(gbnf);
  } catch (const k3::Error& e) { return e.what(); }
  return "";
}

TEST(GrammarGbnf, Literals_Classes_Repetition) {
  EXPECT_TRUE(matches(R"(root ::= "ab" "c")", "abc"));
  EXPECT_FALSE(matches(R"(root ::= "ab" "c")", "ab"));
  EXPECT_FALSE(matches(R"(root ::= "ab" "c")", "abcd"));
  EXPECT_TRUE(matches(R"(root ::= [a-c]+)", "abcabc"));
  EXPECT_FALSE(matches(R"(root ::= [a-c]+)", ""));
  EXPECT_TRUE(matches(R"(root ::= [a-c]*)", ""));
  EXPECT_TRUE(matches(R"(root ::= "x"? "y")", "y"));
  EXPECT_TRUE(matches(R"(root ::= "x"? "y")", "xy"));
  EXPECT_FALSE(matches(R"(root ::= "x"? "y")", "xxy"));
  const char* rep = R"(root ::= [0-9]{2,4})";
  EXPECT_FALSE(matches(rep, "1"));
  EXPECT_TRUE(matches(rep, "12"));
  EXPECT_TRUE(matches(rep, "1234"));
  EXPECT_FALSE(matches(rep, "12345"));
  EXPECT_TRUE(matches(R"(root ::= ("ab"){3})", "ababab"));
  EXPECT_FALSE(matches(R"(root ::= ("ab"){3})", "abab"));
  EXPECT_TRUE(matches(R"(root ::= "a"{2,} "b")", "aaaab"));
  EXPECT_FALSE(matches(R"(root ::= "a"{2,} "b")", "ab"));
}

TEST(GrammarGbnf, AlternativesRulesAndComments) {
  const char* g = R"(
    # a comment
    root ::= greeting " " name   # trailing comment
    greeting ::= "hi" | "hello"
    name ::= [A-Z] [a-z]*
  )";
  EXPECT_TRUE(matches(g, "hi Bob"));
  EXPECT_TRUE(matches(g, "hello X"));
  EXPECT_FALSE(matches(g, "hey Bob"));
  EXPECT_FALSE(matches(g, "hi bob"));
  // An empty alternative, and right recursion.
  EXPECT_TRUE(matches("root ::= \"(\" root \")\" | ", "((()))"));
  EXPECT_FALSE(matches("root ::= \"(\" root \")\" | ", "(()"));
}

TEST(GrammarGbnf, EscapesAndUnicode) {
  EXPECT_TRUE(matches(R"(root ::= "\n\t\\\"\x41\u00e9\U0001F600")", "\n\t\\\"A\xc3\xa9\xf0\x9f\x98\x80"));
  EXPECT_TRUE(matches(R"(root ::= "é中")", "\xc3\xa9\xe4\xb8\xad"));
  EXPECT_TRUE(matches(R"(root ::= [^"\\]+)", "abc\xe4\xb8\xad\xf0\x9f\x98\x80"));
  EXPECT_FALSE(matches(R"(root ::= [^"\\]+)", "ab\"c"));
  EXPECT_TRUE(matches(R"(root ::= [\]\-\[]+)", "]-["));
  EXPECT_TRUE(matches(R"(root ::= [α-ω]+)", "\xce\xb1\xcf\x89"));
  EXPECT_FALSE(matches(R"(root ::= [α-ω]+)", "a"));
  EXPECT_TRUE(matches(R"(root ::= .)", "\xf4\x8f\xbf\xbf"));  // U+10FFFF
  EXPECT_FALSE(matches(R"(root ::= .)", "\xed\xa0\x80"));     // a surrogate is not UTF-8
  EXPECT_FALSE(matches(R"(root ::= .)", "\xc0\x80"));         // overlong
  EXPECT_FALSE(matches(R"(root ::= .*)", "\xff"));
}

TEST(GrammarGbnf, ErrorsNameTheProblem) {
  EXPECT_NE(error_of("root ::= foo").find("rule 'foo' is used"), std::string::npos);
  EXPECT_NE(error_of("root ::= root \"a\" | \"b\"").find("left-recursive"), std::string::npos);
  EXPECT_NE(error_of("root ::= (\"a\"?)*").find("left-recursive"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\" root").find("can never finish"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"abc").find("unfinished string literal"), std::string::npos);
  EXPECT_NE(error_of("root ::= [abc").find("unfinished character class"), std::string::npos);
  EXPECT_NE(error_of("root ::= [z-a]").find("out of order"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"{5,2}").find("n < m"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"{100000}").find("larger than"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"\\q\"").find("unknown escape"), std::string::npos);
  EXPECT_NE(error_of("x ::= \"a\"").find("no rule named 'root'"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"\nroot ::= \"b\"").find("defined twice"), std::string::npos);
  EXPECT_NE(error_of("root ::= ( \"a\"").find("expected ')'"), std::string::npos);
  EXPECT_NE(error_of("root ::= @").find("offset 9"), std::string::npos);
  EXPECT_NE(error_of("").find("empty"), std::string::npos);
  EXPECT_NE(error_of(std::string(200, '(')).find("rule name"), std::string::npos);
  EXPECT_NE(error_of("root ::= " + std::string(300, '(')).find("nested deeper"), std::string::npos);
  // Size limits hold before anything large is built.
  EXPECT_NE(error_of(std::string(5u << 20, ' ')).find("larger than the limit"), std::string::npos);
  GbnfLimits small;
  small.max_symbols = 100;
  EXPECT_THROW(parse_gbnf("root ::= \"" + std::string(200, 'a') + "\"", "root", small), k3::Error);
  EXPECT_THROW(parse_gbnf("root ::= (\"ab\"){99}", "root", small), k3::Error);
}

TEST(GrammarGbnf, UnproductiveAlternativesArePruned) {
  // The second alternative can never finish: it must not be offered.
  EXPECT_TRUE(matches("root ::= \"a\" | \"b\" loop\nloop ::= \"c\" loop", "a"));
  EXPECT_FALSE(matches("root ::= \"a\" | \"b\" loop\nloop ::= \"c\" loop", "b"));
}

// Every code point is matched by the byte sequences of a set exactly when it is in the set.
TEST(GrammarUtf8, SequencesMatchExactlyTheSet) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 12; ++trial) {
    std::vector<CodeRange> set;
    const int n = 1 + static_cast<int>(rng() % 6);
    for (int i = 0; i < n; ++i) {
      uint32_t a = rng() % 0x110000, len = (trial % 3 == 0) ? rng() % 0x110000 : rng() % 3000;
      set.push_back({a, std::min<uint32_t>(a + len, 0x10FFFF)});
    }
    if (trial == 0) set = {{0, 0x10FFFF}};
    std::vector<CodeRange> norm = normalize_ranges(set);
    std::vector<ByteRangeSeq> seqs = utf8_sequences(set);
    auto in_set = [&](uint32_t cp) {
      for (CodeRange r : norm)
        if (cp >= r.lo && cp <= r.hi) return true;
      return false;
    };
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp += (cp < 0x20000 ? 1 : 37)) {
      if (cp >= 0xD800 && cp <= 0xDFFF) continue;
      std::vector<uint8_t> b;
      append_utf8(b, cp);
      int hits = 0;
      for (const auto& s : seqs) {
        if (s.size() != b.size()) continue;
        bool ok = true;
        for (size_t i = 0; i < b.size(); ++i) ok = ok && b[i] >= s[i].first && b[i] <= s[i].second;
        hits += ok;
      }
      ASSERT_EQ(hits, in_set(cp) ? 1 : 0) << "cp " << cp << " trial " << trial;
    }
    // The complement is disjoint and covers the rest.
    std::vector<CodeRange> comp = complement_ranges(set);
    for (CodeRange c : comp)
      for (CodeRange r : norm) ASSERT_TRUE(c.hi < r.lo || c.lo > r.hi);
  }
}

}  // namespace
}  // namespace k3::grammar
