// cli/cmd_quantize: `k3 quantize IN OUT TYPE [options]` — llama-quantize-compatible model
// quantization (tools/quantize/quantize.h), ending with a census of the result. See docs/quantize.md.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/parse_args.h"
#include "core/error.h"
#include "core/log.h"
#include "gguf/census.h"
#include "gguf/file.h"
#include "quant/types.h"
#include "tools/quantize/quant_recipe.h"
#include "tools/quantize/quantize.h"
#include "tools/quantize/quantize_imatrix.h"
#include "tools/split/split.h"

namespace k3::cli {

namespace {

quant::Type parse_type(const std::string& flag, const std::string& s) {
  auto t = quant::type_from_name(s);
  if (!t || !quant::type_info(*t).file_type) fail("{}: unknown tensor type '{}'", flag, s);
  return *t;
}

std::string gb(uint64_t b) {
  return fmt::format("{:.2f} GiB", static_cast<double>(b) / (1024.0 * 1024 * 1024));
}
std::string mb(uint64_t b) { return fmt::format("{:.2f} MB", static_cast<double>(b) / 1e6); }

void print_summary(const tools::QuantizeResult& r) {
  auto f = gguf::GgufFile::open(r.files.front());
  gguf::Census c = gguf::take_census(*f);
  fmt::print("\n{} ({} file{}, {})\n", r.files.front(), r.files.size(), r.files.size() == 1 ? "" : "s",
             c.file_size >= (1ull << 30) ? gb(c.file_size) : mb(c.file_size));
  fmt::print("  architecture {}   file type {} ({})   tensors {}   parameters {}\n", c.architecture,
             r.plan.recipe.name, c.file_type, c.tensor_count, gguf::with_commas(c.params));
  fmt::print("  size {} of tensor data, {:.3f} bits per weight\n",
             c.tensor_bytes >= (1ull << 30) ? gb(c.tensor_bytes) : mb(c.tensor_bytes), c.bpw);
  fmt::print("  {:<8} {:>8} {:>16} {:>12}\n", "type", "tensors", "params", "size");
  for (const gguf::TypeCensus& t : c.types)
    fmt::print("  {:<8} {:>8} {:>16} {:>12}\n", quant::type_name(t.type), t.tensors,
               gguf::with_commas(t.params), t.bytes >= (1ull << 30) ? gb(t.bytes) : mb(t.bytes));
  for (const gguf::ExpertGroup& g : c.expert_groups)
    fmt::print("  experts: {} ({})\n", gguf::expert_group_text(g), mb(g.bytes));
  for (const std::string& w : c.warnings) fmt::print("  warning: {}\n", w);
  const double mbps = r.seconds > 0 ? static_cast<double>(r.plan.bytes_in) / 1e6 / r.seconds : 0.0;
  fmt::print("  {} in → {} out in {:.2f} s ({:.1f} MB/s, {} thread{})\n", mb(r.plan.bytes_in),
             mb(r.plan.bytes_out), r.seconds, mbps, r.threads, r.threads == 1 ? "" : "s");
}

}  // namespace

int cmd_quantize(int argc, char** argv) {
  CLI::App app{"Quantize a GGUF model with llama-quantize's per-tensor rules", "k3 quantize"};
  tools::QuantizeOptions o;
  std::string out_type, embd_type, split_size;
  uint32_t split_tensors = 0;
  bool quiet = false, no_progress = false, list_types = false, show_plan = false;
  app.add_option("input", o.input, "input GGUF (first shard of a split model)");
  app.add_option("output", o.output, "output GGUF (shards: OUT-0000i-of-0000N.gguf)");
  app.add_option("type", o.type,
                 "file type or preset: Q8_0, Q6_K, Q4_K_M, Q4_K_S, Q3_K_S, Q2_K, IQ2_XXS, "
                 "IQ1_M, IQ1_S, MXFP4_MOE, F16, BF16, F32, COPY, K3_REAP_IQ1M");
  auto* im_opt =
      app.add_option("--imatrix", o.imatrix, "importance matrix (llama-imatrix GGUF or legacy .dat)");
  app.add_flag("--uniform-imatrix", o.uniform_imatrix,
               "no calibration: importance 1 for every column, so IQ types can be made without an imatrix "
               "(worse quality; for A/B comparisons)")
      ->excludes(im_opt);
  app.add_flag("--uniform-missing", o.uniform_missing,
               "with --imatrix: tensors it has no entry for (token_embd.weight, which no matmul reads) get "
               "importance 1 instead of the unweighted quantizer llama-quantize uses (better at 2 bits; not "
               "byte-identical to llama-quantize for those tensors)")
      ->needs(im_opt);
  app.add_option("--tensor-type", o.tensor_types, "REGEX=TYPE override, repeatable, first match wins");
  app.add_flag("--pure", o.pure, "no mixture rules: the file type's default type everywhere");
  app.add_option("--output-tensor-type", out_type, "type of output.weight");
  app.add_option("--token-embedding-type", embd_type, "type of token_embd.weight");
  app.add_option("--split-max-size", split_size, "start a new shard before this size (e.g. 45G, 500M)");
  app.add_option("--split-max-tensors", split_tensors, "start a new shard every N tensors");
  app.add_flag("--allow-requantize", o.allow_requantize, "allow converting already-quantized tensors");
  app.add_flag("--avoid-unsafe-gpu-types", o.avoid_unsafe_gpu,
               "replace IQ1_S/IQ2_S/IQ3_S (broken CUDA matmul on sm_120) by IQ1_M/IQ2_XS/Q3_K");
  app.add_option("-t,--threads", o.threads, "threads (default: physical cores)");
  app.add_flag("--show-plan", show_plan, "print every tensor's type choice and exit (writes nothing)");
  app.add_flag("--no-progress", no_progress, "no progress bar");
  app.add_flag("-q,--quiet", quiet, "no summary");
  app.add_flag("--list-types", list_types, "print the accepted file types and exit");
  if (auto rc = parse_args(app, argc, argv)) return *rc;

  if (list_types) {
    for (const std::string& n : tools::recipe_names()) fmt::print("{}\n", n);
    return 0;
  }
  if (o.input.empty() || (o.output.empty() && !show_plan) || o.type.empty()) {
    return usage_error("give IN, OUT and TYPE: k3 quantize IN OUT TYPE [options] (see k3 quantize --help)");
  }
  if (!out_type.empty()) o.output_tensor_type = parse_type("--output-tensor-type", out_type);
  if (!embd_type.empty()) o.token_embedding_type = parse_type("--token-embedding-type", embd_type);
  if (!split_size.empty()) o.split.max_bytes = tools::parse_size(split_size);
  o.split.max_tensors = split_tensors;
  o.progress = !no_progress && !quiet;

  if (show_plan) {
    auto in = gguf::GgufFile::open(o.input);
    std::unique_ptr<tools::Imatrix> im = tools::importance_for(o, *in);
    tools::QuantizePlan p = tools::plan_quantize(*in, o, im.get());
    for (const tools::TensorPlan& t : p.tensors)
      fmt::print("{:<40} {:<22} {:>8} -> {:<8} {}{}\n", t.name, fmt::format("[{}]", fmt::join(t.ne, ", ")),
                 quant::type_name(t.from), quant::type_name(t.to), t.rule, t.imatrix ? " +imatrix" : "");
    fmt::print("{} → {}\n", mb(p.bytes_in), mb(p.bytes_out));
    return 0;
  }
  tools::QuantizeResult r = tools::quantize_model(o);
  if (!quiet) print_summary(r);
  return 0;
}

}  // namespace k3::cli
