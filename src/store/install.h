// store/install: the one call a command makes to honour --ram-budget / --mmap.
// Contract: install_store() first moves the trunk into huge pages (prepare_trunk). In mmap
// mode it then installs the mapped store, wrapped in its decode copy where one is made
// (prepare_decode_copy), and returns null. In streaming mode it plans memory for the engine
// shape (store/memory_plan.h; throws k3::Error naming the minimum budget when the budget is
// too small), prints the plan to stderr unless `quiet`, builds the store and installs it as
// the model's expert source, returning it (the model owns it). A model without MoE layers
// needs no store: null. With `wrap` (a tool that counts what the model reads), the source
// about to be installed goes through it first, in every mode and for a model without MoE
// layers too (the mapped store then has no layers); the streaming store is still returned.
// find_store() returns the store behind a model's expert source, or null (mmap mode, or
// wrapped by a tool).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "store/expert_store.h"
#include "store/memory_options.h"
#include "store/memory_plan.h"

namespace k3::model {
class Model;
class ExpertSource;
}  // namespace k3::model

namespace k3::store {

// Takes the expert source install_store built and returns the one the model is to use.
using SourceWrapper =
    std::function<std::unique_ptr<model::ExpertSource>(std::unique_ptr<model::ExpertSource>)>;

ExpertStore* install_store(model::Model& m, const MemoryOptions& opt, const EngineShape& shape,
                           bool quiet = false, const SourceWrapper& wrap = {});
// The same store, planned and built but not installed; null in mmap mode or for a model
// without MoE layers.
std::unique_ptr<ExpertStore> build_store(const model::Model& m, const MemoryOptions& opt,
                                         const EngineShape& shape, bool quiet = false);
ExpertStore* find_store(const model::Model& m);
// Copies the trunk into huge pages unless opt.trunk_hugepages is off (store/resident_trunk.h;
// with --ram-budget the plan's trunk share holds the copy), printing one line about it unless
// `quiet`. Call before build_store: the store then leaves the moved ranges of the mapping alone.
void prepare_trunk(model::Model& m, const MemoryOptions& opt, bool quiet = false);
// In mmap mode (no --ram-budget) and unless opt.decode_copy is off, wraps the mapped expert
// store `mapped` in the decode copy (store/decode_copy.h) made within half the memory available
// after the trunk, printing one line about it unless `quiet`; returns the wrapper, or `mapped`
// itself where there is no copy. install_store calls it.
std::unique_ptr<model::ExpertSource> prepare_decode_copy(const model::Model& m,
                                                         std::unique_ptr<model::ExpertSource> mapped,
                                                         const MemoryOptions& opt, bool quiet = false);
// "mmap" or "stream (io_uring, O_DIRECT, lru, 1234 slots)", for banners.
std::string describe(const ExpertStore* s);
// One line of telemetry over `tokens` tokens and `seconds` of wall time, for stderr.
std::string summary_line(const StoreStats& s, double tokens, double seconds);

}  // namespace k3::store
