// vision/embedding_cache: see embedding_cache.h.
#include "vision/embedding_cache.h"

#include "core/thread_pool.h"

namespace k3::vision {

EmbeddingCache::EmbeddingCache(std::shared_ptr<const Tower> tower, size_t max_bytes, int n_threads)
    : tower_(std::move(tower)),
      max_bytes_(max_bytes),
      pool_(std::make_unique<ThreadPool>(n_threads > 0 ? n_threads : ThreadPool::default_threads())) {}

EmbeddingCache::~EmbeddingCache() = default;

std::shared_ptr<const ImageEmbedding> EmbeddingCache::embed(RgbView img, uint64_t hash) {
  const auto find = [&]() -> std::shared_ptr<const ImageEmbedding> {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = map_.find(hash);
    if (it == map_.end()) return nullptr;
    lru_.splice(lru_.begin(), lru_, it->second.at);
    ++hits_;
    return it->second.e;
  };
  if (auto e = find()) return e;
  std::lock_guard<std::mutex> run(run_mu_);
  if (auto e = find()) return e;  // another request computed it while this one waited
  auto e = std::make_shared<const ImageEmbedding>(embed_image(*tower_, img, pool_.get()));
  std::lock_guard<std::mutex> lk(mu_);
  ++misses_;
  const size_t b = e->data.size() * sizeof(float);
  if (b <= max_bytes_) {
    lru_.push_front(hash);
    map_[hash] = {e, lru_.begin()};
    bytes_ += b;
    while (bytes_ > max_bytes_ && !lru_.empty()) {
      auto old = map_.find(lru_.back());
      bytes_ -= old->second.e->data.size() * sizeof(float);
      map_.erase(old);
      lru_.pop_back();
    }
  }
  return e;
}

uint64_t EmbeddingCache::hits() const {
  std::lock_guard<std::mutex> lk(mu_);
  return hits_;
}

uint64_t EmbeddingCache::misses() const {
  std::lock_guard<std::mutex> lk(mu_);
  return misses_;
}

}  // namespace k3::vision
