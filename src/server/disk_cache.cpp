// server/disk_cache: see disk_cache.h.
#include "server/disk_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>

#include "core/error.h"
#include "core/hash64.h"
#include "core/log.h"

namespace k3::server {

struct DiskCache::Entry {
  std::string file;  // name inside dir_
  std::string owner;
  uint64_t n_tokens = 0, chain = 0, bytes = 0;
  int64_t last_used = 0;  // ns since the epoch (the file's mtime across restarts)
};

struct DiskCache::Write {
  const model::SequenceState* state = nullptr;
  std::vector<int32_t> tokens;
  std::string owner;
  std::function<void()> done;
};

namespace {

constexpr const char* kSuffix = ".k3state";

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string file_name(const std::string& owner, uint64_t chain, size_t n) {
  return fmt::format("{:016x}-{:016x}-{}{}", hash64(owner.data(), owner.size()), chain, n, kSuffix);
}

}  // namespace

DiskCache::DiskCache(std::string dir, uint64_t max_bytes, runtime::StateTarget target,
                     std::function<void()> on_ready)
    : dir_(std::move(dir)), max_bytes_(max_bytes), target_(target), on_ready_(std::move(on_ready)) {
  if (dir_.empty()) fail("--prompt-cache-dir: empty path");
  if (::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST)
    fail("--prompt-cache-dir {}: cannot create it: {}", dir_, std::strerror(errno));
  const std::string lock = dir_ + "/lock";
  lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (lock_fd_ < 0) fail("--prompt-cache-dir {}: cannot open {}: {}", dir_, lock, std::strerror(errno));
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    ::close(lock_fd_);
    lock_fd_ = -1;
    if (e == EWOULDBLOCK)
      fail("--prompt-cache-dir {}: another k3 process uses this directory (each needs its own)", dir_);
    fail("--prompt-cache-dir {}: cannot lock {}: {}", dir_, lock, std::strerror(e));
  }
  // A file past RLIMIT_FSIZE is then a failed write (EFBIG) that costs one entry, not a
  // signal that ends the server.
  std::signal(SIGXFSZ, SIG_IGN);
  scan();
  writer_ = std::thread([this] { writer_loop(); });
  reader_ = std::thread([this] { reader_loop(); });
}

DiskCache::~DiskCache() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  writer_.join();
  reader_.join();
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

// Indexes the directory by headers. Temporaries are a killed writer's (the lock says no one
// else writes here), so they go.
void DiskCache::scan() {
  DIR* d = ::opendir(dir_.c_str());
  if (!d) fail("--prompt-cache-dir {}: cannot read it: {}", dir_, std::strerror(errno));
  while (dirent* de = ::readdir(d)) {
    const std::string name = de->d_name;
    const std::string path = dir_ + "/" + name;
    if (name.find(std::string(kSuffix) + ".tmp.") != std::string::npos) {
      ::unlink(path.c_str());
      log::info("prompt cache: removed {} (an unfinished write)", name);
      continue;
    }
    if (!ends_with(name, kSuffix)) continue;
    try {
      const runtime::StateFileInfo info = runtime::read_state_header(path, target_);
      struct stat st {};
      ::stat(path.c_str(), &st);
      Entry e{name,
              info.owner,
              info.n_tokens,
              info.chain,
              info.file_bytes,
              static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
      stats_.bytes += e.bytes;
      entries_.push_back(std::move(e));
    } catch (const std::exception& e) { log::warn("prompt cache: skipping {}", e.what()); }
  }
  ::closedir(d);
  stats_.entries = entries_.size();
  log::info("prompt cache on disk: {} ({} entries, {:.1f} MiB)", dir_, entries_.size(),
            static_cast<double>(stats_.bytes) / (1 << 20));
  evict_locked("");
}

DiskCache::Match DiskCache::lookup(const std::string& owner, std::span<const int32_t> prompt) const {
  std::lock_guard<std::mutex> lk(mu_);
  Match best;
  uint64_t h = kChainSeed;
  size_t at = 0;  // h is the chain of prompt[0, at)
  std::vector<const Entry*> mine;
  for (const Entry& e : entries_)
    if (e.owner == owner && e.n_tokens > 0 && e.n_tokens < prompt.size()) mine.push_back(&e);
  std::sort(mine.begin(), mine.end(),
            [](const Entry* a, const Entry* b) { return a->n_tokens < b->n_tokens; });
  for (const Entry* e : mine) {
    while (at < e->n_tokens) h = chain_next(h, prompt[at++]);
    if (h == e->chain) best = {e->file, e->n_tokens};
  }
  return best;
}

void DiskCache::note_miss() {
  std::lock_guard<std::mutex> lk(mu_);
  ++stats_.misses;
}

std::shared_ptr<DiskCache::Load> DiskCache::load(const Match& m) {
  auto l = std::make_shared<Load>();
  {
    std::lock_guard<std::mutex> lk(mu_);
    ++stats_.hits;
    reads_.emplace_back(m.file, l);
  }
  cv_.notify_all();
  return l;
}

bool DiskCache::store(const model::SequenceState* state, std::vector<int32_t> tokens, std::string owner,
                      std::function<void()> done) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    const std::string name = file_name(owner, runtime::token_chain(tokens), tokens.size());
    for (Entry& e : entries_)
      if (e.file == name && e.owner == owner) {
        e.last_used = now_ns();
        return false;
      }
    writes_.push_back(Write{state, std::move(tokens), std::move(owner), std::move(done)});
  }
  cv_.notify_all();
  return true;
}

