// store/resident_trunk: the trunk matrices copied out of the file mapping into anonymous
// memory backed by transparent huge pages (mmap mode and --ram-budget alike).
// Why: decode streams every trunk matrix once per token. Mapped from the page cache they sit
// in 4 KiB pages; measured on a 2-vCPU Xeon VM (2026-12-03, bench_kernels --chain 2048x2048)
// two threads streamed Q8_0 products at 23 GB/s from 4 KiB pages and 26 GB/s from 2 MiB
// pages (a TLB miss and a new page walk every 4 KiB otherwise).
// Contract: make_resident_trunk() copies the streamed matrices (model/weights.h
// for_each_streamed_matrix: all but token_embd) into one arena marked MADV_HUGEPAGE and moves
// the model's views there (Model::move_trunk; call it before the first forward). Where the
// file and the copy would not both fit in the memory available, the copied file ranges are
// dropped from the page cache, so the footprint stays that of the mapped file. It acts only
// when huge pages can be had (transparent_hugepage not "never") and — unless `budgeted`, where
// the memory plan has already placed the trunk within the budget — the trunk is at most half
// the memory available (MemAvailable, or a lower cgroup limit); otherwise the model is left
// as it is and `skipped` says why; so does a trunk under min_bytes (a few MiB fit the TLB's
// reach anyway: nothing to gain), flagged `small`. The result's bytes count the copy,
// huge_bytes how much of it the kernel backed with 2 MiB pages.
#pragma once

#include <cstdint>
#include <string>

namespace k3::model {
class Model;
}

namespace k3::store {

struct ResidentTrunk {
  uint64_t bytes = 0;
  uint64_t huge_bytes = 0;
  double seconds = 0;
  bool dropped_page_cache = false;
  bool small = false;   // skipped for being under min_bytes
  std::string skipped;  // empty when the trunk was moved
};

// progress: a progress bar on stderr for a copy of 1 GiB or more (core/progress.h).
ResidentTrunk make_resident_trunk(model::Model& m, uint64_t min_bytes = uint64_t{64} << 20,
                                  bool budgeted = false, bool progress = false);

}  // namespace k3::store
