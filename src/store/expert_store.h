// store/expert_store: the budgeted streaming expert store — routed-expert weights read from disk
// into a fixed set of cache slots, behind model::ExpertSource (docs/expert-store.md).
// Contract:
// * Slots: plan.slots slots of plan.slot_bytes in one anonymous mapping (touched only when
//   filled); a slot holds one (layer, expert): its gate, up and down slices, each read with
//   an O_DIRECT-aligned span so the weight bytes sit at the same address alignment as in
//   the mapped file (the kernels see identical bytes and alignment: results are bit-equal
//   to the mapped store).
// * will_need(layer, experts) starts reads for the misses in the order given (the order
//   acquire() will follow), as far as free or evictable slots allow; the rest start as
//   slots are released. Experts the layer still needs are never evicted for other layers.
// * router_input_hint(layer, xn, n) predicts the next MoE layer's experts (store/predictor.h)
//   and reads them with slots no current-layer expert needs, once the current layer's
//   reads have all started; a wrong guess costs a read, never correctness (a miss is read
//   at will_need/acquire time; queued reads of unneeded guesses are cancelled).
// * acquire() waits for the expert's reads (time counted as I/O wait) and pins the slot
//   until release(). A failed read throws k3::Error naming the file and offset.
// * Calls come from one thread; stats() may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "model/expert_source.h"
#include "store/memory_options.h"
#include "store/memory_plan.h"

namespace k3::model {
class Model;
}

namespace k3::store {

struct StoreStats {
  uint64_t needed = 0;                   // experts asked for by will_need (all layers, all calls)
  uint64_t hits = 0;                     // ... already cached (not by a prediction)
  uint64_t prefetched = 0;               // ... cached or in flight because they were predicted
  uint64_t misses = 0;                   // ... read on demand
  uint64_t predicted = 0;                // experts predicted
  uint64_t predicted_used = 0;           // ... that the layer then asked for
  uint64_t needed_predicted_layers = 0;  // experts asked for by layers that had a prediction
  uint64_t bytes_read = 0;               // from disk, alignment padding included
  uint64_t reads = 0;                    // read requests completed
  double io_wait_s = 0;                  // model thread blocked in acquire()
  uint64_t wait_bytes = 0;               // bytes that arrived while it was blocked (the expert-bound phases)
  double predict_s = 0;                  // model thread running the predictor
  double busy_s = 0;                     // wall time with a read in flight
  double hit_rate() const { return needed ? static_cast<double>(hits) / static_cast<double>(needed) : 0; }
  // Share of asked-for experts the prediction had named (recall).
  double prediction_recall() const {
    return needed_predicted_layers
               ? static_cast<double>(predicted_used) / static_cast<double>(needed_predicted_layers)
               : 0;
  }
  double prediction_precision() const {
    return predicted ? static_cast<double>(predicted_used) / static_cast<double>(predicted) : 0;
  }
  double busy_bw() const { return busy_s > 0 ? static_cast<double>(bytes_read) / busy_s : 0; }
  // Read bandwidth while the model waited for experts: what the disk delivers when it is
  // the bottleneck.
  double wait_bw() const { return io_wait_s > 0 ? static_cast<double>(wait_bytes) / io_wait_s : 0; }
  StoreStats minus(const StoreStats& earlier) const;
};

class ExpertStore : public model::ExpertSource {
 public:
  virtual StoreStats stats() const = 0;
  // Waits until no read is in flight (prediction reads may outlive the forward pass that
  // issued them), so stats() taken afterwards are settled. Same thread as acquire().
  virtual void wait_idle() = 0;
  virtual const MemoryPlan& plan() const = 0;
  virtual const char* backend() const = 0;  // "io_uring" or "pread"
  virtual bool direct_io() const = 0;
  virtual bool trunk_locked() const = 0;
  virtual Eviction eviction() const = 0;
  // Seconds spent backing the cache with memory at startup (0: not done, unlimited budget).
  virtual double populate_seconds() const = 0;
};

// The model must outlive the store (it does when the store is installed with
// Model::set_expert_source). Pins the trunk (madvise WILLNEED, then mlock where permitted).
std::unique_ptr<ExpertStore> make_expert_store(const model::Model& m, const MemoryPlan& plan,
                                               const MemoryOptions& opt);

}  // namespace k3::store
