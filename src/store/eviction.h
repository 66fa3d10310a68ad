// store/eviction: which cached expert to drop when the store needs a slot.
// Contract: the store reports every acquisition (key = layer·n_expert + expert, a tick that
// grows by one per acquisition) and asks for a score of each candidate; the lowest score is
// evicted first. LRU scores by the last use. LFU ("frequency-aware") scores by an
// exponentially decayed use count that is remembered per expert even while it is not cached
// (so an expert that keeps coming back wins a slot), half-life `half_life` acquisitions,
// ties broken by recency.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "store/memory_options.h"

namespace k3::store {

class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;
  virtual void on_use(uint32_t key, uint64_t tick) = 0;
  virtual double score(uint32_t key, uint64_t last_use, uint64_t now) const = 0;
};

std::unique_ptr<EvictionPolicy> make_policy(Eviction kind, size_t n_keys, uint64_t half_life);

}  // namespace k3::store
