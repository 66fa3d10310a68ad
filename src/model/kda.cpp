// model/kda: the Kimi Delta Attention layer (docs/MODEL.md): projections, causal short conv
// with carried state, L2-normed q/k, per-channel decay gate, delta-rule recurrence (chunked for
// multi-token prefill, token-by-token otherwise), per-head output norm and sigmoid gate.
// After the products, everything a head does is one pipeline (HeadPipeline::run) applied to
// each (sequence, head) in one dispatch, for decode and prefill alike. Working memory comes
// from Scratch::kda: nothing is allocated per call once a batch size has been seen.
#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "core/assert.h"
#include "core/thread_pool.h"
#include "kernels/kda.h"
#include "kernels/reduce.h"
#include "model/hparams.h"
#include "model/layers.h"
#include "model/model.h"
#include "model/ops.h"
#include "model/sequence_state.h"

namespace k3::model {
namespace {

constexpr int64_t kChunk = 16;  // llama.cpp's chunk size for per-channel (key-index) gates

// Depthwise causal conv over [state ‖ new tokens] for the tokens of one sequence, then SiLU,
// in place on channels [c0, c1) of the q, k and v projections (channel c is y[c / Di]'s
// c % Di; rows of Di, batch order). state: 3 × Di × (K-1), oldest first; win: room for K-1+n
// floats. In place is safe: a channel's inputs are all copied into its window before any of
// its outputs is written.
void conv_silu_channels(float* const y[3], const std::vector<int64_t>& idx, float* state,
                        const std::vector<float>* const w[3], int64_t Di, int64_t K, int64_t c0, int64_t c1,
                        float* win) {
  const int64_t n = static_cast<int64_t>(idx.size()), K1 = K - 1;
  for (int64_t c = c0; c < c1; ++c) {
    float* p = y[c / Di];
    const int64_t ch = c % Di;
    float* st = state + c * K1;
    std::copy(st, st + K1, win);
    for (int64_t t = 0; t < n; ++t) win[K1 + t] = p[idx[t] * Di + ch];
    const float* wc = w[c / Di]->data() + ch * K;
    for (int64_t t = 0; t < n; ++t) {
      double acc = 0.0;
      for (int64_t j = 0; j < K; ++j) acc += static_cast<double>(wc[j]) * win[t + j];
      p[idx[t] * Di + ch] = ops::silu(acc);
    }
    std::copy(win + n, win + n + K1, st);
  }
}

struct HeadInputs {
  const float* q;  // rows of Di (scaled, normed)
  const float* k;
  const float* v;
  const float* g;     // log-decay, rows of Di
  const float* beta;  // rows of H
  float* o;           // rows of Di
  int64_t Di, H, D;

