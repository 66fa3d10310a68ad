// store/resident_trunk: copy the streamed trunk matrices into huge pages (see resident_trunk.h).
#include "store/resident_trunk.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

#include "core/mapped_file.h"
#include "core/progress.h"
#include "gguf/file.h"
#include "model/model.h"
#include "store/memory_limit.h"
#include "store/memory_options.h"

namespace k3::store {
namespace {

constexpr uint64_t kHuge = uint64_t{2} << 20;

uint64_t round_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

// One contiguous stretch of the mapping that holds trunk matrices, and where its copy is.
struct Run {
  const uint8_t* lo;
  const uint8_t* hi;
  uint64_t at = 0;  // offset in the arena
};

}  // namespace

ResidentTrunk make_resident_trunk(model::Model& m, uint64_t min_bytes, bool budgeted, bool progress_on) {
  ResidentTrunk r;
  {
    std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string mode;
    std::getline(f, mode);
    if (mode.empty()) {
      r.skipped = "this kernel offers no transparent huge pages";
      return r;
    }
    if (mode.find("[never]") != std::string::npos) {
      r.skipped = "transparent huge pages are off (/sys/kernel/mm/transparent_hugepage/enabled: never)";
      return r;
    }
  }

  std::vector<Run> runs;
  model::for_each_streamed_matrix(m.weights(), [&](const kernels::WeightView& v) {
    const uint8_t* p = static_cast<const uint8_t*>(v.data);
    runs.push_back({p, p + static_cast<uint64_t>(v.rows) * v.row_stride});
  });
  if (runs.empty()) {
    r.skipped = "the model has no trunk matrices";
    return r;
  }
  // Tensors sit back to back in the file (a few alignment bytes apart): copy them as runs.
  std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.lo < b.lo; });
  std::vector<Run> merged;
  for (const Run& x : runs) {
    if (!merged.empty() && x.lo <= merged.back().hi + 4096)
      merged.back().hi = std::max(merged.back().hi, x.hi);
    else merged.push_back(x);
  }
  uint64_t total = 0;
  for (Run& x : merged) {
    x.at = total;
    total += round_up(static_cast<uint64_t>(x.hi - x.lo), 64);
  }

  if (total < min_bytes) {
    r.small = true;
    r.skipped = fmt::format("the trunk ({}) is under {}", format_size(total), format_size(min_bytes));
    return r;
  }
  const uint64_t avail = memory_available();
  if (!budgeted && total > avail / 2) {
    r.skipped = fmt::format("the trunk ({}) is more than half the memory available ({})", format_size(total),
                            format_size(avail));
    return r;
  }
  uint64_t file_bytes = 0;
  for (const gguf::Shard& sh : m.gguf().shards()) file_bytes += sh.file_size;

  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t huge_before = proc_kib_field("/proc/self/smaps_rollup", "AnonHugePages");
  // Over-allocate by one huge page so the arena can start on a 2 MiB boundary.
  const uint64_t span = round_up(total, kHuge) + kHuge;
  void* raw = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    r.skipped = fmt::format("cannot allocate {} for the copy: {}", format_size(total), std::strerror(errno));
    return r;
  }
  uint8_t* base = reinterpret_cast<uint8_t*>(round_up(reinterpret_cast<uintptr_t>(raw), kHuge));
  ::madvise(base, round_up(total, kHuge), MADV_HUGEPAGE);
  // The copy is also the first touch: in a VM most of its time is the host backing the
  // pages (2.7 s for 0.96 GiB on the 2-vCPU Xeon VM, 0.2 s of it the copy itself).
  {
    Progress bar(total, "trunk", progress_on && total >= (uint64_t{1} << 30));
    constexpr size_t kPiece = size_t{64} << 20;
    for (const Run& x : merged) {
      for (size_t off = 0, n = static_cast<size_t>(x.hi - x.lo); off < n; off += kPiece) {
        const size_t len = std::min(kPiece, n - off);
        std::memcpy(base + x.at + off, x.lo + off, len);
        bar.advance(len);
      }
    }
    bar.finish();
  }
  ::mprotect(base, round_up(total, kHuge), PROT_READ);  // weights are read-only from here on

  // Keep the footprint that of the mapped file where both would not fit: drop our page-table
  // entries for the copied ranges (inward to whole pages, never a page an expert or
  // token_embd shares) and then the page cache behind them.
  if (budgeted || file_bytes + total > avail) {
    const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    for (size_t s = 0; s < m.gguf().shards().size(); ++s) {
      const MappedFile& map = m.gguf().mapping(s);
      const int fd = ::open(map.path().c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      for (const Run& x : merged) {
        if (x.lo < map.data() || x.hi > map.data() + map.size()) continue;
        const uintptr_t lo = round_up(reinterpret_cast<uintptr_t>(x.lo), page);
        const uintptr_t hi = reinterpret_cast<uintptr_t>(x.hi) / page * page;
        if (hi <= lo) continue;
        ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
        ::posix_fadvise(fd, static_cast<off_t>(lo - reinterpret_cast<uintptr_t>(map.data())),
                        static_cast<off_t>(hi - lo), POSIX_FADV_DONTNEED);
      }
      ::close(fd);
    }
    r.dropped_page_cache = true;
  }

  std::shared_ptr<const void> memory(raw, [span](const void* p) { ::munmap(const_cast<void*>(p), span); });
  m.move_trunk(std::move(memory), [&](const void* old) -> const void* {
    const uint8_t* p = static_cast<const uint8_t*>(old);
    auto it = std::upper_bound(merged.begin(), merged.end(), p,
                               [](const uint8_t* q, const Run& x) { return q < x.lo; });
    const Run& x = *(it - 1);  // every view lies inside the run it was merged into
    return base + x.at + (p - x.lo);
  });
  r.bytes = total;
  const uint64_t huge_after = proc_kib_field("/proc/self/smaps_rollup", "AnonHugePages");
  r.huge_bytes = huge_after > huge_before ? std::min(total, huge_after - huge_before) : 0;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace k3::store
