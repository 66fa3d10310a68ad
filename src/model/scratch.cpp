// model/scratch: see scratch.h.
#include "model/scratch.h"

namespace k3::model {
namespace {

template <class T>
size_t held(const std::vector<T>& v) {
  return v.capacity() * sizeof(T);
}

}  // namespace

size_t Scratch::bytes() const {
  size_t b = held(groups);
  for (const SeqGroup& g : groups) b += held(g.idx);
  b += held(hidden) + held(mixed) + held(normed) + held(sublayer) + held(bank) + held(ffn_hidden) +
       held(bank_rows) + held(row_bank) + held(logit_rows);
  b += held(moe.prob) + held(moe.latent) + held(moe.shared_hidden) + held(moe.shared_out) +
       held(moe.routed_sum) + held(moe.biased) + held(moe.weights) + held(moe.acc) + held(moe.selected) +
       held(moe.order) + held(moe.active) + held(moe.start) + held(moe.pairs) + held(moe.jobs) +
       held(moe.mine) + held(moe.counts) + held(moe.rank_next) + held(moe.packed) + held(moe.gathered) +
       held(moe.gathered_at);
  for (const ExpertSlot& s : moe.slots) b += held(s.x) + held(s.h) + held(s.y);
  b += held(kda.q) + held(kda.k) + held(kda.v) + held(kda.gate) + held(kda.fa) + held(kda.beta) +
       held(kda.g) + held(kda.o) + held(kda.threads);
  b += held(mla.qf) + held(mla.qa) + held(mla.ckv) + held(mla.gate) + held(mla.qabs) + held(mla.obar) +
       held(mla.o) + held(mla.tok) + held(mla.jobs) + held(mla.threads);
  for (const MlaThread& t : mla.threads)
    b += held(t.score) + held(t.acc) + held(t.sum) + held(t.part) + held(t.row) + held(t.alpha) +
         held(t.rows_f32);
  for (const KdaThread& t : kda.threads) {
    b += held(t.win);
    for (const auto* v : {&t.eg, &t.kd, &t.qd, &t.state, &t.q,  &t.k,    &t.v,    &t.G,  &t.U,  &t.W,
                          &t.Vp, &t.eG, &t.Kp, &t.Km,    &t.Qp, &t.beta, &t.vcol, &t.ed, &t.Lm, &t.P})
      b += held(*v);
  }
  return b;
}

}  // namespace k3::model