  // Token t's slice of head h in every input.
  struct Row {
    const float *q, *k, *v, *g;
    double beta;
    float* o;
  };
  Row at(int64_t t, int64_t h) const {
    const int64_t off = t * Di + h * D;
    return {q + off, k + off, v + off, g + off, beta[t * H + h], o + off};
  }
};

// Token-by-token delta rule on one head. S is [j][i] (i = key index fastest). The decay runs
// along i (the key axis); the trap variant (decay along j) exists for the golden tests only.
void recurrent_head_trap(const HeadInputs& in, const std::vector<int64_t>& idx, int64_t h, float* S) {
  const int64_t D = in.D;
  for (int64_t t : idx) {
    const auto [q, k, v, g, beta, o] = in.at(t, h);
    for (int64_t j = 0; j < D; ++j) {
      float* row = S + j * D;
      const double egj = std::exp(static_cast<double>(g[j]));
      double u = 0.0;
      for (int64_t i = 0; i < D; ++i) row[i] = static_cast<float>(row[i] * egj);
      for (int64_t i = 0; i < D; ++i) u += static_cast<double>(row[i]) * k[i];
      const double delta = (v[j] - u) * beta;
      double acc = 0.0;
      for (int64_t i = 0; i < D; ++i) {
        row[i] = static_cast<float>(row[i] + k[i] * delta);
        acc += static_cast<double>(row[i]) * q[i];
      }
      o[j] = static_cast<float>(acc);
    }
  }
}

// Per row j: decay and k-dot in one pass, then the rank-1 update and q-dot in a second
// (kernels/kda.h); the row (512 B at D = 128) stays in L1 between the passes. Each element is
// rounded to float exactly where the scalar definition rounds it.
void recurrent_head(const HeadInputs& in, const std::vector<int64_t>& idx, int64_t h, float* S,
                    Scratch::KdaThread& tmp) {
  const int64_t D = in.D;
  double *eg = tmp.eg.data(), *kd = tmp.kd.data(), *qd = tmp.qd.data();  // D each (reserve_fixed)
  for (int64_t t : idx) {
    const auto [q, k, v, g, beta, o] = in.at(t, h);
    for (int64_t i = 0; i < D; ++i) {
      eg[i] = std::exp(static_cast<double>(g[i]));
      kd[i] = k[i];
      qd[i] = q[i];
    }
    kernels::kda_token_step(S, D, eg, kd, qd, v, beta, o);
  }
}

// The chunked form (docs/MODEL.md, KDA), in double inside a chunk; S is [j][i] as above.
// exp(G_b − G_a) factors as e^{G_b}·e^{−G_a}, so a chunk needs one exp per (token, channel)
// instead of one per (token pair, channel). G is the cumulative log-decay from the chunk start
// (≤ 0), so both factors are finite unless a channel decays past e^−700 inside one chunk;
// such a chunk takes the direct pairwise exps.
void chunked_head(const HeadInputs& in, const std::vector<int64_t>& idx, int64_t h, float* S,
                  Scratch::KdaThread& tmp) {
  const int64_t D = in.D, n = static_cast<int64_t>(idx.size());
  const size_t DD = static_cast<size_t>(D * D);
  // All sized by reserve_fixed before the dispatch.
  double* Sd = tmp.state.data();
  std::copy(S, S + DD, Sd);
  double *q = tmp.q.data(), *k = tmp.k.data(), *v = tmp.v.data(), *G = tmp.G.data(), *U = tmp.U.data();
  double *W = tmp.W.data(), *Vp = tmp.Vp.data(), *eG = tmp.eG.data(), *Kp = tmp.Kp.data(),
         *Km = tmp.Km.data();
  double *Qp = tmp.Qp.data(), *beta = tmp.beta.data(), *vcol = tmp.vcol.data(), *ed = tmp.ed.data();
  double *Lm = tmp.Lm.data(), *P = tmp.P.data();
  for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
    const int64_t L = std::min(kChunk, n - c0);
    double gmin = 0.0;
    for (int64_t t = 0; t < L; ++t) {
      const int64_t r = idx[c0 + t];
      const HeadInputs::Row row = in.at(r, h);
      const float *qs = row.q, *ks = row.k, *vs = row.v, *gs = row.g;
      beta[t] = row.beta;
      for (int64_t i = 0; i < D; ++i) {
        q[t * D + i] = qs[i];
        k[t * D + i] = ks[i];
        v[t * D + i] = vs[i];
        G[t * D + i] = gs[i] + (t ? G[(t - 1) * D + i] : 0.0);
        gmin = std::min(gmin, G[t * D + i]);
      }
    }
    const bool factored = gmin > -700.0;
    for (int64_t t = 0; t < L * D; ++t) {
      eG[t] = std::exp(G[t]);
      Kp[t] = k[t] * eG[t];
      Qp[t] = q[t] * eG[t];
      Km[t] = factored ? k[t] / eG[t] : 0.0;
    }
    // Pairwise decayed products: Lm (strictly lower, × β_b) and P (lower incl. diagonal).
    for (int64_t b = 0; b < L; ++b) {
      for (int64_t a = 0; a <= b; ++a) {
        double kk = 0.0, qk = 0.0;
        if (factored) {
          kk = kernels::dot_f64(Kp + b * D, Km + a * D, D);
          qk = kernels::dot_f64(Qp + b * D, Km + a * D, D);
        } else {
          for (int64_t i = 0; i < D; ++i) {
            const double e = std::exp(G[b * D + i] - G[a * D + i]);
            kk += k[b * D + i] * k[a * D + i] * e;
            qk += q[b * D + i] * k[a * D + i] * e;
          }
        }
        Lm[b * kChunk + a] = beta[b] * kk;
        P[b * kChunk + a] = qk;
      }
    }
    // (I + L)·U = β⊙V and (I + L)·W = β⊙K⊙e^G by forward substitution.
    for (int64_t b = 0; b < L; ++b) {
      for (int64_t i = 0; i < D; ++i) {
        U[b * D + i] = beta[b] * v[b * D + i];
        W[b * D + i] = beta[b] * Kp[b * D + i];
      }
      for (int64_t a = 0; a < b; ++a) {
        const double l = Lm[b * kChunk + a];
        kernels::axmy_f64(l, U + a * D, U + b * D, D);
        kernels::axmy_f64(l, W + a * D, W + b * D, D);
      }
    }
    // V' = U − W·S; O = (Q⊙e^G)·S + P·V'.
    for (int64_t b = 0; b < L; ++b) {
      float* o = in.o + idx[c0 + b] * in.Di + h * D;
      const double* Wb = W + b * D;
      const double* Qb = Qp + b * D;
      for (int64_t j = 0; j < D; ++j) {
        double ws, qs;
        kernels::dot2_f64(Wb, Qb, Sd + j * D, D, &ws, &qs);
        Vp[b * D + j] = U[b * D + j] - ws;
        for (int64_t a = 0; a <= b; ++a) qs += P[b * kChunk + a] * Vp[a * D + j];
        o[j] = static_cast<float>(qs);
      }
    }
    // S ← Diag(e^{G_last})·S + Σ_t (k_t ⊙ e^{G_last − G_t}) ⊗ V'_t, one pass over each row.
    const double* Gl = G + (L - 1) * D;
    for (int64_t i = 0; i < D; ++i) ed[i] = eG[(L - 1) * D + i];
    for (int64_t t = 0; t < L; ++t)
      for (int64_t i = 0; i < D; ++i)  // reuse W as scratch
        W[t * D + i] = factored ? Km[t * D + i] * ed[i] : k[t * D + i] * std::exp(Gl[i] - G[t * D + i]);
    for (int64_t j = 0; j < D; ++j) {
      for (int64_t t = 0; t < L; ++t) vcol[t] = Vp[t * D + j];
      kernels::decay_rank_update_f64(Sd + j * D, ed, W, D, vcol, L, D);
    }
  }
  for (size_t x = 0; x < DD; ++x) S[x] = static_cast<float>(Sd[x]);
}

// The recurrence's temporaries do not depend on the batch: sized once for both forms, so that
// decode after prefill (or prefill after decode) allocates nothing.
void reserve_fixed(Scratch::KdaThread& t, int64_t D) {
  const size_t Dz = static_cast<size_t>(D), CD = static_cast<size_t>(kChunk * D), CC = kChunk * kChunk;
  if (t.state.size() >= Dz * Dz) return;
  for (auto* v : {&t.eg, &t.kd, &t.qd, &t.ed}) reserve_at_least(*v, Dz);
  reserve_at_least(t.state, Dz * Dz);
  for (auto* v : {&t.q, &t.k, &t.v, &t.G, &t.U, &t.W, &t.Vp, &t.eG, &t.Kp, &t.Km, &t.Qp})
    reserve_at_least(*v, CD);
  for (auto* v : {&t.beta, &t.vcol}) reserve_at_least(*v, static_cast<size_t>(kChunk));
  for (auto* v : {&t.Lm, &t.P}) reserve_at_least(*v, CC);
}

// q and k of one (token, head): L2-normed, q scaled by 1/√D.
void norm_qk(float* qh, float* kh, int64_t D, float eps) {
  const double qscale = 1.0 / std::sqrt(static_cast<double>(D));
  ops::l2norm(qh, D, eps);
  for (int64_t i = 0; i < D; ++i) qh[i] = static_cast<float>(qh[i] * qscale);
  ops::l2norm(kh, D, eps);
}

// One (token, head)'s per-channel log-decay, in place on the f_b projection (gh: D values).
void log_decay(const HParams& hp, const KdaWeights& w, int64_t h, float* gh) {
  const int64_t D = hp.kda_head_dim;
  const double A = -static_cast<double>(w.ssm_a[h]);  // exp(A_log) > 0
  for (int64_t d = 0; d < D; ++d) {
    const double a = static_cast<double>(gh[d]) + w.dt_bias[h * D + d];
    if (hp.kda_gate_lower_bound) gh[d] = static_cast<float>(*hp.kda_gate_lower_bound * ops::sigmoid(A * a));
    else gh[d] = static_cast<float>(-A * ops::softplus(a));
  }
}

// One (token, head)'s output: RMSNorm (the shared per-head weight), then the sigmoid gate.
void norm_gate_output(const KdaWeights& w, float eps, int64_t D, float* oh, const float* gh) {
  ops::rmsnorm_rows(oh, oh, 1, D, w.norm.data(), eps, D, D);
  for (int64_t c = 0; c < D; ++c)
    oh[c] = static_cast<float>(oh[c] * static_cast<double>(ops::sigmoid(gh[c])));
}

// Everything one head does after the products, for the tokens of one sequence: the conv of
// the head's q/k/v channels, then per token the q/k norms, the log-decay and β, then the
// recurrence (chunked for several tokens, token by token for one, or the trap's variant), then
// per token the output norm and gate. One task per (sequence, head): a layer takes one pool
// dispatch between its products, decode or prefill. Each value is computed by the same
// functions in the same order whatever the batch, so the modes agree bit for bit.
struct HeadPipeline {
  const HParams& hp;
  const KdaWeights& w;
  uint32_t il;
  float* const* qkv;                       // q, k, v projections (rows of Di)
  const std::vector<float>* const* convw;  // conv weights of q, k, v
  float* g;                                // f_b projection → log-decay
  float* beta;                             // rows of H: logits → β
  const float* gate;                       // output gate logits
  float* o;                                // rows of Di
  bool trap;                               // checks.kda_decay_on_value_axis

