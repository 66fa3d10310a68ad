// cli/cmd_imatrix: `k3 imatrix` — collect an importance matrix in llama.cpp's GGUF imatrix
// format and report expert coverage (docs/imatrix.md).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/open_model.h"
#include "cli/parse_args.h"
#include "cli/token_input.h"
#include "core/error.h"
#include "core/progress.h"
#include "model/model.h"
#include "runtime/eval_logits.h"
#include "text/tokenizer.h"
#include "tools/imatrix/imatrix.h"
#include "tools/imatrix/chat_corpus.h"

namespace k3::cli {
int cmd_imatrix(int argc, char** argv) {
  CLI::App app{"Collect an importance matrix (llama.cpp GGUF imatrix format) and expert coverage",
               "k3 imatrix"};
  std::string model_path, text_file, tokens_file, out_path;
  tools::ImatrixOptions opt;
  app.add_option("-m,--model", model_path, "GGUF model file")->required();
  auto* f_opt =
      app.add_option("-f,--file", text_file, "calibration text, tokenized with the model's vocabulary");
  auto* t_opt =
      app.add_option("--tokens-file", tokens_file, "file of token ids (commas/whitespace), used as they are");
  std::string chat_file;
  auto* c_opt =
      app.add_option("--chat", chat_file,
                     "calibration chats, one JSON object per line ({\"messages\": [...]}, OpenAI style; "
                     "reasoning_content and tools allowed), rendered through the chat template");
  f_opt->excludes(t_opt);
  c_opt->excludes(f_opt)->excludes(t_opt);
  app.footer(
      "Exactly one corpus: -f (plain text, special tokens parsed), --tokens-file (ids) or --chat (JSONL "
      "conversations; all samples are rendered, concatenated and cut into -c sized chunks).\n"
      "Example: k3 imatrix -m model.gguf --chat calib.jsonl -o imatrix.gguf -c 512 --chunks 200");
  app.add_option("-o,--output", out_path, "imatrix file to write (GGUF)")->required();
  app.add_option("-c,--ctx-size", opt.n_ctx, "tokens per chunk")->capture_default_str();
  app.add_option("--chunks", opt.max_chunks, "process at most this many chunks (default: all)");
  app.add_option("-t,--threads", opt.n_threads, "worker threads (0: machine default)");
  bool no_progress = false;
  app.add_flag("--no-progress", no_progress, "no progress bar on stderr");
  // Hidden: -ngl is every model command's flag, and imatrix says why it takes none.
  std::string gpu_layers;
  app.add_option("--n-gpu-layers", gpu_layers, "")->group("");
  if (auto rc = parse_args(app, argc, argv)) return *rc;
  if (!gpu_layers.empty())
    return usage_error(
        "-ngl: k3 imatrix collects every product's input activations on the CPU; run it without -ngl "
        "(docs/gpu.md)");
  if (int(!text_file.empty()) + int(!tokens_file.empty()) + int(!chat_file.empty()) != 1) {
    return usage_error("give exactly one of -f, --tokens-file or --chat");
  }

  auto model = open_model(model_path, VocabNeed::Optional, "imatrix").model;
  CorpusTokens corpus;
  if (!chat_file.empty()) {
    auto tok = text::Tokenizer::from_gguf(model->gguf());
    tools::ChatCorpus chats = tools::chat_corpus_tokens(*tok, chat_file);
    corpus.tokens = std::move(chats.tokens);
    if (tok->add_bos() && tok->bos() >= 0) corpus.bos = tok->bos();
    fmt::print(stderr, "imatrix: rendered {} chats from {} into {} tokens\n", chats.n_samples, chat_file,
               corpus.tokens.size());
  } else {
    corpus = load_corpus_tokens(*model, text_file, tokens_file, "imatrix");
  }
  std::vector<int32_t>& tokens = corpus.tokens;
  if (corpus.bos >= 0) opt.bos_token = corpus.bos;
  const std::string& source = !chat_file.empty() ? chat_file : !text_file.empty() ? text_file : tokens_file;
  opt.dataset = std::filesystem::path(source).filename().string();

  std::unique_ptr<Progress> bar;
  opt.progress = [&](int64_t done, int64_t total) {
    if (!bar)
      bar = std::make_unique<Progress>(static_cast<uint64_t>(total), "imatrix", !no_progress,
                                       ProgressUnit::tokens);
    bar->set(static_cast<uint64_t>(done));
  };
  const tools::ImatrixResult r = tools::collect_imatrix(model, tokens, opt);
  if (bar) bar->finish();
  tools::write_imatrix_gguf(out_path, r.stats);
  fmt::print("imatrix: {} chunks of {} tokens, {} entries written to {}\n", r.n_chunks, opt.n_ctx,
             r.stats.entries.size(), out_path);
  fmt::print("{}", tools::format_coverage(r.coverage));
  return 0;
}

}  // namespace k3::cli
