// cli/cmd_eval_logits: `k3 eval-logits` — run a token sequence through the model and write
// the logits of every position as raw little-endian float32 (n_tokens × n_vocab, row-major,
// no header). A stable machine interface (docs/eval-logits.md).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>

#include "cli/commands.h"
#include "cli/image_input.h"
#include "cli/memory_flags.h"
#include "cli/open_model.h"
#include "model/gpu_placement.h"
#include "cli/dist_flags.h"
#include "cli/parse_args.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/read_file.h"
#include "core/thread_pool.h"
#include "model/model.h"
#include "runtime/engine.h"
#include "runtime/eval_logits.h"
#include "text/tokenizer.h"
#include "vision/encode.h"

namespace k3::cli {

int cmd_eval_logits(int argc, char** argv) {
  CLI::App app{"Evaluate a token sequence and write the logits of every position", "k3 eval-logits"};
  std::string model_path, tokens_arg, tokens_file, mode_arg = "batch", out_path;
  int threads = 0;
  int64_t ubatch = 0;
  app.add_option("-m,--model", model_path, "GGUF model file (first shard of a split set)")->required();
  auto* tok_opt = app.add_option("--tokens", tokens_arg, "token ids, comma separated");
  auto* file_opt = app.add_option("--tokens-file", tokens_file, "file of token ids (commas/whitespace)");
  tok_opt->excludes(file_opt);
  app.add_option("--mode", mode_arg, "batch | step | chunk:N (tokens per decode call)");
  app.add_option("-o,--output", out_path, "output file (raw float32 logits)")->required();
  app.add_option("-t,--threads", threads, "worker threads (default: machine default)");
  runtime::CacheType kv_type = runtime::CacheType::F32;
  add_cache_type_flag(app, kv_type, "--kv-type", "MLA latent cache type: f32 | f16 (default f32)");
  app.add_option("--ubatch", ubatch, "tokens per forward micro-batch (default: all of a call)");
  std::string mmproj;
  std::vector<std::string> images;
  app.add_option("--mmproj", mmproj, "vision tower (kimik3 mmproj GGUF) for --image");
  app.add_option(
      "--image", images,
      "image file for the next <image> marker of the token list (repeatable, in order); the marker\n"
      "becomes the image's embedding rows (docs/vision.md)");
  DistFlags dist_flags;
  add_dist_flags(app, dist_flags);
  MemoryFlags gpu_flags;
  add_gpu_flags(app, gpu_flags);
  if (auto rc = parse_args(app, argc, argv)) return *rc;
  model::GpuPlacement gpu;
  if (const std::string bad = to_gpu_placement(gpu_flags, gpu); !bad.empty()) return usage_error(bad);
  if (tokens_arg.empty() && tokens_file.empty()) { return usage_error("give --tokens or --tokens-file"); }

  if (!images.empty() && mmproj.empty()) return usage_error("--image needs --mmproj (the vision tower)");
  std::vector<int32_t> tokens;
  std::vector<size_t> markers;
  if (!tokens_file.empty()) {
    tokens = runtime::parse_token_list(read_file(tokens_file, kNoReadLimit, "--tokens-file"), tokens_file,
                                       &markers);
  } else {
    tokens = runtime::parse_token_list(tokens_arg, "--tokens", &markers);
  }
  if (markers.size() != images.size())
    return usage_error(fmt::format("the token list has {} <image> markers and {} --image files were given",
                                   markers.size(), images.size()));
  const runtime::EvalMode mode = runtime::EvalMode::parse(mode_arg);

  OpenedModel opened = open_model(model_path, VocabNeed::Optional, "eval-logits");
  auto model = opened.model;
  std::vector<vision::ImageEmbedding> embedded;
  std::vector<const float*> rows;
  if (!images.empty()) {
    // Each marker becomes its image's rows; their token id is <|media_pad|> when the vocabulary
    // has it (the id only names the position: its input is the row).
    const auto tower = open_tower(mmproj, model->hparams().n_embd);
    ThreadPool pool(threads > 0 ? threads : ThreadPool::default_threads());
    const int32_t pad =
        opened.tok && opened.tok->find("<|media_pad|>") >= 0 ? opened.tok->find("<|media_pad|>") : 0;
    for (const std::string& path : images)
      embedded.push_back(vision::embed_image(*tower, load_image(path).view(), &pool));
    std::vector<int32_t> expanded;
    size_t next = 0;
    for (size_t i = 0; i <= tokens.size(); ++i) {
      for (; next < markers.size() && markers[next] == i; ++next) {
        const vision::ImageEmbedding& e = embedded[next];
        for (int64_t r = 0; r < e.n_tokens; ++r) {
          expanded.push_back(pad);
          rows.push_back(e.data.data() + r * e.n_embd);
        }
      }
      if (i < tokens.size()) {
        expanded.push_back(tokens[i]);
        rows.push_back(nullptr);
      }
    }
    tokens = std::move(expanded);
  }
  if (tokens.empty()) fail("no tokens given");
  model::place_on_gpu(*model, gpu);
  runtime::EngineOptions opts;
  opts.n_threads = threads;
  opts.cache_type = kv_type;
  opts.n_ctx = static_cast<int64_t>(tokens.size());
  opts.n_ubatch = ubatch > 0 ? ubatch : static_cast<int64_t>(tokens.size());
  opts.hooks.collective = start_dist(dist_flags);
  runtime::Engine engine(model, opts);
  if (follow_if_follower(engine)) return 0;

  const auto t0 = std::chrono::steady_clock::now();
  std::vector<float> logits = runtime::eval_logits(engine, tokens, mode, 0, rows);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  AtomicFile out(out_path);
  out.write(logits.data(), logits.size() * sizeof(float));  // x86-64: already little-endian
  out.commit();
  fmt::print(stderr, "eval-logits: {} tokens × {} logits, mode {}, {:.3f} s ({:.1f} tok/s) → {}\n",
             tokens.size(), engine.n_vocab(), mode.name(), secs, tokens.size() / secs, out_path);
  return 0;
}

}  // namespace k3::cli
