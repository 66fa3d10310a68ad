// tools/convert/vision: plans the kimik3 mmproj tensors from the checkpoint's vision tower and
// projector, then writes them with the clip.* keys (see vision.h).
#include "tools/convert/vision.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "core/error.h"
#include "core/log.h"
#include "quant/codec.h"
#include "tools/convert/hf_metadata.h"
#include "tools/convert/hf_vision_config.h"
#include "tools/convert/plan.h"
#include "tools/convert/safetensors.h"

namespace k3::tools {

namespace fs = std::filesystem;
using quant::Type;

namespace {

// One HF tensor of the tower: its GGUF name and the shape the config implies.
struct VisionTensor {
  std::string gguf;
  std::vector<int64_t> shape;  // PyTorch order
  bool qkv = false;            // the fused QKV, whose Q and K rows are de-interleaved
};

// Every HF tensor of the tower and projector the config implies, by HF name.
std::map<std::string, VisionTensor> vision_mapping(const K3VisionConfig& c) {
  const int64_t C = c.n_embd, Q = c.qkv_width, F = c.n_ff, P = c.patch_size, T = c.n_embd_text;
  const int64_t M = C * c.merge * c.merge;
  std::map<std::string, VisionTensor> m;
  m["vision_tower.patch_embed.proj.weight"] = {"v.patch_embd.weight", {C, 3, P, P}};
  m["vision_tower.patch_embed.pos_emb.weight"] = {"v.position_embd.weight", {c.pos_h, c.pos_w, C}};
  for (uint32_t il = 0; il < c.n_layer; ++il) {
    const std::string b = fmt::format("vision_tower.encoder.blocks.{}.", il),
                      v = fmt::format("v.blk.{}.", il);
    m[b + "norm0.weight"] = {v + "ln1.weight", {C}};
    m[b + "wqkv.weight"] = {v + "attn_qkv.weight", {3 * Q, C}, true};
    m[b + "wo.weight"] = {v + "attn_out.weight", {C, Q}};
    m[b + "norm1.weight"] = {v + "ln2.weight", {C}};
    m[b + "mlp.fc0.weight"] = {v + "ffn_up.weight", {F, C}};
    m[b + "mlp.fc1.weight"] = {v + "ffn_down.weight", {C, F}};
  }
  m["vision_tower.encoder.final_layernorm.weight"] = {"v.post_ln.weight", {C}};
  m["mm_projector.proj.0.weight"] = {"mm.1.weight", {M, M}};
  m["mm_projector.proj.2.weight"] = {"mm.2.weight", {T, M}};
  m["mm_projector.post_norm.weight"] = {"mm.post_norm.weight", {T}};
  return m;
}

bool is_vision_name(const std::string& n) {
  return n.starts_with("vision_tower.") || n.starts_with("mm_projector.");
}

// Buffers the reference skips by name.
bool skipped_buffer(const std::string& n) {
  for (const char* s : {".attention.masked_bias", ".attention.bias", ".rotary_emb.inv_freq"})
    if (n.ends_with(s)) return true;
  return false;
}

// The reference's dtype rule for mmproj tensors: the patch embedding is F16 under --outtype f16
// and F32 otherwise; 1-D tensors, norms and the position embedding stay F32; the rest takes the
// outtype (Q8_0 rows that are not whole blocks fall back to F16).
Type pick_type(const std::string& name, const std::vector<int64_t>& ne, Type outtype) {
  if (name == "v.patch_embd.weight") return outtype == Type::F16 ? Type::F16 : Type::F32;
  if (ne.size() <= 1 || name.ends_with("_norm.weight") || name == "v.position_embd.weight") return Type::F32;
  if (outtype == Type::Q8_0 && ne[0] % 32 != 0) {
    log::warn("{}: row width {} is not a multiple of 32, written as F16 instead of Q8_0", name, ne[0]);
    return Type::F16;
  }
  return outtype;
}

// HF row → source row of the de-interleaved QKV: within each head of Q and of K, the
// [head_dim/4, 2, 2] row blocks are transposed to [2, head_dim/4, 2]; V rows stay.
int64_t qkv_source_row(int64_t r, int64_t Q, int64_t hd) {
  if (r >= 2 * Q) return r;
  const int64_t base = (r / Q) * Q, j = r % Q, h = j / hd, k = j % hd, half = hd / 2;
  const int64_t a = k / half, b = (k % half) / 2, cc = k % 2;
  return base + h * hd + b * 4 + a * 2 + cc;
}

Plan plan_tensor(const VisionTensor& vt, const StTensor& t, const K3VisionConfig& c, Type outtype) {
  Plan p;
  p.name = vt.gguf;
  p.ne.assign(t.shape.rbegin(), t.shape.rend());
  p.type = pick_type(p.name, p.ne, outtype);
  p.ne0 = p.ne[0];
  p.nrows = t.numel() / p.ne0;
  p.bytes_in = t.nbytes;
  const StTensor* tp = &t;
  const int64_t ne0 = p.ne0;
  if (!vt.qkv) {
    if (same_encoding(t.dtype, p.type)) p.raw = t.data;
    else p.row_f32 = [tp, ne0](int64_t r, float* dst) { read_f32(*tp, r * ne0, ne0, dst); };
    return p;
  }
  const int64_t Q = c.qkv_width, hd = c.head_dim;
  if (same_encoding(t.dtype, p.type)) {
    const size_t rb = static_cast<size_t>(ne0) * st_dtype_size(t.dtype);
    p.row_bytes = [tp, rb, Q, hd](int64_t r, uint8_t* dst) {
      std::memcpy(dst, tp->data + static_cast<size_t>(qkv_source_row(r, Q, hd)) * rb, rb);
    };
  } else {
    p.row_f32 = [tp, ne0, Q, hd](int64_t r, float* dst) {
      read_f32(*tp, qkv_source_row(r, Q, hd) * ne0, ne0, dst);
    };
  }
  return p;
}

// The checkpoint's vision tensors in the reference's order: files by name, names within a file.
std::vector<const StTensor*> vision_tensors_in_order(const SafetensorsSet& st) {
  std::vector<const StTensor*> v;
  for (const auto& [name, t] : st.tensors())
    if (is_vision_name(name) && !skipped_buffer(name)) v.push_back(&t);
  std::stable_sort(v.begin(), v.end(), [](const StTensor* a, const StTensor* b) {
    return a->file != b->file ? a->file < b->file : a->name < b->name;
  });
  return v;
}

std::vector<Plan> plan_vision(const SafetensorsSet& st, const K3VisionConfig& c, Type outtype) {
  const std::map<std::string, VisionTensor> want = vision_mapping(c);
  std::vector<Plan> plans;
  std::set<std::string> seen;
  for (const StTensor* t : vision_tensors_in_order(st)) {
    auto it = want.find(t->name);
    if (it == want.end())
      fail("unexpected tensor '{}' in {} (not part of the Kimi-K3 vision tower mapping for {} blocks)",
           t->name, t->file, c.n_layer);
    if (t->dtype != StDtype::F32 && t->dtype != StDtype::F16 && t->dtype != StDtype::BF16)
      fail("tensor '{}' ({}): dtype {} is not supported here (expected BF16, F16 or F32)", t->name, t->file,
           st_dtype_name(t->dtype));
    if (t->shape != it->second.shape)
      fail("tensor '{}' ({}): shape {} does not match vision_config (expected [{}])", t->name, t->file,
           t->shape_string(), fmt::join(it->second.shape, ", "));
    seen.insert(t->name);
    plans.push_back(plan_tensor(it->second, *t, c, outtype));
  }
  for (const auto& [name, vt] : want)
    if (!seen.count(name))
      fail(
          "missing tensor '{}' in the checkpoint (the vision tower of vision_config: {} blocks; needed for "
          "{})",
          name, c.n_layer, vt.gguf);
  return plans;
}

// -o: a file as given; a directory, or nothing (the checkpoint directory), gets the default name.
std::string resolve_out_path(const ConvertOptions& opt, const HfGeneralMetadata& meta) {
  std::error_code ec;
  std::string upper = quant::type_name(opt.outtype);
  for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  const std::string name = meta.mmproj_file_name(upper);
  if (opt.out_path.empty()) return (fs::path(opt.hf_dir) / name).string();
  if (fs::is_directory(opt.out_path, ec)) return (fs::path(opt.out_path) / name).string();
  if (const fs::path parent = fs::path(opt.out_path).parent_path();
      !parent.empty() && !fs::is_directory(parent, ec))
    fail("{}: output directory '{}' does not exist", opt.out_path, parent.string());
  return opt.out_path;
}

}  // namespace

ConvertResult convert_hf_mmproj(const ConvertOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  if (opt.outtype != Type::F32 && opt.outtype != Type::F16 && opt.outtype != Type::BF16 &&
      opt.outtype != Type::Q8_0)
    fail("outtype {} is not supported (f32, f16, bf16, q8_0)", quant::type_name(opt.outtype));
  std::error_code ec;
  if (!fs::is_directory(opt.hf_dir, ec))
    fail("{}: not a directory (give the Hugging Face checkpoint directory)", opt.hf_dir);

  const K3VisionConfig cfg = read_k3_vision_config(opt.hf_dir);
  auto st = SafetensorsSet::open(opt.hf_dir);
  std::vector<Plan> plans = plan_vision(*st, cfg, opt.outtype);
  uint64_t n_params = 0;
  for (const Plan& p : plans) n_params += static_cast<uint64_t>(p.ne0 * p.nrows);
  const HfGeneralMetadata meta = read_hf_general_metadata(opt.hf_dir, opt.name, n_params);
  const std::string out_path = resolve_out_path(opt, meta);

  using gguf::Value;
  std::vector<std::pair<std::string, Value>> kvs;
  kvs.emplace_back("general.architecture", Value::string("clip"));
  kvs.emplace_back("general.type", Value::string("mmproj"));
  for (auto& kv : meta.kvs()) kvs.push_back(std::move(kv));
  kvs.emplace_back("general.file_type", Value::u32(file_type_of(opt.outtype, false)));
  for (auto& kv : clip_vision_kvs(cfg)) kvs.push_back(std::move(kv));
  kvs.emplace_back("general.quantization_version", Value::u32(2));
  log::info("mmproj: {} tensors ({} blocks, {} heads of {}, merge {}x{}) → {}", plans.size(), cfg.n_layer,
            cfg.n_head_vt, cfg.head_dim, cfg.merge, cfg.merge, out_path);

  WritePlansOptions wo;
  wo.split_max_bytes = opt.split_max_bytes;
  wo.threads = opt.threads;
  wo.verbose = opt.verbose;
  wo.progress = opt.progress;
  WritePlansResult wr = write_plans(out_path, kvs, plans, wo);
  ConvertResult res;
  res.files = std::move(wr.files);
  res.bytes_in = wr.bytes_in;
  res.bytes_out = wr.bytes_out;
  res.n_tensors = plans.size();
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace k3::tools
