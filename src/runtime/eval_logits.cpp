// runtime/eval_logits: see eval_logits.h.
#include "runtime/eval_logits.h"

#include <algorithm>
#include <charconv>

#include "core/error.h"
#include "runtime/engine.h"

namespace k3::runtime {

EvalMode EvalMode::parse(std::string_view t) {
  if (t == "batch") return {0};
  if (t == "step") return {1};
  if (t.starts_with("chunk:")) {
    std::string_view num = t.substr(6);
    int64_t n = 0;
    auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), n);
    if (ec == std::errc() && p == num.data() + num.size() && n > 0) return {n};
  }
  fail("bad mode '{}': expected batch, step or chunk:N with N > 0", t);
}

std::string EvalMode::name() const {
  if (tokens_per_call == 0) return "batch";
  if (tokens_per_call == 1) return "step";
  return fmt::format("chunk:{}", tokens_per_call);
}

std::vector<int32_t> parse_token_list(std::string_view text, std::string_view what,
                                      std::vector<size_t>* markers) {
  std::vector<int32_t> out;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++i;
      continue;
    }
    if (markers && text.substr(i).starts_with("<image>")) {
      markers->push_back(out.size());
      i += 7;
      continue;
    }
    int64_t v = 0;
    auto [p, ec] = std::from_chars(text.data() + i, text.data() + text.size(), v);
    if (ec != std::errc() || v < 0 || v > INT32_MAX)
      fail("{}: bad token id at character {}: '{}'", what, i, text.substr(i, 12));
    out.push_back(static_cast<int32_t>(v));
    i = static_cast<size_t>(p - text.data());
    if (i < text.size() &&
        !(text[i] == ',' || text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r'))
      fail("{}: bad token id at character {}: '{}'", what, i, text.substr(i, 12));
  }
  return out;
}

std::vector<float> eval_logits(Engine& engine, const std::vector<int32_t>& tokens, const EvalMode& mode,
                               int32_t seq, std::span<const float* const> embd) {
  const size_t V = static_cast<size_t>(engine.n_vocab());
  std::vector<float> out;
  out.reserve(tokens.size() * V);
  const size_t step = mode.tokens_per_call > 0 ? static_cast<size_t>(mode.tokens_per_call)
                                               : std::max<size_t>(tokens.size(), 1);
  std::vector<BatchToken> batch;
  for (size_t i = 0; i < tokens.size(); i += step) {
    batch.clear();
    for (size_t j = i; j < std::min(tokens.size(), i + step); ++j)
      batch.push_back({tokens[j], seq, -1, true, embd.empty() ? nullptr : embd[j]});
    std::vector<float> l = engine.decode(batch);
    out.insert(out.end(), l.begin(), l.end());
  }
  return out;
}

}  // namespace k3::runtime
