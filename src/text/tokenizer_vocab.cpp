// text/tokenizer_vocab: validating and indexing a vocabulary (Tokenizer::build), and the
// per-token accessors.
#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include "core/error.h"
#include "text/tokenizer_impl.h"
#include "text/unicode.h"

namespace k3::text {

uint32_t gpt2_byte_to_cp(uint8_t b) {
  // Printable Latin-1 bytes spell themselves; the other 68 bytes take U+0100.. in order.
  auto printable = [](int x) {
    return (x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE && x <= 0xFF);
  };
  if (printable(b)) return b;
  uint32_t n = 0;
  for (int x = 0; x < b; ++x)
    if (!printable(x)) ++n;
  return 0x100 + n;
}

void PairTable::reserve(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  keys_.assign(cap, kEmpty);
  vals_.assign(cap, 0);
  mask_ = cap - 1;
  shift_ = 64 - std::countr_zero(cap);
  count_ = 0;
}

void PairTable::grow() {
  std::vector<uint64_t> keys, vals;
  keys.swap(keys_);
  vals.swap(vals_);
  reserve(std::max<size_t>(16, keys.size()));  // doubles: capacity >= 2 * old capacity
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i] == kEmpty) continue;
    size_t h = slot(keys[i]);
    while (keys_[h] != kEmpty) h = (h + 1) & mask_;
    keys_[h] = keys[i];
    vals_[h] = vals[i];
    ++count_;
  }
}

void PairTable::insert(TokenId left, TokenId right, uint32_t rank, TokenId merged) {
  if (keys_.empty() || (count_ + 1) * 2 > keys_.size()) grow();
  const uint64_t key = pack(left, right);
  size_t h = slot(key);
  while (keys_[h] != kEmpty) {
    if (keys_[h] == key) return;
    h = (h + 1) & mask_;
  }
  keys_[h] = key;
  vals_[h] = (uint64_t{rank} << 32) | static_cast<uint32_t>(merged);
  ++count_;
}

namespace {

// Names llama.cpp treats as end-of-generation (besides the configured eos/eot/eom ids).
constexpr std::string_view kEogNames[] = {
    "[EOS]",
    "[EOT]",
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<EOT>",
    "<\xEF\xBD\x9C"
    "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
};
constexpr std::string_view kEotNames[] = {"[EOT]",   "<|eot_id|>",    "<|im_end|>",
                                          "<|end|>", "<end_of_turn>", "<EOT>"};

// Reverses the GPT-2 spelling; false if the text uses a character outside the mapping.
bool unspell(std::string_view text, const std::unordered_map<uint32_t, uint8_t>& inv, std::string& out) {
  out.clear();
  size_t i = 0;
  while (i < text.size()) {
    auto d = unicode::decode_utf8(text.data() + i, text.size() - i);
    auto it = inv.find(d.cp);
    if (it == inv.end() || (d.len == 1 && d.cp == unicode::kReplacement)) return false;
    out.push_back(static_cast<char>(it->second));
    i += d.len;
  }
  return true;
}

}  // namespace

