// tools/tiktoken: tiktoken file parsing and the tiktoken → GGUF BPE translation (see
// tiktoken.h; the rules are in docs/convert.md, "Tokenizer").
#include "tools/convert/tiktoken.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <sstream>
#include <unordered_map>

#include "core/error.h"
#include "core/read_file.h"
#include "tools/synth/synth_vocab.h"

namespace k3::tools {

namespace {

int b64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

bool b64_decode(std::string_view s, std::string& out) {
  out.clear();
  if (s.empty() || s.size() % 4 != 0) return false;
  uint32_t acc = 0;
  int bits = 0;
  size_t pad = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '=') {
      if (i < s.size() - 2) return false;
      ++pad;
      continue;
    }
    if (pad) return false;
    int v = b64_value(s[i]);
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return !out.empty();
}

// tiktoken's byte-pair merge limited to ranks below max_rank: returns the final parts.
std::vector<std::string> rank_bpe(const std::unordered_map<std::string, uint32_t>& ranks,
                                  const std::string& token, uint32_t max_rank) {
  std::vector<std::string> parts;
  parts.reserve(token.size());
  for (char c : token) parts.emplace_back(1, c);
  while (parts.size() > 1) {
    size_t best = 0;
    uint32_t best_rank = UINT32_MAX;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      auto it = ranks.find(parts[i] + parts[i + 1]);
      if (it != ranks.end() && it->second < best_rank) {
        best_rank = it->second;
        best = i;
      }
    }
    if (best_rank == UINT32_MAX || best_rank >= max_rank) break;
    parts[best] += parts[best + 1];
    parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
  return parts;
}

}  // namespace

std::string gpt2_spelling(const std::string& bytes) {
  static const std::vector<std::string> table = [] {
    std::vector<std::string> t(256);
    for (int b = 0; b < 256; ++b) t[b] = gpt2_byte_spelling(static_cast<uint8_t>(b));
    return t;
  }();
  std::string s;
  s.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) s += table[c];
  return s;
}

std::vector<std::string> parse_tiktoken(const std::string& text, const std::string& name) {
  std::vector<std::string> by_rank;
  std::vector<bool> seen;
  std::unordered_map<std::string, uint32_t> index;
  std::istringstream in(text);
  std::string line;
  size_t lineno = 0, n_lines = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    ++n_lines;
    size_t sp = line.find(' ');
    if (sp == std::string::npos) fail("{}:{}: expected 'BASE64 RANK'", name, lineno);
    std::string bytes;
    if (!b64_decode(std::string_view(line).substr(0, sp), bytes))
      fail("{}:{}: bad base64 '{}'", name, lineno, line.substr(0, sp));
    const std::string rs = line.substr(sp + 1);
    char* end = nullptr;
    errno = 0;
    unsigned long long r = std::strtoull(rs.c_str(), &end, 10);
    if (rs.empty() || *end != '\0' || errno || rs[0] == '-' || r >= (1u << 24))
      fail("{}:{}: bad rank '{}'", name, lineno, rs);
    if (r >= by_rank.size()) {
      by_rank.resize(r + 1);
      seen.resize(r + 1, false);
    }
    if (seen[r]) fail("{}:{}: rank {} appears twice", name, lineno, r);
    auto [it, fresh] = index.emplace(bytes, static_cast<uint32_t>(r));
    if (!fresh) fail("{}:{}: token bytes of rank {} repeat rank {}", name, lineno, r, it->second);
    seen[r] = true;
    by_rank[r] = std::move(bytes);
  }
  if (n_lines == 0) fail("{}: no tokens", name);
  if (n_lines != by_rank.size())
    fail("{}: ranks are not dense: {} tokens but the highest rank is {}", name, n_lines, by_rank.size() - 1);
  return by_rank;
}

std::vector<std::string> read_tiktoken(const std::string& path) {
  return parse_tiktoken(read_file(path), path);
}

GgufBpeVocab gguf_bpe_vocab(const std::vector<std::string>& ranks,
                            const std::map<uint32_t, std::string>& specials, uint32_t n_vocab) {
  const uint32_t n_base = static_cast<uint32_t>(ranks.size());
  if (n_vocab < n_base) fail("vocab_size {} is smaller than the {} tiktoken ranks", n_vocab, n_base);
  GgufBpeVocab v;
  v.tokens.reserve(n_vocab);
  v.types.reserve(n_vocab);
  std::unordered_map<std::string, uint32_t> index;
  index.reserve(n_base * 2);
  for (uint32_t r = 0; r < n_base; ++r) index.emplace(ranks[r], r);
  for (uint32_t r = 0; r < n_base; ++r) {
    v.tokens.push_back(gpt2_spelling(ranks[r]));
    v.types.push_back(kTokNormal);
    if (ranks[r].size() < 2) continue;
    std::vector<std::string> parts = rank_bpe(index, ranks[r], r);
    if (parts.size() != 2)
      fail("tiktoken rank {} ({} bytes) is not the merge of two lower-ranked tokens ({} parts)", r,
           ranks[r].size(), parts.size());
    v.merges.push_back(gpt2_spelling(parts[0]) + " " + gpt2_spelling(parts[1]));
  }
  for (const auto& [id, name] : specials)
    if (id < n_base) fail("special token '{}' has id {}, inside the {} BPE ranks", name, id, n_base);
    else if (id >= n_vocab) fail("special token '{}' has id {}, beyond vocab_size {}", name, id, n_vocab);
  for (uint32_t id = n_base; id < n_vocab; ++id) {
    auto it = specials.find(id);
    if (it != specials.end()) {
      v.tokens.push_back(it->second);
      v.types.push_back(kTokControl);
    } else {
      v.tokens.push_back(fmt::format("[PAD{}]", id));
      v.types.push_back(kTokUnused);
    }
  }
  return v;
}

}  // namespace k3::tools
