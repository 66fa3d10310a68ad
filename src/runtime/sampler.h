// runtime/sampler: turns one row of logits into the next token.
// Contract: the chain runs in llama.cpp's customary order — repetition/frequency/presence
// penalties over the last `repeat_last_n` accepted tokens, then top-k, top-p, min-p (these
// three judge the temperature-1 distribution), then temperature, softmax and one draw from a
// seeded std::mt19937_64. temperature <= 0 means greedy: the argmax after penalties (lowest
// id on ties), with no random draw. A filter that is disabled (top_k <= 0, top_p >= 1,
// min_p <= 0, repeat_penalty == 1) changes nothing, and every filter keeps at least one token.
// The same seed, logits and accepted history always give the same token.
#pragma once

#include <cstdint>
#include <string>
#include <deque>
#include <random>
#include <span>
#include <vector>

namespace k3::runtime {

struct SamplerParams {
  float temperature = 0.8f;
  int32_t top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float repeat_penalty = 1.0f;     // llama.cpp's: logit/penalty if > 0, logit·penalty if < 0
  int32_t repeat_last_n = 64;      // window of accepted tokens the penalties look at; 0: none
  float frequency_penalty = 0.0f;  // − count·f
  float presence_penalty = 0.0f;   // − p if the token occurred
  uint64_t seed = 0;
};

struct TokenProb {
  int32_t token;
  float p;
};

// What the Sampler refuses, for callers that validate before any work (the server: a 400
// before prefill instead of a 500 after it). field is empty when the parameters are fine.
struct SamplerParamsError {
  std::string field, message;
};
SamplerParamsError check_sampler_params(const SamplerParams& p);

class Sampler {
 public:
  explicit Sampler(const SamplerParams& params);

  // Picks a token from `logits` (one per vocabulary id). Does not record it: call accept().
  // `allowed` (bit i of word i/64 set: token i may be drawn), when given, removes every other
  // token before the chain runs, as a grammar mask must (top-k etc. judge what remains).
  // Throws k3::Error when it allows no token.
  int32_t sample(std::span<const float> logits, std::span<const uint64_t> allowed = {});
  // Records a token (generated, or from the prompt) in the penalty window.
  void accept(int32_t token);
  // Forgets the history and re-seeds the generator.
  void reset();

  // The distribution the draw would use: surviving tokens with their probabilities, most
  // likely first (ties by lower id). Greedy gives one token with p = 1.
  std::vector<TokenProb> distribution(std::span<const float> logits,
                                      std::span<const uint64_t> allowed = {}) const;

  const SamplerParams& params() const { return params_; }

 private:
  std::vector<TokenProb> candidates(std::span<const float> logits, std::span<const uint64_t> allowed) const;
  SamplerParams params_;
  std::mt19937_64 rng_;
  std::deque<int32_t> history_;
};

}  // namespace k3::runtime