std::shared_ptr<const Tokenizer> Tokenizer::build(VocabData data) {
  auto impl = std::make_unique<Impl>();
  Impl& m = *impl;
  const std::string& src = data.source;
  if (data.model != "gpt2")
    fail("{}: tokenizer.ggml.model '{}' is not supported (only byte-level BPE 'gpt2')", src, data.model);
  const size_t n = data.tokens.size();
  if (n == 0) fail("{}: tokenizer.ggml.tokens is empty", src);
  if (n > 0x7FFFFFFF) fail("{}: tokenizer.ggml.tokens has too many entries ({})", src, n);
  if (!data.token_types.empty() && data.token_types.size() != n)
    fail("{}: tokenizer.ggml.token_type has {} entries, tokenizer.ggml.tokens has {}", src,
         data.token_types.size(), n);
  m.pre = pretokenizer_from_name(data.pre);
  m.rank_bpe = m.pre == PreTokenizer::KimiK2;
  m.whole_piece_first = m.pre == PreTokenizer::KimiK2 || m.pre == PreTokenizer::Llama3;

  auto check_id = [&](TokenId id, const char* key) {
    if (id < -1 || id >= static_cast<TokenId>(n))
      fail("{}: tokenizer.ggml.{} = {} is outside the vocabulary (0..{})", src, key, id, n - 1);
  };
  check_id(data.bos, "bos_token_id");
  check_id(data.eos, "eos_token_id");
  check_id(data.eot, "eot_token_id");
  check_id(data.eom, "eom_token_id");
  check_id(data.unk, "unknown_token_id");
  check_id(data.pad, "padding_token_id");
  check_id(data.sep, "seperator_token_id");

  std::unordered_map<uint32_t, uint8_t> inv;
  for (int b = 0; b < 256; ++b) inv[gpt2_byte_to_cp(static_cast<uint8_t>(b))] = static_cast<uint8_t>(b);

  m.bytes.resize(n);
  m.types.resize(n);
  m.by_text.reserve(n);
  m.by_bytes.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const std::string& text = data.tokens[i];
    int32_t t = data.token_types.empty() ? 1 : data.token_types[i];
    if (t < 0 || t > 6) fail("{}: token {} ('{}') has invalid token_type {}", src, i, text, t);
    m.types[i] = static_cast<TokenType>(t);
    m.by_text.emplace(text, static_cast<TokenId>(i));  // first id wins for duplicate texts
    const bool byte_level = m.types[i] == TokenType::Normal || m.types[i] == TokenType::Undefined;
    if (byte_level && unspell(text, inv, m.bytes[i])) {
      if (!m.bytes[i].empty()) m.by_bytes.emplace(m.bytes[i], static_cast<TokenId>(i));
    } else {
      m.bytes[i] = text;
    }
  }
  // Vocabularies trained on UTF-8 text often lack bytes that never occur in it (C0, C1,
  // F5..FF); such a byte is dropped when encoding, as llama.cpp does. A vocabulary without
  // even the ASCII bytes is not byte-level BPE.
  size_t missing_ascii = 0;
  for (int b = 0; b < 256; ++b) {
    const char c = static_cast<char>(b);
    auto it = m.by_bytes.find(std::string_view(&c, 1));
    m.byte_token[b] = it == m.by_bytes.end() ? -1 : it->second;
    m.complete_bytes &= it != m.by_bytes.end();
    missing_ascii += b >= 0x20 && b < 0x7F && it == m.by_bytes.end();
  }
  if (missing_ascii > 0)
    fail("{}: the vocabulary has no token for {} printable ASCII byte(s), so it is not byte-level BPE", src,
         missing_ascii);

  if (m.rank_bpe) {
    // tiktoken: any split of a token into two tokens may merge into it, at its rank.
    size_t total = 0;
    for (const auto& [bytes, id] : m.by_bytes) total += bytes.size() - 1;
    m.pairs.reserve(total);
    std::vector<std::pair<TokenId, const std::string*>> order;
    order.reserve(m.by_bytes.size());
    for (const auto& [bytes, id] : m.by_bytes) order.emplace_back(id, &bytes);
    std::sort(order.begin(), order.end());
    for (const auto& [id, bytes_ptr] : order) {
      std::string_view b = *bytes_ptr;
      for (size_t k = 1; k < b.size(); ++k) {
        auto l = m.by_bytes.find(b.substr(0, k));
        if (l == m.by_bytes.end()) continue;
        auto r = m.by_bytes.find(b.substr(k));
        if (r == m.by_bytes.end()) continue;
        m.pairs.insert(l->second, r->second, static_cast<uint32_t>(id), id);
      }
    }
  } else {
    if (data.merges.empty()) fail("{}: tokenizer.ggml.merges is missing or empty", src);
    m.pairs.reserve(data.merges.size());
    std::string joined;
    for (size_t r = 0; r < data.merges.size(); ++r) {
      const std::string& line = data.merges[r];
      const size_t sp = line.find(' ', 1);
      if (sp == std::string::npos || sp + 1 >= line.size())
        fail("{}: tokenizer.ggml.merges[{}] = '{}' is not 'LEFT RIGHT'", src, r, line);
      std::string_view a(line.data(), sp), b(line.data() + sp + 1, line.size() - sp - 1);
      auto l = m.by_text.find(a), rr = m.by_text.find(b);
      joined.assign(a);
      joined.append(b);
      auto j = m.by_text.find(joined);
      if (l == m.by_text.end() || rr == m.by_text.end() || j == m.by_text.end()) continue;
      m.pairs.insert(l->second, rr->second, static_cast<uint32_t>(r), j->second);
    }
  }
  data.merges.clear();
  data.merges.shrink_to_fit();

  // Special tokens matched in text.
  for (size_t i = 0; i < n; ++i) {
    const TokenType t = m.types[i];
    const bool always = t == TokenType::UserDefined;
    if (!(always || t == TokenType::Control || t == TokenType::Unknown)) continue;
    if (m.bytes[i].empty()) continue;
    m.specials_by_byte[static_cast<uint8_t>(m.bytes[i][0])].push_back(
        {m.bytes[i], static_cast<TokenId>(i), always});
    m.any_special = true;
    m.any_always |= always;
  }
  for (auto& v : m.specials_by_byte)
    std::stable_sort(v.begin(), v.end(), [](const Impl::Special& a, const Impl::Special& b) {
      return a.text.size() > b.text.size();
    });

  // End of generation.
  if (data.eot < 0)
    for (auto name : kEotNames)
      if (auto it = m.by_text.find(name); it != m.by_text.end() && m.types[it->second] != TokenType::Normal) {
        data.eot = it->second;
        break;
      }
  m.eog_flag.assign(n, 0);
  auto add_eog = [&](TokenId id) {
    if (id >= 0 && !m.eog_flag[id]) {
      m.eog_flag[id] = 1;
      m.eog.push_back(id);
    }
  };
  add_eog(data.eos);
  add_eog(data.eot);
  add_eog(data.eom);
  for (auto name : kEogNames)
    if (auto it = m.by_text.find(name); it != m.by_text.end() && m.types[it->second] != TokenType::Normal)
      add_eog(it->second);
  std::sort(m.eog.begin(), m.eog.end());

  m.data = std::move(data);
  return std::shared_ptr<const Tokenizer>(new Tokenizer(std::move(impl)));
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

