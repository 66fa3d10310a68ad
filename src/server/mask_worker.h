// server/mask_worker: one request's grammar matcher, driven on a thread of its own.
// Contract: the scheduler's thread decodes for every client, so a grammar whose masks are
// costly must not run there (one hostile request would slow all). A MaskWorker owns the
// matcher and a thread at the lowest CPU priority (SCHED_IDLE, else nice 19): feed() queues a
// token for the matcher to accept, and once the queue is drained the worker computes the next
// mask; ready() says the mask after every token fed is there to read. So a mask is computed
// while the engine decodes the batch, and a slow one delays only its own request. Each
// token's work is bounded by the matcher's limits (grammar/matcher.h), measured in the
// worker's own CPU time; a failure is kept and rethrown by check() (grammar::Cancelled when
// the request went away, another k3::Error for a grammar past its limits). on_ready is
// called on the worker's thread each time it becomes ready, holding no lock of its own.
// The destructor stops the work in progress (through the matcher's cancellation probe) and
// joins the thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "grammar/matcher.h"

namespace k3::server {

class MaskWorker {
 public:
  // `lim.cancelled`, if set, is asked too (the request's own cancellation).
  MaskWorker(std::shared_ptr<const grammar::Grammar> g, std::shared_ptr<const grammar::TokenVocab> vocab,
             grammar::MatcherLimits lim, std::function<void()> on_ready);
  ~MaskWorker();
  MaskWorker(const MaskWorker&) = delete;
  MaskWorker& operator=(const MaskWorker&) = delete;

  void feed(int32_t token);
  bool ready() const { return ready_.load(std::memory_order_acquire); }
  // After ready(): rethrows what stopped the matcher, if anything.
  void check() const;
  // After ready() and check(): the grammar is complete with nothing to follow, and the mask.
  bool must_end() const { return must_end_; }
  std::span<const uint64_t> mask() const { return mask_; }
  // The matcher's counters as of the last ready().
  grammar::GrammarMatcher::Stats stats() const { return stats_; }

 private:
  void run(std::shared_ptr<const grammar::Grammar> g, std::shared_ptr<const grammar::TokenVocab> vocab,
           grammar::MatcherLimits lim);

  std::function<void()> on_ready_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int32_t> pending_;   // fed, not yet accepted
  std::atomic<bool> stop_{false};  // set under mu_; also read by the matcher's probe
  std::atomic<bool> ready_{false};
  // Written by the worker before ready_ turns true, read by the scheduler after.
  std::exception_ptr error_;
  bool must_end_ = false;
  std::span<const uint64_t> mask_;
  grammar::GrammarMatcher::Stats stats_;
  std::thread thread_;
};

}  // namespace k3::server
