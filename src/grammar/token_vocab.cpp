// grammar/token_vocab: see token_vocab.h.
#include "grammar/token_vocab.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "text/tokenizer.h"

namespace k3::grammar {

TokenVocab::TokenVocab(std::vector<std::string> pieces, std::vector<TokenClass> classes)
    : pieces_(std::move(pieces)), classes_(std::move(classes)) {
  if (pieces_.size() != classes_.size()) fail("grammar: vocabulary pieces and classes differ in size");
  std::vector<int32_t> text;
  for (size_t i = 0; i < classes_.size(); ++i) {
    const int32_t id = static_cast<int32_t>(i);
    if (classes_[i] == TokenClass::Text) {
      if (!pieces_[i].empty() && pieces_[i].size() < 65535) text.push_back(id);
    } else {
      special_.emplace(pieces_[i], id);
      if (classes_[i] == TokenClass::Eog) eog_.push_back(id);
    }
  }
  // Sorting the pieces lays the trie out in depth-first order: a node is a distinct prefix,
  // a new node starts where a piece's bytes leave the previous piece's.
  std::sort(text.begin(), text.end(),
            [&](int32_t a, int32_t b) { return pieces_[a] != pieces_[b] ? pieces_[a] < pieces_[b] : a < b; });
  Trie& t = trie_;
  std::vector<uint32_t> path;  // node index per depth of the current piece
  std::string prev;
  std::vector<std::vector<int32_t>> node_ids;
  for (int32_t id : text) {
    const std::string& p = pieces_[id];
    size_t common = 0;
    while (common < prev.size() && common < p.size() && prev[common] == p[common]) ++common;
    // Nodes deeper than the common prefix are finished: their subtree ends here.
    for (size_t d = path.size(); d > common; --d) t.skip[path[d - 1]] = static_cast<uint32_t>(t.byte.size());
    path.resize(common);
    for (size_t d = common; d < p.size(); ++d) {
      path.push_back(static_cast<uint32_t>(t.byte.size()));
      t.byte.push_back(static_cast<uint8_t>(p[d]));
      t.depth.push_back(static_cast<uint16_t>(d + 1));
      t.skip.push_back(0);
      node_ids.emplace_back();
    }
    node_ids[path.back()].push_back(id);
    t.max_depth = std::max<uint16_t>(t.max_depth, static_cast<uint16_t>(p.size()));
    prev = p;
  }
  for (uint32_t n : path) t.skip[n] = static_cast<uint32_t>(t.byte.size());
  t.tok_begin.reserve(node_ids.size() + 1);
  for (const auto& v : node_ids) {
    t.tok_begin.push_back(static_cast<uint32_t>(t.ids.size()));
    t.ids.insert(t.ids.end(), v.begin(), v.end());
  }
  t.tok_begin.push_back(static_cast<uint32_t>(t.ids.size()));
}

std::shared_ptr<const TokenVocab> TokenVocab::from_tokenizer(const text::Tokenizer& tok,
                                                             const std::vector<int32_t>& extra_eog) {
  const size_t n = tok.n_vocab();
  std::vector<std::string> pieces(n);
  std::vector<TokenClass> classes(n, TokenClass::Text);
  for (size_t i = 0; i < n; ++i) {
    const int32_t id = static_cast<int32_t>(i);
    const bool eog = tok.is_eog(id) || std::find(extra_eog.begin(), extra_eog.end(), id) != extra_eog.end();
    if (eog || tok.is_control(id)) {
      classes[i] = eog ? TokenClass::Eog : TokenClass::Special;
      pieces[i] = tok.token_text(id);
    } else {
      pieces[i] = tok.token_bytes(id);
    }
  }
  return std::make_shared<const TokenVocab>(std::move(pieces), std::move(classes));
}

int32_t TokenVocab::find_special(const std::string& name) const {
  auto it = special_.find(name);
  return it == special_.end() ? -1 : it->second;
}

}  // namespace k3::grammar
