// store/eviction: LRU and decayed-frequency scores (see eviction.h).
#include "store/eviction.h"

#include <cmath>

namespace k3::store {
namespace {

class Lru final : public EvictionPolicy {
 public:
  void on_use(uint32_t, uint64_t) override {}
  double score(uint32_t, uint64_t last_use, uint64_t) const override { return static_cast<double>(last_use); }
};

class Lfu final : public EvictionPolicy {
 public:
  Lfu(size_t n, uint64_t half_life) : count_(n, 0.0), stamp_(n, 0), half_life_(half_life ? half_life : 1) {}
  void on_use(uint32_t key, uint64_t tick) override {
    count_[key] = decayed(key, tick) + 1.0;
    stamp_[key] = tick;
  }
  double score(uint32_t key, uint64_t last_use, uint64_t now) const override {
    // Recency only breaks ties: it adds less than one use.
    return decayed(key, now) + 0.5 * static_cast<double>(last_use) / static_cast<double>(now + 1);
  }

 private:
  double decayed(uint32_t key, uint64_t now) const {
    const double age = static_cast<double>(now - stamp_[key]);
    return count_[key] * std::exp2(-age / static_cast<double>(half_life_));
  }
  std::vector<double> count_;
  std::vector<uint64_t> stamp_;
  uint64_t half_life_;
};

}  // namespace

std::unique_ptr<EvictionPolicy> make_policy(Eviction kind, size_t n_keys, uint64_t half_life) {
  if (kind == Eviction::LFU) return std::make_unique<Lfu>(n_keys, half_life);
  return std::make_unique<Lru>();
}

}  // namespace k3::store
