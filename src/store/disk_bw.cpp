// store/disk_bw: sequential O_DIRECT bandwidth (see disk_bw.h).
#include "store/disk_bw.h"

#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "core/error.h"
#include "store/direct_file.h"
#include "store/reader.h"

namespace k3::store {

DiskBw measure_disk_bw(const std::string& path, uint64_t max_bytes, bool use_uring) {
  constexpr uint64_t kChunk = 4ull << 20;
  constexpr int kDepth = 8;
  DirectFile f(path);
  DiskBw r;
  r.direct = f.direct();
  const uint64_t usable = f.size() / kChunk * kChunk;
  const uint64_t total = std::min(usable, max_bytes / kChunk * kChunk);
  if (total == 0) return r;
  const uint64_t start = (usable - total) / 2 / kChunk * kChunk;
  void* mem = ::mmap(nullptr, kChunk * kDepth, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) fail("disk bandwidth: cannot allocate {} bytes", kChunk * kDepth);
  std::mutex mu;
  std::condition_variable cv;
  uint64_t done = 0;
  std::string err;
  auto reader = make_reader(
      [&](uint32_t, bool ok, const std::string& e) {
        std::lock_guard<std::mutex> lk(mu);
        if (!ok && err.empty()) err = e;
        ++done;
        cv.notify_all();
      },
      kDepth, use_uring);
  r.backend = reader->name();
  const uint64_t n = total / kChunk;
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t issued = 0;
  {
    std::unique_lock<std::mutex> lk(mu);
    while (done < n) {
      // Keep kDepth reads queued or in flight; buffer i % kDepth is free once read i-kDepth is.
      while (issued < n && issued < done + kDepth) {
        Read rd;
        rd.fd = f.fd();
        rd.offset = start + issued * kChunk;
        rd.len = rd.need = kChunk;
        rd.dst = static_cast<uint8_t*>(mem) + (issued % kDepth) * kChunk;
        rd.tag = static_cast<uint32_t>(issued);
        lk.unlock();
        reader->submit({rd});
        lk.lock();
        ++issued;
      }
      cv.wait(lk, [&] { return done >= std::min(n, issued) || (issued < n && done + kDepth > issued); });
    }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  reader.reset();
  ::munmap(mem, kChunk * kDepth);
  if (!err.empty()) fail("{}: read failed while measuring disk bandwidth: {}", path, err);
  f.drop_cache(start, total);
  r.bytes = total;
  r.bytes_per_s = r.seconds > 0 ? static_cast<double>(total) / r.seconds : 0;
  return r;
}

}  // namespace k3::store
