// grammar/matcher: see matcher.h.
//
// A stack is a persistent linked list of grammar positions (node = position + parent), so
// stacks that share a tail share nodes and a whole stack is one id. A state is the sorted
// set of stacks whose top is a terminal (plus the empty stack when the input may end there).
#include "grammar/matcher.h"

#include <algorithm>
#include <bit>
#include <optional>

#include "core/error.h"
#include "grammar/work_budget.h"

namespace k3::grammar {

namespace {

constexpr int32_t kUnknown = -2;
constexpr int32_t kDead = -1;
constexpr int32_t kEmpty = 0;  // the empty stack: the sentence is complete

// What one entry of each container costs, counted generously (node-based hash maps pay a
// heap block per entry plus a bucket; vectors may hold up to twice what they use).
constexpr size_t kNodeBytes = 2 * 8 + 64;       // nodes[] + node_ids entry
constexpr size_t kStateOverhead = 2 * 24 + 96;  // states[] + state_ids entry, beside the stacks
constexpr size_t kRowOverhead = 48;             // a transition table or a mask, beside its words

// Thrown inside the matcher when max_bytes is reached; never leaves it.
struct OverCap {};

struct VecHash {
  size_t operator()(const std::vector<int32_t>& v) const {
    uint64_t h = 1469598103934665603ull;
    for (int32_t x : v) h = (h ^ static_cast<uint32_t>(x)) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

}  // namespace

struct GrammarMatcher::Impl {
  struct Node {
    uint32_t pos;
    int32_t parent;
  };

  std::shared_ptr<const Grammar> g;
  std::shared_ptr<const TokenVocab> v;
  MatcherLimits lim;
  Stats* stats = nullptr;
  std::vector<int32_t> token_of_sym;                   // Token arg → vocabulary id
  std::unordered_map<int32_t, uint32_t> sym_of_token;  // vocabulary id → Token arg
  size_t alpha = 256;                                  // bytes, then the named tokens
  size_t mask_words = 0;

  std::vector<Node> nodes{{0, 0}};  // nodes[0]: the empty stack
  std::unordered_map<uint64_t, int32_t> node_ids;
  std::vector<std::vector<int32_t>> states;
  std::unordered_map<std::vector<int32_t>, int32_t, VecHash> state_ids;
  std::vector<std::vector<int32_t>> trans;
  std::vector<std::vector<uint64_t>> masks;
  size_t held = 0;  // bytes of nodes, states, tables and masks (scratch is added in bytes())
  int32_t cur = 0;
  bool ended = false;
  std::vector<uint64_t> none;  // the mask after the end

  // The budget of the allowed()/accept() in progress (none outside one).
  size_t work = 0;  // parser steps since it began
  std::optional<WorkBudget> budget;
  size_t next_check = 0;  // `work` at which bytes() is compared with the cap next

  // scratch for expansion
  std::vector<uint32_t> seen;
  uint32_t stamp = 0;
  std::vector<int32_t> work_list, out;

  size_t bytes() const {
    return held + (seen.capacity() + work_list.capacity() + out.capacity()) * 4 + none.capacity() * 8;
  }

  void check_bytes() {
    const size_t b = bytes();
    stats->peak_bytes = std::max(stats->peak_bytes, b);
    if (b > lim.max_bytes) throw OverCap{};
  }

  // Counts n more bytes about to be held, refusing (OverCap) before they would pass the cap.
  void hold(size_t n) {
    if (bytes() + n > lim.max_bytes) throw OverCap{};
    held += n;
    stats->peak_bytes = std::max(stats->peak_bytes, bytes());
  }

  void spend(size_t n) {
    work += n;
    if (work > lim.max_work_per_token)
      throw BudgetExceeded(
          fmt::format("grammar: one token needed more than {} parser steps (the grammar is too ambiguous)",
                      lim.max_work_per_token));
    if (budget) budget->tick(n);
    if (work >= next_check) {  // scratch grows without passing through node() or intern_out()
      next_check = work + 4096;
      check_bytes();
    }
  }

