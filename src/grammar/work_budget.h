// grammar/work_budget: how long grammar work may run, and how to stop it early.
// Contract: compiling a grammar or a schema and computing a mask are loops whose length a
// client chooses. Each such loop calls tick() as it works; tick() is a counter increment, and
// every kPollEvery ticks it reads the clock and asks `cancelled`. Past the deadline it throws
// BudgetExceeded, when `cancelled` answers true (the client hung up, the server drains) it
// throws Cancelled. Both are k3::Error, so callers that only know k3::Error still stop; the
// server tells them apart to answer 4xx or to drop the request silently.
// A default-constructed budget never expires and is never cancelled (tools and tests).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

#include "core/error.h"

namespace k3::grammar {

class BudgetExceeded : public Error {
 public:
  using Error::Error;
};

class Cancelled : public Error {
 public:
  using Error::Error;
};

class WorkBudget {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kPollEvery = 4096;

  WorkBudget() = default;
  // `what` names the work in messages ("compiling the grammar", "the grammar's mask").
  WorkBudget(std::string what, Clock::duration limit, std::function<bool()> cancelled = {})
      : what_(std::move(what)),
        limit_(limit),
        deadline_(limit >= Clock::duration::max() / 2 ? Clock::time_point::max() : Clock::now() + limit),
        cancelled_(std::move(cancelled)) {}

  void tick(size_t n = 1) {
    ticks_ += n;
    if (ticks_ >= next_poll_) poll();
  }

  // Reads the clock and the cancellation probe now.
  void poll() {
    next_poll_ = ticks_ + kPollEvery;
    if (cancelled_ && cancelled_()) throw Cancelled(fmt::format("grammar: {} was cancelled", what_));
    if (Clock::now() > deadline_)
      throw BudgetExceeded(
          fmt::format("grammar: {} took longer than its limit of {} ms", what_,
                      std::chrono::duration_cast<std::chrono::milliseconds>(limit_).count()));
  }

  size_t ticks() const { return ticks_; }

 private:
  std::string what_;
  Clock::duration limit_ = Clock::duration::max();
  Clock::time_point deadline_ = Clock::time_point::max();
  std::function<bool()> cancelled_;
  size_t ticks_ = 0;
  size_t next_poll_ = kPollEvery;
};

}  // namespace k3::grammar
