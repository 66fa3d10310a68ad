// core/release_memory: see release_memory.h.
#include "core/release_memory.h"

#include <malloc.h>

namespace k3 {

void release_freed_memory() { malloc_trim(0); }

void keep_little_free_memory() {
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  mallopt(M_TRIM_THRESHOLD, 4 << 20);
}

}  // namespace k3
