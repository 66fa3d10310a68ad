// tests/tools/convert/hf_fixture: golden GGUF → HF checkpoint (see hf_fixture.h).
#include "tools/convert/hf_fixture.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "quant/codec.h"
#include "tools/synth/synth_vocab.h"

namespace k3::test {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string floats_bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}

std::vector<float> dequant(const gguf::TensorInfo& t) {
  std::vector<float> out(static_cast<size_t>(t.n_elements()));
  const int64_t ne0 = t.ne[0], rows = t.n_elements() / ne0;
  const size_t rb = quant::row_bytes(t.type, ne0);
  for (int64_t r = 0; r < rows; ++r)
    quant::dequantize_row(t.type, t.data + r * rb, out.data() + r * ne0, ne0);
  return out;
}

std::vector<int64_t> hf_shape(const gguf::TensorInfo& t) {
  std::vector<int64_t> s(t.ne.rbegin(), t.ne.rend());
  return s;
}

// −exp(A) must reproduce the golden ssm_a exactly where a float A allows it; otherwise the
// nearest (the exp map is coarser than the float grid above 1).
float inverse_ssm_a(float a) {
  float best = std::log(-a), best_err = INFINITY;
  float x = best;
  for (int i = 0; i < 8; ++i) x = std::nextafter(x, -INFINITY);
  for (int i = 0; i < 17; ++i, x = std::nextafter(x, INFINITY)) {
    const float back = -static_cast<float>(std::exp(static_cast<double>(x)));
    const float err = std::fabs(back - a);
    if (err < best_err) best_err = err, best = x;
  }
  return best;
}

const std::map<std::string, std::string>& simple_names() {
  static const std::map<std::string, std::string> m = {
      {"attn_norm.weight", "input_layernorm.weight"},
      {"ffn_norm.weight", "post_attention_layernorm.weight"},
      {"attn_q.weight", "self_attn.q_proj.weight"},
      {"attn_k.weight", "self_attn.k_proj.weight"},
      {"attn_v.weight", "self_attn.v_proj.weight"},
      {"ssm_f_a.weight", "self_attn.f_a_proj.weight"},
      {"ssm_f_b.weight", "self_attn.f_b_proj.weight"},
      {"ssm_beta.weight", "self_attn.b_proj.weight"},
      {"ssm_dt.bias", "self_attn.dt_bias"},
      {"ssm_g.weight", "self_attn.g_proj.weight"},
      {"attn_gate.weight", "self_attn.g_proj.weight"},
      {"ssm_norm.weight", "self_attn.o_norm.weight"},
      {"attn_output.weight", "self_attn.o_proj.weight"},
      {"attn_q_a.weight", "self_attn.q_a_proj.weight"},
      {"attn_q_a_norm.weight", "self_attn.q_a_layernorm.weight"},
      {"attn_q_b.weight", "self_attn.q_b_proj.weight"},
      {"attn_kv_a_mqa.weight", "self_attn.kv_a_proj_with_mqa.weight"},
      {"attn_kv_a_norm.weight", "self_attn.kv_a_layernorm.weight"},
      {"ffn_gate.weight", "mlp.gate_proj.weight"},
      {"ffn_up.weight", "mlp.up_proj.weight"},
      {"ffn_down.weight", "mlp.down_proj.weight"},
      {"ffn_gate_inp.weight", "block_sparse_moe.gate.weight"},
      {"exp_probs_b.bias", "block_sparse_moe.gate.e_score_correction_bias"},
      {"ffn_routed_down.weight", "block_sparse_moe.routed_expert_down_proj.weight"},
      {"ffn_routed_up.weight", "block_sparse_moe.routed_expert_up_proj.weight"},
      {"ffn_routed_norm.weight", "block_sparse_moe.routed_expert_norm.weight"},
      {"ffn_gate_shexp.weight", "block_sparse_moe.shared_experts.gate_proj.weight"},
      {"ffn_up_shexp.weight", "block_sparse_moe.shared_experts.up_proj.weight"},
      {"ffn_down_shexp.weight", "block_sparse_moe.shared_experts.down_proj.weight"},
  };
  return m;
}

