// grammar/gbnf: the GBNF parser and the checks on the compiled grammar (see gbnf.h).
#include "grammar/gbnf.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "core/error.h"
#include "grammar/utf8_ranges.h"
#include "grammar/work_budget.h"

namespace k3::grammar {

namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

using Alt = std::vector<Sym>;

// What the compiled grammar holds per rule, alternative and symbol (Grammar::bytes, with the
// parser's own per-rule bookkeeping): vector headers plus the allocator's rounding.
constexpr size_t kRuleBytes = 96;
constexpr size_t kAltBytes = 40;
constexpr size_t kSymBytes = sizeof(Sym);

std::string size_text(size_t bytes) {
  return bytes % (1u << 20) == 0 ? fmt::format("{} MiB", bytes >> 20) : fmt::format("{} KiB", bytes >> 10);
}

class Parser {
 public:
  explicit Parser(const GbnfLimits& lim) : lim_(lim) {}

  Grammar run(const std::vector<GbnfSource>& sources, std::string_view root_name) {
    size_t total = 0;
    for (const GbnfSource& src : sources) total += src.text.size();
    if (total > lim_.max_text_bytes)
      fail("grammar: {} bytes is larger than the limit of {}", total, lim_.max_text_bytes);
    for (const GbnfSource& src : sources) {
      s_ = src.text;
      p_ = 0;
      prefix_ = src.prefix;
      where_ = src.what.empty() ? std::string() : " in " + src.what;
      skip_space();
      if (p_ >= s_.size()) fail("grammar: empty (no rules){}", where_);
      while (p_ < s_.size()) parse_rule();
    }
    g_.rule_owner = owner_;
    for (const auto& [name, id] : ids_)
      if (!defined_[id])
        fail("grammar: rule '{}' is used (offset {}) but never defined", name, first_use_[id]);
    auto it = ids_.find(std::string(root_name));
    if (it == ids_.end()) fail("grammar: no rule named '{}' (the start rule)", root_name);
    g_.root = it->second;
    flatten();
    return std::move(g_);
  }

 private:
  // ---- lexing ----
  [[noreturn]] void error(std::string_view what) const {
    fail("grammar: {} at offset {}{}", what, p_, where_);
  }

  void skip_space() {
    while (p_ < s_.size()) {
      char c = s_[p_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++p_;
      } else if (c == '#') {
        while (p_ < s_.size() && s_[p_] != '\n') ++p_;
      } else {
        break;
      }
    }
  }

  std::string_view name_at(size_t p) const {
    size_t e = p;
    while (e < s_.size() && is_name_char(s_[e])) ++e;
    return s_.substr(p, e - p);
  }

  // True when a rule definition (`name ::=`) starts at p_.
  bool at_rule_start() const {
    std::string_view n = name_at(p_);
    if (n.empty()) return false;
    size_t q = p_ + n.size();
    while (q < s_.size() && (s_[q] == ' ' || s_[q] == '\t' || s_[q] == '\n' || s_[q] == '\r')) ++q;
    return s_.substr(q, 3) == "::=";
  }

  uint32_t rule_id(std::string_view bare, size_t at) {
    if (prefix_.size() + bare.size() > lim_.max_name_bytes)
      error(fmt::format("rule name of {} bytes (the limit is {})", prefix_.size() + bare.size(),
                        lim_.max_name_bytes));
    std::string name = prefix_ + std::string(bare);
    auto [it, added] = ids_.try_emplace(name, static_cast<uint32_t>(alts_.size()));
    if (added) {
      const uint32_t id = it->second;
      add_rule(false, id);
      first_use_.back() = at;
      spend_bytes(name.size());
      g_.rule_names.back() = std::move(name);
    }
    return it->second;
  }

  // A synthetic rule: named by id, owned by the written rule being parsed.
  uint32_t new_rule() {
    const uint32_t id = static_cast<uint32_t>(alts_.size());
    add_rule(true, current_);
    return id;
  }

