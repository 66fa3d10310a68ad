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

std::vector<std::pair<void*, size_t>> SequenceState::chunks() {
  std::vector<std::pair<void*, size_t>> out;
  for (size_t il = 0; il < kda_.size(); ++il) {
    KdaLayerState& k = kda_[il];
    if (!k.conv.empty()) out.emplace_back(k.conv.data(), k.conv.size() * sizeof(float));
    if (!k.S.empty()) out.emplace_back(k.S.data(), k.S.size() * sizeof(float));
    MlaLayerCache& m = mla_[il];
    if (!m.f32.empty()) out.emplace_back(m.f32.data(), m.f32.size() * sizeof(float));
    if (!m.f16.empty()) out.emplace_back(m.f16.data(), m.f16.size() * sizeof(uint16_t));
  }
  return out;
}

std::vector<std::pair<const void*, size_t>> SequenceState::chunks() const {
  // The same walk; chunks() itself changes nothing.
  const std::vector<std::pair<void*, size_t>> w = const_cast<SequenceState*>(this)->chunks();
  return {w.begin(), w.end()};
}

namespace {
size_t row_width(const HParams& hp) { return static_cast<size_t>(hp.kv_lora_rank) + hp.n_rot; }
}  // namespace

void SequenceState::set_rows(const HParams& hp, int64_t n) {
  n_past_ = n;
  const size_t rows = static_cast<size_t>(n),
               full = static_cast<size_t>(std::max(max_rows_, n)) * row_width(hp);
  for (uint32_t il = 0; il < hp.n_layer; ++il) {
    if (hp.is_kda(il)) continue;
    MlaLayerCache& m = mla_[il];
    if (cache_type_ == CacheType::F32) {
      m.f32.reserve(full);
      m.f32.assign(rows * row_width(hp), 0.0f);
    } else {
      m.f16.reserve(full);
      m.f16.assign(rows * row_width(hp), 0);
    }
  }
}

uint64_t SequenceState::saved_bytes(const HParams& hp, CacheType type, int64_t n) {
  const uint64_t Di = hp.kda_inner(), K1 = hp.ssm_conv_kernel - 1, H = hp.n_head, D = hp.kda_head_dim;
  const uint64_t kda = (3 * Di * K1 + H * D * D) * sizeof(float);
  const uint64_t mla = static_cast<uint64_t>(n) * row_width(hp) * (type == CacheType::F32 ? 4 : 2);
  return hp.n_kda_layers() * kda + hp.n_mla_layers() * mla;
}

}  // namespace k3::model
