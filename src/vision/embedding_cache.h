// vision/embedding_cache: image embeddings kept by content hash, so a conversation that sends
// the same picture every turn (chat clients resend the whole history) runs the tower once.
// Contract: embed() returns the embedding of `img` (whose content hash is `hash`), from the
// cache or computed now; thread-safe. One tower run at a time, on the cache's own thread pool
// (concurrent requests for new images wait their turn rather than oversubscribe the cores).
// Entries are dropped least-recently-used first once their floats exceed max_bytes; an entry
// in use by a caller stays alive through its shared_ptr.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "vision/encode.h"

namespace k3 {
class ThreadPool;
}

namespace k3::vision {

class EmbeddingCache {
 public:
  EmbeddingCache(std::shared_ptr<const Tower> tower, size_t max_bytes, int n_threads);
  ~EmbeddingCache();

  std::shared_ptr<const ImageEmbedding> embed(RgbView img, uint64_t hash);
  const Tower& tower() const { return *tower_; }
  uint64_t hits() const;
  uint64_t misses() const;

 private:
  std::shared_ptr<const Tower> tower_;
  size_t max_bytes_;
  std::unique_ptr<ThreadPool> pool_;
  mutable std::mutex mu_;    // the map and the LRU list
  std::mutex run_mu_;        // one tower run at a time
  std::list<uint64_t> lru_;  // most recent first
  struct Entry {
    std::shared_ptr<const ImageEmbedding> e;
    std::list<uint64_t>::iterator at;
  };
  std::unordered_map<uint64_t, Entry> map_;
  size_t bytes_ = 0;
  uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace k3::vision
