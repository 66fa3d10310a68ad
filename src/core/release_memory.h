// core/release_memory: hand the memory the allocator holds free back to the system.
// Contract: glibc keeps freed blocks in its arenas (one per thread that allocated, up to 8 per
// core), so a server's RSS after a large request stays at that request's peak, and after a
// few such requests, on different threads, at their sum. release_freed_memory() asks every
// arena to return its free pages (malloc_trim); it takes milliseconds on a heap of hundreds of
// MiB, so it is for after large transient work, not for every request.
// keep_little_free_memory() is the policy of a long-running server: glibc raises its mmap
// and trim thresholds as large blocks come and go (up to 32 MiB), after which each thread's
// arena keeps that much free memory for good; fixed thresholds (blocks of 1 MiB and more are
// mapped and unmapped on their own, an arena keeps at most 4 MiB free at its top) keep what
// the allocator holds close to what is in use. Process-wide; call once at start.
#pragma once

namespace k3 {

void release_freed_memory();
void keep_little_free_memory();

}  // namespace k3
