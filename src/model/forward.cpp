// model/forward: the top level of the K3 graph (docs/MODEL.md): embedding, AttnRes bank and
// partial sums, KDA/MLA and dense/MoE sublayers, final mix, norm and LM head.
#include "model/forward.h"

#include <algorithm>
#include <map>
#include <vector>

#include "model/hparams.h"
#include "model/layers.h"
#include "model/model.h"
#include "model/ops.h"
#include "model/profile.h"
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
    const BatchCtx sc{ctx.model, c1 - c0, sub, ctx.pool, ctx.hooks, ctx.checks, ctx.mm};
    layer(sc, xn + c0 * E, out + c0 * E);
  }
}

}  // namespace

int64_t forward(const Model& model, const ForwardInput& in, float* logits, ThreadPool* pool,
                const ForwardHooks& hooks, const ForwardChecks& checks) {
  const HParams& hp = model.hparams();
  const Weights& W = model.weights();
  const int64_t n = static_cast<int64_t>(in.tokens.size()), E = hp.n_embd;
  if (n == 0) return 0;
  ProfForward profiling(hooks.profile);

  // Group the tokens by sequence, keeping batch order within each.
  std::vector<SeqGroup> groups;
  {
    std::map<SequenceState*, size_t> where;
    for (int64_t t = 0; t < n; ++t) {
      auto [it, fresh] = where.try_emplace(in.seq[t], groups.size());
      if (fresh) groups.push_back({in.seq[t], {}, in.seq[t]->n_past()});
      groups[it->second].idx.push_back(t);
    }
  }
  BatchCtx ctx{
      model, n, groups, pool, hooks, checks, ops::Matmul{pool, checks.reference_matmul, hooks.observer}};

  const size_t NE = static_cast<size_t>(n * E);
  std::vector<float> h(NE), x(NE), xn(NE), sub(NE);
  {
    ProfScope section(ProfOp::embed);
    for (int64_t t = 0; t < n; ++t) {
      const kernels::WeightView& te = W.token_embd;
      quant::dequantize_row(te.type, te.row(in.tokens[t]), h.data() + t * E, E);
    }
  }

  const uint32_t bs = hp.attn_res_block_size;
  std::vector<std::vector<float>> bank;
  std::vector<const float*> bank_ptrs;
  for (uint32_t il = 0; il < hp.n_layer; ++il) {
    const LayerWeights& lw = W.layers[il];
    // Attention sublayer.
    const bool opens_block = bs > 0 && il % bs == 0;
    {
      ProfScope section(ProfOp::attn_res_norm);
      if (bs > 0) res_mix(bank_ptrs, h.data(), lw.attn_res_score.data(), n, E, hp.rms_eps, x.data());
      else x = h;
      if (opens_block) {
        bank.push_back(h);  // the raw partial sum, not the mix
        bank_ptrs.clear();
        for (const auto& v : bank) bank_ptrs.push_back(v.data());
      }
      ops::rmsnorm_rows(x.data(), xn.data(), n, E, lw.attn_norm.data(), hp.rms_eps, E, E);
    }
    {
      ProfScope section(hp.is_kda(il) ? ProfOp::kda : ProfOp::mla);
      run_sliced(ctx, E, xn.data(), sub.data(), [&](const BatchCtx& c, const float* in, float* o) {
        if (hp.is_kda(il)) kda_forward(c, il, in, o);
        else mla_forward(c, il, in, o);
      });
    }
    if (opens_block) h = sub;
    else
      for (size_t i = 0; i < NE; ++i) h[i] += sub[i];

    // FFN sublayer.
    {
      ProfScope section(ProfOp::attn_res_norm);
      if (bs > 0) res_mix(bank_ptrs, h.data(), lw.ffn_res_score.data(), n, E, hp.rms_eps, x.data());
      else x = h;
      ops::rmsnorm_rows(x.data(), xn.data(), n, E, lw.ffn_norm.data(), hp.rms_eps, E, E);
    }
    if (hp.is_dense(il)) {
      ProfScope section(ProfOp::dense_ffn);
      ffn_forward(ctx, lw.dense, xn.data(), sub.data());
    } else {
      moe_forward(ctx, il, xn.data(), sub.data());  // its two sections inside
    }
    for (size_t i = 0; i < NE; ++i) h[i] += sub[i];
  }
  for (SeqGroup& g : groups) g.st->set_n_past(g.base + static_cast<int64_t>(g.idx.size()));

  // Output: final mix, norm and head, only for the rows that want logits.
  ProfScope head_section(ProfOp::head);
  std::vector<int64_t> rows;
  for (int64_t t = 0; t < n; ++t)
    if (in.want_logits[t]) rows.push_back(t);
  if (rows.empty()) return 0;
  const int64_t m = static_cast<int64_t>(rows.size());
  std::vector<const float*> row_bank(bank_ptrs.size());
  for (int64_t i = 0; i < m; ++i) {
    const int64_t t = rows[i];
    float* xi = x.data() + i * E;
    if (bs > 0 && !checks.skip_final_res_mix) {
      for (size_t j = 0; j < bank_ptrs.size(); ++j) row_bank[j] = bank_ptrs[j] + t * E;
      res_mix(row_bank, h.data() + t * E, W.output_res_score.data(), 1, E, hp.rms_eps, xi);
    } else {
      std::copy(h.data() + t * E, h.data() + (t + 1) * E, xi);
    }
  }
  ops::rmsnorm_rows(x.data(), xn.data(), m, E, W.output_norm.data(), hp.rms_eps, E, E);
  ctx.mm(W.output, xn.data(), m, logits);
  return m;
}

}  // namespace k3::model
