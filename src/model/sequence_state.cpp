// model/sequence_state: allocation and reset of per-sequence state (see sequence_state.h).
#include "model/sequence_state.h"

#include <algorithm>

#include "model/hparams.h"

namespace k3::model {

SequenceState::SequenceState(const HParams& hp, CacheType cache_type) : cache_type_(cache_type) {
  kda_.resize(hp.n_layer);
  mla_.resize(hp.n_layer);
  const size_t Di = hp.kda_inner(), K1 = hp.ssm_conv_kernel - 1, H = hp.n_head, D = hp.kda_head_dim;
  for (uint32_t il = 0; il < hp.n_layer; ++il) {
    if (!hp.is_kda(il)) continue;
    kda_[il].conv.assign(3 * Di * K1, 0.0f);
    kda_[il].S.assign(H * D * D, 0.0f);
  }
}

void SequenceState::clear() {
  n_past_ = 0;
  for (auto& k : kda_) {
    std::fill(k.conv.begin(), k.conv.end(), 0.0f);
    std::fill(k.S.begin(), k.S.end(), 0.0f);
  }
  for (auto& m : mla_) {
    m.f32.clear();
    m.f16.clear();
  }
}

size_t SequenceState::bytes() const {
  size_t n = 0;
  for (const auto& k : kda_) n += (k.conv.capacity() + k.S.capacity()) * sizeof(float);
  for (const auto& m : mla_) n += m.f32.capacity() * sizeof(float) + m.f16.capacity() * sizeof(uint16_t);
  return n;
}

}  // namespace k3::model
