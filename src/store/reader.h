// store/reader: asynchronous positional reads of file ranges into caller memory — io_uring
// where the kernel allows it, else a pool of threads calling pread.
// Contract: submit() queues reads (never blocks on I/O); worker threads take them from the
// front of the queue a window at a time, issue each window sorted by (fd, offset) with up to
// `depth` reads in flight, and call the completion callback once per read on a worker
// thread, with ok=false and an error text when the read failed. A read of `len` bytes
// succeeds when at least `need` bytes arrived (O_DIRECT reads round the end up past EOF;
// short reads are continued). cancel(tag) removes the tag's reads still queued (their
// callbacks never run) and returns how many. Busy seconds count wall time with at least one
// read in flight. Destruction waits for the reads in flight and drops the queue.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace k3::store {

struct Read {
  int fd = -1;
  uint64_t offset = 0;
  uint64_t len = 0;
  uint64_t need = 0;  // bytes that must arrive (<= len)
  uint8_t* dst = nullptr;
  uint32_t tag = 0;  // the caller's id (a cache slot)
};

using ReadDone = std::function<void(uint32_t tag, bool ok, const std::string& error)>;

class Reader {
 public:
  virtual ~Reader() = default;
  void submit(std::vector<Read> reads);
  size_t cancel(uint32_t tag);
  virtual const char* name() const = 0;
  double busy_seconds() const;
  uint64_t bytes_read() const { return bytes_.load(std::memory_order_relaxed); }
  uint64_t reads_done() const { return reads_.load(std::memory_order_relaxed); }

 protected:
  explicit Reader(ReadDone done, int depth) : done_(std::move(done)), depth_(depth < 1 ? 1 : depth) {}
  // Takes up to `max` reads (waiting while the queue is empty and `wait` is set), sorted.
  // Returns an empty vector when stopping.
  std::vector<Read> take(size_t max, bool wait);
  void finished(const Read& r, bool ok, const std::string& error, uint64_t bytes);
  void request_stop();
  // Called first on each worker thread: raises its scheduling priority where permitted, so
  // completions are reaped (and the next reads issued) promptly on a busy machine.
  static void raise_priority();
  // Called after reads are queued and on stop: a back end whose thread can sleep in the
  // kernel (io_uring waiting for a completion) wakes it here so new reads start at once.
  virtual void wake() {}
  bool stopping() const { return stop_.load(); }

  ReadDone done_;
  int depth_;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Read> q_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> bytes_{0}, reads_{0};
  int64_t inflight_ = 0;
  double busy_ = 0;
  std::chrono::steady_clock::time_point busy_since_{};
};

// io_uring when `use_uring` is set and the kernel allows it, else the pread pool.
std::unique_ptr<Reader> make_reader(ReadDone done, int depth, bool use_uring);

}  // namespace k3::store
