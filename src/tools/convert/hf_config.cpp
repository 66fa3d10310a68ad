// tools/hf_config: config.json → K3HfConfig → kimi-k3.* keys (see hf_config.h).
#include "tools/convert/hf_config.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "core/read_file.h"
#include "model/hparams.h"
#include "model/hparams_of.h"
#include "model/schema.h"

namespace k3::tools {

using nlohmann::json;

namespace {

struct Reader {
  const json& j;
  const std::string& name;

  const json* find(const char* key) const {
    auto it = j.find(key);
    return (it == j.end() || it->is_null()) ? nullptr : &*it;
  }
  uint32_t u32(const char* key, std::optional<uint32_t> def = std::nullopt) const {
    const json* v = find(key);
    if (!v) {
      if (def) return *def;
      fail("{}: missing required key '{}'", name, key);
    }
    if (!v->is_number_integer() || v->get<int64_t>() < 0 || v->get<int64_t>() > INT32_MAX)
      fail("{}: key '{}' must be a non-negative integer, got {}", name, key, v->dump());
    return v->get<uint32_t>();
  }
  float f32(const char* key, std::optional<float> def = std::nullopt) const {
    const json* v = find(key);
    if (!v) {
      if (def) return *def;
      fail("{}: missing required key '{}'", name, key);
    }
    if (!v->is_number()) fail("{}: key '{}' must be a number, got {}", name, key, v->dump());
    double d = v->get<double>();
    if (!std::isfinite(d)) fail("{}: key '{}' is not finite", name, key);
    return static_cast<float>(d);
  }
  bool boolean(const char* key, bool def) const {
    const json* v = find(key);
    if (!v) return def;
    if (!v->is_boolean()) fail("{}: key '{}' must be true or false, got {}", name, key, v->dump());
    return v->get<bool>();
  }
  std::string str(const char* key, const char* def) const {
    const json* v = find(key);
    if (!v) return def;
    if (!v->is_string()) fail("{}: key '{}' must be a string, got {}", name, key, v->dump());
    return v->get<std::string>();
  }
};

}  // namespace

K3HfConfig parse_k3_config(const std::string& text, const std::string& name) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) { fail("{}: does not parse: {}", name, e.what()); }
  if (!root.is_object()) fail("{}: not a JSON object", name);
  K3HfConfig c;
  json j = root;
  if (root.contains("text_config")) {
    if (!root["text_config"].is_object()) fail("{}: text_config is not an object", name);
    for (auto it = root["text_config"].begin(); it != root["text_config"].end(); ++it)
      j[it.key()] = it.value();
    c.tensor_prefix = "language_model.";
  }
  Reader r{j, name};
  c.n_layer = r.u32("num_hidden_layers");
  if (c.n_layer == 0 || c.n_layer > 512)
    fail("{}: num_hidden_layers {} out of range 1..512", name, c.n_layer);
  c.n_ctx_train = r.u32("max_position_embeddings");
  c.n_embd = r.u32("hidden_size");
  c.n_ff = r.u32("intermediate_size");
  c.n_head = r.u32("num_attention_heads");
  c.n_head_kv_hf = r.u32("num_key_value_heads", c.n_head);
  if (c.n_embd == 0 || c.n_head == 0) fail("{}: hidden_size and num_attention_heads must be positive", name);

  const json* lac = r.find("linear_attn_config");
  if (!lac || !lac->is_object()) fail("{}: missing required object 'linear_attn_config'", name);
  const std::string lname = name + " linear_attn_config";
  Reader l{*lac, lname};
  const json* fal = l.find("full_attn_layers");
  if (!fal || !fal->is_array()) fail("{}: missing required array 'full_attn_layers'", lname);
  c.is_mla.assign(c.n_layer, false);
  for (const json& v : *fal) {
    if (!v.is_number_integer()) fail("{}: full_attn_layers entry {} is not an integer", lname, v.dump());
    int64_t one = v.get<int64_t>();
    // 1-indexed (a trap of docs/MODEL.md): layer il is MLA iff il+1 is listed.
    if (one < 1 || one > c.n_layer)
      fail("{}: full_attn_layers entry {} is outside 1..{} (the list is 1-indexed)", lname, one, c.n_layer);
    c.is_mla[one - 1] = true;
  }
  c.ssm_conv_kernel = l.u32("short_conv_kernel_size");
  c.kda_head_dim = l.u32("head_dim");
  if (l.find("gate_lower_bound")) c.kda_gate_lower_bound = l.f32("gate_lower_bound");
  if (l.find("num_heads") && l.u32("num_heads") != c.n_head)
    fail("{}: num_heads {} differs from num_attention_heads {} (K3 uses one head count)", lname,
         l.u32("num_heads"), c.n_head);

  c.q_lora_rank = r.u32("q_lora_rank", 0u);
  c.kv_lora_rank = r.u32("kv_lora_rank");
  c.n_rot = r.u32("qk_rope_head_dim");
  c.qk_nope = r.u32("qk_nope_head_dim");
  c.n_embd_head_v_mla = r.u32("v_head_dim");
  if (!r.boolean("mla_use_nope", true))
    fail("{}: mla_use_nope = false is not Kimi-K3 (K3 MLA has no RoPE)", name);
  c.n_expert = r.u32("num_experts");
  c.n_expert_used = r.u32("num_experts_per_token");
  c.n_ff_exp = r.u32("moe_intermediate_size");
  c.n_expert_shared = r.u32("num_shared_experts");
  c.n_layer_dense_lead = r.u32("first_k_dense_replace");
  c.expert_weights_scale = r.f32("routed_scaling_factor", 1.0f);
  c.expert_weights_norm = r.boolean("moe_renormalize", false);
  const std::string act = r.str("moe_router_activation_func", "sigmoid");
  if (act != "sigmoid")
    fail("{}: moe_router_activation_func '{}' is not supported (K3 uses sigmoid)", name, act);
  const std::string hact = r.str("hidden_act", "situ");
  if (hact != "situ") fail("{}: hidden_act '{}' is not Kimi-K3's 'situ'", name, hact);
  c.n_embd_exp_latent = r.u32("routed_expert_hidden_size", 0u);
  c.situ_beta = r.f32("activation_situ_beta");
  c.situ_linear_beta = r.f32("activation_situ_linear_beta");
  c.attn_res_block_size = r.u32("attn_res_block_size");
  c.rms_eps = r.f32("rms_norm_eps");
  c.n_vocab = r.u32("vocab_size");
  if (const json* e = r.find("eos_token_id")) {
    if (e->is_array() && !e->empty()) e = &(*e)[0];
    if (!e->is_number_integer()) fail("{}: eos_token_id must be an integer", name);
    c.eos_token_id = e->get<int64_t>();
  }
  if (const json* b = r.find("bos_token_id"); b && b->is_number_integer()) c.bos_token_id = b->get<int64_t>();
  if (r.find("rope_theta")) c.rope_theta = r.f32("rope_theta");
  if (c.n_expert == 0 || c.n_expert > 1024) fail("{}: num_experts {} out of range 1..1024", name, c.n_expert);
  if (c.n_expert_used == 0 || c.n_expert_used > c.n_expert)
    fail("{}: num_experts_per_token {} out of range 1..{}", name, c.n_expert_used, c.n_expert);
  return c;
}

K3HfConfig read_k3_config(const std::string& path) {
  std::string text;
  try {
    text = read_file(path);
  } catch (const Error& e) { fail("{}; an HF checkpoint directory needs config.json", e.what()); }
  return parse_k3_config(text, path);
}

model::HParams k3_hparams(const K3HfConfig& c) {
  return model::hparams_of(c, c.is_mla);  // sigmoid gating: checked when the config was read
}

std::vector<std::pair<std::string, gguf::Value>> k3_model_kvs(const K3HfConfig& c) {
  namespace schema = model::schema;
  auto kv = schema::hparams_kvs(k3_hparams(c));
  // The reference converter writes q_lora_rank only when the config sets one; the loader
  // reads its absence as 0.
  if (!c.q_lora_rank) {
    const std::string q = schema::key_name(schema::Key::QLoraRank);
    std::erase_if(kv, [&](const auto& e) { return e.first == q; });
  }
  if (c.rope_theta)
    kv.emplace_back(schema::key_name(schema::Key::RopeFreqBase), gguf::Value::f32(*c.rope_theta));
  return kv;
}

}  // namespace k3::tools