  void run(const SeqGroup& sg, int64_t h, Scratch::KdaThread& tmp) const {
    const int64_t H = hp.n_head, D = hp.kda_head_dim, Di = hp.kda_inner(), K = hp.ssm_conv_kernel;
    const size_t n = sg.idx.size();
    K3_DEBUG_ASSERT(tmp.win.size() >= static_cast<size_t>(K - 1) + n &&
                    tmp.state.size() >= static_cast<size_t>(D * D));
    float* win = tmp.win.data();  // sized by kda_forward for the longest group
    for (int64_t m = 0; m < 3; ++m)
      conv_silu_channels(qkv, sg.idx, sg.st->kda()[il].conv.data(), convw, Di, K, m * Di + h * D,
                         m * Di + h * D + D, win);
    for (int64_t t : sg.idx) {
      norm_qk(qkv[0] + t * Di + h * D, qkv[1] + t * Di + h * D, D, hp.rms_eps);
      log_decay(hp, w, h, g + t * Di + h * D);
      beta[t * H + h] = ops::sigmoid(beta[t * H + h]);
    }
    const HeadInputs in{qkv[0], qkv[1], qkv[2], g, beta, o, Di, H, D};
    float* S = sg.st->kda()[il].S.data() + h * D * D;
    if (trap) recurrent_head_trap(in, sg.idx, h, S);
    else if (n > 1) chunked_head(in, sg.idx, h, S, tmp);
    else recurrent_head(in, sg.idx, h, S, tmp);
    for (int64_t t : sg.idx) norm_gate_output(w, hp.rms_eps, D, o + t * Di + h * D, gate + t * Di + h * D);
  }
};

}  // namespace