// GPT-2 spelling → bytes.
std::string unspell(const std::string& s) {
  static const std::map<std::string, uint8_t> inv = [] {
    std::map<std::string, uint8_t> m;
    for (int b = 0; b < 256; ++b)
      m[tools::gpt2_byte_spelling(static_cast<uint8_t>(b))] = static_cast<uint8_t>(b);
    return m;
  }();
  std::string out;
  for (size_t i = 0; i < s.size();) {
    size_t n = (static_cast<uint8_t>(s[i]) < 0x80) ? 1 : (static_cast<uint8_t>(s[i]) < 0xE0) ? 2 : 3;
    out += static_cast<char>(inv.at(s.substr(i, n)));
    i += n;
  }
  return out;
}

std::string b64(const std::string& in) {
  static const char* tbl = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int k = 3; k >= 0; --k) out += tbl[(v >> (6 * k)) & 63];
  }
  if (i + 1 == in.size()) {
    uint32_t v = uint8_t(in[i]) << 16;
    out += tbl[(v >> 18) & 63];
    out += tbl[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += tbl[(v >> 18) & 63];
    out += tbl[(v >> 12) & 63];
    out += tbl[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

}  // namespace

void write_safetensors(const std::string& path, const std::vector<StEntry>& tensors) {
  json hdr = json::object();
  hdr["__metadata__"] = {{"format", "pt"}};
  uint64_t off = 0;
  std::vector<const StEntry*> order;
  for (const StEntry& t : tensors) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->name < b->name; });
  for (const StEntry* t : order) {
    hdr[t->name] = {{"dtype", t->dtype}, {"shape", t->shape}, {"data_offsets", {off, off + t->bytes.size()}}};
    off += t->bytes.size();
  }
  std::string h = hdr.dump();
  while (h.size() % 8) h += ' ';
  std::ofstream f(path, std::ios::binary);
  uint64_t n = h.size();
  for (int i = 0; i < 8; ++i) f.put(static_cast<char>((n >> (8 * i)) & 0xFF));
  f << h;
  for (const StEntry* t : order) f << t->bytes;
}

