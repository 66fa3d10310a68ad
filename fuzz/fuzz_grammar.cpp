// libFuzzer target for what a client's grammar or schema reaches: the first byte picks the
// input kind — GBNF text (parse_gbnf), or a JSON schema (json_schema_to_gbnf in strict and
// lenient mode, whose output must always parse: a schema the compiler accepts that yields a
// grammar the parser refuses is a bug) — then a matcher runs on a small vocabulary, fed the
// remaining bytes as tokens where they are allowed and the first allowed token otherwise.
// Invariants: a mask is never empty before the end, accept() of an allowed token never
// throws except for the documented ambiguity, work, memory and time limits; a compiled
// grammar stays within GbnfLimits::max_bytes; nothing crashes or leaks.
// Per input, the compile runs under a WorkBudget of kCompileLimit (as the server's does), so a
// slow input ends in the documented BudgetExceeded rather than libFuzzer's -timeout; the
// libFuzzer flags in fuzz/README.md bound what the budgets do not (-timeout, -rss_limit_mb,
// -malloc_limit_mb).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "core/error.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/token_vocab.h"
#include "grammar/work_budget.h"
#include "text/json_py.h"

namespace {

using namespace k3;

[[noreturn]] void bug(const std::string& what) {
  std::fprintf(stderr, "fuzz_grammar: %s\n", what.c_str());
  std::abort();
}

std::shared_ptr<const grammar::TokenVocab> vocab() {
  static auto v = [] {
    std::vector<std::string> p;
    std::vector<grammar::TokenClass> c;
    for (int b = 0; b < 256; ++b) {
      p.emplace_back(1, static_cast<char>(b));
      c.push_back(grammar::TokenClass::Text);
    }
    for (const char* s : {"\"", "\":", "{\"", "true", "null", "12", "é", "中文", "\xe4\xb8", "ab", "abc"}) {
      p.emplace_back(s);
      c.push_back(grammar::TokenClass::Text);
    }
    for (const char* s : {"<|open|>", "<|close|>", "<|sep|>"}) {
      p.emplace_back(s);
      c.push_back(grammar::TokenClass::Special);
    }
    p.emplace_back("<|end_of_msg|>");
    c.push_back(grammar::TokenClass::Eog);
    return std::make_shared<const grammar::TokenVocab>(std::move(p), std::move(c));
  }();
  return v;
}

constexpr auto kCompileLimit = std::chrono::seconds(2);

bool documented_limit(const k3::Error& e) {
  if (dynamic_cast<const grammar::BudgetExceeded*>(&e)) return true;
  const std::string w = e.what();
  return w.find("too ambiguous") != std::string::npos || w.find("parser steps") != std::string::npos ||
         w.find("MiB") != std::string::npos || w.find("took longer than") != std::string::npos;
}

void check_size(const grammar::Grammar& g) {
  if (g.bytes() > grammar::GbnfLimits{}.max_bytes) bug("a compiled grammar is larger than max_bytes");
}

void run_matcher(std::shared_ptr<const grammar::Grammar> g, std::string_view feed) {
  grammar::MatcherLimits lim;
  lim.max_bytes = 8u << 20;
  lim.max_work_per_token = 2'000'000;
  lim.max_cpu_per_token = std::chrono::seconds(1);
  std::unique_ptr<grammar::GrammarMatcher> m;
  try {
    m = std::make_unique<grammar::GrammarMatcher>(g, vocab(), lim);
  } catch (const k3::Error& e) {
    if (!documented_limit(e) && std::string(e.what()).find("no special token") == std::string::npos)
      bug(e.what());
    return;
  }
  const auto& v = *vocab();
  try {
    for (size_t i = 0; i < 64 && !m->must_end(); ++i) {
      auto mask = m->allowed();
      int32_t first = -1;
      for (size_t w = 0; w < mask.size() && first < 0; ++w)
        if (mask[w]) first = static_cast<int32_t>(w * 64 + static_cast<size_t>(__builtin_ctzll(mask[w])));
      if (first < 0) bug("an empty mask before the end");
      int32_t t =
          i < feed.size() ? static_cast<int32_t>(static_cast<unsigned char>(feed[i]) % v.size()) : first;
      if (!((mask[static_cast<size_t>(t) >> 6] >> (t & 63)) & 1)) t = first;
      if (!m->allows(t)) bug("allows() disagrees with the mask");
      m->accept(t);
    }
  } catch (const k3::Error& e) {
    if (!documented_limit(e)) bug(e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2 || size > 4096) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  const size_t split = in.find('\x01');
  const std::string_view text = in.substr(0, split),
                         feed = split == std::string_view::npos ? "" : in.substr(split + 1);
  if (data[0] & 1) {
    std::optional<text::Json> schema = text::try_parse_json_exact(text);
    if (!schema) return 0;
    for (bool strict : {true, false}) {
      std::string gbnf;
      try {
        grammar::WorkBudget budget("compiling the schema", kCompileLimit);
        gbnf = grammar::json_schema_to_gbnf(*schema, {strict, "s-", &budget});
      } catch (const k3::Error&) {
        continue;  // refused with a message: fine
      }
      std::shared_ptr<const grammar::Grammar> g;
      try {
        grammar::WorkBudget budget("compiling the grammar", kCompileLimit);
        grammar::GbnfLimits lim;
        lim.budget = &budget;
        g = std::make_shared<const grammar::Grammar>(grammar::parse_gbnf(gbnf, "s-root", lim));
      } catch (const grammar::BudgetExceeded&) { continue; } catch (const k3::Error& e) {
        bug(std::string("a compiled schema does not parse: ") + e.what() + "\n" + gbnf);
      }
      check_size(*g);
      run_matcher(g, feed);
    }
  } else {
    std::shared_ptr<const grammar::Grammar> g;
    try {
      grammar::WorkBudget budget("compiling the grammar", kCompileLimit);
      grammar::GbnfLimits lim;
      lim.budget = &budget;
      g = std::make_shared<const grammar::Grammar>(grammar::parse_gbnf(text, "root", lim));
    } catch (const k3::Error&) { return 0; }
    check_size(*g);
    run_matcher(g, feed);
  }
  return 0;
}