  int32_t node(uint32_t pos, int32_t parent) {
    uint64_t key = (static_cast<uint64_t>(pos) << 32) | static_cast<uint32_t>(parent);
    auto [it, added] = node_ids.try_emplace(key, static_cast<int32_t>(nodes.size()));
    if (added) {
      if (held + kNodeBytes > lim.max_bytes) {
        node_ids.erase(it);
        throw OverCap{};
      }
      nodes.push_back({pos, parent});
      held += kNodeBytes;
      spend(1);
    }
    return it->second;
  }

  // Adds to `out` the terminal-topped stacks reachable from stack `id` without input.
  void expand(int32_t id) {
    work_list.push_back(id);
    while (!work_list.empty()) {
      spend(1);
      int32_t s = work_list.back();
      work_list.pop_back();
      if (static_cast<size_t>(s) >= seen.size())
        seen.resize(std::max(nodes.size(), 2 * seen.size()) + 1024, 0);
      if (seen[static_cast<size_t>(s)] == stamp) continue;
      seen[static_cast<size_t>(s)] = stamp;
      if (s == kEmpty) {
        out.push_back(kEmpty);
        continue;
      }
      const Node n = nodes[static_cast<size_t>(s)];
      const Sym sym = g->syms[n.pos];
      switch (sym.kind) {
        case Sym::End: work_list.push_back(n.parent); break;
        case Sym::Bytes:
        case Sym::Token: out.push_back(s); break;
        case Sym::Ref: {
          // Tail position: the rule's end is the caller's end, so the stack does not grow.
          const int32_t cont = g->syms[n.pos + 1].kind == Sym::End ? n.parent : node(n.pos + 1, n.parent);
          for (uint32_t a : g->rule_alts[sym.arg]) work_list.push_back(node(a, cont));
          break;
        }
      }
    }
  }

  void begin_expand() {
    if (++stamp == 0) {
      std::fill(seen.begin(), seen.end(), 0);
      stamp = 1;
    }
    out.clear();
    work_list.clear();
  }

  int32_t intern_out() {
    if (out.empty()) return kDead;
    // Sorting, hashing and comparing the set are work too.
    spend(out.size() * (1 + static_cast<size_t>(std::bit_width(out.size()))));
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    if (out.size() > lim.max_stacks_per_state)
      fail("grammar: more than {} parses alive at once (the grammar is too ambiguous)",
           lim.max_stacks_per_state);
    if (auto known = state_ids.find(out); known != state_ids.end()) return known->second;
    hold(2 * out.size() * sizeof(int32_t) + kStateOverhead + 2 * kRowOverhead);
    const int32_t id = static_cast<int32_t>(states.size());
    state_ids.emplace(out, id);
    states.push_back(out);
    trans.emplace_back();
    masks.emplace_back();
    ++stats->states;
    return id;
  }

  // The state after one byte (sym < 256) or one named token (256 + Token arg).
  int32_t step(int32_t state, size_t sym) {
    begin_expand();
    spend(states[static_cast<size_t>(state)].size());
    for (int32_t s : states[static_cast<size_t>(state)]) {
      if (s == kEmpty) continue;
      const Node n = nodes[static_cast<size_t>(s)];
      const Sym top = g->syms[n.pos];
      const bool match =
          sym < 256 ? top.kind == Sym::Bytes && byte_in(g->byte_sets[top.arg], static_cast<uint8_t>(sym))
                    : top.kind == Sym::Token && top.arg == sym - 256;
      if (!match) continue;
      expand(g->syms[n.pos + 1].kind == Sym::End ? n.parent : node(n.pos + 1, n.parent));
    }
    return intern_out();
  }

  int32_t next(int32_t state, size_t sym) {
    auto& t = trans[static_cast<size_t>(state)];
    if (t.empty()) {
      hold(alpha * sizeof(int32_t));
      t.assign(alpha, kUnknown);
    }
    if (t[sym] != kUnknown) return t[sym];
    const int32_t r = step(state, sym);
    trans[static_cast<size_t>(state)][sym] = r;  // `t` may have moved
    return r;
  }

  bool state_can_end(int32_t state) const {
    const auto& s = states[static_cast<size_t>(state)];
    return !s.empty() && s.front() == kEmpty;
  }

