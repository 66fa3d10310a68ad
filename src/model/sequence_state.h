// model/sequence_state: what one sequence carries between forward calls.
// Contract: an MLA latent cache per MLA layer (one row of key_length = C+R values per token:
// normalised c_kv then raw k_pe; F32 or F16) and, per KDA layer, the short-conv state (the
// last K-1 projected inputs of q, k and v) and the delta-rule state S (H × D × D, F32,
// element (i = key, j = value, h) at i + j·D + h·D², llama.cpp's layout). A fresh or cleared
// sequence is all zeros with no cache rows. Copies are deep.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace k3::model {

struct HParams;

enum class CacheType { F32, F16 };

struct KdaLayerState {
  std::vector<float> conv;  // [3 (q,k,v)][Di][K-1], oldest first
  std::vector<float> S;     // [H][D (value j)][D (key i)]
};

struct MlaLayerCache {
  std::vector<float> f32;     // n_rows × row (CacheType::F32)
  std::vector<uint16_t> f16;  // n_rows × row (CacheType::F16)
};

class SequenceState {
 public:
  SequenceState(const HParams& hp, CacheType cache_type);

  int64_t n_past() const { return n_past_; }
  void set_n_past(int64_t n) { n_past_ = n; }
  CacheType cache_type() const { return cache_type_; }
  void clear();

  // Indexed by layer; entries of the other kind are empty.
  std::vector<KdaLayerState>& kda() { return kda_; }
  std::vector<MlaLayerCache>& mla() { return mla_; }
  const std::vector<KdaLayerState>& kda() const { return kda_; }
  const std::vector<MlaLayerCache>& mla() const { return mla_; }

  // The most cache rows a layer will hold (the engine's context). The first row appended to
  // a layer reserves all of them, so the cache never reallocates (no doubling, no transient
  // second copy); reserved pages cost memory only once written. 0: grow as needed.
  void set_max_rows(int64_t n) { max_rows_ = n; }
  int64_t max_rows() const { return max_rows_; }

  // Bytes allocated now (the capacity of the cache rows plus the fixed KDA state).
  size_t bytes() const;

 private:
  CacheType cache_type_;
  int64_t n_past_ = 0;
  int64_t max_rows_ = 0;
  std::vector<KdaLayerState> kda_;
  std::vector<MlaLayerCache> mla_;
};

}  // namespace k3::model