const std::string& Tokenizer::token_bytes(TokenId id) const {
  if (id < 0 || static_cast<size_t>(id) >= impl_->bytes.size())
    fail("token id {} is outside the vocabulary (0..{})", id, impl_->bytes.size() - 1);
  return impl_->bytes[id];
}
const std::string& Tokenizer::token_text(TokenId id) const {
  token_bytes(id);
  return impl_->data.tokens[id];
}
TokenType Tokenizer::token_type(TokenId id) const {
  token_bytes(id);
  return impl_->types[id];
}
size_t Tokenizer::n_vocab() const { return impl_->bytes.size(); }
bool Tokenizer::byte_complete() const { return impl_->complete_bytes; }
PreTokenizer Tokenizer::pre_tokenizer() const { return impl_->pre; }
TokenId Tokenizer::find(std::string_view text) const {
  auto it = impl_->by_text.find(text);
  return it == impl_->by_text.end() ? -1 : it->second;
}
TokenId Tokenizer::bos() const { return impl_->data.bos; }
TokenId Tokenizer::eos() const { return impl_->data.eos; }
TokenId Tokenizer::eot() const { return impl_->data.eot; }
TokenId Tokenizer::unk() const { return impl_->data.unk; }
TokenId Tokenizer::pad() const { return impl_->data.pad; }
bool Tokenizer::add_bos() const { return impl_->data.add_bos; }
bool Tokenizer::add_eos() const { return impl_->data.add_eos; }
bool Tokenizer::is_eog(TokenId id) const {
  return id >= 0 && static_cast<size_t>(id) < impl_->eog_flag.size() && impl_->eog_flag[id];
}
const std::vector<TokenId>& Tokenizer::eog_ids() const { return impl_->eog; }

}  // namespace k3::text