  void compute_mask(int32_t state, std::vector<uint64_t>& m) {
    m.assign(mask_words, 0);
    auto set = [&](int32_t id) { m[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63); };
    const TokenVocab::Trie& t = v->trie();
    std::vector<int32_t> at(t.max_depth + 1u);
    at[0] = state;
    const uint32_t n = static_cast<uint32_t>(t.byte.size());
    for (uint32_t i = 0; i < n;) {
      spend(1);
      const int32_t s = next(at[t.depth[i] - 1u], t.byte[i]);
      if (s < 0) {
        i = t.skip[i];
        continue;
      }
      at[t.depth[i]] = s;
      for (uint32_t k = t.tok_begin[i]; k < t.tok_begin[i + 1]; ++k) set(t.ids[k]);
      ++i;
    }
    for (size_t k = 0; k < token_of_sym.size(); ++k)
      if (next(state, 256 + k) >= 0) set(token_of_sym[k]);
    if (state_can_end(state))
      for (int32_t id : v->eog_ids()) set(id);
  }

  // Drops every cache; keeps the current state (its stacks rebuilt in fresh nodes).
  void flush() {
    std::vector<int32_t> keep = states[static_cast<size_t>(cur)];
    std::vector<Node> old = std::move(nodes);
    nodes.assign(1, {0, 0});
    node_ids.clear();
    held = kNodeBytes;
    std::unordered_map<int32_t, int32_t> remap{{kEmpty, kEmpty}};
    auto copy = [&](int32_t id) {
      std::vector<int32_t> chain;
      while (!remap.count(id)) {
        chain.push_back(id);
        id = old[static_cast<size_t>(id)].parent;
      }
      int32_t p = remap[id];
      for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
        p = node(old[static_cast<size_t>(*it)].pos, p);
        remap[*it] = p;
      }
      return p;
    };
    for (int32_t& s : keep) s = copy(s);
    std::sort(keep.begin(), keep.end());
    states.clear();
    state_ids.clear();
    trans.clear();
    masks.clear();
    std::vector<uint32_t>().swap(seen);
    std::vector<int32_t>().swap(work_list);
    std::vector<int32_t>().swap(out);
    out = std::move(keep);
    cur = intern_out();
    ++stats->flushes;
  }

  void maybe_flush() {
    if (bytes() > lim.max_bytes / 2) flush();  // room for the next token's work
  }

  // Runs one bounded unit of work (a mask, a token). Reaching max_bytes drops the caches and
  // redoes it once from the current state; reaching it again is the grammar's limit.
  bool broken = false;  // an exception left work half done: the matcher refuses further use

  template <class F>
  auto bounded(const char* what, F&& f) {
    if (broken) fail("grammar: the matcher stopped at an earlier error");
    work = 0;
    next_check = 4096;
    budget.emplace(what, lim.max_cpu_per_token, lim.cancelled, WorkBudget::Measure::ThreadCpu);
    struct Done {
      std::optional<WorkBudget>& b;
      ~Done() { b.reset(); }
    } done{budget};
    auto too_big = [&] {
      const size_t b = lim.max_bytes;
      return BudgetExceeded(fmt::format(
          "grammar: one token needs more than {} of parser memory",
          b % (1u << 20) == 0 ? fmt::format("{} MiB", b >> 20) : fmt::format("{} KiB", (b + 1023) >> 10)));
    };
    try {
      for (int attempt = 0;; ++attempt) {
        try {
          return f();
        } catch (const OverCap&) {
          if (attempt > 0 || states.empty()) throw too_big();
          try {
            flush();
          } catch (const OverCap&) { throw too_big(); }
        }
      }
    } catch (...) {
      broken = true;
      throw;
    }
  }

  void start() {
    begin_expand();
    for (uint32_t a : g->rule_alts[g->root]) expand(node(a, kEmpty));
    cur = intern_out();
    if (cur < 0) fail("grammar: the start rule matches nothing");
  }

