// cli/main: `k3 <subcommand> ...` dispatch, top-level help and error reporting.
#include <fmt/format.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "cli/commands.h"
#include "cli/legacy_flags.h"
#include "cli/memory_flags.h"
#include "cli/parse_args.h"
#include "core/error.h"
#include "dist/cluster.h"
#include "core/version.h"

namespace k3::cli {

const Command* commands() {
  static const Command table[] = {
      {"run", "generate text from a prompt (default: the embedded trained k3-tiny)", cmd_run},
      {"info", "census of a GGUF model: hyperparameters, layers, tensor types, experts", cmd_info},
      {"dequant", "write one tensor as raw float32", cmd_dequant},
      {"eval-logits", "write the logits of every position for a token sequence", cmd_eval_logits},
      {"embed-image", "run an image through a vision tower (--mmproj) and write its embeddings",
       cmd_embed_image},
      {"synth", "write a random but valid Kimi-K3 GGUF of any shape and quant mix", cmd_synth},
      {"tokenize", "show how text tokenizes with a model's vocabulary", cmd_tokenize},
      {"chat", "talk to a model in the terminal (chat template, streamed answers, /save, /load)", cmd_chat},
      {"chat-render", "print the exact prompt a conversation renders to", cmd_chat_render},
      {"bench", "measure prompt and generation throughput against the memory roofline", cmd_bench},
      {"plan", "predict memory per rank and prefill/decode speed on N hosts (cost model)", cmd_plan},
      {"serve", "OpenAI-compatible chat server (chat, completions, tool calls, SSE)", cmd_serve},
      {"perplexity", "perplexity of a text, and KL divergence against a base model", cmd_perplexity},
      {"niah", "needle in a haystack: pass-key retrieval grid over lengths and depths", cmd_niah},
      {"quantize", "quantize a GGUF model with llama-quantize's per-tensor rules", cmd_quantize},
      {"split", "split a GGUF model into shards (gguf-split layout)", cmd_split},
      {"merge", "merge a split GGUF model into one file", cmd_merge},
      {"convert", "convert a Kimi-K3 Hugging Face checkpoint (safetensors) to GGUF", cmd_convert},
      {"imatrix", "collect an importance matrix (llama.cpp GGUF format) and expert coverage", cmd_imatrix},
      {"reap", "prune routed experts (REAP saliency, frequency or random), byte-exact GGUF slicing",
       cmd_reap},
      {nullptr, nullptr, nullptr},
  };
  return table;
}

static void print_help() {
  fmt::print(
      "k3 — run and build Kimi-K3 GGUF models on one machine\n\n"
      "usage: k3 <command> [options]   (k3 <command> --help for details)\n\ncommands:\n");
  for (const Command* c = commands(); c->name; ++c) fmt::print("  {:<13} {}\n", c->name, c->summary);
  fmt::print("\nDocumentation: docs/ in the source tree (one page per command).\n");
}

}  // namespace k3::cli

int main(int argc, char** argv) {
  using namespace k3::cli;
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
      !std::strcmp(argv[1], "help")) {
    print_help();
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "--list-devices")) list_devices();
  // llama.cpp's multi-letter single-dash GPU flags, for every command (CLI11 takes one letter).
  LegacyFlags gpu_spellings(argc, argv,
                            {{"-ngl", "--n-gpu-layers"}, {"-dev", "--device"}, {"-ncmoe", "--n-cpu-moe"}});
  argc = gpu_spellings.argc();
  argv = gpu_spellings.argv();
  if (!std::strcmp(argv[1], "--version")) {
    fmt::print("k3 {}\n", k3::version());
    return 0;
  }
  for (const Command* c = commands(); c->name; ++c) {
    if (std::strcmp(argv[1], c->name) != 0) continue;
    std::string prog = std::string("k3 ") + c->name;
    argv[1] = prog.data();
    int rc = 1;
    try {
      rc = c->fn(argc - 1, argv + 1);
    } catch (const k3::Error& e) {
      fmt::print(stderr, "error: {}\n", e.what());
    } catch (const std::bad_alloc&) {
      fmt::print(stderr, "error: out of memory\n");
    } catch (const std::exception& e) { fmt::print(stderr, "error: internal: {}\n", e.what()); }
    // A distributed run (docs/distributed.md): a rank that fails ends them all, since the
    // others may be waiting for it; otherwise each rank leaves MPI in order.
    if (k3::dist::Cluster::current()) {
      if (rc != 0) k3::dist::Cluster::abort(rc);
      k3::dist::Cluster::finish();
    }
    return rc;
  }
  return usage_error("unknown command '{}' (see k3 --help)", argv[1]);
}