  void add_rule(bool defined, uint32_t owner) {
    if (alts_.size() >= lim_.max_rules)
      fail("grammar: more than {} rules (written and generated; too large){}", lim_.max_rules, where_);
    spend_bytes(kRuleBytes);
    alts_.emplace_back();
    defined_.push_back(defined);
    first_use_.push_back(p_);
    owner_.push_back(owner);
    g_.rule_names.emplace_back();
  }

  void spend_bytes(size_t n) {
    bytes_ += n;
    if (bytes_ > lim_.max_bytes)
      fail("grammar: the compiled grammar would take more than {} (too large){}", size_text(lim_.max_bytes),
           where_);
    tick(1);
  }

  void tick(size_t n) {
    if (lim_.budget) lim_.budget->tick(n);
  }

  uint32_t hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      if (p_ >= s_.size()) error("unfinished escape");
      char c = s_[p_++];
      int d = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : -1;
      if (d < 0) error("bad hex digit in escape");
      v = v * 16 + static_cast<uint32_t>(d);
    }
    return v;
  }

  // One code point of a literal or class (UTF-8 decoded), escapes resolved.
  uint32_t char_at(bool in_class) {
    if (p_ >= s_.size()) error(in_class ? "unfinished character class" : "unfinished string literal");
    unsigned char c = static_cast<unsigned char>(s_[p_]);
    if (c == '\\') {
      ++p_;
      if (p_ >= s_.size()) error("unfinished escape");
      char e = s_[p_++];
      switch (e) {
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case '\\': return '\\';
        case '"': return '"';
        case ']': return ']';
        case '[': return '[';
        case '-': return '-';
        case '^': return '^';
        case 'x': return hex(2);
        case 'u': return hex(4);
        case 'U': {
          uint32_t v = hex(8);
          if (v > 0x10FFFF) error("escape beyond U+10FFFF");
          return v;
        }
        default: error(fmt::format("unknown escape '\\{}'", e));
      }
    }
    int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || p_ + n > s_.size()) error("invalid UTF-8");
    uint32_t cp = n == 1 ? c : c & (0x7F >> n);
    for (int i = 1; i < n; ++i) {
      unsigned char d = static_cast<unsigned char>(s_[p_ + i]);
      if ((d & 0xC0) != 0x80) error("invalid UTF-8");
      cp = (cp << 6) | (d & 0x3F);
    }
    p_ += n;
    return cp;
  }

  // ---- symbols ----
  uint32_t byte_set(const ByteSet& b) {
    auto [it, added] = set_ids_.try_emplace(b, static_cast<uint32_t>(g_.byte_sets.size()));
    if (added) g_.byte_sets.push_back(b);
    return it->second;
  }
  Sym byte_range(uint8_t lo, uint8_t hi) {
    ByteSet b{};
    for (unsigned x = lo; x <= hi; ++x) b[x >> 6] |= uint64_t{1} << (x & 63);
    return {Sym::Bytes, byte_set(b)};
  }

  void count(size_t n) {
    n_syms_ += n;
    if (n_syms_ > lim_.max_symbols)
      fail("grammar: more than {} symbols after expansion (too large){}", lim_.max_symbols, where_);
    spend_bytes(n * kSymBytes);
  }

  // The symbols for a set of code points: one byte set when it is all ASCII, else a rule
  // (shared by identical classes) whose alternatives are the UTF-8 sequences.
  void class_syms(std::vector<CodeRange> ranges, Alt& out) {
    ranges = normalize_ranges(std::move(ranges));
    if (ranges.empty()) error("character class matches nothing");
    if (ranges.back().hi < 0x80) {
      ByteSet b{};
      for (CodeRange r : ranges)
        for (uint32_t x = r.lo; x <= r.hi; ++x) b[x >> 6] |= uint64_t{1} << (x & 63);
      out.push_back({Sym::Bytes, byte_set(b)});
      count(1);
      return;
    }
    std::vector<uint32_t> key;
    for (CodeRange r : ranges) key.insert(key.end(), {r.lo, r.hi});
    auto it = class_rules_.find(key);
    if (it == class_rules_.end()) {
      uint32_t id = new_rule();
      ByteSet ascii{};
      bool any_ascii = false;
      for (const ByteRangeSeq& seq : utf8_sequences(ranges)) {
        if (seq.size() == 1) {  // merge all one-byte ranges into one set
          for (unsigned x = seq[0].first; x <= seq[0].second; ++x) ascii[x >> 6] |= uint64_t{1} << (x & 63);
          any_ascii = true;
          continue;
        }
        Alt a;
        for (auto [lo, hi] : seq) a.push_back(byte_range(lo, hi));
        count(a.size() + 1);
        spend_bytes(kAltBytes);
        alts_[id].push_back(std::move(a));
      }
      if (any_ascii) alts_[id].insert(alts_[id].begin(), Alt{{Sym::Bytes, byte_set(ascii)}});
      it = class_rules_.emplace(std::move(key), id).first;
    }
    out.push_back({Sym::Ref, it->second});
    count(1);
  }

  // ---- grammar ----
  void parse_rule() {
    std::string_view name = name_at(p_);
    if (name.empty()) error("expected a rule name");
    const size_t at = p_;
    p_ += name.size();
    skip_space();
    if (s_.substr(p_, 3) != "::=") error(fmt::format("expected '::=' after rule name '{}'", name));
    p_ += 3;
    uint32_t id = rule_id(name, at);
    if (defined_[id]) fail("grammar: rule '{}' is defined twice (offset {}{})", name, at, where_);
    owner_[id] = id;
    defined_[id] = true;
    current_ = id;
    alts_[id] = parse_alternatives(0);
  }

  std::vector<Alt> parse_alternatives(int depth) {
    if (depth > 256) error("groups nested deeper than 256");
    std::vector<Alt> out;
    spend_bytes(kAltBytes);
    out.push_back(parse_sequence(depth));
    skip_space();
    while (p_ < s_.size() && s_[p_] == '|') {
      ++p_;
      spend_bytes(kAltBytes);
      out.push_back(parse_sequence(depth));
      skip_space();
    }
    return out;
  }

  Alt parse_sequence(int depth) {
    Alt seq;
    for (;;) {
      skip_space();
      if (p_ >= s_.size()) break;
      char c = s_[p_];
      if (c == '|' || c == ')') break;
      if (is_name_char(c) && at_rule_start()) break;
      const size_t item_begin = seq.size();
      if (c == '"') {
        ++p_;
        std::vector<uint8_t> bytes;
        while (p_ < s_.size() && s_[p_] != '"') append_utf8(bytes, char_at(false));
        if (p_ >= s_.size()) error("unfinished string literal");
        ++p_;
        for (uint8_t b : bytes) seq.push_back(byte_range(b, b));
        count(bytes.size());
      } else if (c == '[') {
        ++p_;
        bool negate = p_ < s_.size() && s_[p_] == '^';
        if (negate) ++p_;
        std::vector<CodeRange> ranges;
        while (p_ < s_.size() && s_[p_] != ']') {
          uint32_t lo = char_at(true), hi = lo;
          if (p_ + 1 < s_.size() && s_[p_] == '-' && s_[p_ + 1] != ']') {
            ++p_;
            hi = char_at(true);
            if (hi < lo) error("character range out of order");
          }
          ranges.push_back({lo, hi});
        }
        if (p_ >= s_.size()) error("unfinished character class");
        ++p_;
        if (negate) ranges = complement_ranges(ranges);
        class_syms(std::move(ranges), seq);
      } else if (c == '.') {
        ++p_;
        class_syms({{0, 0x10FFFF}}, seq);
      } else if (c == '(') {
        ++p_;
        uint32_t saved = current_;
        uint32_t id = new_rule();
        std::vector<Alt> inner = parse_alternatives(depth + 1);
        current_ = saved;
        skip_space();
        if (p_ >= s_.size() || s_[p_] != ')') error("expected ')'");
        ++p_;
        alts_[id] = std::move(inner);
        seq.push_back({Sym::Ref, id});
        count(1);
      } else if (c == '<' && s_.substr(p_, 2) == "<|") {
        size_t e = s_.find("|>", p_ + 2);
        if (e == std::string_view::npos || e - p_ > 128) error("unfinished special token '<|…|>'");
        std::string tok(s_.substr(p_, e + 2 - p_));
        p_ = e + 2;
        auto [it, added] = token_ids_.try_emplace(tok, static_cast<uint32_t>(g_.token_names.size()));
        if (added) {
          spend_bytes(2 * tok.size() + 64);
          g_.token_names.push_back(tok);
        }
        seq.push_back({Sym::Token, it->second});
        count(1);
      } else if (is_name_char(c)) {
        std::string_view n = name_at(p_);
        uint32_t id = rule_id(n, p_);
        p_ += n.size();
        seq.push_back({Sym::Ref, id});
        count(1);
      } else {
        error(fmt::format("unexpected character '{}'", c));
      }
      parse_postfix(seq, item_begin);
    }
    return seq;
  }

  uint32_t number() {
    size_t b = p_;
    uint64_t v = 0;
    while (p_ < s_.size() && s_[p_] >= '0' && s_[p_] <= '9') {
      v = v * 10 + static_cast<uint64_t>(s_[p_++] - '0');
      if (v > lim_.max_repeat) error(fmt::format("repetition count larger than {}", lim_.max_repeat));
    }
    if (p_ == b) error("expected a number in '{m,n}'");
    return static_cast<uint32_t>(v);
  }

  // Applies * + ? {m,n} to the item seq[item_begin..].
  void parse_postfix(Alt& seq, size_t item_begin) {
    for (;;) {
      if (p_ >= s_.size()) return;
      char c = s_[p_];
      uint32_t lo, hi;  // hi == UINT32_MAX: unbounded
      if (c == '*') {
        lo = 0;
        hi = UINT32_MAX;
        ++p_;
      } else if (c == '+') {
        lo = 1;
        hi = UINT32_MAX;
        ++p_;
      } else if (c == '?') {
        lo = 0;
        hi = 1;
        ++p_;
      } else if (c == '{') {
        ++p_;
        skip_space();
        lo = number();
        skip_space();
        hi = lo;
        if (p_ < s_.size() && s_[p_] == ',') {
          ++p_;
          skip_space();
          hi = p_ < s_.size() && s_[p_] == '}' ? UINT32_MAX : number();
          skip_space();
        }
        if (p_ >= s_.size() || s_[p_] != '}') error("expected '}'");
        ++p_;
        if (hi < lo) error("repetition {m,n} with n < m");
      } else {
        return;
      }
      if (item_begin == seq.size()) error("repetition of nothing");
      // The item as one symbol (a literal of several bytes becomes a rule, one per distinct
      // content).
      Sym item;
      if (seq.size() - item_begin == 1) {
        item = seq.back();
      } else {
        Alt body(seq.begin() + static_cast<long>(item_begin), seq.end());
        auto [it, added] = item_rules_.try_emplace(key_of(body), 0);
        if (added) {
          it->second = new_rule();
          spend_bytes(kAltBytes + body.size() * kSymBytes * 2);
          alts_[it->second].push_back(std::move(body));
        }
        item = {Sym::Ref, it->second};
      }
      seq.resize(item_begin);
      count(static_cast<size_t>(lo) + 1);
      for (uint32_t i = 0; i < lo; ++i) seq.push_back(item);
      if (hi == UINT32_MAX) seq.push_back({Sym::Ref, star_of(item)});
      else if (hi > lo) seq.push_back({Sym::Ref, optional_chain(item, hi - lo)});
    }
  }

  static uint64_t sym_key(Sym s) { return (static_cast<uint64_t>(s.kind) << 32) | s.arg; }
  static std::vector<uint64_t> key_of(const Alt& a) {
    std::vector<uint64_t> k;
    k.reserve(a.size());
    for (Sym s : a) k.push_back(sym_key(s));
    return k;
  }

  // star ::= item star | ε, one per item.
  uint32_t star_of(Sym item) {
    auto [it, added] = stars_.try_emplace(sym_key(item), 0);
    if (added) {
      const uint32_t star = it->second = new_rule();
      count(2);
      spend_bytes(2 * kAltBytes);
      alts_[star].push_back({item, {Sym::Ref, star}});
      alts_[star].push_back({});
    }
    return it->second;
  }

  // opt_k ::= item opt_{k-1} | ε (opt_1 ::= item | ε): at most k more items. The chain is kept
  // per item and grown on demand, so every {m,n} of one item shares it.
  uint32_t optional_chain(Sym item, uint32_t k) {
    std::vector<uint32_t>& chain = opt_chains_[sym_key(item)];
    while (chain.size() < k) {
      const uint32_t opt = new_rule();
      Alt a{item};
      if (!chain.empty()) a.push_back({Sym::Ref, chain.back()});
      count(a.size());
      spend_bytes(2 * kAltBytes + sizeof(uint32_t));
      alts_[opt].push_back(std::move(a));
      alts_[opt].push_back({});
      chain.push_back(opt);
    }
    return chain[k - 1];
  }

  // ---- checks and layout ----
  // The least set of rules with an alternative whose every symbol is a reference to a rule in
  // the set, or a terminal when terminals_pass. A worklist with a count of missing references
  // per alternative: linear in the grammar. (Sweeping all rules until nothing changed was
  // quadratic: a chain of 40,000 rules written bottom-up took one sweep per rule.)
  std::vector<bool> closure(bool terminals_pass) {
    const size_t n = alts_.size();
    std::vector<uint32_t> alt_rule, missing;             // per alternative
    std::vector<uint32_t> users_begin(n + 1, 0), users;  // rule -> alternatives naming it (CSR)
    for (size_t r = 0; r < n; ++r)
      for (const Alt& a : alts_[r])
        for (Sym s : a)
          if (s.kind == Sym::Ref) ++users_begin[s.arg + 1];
    for (size_t r = 0; r < n; ++r) users_begin[r + 1] += users_begin[r];
    users.resize(users_begin[n]);
    std::vector<uint32_t> fill(users_begin.begin(), users_begin.end() - 1);
    std::vector<bool> in(n, false);
    std::vector<uint32_t> ready;
    for (size_t r = 0; r < n; ++r)
      for (const Alt& a : alts_[r]) {
        const uint32_t alt = static_cast<uint32_t>(alt_rule.size());
        uint32_t refs = 0;
        bool blocked = false;
        for (Sym s : a) {
          if (s.kind == Sym::Ref) {
            users[fill[s.arg]++] = alt;
            ++refs;
          } else if (!terminals_pass) {
            blocked = true;
          }
        }
        tick(a.size() + 1);
        alt_rule.push_back(static_cast<uint32_t>(r));
        missing.push_back(blocked ? UINT32_MAX : refs);
        if (!blocked && refs == 0 && !in[r]) {
          in[r] = true;
          ready.push_back(static_cast<uint32_t>(r));
        }
      }
    while (!ready.empty()) {
      const uint32_t q = ready.back();
      ready.pop_back();
      for (uint32_t u = users_begin[q]; u < users_begin[q + 1]; ++u) {
        const uint32_t alt = users[u];
        tick(1);
        if (missing[alt] == UINT32_MAX || --missing[alt] != 0) continue;
        const uint32_t r = alt_rule[alt];
        if (!in[r]) {
          in[r] = true;
          ready.push_back(r);
        }
      }
    }
    return in;
  }

  void flatten() {
    const size_t n = alts_.size();
    // Productive rules: can derive a finite string (every reference in some alternative is).
    std::vector<bool> productive = closure(true);
    if (!productive[g_.root])
      fail("grammar: rule '{}' can never finish (every alternative recurses forever)", g_.describe(g_.root));
    // Prune alternatives that can never finish.
    for (auto& as : alts_)
      as.erase(std::remove_if(as.begin(), as.end(),
                              [&](const Alt& a) {
                                return std::any_of(a.begin(), a.end(), [&](Sym s) {
                                  return s.kind == Sym::Ref && !productive[s.arg];
                                });
                              }),
               as.end());
    // Nullable rules, then left recursion: an edge r → q when q can start r.
    std::vector<bool> nullable = closure(false);
    std::vector<std::vector<uint32_t>> left(n);
    for (size_t r = 0; r < n; ++r)
      for (const Alt& a : alts_[r])
        for (Sym s : a) {
          if (s.kind != Sym::Ref) break;
          left[r].push_back(s.arg);
          if (!nullable[s.arg]) break;
        }
    std::vector<uint8_t> mark(n, 0);  // 0 new, 1 on the path, 2 done
    for (size_t r0 = 0; r0 < n; ++r0) {
      if (mark[r0]) continue;
      std::vector<std::pair<uint32_t, size_t>> st{{static_cast<uint32_t>(r0), 0}};
      mark[r0] = 1;
      while (!st.empty()) {
        tick(1);
        auto& [r, i] = st.back();
        if (i < left[r].size()) {
          uint32_t q = left[r][i++];
          if (mark[q] == 1)
            fail(
                "grammar: rule '{}' is left-recursive (it can reach itself without consuming input; "
                "rewrite it right-recursively, and do not repeat something that can match empty)",
                g_.describe(q));
          if (mark[q] == 0) {
            mark[q] = 1;
            st.push_back({q, 0});
          }
        } else {
          mark[r] = 2;
          st.pop_back();
        }
      }
    }
    g_.rule_alts.assign(n, {});
    for (size_t r = 0; r < n; ++r)
      for (const Alt& a : alts_[r]) {
        tick(a.size() + 1);
        g_.rule_alts[r].push_back(static_cast<uint32_t>(g_.syms.size()));
        g_.syms.insert(g_.syms.end(), a.begin(), a.end());
        g_.syms.push_back({Sym::End, 0});
      }
  }

  std::string_view s_;
  std::string prefix_, where_;
  GbnfLimits lim_;
  size_t p_ = 0;
  size_t n_syms_ = 0;
  size_t bytes_ = 0;  // the compiled grammar's bytes so far (kRuleBytes, ...)
  uint32_t current_ = 0;
  Grammar g_;
  std::vector<std::vector<Alt>> alts_;
  std::vector<bool> defined_;
  std::vector<size_t> first_use_;
  std::vector<uint32_t> owner_;                                     // Grammar::rule_owner while parsing
  std::map<std::vector<uint64_t>, uint32_t> item_rules_;            // repeated sequence → its rule
  std::unordered_map<uint64_t, uint32_t> stars_;                    // item → star rule
  std::unordered_map<uint64_t, std::vector<uint32_t>> opt_chains_;  // item → opt_1, opt_2, ...
  std::unordered_map<std::string, uint32_t> ids_;
  std::map<ByteSet, uint32_t> set_ids_;
  std::map<std::vector<uint32_t>, uint32_t> class_rules_;
  std::unordered_map<std::string, uint32_t> token_ids_;
};

}  // namespace