void write_hf_fixture(const gguf::GgufFile& g, const FixtureOptions& opt) {
  fs::create_directories(opt.dir);
  const std::string pre = opt.nested ? "language_model." : "";
  auto layer = [&](int il, const std::string& n) { return fmt::format("{}model.layers.{}.{}", pre, il, n); };
  const int64_t n_embd = g.get_int("kimi-k3.embedding_length", 0);
  const gguf::Value& hc = g.get("kimi-k3.attention.head_count");
  const int64_t n_head = hc.is_array() ? hc.int_at(0) : hc.as_int();
  const int64_t kv_lora = g.get_int("kimi-k3.attention.kv_lora_rank", 0);
  const int64_t rope = g.get_int("kimi-k3.rope.dimension_count", 0);
  const int64_t nope = g.get_int("kimi-k3.attention.key_length_mla", 0) - rope;
  const int64_t vh = g.get_int("kimi-k3.attention.value_length_mla", 0);

  std::vector<StEntry> out;
  auto put = [&](std::string name, std::vector<int64_t> shape, const std::vector<float>& v) {
    out.push_back({std::move(name), "F32", std::move(shape), floats_bytes(v)});
  };
  int pow_k = 0;  // cycles the power-of-two factor of the fused scores
  auto put_score = [&](const std::string& norm, const std::string& proj, const std::vector<float>& s) {
    std::vector<float> n(s.size()), p(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
      const int k = (pow_k++ % 5) - 2;  // 2^-2 .. 2^2: exact factors
      n[i] = std::ldexp(1.0f, k);
      p[i] = std::ldexp(s[i], -k);
    }
    put(norm, {n_embd}, n);
    put(proj, {1, n_embd}, p);
  };

  for (const gguf::TensorInfo& t : g.tensors()) {
    const std::string& nm = t.name;
    if (nm == "token_embd.weight") {
      put(pre + "model.embed_tokens.weight", hf_shape(t), dequant(t));
      continue;
    }
    if (nm == "output_norm.weight") {
      put(pre + "model.norm.weight", hf_shape(t), dequant(t));
      continue;
    }
    if (nm == "output.weight") {
      put(pre + "lm_head.weight", hf_shape(t), dequant(t));
      continue;
    }
    if (nm == "output_res_score.weight") {
      put_score(pre + "model.output_attn_res_norm.weight", pre + "model.output_attn_res_proj.weight",
                dequant(t));
      continue;
    }
    int il = -1, used = 0;
    if (std::sscanf(nm.c_str(), "blk.%d.%n", &il, &used) != 1 || used == 0)
      throw std::runtime_error("odd name " + nm);
    const std::string suf = nm.substr(static_cast<size_t>(used));
    if (auto it = simple_names().find(suf); it != simple_names().end()) {
      std::vector<int64_t> shape = hf_shape(t);
      put(layer(il, it->second), shape, dequant(t));
    } else if (suf == "attn_q.weight") {
      put(layer(il, "self_attn.q_proj.weight"), hf_shape(t), dequant(t));
    } else if (suf == "attn_res_score.weight") {
      put_score(layer(il, "self_attention_res_norm.weight"), layer(il, "self_attention_res_proj.weight"),
                dequant(t));
    } else if (suf == "ffn_res_score.weight") {
      put_score(layer(il, "mlp_res_norm.weight"), layer(il, "mlp_res_proj.weight"), dequant(t));
    } else if (suf.rfind("ssm_conv1d_", 0) == 0) {
      const std::string x = suf.substr(11, 1);
      const int64_t K = t.ne[0], Di = t.ne[2];
      put(layer(il, "self_attn." + x + "_conv1d.weight"), {Di, 1, K}, dequant(t));
    } else if (suf == "ssm_a") {
      std::vector<float> a = dequant(t), alog;
      for (float v : a) alog.push_back(inverse_ssm_a(v));
      // Stored with spare entries beyond the heads (K3: 128 for 96); they must be ignored.
      for (int i = 0; i < 4; ++i) alog.push_back(100.0f + static_cast<float>(i));
      put(layer(il, "self_attn.A_log"), {static_cast<int64_t>(alog.size())}, alog);
    } else if (suf == "attn_k_b.weight") {
      const gguf::TensorInfo* vb = g.tensor(fmt::format("blk.{}.attn_v_b.weight", il));
      std::vector<float> k = dequant(t), v = dequant(*vb);
      // k_b ne [N, C, H] is kv_b's K rows transposed per head; v_b ne [C, Vh, H] its V rows.
      const int64_t H = t.dim(2), C = kv_lora, N = nope;
      std::vector<float> kv(static_cast<size_t>(H * (N + vh) * C));
      for (int64_t h = 0; h < H; ++h) {
        for (int64_t n = 0; n < N; ++n)
          for (int64_t c = 0; c < C; ++c) kv[(h * (N + vh) + n) * C + c] = k[(h * C + c) * N + n];
        for (int64_t vv = 0; vv < vh; ++vv)
          for (int64_t c = 0; c < C; ++c) kv[(h * (N + vh) + N + vv) * C + c] = v[(h * vh + vv) * C + c];
      }
      put(layer(il, "self_attn.kv_b_proj.weight"), {H * (N + vh), C}, kv);
    } else if (suf == "attn_v_b.weight") {
      continue;  // merged above
    } else if (suf == "ffn_gate_exps.weight" || suf == "ffn_up_exps.weight" ||
               suf == "ffn_down_exps.weight") {
      const char* w = suf == "ffn_gate_exps.weight" ? "w1" : suf == "ffn_up_exps.weight" ? "w3" : "w2";
      const int64_t cols = t.ne[0], rows = t.ne[1], X = t.ne[2];
      if (t.type == quant::Type::MXFP4 && opt.packed_experts) {
        const size_t rb = quant::row_bytes(t.type, cols);
        for (int64_t e = 0; e < X; ++e) {
          std::string packed(static_cast<size_t>(rows * cols / 2), '\0'),
              scales(static_cast<size_t>(rows * cols / 32), '\0');
          for (int64_t r = 0; r < rows; ++r) {
            const uint8_t* blk = t.data + (e * rows + r) * rb;
            for (int64_t b = 0; b < cols / 32; ++b) {
              const uint8_t* q = blk + b * 17;
              scales[r * (cols / 32) + b] = static_cast<char>(q[0]);
              for (int i = 0; i < 32; ++i) {
                const uint8_t code = i < 16 ? (q[1 + i] & 0x0F) : (q[1 + i - 16] >> 4);
                const size_t at = static_cast<size_t>(r * cols / 2 + b * 16 + i / 2);
                packed[at] = static_cast<char>(static_cast<uint8_t>(packed[at]) | (code << ((i % 2) * 4)));
              }
            }
          }
          const std::string base = layer(il, fmt::format("block_sparse_moe.experts.{}.{}.", e, w));
          out.push_back({base + "weight_packed", "U8", {rows, cols / 2}, packed});
          out.push_back({base + "weight_scale", "U8", {rows, cols / 32}, scales});
        }
      } else {
        std::vector<float> all = dequant(t);
        for (int64_t e = 0; e < X; ++e) {
          std::vector<float> one(all.begin() + e * rows * cols, all.begin() + (e + 1) * rows * cols);
          put(layer(il, fmt::format("block_sparse_moe.experts.{}.{}.weight", e, w)), {rows, cols}, one);
        }
      }
    } else {
      throw std::runtime_error("hf_fixture: no inverse mapping for " + nm);
    }
  }
  if (opt.nested) put("vision_tower.patch_embed.weight", {2, 2}, {1, 2, 3, 4});

  // Safetensors, sharded round-robin.
  const int ns = std::max(1, opt.shards);
  std::sort(out.begin(), out.end(), [](const StEntry& a, const StEntry& b) { return a.name < b.name; });
  if (ns == 1) {
    write_safetensors((fs::path(opt.dir) / "model.safetensors").string(), out);
  } else {
    std::vector<std::vector<StEntry>> parts(static_cast<size_t>(ns));
    json wm = json::object();
    for (size_t i = 0; i < out.size(); ++i) {
      const std::string f = fmt::format("model-{:05d}-of-{:05d}.safetensors", i % ns + 1, ns);
      wm[out[i].name] = f;
      parts[i % ns].push_back(out[i]);
    }
    for (int s = 0; s < ns; ++s)
      write_safetensors(
          (fs::path(opt.dir) / fmt::format("model-{:05d}-of-{:05d}.safetensors", s + 1, ns)).string(),
          parts[static_cast<size_t>(s)]);
    std::ofstream((fs::path(opt.dir) / "model.safetensors.index.json").string())
        << json{{"metadata", json::object()}, {"weight_map", wm}}.dump(1);
  }

  // config.json
  auto f32 = [&](const char* k) { return static_cast<double>(static_cast<float>(g.get(k).as_float())); };
  auto u = [&](const char* k) { return g.get(k).as_int(); };
  const gguf::Value& hkv = g.get("kimi-k3.attention.head_count_kv");
  json full = json::array();
  for (size_t i = 0; i < hkv.size(); ++i)
    if (hkv.int_at(i) != 0) full.push_back(i + 1);  // 1-indexed
  json lac = {{"full_attn_layers", full},
              {"short_conv_kernel_size", u("kimi-k3.ssm.conv_kernel")},
              {"head_dim", u("kimi-k3.kda.head_dim")},
              {"num_heads", n_head}};
  if (g.find("kimi-k3.kda.gate_lower_bound")) lac["gate_lower_bound"] = f32("kimi-k3.kda.gate_lower_bound");
  const gguf::TensorInfo* emb = g.tensor("token_embd.weight");
  json tc = {
      {"architectures", {"KimiLinearForCausalLM"}},
      {"num_hidden_layers", u("kimi-k3.block_count")},
      {"max_position_embeddings", u("kimi-k3.context_length")},
      {"hidden_size", n_embd},
      {"intermediate_size", u("kimi-k3.feed_forward_length")},
      {"num_attention_heads", n_head},
      {"num_key_value_heads", n_head},
      {"linear_attn_config", lac},
      {"q_lora_rank",
       g.find("kimi-k3.attention.q_lora_rank") ? json(u("kimi-k3.attention.q_lora_rank")) : json(nullptr)},
      {"kv_lora_rank", kv_lora},
      {"qk_rope_head_dim", rope},
      {"qk_nope_head_dim", nope},
      {"v_head_dim", vh},
      {"mla_use_nope", true},
      {"num_experts", u("kimi-k3.expert_count")},
      {"num_experts_per_token", u("kimi-k3.expert_used_count")},
      {"moe_intermediate_size", u("kimi-k3.expert_feed_forward_length")},
      {"num_shared_experts", u("kimi-k3.expert_shared_count")},
      {"first_k_dense_replace", u("kimi-k3.leading_dense_block_count")},
      {"routed_scaling_factor", f32("kimi-k3.expert_weights_scale")},
      {"moe_renormalize", g.get("kimi-k3.expert_weights_norm").as_bool()},
      {"moe_router_activation_func", "sigmoid"},
      {"routed_expert_hidden_size", u("kimi-k3.expert_latent_length")},
      {"hidden_act", "situ"},
      {"activation_situ_beta", f32("kimi-k3.activation.situ_beta")},
      {"activation_situ_linear_beta", f32("kimi-k3.activation.situ_linear_beta")},
      {"attn_res_block_size", u("kimi-k3.attn_res.block_size")},
      {"rms_norm_eps", f32("kimi-k3.attention.layer_norm_rms_epsilon")},
      {"vocab_size", emb->ne[1]},
  };
  if (g.find("tokenizer.ggml.eos_token_id")) tc["eos_token_id"] = u("tokenizer.ggml.eos_token_id");
  json cfg = opt.nested ? json{{"architectures", {"KimiK3ForConditionalGeneration"}},
                               {"text_config", tc},
                               {"vision_config", {{"hidden_size", 8}}}}
                        : tc;
  std::ofstream((fs::path(opt.dir) / "config.json").string()) << cfg.dump(2);

  // tiktoken.model + tokenizer_config.json from the golden vocabulary (or, for a no_vocab
  // model, one single-byte token per id).
  std::ofstream tk((fs::path(opt.dir) / "tiktoken.model").string(), std::ios::binary);
  json added = json::object();
  json tcfg = json::object();
  if (g.get_string("tokenizer.ggml.model", "") == "gpt2") {
    const gguf::Value& toks = g.get("tokenizer.ggml.tokens");
    const gguf::Value& types = g.get("tokenizer.ggml.token_type");
    for (size_t i = 0; i < toks.size(); ++i) {
      if (types.int_at(i) == 1) tk << b64(unspell(toks.string_at(i))) << ' ' << i << '\n';
      else added[std::to_string(i)] = {{"content", toks.string_at(i)}, {"special", true}};
    }
    auto name_of = [&](const char* key) { return toks.string_at(static_cast<size_t>(g.get(key).as_int())); };
    tcfg["bos_token"] = name_of("tokenizer.ggml.bos_token_id");
    tcfg["eos_token"] = "[EOS]";
    if (g.find("tokenizer.ggml.padding_token_id"))
      tcfg["pad_token"] = name_of("tokenizer.ggml.padding_token_id");
  } else {
    for (int64_t i = 0; i < emb->ne[1]; ++i)
      tk << b64(std::string(1, static_cast<char>(i))) << ' ' << i << '\n';
  }
  tcfg["added_tokens_decoder"] = added;
  std::ofstream((fs::path(opt.dir) / "tokenizer_config.json").string()) << tcfg.dump(2);
}

}  // namespace k3::test
