// Grammar fuzz: random grammars × random token sequences. Every mask is checked token by
// token against an independent recognizer (an Earley parser over the compiled rules): a
// token is allowed exactly when the text so far plus that token is still a prefix of some
// sentence (so the mask never lets the grammar into a dead end), end-of-generation exactly
// when the text is a sentence, and a mask is never empty while the grammar can go on.
// Sentences sampled from each grammar are accepted under random tokenizations.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "core/error.h"
#include "grammar/grammar_test_util.h"

namespace k3::grammar {
namespace {

// ---- the reference: Earley recognition over units (bytes 0..255, named tokens 256+k) ----
class Earley {
 public:
  explicit Earley(const Grammar& g) : g_(g) {
    for (uint32_t r = 0; r < g.rule_alts.size(); ++r)
      for (uint32_t a : g.rule_alts[r]) rule_of_[a] = r;
    nullable_.assign(g.rule_alts.size(), false);
    for (bool changed = true; changed;) {
      changed = false;
      for (uint32_t r = 0; r < g.rule_alts.size(); ++r) {
        if (nullable_[r]) continue;
        for (uint32_t a : g.rule_alts[r]) {
          bool ok = true;
          for (uint32_t p = a; g.syms[p].kind != Sym::End; ++p)
            ok = ok && g.syms[p].kind == Sym::Ref && nullable_[g.syms[p].arg];
          if (ok) {
            nullable_[r] = true;
            changed = true;
            break;
          }
        }
      }
    }
    chart_.emplace_back();
    for (uint32_t a : g.rule_alts[g.root]) add(0, {a, a, 0});
    close(0);
  }

  bool viable() const { return !chart_.back().empty(); }
  bool complete() const {
    for (const Item& it : chart_.back())
      if (g_.syms[it.pos].kind == Sym::End && it.origin == 0 && rule_of_.at(it.alt) == g_.root) return true;
    return false;
  }
  void pop() { chart_.pop_back(); }
  void push(uint32_t unit) {
    const size_t i = chart_.size() - 1;
    chart_.emplace_back();
    for (const Item& it : std::vector<Item>(chart_[i].begin(), chart_[i].end())) {
      Sym s = g_.syms[it.pos];
      bool m = unit < 256 ? s.kind == Sym::Bytes && byte_in(g_.byte_sets[s.arg], static_cast<uint8_t>(unit))
                          : s.kind == Sym::Token && s.arg == unit - 256;
      if (m) add(i + 1, {it.alt, it.pos + 1, it.origin});
    }
    close(i + 1);
  }

