// grammar/work_budget: how long grammar work may run, and how to stop it early.
// Contract: compiling a grammar or a schema and computing a mask are loops whose length a
// client chooses. Each such loop calls tick() as it works; tick() is a counter increment, and
// every kPollEvery ticks it reads the clock and asks `cancelled`. Past the deadline it throws
// BudgetExceeded, when `cancelled` answers true (the client hung up, the server drains) it
// throws Cancelled. Both are k3::Error, so callers that only know k3::Error still stop; the
// server tells them apart to answer 4xx or to drop the request silently.
// The limit is wall time by default; a budget made with Measure::ThreadCpu counts the CPU time
// of the thread that ticks it instead, so work run at low priority (a grammar mask computed
// beside the decoder) is charged what it did, not how long it waited for a core.
// A default-constructed budget never expires and is never cancelled (tools and tests).
#pragma once

#include <time.h>

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

  enum class Measure { Wall, ThreadCpu };

  WorkBudget() = default;
  // `what` names the work in messages ("compiling the grammar", "the grammar's mask").
  WorkBudget(std::string what, Clock::duration limit, std::function<bool()> cancelled = {},
             Measure measure = Measure::Wall)
      : what_(std::move(what)),
        limit_(limit),
        measure_(measure),
        unlimited_(limit >= Clock::duration::max() / 2),
        start_(now()),
        cancelled_(std::move(cancelled)) {}

  void tick(size_t n = 1) {
    ticks_ += n;
    if (ticks_ >= next_poll_) poll();
  }

  // Reads the clock and the cancellation probe now.
  void poll() {
    next_poll_ = ticks_ + kPollEvery;
    if (cancelled_ && cancelled_()) throw Cancelled(fmt::format("grammar: {} was cancelled", what_));
    if (!unlimited_ && now() - start_ > limit_)
      throw BudgetExceeded(fmt::format("grammar: {} took longer than its limit of {} ms{}", what_,
                                       std::chrono::duration_cast<std::chrono::milliseconds>(limit_).count(),
                                       measure_ == Measure::ThreadCpu ? " of CPU time" : ""));
  }

  size_t ticks() const { return ticks_; }

 private:
  Clock::duration now() const {
    if (measure_ == Measure::Wall) return Clock::now().time_since_epoch();
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return std::chrono::duration_cast<Clock::duration>(std::chrono::seconds(ts.tv_sec) +
                                                       std::chrono::nanoseconds(ts.tv_nsec));
  }

  std::string what_;
  Clock::duration limit_ = Clock::duration::max();
  Measure measure_ = Measure::Wall;
  bool unlimited_ = true;
  Clock::duration start_{};
  std::function<bool()> cancelled_;
  size_t ticks_ = 0;
  size_t next_poll_ = kPollEvery;
};

}  // namespace k3::grammar
