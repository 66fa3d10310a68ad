// Unicode property tables (generated from UCD 15.0) and the UTF-8 helpers.
#include <gtest/gtest.h>

#include <string>

#include "text/unicode.h"

namespace k3::text {
namespace {

using GC = GeneralCategory;
using namespace unicode;

TEST(Unicode, Version) { EXPECT_STREQ(version(), "15.0.0"); }

TEST(Unicode, Categories) {
  EXPECT_EQ(category('A'), GC::Lu);
  EXPECT_EQ(category('z'), GC::Ll);
  EXPECT_EQ(category('5'), GC::Nd);
  EXPECT_EQ(category(' '), GC::Zs);
  EXPECT_EQ(category('$'), GC::Sc);
  EXPECT_EQ(category('_'), GC::Pc);
  EXPECT_EQ(category(0x01C5), GC::Lt);   // ǅ
  EXPECT_EQ(category(0x02B0), GC::Lm);   // ʰ
  EXPECT_EQ(category(0x0301), GC::Mn);   // combining acute
  EXPECT_EQ(category(0x0903), GC::Mc);   // Devanagari visarga
  EXPECT_EQ(category(0x2160), GC::Nl);   // Roman numeral one
  EXPECT_EQ(category(0x00B2), GC::No);   // superscript two
  EXPECT_EQ(category(0x1F600), GC::So);  // emoji
  EXPECT_EQ(category(0x200B), GC::Cf);   // ZWSP
  EXPECT_EQ(category(0xE000), GC::Co);
  EXPECT_EQ(category(0xD800), GC::Cs);
  EXPECT_EQ(category(0xFFFF), GC::Cn);  // noncharacter
  EXPECT_EQ(category(0x110000), GC::Cn);
  // Unicode 15.0 additions are assigned (CJK Ext. H); 15.1's Ext. I is not.
  EXPECT_EQ(category(0x31350), GC::Lo);
  EXPECT_EQ(category(0x2EBF0), GC::Cn);
}

TEST(Unicode, HanScript) {
  for (uint32_t cp :
       {0x4E00u, 0x9FA5u, 0x3005u, 0x3007u, 0x3021u, 0x2E80u, 0x2F00u, 0x20000u, 0x30000u, 0x31350u})
    EXPECT_TRUE(flags(cp) & kHan) << std::hex << cp;
  for (uint32_t cp : {0x3041u /* hiragana */, 0xAC00u /* hangul */, 0x3001u, 0x2EBF0u, 0x61u})
    EXPECT_FALSE(flags(cp) & kHan) << std::hex << cp;
}

TEST(Unicode, WhiteSpaceVersusPythonIsspace) {
  for (uint32_t cp : {0x09u, 0x0Au, 0x0Bu, 0x0Cu, 0x0Du, 0x20u, 0x85u, 0xA0u, 0x1680u, 0x2000u, 0x2028u,
                      0x2029u, 0x3000u}) {
    EXPECT_TRUE(flags(cp) & kWhiteSpace) << std::hex << cp;
    EXPECT_TRUE(flags(cp) & kPySpace) << std::hex << cp;
  }
  // U+001C..001F: str.isspace() but not White_Space (docs/tokenize.md).
  for (uint32_t cp = 0x1C; cp <= 0x1F; ++cp) {
    EXPECT_FALSE(flags(cp) & kWhiteSpace);
    EXPECT_TRUE(flags(cp) & kPySpace);
  }
  for (uint32_t cp : {0x200Bu, 0xFEFFu, 0x78u}) EXPECT_FALSE(flags(cp) & (kWhiteSpace | kPySpace));
}

TEST(Unicode, DecodeRejectsMalformed) {
  auto d = [](std::string s) { return decode_utf8(s.data(), s.size()); };
  EXPECT_EQ(d("\xE4\xBD\xA0").cp, 0x4F60u);
  EXPECT_EQ(d("\xE4\xBD\xA0").len, 3u);
  EXPECT_EQ(d("\xF0\x9F\x98\x80").cp, 0x1F600u);
  for (std::string bad :
       {"\x80", "\xC0\xAF", "\xE0\x80\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xE4\xBD", "\xFF"}) {
    auto r = d(bad);
    EXPECT_EQ(r.cp, kReplacement);
    EXPECT_EQ(r.len, 1u);
  }
  EXPECT_TRUE(is_valid_utf8("h\xC3\xA9llo \xEF\xBF\xBD"));
  EXPECT_FALSE(is_valid_utf8("h\xC3"));
  std::string s;
  for (uint32_t cp : {0x41u, 0xE9u, 0x4F60u, 0x1F600u}) append_utf8(s, cp);
  EXPECT_EQ(s, "A\xC3\xA9\xE4\xBD\xA0\xF0\x9F\x98\x80");
}

TEST(Unicode, CompletePrefixHoldsBackOnlyCompletableTails) {
  EXPECT_EQ(utf8_complete_prefix(""), 0u);
  EXPECT_EQ(utf8_complete_prefix("abc"), 3u);
  EXPECT_EQ(utf8_complete_prefix("ab\xE4"), 2u);
  EXPECT_EQ(utf8_complete_prefix("ab\xE4\xBD"), 2u);
  EXPECT_EQ(utf8_complete_prefix("ab\xE4\xBD\xA0"), 5u);
  EXPECT_EQ(utf8_complete_prefix("\xF0\x9F\x98"), 0u);
  EXPECT_EQ(utf8_complete_prefix("a\x80"), 2u);      // stray continuation: pass through
  EXPECT_EQ(utf8_complete_prefix("a\xFF"), 2u);      // never valid
  EXPECT_EQ(utf8_complete_prefix("a\xE0\x80"), 3u);  // E0 80 can never complete
  EXPECT_EQ(utf8_complete_prefix("a\xED\xA0"), 3u);  // surrogate range
  EXPECT_EQ(utf8_complete_prefix("a\xC3\xA9\xC3"), 3u);
}

}  // namespace
}  // namespace k3::text
