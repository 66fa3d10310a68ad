// cli/cmd_merge: `k3 merge FIRST_SHARD OUT` — join a split GGUF model into one file
// (tools/split/split.h). See docs/split.md.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <string>

#include "cli/commands.h"
#include "cli/parse_args.h"
#include "core/error.h"
#include "tools/split/split.h"

namespace k3::cli {

int cmd_merge(int argc, char** argv) {
  CLI::App app{"Merge a split GGUF model into one file", "k3 merge"};
  std::string in, out;
  bool quiet = false, no_progress = false;
  app.add_option("first_shard", in, "the first shard (NAME-00001-of-0000N.gguf)")->required();
  app.add_option("output", out, "output GGUF")->required();
  app.add_flag("-q,--quiet", quiet, "print nothing but errors");
  app.add_flag("--no-progress", no_progress, "no progress bar on stderr");
  if (auto rc = parse_args(app, argc, argv)) return *rc;
  tools::ShardingResult r = tools::merge_model(in, out, !quiet && !no_progress);
  if (!quiet)
    fmt::print("{}: {} tensors, {} bytes of tensor data ({:.2f} s)\n", r.files.front(), r.tensors, r.bytes,
               r.seconds);
  return 0;
}

}  // namespace k3::cli
