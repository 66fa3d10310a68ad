#include "vision/encode.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/norms.h"
#include "vision/attention.h"

namespace k3::vision {

namespace {

void for_rows(ThreadPool* pool, int64_t n, const ThreadPool::RangeFn& fn, int64_t grain = 1) {
  if (pool) pool->parallel_for(n, fn, grain);
  else fn(0, n, 0);
}

void add_bias(float* y, int64_t rows, const std::vector<float>& b) {
  if (b.empty()) return;
  const int64_t n = static_cast<int64_t>(b.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i) y[r * n + i] += b[i];
}

// The tanh form of GELU (the tower's gelu_pytorch_tanh), in double, in place.
void gelu_tanh(float* x, int64_t n, ThreadPool* pool) {
  const double k = std::sqrt(2.0 / M_PI);
  for_rows(
      pool, n,
      [&](int64_t b, int64_t e, int) {
        for (int64_t i = b; i < e; ++i) {
          const double v = x[i];
          x[i] = static_cast<float>(0.5 * v * (1.0 + std::tanh(k * (v + 0.044715 * v * v * v))));
        }
      },
      4096);
}

// The learned grid, bilinearly resized to gh × gw (half-pixel centres, edges clamped), added
// to every patch.
void add_positions(const Tower& t, int64_t gh, int64_t gw, float* x) {
  const TowerHparams& hp = t.hp();
  const int64_t n = hp.n_embd, oh = hp.grid_h, ow = hp.grid_w;
  struct Tap {
    int64_t i0, i1;
    double f;
  };
  const auto taps = [](int64_t n_out, int64_t n_in) {
    std::vector<Tap> v(static_cast<size_t>(n_out));
    for (int64_t i = 0; i < n_out; ++i) {
      const double c =
          (static_cast<double>(i) + 0.5) * static_cast<double>(n_in) / static_cast<double>(n_out) - 0.5;
      const int64_t i0 = std::clamp<int64_t>(static_cast<int64_t>(std::floor(c)), 0, n_in - 1);
      v[i] = {i0, std::min(i0 + 1, n_in - 1), std::clamp(c - static_cast<double>(i0), 0.0, 1.0)};
    }
    return v;
  };
  const bool same = gh == oh && gw == ow;
  const std::vector<Tap> ty = taps(gh, oh), tx = taps(gw, ow);
  const float* g = t.pos_grid.data();
  for (int64_t y = 0; y < gh; ++y)
    for (int64_t xx = 0; xx < gw; ++xx) {
      float* row = x + (y * gw + xx) * n;
      if (same) {
        for (int64_t c = 0; c < n; ++c) row[c] += g[(y * ow + xx) * n + c];
        continue;
      }
      const Tap a = ty[y], b = tx[xx];
      const float *p00 = g + (a.i0 * ow + b.i0) * n, *p01 = g + (a.i0 * ow + b.i1) * n;
      const float *p10 = g + (a.i1 * ow + b.i0) * n, *p11 = g + (a.i1 * ow + b.i1) * n;
      for (int64_t c = 0; c < n; ++c)
        row[c] += static_cast<float>(p00[c] * (1 - b.f) * (1 - a.f) + p01[c] * b.f * (1 - a.f) +
                                     p10[c] * (1 - b.f) * a.f + p11[c] * b.f * a.f);
    }
}

struct Buffers {
  std::vector<float> xn, qkv, attn, proj, ff;
};

void encoder_block(const TowerLayer& l, const TowerHparams& hp, int64_t n_pos, int64_t gw, float* x,
                   Buffers& b, ThreadPool* pool) {
  const int64_t n = hp.n_embd, ff = hp.n_ff;
  kernels::rmsnorm_rows(x, b.xn.data(), n_pos, n, l.ln1.data(), hp.eps, n, n);
  kernels::matmul(l.qkv, b.xn.data(), n_pos, b.qkv.data(), pool);
  add_bias(b.qkv.data(), n_pos, l.qkv_b);
  rope2d(b.qkv.data(), n_pos, gw, hp.n_head, hp.head_dim, hp.rope_theta, pool);
  attend(b.qkv.data(), n_pos, hp.n_head, hp.head_dim, b.attn.data(), pool);
  kernels::matmul(l.out, b.attn.data(), n_pos, b.proj.data(), pool);
  add_bias(b.proj.data(), n_pos, l.out_b);
  for (int64_t i = 0; i < n_pos * n; ++i) x[i] += b.proj[i];

  kernels::rmsnorm_rows(x, b.xn.data(), n_pos, n, l.ln2.data(), hp.eps, n, n);
  kernels::matmul(l.up, b.xn.data(), n_pos, b.ff.data(), pool);
  add_bias(b.ff.data(), n_pos, l.up_b);
  gelu_tanh(b.ff.data(), n_pos * ff, pool);
  kernels::matmul(l.down, b.ff.data(), n_pos, b.proj.data(), pool);
  add_bias(b.proj.data(), n_pos, l.down_b);
  for (int64_t i = 0; i < n_pos * n; ++i) x[i] += b.proj[i];
}

// m×m neighbours become one row: row (Y, X) holds, for dy then dx, the n features of patch
// (Y·m + dy, X·m + dx); patches past the grid's edge are zeros.
std::vector<float> merge_patches(const float* x, int64_t gh, int64_t gw, int64_t m, int64_t n, int64_t& GH,
                                 int64_t& GW) {
  GH = (gh + m - 1) / m;
  GW = (gw + m - 1) / m;
  std::vector<float> out(static_cast<size_t>(GH * GW * m * m * n), 0.0f);
  for (int64_t Y = 0; Y < GH; ++Y)
    for (int64_t X = 0; X < GW; ++X)
      for (int64_t dy = 0; dy < m; ++dy)
        for (int64_t dx = 0; dx < m; ++dx) {
          const int64_t y = Y * m + dy, xx = X * m + dx;
          if (y >= gh || xx >= gw) continue;
          std::copy(x + (y * gw + xx) * n, x + (y * gw + xx + 1) * n,
                    out.data() + ((Y * GW + X) * m * m + dy * m + dx) * n);
        }
  return out;
}

}  // namespace

ImageSize input_size(const Tower& t, ImageSize original) {
  const TowerHparams& hp = t.hp();
  return target_size(original, hp.align(), hp.min_pixels, hp.max_pixels);
}

int64_t image_tokens(const Tower& t, ImageSize original) {
  const ImageSize s = input_size(t, original);
  const int64_t a = t.hp().align();
  return ((s.width + a - 1) / a) * ((s.height + a - 1) / a);
}

ImageEmbedding embed_image(const Tower& t, RgbView img, ThreadPool* pool) {
  const TowerHparams& hp = t.hp();
  if (img.width < 1 || img.height < 1) fail("image: empty ({}×{} pixels)", img.width, img.height);
  const ImageSize box = input_size(t, {img.width, img.height});
  const int64_t p = hp.patch, gw = box.width / p, gh = box.height / p, n_pos = gw * gh, n = hp.n_embd;
  if (gw < 1 || gh < 1 || n_pos > kMaxPatches)
    fail("image: {}×{} becomes {}×{} patches, outside 1…{} (the tower's image_max_pixels is {})", img.width,
         img.height, gw, gh, kMaxPatches, hp.max_pixels);
  const RgbImage fitted = fit_into(img, box);
  const std::vector<float> patches = patchify(fitted.view(), hp);

  std::vector<float> x(static_cast<size_t>(n_pos * n));
  kernels::matmul(t.patch_embd, patches.data(), n_pos, x.data(), pool);
  add_bias(x.data(), n_pos, t.patch_bias);
  add_positions(t, gh, gw, x.data());

  Buffers b;
  b.xn.resize(x.size());
  b.qkv.resize(static_cast<size_t>(n_pos * 3 * hp.qkv_width()));
  b.attn.resize(static_cast<size_t>(n_pos * hp.qkv_width()));
  b.proj.resize(x.size());
  b.ff.resize(static_cast<size_t>(n_pos * hp.n_ff));
  for (const TowerLayer& l : t.layers) encoder_block(l, hp, n_pos, gw, x.data(), b, pool);
  b = {};
  if (!t.post_ln.empty()) kernels::rmsnorm_rows(x.data(), x.data(), n_pos, n, t.post_ln.data(), hp.eps, n, n);

  ImageEmbedding e;
  const std::vector<float> merged = merge_patches(x.data(), gh, gw, hp.merge, n, e.grid_h, e.grid_w);
  e.n_tokens = e.grid_h * e.grid_w;
  e.n_embd = hp.proj_dim;
  e.input_w = box.width;
  e.input_h = box.height;
  std::vector<float> hidden(static_cast<size_t>(e.n_tokens * hp.proj_ff));
  kernels::matmul(t.mm1, merged.data(), e.n_tokens, hidden.data(), pool);
  gelu_tanh(hidden.data(), e.n_tokens * hp.proj_ff, pool);
  e.data.resize(static_cast<size_t>(e.n_tokens * e.n_embd));
  kernels::matmul(t.mm2, hidden.data(), e.n_tokens, e.data.data(), pool);
  kernels::rmsnorm_rows(e.data.data(), e.data.data(), e.n_tokens, e.n_embd, t.mm_post_norm.data(), hp.eps,
                        e.n_embd, e.n_embd);
  return e;
}

}  // namespace k3::vision
