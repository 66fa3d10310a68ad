// Python's str.lower() and Jinja2's dictsort order (KeyOrder::CaseInsensitive), against
// tests/data/text/lower_sort_cases.json (made by scripts/gen_lower_fixture.py with
// /usr/bin/python3; see tests/data/README.md): lowercase of every code point, Final_Sigma
// contexts, sorted(keys, key=str.lower) for key sets in many scripts, and full --jinja renders
// of Kimi-K3.jinja by Jinja2 for tool and response schemas with such keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include "text/chat_test_util.h"
#include "text/chat_template.h"
#include "text/json_py.h"
#include "text/unicode.h"
#include "text/unicode_lower.h"

using namespace k3::text;

namespace {

const Json& fixture() {
  static const Json f = k3::test::load_text_json("lower_sort_cases.json");
  return f;
}

std::string utf8(uint32_t cp) {
  std::string s;
  unicode::append_utf8(s, cp);
  return s;
}

// What Jinja's dictsort does to one mapping, as ordered JSON text (values are positions).
std::string dictsorted(const Json& keys) {
  Json obj = Json::object();
  for (size_t i = 0; i < keys.size(); ++i) obj[keys[i].get<std::string>()] = i;
  return py_dumps(obj, {true, KeyOrder::CaseInsensitive});
}

std::string in_order(const Json& sorted_keys, const Json& keys) {
  std::map<std::string, size_t> pos;
  for (size_t i = 0; i < keys.size(); ++i) pos[keys[i].get<std::string>()] = i;
  Json obj = Json::object();
  for (const Json& k : sorted_keys) obj[k.get<std::string>()] = pos.at(k.get<std::string>());
  return py_dumps(obj, {true, KeyOrder::Insertion});
}

}  // namespace

TEST(UnicodeLower, TablesAreFromTheFixturesPython) {
  EXPECT_EQ(std::string(py_lower_python_version()), fixture()["python"].get<std::string>());
  EXPECT_EQ(std::string(py_lower_unicode_version()), fixture()["unicode"].get<std::string>());
}

TEST(UnicodeLower, EveryCodePointAsPython) {
  std::map<uint32_t, std::string> mapped;
  for (const Json& m : fixture()["lower_all"]) mapped[m[0].get<uint32_t>()] = m[1].get<std::string>();
  ASSERT_GT(mapped.size(), 1400u);
  int wrong = 0, checked = 0;
  for (uint32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    auto it = mapped.find(cp);
    const std::string want = it == mapped.end() ? utf8(cp) : it->second;
    ++checked;
    if (py_lower(utf8(cp)) != want && ++wrong <= 10) ADD_FAILURE() << "U+" << std::hex << cp;
  }
  std::printf("[py_lower] %d code points, %zu with a lowercase, %d wrong\n", checked, mapped.size(), wrong);
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(py_lower("\xC4\xB0"), "i\xCC\x87");     // İ -> i + U+0307
  EXPECT_EQ(py_lower("\xE1\xBA\x9E"), "\xC3\x9F");  // ẞ -> ß
}

TEST(UnicodeLower, StringsAndFinalSigmaAsPython) {
  int n = 0;
  for (const char* part : {"lower", "sigma_probes"}) {
    for (const Json& c : fixture()[part]) {
      const std::string s = c[0], want = c[1];
      EXPECT_EQ(py_lower(s), want) << part << ": [" << s << "]";
      ++n;
    }
  }
  std::printf("[py_lower] %d strings (Final_Sigma probes at every class boundary included)\n", n);
  EXPECT_GT(n, 6000);
  EXPECT_EQ(py_lower("ΟΔΟΣ"), "οδος");
  EXPECT_EQ(py_lower("ΟΔΟΣ ΟΔΟΣ"), "οδος οδος");
  EXPECT_EQ(py_lower("Σ"), "σ");        // nothing cased before it
  EXPECT_EQ(py_lower("ΑΣΑ"), "ασα");    // a cased letter follows
  EXPECT_EQ(py_lower("ΑΣ'"), "ας'");    // case-ignorable after it, then the end
  EXPECT_EQ(py_lower("Α'Σ"), "α'ς");    // case-ignorable skipped looking back
  EXPECT_EQ(py_lower("ΑΣ'Β"), "ασ'β");  // ... and looking forward
}

TEST(UnicodeLower, InvalidBytesAreKept) {
  EXPECT_EQ(py_lower("A\xFF"
                     "B"),
            "a\xFF"
            "b");
  EXPECT_EQ(py_lower("\xC3"
                     "Ä"),
            "\xC3"
            "ä");
  EXPECT_EQ(py_lower("Ä\xC3"), "ä\xC3");
  EXPECT_EQ(py_lower("Α\xFFΣ"), "α\xFFσ");  // an invalid byte is neither cased nor ignorable
}

TEST(JsonPyDictsort, KeyOrderAsPythonSortedByLower) {
  int n = 0, differs_from_ascii = 0;
  for (const Json& c : fixture()["sorts"]) {
    const Json& keys = c["keys"];
    const std::string want = in_order(c["sorted"], keys);
    EXPECT_EQ(dictsorted(keys), want) << keys.dump();
    // How many of these sets the old ASCII-only fold got wrong (the bug this guards).
    std::vector<std::string> ascii;
    for (const Json& k : keys) ascii.push_back(k.get<std::string>());
    std::vector<size_t> idx(ascii.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    auto fold = [](std::string s) {
      for (char& ch : s)
        if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch + 32);
      return s;
    };
    std::stable_sort(idx.begin(), idx.end(),
                     [&](size_t a, size_t b) { return fold(ascii[a]) < fold(ascii[b]); });
    Json old = Json::array();
    for (size_t i : idx) old.push_back(ascii[i]);
    differs_from_ascii += in_order(old, keys) != want;
    ++n;
  }
  std::printf("[dictsort] %d key sets in Python's order (%d of them differ from an ASCII-only fold)\n", n,
              differs_from_ascii);
  EXPECT_GT(n, 600);
  EXPECT_GT(differs_from_ascii, 100);
  // Nested mappings are sorted at every level; arrays keep their order.
  Json v = parse_json_exact(R"({"Über":{"ö":1,"Ä":2},"über":[{"Σ":1,"α":2}],"apfel":0})");
  EXPECT_EQ(py_dumps(v, {true, KeyOrder::CaseInsensitive}),
            R"({"apfel":0,"Über":{"Ä":2,"ö":1},"über":[{"α":2,"Σ":1}]})");
}

TEST(ChatTemplate, JinjaModeUnicodeSchemaKeysByteIdentical) {
  const Json& renders = fixture()["renders"];
  if (fixture()["jinja2"].is_null()) GTEST_SKIP() << "fixture made without jinja2: no renders";
  ASSERT_GE(renders.size(), 30u);
  int passed = 0;
  for (const Json& c : renders) {
    SCOPED_TRACE(c["name"].get<std::string>());
    ChatTemplateInput in;
    in.messages = c["input"]["messages"];
    in.tools = c["input"]["tools"];
    in.vars = c["input"]["kwargs"];
    std::string got = render_chat(in, TemplateMode::Jinja);
    EXPECT_EQ(got, c["rendered"].get<std::string>());
    passed += got == c["rendered"].get<std::string>();
    EXPECT_NO_THROW(render_chat(in, TemplateMode::Engine));
  }
  std::printf("[chat-template jinja] %d / %zu unicode-key renders byte-identical (Jinja2 %s)\n", passed,
              renders.size(), fixture()["jinja2"].get<std::string>().c_str());
}
