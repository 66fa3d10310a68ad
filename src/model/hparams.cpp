// model/hparams: strict GGUF key reading for kimi-k3 (see hparams.h).
#include "model/hparams.h"

#include <cmath>
#include <string_view>

#include "core/assert.h"
#include "core/error.h"
#include "gguf/file.h"
#include "gguf/value.h"
#include "model/schema.h"

namespace k3::model {
namespace {

using gguf::Value;
using gguf::ValueType;
using schema::Key;
using schema::KeyType;

constexpr uint32_t kMaxLayers = 512;
constexpr uint32_t kMaxExperts = 1024;

// Reads keys by their schema entry; each accessor asserts that the table gives the key the
// type it reads, so the table and the reader cannot drift apart.
class KeyReader {
 public:
  explicit KeyReader(const gguf::GgufFile& f) : f_(f) {}

  const Value* find(Key key) const { return f_.find(schema::key_name(key)); }

  [[noreturn]] void bad(Key key, std::string_view what) const {
    fail("{}: key {}: {}", f_.path(), schema::key_name(key), what);
  }

  void expect_type(Key key, const Value& v, ValueType t) const {
    if (v.type != t)
      bad(key, fmt::format("expected {}, found {}", gguf::value_type_name(t),
                           v.type == ValueType::ARRAY ? "ARRAY" : gguf::value_type_name(v.type)));
  }

  uint32_t u32(Key key, std::optional<uint32_t> def) const {
    K3_ASSERT(schema::key_info(key).type == KeyType::U32);
    K3_ASSERT(schema::key_info(key).required == !def, "the schema's required flag");
    const Value* v = find(key);
    if (!v) {
      if (!def) bad(key, "required key is missing");
      return *def;
    }
    expect_type(key, *v, ValueType::UINT32);
    return static_cast<uint32_t>(v->as_uint());
  }

  std::optional<float> f32_opt(Key key) const {
    K3_ASSERT(schema::key_info(key).type == KeyType::F32);
    const Value* v = find(key);
    if (!v) return std::nullopt;
    expect_type(key, *v, ValueType::FLOAT32);
    return static_cast<float>(v->as_float());
  }

  float f32(Key key, std::optional<float> def) const {
    K3_ASSERT(schema::key_info(key).required == !def, "the schema's required flag");
    auto v = f32_opt(key);
    if (!v) {
      if (!def) bad(key, "required key is missing");
      return *def;
    }
    return *v;
  }

  bool boolean(Key key, bool def) const {
    K3_ASSERT(schema::key_info(key).type == KeyType::Bool && !schema::key_info(key).required);
    const Value* v = find(key);
    if (!v) return def;
    expect_type(key, *v, ValueType::BOOL);
    return v->as_bool();
  }

  // A u32 scalar (applies to every layer) or an INT32/UINT32 array of exactly n_layer.
  std::optional<std::vector<uint32_t>> per_layer(Key key, uint32_t n_layer) const {
    K3_ASSERT(schema::key_info(key).type == KeyType::PerLayer);
    const Value* v = find(key);
    if (!v) return std::nullopt;
    std::vector<uint32_t> out(n_layer);
    if (!v->is_array()) {
      expect_type(key, *v, ValueType::UINT32);
      std::fill(out.begin(), out.end(), static_cast<uint32_t>(v->as_uint()));
      return out;
    }
    if (v->elem != ValueType::INT32 && v->elem != ValueType::UINT32)
      bad(key,
          fmt::format("array elements must be INT32 or UINT32, found {}", gguf::value_type_name(v->elem)));
    if (v->size() != n_layer)
      bad(key, fmt::format("array has {} entries, block_count is {}", v->size(), n_layer));
    for (uint32_t i = 0; i < n_layer; ++i) {
      int64_t x = v->int_at(i);
      if (x < 0 || x > UINT32_MAX) bad(key, fmt::format("entry {} = {} is out of range", i, x));
      out[i] = static_cast<uint32_t>(x);
    }
    return out;
  }

