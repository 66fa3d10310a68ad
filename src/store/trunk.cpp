// store/trunk: madvise/mlock over the trunk's mapped ranges (see trunk.h).
#include "store/trunk.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "gguf/file.h"

namespace k3::store {
namespace {

using Range = std::pair<uintptr_t, uintptr_t>;

std::vector<Range> ranges(const gguf::GgufFile& f, bool experts, const std::vector<const void*>& moved = {}) {
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  std::vector<Range> rs;
  for (const gguf::TensorInfo& t : f.tensors()) {
    if ((t.name.find("_exps.") != std::string::npos) != experts || !t.data || t.nbytes == 0) continue;
    if (!experts && std::binary_search(moved.begin(), moved.end(), static_cast<const void*>(t.data)))
      continue;
    const uintptr_t a = reinterpret_cast<uintptr_t>(t.data);
    uintptr_t lo = a / page * page, hi = (a + t.nbytes + page - 1) / page * page;
    if (experts) {  // inward: never touch a page a trunk tensor shares
      lo = (a + page - 1) / page * page;
      hi = (a + t.nbytes) / page * page;
      if (hi <= lo) continue;
    }
    rs.push_back({lo, hi});
  }
  std::sort(rs.begin(), rs.end());
  std::vector<Range> merged;
  for (const Range& r : rs) {
    if (!merged.empty() && r.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, r.second);
    else merged.push_back(r);
  }
  return merged;
}

}  // namespace

bool pin_trunk(const gguf::GgufFile& f, const std::vector<const void*>& moved) {
  for (const Range& r : ranges(f, true))
    ::madvise(reinterpret_cast<void*>(r.first), r.second - r.first, MADV_RANDOM);
  const std::vector<Range> trunk = ranges(f, false, moved);
  for (const Range& r : trunk) ::madvise(reinterpret_cast<void*>(r.first), r.second - r.first, MADV_WILLNEED);
  bool locked = true;
  for (const Range& r : trunk)
    if (::mlock(reinterpret_cast<void*>(r.first), r.second - r.first) != 0) locked = false;
  if (!locked) unpin_trunk(f, moved);
  return locked;
}

void unpin_trunk(const gguf::GgufFile& f, const std::vector<const void*>& moved) {
  for (const Range& r : ranges(f, false, moved))
    ::munlock(reinterpret_cast<void*>(r.first), r.second - r.first);
}

}  // namespace k3::store
