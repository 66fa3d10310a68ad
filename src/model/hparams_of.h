// model/hparams_of: the hyperparameters of a K3 that a writer describes (synth's config,
// convert's reading of an HF config), derived in one place.
// Contract: Config names the model's shape with HParams's own field names (n_vocab, n_ctx_train,
// n_embd, …, situ_linear_beta); `is_mla` has one flag per layer. The derived fields (the head
// lengths, each layer's kind and head_count_kv, the sigmoid gating K3 uses) are computed here,
// so the writers and the loader cannot disagree about them.
#pragma once

#include <vector>

#include "model/hparams.h"

namespace k3::model {

template <class Config>
HParams hparams_of(const Config& c, const std::vector<bool>& is_mla) {
  HParams hp;
  hp.n_vocab = c.n_vocab;
  hp.n_ctx_train = c.n_ctx_train;
  hp.n_embd = c.n_embd;
  hp.n_layer = c.n_layer;
  hp.n_ff = c.n_ff;
  hp.n_head = c.n_head;
  // head_count_kv marks the layer kind: 1 for MLA (one latent KV head), 0 for KDA.
  for (bool mla : is_mla) {
    hp.n_head_kv.push_back(mla ? 1 : 0);
    hp.kind.push_back(mla ? LayerKind::MLA : LayerKind::KDA);
  }
  hp.rms_eps = c.rms_eps;
  hp.n_embd_head_k = c.kv_lora_rank + c.n_rot;
  hp.n_rot = c.n_rot;
  hp.n_embd_head_k_mla = c.qk_nope + c.n_rot;
  hp.n_embd_head_v_mla = c.n_embd_head_v_mla;
  hp.q_lora_rank = c.q_lora_rank;
  hp.kv_lora_rank = c.kv_lora_rank;
  hp.ssm_conv_kernel = c.ssm_conv_kernel;
  hp.kda_head_dim = c.kda_head_dim;
  hp.kda_gate_lower_bound = c.kda_gate_lower_bound;
  hp.n_expert = c.n_expert;
  hp.n_expert_used = c.n_expert_used;
  hp.n_ff_exp = c.n_ff_exp;
  hp.n_expert_shared = c.n_expert_shared;
  hp.n_layer_dense_lead = c.n_layer_dense_lead;
  hp.expert_weights_scale = c.expert_weights_scale;
  hp.expert_weights_norm = c.expert_weights_norm;
  hp.expert_gating_func = kGatingSigmoid;
  hp.n_embd_exp_latent = c.n_embd_exp_latent;
  hp.attn_res_block_size = c.attn_res_block_size;
  hp.situ_beta = c.situ_beta;
  hp.situ_linear_beta = c.situ_linear_beta;
  return hp;
}

}  // namespace k3::model
