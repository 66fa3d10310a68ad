// runtime/eval_logits: evaluate one token sequence and keep the logits of every position,
// fed to the engine in a chosen way (the engine behind `k3 eval-logits` and the golden tests).
// Contract: modes are "batch" (one decode call with every token), "step" (one token per
// call) and "chunk:N" (N tokens per call); all three give the same logits up to float
// rounding. Returns n_tokens × n_vocab floats, row t = logits after token t. Parse errors
// throw k3::Error naming the bad text.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace k3::runtime {

class Engine;

struct EvalMode {
  int64_t tokens_per_call = 0;  // 0: all (batch)
  static EvalMode parse(std::string_view text);
  std::string name() const;
};

// Parses "1,2,3" / "1 2 3" / one id per line. With `markers`, the word <image> is allowed too:
// it adds no token, and its position (the count of tokens before it) is appended to *markers.
std::vector<int32_t> parse_token_list(std::string_view text, std::string_view what,
                                      std::vector<size_t>* markers = nullptr);

// embd: empty, or one per token (non-null: that position's input row, BatchToken::embd).
std::vector<float> eval_logits(Engine& engine, const std::vector<int32_t>& tokens, const EvalMode& mode,
                               int32_t seq = 0, std::span<const float* const> embd = {});

}  // namespace k3::runtime