 private:
  struct Item {
    uint32_t alt, pos;
    size_t origin;
    bool operator<(const Item& o) const {
      return std::tie(alt, pos, origin) < std::tie(o.alt, o.pos, o.origin);
    }
  };
  void add(size_t i, Item it) {
    if (chart_[i].insert(it).second) agenda_.push_back(it);
  }
  void close(size_t i) {
    while (!agenda_.empty()) {
      Item it = agenda_.back();
      agenda_.pop_back();
      Sym s = g_.syms[it.pos];
      if (s.kind == Sym::Ref) {
        for (uint32_t a : g_.rule_alts[s.arg]) add(i, {a, a, i});
        if (nullable_[s.arg]) add(i, {it.alt, it.pos + 1, it.origin});
      } else if (s.kind == Sym::End) {
        const uint32_t r = rule_of_.at(it.alt);
        for (const Item& p : std::vector<Item>(chart_[it.origin].begin(), chart_[it.origin].end())) {
          Sym ps = g_.syms[p.pos];
          if (ps.kind == Sym::Ref && ps.arg == r) add(i, {p.alt, p.pos + 1, p.origin});
        }
      }
    }
  }
  const Grammar& g_;
  std::map<uint32_t, uint32_t> rule_of_;
  std::vector<bool> nullable_;
  std::vector<std::set<Item>> chart_;
  std::vector<Item> agenda_;
};

// ---- random grammars ----
std::string random_gbnf(std::mt19937& rng) {
  static const char* kTerminals[] = {"\"a\"", "\"b\"", "\"ab\"", "\"é\"", "\"中\"", "[a-c]",  "[^a]",
                                     ".",     "[é-ë]", "<|sp|>", "\"\"",  "[0-9]",  "\"xyz\""};
  static const char* kPost[] = {"", "", "", "*", "+", "?", "{2}", "{0,3}", "{1,}"};
  const int n_rules = 2 + static_cast<int>(rng() % 4);
  std::string out;
  for (int r = 0; r < n_rules; ++r) {
    out += "r" + std::to_string(r) + " ::= ";
    const int n_alts = 1 + static_cast<int>(rng() % 3);
    for (int a = 0; a < n_alts; ++a) {
      if (a) out += " | ";
      const int n_items = static_cast<int>(rng() % 4);
      bool consumed = false;
      for (int k = 0; k < n_items; ++k) {
        std::string item;
        const unsigned pick = rng() % 10;
        if (pick < 3) {
          // Rules after this one at any place; this one or earlier only after a terminal.
          int target =
              consumed ? static_cast<int>(rng() % n_rules) : r + 1 + static_cast<int>(rng() % n_rules);
          if (target >= n_rules) target = n_rules - 1;
          if (target == r && !consumed) target = r + 1 < n_rules ? r + 1 : -1;
          if (target < 0) item = kTerminals[rng() % std::size(kTerminals)];
          else item = "r" + std::to_string(target);
        } else if (pick < 4) {
          item = std::string("(") + kTerminals[rng() % std::size(kTerminals)] + " | " +
                 kTerminals[rng() % std::size(kTerminals)] + ")";
        } else {
          item = kTerminals[rng() % std::size(kTerminals)];
        }
        consumed = consumed || item[0] == '"' || item[0] == '[' || item[0] == '.' || item[0] == '<';
        out += item + kPost[rng() % std::size(kPost)] + " ";
      }
    }
    out += "\n";
  }
  return "root ::= r0\n" + out;
}

// A random sentence as units, or false when the derivation got too long.
bool random_sentence(const Grammar& g, const std::vector<size_t>& min_len, std::mt19937& rng, uint32_t rule,
                     int depth, std::vector<uint32_t>& out) {
  if (out.size() > 200) return false;
  const auto& alts = g.rule_alts[rule];
  uint32_t a;
  if (depth < 6) {
    a = alts[rng() % alts.size()];
  } else {  // deep: the shortest alternative, so the derivation ends
    a = alts[0];
    size_t best = SIZE_MAX;
    for (uint32_t c : alts) {
      size_t len = 0;
      for (uint32_t p = c; g.syms[p].kind != Sym::End; ++p)
        len += g.syms[p].kind == Sym::Ref ? min_len[g.syms[p].arg] : 1;
      if (len < best) {
        best = len;
        a = c;
      }
    }
  }
  for (uint32_t p = a; g.syms[p].kind != Sym::End; ++p) {
    Sym s = g.syms[p];
    if (s.kind == Sym::Ref) {
      if (!random_sentence(g, min_len, rng, s.arg, depth + 1, out)) return false;
    } else if (s.kind == Sym::Token) {
      out.push_back(256 + s.arg);
    } else {
      std::vector<uint8_t> bytes;
      for (int b = 0; b < 256; ++b)
        if (byte_in(g.byte_sets[s.arg], static_cast<uint8_t>(b))) bytes.push_back(static_cast<uint8_t>(b));
      out.push_back(bytes[rng() % bytes.size()]);
    }
  }
  return true;
}

std::vector<size_t> min_lengths(const Grammar& g) {
  std::vector<size_t> m(g.rule_alts.size(), SIZE_MAX / 4);
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t r = 0; r < g.rule_alts.size(); ++r)
      for (uint32_t a : g.rule_alts[r]) {
        size_t len = 0;
        for (uint32_t p = a; g.syms[p].kind != Sym::End; ++p)
          len += g.syms[p].kind == Sym::Ref ? m[g.syms[p].arg] : 1;
        if (len < m[r]) {
          m[r] = len;
          changed = true;
        }
      }
  }
  return m;
}

struct FuzzVocab {
  std::shared_ptr<const TokenVocab> vocab;
  int32_t special = -1, eos = -1;
};

FuzzVocab fuzz_vocab(std::mt19937& rng) {
  // All bytes, multi-byte pieces over the grammar's alphabet, then <|sp|>, <|other|>, <|eos|>.
  static const char* kBits[] = {"a", "b", "c", "é", "中", "x", "y", "z", "0", "9", "ë"};
  std::set<std::string> extra;
  while (extra.size() < 40) {
    std::string p;
    const int n = 2 + static_cast<int>(rng() % 3);
    for (int i = 0; i < n; ++i) p += kBits[rng() % std::size(kBits)];
    if (rng() % 5 == 0) p.pop_back();  // pieces that end inside a code point
    extra.insert(p);
  }
  FuzzVocab v;
  v.vocab = test::byte_vocab(std::vector<std::string>(extra.begin(), extra.end()), {"<|sp|>", "<|other|>"});
  v.special = v.vocab->find_special("<|sp|>");
  v.eos = static_cast<int32_t>(v.vocab->size()) - 1;
  return v;
}

