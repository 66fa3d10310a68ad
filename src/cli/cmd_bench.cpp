// cli/cmd_bench: `k3 bench` — llama-bench-style pp/tg throughput plus the weight bytes each
// test streams and their share of the machine's memory bandwidth (docs/bench.md).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstring>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/dist_flags.h"
#include "cli/legacy_flags.h"
#include "cli/memory_flags.h"
#include "cli/open_model.h"
#include "cli/parse_args.h"
#include "tools/bench/bench.h"

namespace k3::cli {

int cmd_bench(int argc, char** argv) {
  CLI::App app{"Measure prompt-processing and generation throughput against the memory roofline", "k3 bench"};
  tools::BenchOptions o;
  bool json = false, no_bw = false;
  std::string model_path;
  app.add_option("-m,--model", model_path,
                 "GGUF model file (first shard of a split set); default: the embedded k3-tiny");
  app.add_option("-p,--n-prompt", o.n_prompt, "prompt tokens for the pp test (0: skip)")
      ->capture_default_str();
  app.add_option("-n,--n-gen", o.n_gen, "generated tokens for the tg test (0: skip)")->capture_default_str();
  app.add_option("-t,--threads", o.n_threads, "worker threads (0: machine default)")->capture_default_str();
  app.add_option("--ubatch-size", o.n_ubatch, "tokens per forward micro-batch")->capture_default_str();
  app.add_option("-d,--n-depth", o.depth,
                 "context tokens already in the sequence when each test starts (decoded once, untimed); "
                 "generation then also reads that much MLA cache per token, counted in the roofline")
      ->capture_default_str();
  model::CacheType cache_type = model::CacheType::F32;
  add_cache_type_flag(
      app, cache_type, "--cache-type",
      "MLA latent cache precision, f32 or f16 (f16 halves the cache bytes generation reads at "
      "depth; -ctk as in llama-bench; default f32)");
  app.add_option("-r,--repetitions", o.reps, "timed repetitions per test")->capture_default_str();
  app.add_flag("--json", json, "print the result as JSON (docs/bench.md)");
  app.add_flag(
      "--remeasure-bw", o.remeasure_bw,
      "measure memory bandwidth again (before and after the tests; the roofline uses the mean) and update "
      "the cache");
  app.add_flag("--no-bw", no_bw, "skip the memory-bandwidth roofline");
  app.add_option("--bw-cache", o.bw_cache_path, "bandwidth cache file (default ~/.cache/k3/membw.json)");
  MemoryFlags mem_flags;
  add_memory_flags(app, mem_flags);
  bool no_disk_bw = false, no_warmup = false;
  app.add_flag("--no-warmup", no_warmup, "skip the untimed warm-up repetition (cold-start numbers)");
  app.add_flag("--no-disk-bw", no_disk_bw,
               "with --ram-budget: skip measuring the disk's O_DIRECT read bandwidth");
  app.add_flag(
      "--profile", o.profile,
      "also time each op class (embedding, attnres + norms, KDA, MLA, dense FFN, MoE router + input, "
      "MoE experts, output head) and the matrix products inside it, over the timed repetitions, and the "
      "thread pool's waits (threads idle inside dispatches: late starts and uneven ends)");
  DistFlags dist_flags;
  add_dist_flags(app, dist_flags);
  LegacyFlags args(argc, argv, {{"-ub", "--ubatch-size"}, {"-ctk", "--cache-type"}});
  if (auto rc = parse_args(app, args.argc(), args.argv())) return *rc;
  o.measure_bw = !no_bw;
  o.f16_cache = cache_type == model::CacheType::F16;
  o.measure_disk_bw = !no_disk_bw;
  o.warmup = !no_warmup;
  if (std::string err = to_memory_options(mem_flags, o.memory); !err.empty()) {
    return usage_error("{}", err);
  }
  o.collective = start_dist(dist_flags);
  if (o.collective) o.memory.for_distributed_rank();
  OpenedModel m = open_model(model_path, VocabNeed::Optional, "bench");
  o.model_path = m.name;
  const tools::BenchResult r = tools::run_bench(o, m.model);
  if (r.followed) return 0;  // a rank other than 0 of a distributed run: rank 0 reports
  if (json) fmt::print("{}\n", tools::bench_json(r));
  else fmt::print("{}", tools::bench_table(r));
  return 0;
}

}  // namespace k3::cli
