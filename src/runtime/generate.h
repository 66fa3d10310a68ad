// runtime/generate: the plain text-generation loop (prompt → tokens), with timing.
// Contract: generate() decodes the prompt on sequence `seq` (which must be empty) in one
// batch, then alternates sample → report → decode until the sampler returns an
// end-of-generation token (not reported, unless ignore_eog), n_predict tokens were produced,
// or the context is full. Prompt tokens enter the sampler's penalty window, as in llama.cpp.
// Timings separate prompt processing from generation; generation time counts the decodes
// of generated tokens and their sampling.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace k3::runtime {

class Engine;
class Sampler;

// What generated tokens must obey (a grammar, grammar/matcher.h): consulted before each
// draw, told each token drawn. must_end: nothing may follow (generation stops, as at an
// end-of-generation token).
struct TokenConstraint {
  std::function<std::span<const uint64_t>()> allowed;
  std::function<void(int32_t)> accept;
  std::function<bool()> must_end;
};

struct GenerateOptions {
  int32_t n_predict = 128;  // < 0: until end of generation or a full context
  int32_t seq = 0;
  bool ignore_eog = false;              // keep going past end-of-generation tokens (benchmarks)
  std::function<bool(int32_t)> is_eog;  // null: nothing ends generation early
  const TokenConstraint* constraint = nullptr;
};

struct GenerateStats {
  int64_t n_prompt = 0;
  int64_t n_generated = 0;    // tokens reported to on_token
  int64_t n_gen_decoded = 0;  // generated tokens that were fed back through the model
  double prompt_seconds = 0;
  double gen_seconds = 0;
  std::string stop;  // "eog", "length" or "context"

  double prompt_tps() const { return prompt_seconds > 0 ? n_prompt / prompt_seconds : 0; }
  // Generated tokens per second (each costs one decode and one sample).
  double gen_tps() const { return gen_seconds > 0 ? n_gen_decoded / gen_seconds : 0; }
};

GenerateStats generate(Engine& engine, Sampler& sampler, std::span<const int32_t> prompt,
                       const GenerateOptions& opts, const std::function<void(int32_t)>& on_token);

}  // namespace k3::runtime