std::vector<uint32_t> units_of(const TokenVocab& v, int32_t id, int32_t special) {
  if (id == special) return {256};
  std::vector<uint32_t> u;
  for (unsigned char b : v.piece(id)) u.push_back(b);
  return u;
}

TEST(GrammarFuzz, MaskEqualsReferenceOnRandomGrammarsAndWalks) {
  std::mt19937 rng(20261204);
  int grammars = 0, rejected = 0, steps = 0, sentences = 0, ambiguous = 0;
  for (int trial = 0; trial < 400 && grammars < 120; ++trial) {
    const std::string text = random_gbnf(rng);
    std::shared_ptr<const Grammar> g;
    try {
      g = std::make_shared<const Grammar>(parse_gbnf(text));
    } catch (const k3::Error&) {
      ++rejected;  // left recursion or nothing that can finish: refused cleanly
      continue;
    }
    if (g->token_names.size() > 1) continue;
    ++grammars;
    FuzzVocab fv = fuzz_vocab(rng);
    const TokenVocab& V = *fv.vocab;
    SCOPED_TRACE(text);

    const int ambiguous_now = ambiguous;
    // Random walks: each step, every token of the vocabulary against the reference.
    for (int walk = 0; walk < 4; ++walk) {
      try {
        GrammarMatcher m(g, fv.vocab);
        Earley ref(*g);
        for (int step = 0; step < 30; ++step) {
          auto mask = m.allowed();
          std::vector<int32_t> allowed;
          for (int32_t id = 0; id < static_cast<int32_t>(V.size()); ++id) {
            bool expect;
            if (id == fv.eos) {
              expect = ref.complete();
            } else if (V.token_class(id) == TokenClass::Special && id != fv.special) {
              expect = false;
            } else if (id == fv.special && g->token_names.empty()) {
              expect = false;
            } else {
              const std::vector<uint32_t> units = units_of(V, id, fv.special);
              size_t pushed = 0;
              expect = true;
              for (uint32_t u : units) {
                ref.push(u);
                ++pushed;
                if (!ref.viable()) {
                  expect = false;
                  break;
                }
              }
              while (pushed--) ref.pop();
            }
            ASSERT_EQ(test::bit(mask, id), expect)
                << "token " << id << " '" << V.piece(id) << "' step " << step;
            ASSERT_EQ(m.allows(id), expect);
            if (expect) allowed.push_back(id);
          }
          ASSERT_FALSE(allowed.empty()) << "a live grammar blocked every token";
          ASSERT_EQ(m.can_end(), ref.complete());
          int32_t t = allowed[rng() % allowed.size()];
          if (t == fv.eos && allowed.size() > 1 && rng() % 4)
            t = allowed[0] == fv.eos ? allowed[1] : allowed[0];
          m.accept(t);
          ++steps;
          if (t == fv.eos) {
            ASSERT_TRUE(m.must_end());
            break;
          }
          for (uint32_t u : units_of(V, t, fv.special)) ref.push(u);
          if (m.must_end()) {
            auto end_mask = m.allowed();
            for (int32_t id = 0; id < static_cast<int32_t>(V.size()); ++id)
              ASSERT_EQ(test::bit(end_mask, id), id == fv.eos);
            break;
          }
        }
      } catch (const k3::Error& e) {
        // Exponentially ambiguous grammars (e.g. r ::= "b" r{0,3} | ) are refused cleanly;
        // anything else is a failure.
        ASSERT_NE(std::string(e.what()).find("too ambiguous"), std::string::npos) << e.what();
        ++ambiguous;
        break;
      }
    }
    if (ambiguous_now != ambiguous) continue;

    // Sampled sentences are accepted under a random tokenization, and then may end.
    const std::vector<size_t> min_len = min_lengths(*g);
    for (int k = 0; k < 10; ++k) {
      std::vector<uint32_t> s;
      if (!random_sentence(*g, min_len, rng, g->root, 0, s)) continue;
      if (s.size() > 40) continue;  // long sentences of ambiguous grammars may pass the limit
      GrammarMatcher m(g, fv.vocab);
      size_t i = 0;
      while (i < s.size()) {
        int32_t tok;
        if (s[i] >= 256) {
          tok = fv.special;
          ++i;
        } else {
          // The longest text token matching here, or a shorter one at random.
          std::vector<int32_t> cands{static_cast<int32_t>(s[i])};
          for (int32_t id = 256; id < static_cast<int32_t>(V.size()); ++id) {
            if (V.token_class(id) != TokenClass::Text) continue;
            const std::string& p = V.piece(id);
            bool ok = i + p.size() <= s.size();
            for (size_t j = 0; ok && j < p.size(); ++j) ok = s[i + j] == static_cast<unsigned char>(p[j]);
            if (ok) cands.push_back(id);
          }
          tok = cands[rng() % cands.size()];
          i += V.piece(tok).size();
        }
        ASSERT_TRUE(test::bit(m.allowed(), tok)) << "sentence token " << tok << " refused";
        m.accept(tok);
      }
      ASSERT_TRUE(m.can_end());
      ASSERT_TRUE(test::bit(m.allowed(), fv.eos));
      ++sentences;
    }
  }
  EXPECT_GE(grammars, 100);
  EXPECT_LE(ambiguous, grammars / 10);
  RecordProperty("ambiguous", ambiguous);
  EXPECT_GE(sentences, 500);
  RecordProperty("grammars", grammars);
  RecordProperty("rejected", rejected);
  RecordProperty("steps", steps);
}

