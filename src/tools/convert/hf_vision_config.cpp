// tools/convert/hf_vision_config: vision_config + preprocessor config → K3VisionConfig → clip.*
// keys (see hf_vision_config.h).
#include "tools/convert/hf_vision_config.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <initializer_list>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/read_file.h"

namespace k3::tools {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

json parse_object(const std::string& path) {
  json j;
  try {
    j = json::parse(read_file(path));
  } catch (const json::exception& e) { fail("{}: does not parse: {}", path, e.what()); }
  if (!j.is_object()) fail("{}: not a JSON object", path);
  return j;
}

// The first of `keys` that `j` holds (present, even as null), or nullptr.
const json* first_of(const json& j, std::initializer_list<const char*> keys, const char** found) {
  for (const char* k : keys) {
    if (auto it = j.find(k); it != j.end()) {
      *found = k;
      return &*it;
    }
  }
  return nullptr;
}

uint32_t as_u32(const json& v, const std::string& where, const char* key) {
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > UINT32_MAX)
    fail("{}: key '{}' must be a non-negative integer, got {}", where, key, v.dump());
  return static_cast<uint32_t>(v.get<int64_t>());
}

uint32_t need_u32(const json& j, const std::string& where, std::initializer_list<const char*> keys) {
  const char* key = nullptr;
  const json* v = first_of(j, keys, &key);
  if (!v) {
    std::string names;
    for (const char* k : keys) names += fmt::format("{}'{}'", names.empty() ? "" : ", ", k);
    fail("{}: missing required key (one of {})", where, names);
  }
  return as_u32(*v, where, key);
}

uint32_t opt_u32(const json& j, const std::string& where, const char* key, uint32_t def) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? def : as_u32(*it, where, key);
}

// A JSON list of numbers as the reference writes it: all floats → FLOAT32, all integers → INT32.
gguf::Value number_array(const json& j, const std::string& where, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) fail("{}: missing required key '{}'", where, key);
  if (!it->is_array()) fail("{}: key '{}' must be a list of numbers, got {}", where, key, it->dump());
  std::vector<float> f;
  std::vector<int32_t> i;
  for (const json& e : *it) {
    if (e.is_number_float()) f.push_back(static_cast<float>(e.get<double>()));
    else if (e.is_number_integer()) i.push_back(static_cast<int32_t>(e.get<int64_t>()));
    else fail("{}: key '{}': entry {} is not a number", where, key, e.dump());
  }
  if (!f.empty() && !i.empty()) fail("{}: key '{}' mixes integers and floats", where, key);
  return i.empty() ? gguf::Value::array_f32(f) : gguf::Value::array_i32(i);
}

// preprocessor_config.json (its media_proc_cfg lifted to the root), then processor_config.json
// (its image_processor lifted) over it: the merged dict the reference reads.
json preprocessor(const fs::path& dir) {
  json merged = json::object();
  const std::pair<const char*, const char*> files[] = {{"preprocessor_config.json", "media_proc_cfg"},
                                                       {"processor_config.json", "image_processor"}};
  bool any = false;
  for (const auto& [file, lift] : files) {
    const fs::path p = dir / file;
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) continue;
    any = true;
    json cfg = parse_object(p.string());
    if (auto it = cfg.find(lift); it != cfg.end() && it->is_object())
      for (auto e = it->begin(); e != it->end(); ++e) cfg[e.key()] = e.value();
    for (auto e = cfg.begin(); e != cfg.end(); ++e) merged[e.key()] = e.value();
  }
  if (!any)
    fail("{}: no preprocessor_config.json (the mmproj needs its image_mean and image_std)",
         (dir / "preprocessor_config.json").string());
  return merged;
}

}  // namespace