  bool allows(int32_t token);
};

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenVocab> vocab,
                               MatcherLimits lim)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.g = std::move(g);
  m.v = std::move(vocab);
  m.lim = std::move(lim);
  m.stats = &stats_;
  for (size_t k = 0; k < m.g->token_names.size(); ++k) {
    const int32_t id = m.v->find_special(m.g->token_names[k]);
    if (id < 0) fail("grammar: the vocabulary has no special token {}", m.g->token_names[k]);
    m.token_of_sym.push_back(id);
    m.sym_of_token.emplace(id, static_cast<uint32_t>(k));
  }
  m.alpha = 256 + m.token_of_sym.size();
  m.mask_words = (m.v->size() + 63) / 64;
  m.bounded("the grammar's start", [&] { m.start(); });
}

GrammarMatcher::~GrammarMatcher() = default;

void GrammarMatcher::check_start(std::shared_ptr<const Grammar> g, const MatcherLimits& lim) {
  Impl m;
  Stats st;
  m.g = std::move(g);
  m.lim = lim;
  m.stats = &st;
  m.bounded("the grammar's start", [&] { m.start(); });
}

std::span<const uint64_t> GrammarMatcher::allowed() {
  Impl& m = *impl_;
  if (m.ended) {
    m.none.assign(m.mask_words, 0);
    return m.none;
  }
  m.bounded("one token's mask", [&] {
    m.maybe_flush();
    if (m.masks[static_cast<size_t>(m.cur)].empty()) {
      std::vector<uint64_t> fresh;
      m.hold(m.mask_words * sizeof(uint64_t));
      m.compute_mask(m.cur, fresh);
      m.masks[static_cast<size_t>(m.cur)] = std::move(fresh);
      ++stats_.mask_computes;
    } else {
      ++stats_.mask_hits;
    }
  });
  stats_.bytes = m.bytes();
  stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.bytes);
  return m.masks[static_cast<size_t>(m.cur)];
}

bool GrammarMatcher::Impl::allows(int32_t token) {
  if (ended || token < 0 || static_cast<size_t>(token) >= v->size()) return false;
  const auto& mask = masks[static_cast<size_t>(cur)];
  if (!mask.empty()) return (mask[static_cast<size_t>(token) >> 6] >> (token & 63)) & 1;
  switch (v->token_class(token)) {
    case TokenClass::Text: {
      const std::string& p = v->piece(token);
      if (p.empty()) return false;
      int32_t s = cur;
      for (unsigned char b : p)
        if ((s = next(s, b)) < 0) return false;
      return true;
    }
    case TokenClass::Special:
    case TokenClass::Eog: {
      auto it = sym_of_token.find(token);
      if (it != sym_of_token.end() && next(cur, 256 + it->second) >= 0) return true;
      return v->token_class(token) == TokenClass::Eog && state_can_end(cur);
    }
  }
  return false;
}

bool GrammarMatcher::allows(int32_t token) {
  Impl& m = *impl_;
  if (m.broken) return false;
  return m.bounded("one token", [&] { return m.allows(token); });
}

void GrammarMatcher::accept(int32_t token) {
  Impl& m = *impl_;
  const bool allowed = m.bounded("one token", [&] {
    m.maybe_flush();
    if (!m.allows(token)) return false;  // refused before anything changed: the matcher stays usable
    if (m.v->token_class(token) == TokenClass::Text) {
      int32_t s = m.cur;
      for (unsigned char b : m.v->piece(token)) s = m.next(s, b);
      m.cur = s;
      return true;
    }
    auto it = m.sym_of_token.find(token);
    if (it != m.sym_of_token.end()) {
      if (int32_t s = m.next(m.cur, 256 + it->second); s >= 0) {
        m.cur = s;
        return true;
      }
    }
    m.ended = true;  // an end-of-generation token where the sentence may end
    return true;
  });
  stats_.bytes = m.bytes();
  if (!allowed) fail("grammar: token {} is not allowed here", token);
}

bool GrammarMatcher::can_end() const {
  return !impl_->ended && !impl_->broken && impl_->state_can_end(impl_->cur);
}

bool GrammarMatcher::must_end() const {
  if (impl_->ended || impl_->broken) return true;
  const auto& s = impl_->states[static_cast<size_t>(impl_->cur)];
  return s.size() == 1 && s.front() == kEmpty;
}

}  // namespace k3::grammar
