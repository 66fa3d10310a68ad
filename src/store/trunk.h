// store/trunk: keeps the trunk (every non-expert tensor) of a mapped GGUF resident.
// Contract: pin_trunk() stops read-ahead on the expert tensors' pages (the store reads those
// itself; the mapping must not pull them into the page cache around a trunk fault), asks the
// kernel to read the trunk ranges now, and locks them in memory when the process may
// (root or CAP_IPC_LOCK / a large enough RLIMIT_MEMLOCK); it returns whether locking
// worked. unpin_trunk() undoes the lock. Ranges are page-aligned outward.
#pragma once

#include <vector>

namespace k3::gguf {
class GgufFile;
}

namespace k3::store {

// moved: sorted data pointers of trunk tensors that live elsewhere now (Model::moved_trunk:
// copied into huge pages); their ranges are neither read ahead nor locked.
bool pin_trunk(const gguf::GgufFile& f, const std::vector<const void*>& moved = {});
void unpin_trunk(const gguf::GgufFile& f, const std::vector<const void*>& moved = {});

}  // namespace k3::store
