// model/identity: see identity.h.
#include "model/identity.h"

#include <algorithm>
#include <string>

#include "core/hash64.h"
#include "gguf/file.h"
#include "model/hparams.h"
#include "model/model.h"

namespace k3::model {

namespace {

template <class T>
void add(Hash64Stream& h, const T& v) {
  h.add(&v, sizeof v);
}

void add_hparams(Hash64Stream& h, const HParams& hp) {
  for (uint32_t v : {hp.n_embd,
                     hp.n_layer,
                     hp.n_vocab,
                     hp.n_ff,
                     hp.n_head,
                     hp.n_embd_head_k,
                     hp.n_rot,
                     hp.n_embd_head_k_mla,
                     hp.n_embd_head_v_mla,
                     hp.q_lora_rank,
                     hp.kv_lora_rank,
                     hp.ssm_conv_kernel,
                     hp.kda_head_dim,
                     hp.n_expert,
                     hp.n_expert_used,
                     hp.n_ff_exp,
                     hp.n_expert_shared,
                     hp.n_layer_dense_lead,
                     hp.expert_gating_func,
                     hp.n_embd_exp_latent,
                     hp.attn_res_block_size})
    add(h, v);
  for (float v : {hp.rms_eps, hp.expert_weights_scale, hp.situ_beta, hp.situ_linear_beta}) add(h, v);
  add(h, hp.kda_gate_lower_bound.value_or(-1e30f));
  add(h, static_cast<uint8_t>(hp.expert_weights_norm));
  for (uint32_t v : hp.n_head_kv) add(h, v);
}

}  // namespace

uint64_t model_identity(const Model& m) {
  Hash64Stream h;
  add_hparams(h, m.hparams());
  for (const gguf::TensorInfo& t : m.gguf().tensors()) {
    h.add(t.name.data(), t.name.size());
    add(h, static_cast<uint32_t>(t.type));
    for (int64_t d : t.ne) add(h, d);
    if (t.name.find("_exps") != std::string::npos || !t.data || t.nbytes == 0) continue;
    const size_t n = static_cast<size_t>(std::min<uint64_t>(t.nbytes, 64));
    h.add(t.data, n);
    h.add(t.data + t.nbytes - n, n);
  }
  return h.value();
}

}  // namespace k3::model
