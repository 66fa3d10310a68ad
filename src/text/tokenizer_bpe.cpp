// text/tokenizer_bpe: byte-pair merging of one pre-tokenized piece.
// Symbols start as single bytes; the adjacent pair with the lowest rank merges first, the
// leftmost on ties, until no pair is in the table. Short pieces (the common case) use a
// direct scan; longer ones a doubly linked symbol list and a min-heap of candidate pairs
// with lazy invalidation, O(n log n) however long the piece.
#include <algorithm>
#include <functional>

#include "text/tokenizer_impl.h"

namespace k3::text {
namespace {

constexpr size_t kScanLimit = 24;

struct Candidate {
  uint32_t rank;
  uint32_t left;  // symbol index (= byte offset of its first byte)
  uint32_t right;
  uint32_t left_len, right_len;  // lengths when pushed: a changed length means stale
  TokenId merged;
  bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
};

void bpe_scan(const Tokenizer::Impl& m, std::string_view piece, std::vector<TokenId>& out) {
  TokenId sym[kScanLimit];
  size_t n = piece.size();
  for (size_t i = 0; i < n; ++i) sym[i] = m.byte_token[static_cast<uint8_t>(piece[i])];
  while (n > 1) {
    uint32_t best_rank = UINT32_MAX, rank;
    size_t best = n;
    TokenId best_id = -1, merged;
    for (size_t i = 0; i + 1 < n; ++i)
      if (m.pairs.find(sym[i], sym[i + 1], rank, merged) && rank < best_rank) {
        best_rank = rank;
        best = i;
        best_id = merged;
      }
    if (best == n) break;
    sym[best] = best_id;
    std::copy(sym + best + 2, sym + n, sym + best + 1);
    --n;
  }
  for (size_t i = 0; i < n; ++i)
    if (sym[i] >= 0) out.push_back(sym[i]);
}

void bpe_heap(const Tokenizer::Impl& m, std::string_view piece, std::vector<TokenId>& out) {
  const size_t n = piece.size();
  thread_local std::vector<TokenId> id;
  thread_local std::vector<uint32_t> len, next, prev;
  thread_local std::vector<Candidate> heap;
  id.resize(n);
  len.assign(n, 1);
  next.resize(n);
  prev.resize(n);
  for (size_t i = 0; i < n; ++i) {
    id[i] = m.byte_token[static_cast<uint8_t>(piece[i])];
    next[i] = static_cast<uint32_t>(i + 1);
    prev[i] = static_cast<uint32_t>(i) - 1;  // wraps to UINT32_MAX for the first
  }
  constexpr uint32_t kNone = UINT32_MAX;
  const uint32_t end = static_cast<uint32_t>(n);
  heap.clear();
  const auto cmp = std::greater<>{};
  auto push = [&](uint32_t l) {
    if (l == kNone) return;
    const uint32_t r = next[l];
    if (r == end) return;
    uint32_t rank;
    TokenId merged;
    if (m.pairs.find(id[l], id[r], rank, merged)) {
      heap.push_back({rank, l, r, len[l], len[r], merged});
      std::push_heap(heap.begin(), heap.end(), cmp);
    }
  };
  for (uint32_t i = 0; i + 1 < end; ++i) push(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), cmp);
    const Candidate c = heap.back();
    heap.pop_back();
    // Stale if either side merged since (its length changed) or right was absorbed.
    if (len[c.left] != c.left_len || next[c.left] != c.right || len[c.right] != c.right_len) continue;
    id[c.left] = c.merged;
    len[c.left] += len[c.right];
    len[c.right] = 0;
    next[c.left] = next[c.right];
    if (next[c.left] != end) prev[next[c.left]] = c.left;
    push(prev[c.left]);
    push(c.left);
  }
  for (uint32_t i = 0; i != end; i = next[i])
    if (id[i] >= 0) out.push_back(id[i]);
}

}  // namespace

void Tokenizer::Impl::bpe(std::string_view piece, std::vector<TokenId>& out) const {
  if (piece.empty()) return;
  if (whole_piece_first) {
    if (auto it = by_bytes.find(piece); it != by_bytes.end()) {
      out.push_back(it->second);
      return;
    }
  }
  if (piece.size() == 1) {
    if (TokenId t = byte_token[static_cast<uint8_t>(piece[0])]; t >= 0) out.push_back(t);
  } else if (piece.size() <= kScanLimit) {
    bpe_scan(*this, piece, out);
  } else {
    bpe_heap(*this, piece, out);
  }
}

}  // namespace k3::text
