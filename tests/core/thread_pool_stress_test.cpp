// Thread-pool stress: many jobs of random sizes, grains and chunkings on pools larger than the
// machine, with plain (non-atomic) writes that only the pool's own synchronisation orders. The
// results are checked here; the ThreadSanitizer build of CI (scripts/test.sh, K3_TSAN) runs
// the same test and fails on any data race the pool lets through.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "core/thread_pool.h"

namespace k3 {
namespace {

// Every element written by exactly one range, read back by the caller after the job: the
// read is race-free only if parallel_for's return happens-after every range's writes.
void run_jobs(ThreadPool& pool, uint32_t seed, int jobs) {
  std::mt19937 rng(seed);
  std::vector<int64_t> out;
  for (int j = 0; j < jobs; ++j) {
    const int64_t n = static_cast<int64_t>(rng() % 300);
    const int64_t grain = 1 + static_cast<int64_t>(rng() % 8);
    const int chunks = 1 + static_cast<int>(rng() % 4);
    out.assign(static_cast<size_t>(n), -1);
    const bool nap = rng() % 64 == 0;  // now and then a range sleeps: the others steal its chunks
    pool.parallel_for(
        n,
        [&](int64_t b, int64_t e, int th) {
          ASSERT_GE(th, 0);
          ASSERT_LT(th, pool.size());
          for (int64_t i = b; i < e; ++i) out[static_cast<size_t>(i)] = i * 3 + j;
          if (nap && b == 0) std::this_thread::sleep_for(std::chrono::microseconds(300));
        },
        grain, chunks);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[static_cast<size_t>(i)], i * 3 + j) << "job " << j;
    if (rng() % 500 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(3));  // workers go to sleep
  }
}

TEST(ThreadPoolStress, RandomJobsOnAnOversubscribedPool) {
  ThreadPool pool(4);  // more threads than the 2 cores of CI: preemption mid-job is common
  run_jobs(pool, 12345, 3000);
}

TEST(ThreadPoolStress, SeveralPoolsDrivenFromSeveralThreads) {
  std::vector<std::thread> callers;
  for (uint32_t t = 0; t < 3; ++t) {
    callers.emplace_back([t] {
      ThreadPool pool(2);
      run_jobs(pool, 777 + t, 800);
    });
  }
  for (auto& c : callers) c.join();
}

TEST(ThreadPoolStress, CreateAndDestroyUnderWork) {
  for (int round = 0; round < 60; ++round) {
    ThreadPool pool(1 + round % 4);
    run_jobs(pool, static_cast<uint32_t>(round), 20);
  }  // the destructor joins workers that may still be spinning or asleep
}

}  // namespace
}  // namespace k3
