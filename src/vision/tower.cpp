#include "vision/tower.h"

#include <fmt/format.h>

#include <cmath>

#include "core/error.h"
#include "gguf/file.h"
#include "quant/codec.h"
#include "quant/types.h"

namespace k3::vision {

namespace {

// Bounds that keep a hostile file from asking for absurd work or memory; real towers
// (patch 14, 1024 wide, 27 layers, 16 heads of 128) sit far inside them.
constexpr uint32_t kMaxPatch = 64;
constexpr uint32_t kMaxWidth = 16384;
constexpr uint32_t kMaxLayers = 256;
constexpr uint32_t kMaxMerge = 8;
constexpr uint32_t kMaxGrid = 1024;

bool matrix_type(quant::Type t) {
  return t == quant::Type::F32 || t == quant::Type::F16 || t == quant::Type::BF16 || t == quant::Type::Q8_0;
}

}  // namespace

class TowerBinder {
 public:
  TowerBinder(Tower& t, const gguf::GgufFile& f) : t_(t), f_(f) {}

  uint32_t u32(const char* key, uint32_t lo, uint32_t hi) const {
    const gguf::Value* v = f_.find(key);
    if (!v) fail("{}: key '{}' is missing (not a kimik3 mmproj file?)", f_.path(), key);
    if (!v->is_integer())
      fail("{}: key '{}' is {}, expected an integer", f_.path(), key, gguf::value_type_name(v->type));
    const int64_t x = v->as_int();
    if (x < lo || x > hi) fail("{}: key '{}' = {} is outside [{}, {}]", f_.path(), key, x, lo, hi);
    return static_cast<uint32_t>(x);
  }

  void floats3(const char* key, float* out) const {
    const gguf::Value* v = f_.find(key);
    if (!v) fail("{}: key '{}' is missing", f_.path(), key);
    if (!v->is_array() || v->size() < 3) fail("{}: key '{}' must be an array of 3 numbers", f_.path(), key);
    for (size_t i = 0; i < 3; ++i) {
      const double x = v->float_at(i);
      if (!std::isfinite(x)) fail("{}: key '{}'[{}] is not finite", f_.path(), key, i);
      out[i] = static_cast<float>(x);
    }
  }

  const gguf::TensorInfo& tensor(const std::string& name, std::vector<int64_t> want) const {
    const gguf::TensorInfo* t = f_.tensor(name);
    if (!t) fail("{}: tensor '{}' is missing", f_.path(), name);
    std::vector<int64_t> have = t->ne;
    while (have.size() > want.size() && have.back() == 1) have.pop_back();
    if (have != want) {
      gguf::TensorInfo w;
      w.ne = want;
      fail("{}: tensor '{}' has shape {}, expected {}", f_.path(), name, t->shape_string(), w.shape_string());
    }
    return *t;
  }

  kernels::WeightView matrix(const std::string& name, int64_t cols, int64_t rows,
                             std::vector<int64_t> shape = {}) {
    if (shape.empty()) shape = {cols, rows};
    const gguf::TensorInfo& t = tensor(name, shape);
    if (!matrix_type(t.type))
      fail("{}: tensor '{}' is {}; vision matrices must be F32, F16, BF16 or Q8_0", f_.path(), name,
           quant::type_name(t.type));
    if (t.type != quant::Type::F32 && t.type != quant::Type::F16 &&
        cols % quant::type_info(t.type).block_elems != 0)
      fail("{}: tensor '{}': {} columns are not whole {} blocks", f_.path(), name, cols,
           quant::type_name(t.type));
    if (t_.weight_type_.empty() || t.type != quant::Type::F32) t_.weight_type_ = quant::type_name(t.type);
    kernels::WeightView v;
    v.type = t.type;
    v.data = t.data;
    v.cols = cols;
    v.rows = rows;
    v.row_stride = quant::row_bytes(t.type, cols);
    return v;
  }

