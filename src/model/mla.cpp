// model/mla: the gated, NoPE, absorbed multi-head latent attention layer (docs/MODEL.md). The
// cache holds one row of [rmsnorm(c_kv) ‖ k_pe] (C+R values) per token; queries are absorbed
// into the latent space per head (Kb), attend over the rows, and the latent result is
// decompressed per head (Vb).
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/attn.h"
#include "model/hparams.h"
#include "model/layers.h"
#include "model/model.h"
#include "model/ops.h"
#include "model/sequence_state.h"
#include "quant/codec.h"

namespace k3::model {
namespace {

void append_row(MlaLayerCache& c, CacheType type, const float* row, int64_t width, int64_t max_rows) {
  // Reserve the whole context at the first row (sequence_state.h: set_max_rows).
  const size_t full = max_rows > 0 ? static_cast<size_t>(max_rows) * static_cast<size_t>(width) : 0;
  if (type == CacheType::F32) {
    if (c.f32.capacity() < full) c.f32.reserve(full);
    c.f32.insert(c.f32.end(), row, row + width);
  } else {
    if (c.f16.capacity() < full) c.f16.reserve(full);
    for (int64_t i = 0; i < width; ++i) c.f16.push_back(quant::fp32_to_fp16(row[i]));
  }
}

// Pointer to cache rows s..s+m-1 as floats, `width` apart (converting into buf, m rows long,
// for an F16 cache).
const float* cache_rows(const MlaLayerCache& c, CacheType type, int64_t s, int64_t m, int64_t width,
                        float* buf) {
  if (type == CacheType::F32) return c.f32.data() + s * width;
  kernels::f16_to_f32_row(c.f16.data() + s * width, buf, m * width);
  return buf;
}

// y[t][h] = W[h] · x[t][h] for every head h of a per-head-stacked weight (rows_h rows each),
// all heads in one dispatch (per-head products are small at decode). x rows hold H slices of
// x_w floats, y rows H slices of rows_h.
void per_head_matmul(const ops::Matmul& mm, const kernels::WeightView& w, int64_t rows_h, int64_t H,
                     int64_t n, const float* x, int64_t x_w, float* y) {
  std::vector<kernels::MatmulJob> jobs(static_cast<size_t>(H));
  for (int64_t h = 0; h < H; ++h) {
    kernels::MatmulJob& j = jobs[h];
    j.w = w;
    j.w.data = w.row(h * rows_h);
    j.w.rows = rows_h;
    j.x = x + h * x_w;
    j.n_tok = n;
    j.y = y + h * rows_h;
    j.x_stride = H * x_w;
    j.y_stride = H * rows_h;
  }
  mm.batch(jobs);
}

}  // namespace

void mla_forward(const BatchCtx& b, uint32_t il, const float* xn, float* out) {
  const HParams& hp = b.model.hparams();
  const MlaWeights& w = b.model.weights().layers[il].mla;
  const int64_t n = b.n, H = hp.n_head, C = hp.kv_lora_rank, R = hp.n_rot, N = hp.qk_nope(),
                Vh = hp.n_embd_head_v_mla, QW = N + R, RW = C + R;
  const float eps = hp.rms_eps;
  ThreadPool* pool = b.pool;

  // The products of the normed input in one dispatch: the query projection (or q-LoRA's
  // down half), the latent cache row and the output gate.
  std::vector<float> qf(static_cast<size_t>(n * H * QW)), qa;
  std::vector<float> ckv(static_cast<size_t>(n * RW));
  std::vector<float> gate;
  {
    if (w.q_lora) qa.resize(static_cast<size_t>(n * hp.q_lora_rank));
    std::vector<kernels::MatmulJob> jobs{
        {.w = w.q_lora ? w.q_a : w.q, .x = xn, .n_tok = n, .y = w.q_lora ? qa.data() : qf.data()},
        {.w = w.kv_a, .x = xn, .n_tok = n, .y = ckv.data()}};
    if (w.has_gate) {
      gate.resize(static_cast<size_t>(n * H * Vh));
      jobs.push_back({.w = w.gate, .x = xn, .n_tok = n, .y = gate.data()});
    }
    b.mm.batch(jobs);
  }
  if (w.q_lora) {
    const int64_t Q = hp.q_lora_rank;
    ops::rmsnorm_rows(qa.data(), qa.data(), n, Q, w.q_a_norm.data(), eps, Q, Q);
    b.mm(w.q_b, qa.data(), n, qf.data());
  }

  // Cache rows for the new tokens: normed latent, then the raw (un-rotated) k_pe.
  ops::rmsnorm_rows(ckv.data(), ckv.data(), n, C, w.kv_a_norm.data(), eps, RW, RW);
  for (const SeqGroup& g : b.groups) {
    MlaLayerCache& cache = g.st->mla()[il];
    for (int64_t r : g.idx) append_row(cache, g.st->cache_type(), ckv.data() + r * RW, RW, g.st->max_rows());
  }

  // Absorb q_nope into the latent space: qa[t][h] = Kb[h] · q_nope[t][h].
  std::vector<float> qabs(static_cast<size_t>(n * H * C));
  per_head_matmul(b.mm, w.k_b, C, H, n, qf.data(), QW, qabs.data());

  // Attention over this sequence's rows 0..pos, one task per (token, head).
  struct TokRef {
    const SeqGroup* g;
    int64_t pos;
  };
  std::vector<TokRef> tok(static_cast<size_t>(n));
  for (const SeqGroup& g : b.groups)
    for (size_t r = 0; r < g.idx.size(); ++r) tok[g.idx[r]] = {&g, g.base + static_cast<int64_t>(r)};
  const double scale = 1.0 / std::sqrt(static_cast<double>(QW));
  std::vector<float> obar(static_cast<size_t>(n * H * C));
  // One task per (token, block of up to kHeadBlock heads): each cache row is read (and, for an
  // F16 cache, converted) once per pass for the whole block instead of once per head — at long
  // context the cache is the dominant traffic of decode. Per head the arithmetic and its order
  // are those of the one-head loop.
  // Precision: the score dots and the weighted row sums run in float with several lanes
  // (kernels/attn.h: at double precision with conversions they ran at ~1.5 GB/s of cache, 92 %
  // of MLA's decode time at 4096 tokens); the softmax stays in double, and the row sums are
  // folded into double every kFoldRows rows, so no value sees more than kFoldRows float adds.
  // The weighted row sums go kRowBlock rows at a time (a divisor of kFoldRows, so the folds
  // fall where they did row by row): each head's sum stays in registers across the block's rows
  // (kernels::axpy_rows_f32, the same fused multiply-adds in the same order), the block's rows
  // staying in L2 for the block's heads; an F16 cache's block is converted once.
  constexpr int64_t kHeadBlock = 8, kFoldRows = 256, kRowBlock = 64;
  static_assert(kFoldRows % kRowBlock == 0);
  const int64_t HB = std::min(H, kHeadBlock), n_hblk = (H + HB - 1) / HB;
  auto attend = [&](int64_t t0, int64_t t1, int) {
    std::vector<double> score, acc(static_cast<size_t>(HB * C)), sum(static_cast<size_t>(HB));
    std::vector<float> part(static_cast<size_t>(HB * C), 0.0f);
    std::vector<float> buf(static_cast<size_t>(RW));
    std::vector<float> alpha(static_cast<size_t>(kRowBlock * HB));
    std::vector<float> rows_f32;  // an F16 cache's block of rows, converted
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t t = task / n_hblk, h0 = (task % n_hblk) * HB, nh = std::min(HB, H - h0);
      const TokRef& tr = tok[t];
      const MlaLayerCache& cache = tr.g->st->mla()[il];
      const CacheType ct = tr.g->st->cache_type();
      const int64_t ns = tr.pos + 1;
      score.resize(static_cast<size_t>(ns * HB));  // [s][head in block]
      for (int64_t s = 0; s < ns; ++s) {
        const float* row = cache_rows(cache, ct, s, 1, RW, buf.data());
        for (int64_t j = 0; j < nh; ++j) {
          const float* qa = qabs.data() + (t * H + h0 + j) * C;
          const float* qpe = qf.data() + t * H * QW + (h0 + j) * QW + N;
          score[s * HB + j] = (static_cast<double>(kernels::dot_f32(qa, row, C)) +
                               static_cast<double>(kernels::dot_f32(qpe, row + C, R))) *
                              scale;
        }
      }
      for (int64_t j = 0; j < nh; ++j) {
        double mx = -INFINITY, sm = 0.0;
        for (int64_t s = 0; s < ns; ++s) mx = std::max(mx, score[s * HB + j]);
        for (int64_t s = 0; s < ns; ++s) sm += (score[s * HB + j] = std::exp(score[s * HB + j] - mx));
        sum[j] = sm;
      }
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t s0 = 0; s0 < ns; s0 += kRowBlock) {
        const int64_t m = std::min(kRowBlock, ns - s0);
        if (ct != CacheType::F32) rows_f32.resize(static_cast<size_t>(kRowBlock * RW));
        const float* rows = cache_rows(cache, ct, s0, m, RW, rows_f32.data());
        for (int64_t s = 0; s < m; ++s)
          for (int64_t j = 0; j < nh; ++j)
            alpha[s * HB + j] = static_cast<float>(score[(s0 + s) * HB + j] / sum[j]);
        for (int64_t j = 0; j < nh; ++j)
          kernels::axpy_rows_f32(alpha.data() + j, HB, rows, RW, m, part.data() + j * C, C);
        if ((s0 + m) % kFoldRows == 0 || s0 + m == ns)
          kernels::add_f32_to_f64(part.data(), acc.data(), nh * C);
      }
      for (int64_t j = 0; j < nh; ++j) {
        float* ob = obar.data() + (t * H + h0 + j) * C;
        for (int64_t c = 0; c < C; ++c) ob[c] = static_cast<float>(acc[j * C + c]);
      }
    }
  };
  parallel_for(pool, n * n_hblk, attend, 1);

  // Decompress per head: o[t][h] = Vb[h] · ō[t][h]; then the sigmoid gate and o_proj.
  std::vector<float> o(static_cast<size_t>(n * H * Vh));
  per_head_matmul(b.mm, w.v_b, Vh, H, n, obar.data(), C, o.data());
  if (w.has_gate) {
    for (size_t i = 0; i < o.size(); ++i)
      o[i] = static_cast<float>(o[i] * static_cast<double>(ops::sigmoid(gate[i])));
  }
  b.mm(w.out, o.data(), n, out);
}

}  // namespace k3::model
