// model/sequence_state: what one sequence carries between forward calls.
// Contract: an MLA latent cache per MLA layer (one row of key_length = C+R values per token:
// normalised c_kv then raw k_pe; F32 or F16) and, per KDA layer, the short-conv state (the
// last K-1 projected inputs of q, k and v) and the delta-rule state S (H × D × D, F32,
// element (i = key, j = value, h) at i + j·D + h·D², llama.cpp's layout). A fresh or cleared
// sequence is all zeros with no cache rows. Copies are deep.
// Saving and restoring (runtime/state_file.h, the engine's seq_set): chunks() lists the
// memory that is the whole state, in one fixed order (by layer: KDA conv then S; MLA cache
// rows), so a writer and a reader that walk it agree byte for byte; set_rows(hp, n) first
// gives a fresh state n tokens (n_past and n cache rows per MLA layer) to be filled.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
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

  // The state's memory as (pointer, bytes) pieces, in the order saved files use: to fill (a
  // reader) or to read (a writer).
  std::vector<std::pair<void*, size_t>> chunks();
  std::vector<std::pair<const void*, size_t>> chunks() const;
  // Sizes this state for n tokens: n_past = n and n rows of zeros per MLA layer (reserving
  // max_rows first, as the forward pass would).
  void set_rows(const HParams& hp, int64_t n);
  // Bytes of the saved form of n tokens of state (what chunks() covers after set_rows(n)).
  static uint64_t saved_bytes(const HParams& hp, CacheType type, int64_t n);

 private:
  CacheType cache_type_;
  int64_t n_past_ = 0;
  int64_t max_rows_ = 0;
  std::vector<KdaLayerState> kda_;
  std::vector<MlaLayerCache> mla_;
};

}  // namespace k3::model
