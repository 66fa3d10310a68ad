// gguf/census: model-card statistics of a GGUF (see census.h).
#include "gguf/census.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "gguf/file.h"

namespace k3::gguf {

namespace {

// Types that some GPU backends are known to decode incorrectly (sm_120 / Blackwell builds).
constexpr quant::Type kGpuRiskTypes[] = {quant::Type::IQ1_S, quant::Type::IQ2_S, quant::Type::IQ3_S};

// Layer index of "blk.N.<rest>", or -1.
int64_t layer_of(const std::string& name) {
  if (!name.starts_with("blk.")) return -1;
  int64_t v = 0;
  size_t i = 4;
  if (i >= name.size() || name[i] < '0' || name[i] > '9') return -1;
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9'; ++i) {
    v = v * 10 + (name[i] - '0');
    if (v > (int64_t{1} << 31)) return -1;
  }
  return i < name.size() && name[i] == '.' ? v : -1;
}

// Per-layer integer from a scalar or per-layer array key; `def` when absent.
int64_t layer_value(const Value* v, size_t layer, int64_t def) {
  if (!v) return def;
  if (v->is_array()) return layer < v->size() ? v->int_at(layer) : def;
  return v->as_int();
}

}  // namespace

std::string index_ranges(const std::vector<uint32_t>& xs) {
  std::string out;
  for (size_t i = 0; i < xs.size();) {
    size_t j = i;
    while (j + 1 < xs.size() && xs[j + 1] == xs[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += j == i ? fmt::format("{}", xs[i]) : fmt::format("{}-{}", xs[i], xs[j]);
    i = j + 1;
  }
  return out;
}

std::string with_commas(uint64_t n) {
  std::string d = fmt::format("{}", n);
  std::string out;
  for (size_t i = 0; i < d.size(); ++i) {
    if (i && (d.size() - i) % 3 == 0) out += ',';
    out += d[i];
  }
  return out;
}

std::string expert_group_text(const ExpertGroup& g) {
  return fmt::format("{} \u00d7 {} \u00d7 {}", g.tensors, with_commas(g.params_per_slot), g.slots);
}

Census take_census(const GgufFile& f) {
  Census c;
  c.path = f.path();
  c.version = f.version();
  c.file_size = f.total_file_size();
  for (const Shard& s : f.shards()) c.shards.push_back({s.path, s.file_size, s.n_tensors, 0});

  c.architecture = f.get_string("general.architecture", "");
  c.name = f.get_string("general.name", "");
  c.general_type = f.get_string("general.type", "");
  c.file_type = f.get_int("general.file_type", -1);
  c.is_k3 = c.architecture == "kimi-k3";
  c.kv_count = f.kvs().size();
  if (!c.architecture.empty()) {
    std::string prefix = c.architecture + ".";
    for (const auto& [k, v] : f.kvs())
      if (k.starts_with(prefix)) c.hparams.emplace_back(k.substr(prefix.size()), v);
  }
  c.tokenizer_model = f.get_string("tokenizer.ggml.model", "");
  if (const Value* toks = f.find("tokenizer.ggml.tokens"); toks && toks->is_array())
    c.vocab_size = static_cast<int64_t>(toks->size());

  std::string prefix = c.architecture + ".";
  if (!c.architecture.empty()) c.block_count = f.get_int(prefix + "block_count", -1);
  if (c.block_count > 100000) {
    c.warnings.push_back(fmt::format("block_count {} is implausible; layer census skipped", c.block_count));
    c.block_count = -1;
  }
  if (c.block_count >= 0) {
    c.layers.resize(static_cast<size_t>(c.block_count));
    for (size_t i = 0; i < c.layers.size(); ++i) c.layers[i].index = static_cast<uint32_t>(i);
  }
  if (c.is_k3 && c.block_count >= 0) {
    const Value* kv_heads = f.find(prefix + "attention.head_count_kv");
    const Value* heads = f.find(prefix + "attention.head_count");
    int64_t dense = f.get_int(prefix + "leading_dense_block_count", 0);
    try {
      int64_t head0 = layer_value(heads, 0, 0);
      for (LayerCensus& l : c.layers) {
        int64_t hkv = layer_value(kv_heads, l.index, head0);
        l.attention = hkv == 0 ? "KDA" : "MLA";
        l.ffn = static_cast<int64_t>(l.index) < dense ? "dense" : "MoE";
        (hkv == 0 ? c.n_kda : c.n_mla)++;
        (static_cast<int64_t>(l.index) < dense ? c.n_dense : c.n_moe)++;
      }
    } catch (const Error& e) { fail("{}: attention.head_count / head_count_kv: {}", c.path, e.what()); }
  }

  std::map<uint32_t, TypeCensus> types;
  std::map<std::pair<uint64_t, uint64_t>, ExpertGroup> groups;
  for (const TensorInfo& t : f.tensors()) {
    uint64_t params = static_cast<uint64_t>(t.n_elements());
    c.tensor_count++;
    c.params += params;
    c.tensor_bytes += t.nbytes;
    c.shards[t.shard].tensor_bytes += t.nbytes;
    TypeCensus& tc = types[static_cast<uint32_t>(t.type)];
    tc.type = t.type;
    tc.tensors++;
    tc.bytes += t.nbytes;
    tc.params += params;

    int64_t layer = layer_of(t.name);
    LayerCensus* lc =
        layer >= 0 && layer < static_cast<int64_t>(c.layers.size()) ? &c.layers[layer] : nullptr;
    if (lc) {
      lc->tensors++;
      lc->params += params;
      lc->bytes += t.nbytes;
    }
    if (t.name.find("_exps") != std::string::npos && t.name.ends_with(".weight")) {
      // Experts are stacked along ne[2]; one expert (ggml drops a trailing 1) means 2-D.
      uint64_t slots = t.ne.size() >= 3 ? static_cast<uint64_t>(t.ne[2]) : 1;
      uint64_t per_slot = slots ? params / slots : 0;
      ExpertGroup& g = groups[{per_slot, slots}];
      g.params_per_slot = per_slot;
      g.slots = slots;
      g.tensors++;
      g.bytes += t.nbytes;
      c.expert_tensors++;
      c.expert_params += params;
      c.expert_bytes += t.nbytes;
      if (lc) lc->expert_slots = std::max(lc->expert_slots, slots);
    }
  }
  for (auto& [id, tc] : types) c.types.push_back(tc);
  for (auto& [key, g] : groups) c.expert_groups.push_back(g);
  std::sort(c.expert_groups.begin(), c.expert_groups.end(),
            [](const ExpertGroup& a, const ExpertGroup& b) { return a.tensors > b.tensors; });
  if (c.params) {
    c.bpw = 8.0 * static_cast<double>(c.tensor_bytes) / static_cast<double>(c.params);
    c.bpw_file = 8.0 * static_cast<double>(c.file_size) / static_cast<double>(c.params);
  }

  for (const TypeCensus& tc : c.types)
    for (quant::Type risky : kGpuRiskTypes)
      if (tc.type == risky)
        c.warnings.push_back(fmt::format(
            "{} tensor(s) of type {}: this type is known to decode incorrectly on some GPU backends "
            "(sm_120 / Blackwell); CPU inference is unaffected",
            tc.tensors, quant::type_name(tc.type)));
  if (c.is_k3) {
    int64_t n_expert = f.get_int(prefix + "expert_count", 0);
    for (const LayerCensus& l : c.layers)
      if (l.ffn == "MoE" && l.expert_slots != static_cast<uint64_t>(n_expert)) {
        c.warnings.push_back(fmt::format("layer {} holds {} expert slots but expert_count is {}", l.index,
                                         l.expert_slots, n_expert));
        break;
      }
  }
  return c;
}

namespace {

using nlohmann::ordered_json;

// Floats via their shortest decimal form, so 1e-5f prints as 1e-05, not 9.99999974737875e-06.
ordered_json float_json(double x, bool is_f32) {
  if (!std::isfinite(x)) return fmt::format("{}", x);
  std::string s = is_f32 ? fmt::format("{}", static_cast<float>(x)) : fmt::format("{}", x);
  return std::stod(s);
}

ordered_json value_json(const Value& v) {
  switch (v.type) {
    case ValueType::STRING: return v.str;
    case ValueType::BOOL: return v.bits != 0;
    case ValueType::FLOAT32: return float_json(v.as_float(), true);
    case ValueType::FLOAT64: return float_json(v.as_float(), false);
    case ValueType::ARRAY: {
      ordered_json a = ordered_json::array();
      for (size_t i = 0; i < v.size(); ++i) {
        if (v.elem == ValueType::STRING) a.push_back(v.strs[i]);
        else if (v.elem == ValueType::ARRAY) a.push_back(value_json(v.nested[i]));
        else if (v.elem == ValueType::BOOL) a.push_back(v.raw[i] != 0);
        else if (v.elem == ValueType::FLOAT32 || v.elem == ValueType::FLOAT64)
          a.push_back(float_json(v.float_at(i), v.elem == ValueType::FLOAT32));
        else a.push_back(v.int_at(i));
      }
      return a;
    }
    default:
      if (v.type == ValueType::UINT64) return v.bits;
      return v.as_int();
  }
}

template <typename T>
ordered_json or_null(bool present, const T& x) {
  return present ? ordered_json(x) : ordered_json(nullptr);
}

}  // namespace

std::string census_json(const Census& c, int indent) {
  ordered_json j;
  j["format"] = "k3-info";
  j["schema_version"] = 1;
  j["path"] = c.path;
  j["gguf_version"] = c.version;
  j["file_size"] = c.file_size;
  ordered_json shards = ordered_json::array();
  for (const ShardCensus& s : c.shards)
    shards.push_back({{"path", s.path},
                      {"file_size", s.file_size},
                      {"tensors", s.tensors},
                      {"tensor_bytes", s.tensor_bytes}});
  j["shards"] = shards;
  j["architecture"] = or_null(!c.architecture.empty(), c.architecture);
  j["name"] = or_null(!c.name.empty(), c.name);
  j["general_type"] = or_null(!c.general_type.empty(), c.general_type);
  j["file_type"] = or_null(c.file_type >= 0, c.file_type);
  j["is_kimi_k3"] = c.is_k3;
  j["kv_count"] = c.kv_count;
  j["tensor_count"] = c.tensor_count;
  ordered_json hp = ordered_json::object();
  for (const auto& [k, v] : c.hparams) hp[k] = value_json(v);
  j["hparams"] = hp;
  j["tokenizer"] = {{"model", or_null(!c.tokenizer_model.empty(), c.tokenizer_model)},
                    {"vocab_size", or_null(c.vocab_size >= 0, c.vocab_size)}};
  j["params"] = c.params;
  j["tensor_bytes"] = c.tensor_bytes;
  j["bpw"] = c.bpw;
  j["bpw_file"] = c.bpw_file;
  ordered_json types = ordered_json::array();
  for (const TypeCensus& t : c.types)
    types.push_back({{"type", quant::type_name(t.type)},
                     {"tensors", t.tensors},
                     {"bytes", t.bytes},
                     {"params", t.params},
                     {"bpw", quant::bits_per_weight(t.type)}});
  j["types"] = types;

  if (c.block_count >= 0) {
    ordered_json layers;
    layers["count"] = c.block_count;
    if (c.is_k3) {
      std::vector<uint32_t> kda, mla, dense, moe;
      for (const LayerCensus& l : c.layers) {
        (l.attention == "KDA" ? kda : mla).push_back(l.index);
        (l.ffn == "dense" ? dense : moe).push_back(l.index);
      }
      layers["kda"] = kda;
      layers["mla"] = mla;
      layers["dense"] = dense;
      layers["moe"] = moe;
    }
    ordered_json per = ordered_json::array();
    for (const LayerCensus& l : c.layers)
      per.push_back({{"index", l.index},
                     {"attention", or_null(!l.attention.empty(), l.attention)},
                     {"ffn", or_null(!l.ffn.empty(), l.ffn)},
                     {"expert_slots", l.expert_slots},
                     {"tensors", l.tensors},
                     {"params", l.params},
                     {"bytes", l.bytes}});
    layers["per_layer"] = per;
    j["layers"] = layers;
  } else {
    j["layers"] = nullptr;
  }

  ordered_json groups = ordered_json::array();
  for (const ExpertGroup& g : c.expert_groups)
    groups.push_back({{"tensors", g.tensors},
                      {"params_per_slot", g.params_per_slot},
                      {"slots", g.slots},
                      {"bytes", g.bytes},
                      {"text", expert_group_text(g)}});
  j["experts"] = {{"tensors", c.expert_tensors},
                  {"params", c.expert_params},
                  {"bytes", c.expert_bytes},
                  {"groups", groups}};
  j["warnings"] = c.warnings;
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace k3::gguf
