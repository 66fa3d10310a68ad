// runtime/generate: the generation loop (see generate.h).
#include "runtime/generate.h"

#include <chrono>
#include <vector>

#include "core/error.h"
#include "runtime/engine.h"
#include "runtime/sampler.h"

namespace k3::runtime {

namespace {
double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

GenerateStats generate(Engine& engine, Sampler& sampler, std::span<const int32_t> prompt,
                       const GenerateOptions& opts, const std::function<void(int32_t)>& on_token) {
  if (prompt.empty()) fail("generate: the prompt has no tokens");
  if (engine.seq_pos(opts.seq) != 0)
    fail("generate: sequence {} already holds {} tokens", opts.seq, engine.seq_pos(opts.seq));
  if (static_cast<int64_t>(prompt.size()) >= engine.n_ctx())
    fail("generate: the prompt ({} tokens) does not fit the context ({} tokens)", prompt.size(),
         engine.n_ctx());
  GenerateStats st;
  st.n_prompt = static_cast<int64_t>(prompt.size());

  std::vector<BatchToken> batch;
  batch.reserve(prompt.size());
  for (size_t i = 0; i < prompt.size(); ++i) {
    batch.push_back({prompt[i], opts.seq, -1, i + 1 == prompt.size()});
    sampler.accept(prompt[i]);
  }
  auto t0 = std::chrono::steady_clock::now();
  std::vector<float> logits = engine.decode(batch);
  st.prompt_seconds = since(t0);

  auto t1 = std::chrono::steady_clock::now();
  for (;;) {
    if (opts.n_predict >= 0 && st.n_generated >= opts.n_predict) {
      st.stop = "length";
      break;
    }
    const TokenConstraint* c = opts.constraint;
    if (c && c->must_end()) {
      st.stop = "eog";
      break;
    }
    int32_t tok = c ? sampler.sample(logits, c->allowed()) : sampler.sample(logits);
    if (c) c->accept(tok);
    if ((!opts.ignore_eog || c) && opts.is_eog && opts.is_eog(tok)) {  // a grammar ends at its end
      st.stop = "eog";
      break;
    }
    sampler.accept(tok);
    on_token(tok);
    ++st.n_generated;
    if (opts.n_predict >= 0 && st.n_generated >= opts.n_predict) {
      st.stop = "length";  // no need to run the model on the last token
      break;
    }
    if (engine.seq_pos(opts.seq) + 1 >= engine.n_ctx()) {
      st.stop = "context";
      break;
    }
    BatchToken b{tok, opts.seq, -1, true};
    logits = engine.decode(std::span<const BatchToken>(&b, 1));
    ++st.n_gen_decoded;
  }
  st.gen_seconds = since(t1);
  return st;
}

}  // namespace k3::runtime
