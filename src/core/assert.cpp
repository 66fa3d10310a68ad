// core/assert: see assert.h.
#include "core/assert.h"

#include <cstdio>
#include <cstdlib>

namespace k3::detail {

void assert_failed(const char* file, int line, const char* cond, const char* msg) noexcept {
  std::fprintf(stderr, "%s:%d: assertion failed: %s%s%s%s\n", file, line, cond, *msg ? " (" : "", msg,
               *msg ? ")" : "");
  std::fflush(stderr);
  std::abort();
}

}  // namespace k3::detail
