// cli/cmd_info: `k3 info MODEL [--json]` — the census of a GGUF file (gguf/census.h) as an
// aligned human report, or as the stable JSON of docs/gguf-info-json.md. Optional listings of
// every metadata key and every tensor.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/parse_args.h"
#include "core/error.h"
#include "gguf/census.h"
#include "gguf/file.h"

namespace k3::cli {

namespace {

// 12595256 -> "12.60 M"; keeps the exact number beside it in the report.
std::string short_count(uint64_t n) {
  const char* units[] = {"", " K", " M", " B", " T"};
  double x = static_cast<double>(n);
  int u = 0;
  while (x >= 1000 && u < 4) {
    x /= 1000;
    ++u;
  }
  return u == 0 ? fmt::format("{}", n) : fmt::format("{:.2f}{}", x, units[u]);
}

std::string short_bytes(uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double x = static_cast<double>(n);
  int u = 0;
  while (x >= 1024 && u < 4) {
    x /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", n) : fmt::format("{:.2f} {}", x, units[u]);
}

double pct(uint64_t a, uint64_t b) {
  return b ? 100.0 * static_cast<double>(a) / static_cast<double>(b) : 0.0;
}

void print_human(const gguf::GgufFile& f, const gguf::Census& c, bool list_kv, bool list_tensors) {
  using gguf::with_commas;
  auto row = [](const char* label, const std::string& value) { fmt::print("{:<14}{}\n", label, value); };
  row("file", fmt::format("{} (GGUF v{}, {} shard{})", c.path, c.version, c.shards.size(),
                          c.shards.size() == 1 ? "" : "s"));
  row("size", fmt::format("{} bytes ({})", with_commas(c.file_size), short_bytes(c.file_size)));
  row("architecture", c.architecture.empty() ? "(none)" : c.architecture);
  if (!c.name.empty()) row("name", c.name);
  if (!c.general_type.empty()) row("type", c.general_type);
  if (c.file_type >= 0) row("file_type", fmt::format("{}", c.file_type));
  if (!c.tokenizer_model.empty() || c.vocab_size >= 0)
    row("tokenizer",
        fmt::format("{}{}", c.tokenizer_model.empty() ? "?" : c.tokenizer_model,
                    c.vocab_size >= 0 ? fmt::format(", {} tokens", with_commas(c.vocab_size)) : ""));
  row("metadata", fmt::format("{} keys", c.kv_count));
  if (c.tensor_count == 0) {
    row("tensors", "0 (metadata-only file, e.g. a vocabulary)");
  } else {
    row("tensors", with_commas(c.tensor_count));
    row("params", fmt::format("{} ({})", with_commas(c.params), short_count(c.params)));
    row("tensor data",
        fmt::format("{} bytes ({})", with_commas(c.tensor_bytes), short_bytes(c.tensor_bytes)));
    row("bpw", fmt::format("{:.4f} (tensor data), {:.4f} (whole file)", c.bpw, c.bpw_file));
  }

  if (!c.hparams.empty()) {
    fmt::print("\nhyperparameters ({}.*)\n", c.architecture);
    size_t w = 0;
    for (const auto& [k, v] : c.hparams) w = std::max(w, k.size());
    for (const auto& [k, v] : c.hparams) fmt::print("  {:<{}}  {}\n", k, w, v.to_display(12));
  }

  if (c.block_count >= 0) {
    fmt::print("\nlayers        {}\n", c.block_count);
    if (c.is_k3) {
      std::vector<uint32_t> kda, mla, dense, moe;
      for (const gguf::LayerCensus& l : c.layers) {
        (l.attention == "KDA" ? kda : mla).push_back(l.index);
        (l.ffn == "dense" ? dense : moe).push_back(l.index);
      }
      auto kind = [](const char* name, const std::vector<uint32_t>& xs) {
        fmt::print("  {:<7} {:>4}  {}\n", name, xs.size(), xs.empty() ? "-" : gguf::index_ranges(xs));
      };
      kind("KDA", kda);
      kind("MLA", mla);
      kind("dense", dense);
      kind("MoE", moe);
      std::map<uint64_t, std::vector<uint32_t>> by_slots;
      for (const gguf::LayerCensus& l : c.layers)
        if (l.ffn == "MoE") by_slots[l.expert_slots].push_back(l.index);
      for (const auto& [slots, layers] : by_slots)
        fmt::print("  expert slots {} in layers {}\n", slots, gguf::index_ranges(layers));
    }
  }

  if (c.expert_tensors) {
    fmt::print("\nexperts       {} tensors, {} params ({:.1f}% of all), {} bytes ({:.1f}%)\n",
               c.expert_tensors, with_commas(c.expert_params), pct(c.expert_params, c.params),
               with_commas(c.expert_bytes), pct(c.expert_bytes, c.tensor_bytes));
    for (const gguf::ExpertGroup& g : c.expert_groups)
      fmt::print("  {} = {} params\n", gguf::expert_group_text(g),
                 with_commas(g.tensors * g.params_per_slot * g.slots));
  }

  if (!c.types.empty())
    fmt::print("\n  {:<8} {:>8} {:>18} {:>18} {:>7} {:>7}\n", "type", "tensors", "params", "bytes", "bytes%",
               "bpw");
  for (const gguf::TypeCensus& t : c.types)
    fmt::print("  {:<8} {:>8} {:>18} {:>18} {:>6.1f}% {:>7.4f}\n", quant::type_name(t.type), t.tensors,
               with_commas(t.params), with_commas(t.bytes), pct(t.bytes, c.tensor_bytes),
               quant::bits_per_weight(t.type));

  if (c.shards.size() > 1) {
    fmt::print("\nshards\n");
    for (size_t i = 0; i < c.shards.size(); ++i)
      fmt::print("  {:>3}  {:>6} tensors {:>18} bytes  {}\n", i + 1, c.shards[i].tensors,
                 with_commas(c.shards[i].file_size), c.shards[i].path);
  }

  if (list_kv) {
    fmt::print("\nmetadata\n");
    for (const auto& [k, v] : f.kvs())
      fmt::print("  {:<44} {:<8} {}\n", k,
                 v.is_array() ? fmt::format("{}[{}]", gguf::value_type_name(v.elem), v.size())
                              : gguf::value_type_name(v.type),
                 v.to_display(8));
  }
  if (list_tensors) {
    fmt::print("\ntensors\n");
    for (const gguf::TensorInfo& t : f.tensors())
      fmt::print("  {:<40} {:<8} {:<24} {:>14} bytes  shard {} @ {}\n", t.name, quant::type_name(t.type),
                 t.shape_string(), with_commas(t.nbytes), t.shard + 1, t.file_offset);
  }

  if (!c.warnings.empty()) {
    fmt::print("\nwarnings\n");
    for (const std::string& w : c.warnings) fmt::print("  - {}\n", w);
  }
}

}  // namespace

int cmd_info(int argc, char** argv) {
  CLI::App app{"Census of a GGUF model: hyperparameters, layers, tensor types, experts, size", "k3 info"};
  std::string model, model_opt;
  bool json = false, list_kv = false, list_tensors = false, no_shards = false;
  app.add_option("model", model, "GGUF file (the first shard of a split set)");
  app.add_option("-m,--model", model_opt, "same as the positional MODEL");
  app.add_flag("--json", json, "print the stable JSON census (docs/gguf-info-json.md)");
  app.add_flag("--kv", list_kv, "also list every metadata key (human output only)");
  app.add_flag("--tensors", list_tensors, "also list every tensor (human output only)");
  app.add_flag("--no-shards", no_shards, "look at this file only, do not open the other shards");
  if (auto rc = parse_args(app, argc, argv)) return *rc;
  if (model.empty()) model = model_opt;
  if (model.empty()) { return usage_error("give a model file (k3 info MODEL)"); }
  gguf::OpenOptions opt;
  opt.load_shards = !no_shards;
  auto f = gguf::GgufFile::open(model, opt);
  gguf::Census c = gguf::take_census(*f);
  if (json) fmt::print("{}\n", gguf::census_json(c, 2));
  else print_human(*f, c, list_kv, list_tensors);
  return 0;
}

}  // namespace k3::cli
