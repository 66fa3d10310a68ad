// core/assert: invariants that hold whatever the input. A broken one is a bug in k3, not in
// a file or a request, so it is not a k3::Error: K3_ASSERT prints `file:line: assertion
// failed: condition (message)` to stderr and aborts, like ggml's GGML_ASSERT, in every build.
// It guards module boundaries and kernel entries, where a wrong shape or stride would
// otherwise give silent garbage ("kernels never throw" is a promise about inputs validated at
// bind, and this is what checks it). K3_DEBUG_ASSERT is for checks inside hot loops: compiled
// only without NDEBUG (the Debug build), a no-op otherwise.
// The message is an optional string literal.
#pragma once

namespace k3::detail {

[[noreturn]] void assert_failed(const char* file, int line, const char* cond, const char* msg) noexcept;

}  // namespace k3::detail

#define K3_ASSERT(cond, ...) \
  ((cond) ? static_cast<void>(0) : ::k3::detail::assert_failed(__FILE__, __LINE__, #cond, "" __VA_ARGS__))

#ifdef NDEBUG
#define K3_DEBUG_ASSERT(cond, ...) static_cast<void>(0)
#else
#define K3_DEBUG_ASSERT(cond, ...) K3_ASSERT(cond, __VA_ARGS__)
#endif
