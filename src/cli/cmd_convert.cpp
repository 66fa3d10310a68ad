// cli/cmd_convert: `k3 convert HF_DIR -o OUT.gguf [--outtype ...] [--split-max-size S]` — a
// Kimi-K3 Hugging Face checkpoint to a kimi-k3 GGUF (tools/convert/convert.h); with --mmproj,
// its vision tower to a kimik3 mmproj GGUF instead (tools/convert/vision.h). See docs/convert.md.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <string>

#include "cli/commands.h"
#include "cli/parse_args.h"
#include "core/error.h"
#include "tools/convert/convert.h"
#include "tools/convert/vision.h"
#include "tools/split/split.h"

namespace k3::cli {

int cmd_convert(int argc, char** argv) {
  CLI::App app{"Convert a Kimi-K3 Hugging Face checkpoint to a kimi-k3 GGUF (--mmproj: its vision tower)",
               "k3 convert"};
  tools::ConvertOptions o;
  std::string outtype = "bf16", size;
  bool quiet = false, no_progress = false, mmproj = false;
  app.add_option("hf_dir", o.hf_dir, "checkpoint directory: config.json, *.safetensors, tiktoken.model")
      ->required();
  app.add_option("-o,--output", o.out_path,
                 "output GGUF (with --split-max-size: the first shard's prefix); required unless --mmproj");
  app.add_flag("--mmproj", mmproj,
               "write only the vision tower and projector, as an mmproj GGUF (clip, kimik3); -o may be a "
               "directory or left out: mmproj-NAME-OUTTYPE.gguf in it or in HF_DIR");
  app.add_option("--outtype", outtype, "type of the 2-D/3-D weights: bf16 (default), f16, q8_0, f32")
      ->check(CLI::IsMember({"bf16", "f16", "q8_0", "f32"}, CLI::ignore_case));
  app.add_option("--split-max-size", size, "largest shard (tensor data), e.g. 45G, 500M (decimal units)");
  app.add_option("--chat-template", o.chat_template_file, "embed this Jinja file as tokenizer.chat_template");
  app.add_option("--name", o.name, "general.name (default: the directory name)");
  app.add_option("-t,--threads", o.threads, "worker threads (default: all cores)");
  app.add_flag("-v,--verbose", o.verbose, "one line per tensor");
  app.add_flag("-q,--quiet", quiet, "print nothing but errors");
  app.add_flag("--no-progress", no_progress, "no progress bar on stderr");
  if (auto rc = parse_args(app, argc, argv)) return *rc;
  o.progress = !no_progress && !quiet;
  o.outtype = tools::parse_outtype(outtype);
  if (!size.empty()) o.split_max_bytes = tools::parse_size(size);
  if (!mmproj && o.out_path.empty()) return usage_error("--output is required (except with --mmproj)");
  if (mmproj && !o.chat_template_file.empty()) return usage_error("--chat-template has no use with --mmproj");
  if (mmproj) {
    tools::ConvertResult r = tools::convert_hf_mmproj(o);
    if (!quiet) {
      for (const std::string& f : r.files) fmt::print("{}\n", f);
      fmt::print("mmproj: {} tensors; read {:.1f} MB, wrote {:.1f} MB in {:.2f} s\n", r.n_tensors,
                 r.bytes_in / 1e6, r.bytes_out / 1e6, r.seconds);
    }
    return 0;
  }
  tools::ConvertResult r = tools::convert_hf(o);
  if (!quiet) {
    for (const std::string& f : r.files) fmt::print("{}\n", f);
    fmt::print(
        "{} tensors ({} MXFP4 repacked losslessly), {} tokens, {} merges; read {:.1f} MB, wrote {:.1f} MB "
        "in {:.2f} s ({:.0f} MB/s)\n",
        r.n_tensors, r.n_mxfp4, r.n_tokens, r.n_merges, r.bytes_in / 1e6, r.bytes_out / 1e6, r.seconds,
        r.seconds > 0 ? r.bytes_in / 1e6 / r.seconds : 0.0);
  }
  return 0;
}

}  // namespace k3::cli
