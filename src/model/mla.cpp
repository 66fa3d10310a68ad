// model/mla: the gated, NoPE, absorbed multi-head latent attention layer (docs/MODEL.md). The
// cache holds one row of [rmsnorm(c_kv) ‖ k_pe] (C+R values) per token; queries are absorbed
// into the latent space per head (Kb), attend over the rows, and the latent result is
// decompressed per head (Vb).
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/assert.h"
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
// x_w floats, y rows H slices of rows_h. `jobs` is the caller's, reused.
void per_head_matmul(const ops::Matmul& mm, const kernels::WeightView& w, int64_t rows_h, int64_t H,
                     int64_t n, const float* x, int64_t x_w, float* y,
                     std::vector<kernels::MatmulJob>& jobs) {
  jobs.resize(static_cast<size_t>(H));
  for (int64_t h = 0; h < H; ++h) {
    kernels::MatmulJob& j = jobs[h];
    j = {};
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

// Attention of one token over its sequence's cache rows 0..pos, for a block of up to
// kHeadBlock heads at once: each cache row is read (and, for an F16 cache, converted) once for
// the block instead of once per head. Per head, the arithmetic and its order are those of the
// one-head definition. Scores and weighted row sums run in float lanes (kernels/attn.h); the
// softmax is in double, and each head's float row sum is folded into a double total every
// kFoldRows rows, so no value sees more than kFoldRows float additions (bench/RESULTS.md,
// "MLA attention at depth", has the measurements behind this split).
struct Attention {
  static constexpr int64_t kHeadBlock = 8, kFoldRows = 256, kRowBlock = 64;
  static_assert(kFoldRows % kRowBlock == 0, "folds must fall on row-block ends");

  uint32_t il;
  int64_t H, C, R, N, QW, RW;
  double scale;                  // 1 / sqrt(QW)
  const float* qabs;             // [t][h][C]: absorbed q_nope
  const float* qf;               // [t][h][QW]: q, its rope part at N
  const Scratch::MlaToken* tok;  // each token's sequence and position
  float* obar;                   // [t][h][C]: the latent results

  int64_t block() const { return std::min(H, kHeadBlock); }

  // A thread's temporaries for sequences of up to `rows` tokens (the whole context, so that
  // decoding further allocates nothing), with room for an F16 cache's rows when `f16`.
  void reserve(Scratch::MlaThread& t, int64_t rows, bool f16) const {
    const int64_t HB = block();
    reserve_at_least(t.score, static_cast<size_t>(rows * HB));
    reserve_at_least(t.acc, static_cast<size_t>(HB * C));
    reserve_at_least(t.sum, static_cast<size_t>(HB));
    reserve_at_least(t.part, static_cast<size_t>(HB * C));
    reserve_at_least(t.row, static_cast<size_t>(RW));
    reserve_at_least(t.alpha, static_cast<size_t>(kRowBlock * HB));
    if (f16) reserve_at_least(t.rows_f32, static_cast<size_t>(kRowBlock * RW));
  }
  int64_t n_blocks() const { return (H + block() - 1) / block(); }

  void run(int64_t t, int64_t h0, Scratch::MlaThread& tmp) const {
    const int64_t HB = block(), nh = std::min(HB, H - h0);
    const Scratch::MlaToken& tr = tok[t];
    const MlaLayerCache& cache = tr.g->st->mla()[il];
    const CacheType ct = tr.g->st->cache_type();
    const int64_t ns = tr.pos + 1;
    K3_DEBUG_ASSERT(ns * RW <= static_cast<int64_t>(cache.f32.size() + cache.f16.size()),
                    "a row past the cache");
    K3_DEBUG_ASSERT(tmp.score.size() >= static_cast<size_t>(ns * block()));
    // Sized by reserve() before the dispatch.
    double *score = tmp.score.data(), *acc = tmp.acc.data(), *sum = tmp.sum.data();  // score: [s][head]
    float *part = tmp.part.data(), *buf = tmp.row.data(), *alpha = tmp.alpha.data();
    float* rows_f32 = tmp.rows_f32.data();
    for (int64_t s = 0; s < ns; ++s) {
      const float* row = cache_rows(cache, ct, s, 1, RW, buf);
      for (int64_t j = 0; j < nh; ++j) {
        const float* qa = qabs + (t * H + h0 + j) * C;
        const float* qpe = qf + t * H * QW + (h0 + j) * QW + N;
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
    std::fill(acc, acc + HB * C, 0.0);
    std::fill(part, part + HB * C, 0.0f);
    for (int64_t s0 = 0; s0 < ns; s0 += kRowBlock) {
      const int64_t m = std::min(kRowBlock, ns - s0);
      const float* rows = cache_rows(cache, ct, s0, m, RW, rows_f32);
      for (int64_t s = 0; s < m; ++s)
        for (int64_t j = 0; j < nh; ++j)
          alpha[s * HB + j] = static_cast<float>(score[(s0 + s) * HB + j] / sum[j]);
      for (int64_t j = 0; j < nh; ++j) kernels::axpy_rows_f32(alpha + j, HB, rows, RW, m, part + j * C, C);
      if ((s0 + m) % kFoldRows == 0 || s0 + m == ns) kernels::add_f32_to_f64(part, acc, nh * C);
    }
    for (int64_t j = 0; j < nh; ++j) {
      float* ob = obar + (t * H + h0 + j) * C;
      for (int64_t c = 0; c < C; ++c) ob[c] = static_cast<float>(acc[j * C + c]);
    }
  }
};

}  // namespace

void mla_forward(const BatchCtx& b, uint32_t il, const float* xn, float* out) {
  const HParams& hp = b.model.hparams();
  const MlaWeights& w = b.model.weights().layers[il].mla;
  const int64_t n = b.n, H = hp.n_head, C = hp.kv_lora_rank, R = hp.n_rot, N = hp.qk_nope(),
                Vh = hp.n_embd_head_v_mla, QW = N + R, RW = C + R;
  const float eps = hp.rms_eps;
  Scratch::Mla& sc = b.scratch.mla;

  // The products of the normed input in one dispatch: the query projection (or q-LoRA's
  // down half), the latent cache row and the output gate.
  float* qf = reserve_at_least(sc.qf, static_cast<size_t>(n * H * QW));
  float* qa = w.q_lora ? reserve_at_least(sc.qa, static_cast<size_t>(n * hp.q_lora_rank)) : nullptr;
  float* ckv = reserve_at_least(sc.ckv, static_cast<size_t>(n * RW));
  float* gate = w.has_gate ? reserve_at_least(sc.gate, static_cast<size_t>(n * H * Vh)) : nullptr;
  sc.jobs.clear();
  sc.jobs.push_back({.w = w.q_lora ? w.q_a : w.q, .x = xn, .n_tok = n, .y = w.q_lora ? qa : qf});
  sc.jobs.push_back({.w = w.kv_a, .x = xn, .n_tok = n, .y = ckv});
  if (w.has_gate) sc.jobs.push_back({.w = w.gate, .x = xn, .n_tok = n, .y = gate});
  b.mm.batch(sc.jobs);
  if (w.q_lora) {
    const int64_t Q = hp.q_lora_rank;
    ops::rmsnorm_rows(qa, qa, n, Q, w.q_a_norm.data(), eps, Q, Q);
    b.mm(w.q_b, qa, n, qf);
  }

  // Cache rows for the new tokens: normed latent, then the raw (un-rotated) k_pe.
  ops::rmsnorm_rows(ckv, ckv, n, C, w.kv_a_norm.data(), eps, RW, RW);
  for (const SeqGroup& g : b.groups) {
    MlaLayerCache& cache = g.st->mla()[il];
    for (int64_t r : g.idx) append_row(cache, g.st->cache_type(), ckv + r * RW, RW, g.st->max_rows());
  }

  // Absorb q_nope into the latent space: qabs[t][h] = Kb[h] · q_nope[t][h].
  float* qabs = reserve_at_least(sc.qabs, static_cast<size_t>(n * H * C));
  per_head_matmul(b.mm, w.k_b, C, H, n, qf, QW, qabs, sc.jobs);

  // Attention over each token's sequence rows 0..pos, one task per (token, block of heads).
  Scratch::MlaToken* tok = reserve_at_least(sc.tok, static_cast<size_t>(n));
  for (const SeqGroup& g : b.groups)
    for (size_t r = 0; r < g.idx.size(); ++r) tok[g.idx[r]] = {&g, g.base + static_cast<int64_t>(r)};
  float* obar = reserve_at_least(sc.obar, static_cast<size_t>(n * H * C));
  const Attention attn{il, H, C, R, N, QW, RW, 1.0 / std::sqrt(static_cast<double>(QW)), qabs, qf, tok, obar};
  const int64_t n_hblk = attn.n_blocks(), HB = attn.block();
  // Every thread's temporaries sized here, not by the tasks it happens to run, so the memory
  // held does not depend on scheduling.
  const size_t n_threads = b.pool ? static_cast<size_t>(b.pool->size()) : 1;
  if (sc.threads.size() < n_threads) sc.threads.resize(n_threads);
  int64_t rows = 1;
  bool f16 = false;
  for (const SeqGroup& g : b.groups) {
    rows = std::max({rows, g.base + static_cast<int64_t>(g.idx.size()), g.st->max_rows()});
    f16 = f16 || g.st->cache_type() != CacheType::F32;
  }
  for (Scratch::MlaThread& t : sc.threads) attn.reserve(t, rows, f16);
  parallel_for(
      b.pool, n * n_hblk,
      [&](int64_t t0, int64_t t1, int thread) {
        for (int64_t task = t0; task < t1; ++task)
          attn.run(task / n_hblk, (task % n_hblk) * HB, sc.threads[static_cast<size_t>(thread)]);
      },
      1);

  // Decompress per head: o[t][h] = Vb[h] · ō[t][h]; then the sigmoid gate and o_proj.
  const size_t n_o = static_cast<size_t>(n * H * Vh);
  float* o = reserve_at_least(sc.o, n_o);
  per_head_matmul(b.mm, w.v_b, Vh, H, n, obar, C, o, sc.jobs);
  if (w.has_gate)
    for (size_t i = 0; i < n_o; ++i)
      o[i] = static_cast<float>(o[i] * static_cast<double>(ops::sigmoid(gate[i])));
  b.mm(w.out, o, n, out);
}

uint64_t mla_thread_bytes(const HParams& hp, int64_t n_ctx) {
  const uint64_t HB = static_cast<uint64_t>(std::min<int64_t>(hp.n_head, Attention::kHeadBlock));
  const uint64_t C = static_cast<uint64_t>(hp.kv_lora_rank), RW = C + static_cast<uint64_t>(hp.n_rot);
  const uint64_t rows = static_cast<uint64_t>(std::max<int64_t>(n_ctx, 1));
  const uint64_t doubles = rows * HB + HB * C + HB;
  const uint64_t floats = HB * C + RW + Attention::kRowBlock * (HB + RW);
  return doubles * sizeof(double) + floats * sizeof(float);
}

}  // namespace k3::model
