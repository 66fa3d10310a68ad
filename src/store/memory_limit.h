// store/memory_limit: how much memory this process may hold — the machine's RAM, or its
// control group's limit where that is lower (cgroup v2 memory.max, v1 memory.limit_in_bytes),
// so a budget larger than a container allows is refused up front instead of ending in an
// OOM kill once the cache fills.
// Contract: process_memory_limit() returns the limit in bytes (0 when /proc/meminfo cannot be
// read); `where` names what set it ("RAM" or "cgroup memory limit"). cgroup_memory_limit()
// is the control groups' lowest memory limit (0: none). memory_available() is the
// headroom the load-time copies (store/resident_trunk.h, the experts' decode copy) size against.
// proc_kib_field() reads a "Key:  N kB" line of a /proc file (meminfo, smaps_rollup) as bytes (0 when
// absent).
#pragma once

#include <cstdint>
#include <string>

namespace k3::store {

uint64_t process_memory_limit(std::string* where = nullptr);
// What the process could take now: MemAvailable, or the cgroup limit where that is lower.
uint64_t memory_available();
uint64_t cgroup_memory_limit();
uint64_t proc_kib_field(const char* path, const std::string& key);

}  // namespace k3::store
