// model/forward: the top level of the K3 graph (docs/MODEL.md): embedding, AttnRes bank and
// partial sums, KDA/MLA and dense/MoE sublayers, final mix, norm and LM head.
#include "model/forward.h"

#include <algorithm>
#include <span>
#include <vector>

#include "core/assert.h"
#include "model/hparams.h"
#include "model/layers.h"
#include "model/model.h"
#include "model/ops.h"
#include "model/profile.h"
#include "model/scratch.h"
#include "model/sequence_state.h"
#include "quant/codec.h"

namespace k3::model {
namespace {

// Sequence-mixing sublayers (KDA, MLA) run over the micro-batch in slices of kMixSlice tokens,
// so their per-token temporaries (KDA ~8 rows of H·D floats, MLA ~2 rows of H·C) stay bounded
// whatever the micro-batch size; the FFN/MoE still see the whole micro-batch (each active
// expert read once per micro-batch). Slices run in batch order and carry the sequences' state
// forward (conv/recurrent state, latent cache), so the result equals the unsliced one to
// rounding (KDA's 16-token chunks may start at other tokens).
constexpr int64_t kMixSlice = 512;

template <class Layer>
void run_sliced(const BatchCtx& ctx, int64_t E, const float* xn, float* out, Layer&& layer) {
  if (ctx.n <= kMixSlice) {
    layer(ctx, xn, out);
    return;
  }
  std::vector<SeqGroup> sub;
  for (int64_t c0 = 0; c0 < ctx.n; c0 += kMixSlice) {
    const int64_t c1 = std::min(ctx.n, c0 + kMixSlice);
    sub.clear();
    for (const SeqGroup& g : ctx.groups) {
      SeqGroup s{g.st, {}, g.base};
      for (int64_t r : g.idx) {
        if (r < c0) ++s.base;
        else if (r < c1) s.idx.push_back(r - c0);
      }
      if (!s.idx.empty()) sub.push_back(std::move(s));
    }
    const BatchCtx sc{ctx.model, c1 - c0, sub, ctx.pool, ctx.hooks, ctx.checks, ctx.mm, ctx.scratch};
    layer(sc, xn + c0 * E, out + c0 * E);
  }
}

}  // namespace

int64_t forward(const Model& model, const ForwardInput& in, float* logits, ThreadPool* pool, Scratch& scratch,
                const ForwardHooks& hooks, const ForwardChecks& checks) {
  const HParams& hp = model.hparams();
  const Weights& W = model.weights();
  const int64_t n = static_cast<int64_t>(in.tokens.size()), E = hp.n_embd;
  if (n == 0) return 0;
  K3_ASSERT(in.seq.size() == in.tokens.size() && in.want_logits.size() == in.tokens.size(),
            "one sequence and one logits flag per token");
  ProfForward profiling(hooks.profile);

  // Group the tokens by sequence, keeping batch order within each. A batch holds a few
  // sequences (the server's slots), so a linear search beats a map and allocates nothing.
  std::vector<SeqGroup>& all_groups = scratch.groups;
  size_t n_groups = 0;
  for (int64_t t = 0; t < n; ++t) {
    size_t g = 0;
    while (g < n_groups && all_groups[g].st != in.seq[t]) ++g;
    if (g == n_groups) {
      if (n_groups == all_groups.size()) all_groups.emplace_back();
      SeqGroup& fresh = all_groups[n_groups++];
      fresh.st = in.seq[t];
      fresh.idx.clear();
      fresh.base = in.seq[t]->n_past();
    }
    all_groups[g].idx.push_back(t);
  }
  const std::span<SeqGroup> groups(all_groups.data(), n_groups);
  BatchCtx ctx{model,
               n,
               groups,
               pool,
               hooks,
               checks,
               ops::Matmul{pool, checks.reference_matmul, hooks.observer, hooks.collective,
                           checks.reference_matmul ? nullptr : model.gpu()},
               scratch};

  const size_t NE = static_cast<size_t>(n * E);
  float* h = reserve_at_least(scratch.hidden, NE);
  float* x = reserve_at_least(scratch.mixed, NE);
  float* xn = reserve_at_least(scratch.normed, NE);
  float* sub = reserve_at_least(scratch.sublayer, NE);
  {
    ProfScope section(ProfOp::embed);
    for (int64_t t = 0; t < n; ++t) {
      if (!in.embd.empty() && in.embd[t]) {
        std::copy(in.embd[t], in.embd[t] + E, h + t * E);
        continue;
      }
      const kernels::WeightView& te = W.token_embd;
      quant::dequantize_row(te.type, te.row(in.tokens[t]), h + t * E, E);
    }
  }

  // The bank holds the raw partial sum at the start of every block, one n×E block each.
  const uint32_t bs = hp.attn_res_block_size;
  const size_t n_blocks = bs > 0 ? (hp.n_layer + bs - 1) / bs : 0;
  float* bank = reserve_at_least(scratch.bank, n_blocks * NE);
  std::vector<const float*>& bank_ptrs = scratch.bank_rows;
  bank_ptrs.clear();
  for (uint32_t il = 0; il < hp.n_layer; ++il) {
    const LayerWeights& lw = W.layers[il];
    // Attention sublayer.
    const bool opens_block = bs > 0 && il % bs == 0;
    {
      ProfScope section(ProfOp::attn_res_norm);
      if (bs > 0) res_mix(bank_ptrs, h, lw.attn_res_score.data(), n, E, hp.rms_eps, x);
      else std::copy(h, h + NE, x);
      if (opens_block) {
        float* entry = bank + bank_ptrs.size() * NE;  // the raw partial sum, not the mix
        std::copy(h, h + NE, entry);
        bank_ptrs.push_back(entry);
      }
      ops::rmsnorm_rows(x, xn, n, E, lw.attn_norm.data(), hp.rms_eps, E, E);
    }
    {
      ProfScope section(hp.is_kda(il) ? ProfOp::kda : ProfOp::mla);
      run_sliced(ctx, E, xn, sub, [&](const BatchCtx& c, const float* in, float* o) {
        if (hp.is_kda(il)) kda_forward(c, il, in, o);
        else mla_forward(c, il, in, o);
      });
    }
    if (opens_block) std::copy(sub, sub + NE, h);
    else
      for (size_t i = 0; i < NE; ++i) h[i] += sub[i];

    // FFN sublayer.
    {
      ProfScope section(ProfOp::attn_res_norm);
      if (bs > 0) res_mix(bank_ptrs, h, lw.ffn_res_score.data(), n, E, hp.rms_eps, x);
      else std::copy(h, h + NE, x);
      ops::rmsnorm_rows(x, xn, n, E, lw.ffn_norm.data(), hp.rms_eps, E, E);
    }
    if (hp.is_dense(il)) {
      ProfScope section(ProfOp::dense_ffn);
      ffn_forward(ctx, lw.dense, xn, sub);
    } else {
      moe_forward(ctx, il, xn, sub);  // its two sections inside
    }
    for (size_t i = 0; i < NE; ++i) h[i] += sub[i];
  }
  for (SeqGroup& g : groups) g.st->set_n_past(g.base + static_cast<int64_t>(g.idx.size()));

  // Output: final mix, norm and head, only for the rows that want logits.
  ProfScope head_section(ProfOp::head);
  std::vector<int64_t>& rows = scratch.logit_rows;
  rows.clear();
  for (int64_t t = 0; t < n; ++t)
    if (in.want_logits[t]) rows.push_back(t);
  if (rows.empty()) return 0;
  const int64_t m = static_cast<int64_t>(rows.size());
  const float** rb = reserve_at_least(scratch.row_bank, bank_ptrs.size());
  for (int64_t i = 0; i < m; ++i) {
    const int64_t t = rows[i];
    float* xi = x + i * E;
    if (bs > 0 && !checks.skip_final_res_mix) {
      for (size_t j = 0; j < bank_ptrs.size(); ++j) rb[j] = bank_ptrs[j] + t * E;
      res_mix({rb, bank_ptrs.size()}, h + t * E, W.output_res_score.data(), 1, E, hp.rms_eps, xi);
    } else {
      std::copy(h + t * E, h + (t + 1) * E, xi);
    }
  }
  ops::rmsnorm_rows(x, xn, m, E, W.output_norm.data(), hp.rms_eps, E, E);
  ctx.mm(W.output, xn, m, logits);
  return m;
}

}  // namespace k3::model