K3VisionConfig read_k3_vision_config(const std::string& dir_s) {
  const fs::path dir(dir_s);
  const std::string cname = (dir / "config.json").string();
  const json root = parse_object(cname);
  K3VisionConfig c;

  json text = root;  // the text hidden size: text_config over the root
  if (auto it = root.find("text_config"); it != root.end() && it->is_object())
    for (auto e = it->begin(); e != it->end(); ++e) text[e.key()] = e.value();
  c.n_embd_text = opt_u32(text, cname, "hidden_size", opt_u32(text, cname, "n_embd", 0));
  if (c.n_embd_text == 0) fail("{}: no text hidden_size (text_config.hidden_size)", cname);

  auto vit = root.find("vision_config");
  if (vit == root.end() || vit->is_null())
    fail("{}: no vision_config: this checkpoint has no vision tower to convert", cname);
  if (!vit->is_object()) fail("{}: vision_config is not an object", cname);
  const json& v = *vit;
  const std::string vname = cname + " vision_config";

  c.patch_size = need_u32(v, vname, {"patch_size"});
  c.pos_h = opt_u32(v, vname, "init_pos_emb_height", 64);
  c.pos_w = opt_u32(v, vname, "init_pos_emb_width", 64);
  c.image_size = c.pos_h * c.patch_size;
  c.n_embd = need_u32(v, vname, {"hidden_size", "width", "vt_hidden_size"});
  c.n_ff = need_u32(v, vname, {"intermediate_size", "vt_intermediate_size"});
  c.n_layer = need_u32(v, vname,
                       {"n_layers", "num_hidden_layers", "n_layer", "num_layers", "depth", "layers",
                        "encoder_layers", "vt_num_hidden_layers"});
  c.n_head = need_u32(v, vname, {"num_attention_heads", "num_heads", "heads", "vt_num_attention_heads"});
  c.n_head_vt = need_u32(v, vname, {"vt_num_attention_heads"});
  c.qkv_width = opt_u32(v, vname, "qkv_hidden_size", 0);
  if (c.qkv_width == 0) c.qkv_width = need_u32(v, vname, {"vt_hidden_size"});
  if (c.n_embd == 0 || c.n_ff == 0 || c.n_layer == 0 || c.n_head_vt == 0 || c.patch_size == 0)
    fail("{}: hidden size, intermediate size, layers, heads and patch_size must be positive", vname);
  if (c.qkv_width % c.n_head_vt)
    fail("{}: qkv_hidden_size {} is not divisible by vt_num_attention_heads {}", vname, c.qkv_width,
         c.n_head_vt);
  c.head_dim = c.qkv_width / c.n_head_vt;
  if (c.head_dim % 4)
    fail(
        "{}: head_dim {} (qkv_hidden_size / heads) is not a multiple of 4, which the Q/K de-interleave needs",
        vname, c.head_dim);

  c.merge = 2;
  if (auto it = v.find("merge_kernel_size"); it != v.end() && !it->is_null()) {
    if (!it->is_array() || it->size() != 2)
      fail("{}: merge_kernel_size must be a list of two integers, got {}", vname, it->dump());
    const uint32_t kh = as_u32((*it)[0], vname, "merge_kernel_size"),
                   kw = as_u32((*it)[1], vname, "merge_kernel_size");
    if (kh != kw || kh == 0)
      fail("{}: merge_kernel_size [{}, {}]: the kimik3 projector merges square blocks", vname, kh, kw);
    c.merge = kh;
  }
  if (auto it = v.find("projector_ln_eps"); it != v.end() && !it->is_null()) {
    if (!it->is_number() || !std::isfinite(it->get<double>()))
      fail("{}: key 'projector_ln_eps' must be a number, got {}", vname, it->dump());
    c.eps = static_cast<float>(it->get<double>());
  }

  const json pre = preprocessor(dir);
  const std::string pname = (dir / "preprocessor_config.json").string();
  uint32_t in_patch_limit = opt_u32(pre, pname, "in_patch_limit", 16384);
  if (auto it = pre.find("media_proc_cfg"); it != pre.end() && it->is_object())
    in_patch_limit = opt_u32(*it, pname + " media_proc_cfg", "in_patch_limit", in_patch_limit);
  const uint64_t pp = static_cast<uint64_t>(c.patch_size) * c.patch_size;
  if (8 * pp > UINT32_MAX || in_patch_limit * pp > UINT32_MAX)
    fail("{}: in_patch_limit {} × patch area {} does not fit clip.vision.image_max_pixels", pname,
         in_patch_limit, pp);
  c.min_pixels = static_cast<uint32_t>(8 * pp);
  c.max_pixels = static_cast<uint32_t>(in_patch_limit * pp);
  c.image_mean = number_array(pre, pname, "image_mean");
  c.image_std = number_array(pre, pname, "image_std");
  return c;
}

std::vector<std::pair<std::string, gguf::Value>> clip_vision_kvs(const K3VisionConfig& c) {
  using gguf::Value;
  std::vector<std::pair<std::string, Value>> kv;
  kv.emplace_back("clip.has_vision_encoder", Value::boolean(true));
  kv.emplace_back("clip.vision.projection_dim", Value::u32(c.n_embd_text));
  kv.emplace_back("clip.vision.image_size", Value::u32(c.image_size));
  kv.emplace_back("clip.vision.patch_size", Value::u32(c.patch_size));
  kv.emplace_back("clip.vision.embedding_length", Value::u32(c.n_embd));
  kv.emplace_back("clip.vision.feed_forward_length", Value::u32(c.n_ff));
  kv.emplace_back("clip.vision.block_count", Value::u32(c.n_layer));
  kv.emplace_back("clip.vision.attention.head_count", Value::u32(c.n_head));
  // An empty list writes no key (gguf-py skips empty arrays).
  if (c.image_mean.size()) kv.emplace_back("clip.vision.image_mean", c.image_mean);
  if (c.image_std.size()) kv.emplace_back("clip.vision.image_std", c.image_std);
  kv.emplace_back("clip.projector_type", Value::string("kimik3"));
  kv.emplace_back("clip.vision.attention.head_dim", Value::u32(c.head_dim));
  kv.emplace_back("clip.use_gelu", Value::boolean(true));
  kv.emplace_back("clip.vision.attention.layer_norm_epsilon", Value::f32(c.eps));
  kv.emplace_back("clip.vision.projector.scale_factor", Value::u32(c.merge));
  kv.emplace_back("clip.vision.image_min_pixels", Value::u32(c.min_pixels));
  kv.emplace_back("clip.vision.image_max_pixels", Value::u32(c.max_pixels));
  return kv;
}

}  // namespace k3::tools