std::string Grammar::describe(uint32_t rule) const {
  const uint32_t owner = rule < rule_owner.size() ? rule_owner[rule] : rule;
  if (owner == rule) return rule_names[rule];
  return fmt::format("{}/generated#{}", rule_names[owner], rule);
}

size_t Grammar::bytes() const {
  size_t b = sizeof(Grammar) + syms.capacity() * sizeof(Sym) + rule_owner.capacity() * sizeof(uint32_t) +
             byte_sets.capacity() * sizeof(ByteSet);
  for (const auto& alts : rule_alts) b += sizeof(alts) + alts.capacity() * sizeof(uint32_t);
  for (const std::string& n : rule_names) b += sizeof(n) + (n.capacity() > 15 ? n.capacity() : 0);
  for (const std::string& n : token_names) b += sizeof(n) + n.capacity();
  return b;
}

std::string gbnf_quote(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7F) {
      out += fmt::format("\\x{:02X}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

Grammar parse_gbnf(std::string_view text, std::string_view root, const GbnfLimits& lim) {
  return Parser(lim).run({{text, "", ""}}, root);
}

Grammar parse_gbnf(const std::vector<GbnfSource>& sources, std::string_view root, const GbnfLimits& lim) {
  return Parser(lim).run(sources, root);
}

}  // namespace k3::grammar
