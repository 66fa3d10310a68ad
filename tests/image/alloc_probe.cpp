// tests/image/alloc_probe: see alloc_probe.h. The replacements allocate with malloc, as
// libstdc++'s own do, so every delete (sized, unsized, array) frees the same way.
#include "alloc_probe.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<size_t> g_largest{0};
}

namespace imgtest {
void reset_largest_allocation() { g_largest = 0; }
size_t largest_allocation() { return g_largest; }
}  // namespace imgtest

void* operator new(std::size_t n) {
  size_t seen = g_largest.load(std::memory_order_relaxed);
  while (n > seen && !g_largest.compare_exchange_weak(seen, n, std::memory_order_relaxed)) {}
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return ::operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
