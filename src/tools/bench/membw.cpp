// tools/membw: multi-threaded streaming-read bandwidth and its per-machine cache.
#include "tools/bench/membw.h"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <ctime>
#include <vector>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/log.h"
#include "kernels/stream_read.h"

namespace k3::tools {
namespace {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

}  // namespace

std::string cpu_model_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.starts_with("model name")) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return trim(line.substr(colon + 1));
    }
  }
  return "unknown";
}

size_t last_level_cache_bytes() {
  size_t best = 0;
  for (int idx = 0; idx < 8; ++idx) {
    std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(idx) + "/size");
    std::string s;
    if (!(f >> s) || s.empty()) continue;
    size_t mult = 1;
    if (s.back() == 'K') mult = 1024;
    if (s.back() == 'M') mult = 1024 * 1024;
    best = std::max(best, static_cast<size_t>(std::strtoull(s.c_str(), nullptr, 10)) * mult);
  }
  return best;
}

double measure_read_bandwidth(const MemBwOptions& opt) {
  const int nt = std::max(1, opt.n_threads);
  size_t bytes = opt.buffer_bytes;
  if (bytes == 0) bytes = std::max<size_t>(size_t(512) << 20, 8 * last_level_cache_bytes());
  bytes = std::max<size_t>(bytes & ~size_t(4095), 4096 * static_cast<size_t>(nt));
  // In 2 MiB pages where the kernel gives them (as the engine's trunk, store/resident_trunk.h):
  // a reader gets more bandwidth from them, and the roofline is the best a reader can get.
  constexpr size_t kHuge = size_t(2) << 20;
  bytes = (bytes + kHuge - 1) / kHuge * kHuge;
  std::unique_ptr<void, FreeDeleter> buf(std::aligned_alloc(kHuge, bytes));
  if (!buf) fail("memory bandwidth: cannot allocate {} bytes", bytes);
  ::madvise(buf.get(), bytes, MADV_HUGEPAGE);
  // Touch every page with non-zero data so the reads hit real, distinct memory.
  std::memset(buf.get(), 1, bytes);

  const auto* base = static_cast<const unsigned char*>(buf.get());
  std::vector<uint64_t> sink(static_cast<size_t>(nt));
  double best = 0;
  // Runs cycle through plain reads and reads prefetching as far ahead as the decode kernels do
  // on Intel (3 KiB) and on AMD (6 KiB) (kernels/stream_read.h); the best of all is the figure.
  constexpr int kVariants = static_cast<int>(std::size(kernels::kStreamPrefetchChoices));
  const size_t n_lines = bytes / 32;  // each thread's slice stays 32-byte aligned
  for (int run = 0; run < kVariants * std::max(1, opt.runs); ++run) {
    const int ahead = kernels::kStreamPrefetchChoices[run % kVariants];
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (int t = 0; t < nt; ++t) {
      threads.emplace_back([&, t] {
        const size_t b = n_lines * t / nt, e = n_lines * (t + 1) / nt;
        sink[t] += kernels::stream_read_sum(base + 32 * b, 32 * (e - b), ahead);
      });
    }
    for (auto& th : threads) th.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 0) best = std::max(best, static_cast<double>(bytes) / s);
  }
  uint64_t total = 0;
  for (uint64_t v : sink) total += v;
  if (total == 0) fail("memory bandwidth: read check failed");  // all bytes are 1: never 0
  return best;
}

std::string default_membw_cache_path() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  std::string dir;
  if (xdg && *xdg) dir = xdg;
  else if (const char* home = std::getenv("HOME"); home && *home) dir = std::string(home) + "/.cache";
  else dir = "/tmp";
  return dir + "/k3/membw.json";
}

MemBw cached_read_bandwidth(const MemBwOptions& opt, bool remeasure, const std::string& cache_path) {
  MemBw r;
  r.cpu = cpu_model_name();
  r.n_threads = std::max(1, opt.n_threads);
  // "method=5": plain reads and reads prefetching 3 or 6 KiB ahead, in huge pages (figures
  // cached by older methods are not reused; they were lower on hosts where prefetch and huge
  // pages pay, and method 4's 4 KiB was short of the 6 KiB AMD's decode now prefetches).
  const std::string key = r.cpu + " | threads=" + std::to_string(r.n_threads) + " | method=5";

  nlohmann::json cache = nlohmann::json::object();
  {
    std::ifstream f(cache_path);
    if (f) {
      try {
        cache = nlohmann::json::parse(f);
        if (!cache.is_object()) cache = nlohmann::json::object();
      } catch (const std::exception&) {
        log::warn("ignoring unreadable bandwidth cache {}", cache_path);
        cache = nlohmann::json::object();
      }
    }
  }
  if (!remeasure && cache.contains(key)) {
    const auto& e = cache[key];
    if (e.is_object() && e.contains("bytes_per_s") && e["bytes_per_s"].is_number() &&
        e["bytes_per_s"].get<double>() > 0) {
      r.bytes_per_s = e["bytes_per_s"].get<double>();
      r.buffer_bytes = e.value("buffer_bytes", size_t(0));
      r.source = "cache";
      return r;
    }
  }
  MemBwOptions o = opt;
  if (o.buffer_bytes == 0) o.buffer_bytes = std::max<size_t>(size_t(512) << 20, 8 * last_level_cache_bytes());
  r.bytes_per_s = measure_read_bandwidth(o);
  r.buffer_bytes = o.buffer_bytes;
  r.source = "measured";
  cache[key] = {{"bytes_per_s", r.bytes_per_s},
                {"buffer_bytes", r.buffer_bytes},
                {"cpu", r.cpu},
                {"threads", r.n_threads},
                {"runs", o.runs},
                {"measured_at", static_cast<int64_t>(std::time(nullptr))}};
  try {
    std::filesystem::create_directories(std::filesystem::path(cache_path).parent_path());
    const std::string text = cache.dump(2) + "\n";
    AtomicFile out(cache_path);
    out.write(text.data(), text.size());
    out.commit();
  } catch (const std::exception& e) {
    log::warn("could not write bandwidth cache {}: {}", cache_path, e.what());
  }
  return r;
}

}  // namespace k3::tools
