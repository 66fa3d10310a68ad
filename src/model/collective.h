// model/collective: what a forward pass exchanges with the other processes of a distributed
// run (docs/distributed.md). The model only sees this interface; src/dist/ implements it over
// MPI. Every rank runs the same forward pass on the same tokens; the products are split:
//   - dense projections by output rows (ops::Matmul): rank r computes rows share(rows, r, N)
//     and an all-gather gives every rank all rows, so each output element is the very dot
//     product one process computes, and results are bit-identical for any N;
//   - routed experts by id (moe.cpp): expert e runs on rank e mod N, the weighted sum of the
//     gathered outputs is taken on every rank in the single-process order.
// Contract: calls are collective: every rank makes the same calls in the same order with
// matching sizes. A failure (a rank that died or stopped answering) throws k3::Error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

namespace k3::model {

class Collective {
 public:
  virtual ~Collective() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Rank r contributes `mine` (counts[r] bytes); `all` receives every rank's block, rank 0 first.
  virtual void allgatherv(const void* mine, void* all, std::span<const size_t> counts) = 0;
  // `bytes` at `data` from rank 0 to every rank. `idle`: the other ranks wait here for rank 0's
  // next request, as long as it takes (every other call is bounded by the run's timeout).
  virtual void broadcast(void* data, size_t bytes, bool idle = false) = 0;
};

// The contiguous rows [begin, end) of n that rank r of N computes (sizes differ by at most 1).
inline std::pair<int64_t, int64_t> row_share(int64_t n, int r, int N) { return {n * r / N, n * (r + 1) / N}; }

// The rank that runs routed expert e.
inline int expert_owner(int32_t e, int N) { return static_cast<int>(e % N); }

}  // namespace k3::model
