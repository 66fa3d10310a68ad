// model/moe: the dense SiTU FFN and the latent MoE (docs/MODEL.md): sigmoid router with a
// selection-only correction bias, top-k, normalisation and scaling of the unbiased scores,
// routed experts in the latent space grouped by expert across the batch (each active
// expert's weights are read once per batch), RMS-normed routed sum, up-projection, shared
// experts on the full-width input.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <vector>

#include "model/hparams.h"
#include "model/layers.h"
#include "model/model.h"
#include "model/observer.h"
#include "model/ops.h"
#include "model/profile.h"

namespace k3::model {

namespace {

// The fused gate/up product with SiTU (a dense FFN, a shared or a routed expert):
// y = situ(gate·x, up·x). The job points at `up`, which must outlive it.
kernels::MatmulJob gate_up_job(const kernels::WeightView& gate, const kernels::WeightView& up,
                               const float* situ_c, const float* x, int64_t n, float* y) {
  kernels::MatmulJob j;
  j.w = gate;
  j.up = &up;
  j.act = ops::situ_gate_up;
  j.act_ctx = situ_c;
  j.x = x;
  j.n_tok = n;
  j.y = y;
  return j;
}

}  // namespace

void ffn_forward(const BatchCtx& b, const FfnWeights& w, const float* x, float* out) {
  const HParams& hp = b.model.hparams();
  const int64_t n = b.n, F = w.gate.rows;
  std::vector<float> g(static_cast<size_t>(n * F));
  const float situ_c[2] = {hp.situ_beta, hp.situ_linear_beta};
  const kernels::MatmulJob gu = gate_up_job(w.gate, w.up, situ_c, x, n, g.data());
  b.mm.batch({&gu, 1});
  b.mm(w.down, g.data(), n, out);
}

void moe_forward(const BatchCtx& b, uint32_t il, const float* xn, float* out) {
  const HParams& hp = b.model.hparams();
  const MoeWeights& w = b.model.weights().layers[il].moe;
  const int64_t n = b.n, E = hp.n_embd, X = hp.n_expert, k = hp.n_expert_used, L = hp.expert_in(),
                Fe = hp.n_ff_exp;
  const float situ_c[2] = {hp.situ_beta, hp.situ_linear_beta};
  std::optional<ProfScope> section(std::in_place, ProfOp::moe_input);

  // Everything that reads the full-width input in one dispatch: the router, the routed
  // input's down-projection into the latent space and the shared experts' gate/up.
  std::vector<float> prob(static_cast<size_t>(n * X));
  std::vector<float> r;
  const float* rin = xn;
  std::vector<float> sh_h;
  {
    std::vector<kernels::MatmulJob> jobs{{.w = w.router, .x = xn, .n_tok = n, .y = prob.data()}};
    if (w.latent) {
      r.resize(static_cast<size_t>(n * L));
      jobs.push_back({.w = w.routed_down, .x = xn, .n_tok = n, .y = r.data()});
      rin = r.data();
    }
    if (w.has_shared) {
      sh_h.resize(static_cast<size_t>(n * w.shared.gate.rows));
      jobs.push_back(gate_up_job(w.shared.gate, w.shared.up, situ_c, xn, n, sh_h.data()));
    }
    b.mm.batch(jobs);
  }
  for (int64_t t = 0; t < n; ++t) {
    float* z = prob.data() + t * X;
    if (hp.expert_gating_func == 2) {
      for (int64_t e = 0; e < X; ++e) z[e] = ops::sigmoid(z[e]);
    } else {  // softmax over all experts
      const double mx = *std::max_element(z, z + X);
      double s = 0.0;
      std::vector<double> ex(static_cast<size_t>(X));
      for (int64_t e = 0; e < X; ++e) s += (ex[e] = std::exp(z[e] - mx));
      for (int64_t e = 0; e < X; ++e) z[e] = static_cast<float>(ex[e] / s);
    }
  }

  // Top-k by the biased score (ties: lower index first); weights from the unbiased score.
  std::vector<int32_t> sel(static_cast<size_t>(n * k));
  std::vector<double> wsel(static_cast<size_t>(n * k));
  std::vector<int32_t> order(static_cast<size_t>(X));
  std::vector<double> biased(static_cast<size_t>(X));
  for (int64_t t = 0; t < n; ++t) {
    const float* p = prob.data() + t * X;
    for (int64_t e = 0; e < X; ++e) biased[e] = static_cast<double>(p[e]) + w.router_bias[e];
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t c) {
      return biased[a] != biased[c] ? biased[a] > biased[c] : a < c;
    });
    double sum = 0.0;
    for (int64_t j = 0; j < k; ++j) {
      const int32_t e = order[j];
      sel[t * k + j] = e;
      wsel[t * k + j] = b.checks.moe_weights_from_biased_scores ? biased[e] : p[e];
      sum += wsel[t * k + j];
    }
    if (hp.expert_weights_norm) {
      const double denom = std::max(sum, 6.103515625e-5);
      for (int64_t j = 0; j < k; ++j) wsel[t * k + j] /= denom;
    }
    if (hp.expert_weights_scale != 0.0f && hp.expert_weights_scale != 1.0f)
      for (int64_t j = 0; j < k; ++j) wsel[t * k + j] *= hp.expert_weights_scale;
  }

  if (b.hooks.observer) b.hooks.observer->on_routing(il, n, k, sel.data(), wsel.data());

  // Group (token, weight) pairs by expert; run each active expert once over its tokens.
  std::vector<std::vector<std::pair<int64_t, double>>> by_exp(static_cast<size_t>(X));
  for (int64_t t = 0; t < n; ++t)
    for (int64_t j = 0; j < k; ++j) by_exp[sel[t * k + j]].push_back({t, wsel[t * k + j]});
  std::vector<int32_t> active;
  for (int32_t e = 0; e < X; ++e)
    if (!by_exp[e].empty()) active.push_back(e);
  section.reset();
  section.emplace(ProfOp::moe_experts);
  ExpertSource& src = b.model.experts();
  src.will_need(il, active);
  src.router_input_hint(il, xn, n);

  // Experts run kExpertGroup at a time: gate/up → SiTU of the whole group in one dispatch,
  // then the group's down projections in another (decode: 2 dispatches per layer instead of
  // 3 per expert, and the threads' slices cross expert boundaries). The shared experts' down
  // projection joins the first group's.
  constexpr size_t kExpertGroup = 8;
  struct Slot {
    ExpertWeights ew;
    std::vector<float> xin, h, y;
  };
  std::vector<Slot> slots(std::min(kExpertGroup, active.size()));
  std::vector<kernels::MatmulJob> jobs;
  std::vector<double> acc(static_cast<size_t>(n * L), 0.0);
  std::vector<float> sh;
  if (w.has_shared) sh.resize(static_cast<size_t>(n * E));
  for (size_t g0 = 0; g0 < active.size(); g0 += kExpertGroup) {
    const size_t g1 = std::min(active.size(), g0 + kExpertGroup);
    // The group's experts are released even when a read or a matmul throws: a store's pins
    // would otherwise stay taken for good and its cache shrink with every failure.
    struct GroupPins {
      ExpertSource& src;
      uint32_t il;
      std::vector<int32_t> held;
      ~GroupPins() {
        for (int32_t e : held) {
          try {
            src.release(il, e);
          } catch (...) {  // nothing sensible to do while an exception is already in flight
          }
        }
      }
    } pins{src, il, {}};
    jobs.clear();
    for (size_t i = g0; i < g1; ++i) {
      Slot& sl = slots[i - g0];
      const auto& toks = by_exp[active[i]];
      const int64_t m = static_cast<int64_t>(toks.size());
      const float* x = rin;
      if (!(m == n && n == 1)) {  // decode reads the routed input in place
        sl.xin.resize(static_cast<size_t>(m * L));
        for (int64_t t = 0; t < m; ++t)
          std::copy(rin + toks[t].first * L, rin + (toks[t].first + 1) * L, sl.xin.begin() + t * L);
        x = sl.xin.data();
      }
      sl.h.resize(static_cast<size_t>(m * Fe));
      sl.y.resize(static_cast<size_t>(m * L));
      sl.ew = src.acquire(il, active[i]);
      pins.held.push_back(active[i]);
      jobs.push_back(gate_up_job(sl.ew.gate, sl.ew.up, situ_c, x, m, sl.h.data()));
    }
    b.mm.batch(jobs);
    jobs.clear();
    for (size_t i = g0; i < g1; ++i) {
      Slot& sl = slots[i - g0];
      kernels::MatmulJob j;
      j.w = sl.ew.down;
      j.x = sl.h.data();
      j.n_tok = static_cast<int64_t>(by_exp[active[i]].size());
      j.y = sl.y.data();
      jobs.push_back(j);
    }
    if (g0 == 0 && w.has_shared)
      jobs.push_back({.w = w.shared.down, .x = sh_h.data(), .n_tok = n, .y = sh.data()});
    b.mm.batch(jobs);
    pins.held.clear();  // released one by one below
    for (size_t i = g0; i < g1; ++i) {
      const int32_t e = active[i];
      const auto& toks = by_exp[e];
      const std::vector<float>& y = slots[i - g0].y;
      src.release(il, e);
      if (b.hooks.observer) b.hooks.observer->on_expert_output(il, e, toks, y.data(), L);
      for (size_t t = 0; t < toks.size(); ++t) {
        double* a = acc.data() + toks[t].first * L;
        const double wt = toks[t].second;
        const float* yr = y.data() + static_cast<int64_t>(t) * L;
        for (int64_t c = 0; c < L; ++c) a[c] += wt * yr[c];
      }
    }
  }
  std::vector<float> msum(static_cast<size_t>(n * L));
  for (size_t i = 0; i < msum.size(); ++i) msum[i] = static_cast<float>(acc[i]);
  if (!w.routed_norm.empty())
    ops::rmsnorm_rows(msum.data(), msum.data(), n, L, w.routed_norm.data(), hp.rms_eps, L, L);
  if (w.latent) b.mm(w.routed_up, msum.data(), n, out);
  else std::copy(msum.begin(), msum.end(), out);

  if (w.has_shared) {
    if (active.empty()) b.mm(w.shared.down, sh_h.data(), n, sh.data());
    for (size_t i = 0; i < sh.size(); ++i) out[i] += sh[i];
  }
}

}  // namespace k3::model