void kda_forward(const BatchCtx& b, uint32_t il, const float* xn, float* out) {
  const HParams& hp = b.model.hparams();
  const KdaWeights& w = b.model.weights().layers[il].kda;
  const int64_t n = b.n, H = hp.n_head, D = hp.kda_head_dim, Di = hp.kda_inner();
  K3_ASSERT(Di == H * D && hp.ssm_conv_kernel >= 1, "KDA shapes bound by the model");
  Scratch::Kda& sc = b.scratch.kda;
  const size_t nDi = static_cast<size_t>(n * Di);
  float *q = reserve_at_least(sc.q, nDi), *k = reserve_at_least(sc.k, nDi), *v = reserve_at_least(sc.v, nDi);
  float* gate = reserve_at_least(sc.gate, nDi);
  float* fa = reserve_at_least(sc.fa, static_cast<size_t>(n * D));
  float* beta = reserve_at_least(sc.beta, static_cast<size_t>(n * H));
  float *g = reserve_at_least(sc.g, nDi), *o = reserve_at_least(sc.o, nDi);

  // Every projection of the normed input in one dispatch (decode: one pass of the pool over
  // the layer's input-side weights instead of six), then the decay's up-projection.
  {
    const kernels::WeightView* ws[6] = {&w.wq, &w.wk, &w.wv, &w.f_a, &w.beta, &w.g};
    float* ys[6] = {q, k, v, fa, beta, gate};
    kernels::MatmulJob jobs[6];
    for (int j = 0; j < 6; ++j) {
      jobs[j].w = *ws[j];
      jobs[j].x = xn;
      jobs[j].n_tok = n;
      jobs[j].y = ys[j];
    }
    b.mm.batch(jobs);
  }
  b.mm(w.f_b, fa, n, g);

  float* const qkv[3] = {q, k, v};
  const std::vector<float>* const convw[3] = {&w.conv_q, &w.conv_k, &w.conv_v};
  const HeadPipeline head{hp, w, il, qkv, convw, g, beta, gate, o, b.checks.kda_decay_on_value_axis};
  // Every thread's temporaries sized here, not by the tasks it happens to run, so the memory
  // held does not depend on scheduling.
  const size_t n_threads = b.pool ? static_cast<size_t>(b.pool->size()) : 1;
  if (sc.threads.size() < n_threads) sc.threads.resize(n_threads);
  size_t longest = 1;
  for (const SeqGroup& sg : b.groups) longest = std::max(longest, sg.idx.size());
  for (Scratch::KdaThread& t : sc.threads) {
    reserve_fixed(t, D);
    reserve_at_least(t.win, static_cast<size_t>(std::max<int64_t>(hp.ssm_conv_kernel - 1, 0)) + longest);
  }
  parallel_for(b.pool, static_cast<int64_t>(b.groups.size()) * H, [&](int64_t t0, int64_t t1, int thread) {
    for (int64_t task = t0; task < t1; ++task)
      head.run(b.groups[static_cast<size_t>(task / H)], task % H, sc.threads[static_cast<size_t>(thread)]);
  });
  b.mm(w.out, o, n, out);
}

uint64_t kda_thread_bytes(const HParams& hp, int64_t n_tokens) {
  const uint64_t D = static_cast<uint64_t>(hp.kda_head_dim), C = kChunk;
  const uint64_t doubles = 4 * D + D * D + 11 * C * D + 2 * C + 2 * C * C;
  const uint64_t win =
      static_cast<uint64_t>(std::max<int64_t>(hp.ssm_conv_kernel - 1, 0) + std::max<int64_t>(n_tokens, 1));
  return doubles * sizeof(double) + win * sizeof(float);
}

}  // namespace k3::model
