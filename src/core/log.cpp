#include "core/log.h"

#include <atomic>

namespace k3::log {
namespace {
std::atomic<Level> g_level{Level::info};
}
Level level() { return g_level.load(std::memory_order_relaxed); }
void set_level(Level l) { g_level.store(l, std::memory_order_relaxed); }
}  // namespace k3::log