TEST(GrammarMatcher, RefusesWhatTheMaskExcludesAndUnknownTokens) {
  auto g = std::make_shared<const Grammar>(parse_gbnf("root ::= \"ab\" <|sp|>"));
  auto v = test::byte_vocab({"ab", "abc"}, {"<|sp|>"});
  GrammarMatcher m(g, v);
  EXPECT_THROW(m.accept('b'), k3::Error);
  EXPECT_FALSE(m.allows(257));  // "abc" overshoots
  EXPECT_TRUE(m.allows(256));
  m.accept(256);
  EXPECT_FALSE(m.can_end());
  m.accept(v->find_special("<|sp|>"));
  EXPECT_TRUE(m.must_end());
  auto g2 = std::make_shared<const Grammar>(parse_gbnf("root ::= <|nope|>"));
  EXPECT_THROW(GrammarMatcher(g2, v), k3::Error);
}

TEST(GrammarMatcher, CachesStayBoundedOnLongGenerations) {
  // Nested brackets deepen the stack; a small cache limit forces flushes along the way.
  auto g = std::make_shared<const Grammar>(parse_gbnf("root ::= item\nitem ::= \"[\" item* \"]\" | [a-z]+"));
  auto v = test::byte_vocab({"[[", "]]", "ab"});
  MatcherLimits lim;
  lim.max_bytes = 1 << 20;
  GrammarMatcher m(g, v, lim);
  std::string text;
  for (int i = 0; i < 3000; ++i) text += "[";
  text += "x";
  for (int i = 0; i < 3000; ++i) text += "]";
  ASSERT_TRUE(test::feed_bytes(m, text));
  EXPECT_TRUE(m.can_end());
  EXPECT_GT(m.stats().flushes, 0u);
  EXPECT_LE(m.stats().peak_bytes, 1u << 20);
}

TEST(GrammarMatcher, AmbiguityBeyondTheLimitIsAnError) {
  // (a|a|…)* grows no stacks (sets dedupe), but "x"* "x"* … with many overlapping rules does.
  std::string text = "root ::= ";
  for (int i = 0; i < 14; ++i) text += "\"a\"* ";
  auto g = std::make_shared<const Grammar>(parse_gbnf(text));
  MatcherLimits lim;
  lim.max_stacks_per_state = 8;
  EXPECT_THROW(
      {
        GrammarMatcher m(g, test::byte_vocab(), lim);
        m.allowed();
      },
      k3::Error);
}

TEST(GrammarMatcher, WorkPerTokenIsBounded) {
  // Ambiguity that grows with the input but stays under the stack limit for a while: the
  // work budget stops it with a clear error instead of a stalled sampler.
  auto g = std::make_shared<const Grammar>(parse_gbnf("root ::= x\nx ::= [a-z] x{0,2} | [a-z]"));
  MatcherLimits lim;
  lim.max_work_per_token = 20000;
  GrammarMatcher m(g, test::byte_vocab(), lim);
  std::string err;
  try {
    for (int i = 0; i < 500; ++i) {
      m.allowed();
      m.accept('a');
    }
  } catch (const k3::Error& e) { err = e.what(); }
  EXPECT_NE(err.find("parser steps"), std::string::npos) << err;
}

}  // namespace
}  // namespace k3::grammar
