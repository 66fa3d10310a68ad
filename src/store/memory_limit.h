// store/memory_limit: how much memory this process may hold — the machine's RAM, or its
// control group's limit where that is lower (cgroup v2 memory.max, v1 memory.limit_in_bytes),
// so a budget larger than a container allows is refused up front instead of ending in an
// OOM kill once the cache fills.
// Contract: returns the limit in bytes (0 when /proc/meminfo cannot be read); `where` names
// what set it ("RAM" or "cgroup memory limit").
#pragma once

#include <cstdint>
#include <string>

namespace k3::store {

uint64_t process_memory_limit(std::string* where = nullptr);

}  // namespace k3::store
