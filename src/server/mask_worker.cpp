// server/mask_worker: see mask_worker.h.
#include "server/mask_worker.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/log.h"
#include "core/release_memory.h"

namespace k3::server {

namespace {

constexpr size_t kTrimAfterMatcher = 16u << 20;

// The calling thread runs only when a core would otherwise idle (SCHED_IDLE needs no
// privilege); where that is refused, at nice 19.
void lowest_priority() {
  sched_param p{};
  if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &p) == 0) return;
  if (setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19) != 0)
    log::debug("mask worker: could not lower the thread's priority");
}

}  // namespace

MaskWorker::MaskWorker(std::shared_ptr<const grammar::Grammar> g,
                       std::shared_ptr<const grammar::TokenVocab> vocab, grammar::MatcherLimits lim,
                       std::function<void()> on_ready)
    : on_ready_(std::move(on_ready)) {
  auto outer = std::move(lim.cancelled);
  lim.cancelled = [this, outer = std::move(outer)] { return stop_.load() || (outer && outer()); };
  thread_ = std::thread([this, g = std::move(g), vocab = std::move(vocab), lim = std::move(lim)]() mutable {
    run(std::move(g), std::move(vocab), std::move(lim));
  });
}

MaskWorker::~MaskWorker() {
  {
    std::lock_guard<std::mutex> lk(mu_);  // so the worker is either waiting or sees it
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  // A large matcher (or one stopped by its limits, which may have been at its cap) freed its
  // memory in the worker's own arena: hand it back.
  if (error_ || stats_.peak_bytes >= kTrimAfterMatcher) release_freed_memory();
}

void MaskWorker::feed(int32_t token) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    pending_.push_back(token);
    ready_.store(false, std::memory_order_release);
  }
  cv_.notify_all();
}

void MaskWorker::check() const {
  if (error_) std::rethrow_exception(error_);
}

void MaskWorker::run(std::shared_ptr<const grammar::Grammar> g,
                     std::shared_ptr<const grammar::TokenVocab> vocab, grammar::MatcherLimits lim) {
  lowest_priority();
  std::unique_ptr<grammar::GrammarMatcher> m;
  std::vector<int32_t> tokens;
  bool first = true;
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    cv_.wait(lk, [&] { return stop_.load() || first || !pending_.empty(); });
    if (stop_) return;
    tokens.swap(pending_);
    pending_.clear();
    lk.unlock();
    if (!error_) {
      try {
        if (first) m = std::make_unique<grammar::GrammarMatcher>(g, vocab, lim);
        for (int32_t t : tokens)
          if (!m->must_end()) m->accept(t);
        must_end_ = m->must_end();
        mask_ = must_end_ ? std::span<const uint64_t>() : m->allowed();
        stats_ = m->stats();
      } catch (...) {
        error_ = std::current_exception();
        if (m) stats_ = m->stats();
      }
    }
    first = false;
    tokens.clear();
    lk.lock();
    if (pending_.empty()) {
      ready_.store(true, std::memory_order_release);
      lk.unlock();
      if (on_ready_) on_ready_();
      lk.lock();
    }
  }
}

}  // namespace k3::server