DiskCacheStats DiskCache::stats() const {
  std::lock_guard<std::mutex> lk(mu_);
  return stats_;
}

void DiskCache::writer_loop() {
  for (;;) {
    Write w;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return stopping_ || !writes_.empty(); });
      if (writes_.empty()) return;  // stopping, and every queued write is done
      w = std::move(writes_.front());
      writes_.pop_front();
    }
    write_one(w);
    if (w.done) w.done();
  }
}

void DiskCache::write_one(Write& w) {
  const std::string name = file_name(w.owner, runtime::token_chain(w.tokens), w.tokens.size());
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t n = 0;
  try {
    n = runtime::write_state_file(dir_ + "/" + name, target_, *w.state, w.tokens, w.owner);
  } catch (const std::exception& e) {
    log::warn("prompt cache: not saved to disk: {}", e.what());
    std::lock_guard<std::mutex> lk(mu_);
    ++stats_.write_errors;
    return;
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::lock_guard<std::mutex> lk(mu_);
  ++stats_.writes;
  stats_.bytes_written += n;
  stats_.write_seconds_total += s;
  // Its own conversation's shorter entries are superseded: the new one holds all they did.
  std::vector<uint64_t> chain_at(w.tokens.size() + 1);
  chain_at[0] = kChainSeed;
  for (size_t i = 0; i < w.tokens.size(); ++i) chain_at[i + 1] = chain_next(chain_at[i], w.tokens[i]);
  std::vector<std::string> older;
  for (const Entry& e : entries_)
    if (e.owner == w.owner && e.n_tokens < w.tokens.size() && chain_at[e.n_tokens] == e.chain)
      older.push_back(e.file);
  for (const std::string& f : older) forget_locked(f, true);
  forget_locked(name, false);  // the same name rewritten: one entry
  entries_.push_back(Entry{name, w.owner, w.tokens.size(), chain_at.back(), n, now_ns()});
  stats_.bytes += n;
  stats_.entries = entries_.size();
  evict_locked(name);
}

// Least recently used first, until the files fit; `keep` (the entry just written) goes last,
// and only when it alone is larger than the budget.
void DiskCache::evict_locked(const std::string& keep) {
  if (max_bytes_ == 0) return;
  while (stats_.bytes > max_bytes_ && !entries_.empty()) {
    auto victim = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
      if (victim == entries_.end() ||
          (it->file != keep && (victim->file == keep || it->last_used < victim->last_used)))
        victim = it;
    if (victim->file == keep)
      log::warn("prompt cache: one state ({} bytes) exceeds --prompt-cache-size", victim->bytes);
    forget_locked(victim->file, true);
  }
}

void DiskCache::forget_locked(const std::string& file, bool unlink_file) {
  auto it = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.file == file; });
  if (it == entries_.end()) return;
  stats_.bytes -= it->bytes;
  if (unlink_file) ::unlink((dir_ + "/" + file).c_str());
  entries_.erase(it);
  stats_.entries = entries_.size();
}

void DiskCache::reader_loop() {
  for (;;) {
    std::pair<std::string, std::shared_ptr<Load>> r;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return stopping_ || !reads_.empty(); });
      if (stopping_) return;  // nobody waits for a read any more
      r = std::move(reads_.front());
      reads_.pop_front();
    }
    const auto t0 = std::chrono::steady_clock::now();
    const std::string path = dir_ + "/" + r.first;
    try {
      r.second->result = runtime::read_state_file(path, target_);
      ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // its mtime is its last use across restarts
    } catch (const std::exception& e) { r.second->error = e.what(); }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (r.second->error.empty()) {
        stats_.bytes_read += r.second->result.info.file_bytes;
        stats_.restore_seconds_total += s;
        for (Entry& e : entries_)
          if (e.file == r.first) e.last_used = now_ns();
      } else {
        ++stats_.load_failures;
        // Unusable now means unusable later; a file that is gone is simply forgotten.
        forget_locked(r.first, true);
      }
    }
    r.second->done.store(true);
    on_ready_();
  }
}

}  // namespace k3::server
