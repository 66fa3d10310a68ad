// tools/reap_slice: byte-exact expert slicing into a new GGUF (see reap_slice.h).
#include "tools/reap/reap_slice.h"

#include <cstring>
#include <optional>

#include "core/error.h"
#include "gguf/file.h"
#include "model/hparams.h"
#include "model/schema.h"
#include "quant/types.h"
#include "core/progress.h"

namespace k3::tools {

namespace {

// The schema's per-expert tensor kinds (one entry per routed expert along the last dimension),
// as name stems up to the first '.': companions such as ffn_up_exps.scale are sliced alike.
std::vector<std::string> expert_stems() {
  std::vector<std::string> stems;
  for (const model::schema::TensorKind& k : model::schema::tensors())
    if (k.per_expert) stems.emplace_back(k.name.substr(0, k.name.find('.') + 1));
  return stems;
}

// The layer of a "blk.N.<expert stem>..." tensor, or nullopt for any other tensor.
std::optional<uint32_t> expert_tensor_layer(const std::string& name) {
  if (!name.starts_with("blk.")) return std::nullopt;
  size_t p = 4, q = p;
  while (q < name.size() && name[q] >= '0' && name[q] <= '9') ++q;
  if (q == p || q - p > 6 || q >= name.size() || name[q] != '.') return std::nullopt;
  const std::string rest = name.substr(q + 1);
  static const std::vector<std::string> stems = expert_stems();
  for (const std::string& stem : stems)
    if (rest.starts_with(stem)) return static_cast<uint32_t>(std::stoul(name.substr(p, q - p)));
  return std::nullopt;
}

// Bytes of one expert's slice of t; throws unless slicing along the last dimension is a
// whole-byte, whole-block copy.
uint64_t expert_stride(const gguf::GgufFile& f, const gguf::TensorInfo& t, uint32_t n_expert) {
  if (t.ne.empty() || t.ne.back() != int64_t(n_expert))
    fail("{}: tensor {} has shape {}, but its last dimension should be expert_count = {}", f.path(), t.name,
         t.shape_string(), n_expert);
  if (t.ne.size() == 1 && quant::type_info(t.type).block_elems != 1)
    fail("{}: tensor {} is a 1-D {} vector; its experts share quantization blocks and cannot be sliced",
         f.path(), t.name, quant::type_name(t.type));
  if (t.nbytes % n_expert != 0)
    fail("{}: tensor {} has {} bytes, not a multiple of {} experts", f.path(), t.name, t.nbytes, n_expert);
  return t.nbytes / n_expert;
}

std::string key_prefix(const gguf::GgufFile& f) { return f.get_string("general.architecture", "") + "."; }

bool is_split_key(const std::string& k) {
  return k == "split.no" || k == "split.count" || k == "split.tensors.count";
}

}  // namespace

uint32_t check_prunable(const gguf::GgufFile& f, int64_t n_keep) {
  const model::HParams hp = model::load_hparams(f);
  if (!f.find(key_prefix(f) + "expert_count"))
    fail("{}: missing key {}expert_count; the model has no routed experts to prune", f.path(), key_prefix(f));
  if (!hp.has_moe() || hp.n_expert == 0) fail("{}: the model has no MoE layer, nothing to prune", f.path());
  check_keep(hp.n_expert, hp.n_expert_used, n_keep);
  for (uint32_t il = hp.n_layer_dense_lead; il < hp.n_layer; ++il)
    for (const model::schema::TensorKind& k : model::schema::tensors()) {
      if (!k.per_expert || k.when != model::schema::When::Always) continue;
      const std::string name = model::schema::tensor_name(k.id, il);
      if (!f.tensor(name)) fail("{}: missing tensor {} (MoE layer {})", f.path(), name, il);
    }
  for (const gguf::TensorInfo& t : f.tensors()) {
    const auto layer = expert_tensor_layer(t.name);
    if (!layer) continue;
    if (*layer < hp.n_layer_dense_lead || *layer >= hp.n_layer)
      fail("{}: tensor {} belongs to layer {}, which is not an MoE layer", f.path(), t.name, *layer);
    expert_stride(f, t, hp.n_expert);
  }
  return hp.n_layer - hp.n_layer_dense_lead;
}

ReapWriteResult write_pruned_gguf(const gguf::GgufFile& in, const ReapPlan& plan, const std::string& out_path,
                                  const gguf::WriteOptions& opt, bool progress_on) {
  const uint32_t n_moe = check_prunable(in, plan.n_keep);
  const model::HParams hp = model::load_hparams(in);
  if (plan.n_expert != hp.n_expert)
    fail("reap: the plan was made for {} experts, {} has {}", plan.n_expert, in.path(), hp.n_expert);
  if (plan.layers.size() != n_moe)
    fail("reap: the plan covers {} layers, {} has {} MoE layers", plan.layers.size(), in.path(), n_moe);
  std::vector<const std::vector<int32_t>*> kept_of(hp.n_layer, nullptr);
  for (const LayerPlan& lp : plan.layers) {
    if (lp.layer < hp.n_layer_dense_lead || lp.layer >= hp.n_layer || kept_of[lp.layer])
      fail("reap: the plan names layer {} twice or a layer that is not an MoE layer", lp.layer);
    if (lp.kept.size() != plan.n_keep)
      fail("reap: the plan keeps {} experts in layer {}, not {}", lp.kept.size(), lp.layer, plan.n_keep);
    for (size_t i = 0; i < lp.kept.size(); ++i)
      if (lp.kept[i] < 0 || lp.kept[i] >= int32_t(hp.n_expert) || (i > 0 && lp.kept[i] <= lp.kept[i - 1]))
        fail("reap: layer {}'s kept list must be ascending expert ids below {}", lp.layer, hp.n_expert);
    kept_of[lp.layer] = &lp.kept;
  }

  const std::string count_key = key_prefix(in) + "expert_count";
  std::vector<std::pair<std::string, gguf::Value>> kvs;
  for (const auto& kv : in.kvs()) {
    if (is_split_key(kv.first)) continue;
    kvs.push_back(kv);
    if (kv.first == count_key) {
      gguf::Value& v = kvs.back().second;
      if (v.is_array() || !v.is_integer()) fail("{}: key {} is not an integer", in.path(), count_key);
      v.bits = plan.n_keep;  // keeps the stored integer type
    }
  }

  ReapWriteResult res;
  struct Job {
    const gguf::TensorInfo* t;
    const std::vector<int32_t>* kept;  // null: copied whole
    uint64_t stride;
  };
  std::vector<Job> jobs;
  for (const gguf::TensorInfo& t : in.tensors()) {
    Job j{&t, nullptr, 0};
    if (const auto layer = expert_tensor_layer(t.name)) {
      j.kept = kept_of[*layer];
      j.stride = expert_stride(in, t, hp.n_expert);
      res.bytes_out += j.stride * j.kept->size();
      res.n_sliced += 1;
    } else {
      res.bytes_out += t.nbytes;
    }
    res.bytes_in += t.nbytes;
    jobs.push_back(j);
  }

  Progress progress(res.bytes_out, "reap write", progress_on);
  std::vector<gguf::TensorSpec> specs;
  specs.reserve(jobs.size());
  for (const Job& j : jobs) {
    gguf::TensorSpec s;
    s.name = j.t->name;
    s.ne = j.t->ne;
    s.type = j.t->type;
    if (j.kept) s.ne.back() = static_cast<int64_t>(j.kept->size());
    s.fill = [j, &progress](uint8_t* dst, uint64_t n) {
      if (!j.kept) {
        std::memcpy(dst, j.t->data, n);
      } else {
        if (n != j.stride * j.kept->size())
          fail("reap: tensor {}: the writer asked for {} bytes, the slice has {}", j.t->name, n,
               j.stride * j.kept->size());
        for (size_t i = 0; i < j.kept->size(); ++i)
          std::memcpy(dst + i * j.stride, j.t->data + uint64_t((*j.kept)[i]) * j.stride, j.stride);
      }
      progress.advance(n, j.t->name);
    };
    specs.push_back(std::move(s));
  }
  res.files = gguf::write_gguf(out_path, kvs, specs, opt);
  progress.finish();
  return res;
}

}  // namespace k3::tools