  std::vector<float> vec(const std::string& name, std::vector<int64_t> shape, bool required = true) {
    if (!required && !f_.tensor(name)) return {};
    const gguf::TensorInfo& t = tensor(name, shape);
    if (!quant::can_dequantize(t.type))
      fail("{}: tensor '{}': type {} is not supported", f_.path(), name, quant::type_name(t.type));
    const int64_t n = t.n_elements();
    if (t.type != quant::Type::F32 && t.type != quant::Type::F16 && t.type != quant::Type::BF16 &&
        shape.front() % quant::type_info(t.type).block_elems != 0)
      fail("{}: tensor '{}' cannot be decoded in rows of {}", f_.path(), name, shape.front());
    std::vector<float> out(static_cast<size_t>(n));
    const int64_t row = shape.front();
    for (int64_t r = 0; r < n / row; ++r)
      quant::dequantize_row(t.type, t.data + r * quant::row_bytes(t.type, row), out.data() + r * row, row);
    for (float x : out)
      if (!std::isfinite(x)) fail("{}: tensor '{}' holds a non-finite value", f_.path(), name);
    return out;
  }

  void hparams();
  void weights();

 private:
  Tower& t_;
  const gguf::GgufFile& f_;
};

void TowerBinder::hparams() {
  if (const std::string arch = f_.get_string("general.architecture", ""); arch != "clip")
    fail(
        "{}: not an mmproj file (general.architecture is '{}', an mmproj's is 'clip'): give the vision "
        "tower, "
        "e.g. mmproj-F16.gguf",
        f_.path(), arch);
  const std::string type =
      f_.get_string("clip.projector_type", f_.get_string("clip.vision.projector_type", ""));
  if (type != "kimik3")
    fail(
        "{}: projector type '{}' is not supported (k3 runs Kimi-K3 mmproj files: clip.projector_type = "
        "kimik3)",
        f_.path(), type.empty() ? "(none)" : type);
  if (const gguf::Value* v = f_.find("clip.has_vision_encoder");
      v && v->type == gguf::ValueType::BOOL && !v->as_bool())
    fail("{}: the file has no vision encoder (clip.has_vision_encoder = false)", f_.path());
  if (const gguf::Value* v = f_.find("clip.use_silu"); v && v->type == gguf::ValueType::BOOL && v->as_bool())
    fail("{}: clip.use_silu is set; the Kimi-K3 tower's feed-forward is tanh-GELU", f_.path());
  TowerHparams& hp = t_.hp_;
  hp.patch = u32("clip.vision.patch_size", 1, kMaxPatch);
  hp.n_embd = u32("clip.vision.embedding_length", 1, kMaxWidth);
  hp.n_layer = u32("clip.vision.block_count", 1, kMaxLayers);
  hp.n_head = u32("clip.vision.attention.head_count", 1, 1024);
  hp.head_dim = f_.find("clip.vision.attention.head_dim") ? u32("clip.vision.attention.head_dim", 4, 4096)
                                                          : hp.n_embd / hp.n_head;
  if (hp.head_dim % 4 != 0 || hp.head_dim == 0)
    fail("{}: head width {} is not a multiple of 4 (2-D RoPE turns pairs in two halves)", f_.path(),
         hp.head_dim);
  if (uint64_t{hp.n_head} * hp.head_dim > kMaxWidth)
    fail("{}: QKV width {}×{} is too large", f_.path(), hp.n_head, hp.head_dim);
  hp.n_ff = u32("clip.vision.feed_forward_length", 1, 8 * kMaxWidth);
  hp.merge = f_.find("clip.vision.projector.scale_factor")
                 ? u32("clip.vision.projector.scale_factor", 1, kMaxMerge)
                 : 2;
  hp.min_pixels = u32("clip.vision.image_min_pixels", 1, 1u << 30);
  hp.max_pixels = u32("clip.vision.image_max_pixels", 1, 1u << 30);
  if (hp.min_pixels > hp.max_pixels)
    fail("{}: image_min_pixels {} is above image_max_pixels {}", f_.path(), hp.min_pixels, hp.max_pixels);
  const gguf::Value* eps = f_.find("clip.vision.attention.layer_norm_epsilon");
  if (!eps || !(eps->is_float() || eps->is_integer()) || !(eps->as_float() > 0) || !(eps->as_float() < 1))
    fail("{}: clip.vision.attention.layer_norm_epsilon is missing or not in (0, 1)", f_.path());
  hp.eps = static_cast<float>(eps->as_float());
  floats3("clip.vision.image_mean", hp.mean);
  floats3("clip.vision.image_std", hp.std);
  for (float s : hp.std)
    if (!(std::fabs(s) > 1e-12f)) fail("{}: clip.vision.image_std has a zero", f_.path());
}

void TowerBinder::weights() {
  TowerHparams& hp = t_.hp_;
  const int64_t n = hp.n_embd, p = hp.patch, D = hp.qkv_width(), ff = hp.n_ff;
  t_.patch_embd = matrix("v.patch_embd.weight", 3 * p * p, n, {p, p, 3, n});
  t_.patch_bias = vec("v.patch_embd.bias", {n}, false);
  const gguf::TensorInfo* pos = f_.tensor("v.position_embd.weight");
  if (!pos) fail("{}: tensor 'v.position_embd.weight' is missing", f_.path());
  if (pos->dim(1) < 1 || pos->dim(2) < 1 || pos->dim(1) > kMaxGrid || pos->dim(2) > kMaxGrid)
    fail("{}: tensor 'v.position_embd.weight' has shape {}, expected [{}, W, H] with 1 ≤ W, H ≤ {}",
         f_.path(), pos->shape_string(), n, kMaxGrid);
  hp.grid_w = static_cast<uint32_t>(pos->dim(1));
  hp.grid_h = static_cast<uint32_t>(pos->dim(2));
  t_.pos_grid = vec("v.position_embd.weight", {n, hp.grid_w, hp.grid_h});
  t_.layers.resize(hp.n_layer);
  for (uint32_t il = 0; il < hp.n_layer; ++il) {
    const std::string b = fmt::format("v.blk.{}.", il);
    TowerLayer& l = t_.layers[il];
    l.qkv = matrix(b + "attn_qkv.weight", n, 3 * D);
    l.out = matrix(b + "attn_out.weight", D, n);
    l.up = matrix(b + "ffn_up.weight", n, ff);
    l.down = matrix(b + "ffn_down.weight", ff, n);
    l.ln1 = vec(b + "ln1.weight", {n});
    l.ln2 = vec(b + "ln2.weight", {n});
    l.qkv_b = vec(b + "attn_qkv.bias", {3 * D}, false);
    l.out_b = vec(b + "attn_out.bias", {n}, false);
    l.up_b = vec(b + "ffn_up.bias", {ff}, false);
    l.down_b = vec(b + "ffn_down.bias", {n}, false);
    for (const char* sep : {"attn_q.weight", "ffn_gate.weight", "ln1.bias", "ln2.bias"})
      if (f_.tensor(b + sep))
        fail("{}: tensor '{}' is not part of the Kimi-K3 tower (fused QKV, no gate, RMSNorm without bias)",
             f_.path(), b + sep);
  }
  t_.post_ln = vec("v.post_ln.weight", {n}, false);
  const gguf::TensorInfo* m1 = f_.tensor("mm.1.weight");
  const gguf::TensorInfo* m2 = f_.tensor("mm.2.weight");
  if (!m1 || !m2) fail("{}: projector tensor '{}' is missing", f_.path(), m1 ? "mm.2.weight" : "mm.1.weight");
  hp.proj_ff = static_cast<uint32_t>(m1->dim(1));
  hp.proj_dim = static_cast<uint32_t>(m2->dim(1));
  if (hp.proj_ff < 1 || hp.proj_ff > 8 * kMaxWidth || hp.proj_dim < 1 || hp.proj_dim > 8 * kMaxWidth)
    fail("{}: projector shapes {} and {} are out of range", f_.path(), m1->shape_string(),
         m2->shape_string());
  const int64_t merged = int64_t{hp.merge} * hp.merge * n;
  t_.mm1 = matrix("mm.1.weight", merged, hp.proj_ff);
  t_.mm2 = matrix("mm.2.weight", hp.proj_ff, hp.proj_dim);
  t_.mm_post_norm = vec("mm.post_norm.weight", {hp.proj_dim});
  if (const gguf::Value* pd = f_.find("clip.vision.projection_dim");
      pd && pd->is_integer() && pd->as_int() != hp.proj_dim)
    fail("{}: clip.vision.projection_dim = {} but mm.2.weight has {} rows", f_.path(), pd->as_int(),
         hp.proj_dim);
}

Tower::~Tower() = default;

std::unique_ptr<Tower> Tower::open(const std::string& path) {
  std::unique_ptr<Tower> t(new Tower());
  t->file_ = gguf::GgufFile::open(path);
  t->path_ = path;
  TowerBinder b(*t, *t->file_);
  b.hparams();
  b.weights();
  return t;
}

}  // namespace k3::vision
