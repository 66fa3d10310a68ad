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

#include "model/collective.h"
#include "model/hparams.h"
#include "model/layers.h"
#include "model/model.h"
#include "model/observer.h"
#include "model/ops.h"
#include "model/profile.h"

namespace k3::model {

namespace {

// The normalised weights divide by their sum clamped from below at 2^-14, the smallest normal
// half-precision value, as the reference does (llama.cpp's kimi-k3 graph clamps there).
constexpr double kWeightSumFloor = 0x1p-14;

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
  float* g = reserve_at_least(b.scratch.ffn_hidden, static_cast<size_t>(n * F));
  const float situ_c[2] = {hp.situ_beta, hp.situ_linear_beta};
  const kernels::MatmulJob gu = gate_up_job(w.gate, w.up, situ_c, x, n, g);
  b.mm.batch({&gu, 1});
  b.mm(w.down, g, n, out);
}

namespace {

// Step 1 of a MoE layer: everything that reads the full-width input in one dispatch (the
// router, the routed input's down-projection into the latent space, the shared experts'
// gate/up), then per token the gating function, top-k by the biased score (ties: lower index
// first) and the weights from the unbiased score; finally the (token, weight) pairs grouped
// by expert and the list of active experts. Returns the routed input (n rows of L).
const float* route(const BatchCtx& b, uint32_t il, const float* xn) {
  const HParams& hp = b.model.hparams();
  const MoeWeights& w = b.model.weights().layers[il].moe;
  Scratch::Moe& s = b.scratch.moe;
  const int64_t n = b.n, X = hp.n_expert, k = hp.n_expert_used, L = hp.expert_in();
  const float situ_c[2] = {hp.situ_beta, hp.situ_linear_beta};

  float* prob = reserve_at_least(s.prob, static_cast<size_t>(n * X));
  const float* rin = xn;
  s.jobs.clear();
  s.jobs.push_back({.w = w.router, .x = xn, .n_tok = n, .y = prob});
  if (w.latent) {
    rin = reserve_at_least(s.latent, static_cast<size_t>(n * L));
    s.jobs.push_back({.w = w.routed_down, .x = xn, .n_tok = n, .y = s.latent.data()});
  }
  if (w.has_shared) {
    float* sh_h = reserve_at_least(s.shared_hidden, static_cast<size_t>(n * w.shared.gate.rows));
    s.jobs.push_back(gate_up_job(w.shared.gate, w.shared.up, situ_c, xn, n, sh_h));
  }
  b.mm.batch(s.jobs);

  double* biased = reserve_at_least(s.biased, static_cast<size_t>(X));
  int32_t* order = reserve_at_least(s.order, static_cast<size_t>(X));
  int32_t* sel = reserve_at_least(s.selected, static_cast<size_t>(n * k));
  double* wsel = reserve_at_least(s.weights, static_cast<size_t>(n * k));
  for (int64_t t = 0; t < n; ++t) {
    float* z = prob + t * X;
    if (hp.expert_gating_func == kGatingSigmoid) {
      for (int64_t e = 0; e < X; ++e) z[e] = ops::sigmoid(z[e]);
    } else {  // softmax over all experts; biased[] holds the exponentials for a moment
      const double mx = *std::max_element(z, z + X);
      double sum = 0.0;
      for (int64_t e = 0; e < X; ++e) sum += (biased[e] = std::exp(z[e] - mx));
      for (int64_t e = 0; e < X; ++e) z[e] = static_cast<float>(biased[e] / sum);
    }
    const float* p = z;
    for (int64_t e = 0; e < X; ++e) biased[e] = static_cast<double>(p[e]) + w.router_bias[e];
    std::iota(order, order + X, 0);
    std::partial_sort(order, order + k, order + X, [&](int32_t a, int32_t c) {
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
      const double denom = std::max(sum, kWeightSumFloor);
      for (int64_t j = 0; j < k; ++j) wsel[t * k + j] /= denom;
    }
    if (hp.expert_weights_scale != 0.0f && hp.expert_weights_scale != 1.0f)
      for (int64_t j = 0; j < k; ++j) wsel[t * k + j] *= hp.expert_weights_scale;
  }
  if (b.hooks.observer) b.hooks.observer->on_routing(il, n, k, sel, wsel);

  // Group (token, weight) pairs by expert, tokens in batch order: a counting sort into one
  // array, so no per-expert lists are built.
  int64_t* start = reserve_at_least(s.start, static_cast<size_t>(X + 1));
  std::fill(start, start + X + 1, 0);
  for (int64_t i = 0; i < n * k; ++i) ++start[sel[i] + 1];
  for (int64_t e = 0; e < X; ++e) start[e + 1] += start[e];
  std::pair<int64_t, double>* pairs = reserve_at_least(s.pairs, static_cast<size_t>(n * k));
  // order[] is free again: it counts how many of each expert's pairs are placed
  std::fill(order, order + X, 0);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t j = 0; j < k; ++j) {
      const int32_t e = sel[t * k + j];
      pairs[start[e] + order[e]++] = {t, wsel[t * k + j]};
    }
  s.active.clear();
  for (int32_t e = 0; e < X; ++e)
    if (start[e + 1] > start[e]) s.active.push_back(e);
  return rin;
}

// The pairs routed to expert e (batch row, weight), in batch order.
std::span<const std::pair<int64_t, double>> tokens_of(const Scratch::Moe& s, int32_t e) {
  return {s.pairs.data() + s.start[static_cast<size_t>(e)],
          static_cast<size_t>(s.start[static_cast<size_t>(e) + 1] - s.start[static_cast<size_t>(e)])};
}

// Step 2: the given experts (of the active list, in its order) over their tokens,
// kExpertGroup at a time: gate/up → SiTU of the whole group in one dispatch, then the group's
// down projections in another (decode: 2 dispatches per layer instead of 3 per expert, and the
// threads' slices cross expert boundaries). With `shared_too`, the shared experts' down
// projection joins the first group's. Each expert's output rows (one per routed token, in
// batch order) go to done(e, tokens, rows) while its weights are still held.
template <class Done>
void run_experts(const BatchCtx& b, uint32_t il, const float* rin, std::span<const int32_t> experts,
                 const ops::Matmul& mm, bool shared_too, Done&& done) {
  const HParams& hp = b.model.hparams();
  const MoeWeights& w = b.model.weights().layers[il].moe;
  Scratch::Moe& s = b.scratch.moe;
  const int64_t n = b.n, L = hp.expert_in(), Fe = hp.n_ff_exp;
  const float situ_c[2] = {hp.situ_beta, hp.situ_linear_beta};
  ExpertSource& src = b.model.experts();
  constexpr size_t kGroup = Scratch::kExpertGroup;
  for (size_t g0 = 0; g0 < experts.size(); g0 += kGroup) {
    const size_t g1 = std::min(experts.size(), g0 + kGroup);
    // The group's experts are released even when a read or a matmul throws: a store's pins
    // would otherwise stay taken for good and its cache shrink with every failure.
    struct GroupPins {
      ExpertSource& src;
      uint32_t il;
      size_t n_held = 0;
      const int32_t* held = nullptr;
      ~GroupPins() {
        for (size_t i = 0; i < n_held; ++i) {
          try {
            src.release(il, held[i]);
          } catch (...) {  // nothing sensible to do while an exception is already in flight
          }
        }
      }
    } pins{src, il, 0, experts.data() + g0};
    s.jobs.clear();
    for (size_t i = g0; i < g1; ++i) {
      Scratch::ExpertSlot& sl = s.slots[i - g0];
      const auto toks = tokens_of(s, experts[i]);
      const int64_t m = static_cast<int64_t>(toks.size());
      const float* x = rin;
      if (!(m == n && n == 1)) {  // decode reads the routed input in place
        float* xin = reserve_at_least(sl.x, static_cast<size_t>(m * L));
        for (int64_t t = 0; t < m; ++t)
          std::copy(rin + toks[t].first * L, rin + (toks[t].first + 1) * L, xin + t * L);
        x = xin;
      }
      float* hid = reserve_at_least(sl.h, static_cast<size_t>(m * Fe));
      reserve_at_least(sl.y, static_cast<size_t>(m * L));
      sl.ew = src.acquire(il, experts[i]);
      ++pins.n_held;
      s.jobs.push_back(gate_up_job(sl.ew.gate, sl.ew.up, situ_c, x, m, hid));
    }
    mm.batch(s.jobs);
    s.jobs.clear();
    for (size_t i = g0; i < g1; ++i) {
      Scratch::ExpertSlot& sl = s.slots[i - g0];
      kernels::MatmulJob j;
      j.w = sl.ew.down;
      j.x = sl.h.data();
      j.n_tok = static_cast<int64_t>(tokens_of(s, experts[i]).size());
      j.y = sl.y.data();
      s.jobs.push_back(j);
    }
    if (g0 == 0 && shared_too)
      s.jobs.push_back(
          {.w = w.shared.down, .x = s.shared_hidden.data(), .n_tok = n, .y = s.shared_out.data()});
    mm.batch(s.jobs);
    pins.n_held = 0;  // released one by one below
    for (size_t i = g0; i < g1; ++i) {
      const int32_t e = experts[i];
      done(e, tokens_of(s, e), s.slots[i - g0].y.data());
      src.release(il, e);
    }
  }
  if (shared_too && experts.empty()) mm(w.shared.down, s.shared_hidden.data(), n, s.shared_out.data());
}

// acc[token] += weight · row for each routed token of expert e (in double, in the caller's
// expert order: the one order every process uses).
void add_weighted(double* acc, int64_t L, std::span<const std::pair<int64_t, double>> toks, const float* y) {
  for (size_t t = 0; t < toks.size(); ++t) {
    double* a = acc + toks[t].first * L;
    const double wt = toks[t].second;
    const float* yr = y + static_cast<int64_t>(t) * L;
    for (int64_t c = 0; c < L; ++c) a[c] += wt * yr[c];
  }
}

// Step 3, in one process: every active expert over its tokens, its weighted output rows summed
// in double into acc (n rows of L) in the order of the active list, while its weights are
// held; the shared experts' down projection rides with the first group.
void routed_local(const BatchCtx& b, uint32_t il, const float* rin, const float* xn, double* acc) {
  const MoeWeights& w = b.model.weights().layers[il].moe;
  Scratch::Moe& s = b.scratch.moe;
  const int64_t n = b.n, L = b.model.hparams().expert_in();
  ExpertSource& src = b.model.experts();
  src.will_need(il, s.active);
  src.router_input_hint(il, xn, n);
  run_experts(b, il, rin, s.active, b.mm, w.has_shared, [&](int32_t e, auto toks, const float* y) {
    if (b.hooks.observer) b.hooks.observer->on_expert_output(il, e, toks, y, L);
    add_weighted(acc, L, toks, y);
  });
}

// Step 3, expert parallel (model/collective.h): each rank runs the experts it owns and packs
// their output rows; the rows of all ranks are all-gathered, and every rank sums them in the
// active list's order, so acc is the one-process sum bit for bit. The shared experts are split
// by rows like the trunk.
void routed_expert_parallel(const BatchCtx& b, uint32_t il, const float* rin, const float* xn, double* acc,
                            Collective& c) {
  const MoeWeights& w = b.model.weights().layers[il].moe;
  Scratch::Moe& s = b.scratch.moe;
  const int64_t n = b.n, L = b.model.hparams().expert_in();
  ExpertSource& src = b.model.experts();
  const int N = c.size(), me = c.rank();
  s.mine.clear();
  s.counts.assign(static_cast<size_t>(N), 0);
  for (int32_t e : s.active) {
    const int r = expert_owner(e, N);
    s.counts[static_cast<size_t>(r)] += tokens_of(s, e).size() * static_cast<size_t>(L) * sizeof(float);
    if (r == me) s.mine.push_back(e);
  }
  src.will_need(il, s.mine);
  src.router_input_hint(il, xn, n);
  float* packed = reserve_at_least(s.packed, s.counts[static_cast<size_t>(me)] / sizeof(float));
  run_experts(b, il, rin, s.mine, b.mm.local(), false, [&](int32_t, auto toks, const float* y) {
    packed = std::copy(y, y + static_cast<int64_t>(toks.size()) * L, packed);
  });
  if (w.has_shared) b.mm(w.shared.down, s.shared_hidden.data(), n, s.shared_out.data());
  size_t total = 0;
  for (size_t x : s.counts) total += x;
  float* all = reserve_at_least(s.gathered, total / sizeof(float));
  c.allgatherv(s.packed.data(), all, s.counts);
  // Rank r's block holds its experts' rows in active-list order: find each expert's rows.
  int64_t* at = reserve_at_least(s.gathered_at, s.active.size());
  std::vector<size_t>& next = s.rank_next;
  next.assign(static_cast<size_t>(N), 0);
  for (int r = 1; r < N; ++r)
    next[static_cast<size_t>(r)] = next[static_cast<size_t>(r) - 1] + s.counts[static_cast<size_t>(r) - 1];
  for (size_t i = 0; i < s.active.size(); ++i) {
    size_t& off = next[static_cast<size_t>(expert_owner(s.active[i], N))];
    at[i] = static_cast<int64_t>(off / sizeof(float));
    off += tokens_of(s, s.active[i]).size() * static_cast<size_t>(L) * sizeof(float);
  }
  for (size_t i = 0; i < s.active.size(); ++i) add_weighted(acc, L, tokens_of(s, s.active[i]), all + at[i]);
}

}  // namespace

void moe_forward(const BatchCtx& b, uint32_t il, const float* xn, float* out) {
  const HParams& hp = b.model.hparams();
  const MoeWeights& w = b.model.weights().layers[il].moe;
  Scratch::Moe& s = b.scratch.moe;
  const int64_t n = b.n, E = hp.n_embd, L = hp.expert_in();
  std::optional<ProfScope> section(std::in_place, ProfOp::moe_input);
  const float* rin = route(b, il, xn);
  section.reset();
  section.emplace(ProfOp::moe_experts);

  double* acc = reserve_at_least(s.acc, static_cast<size_t>(n * L));
  std::fill(acc, acc + n * L, 0.0);
  if (w.has_shared) reserve_at_least(s.shared_out, static_cast<size_t>(n * E));
  Collective* c = b.mm.collective;
  if (c && c->size() > 1) routed_expert_parallel(b, il, rin, xn, acc, *c);
  else routed_local(b, il, rin, xn, acc);

  // RMS-normed routed sum, up-projection, plus the shared experts.
  float* msum = reserve_at_least(s.routed_sum, static_cast<size_t>(n * L));
  for (int64_t i = 0; i < n * L; ++i) msum[i] = static_cast<float>(acc[i]);
  if (!w.routed_norm.empty()) ops::rmsnorm_rows(msum, msum, n, L, w.routed_norm.data(), hp.rms_eps, L, L);
  if (w.latent) b.mm(w.routed_up, msum, n, out);
  else std::copy(msum, msum + n * L, out);
  if (w.has_shared)
    for (int64_t i = 0; i < n * E; ++i) out[i] += s.shared_out[static_cast<size_t>(i)];
}

}  // namespace k3::model
