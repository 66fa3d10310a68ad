// store/memory_limit: see memory_limit.h.
#include "store/memory_limit.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace k3::store {

namespace {

// A limit file's value; 0 for "max", a huge "no limit" number, or no file.
uint64_t read_limit(const std::string& path) {
  std::ifstream f(path);
  std::string v;
  if (!(f >> v) || v == "max") return 0;
  try {
    const uint64_t b = std::stoull(v);
    return b >= (uint64_t{1} << 60) ? 0 : b;
  } catch (...) { return 0; }
}

}  // namespace

uint64_t proc_kib_field(const char* path, const std::string& key) {
  std::ifstream f(path);
  std::string k;
  uint64_t kib = 0;
  while (f >> k) {
    if (k == key + ":" && f >> kib) return kib * 1024;
    f.ignore(1 << 20, '\n');
  }
  return 0;
}

uint64_t cgroup_memory_limit() {
  std::ifstream f("/proc/self/cgroup");
  std::string line;
  uint64_t best = 0;
  auto take = [&](uint64_t b) {
    if (b && (!best || b < best)) best = b;
  };
  while (std::getline(f, line)) {
    // "ID:CONTROLLERS:PATH"; v2 is "0::PATH"
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string ctrl = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (ctrl.empty()) take(read_limit("/sys/fs/cgroup" + path + "/memory.max"));
    std::stringstream cs(ctrl);
    for (std::string c; std::getline(cs, c, ',');)
      if (c == "memory") take(read_limit("/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes"));
  }
  return best;
}

uint64_t memory_available() {
  const uint64_t avail = proc_kib_field("/proc/meminfo", "MemAvailable"), cg = cgroup_memory_limit();
  return cg ? std::min(avail, cg) : avail;
}

uint64_t process_memory_limit(std::string* where) {
  const uint64_t ram = proc_kib_field("/proc/meminfo", "MemTotal"), cg = cgroup_memory_limit();
  const bool by_cgroup = cg && (!ram || cg < ram);
  if (where) *where = by_cgroup ? "cgroup memory limit" : "RAM";
  return by_cgroup ? cg : ram;
}

}  // namespace k3::store
