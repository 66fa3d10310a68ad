// store/decode_copy: the routed matrices in their types' decode layout (kernels/decode_layout.h),
// held beside the file for the one-token products, as an expert source that wraps another.
// Why a wrapper: only the mapped store, where every expert is in place anyway, gets the copy
// (a streaming store's cache slots would hold fewer experts), so the copy is the store side's
// business and model::ExpertSource stays the few calls the forward pass makes.
// Contract: make_decode_copy() rewrites every routed matrix of the model's file whose type has a
// decode layout and a kernel on this CPU into one anonymous arena (huge pages, read-only once
// written), with n_threads threads and, when `progress`, a bar for 1 GiB of file bytes or more.
// It returns `inner` wrapped: acquire() takes inner's views and points their `decode` at the
// expert's rows of the copy, so `inner` must serve the file's rows (the mapped store,
// model::make_mapped_expert_source). The wrapper owns `inner` and the arena. Where nothing
// applies, the copy would exceed max_bytes, the memory cannot be had, or `inner` already is
// such a wrapper, it returns `inner` itself and `skipped` says why.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "model/expert_source.h"

namespace k3::model {
class Model;
}

namespace k3::store {

struct DecodeCopy {
  std::unique_ptr<model::ExpertSource> source;  // inner wrapped, or inner itself where skipped
  uint64_t bytes = 0;                           // memory of the copy
  uint64_t file_bytes = 0;                      // the file's bytes it rewrites
  std::string types;                            // the types rewritten, e.g. "IQ1_M, IQ2_XXS"
  double seconds = 0;
  std::string skipped;        // empty when made
  bool inapplicable = false;  // no matrix has a decode layout and kernel here: nothing to say
};

DecodeCopy make_decode_copy(const model::Model& m, std::unique_ptr<model::ExpertSource> inner,
                            uint64_t max_bytes, int n_threads, bool progress);

}  // namespace k3::store
