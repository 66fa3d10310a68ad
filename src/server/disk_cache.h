// server/disk_cache: the prompt cache's disk tier (--prompt-cache-dir), below the scheduler's
// snapshots in RAM. Each entry is one state file (runtime/state_file.h): the state after a
// token prefix, for one owner (cache_key / user).
// Contract:
// * The constructor creates the directory (0700) if needed and takes an exclusive flock on
//   its "lock" file: a second process on the same directory gets a k3::Error naming it, not
//   a shared index. It removes temporaries a killed writer left, and indexes the state files
//   by their headers alone (owner, token count, prefix-chain hash, size, mtime as last use);
//   a file that does not match the model, is of another version, truncated or corrupt is
//   skipped with one log line.
// * lookup(owner, prompt) finds the entry of that owner with the most tokens that are a
//   proper prefix of the prompt, by the chain hashes alone (no file is read).
// * load(entry) reads and verifies the file on the reader thread and calls on_ready when done;
//   a failed read (removed, corrupt) drops the entry and says why in Load::error.
// * store(state, tokens, owner, done) writes on the writer thread, never the caller's: the
//   caller keeps `state` unchanged until `done` runs (also on failure). A new entry replaces
//   the entries of its owner whose tokens it extends (its own conversation's older turn);
//   then least recently used entries go until the files fit max_bytes. A failed write (disk
//   full, directory gone) is one log line and a count; nothing else changes.
// * The destructor finishes the writes already queued, then joins both threads.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "runtime/state_file.h"

namespace k3::server {

struct DiskCacheStats {
  uint64_t hits = 0, misses = 0;  // lookups that found an entry / admissions that did not
  uint64_t load_failures = 0;     // entries found but unusable when read (fell back to prefill)
  uint64_t writes = 0, write_errors = 0;
  uint64_t bytes_written = 0, bytes_read = 0;
  uint64_t entries = 0, bytes = 0;  // on disk now
  double restore_seconds_total = 0, write_seconds_total = 0;
};

class DiskCache {
 public:
  struct Load {
    std::atomic<bool> done{false};
    runtime::SavedState result;  // valid when done and error is empty
    std::string error;
  };

  DiskCache(std::string dir, uint64_t max_bytes, runtime::StateTarget target, std::function<void()> on_ready);
  ~DiskCache();
  DiskCache(const DiskCache&) = delete;
  DiskCache& operator=(const DiskCache&) = delete;

  // The entry to restore and its token count; 0 tokens: none (a miss is counted by the caller
  // through note_miss, which knows whether RAM served it instead).
  struct Match {
    std::string file;
    size_t n_tokens = 0;
  };
  Match lookup(const std::string& owner, std::span<const int32_t> prompt) const;
  void note_miss();
  std::shared_ptr<Load> load(const Match& m);
  // False (and `done` not called) when an entry with these exact tokens and owner exists.
  bool store(const model::SequenceState* state, std::vector<int32_t> tokens, std::string owner,
             std::function<void()> done);
  DiskCacheStats stats() const;
  const std::string& dir() const { return dir_; }
  uint64_t max_bytes() const { return max_bytes_; }

 private:
  struct Entry;
  struct Write;
  void scan();
  void writer_loop();
  void reader_loop();
  void write_one(Write& w);
  void evict_locked(const std::string& keep);
  void forget_locked(const std::string& file, bool unlink_file);

  std::string dir_;
  uint64_t max_bytes_;
  runtime::StateTarget target_;
  std::function<void()> on_ready_;
  int lock_fd_ = -1;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Entry> entries_;
  std::deque<Write> writes_;
  std::deque<std::pair<std::string, std::shared_ptr<Load>>> reads_;
  bool stopping_ = false;
  DiskCacheStats stats_;
  std::thread writer_, reader_;
};

}  // namespace k3::server
