// text/tokenizer: encoding (special-token partition, pre-tokenization, BPE) and decoding.
#include "text/tokenizer.h"

#include <cstring>

#include "core/error.h"
#include "text/tokenizer_impl.h"
#include "text/unicode.h"

namespace k3::text {

void Tokenizer::encode_piece(std::string_view piece, std::vector<TokenId>& out) const {
  impl_->bpe(piece, out);
}

std::vector<std::string_view> Tokenizer::pieces(std::string_view text) const {
  return pretokenize(impl_->pre, text);
}

void Tokenizer::encode_ordinary(std::string_view text, std::vector<TokenId>& out) const {
  if (text.size() >= 0xFFFFFFF0u) fail("text to tokenize is too large ({} bytes; limit 4 GiB)", text.size());
  thread_local std::vector<std::string_view> pieces;
  pieces.clear();
  pretokenize(impl_->pre, text, pieces);
  for (std::string_view p : pieces) impl_->bpe(p, out);
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool parse_special, bool add_special) const {
  const Impl& m = *impl_;
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 4);
  if (add_special && m.data.add_bos && m.data.bos >= 0) out.push_back(m.data.bos);
  if (!(m.any_always || (parse_special && m.any_special))) {
    encode_ordinary(text, out);
  } else {
    // Leftmost match first, the longest special at that position.
    size_t gap = 0;
    for (size_t i = 0; i < text.size(); ++i) {
      const auto& cands = m.specials_by_byte[static_cast<uint8_t>(text[i])];
      if (cands.empty()) continue;
      for (const auto& sp : cands) {
        if (!(sp.always || parse_special)) continue;
        if (sp.text.size() > text.size() - i ||
            std::memcmp(text.data() + i, sp.text.data(), sp.text.size()) != 0)
          continue;
        if (gap < i) encode_ordinary(text.substr(gap, i - gap), out);
        out.push_back(sp.id);
        i += sp.text.size() - 1;
        gap = i + 1;
        break;
      }
    }
    if (gap < text.size()) encode_ordinary(text.substr(gap), out);
  }
  if (add_special && m.data.add_eos && m.data.eos >= 0) out.push_back(m.data.eos);
  return out;
}

namespace {

// Control/unknown/unused tokens are markup, not text: they can be hidden from a reader.
bool hideable(TokenType t) {
  return t == TokenType::Control || t == TokenType::Unknown || t == TokenType::Unused;
}

}  // namespace

std::string Tokenizer::decode(std::span<const TokenId> ids, bool render_control) const {
  std::string out;
  for (TokenId id : ids) {
    const std::string& b = token_bytes(id);
    if (!render_control && hideable(impl_->types[id])) continue;
    out += b;
  }
  return out;
}

std::string StreamingDetokenizer::push(TokenId id) {
  const std::string& b = tok_.token_bytes(id);
  if (render_control_ ||
      (tok_.token_type(id) != TokenType::Control && tok_.token_type(id) != TokenType::Unknown &&
       tok_.token_type(id) != TokenType::Unused))
    held_ += b;
  const size_t keep = unicode::utf8_complete_prefix(held_);
  std::string ready = held_.substr(0, keep);
  held_.erase(0, keep);
  return ready;
}

std::string StreamingDetokenizer::flush() {
  std::string rest;
  rest.swap(held_);
  return rest;
}

}  // namespace k3::text