 private:
  const gguf::GgufFile& f_;
};

}  // namespace

uint32_t HParams::n_kda_layers() const {
  uint32_t n = 0;
  for (auto k : kind) n += k == LayerKind::KDA;
  return n;
}
uint32_t HParams::n_mla_layers() const { return n_layer - n_kda_layers(); }

HParams load_hparams(const gguf::GgufFile& f) {
  const std::string arch = f.get_string("general.architecture", "");
  if (arch != schema::kArch)
    fail("{}: general.architecture is '{}', expected '{}'", f.path(), arch, schema::kArch);

  KeyReader r(f);
  HParams hp;
  hp.n_ctx_train = r.u32(Key::ContextLength, std::nullopt);
  hp.n_embd = r.u32(Key::EmbeddingLength, std::nullopt);
  hp.n_layer = r.u32(Key::BlockCount, std::nullopt);
  if (hp.n_layer == 0 || hp.n_layer > kMaxLayers)
    r.bad(Key::BlockCount, fmt::format("{} is outside 1..{}", hp.n_layer, kMaxLayers));
  if (hp.n_embd == 0) r.bad(Key::EmbeddingLength, "must be > 0");

  auto ff = r.per_layer(Key::FeedForwardLength, hp.n_layer);
  hp.n_ff = ff ? (*ff)[0] : 0;
  auto heads = r.per_layer(Key::HeadCount, hp.n_layer);
  hp.n_head = heads ? (*heads)[0] : 0;
  if (hp.n_head == 0) r.bad(Key::HeadCount, "missing or 0 for layer 0");
  auto heads_kv = r.per_layer(Key::HeadCountKv, hp.n_layer);
  hp.n_head_kv = heads_kv ? *heads_kv : std::vector<uint32_t>(hp.n_layer, hp.n_head);
  hp.kind.resize(hp.n_layer);
  for (uint32_t il = 0; il < hp.n_layer; ++il)
    hp.kind[il] = hp.n_head_kv[il] == 0 ? LayerKind::KDA : LayerKind::MLA;

  hp.n_embd_head_k = r.u32(Key::KeyLength, hp.n_embd / hp.n_head);
  hp.n_rot = r.u32(Key::RopeDimensionCount, hp.n_embd_head_k);
  hp.rms_eps = r.f32(Key::RmsEps, std::nullopt);
  hp.n_embd_head_k_mla = r.u32(Key::KeyLengthMla, std::nullopt);
  hp.n_embd_head_v_mla = r.u32(Key::ValueLengthMla, std::nullopt);
  hp.q_lora_rank = r.u32(Key::QLoraRank, 0u);
  hp.kv_lora_rank = r.u32(Key::KvLoraRank, std::nullopt);
  hp.ssm_conv_kernel = r.u32(Key::SsmConvKernel, std::nullopt);
  hp.kda_head_dim = r.u32(Key::KdaHeadDim, std::nullopt);
  hp.kda_gate_lower_bound = r.f32_opt(Key::KdaGateLowerBound);

  hp.n_expert = r.u32(Key::ExpertCount, 0u);
  hp.n_expert_used = r.u32(Key::ExpertUsedCount, 0u);
  const uint32_t n_group = r.u32(Key::ExpertGroupCount, 0u);
  hp.n_ff_exp = r.u32(Key::ExpertFeedForwardLength, std::nullopt);
  hp.n_expert_shared = r.u32(Key::ExpertSharedCount, std::nullopt);
  hp.n_layer_dense_lead = r.u32(Key::LeadingDenseBlockCount, 0u);
  hp.expert_weights_scale = r.f32(Key::ExpertWeightsScale, 0.0f);
  hp.expert_weights_norm = r.boolean(Key::ExpertWeightsNorm, false);
  hp.expert_gating_func = r.u32(Key::ExpertGatingFunc, std::nullopt);
  hp.n_embd_exp_latent = r.u32(Key::ExpertLatentLength, 0u);
  hp.attn_res_block_size = r.u32(Key::AttnResBlockSize, std::nullopt);
  hp.situ_beta = r.f32(Key::SituBeta, std::nullopt);
  hp.situ_linear_beta = r.f32(Key::SituLinearBeta, std::nullopt);

  // Vocabulary: the token list when there is one, else the informational key.
  if (const gguf::Value* toks = f.find("tokenizer.ggml.tokens"); toks && toks->is_array()) {
    hp.n_vocab = static_cast<uint32_t>(toks->size());
  } else if (const gguf::Value* vs = r.find(Key::VocabSize); vs && vs->is_integer()) {
    hp.n_vocab = static_cast<uint32_t>(vs->as_uint());
  } else if (const auto* te = f.tensor(schema::tensor_name(schema::Tensor::TokenEmbd)); te) {
    hp.n_vocab = static_cast<uint32_t>(te->dim(1));
  }
  if (hp.n_vocab == 0) fail("{}: cannot determine the vocabulary size", f.path());

  // Consistency checks that would otherwise surface as nonsense math.
  if (!(hp.rms_eps > 0.0f) || !std::isfinite(hp.rms_eps))
    r.bad(Key::RmsEps, fmt::format("{} is not a positive number", hp.rms_eps));
  if (hp.n_rot >= hp.n_embd_head_k_mla)
    r.bad(Key::RopeDimensionCount,
          fmt::format("{} must be smaller than key_length_mla {}", hp.n_rot, hp.n_embd_head_k_mla));
  if (hp.n_embd_head_k != hp.kv_lora_rank + hp.n_rot && hp.n_mla_layers() > 0)
    r.bad(Key::KeyLength, fmt::format("{} != kv_lora_rank {} + rope.dimension_count {}", hp.n_embd_head_k,
                                      hp.kv_lora_rank, hp.n_rot));
  if (hp.kv_lora_rank == 0) r.bad(Key::KvLoraRank, "must be > 0");
  if (hp.n_embd_head_v_mla == 0) r.bad(Key::ValueLengthMla, "must be > 0");
  if (hp.kda_head_dim == 0) r.bad(Key::KdaHeadDim, "must be > 0");
  if (hp.ssm_conv_kernel == 0) r.bad(Key::SsmConvKernel, "must be > 0");
  if (hp.n_expert > kMaxExperts)
    r.bad(Key::ExpertCount, fmt::format("{} exceeds {}", hp.n_expert, kMaxExperts));
  if (hp.has_moe()) {
    if (hp.n_expert == 0) r.bad(Key::ExpertCount, "MoE layers need experts");
    if (hp.n_expert_used == 0 || hp.n_expert_used > hp.n_expert)
      r.bad(Key::ExpertUsedCount,
            fmt::format("{} is outside 1..expert_count {}", hp.n_expert_used, hp.n_expert));
    if (hp.n_ff_exp == 0) r.bad(Key::ExpertFeedForwardLength, "must be > 0");
  }
  if (hp.n_layer_dense_lead > 0 && hp.n_ff == 0) r.bad(Key::FeedForwardLength, "dense layers need a width");
  if (n_group > 1) r.bad(Key::ExpertGroupCount, "group-limited routing is not used by K3 and not supported");
  if (hp.expert_gating_func != kGatingSoftmax && hp.expert_gating_func != kGatingSigmoid)
    r.bad(Key::ExpertGatingFunc,
          fmt::format("{} is not supported (1 softmax, 2 sigmoid)", hp.expert_gating_func));
  if (!(hp.situ_beta != 0.0f)) r.bad(Key::SituBeta, "must be non-zero");
  return hp;
}

}  // namespace k3::model
