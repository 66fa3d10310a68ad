// cli/cmd_split: `k3 split IN OUT_PREFIX (--split-max-size S | --split-max-tensors N)` — re-shard
// a GGUF model in the standard split.* layout (tools/split/split.h). See docs/split.md.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <string>

#include "cli/commands.h"
#include "cli/parse_args.h"
#include "core/error.h"
#include "tools/split/split.h"

namespace k3::cli {

int cmd_split(int argc, char** argv) {
  CLI::App app{"Split a GGUF model into shards (gguf-split layout)", "k3 split"};
  std::string in, prefix, size;
  uint32_t max_tensors = 0;
  bool quiet = false, no_progress = false;
  app.add_option("input", in, "input GGUF (a split model is read from its first shard)")->required();
  app.add_option("output_prefix", prefix, "output prefix: shards are PREFIX-0000i-of-0000N.gguf")->required();
  app.add_option("--split-max-size", size, "largest shard (tensor data), e.g. 45G, 500M (decimal units)");
  app.add_option("--split-max-tensors", max_tensors, "most tensors per shard");
  app.add_flag("-q,--quiet", quiet, "print nothing but errors");
  app.add_flag("--no-progress", no_progress, "no progress bar on stderr");
  if (auto rc = parse_args(app, argc, argv)) return *rc;
  gguf::SplitOptions sp;
  if (!size.empty()) sp.max_bytes = tools::parse_size(size);
  sp.max_tensors = max_tensors;
  if (!sp.max_bytes && !sp.max_tensors) {
    return usage_error("give --split-max-size or --split-max-tensors");
  }
  tools::ShardingResult r = tools::split_model(in, prefix, sp, !quiet && !no_progress);
  if (!quiet) {
    for (const std::string& f : r.files) fmt::print("{}\n", f);
    fmt::print("{} tensors, {} bytes of tensor data in {} shard{} ({:.2f} s)\n", r.tensors, r.bytes,
               r.files.size(), r.files.size() == 1 ? "" : "s", r.seconds);
  }
  return 0;
}

}  // namespace k3::cli
