// core/thread_pool (owned with the kernels): coverage of [0, n), the caller taking part,
// nested calls running serially, rapid back-to-back dispatch, and the thread-count choice.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "core/thread_pool.h"

namespace k3 {
namespace {

TEST(ThreadPool, CoversRangeExactlyOnce) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 2, 7, 100, 1001}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      pool.parallel_for(n, [&](int64_t b, int64_t e, int th) {
        EXPECT_GE(th, 0);
        EXPECT_LT(th, threads);
        for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
      });
      for (auto& h : hits) ASSERT_EQ(h.load(), 1) << "threads=" << threads << " n=" << n;
    }
  }
}

TEST(ThreadPool, UsesSeveralThreadsAndRespectsGrain) {
  ThreadPool pool(2);
  std::atomic<int> calls{0};
  std::vector<std::thread::id> ids(2);
  pool.parallel_for(64, [&](int64_t, int64_t, int th) {
    ids[static_cast<size_t>(th)] = std::this_thread::get_id();
    calls++;
  });
  EXPECT_EQ(calls.load(), 2);
  EXPECT_NE(ids[0], ids[1]);
  calls = 0;
  pool.parallel_for(
      10,
      [&](int64_t b, int64_t e, int) {
        EXPECT_EQ(b, 0);
        EXPECT_EQ(e, 10);
        calls++;
      },
      8);  // 10/8 < 2 chunks: one range
  EXPECT_EQ(calls.load(), 1);
}

TEST(ThreadPool, NestedCallsRunSerially) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  pool.parallel_for(4, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i)
      pool.parallel_for(10, [&](int64_t b2, int64_t e2, int th) {
        EXPECT_EQ(th, 0);
        total += e2 - b2;
      });
  });
  EXPECT_EQ(total.load(), 40);
}

TEST(ThreadPool, ManyRapidDispatchesAndSleepingWorkers) {
  ThreadPool pool(2);
  int64_t sum = 0;
  std::vector<int64_t> part(2);
  const int reps = 4000;
  for (int rep = 0; rep < reps; ++rep) {
    part.assign(2, 0);
    pool.parallel_for(30, [&](int64_t b, int64_t e, int th) { part[static_cast<size_t>(th)] += e - b; });
    sum += part[0] + part[1];
    if (rep % 1000 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // workers sleep
  }
  EXPECT_EQ(sum, 30 * reps);
}

TEST(ThreadPool, FinerChunksCoverOnceAndRespectTheCap) {
  ThreadPool pool(2);
  // Runs of 500: halving chunks stop where the last would fall under the grain (500 >> 6 = 7).
  for (auto [cpt, want] : {std::pair{1, 2}, {4, 8}, {64, 14}}) {
    std::vector<std::atomic<int>> hits(1000);
    std::atomic<int> ranges{0};
    pool.parallel_for(
        1000,
        [&](int64_t b, int64_t e, int th) {
          EXPECT_LT(th, 2);
          EXPECT_GE(e - b, 7);  // grain
          ranges++;
          for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
        },
        7, cpt);
    for (auto& h : hits) ASSERT_EQ(h.load(), 1) << "cpt=" << cpt;
    EXPECT_EQ(ranges.load(), want) << "cpt=" << cpt;
  }
}

// Within each thread's run the chunks halve, so what is left to steal at the end is small.
TEST(ThreadPool, ChunksHalveWithinEachRun) {
  ThreadPool pool(2);
  std::mutex mu;
  std::set<std::pair<int64_t, int64_t>> got;
  pool.parallel_for(
      1600,
      [&](int64_t b, int64_t e, int) {
        std::lock_guard<std::mutex> lk(mu);
        got.insert({b, e});
      },
      1, 4);
  const std::set<std::pair<int64_t, int64_t>> want{{0, 400},    {400, 600},   {600, 700},   {700, 800},
                                                   {800, 1200}, {1200, 1400}, {1400, 1500}, {1500, 1600}};
  EXPECT_EQ(got, want);
}

// Each thread owns a contiguous run of chunks and takes it front to back (one stream of
// memory per thread); only what is left over is stolen, from the back of another run. So the
// chunks a thread runs from its own run are that run's first chunks, in order, whatever the
// timing: thread t's run is [800t, 800t + 800) here, cut at 400, 600, 700, ... of it.
TEST(ThreadPool, EachThreadTakesItsOwnRunFrontToBack) {
  ThreadPool pool(2);
  const std::vector<int64_t> starts{0, 400, 600, 700, 750, 775, 788, 794};
  for (int rep = 0; rep < 20; ++rep) {
    std::vector<std::vector<int64_t>> seen(2);
    pool.parallel_for(
        1600,
        [&](int64_t b, int64_t, int th) {
          seen[static_cast<size_t>(th)].push_back(b);
          const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(rep % 2 ? 50 : 0);
          while (std::chrono::steady_clock::now() < until) {}
        },
        1, 8);
    size_t total = 0;
    for (int th = 0; th < 2; ++th) {
      std::vector<int64_t> own;
      for (int64_t b : seen[static_cast<size_t>(th)])
        if (b / 800 == th) own.push_back(b);
      for (size_t i = 0; i < own.size(); ++i) EXPECT_EQ(own[i], 800 * th + starts[i]) << "rep " << rep;
      total += seen[static_cast<size_t>(th)].size();
    }
    EXPECT_EQ(total, 16u);
  }
}

// Wait statistics: off, nothing is gathered; on, a dispatch where one thread's only chunk
// takes 20 ms and the other's none leaves the other idle (after its chunk, or before it took
// part if it woke late) for most of those 20 ms, and the lost time never exceeds the threads'.
TEST(ThreadPool, WaitStatsCountTheIdleThreadOfAnUnevenDispatch) {
  ThreadPool pool(2);
  auto uneven = [](int64_t b, int64_t, int) {
    if (b == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  };
  pool.parallel_for(2, uneven);
  ThreadPool::WaitStats off = pool.take_wait_stats();
  EXPECT_EQ(off.dispatches, 0u);
  EXPECT_EQ(off.thread_seconds, 0.0);

  pool.set_wait_stats(true);
  pool.parallel_for(2, uneven);
  pool.parallel_for(1, uneven);  // one range: runs on the caller, not a dispatch
  const ThreadPool::WaitStats on = pool.take_wait_stats();
  EXPECT_EQ(on.dispatches, 1u);
  EXPECT_GE(on.thread_seconds, 2 * 0.019);
  const double lost = on.late_start_seconds + on.idle_end_seconds;
  EXPECT_GE(lost, 0.015);
  EXPECT_LE(lost, on.thread_seconds);
  EXPECT_EQ(pool.take_wait_stats().dispatches, 0u);  // taking starts again at zero
  pool.set_wait_stats(false);
  pool.parallel_for(2, uneven);
  EXPECT_EQ(pool.take_wait_stats().dispatches, 0u);
}

TEST(ThreadPool, DefaultThreadsIsSane) {
  const int n = ThreadPool::default_threads();
  EXPECT_GE(n, 1);
  EXPECT_LE(n, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

}  // namespace
}  // namespace k3
