// store/expert_store: slots, reads, eviction tiers, prediction and telemetry (see
// expert_store.h).
#include "store/expert_store.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <vector>

#include "core/error.h"
#include "gguf/file.h"
#include "model/hparams.h"
#include "model/model.h"
#include "quant/types.h"
#include "store/direct_file.h"
#include "store/eviction.h"
#include "store/predictor.h"
#include "store/reader.h"
#include "store/trunk.h"

namespace k3::store {

StoreStats StoreStats::minus(const StoreStats& e) const {
  StoreStats d = *this;
  d.needed -= e.needed;
  d.hits -= e.hits;
  d.prefetched -= e.prefetched;
  d.misses -= e.misses;
  d.predicted -= e.predicted;
  d.predicted_used -= e.predicted_used;
  d.needed_predicted_layers -= e.needed_predicted_layers;
  d.bytes_read -= e.bytes_read;
  d.reads -= e.reads;
  d.io_wait_s -= e.io_wait_s;
  d.wait_bytes -= e.wait_bytes;
  d.predict_s -= e.predict_s;
  d.busy_s -= e.busy_s;
  return d;
}

namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kChunk = 1ull << 20;  // largest single read: keeps many in flight per expert

struct Slot {
  std::atomic<uint32_t> pending{0};  // reads not yet completed
  std::atomic<bool> failed{false};
  int64_t key = -1;  // layer·X + expert; -1: empty
  uint32_t pins = 0;
  uint64_t last_use = 0;
  uint64_t want_gen = 0;       // == gen_: the current layer needs it and has not acquired it
  uint32_t want_pos = 0;       // its place in the current layer's order
  uint64_t pred_gen = 0;       // == pred_gen_: predicted for the next layer
  bool by_prediction = false;  // filled by a prediction and not used since
  bool discard = false;        // partly cancelled: free once its reads finish
};

class StreamingStore final : public ExpertStore {
 public:
  StreamingStore(const model::Model& m, const MemoryPlan& plan, const MemoryOptions& opt)
      : m_(m), plan_(plan), opt_(opt), X_(m.hparams().n_expert) {
    const gguf::GgufFile& f = m.gguf();
    for (const gguf::Shard& s : f.shards()) files_.push_back(std::make_unique<DirectFile>(s.path));
    direct_ = std::all_of(files_.begin(), files_.end(), [](const auto& d) { return d->direct(); });
    n_slots_ = plan.slots;
    if (n_slots_ == 0) fail("expert store: the plan has no cache slots");
    region_off_[0] = 0;
    region_off_[1] = plan.region[0];
    region_off_[2] = plan.region[0] + plan.region[1];
    arena_bytes_ = n_slots_ * plan.slot_bytes;
    void* a = ::mmap(nullptr, arena_bytes_, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (a == MAP_FAILED)
      fail("expert store: cannot reserve {} for {} cache slots", format_size(arena_bytes_), n_slots_);
    arena_ = static_cast<uint8_t*>(a);
    if (opt.ram_budget != kUnlimited) populate_arena();
    slots_ = std::make_unique<Slot[]>(n_slots_);
    for (uint64_t s = n_slots_; s-- > 0;) free_.push_back(static_cast<uint32_t>(s));
    where_.assign(static_cast<size_t>(m.hparams().n_layer) * X_, -1);
    need_stamp_.assign(where_.size(), 0);
    policy_ = make_policy(opt.eviction, where_.size(), std::max<uint64_t>(n_slots_, 64));
    reader_ = make_reader([this](uint32_t tag, bool ok, const std::string& e) { on_done(tag, ok, e); },
                          std::max(1, opt.io_depth), opt.use_uring);
    trunk_locked_ = pin_trunk(f, m.moved_trunk());
  }

  // Backs the whole cache with memory now instead of at each slot's first read. A page's
  // first touch costs a fault and a zero fill (in a VM also the host backing it): measured on
  // the ladder VM, first-touch faults inside O_DIRECT reads took 18% of a cold pp512's CPU
  // time at a 5 GiB limit. The budget already counts the arena, so this only moves the cost
  // to startup. Not with an unlimited budget, whose arena is every expert (reserved, touched
  // only as experts are first used).
  void populate_arena() {
    const auto t0 = std::chrono::steady_clock::now();
    bool done = false;
#ifdef MADV_POPULATE_WRITE
    done = ::madvise(arena_, arena_bytes_, MADV_POPULATE_WRITE) == 0;
    // Out of memory now (or a limit): leave the pages to fault in as slots are first used.
    if (!done && errno != EINVAL) return;
#endif
    if (!done) {  // kernels before 5.14: touch each page
      const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
      for (uint64_t off = 0; off < arena_bytes_; off += page) arena_[off] = 0;
    }
    populate_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  ~StreamingStore() override {
    reader_.reset();  // waits for reads in flight: they write into the arena
    unpin_trunk(m_.gguf(), m_.moved_trunk());
    ::munmap(arena_, arena_bytes_);
  }

  void will_need(uint32_t layer, std::span<const int32_t> experts) override {
    ++gen_;
    if (pred_layer_ == static_cast<int64_t>(layer)) settle_prediction(layer, experts);
    pred_layer_ = -1;
    pending_pred_.clear();
    ppos_ = 0;
    deferred_.clear();
    dpos_ = 0;
    for (size_t i = 0; i < experts.size(); ++i) {
      const int64_t key = key_of(layer, experts[i]);
      const int64_t s = where_[key];
      needed_.fetch_add(1, std::memory_order_relaxed);
      if (s >= 0) {
        Slot& sl = slots_[s];
        sl.want_gen = gen_;
        sl.want_pos = static_cast<uint32_t>(i);
        (sl.by_prediction ? prefetched_ : hits_).fetch_add(1, std::memory_order_relaxed);
        sl.by_prediction = false;
      } else {
        misses_.fetch_add(1, std::memory_order_relaxed);
        deferred_.push_back({key, static_cast<uint32_t>(i)});
      }
    }
    issue_deferred();
  }

  void router_input_hint(uint32_t layer, const float* xn, int64_t n) override {
    const model::HParams& hp = m_.hparams();
    const uint32_t next = layer + 1;
    if (!opt_.predict || next >= hp.n_layer || hp.is_dense(next) || n <= 0) return;
    const auto t0 = Clock::now();
    const std::vector<int32_t> pred = predict_experts(m_, next, xn, n);
    predict_ns_.fetch_add(ns_since(t0), std::memory_order_relaxed);
    ++pred_gen_;
    pred_layer_ = next;
    pred_keys_.clear();
    for (int32_t e : pred) {
      const int64_t key = key_of(next, e);
      pred_keys_.push_back(key);
      const int64_t s = where_[key];
      if (s >= 0) slots_[s].pred_gen = pred_gen_;
      else pending_pred_.push_back(key);
    }
    predicted_.fetch_add(pred.size(), std::memory_order_relaxed);
    issue_predictions();
  }

  model::ExpertWeights acquire(uint32_t layer, int32_t expert) override {
    const int64_t key = key_of(layer, expert);
    int64_t s = where_[key];
    if (s < 0) {  // not started yet (or never announced): read it now
      s = alloc_blocking();
      start_read(static_cast<uint32_t>(s), key);
    }
    Slot& sl = slots_[s];
    if (sl.pending.load(std::memory_order_acquire) != 0) {
      const auto t0 = Clock::now();
      const uint64_t b0 = reader_->bytes_read();
      std::unique_lock<std::mutex> lk(done_mu_);
      done_cv_.wait(lk, [&] { return sl.pending.load(std::memory_order_acquire) == 0; });
      io_wait_ns_.fetch_add(ns_since(t0), std::memory_order_relaxed);
      wait_bytes_.fetch_add(reader_->bytes_read() - b0, std::memory_order_relaxed);
    }
    if (sl.failed.load()) {
      std::lock_guard<std::mutex> lk(done_mu_);
      const std::string err = error_;
      evict(static_cast<uint32_t>(s));
      free_.push_back(static_cast<uint32_t>(s));
      fail("{}: reading expert {} of layer {} failed: {}", m_.gguf().path(), expert, layer, err);
    }
    ++sl.pins;
    sl.last_use = ++tick_;
    sl.want_gen = 0;
    sl.by_prediction = false;
    policy_->on_use(static_cast<uint32_t>(key), tick_);
    return views(layer, static_cast<uint32_t>(s));
  }

  void release(uint32_t layer, int32_t expert) override {
    const int64_t s = where_[key_of(layer, expert)];
    if (s >= 0 && slots_[s].pins > 0) --slots_[s].pins;
    issue_deferred();
  }

  StoreStats stats() const override {
    StoreStats st;
    st.needed = needed_.load();
    st.hits = hits_.load();
    st.prefetched = prefetched_.load();
    st.misses = misses_.load();
    st.predicted = predicted_.load();
    st.predicted_used = predicted_used_.load();
    st.needed_predicted_layers = needed_pred_layers_.load();
    st.bytes_read = reader_->bytes_read();
    st.reads = reader_->reads_done();
    st.io_wait_s = static_cast<double>(io_wait_ns_.load()) * 1e-9;
    st.wait_bytes = wait_bytes_.load();
    st.predict_s = static_cast<double>(predict_ns_.load()) * 1e-9;
    st.busy_s = reader_->busy_seconds();
    return st;
  }
  void wait_idle() override {
    std::unique_lock<std::mutex> lk(done_mu_);
    for (uint64_t i = 0; i < n_slots_; ++i) {
      Slot& sl = slots_[i];
      done_cv_.wait(lk, [&] { return sl.pending.load(std::memory_order_acquire) == 0; });
    }
  }
  const MemoryPlan& plan() const override { return plan_; }
  const char* backend() const override { return reader_->name(); }
  bool direct_io() const override { return direct_; }
  bool trunk_locked() const override { return trunk_locked_; }
  Eviction eviction() const override { return opt_.eviction; }
  double populate_seconds() const override { return populate_s_; }

 private:
  struct Want {
    int64_t key;
    uint32_t pos;
  };

  static uint64_t ns_since(Clock::time_point t0) {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
  }
  int64_t key_of(uint32_t layer, int32_t e) const { return static_cast<int64_t>(layer) * X_ + e; }
  bool loading(const Slot& s) const { return s.pending.load(std::memory_order_acquire) != 0; }

  // Bookkeeping when the predicted layer arrives: accuracy, and cancel guesses not needed.
  void settle_prediction(uint32_t layer, std::span<const int32_t> experts) {
    for (int32_t e : experts) need_stamp_[key_of(layer, e)] = gen_;
    uint64_t used = 0;
    for (int64_t key : pred_keys_) {
      if (need_stamp_[key] == gen_) {
        ++used;
        continue;
      }
      const int64_t s = where_[key];
      if (s < 0 || !loading(slots_[s])) continue;
      Slot& sl = slots_[s];
      const size_t dropped = reader_->cancel(static_cast<uint32_t>(s));
      if (dropped == 0) continue;
      if (sl.pending.fetch_sub(static_cast<uint32_t>(dropped)) == dropped) {
        evict(static_cast<uint32_t>(s));
        free_.push_back(static_cast<uint32_t>(s));
      } else {
        evict(static_cast<uint32_t>(s));
        sl.discard = true;  // its started reads still land in the slot
      }
    }
    predicted_used_.fetch_add(used, std::memory_order_relaxed);
    needed_pred_layers_.fetch_add(experts.size(), std::memory_order_relaxed);
  }

  void evict(uint32_t s) {
    Slot& sl = slots_[s];
    if (sl.key >= 0 && where_[sl.key] == static_cast<int64_t>(s)) where_[sl.key] = -1;
    sl.key = -1;
    sl.by_prediction = false;
    sl.want_gen = 0;
    sl.pred_gen = 0;
  }

  // Which cached experts a slot may be taken from, cheapest loss first. Loading and pinned
  // slots never move.
  enum class Tier {
    Idle = 1,       // cached, and no layer in progress wants it
    Predicted = 2,  // a guess for the next layer
    Wanted = 3,     // the current layer's, not used yet (the one needed last goes first)
  };

  Tier tier_of(const Slot& sl) const {
    if (sl.want_gen == gen_) return Tier::Wanted;
    return pred_layer_ >= 0 && sl.pred_gen == pred_gen_ ? Tier::Predicted : Tier::Idle;
  }

  // A free slot, else one evicted from the lowest tier up to `max_tier`; -1 when none may go.
  int64_t alloc(Tier max_tier) {
    while (!free_.empty()) {
      const uint32_t s = free_.back();
      free_.pop_back();
      return s;
    }
    int64_t best = -1;
    std::optional<Tier> best_tier;
    double best_score = 0;
    for (uint64_t i = 0; i < n_slots_; ++i) {
      Slot& sl = slots_[i];
      if (sl.pins || loading(sl)) continue;
      if (sl.discard) {  // its reads are done: free now
        sl.discard = false;
        sl.failed = false;
        return static_cast<int64_t>(i);
      }
      const Tier tier = tier_of(sl);
      if (tier > max_tier || (best_tier && tier > *best_tier)) continue;
      const double score = tier == Tier::Wanted
                               ? -static_cast<double>(sl.want_pos)
                               : policy_->score(static_cast<uint32_t>(sl.key), sl.last_use, tick_);
      if (!best_tier || tier < *best_tier || score < best_score) {
        best = static_cast<int64_t>(i);
        best_tier = tier;
        best_score = score;
      }
    }
    if (best >= 0) evict(static_cast<uint32_t>(best));
    return best;
  }

  int64_t alloc_blocking() {
    for (;;) {
      // Read before looking: a read that ends after this is seen by the wait below.
      const uint64_t seen = reads_done_.load(std::memory_order_acquire);
      const int64_t s = alloc(Tier::Wanted);
      if (s >= 0) return s;
      bool any_loading = false;
      for (uint64_t i = 0; i < n_slots_ && !any_loading; ++i) any_loading = loading(slots_[i]);
      if (!any_loading)  // every slot is acquired and not released: waiting would never end
        fail("expert store: all {} cache slots are held by experts in use at once; raise --ram-budget",
             n_slots_);
      // Every slot is loading or pinned. Pins are released by this same thread, so only a read
      // ending (on_done) can free one: sleep until the next one does.
      std::unique_lock<std::mutex> lk(done_mu_);
      done_cv_.wait(lk, [&] { return reads_done_.load(std::memory_order_acquire) != seen; });
    }
  }

  void start_read(uint32_t s, int64_t key) {
    Slot& sl = slots_[s];
    sl.key = key;
    sl.failed = false;
    sl.discard = false;
    sl.by_prediction = false;
    where_[key] = s;
    const uint32_t layer = static_cast<uint32_t>(key / X_);
    const uint64_t e = static_cast<uint64_t>(key % X_);
    const LayerExperts& le = plan_.layers[layer];
    std::vector<Read> rs;
    for (int k = 0; k < 3; ++k) {
      const ExpertTensor& t = le.t[k];
      const uint64_t off = t.offset + e * t.slice;
      const uint64_t start = off / kAlign * kAlign;
      const uint64_t end = (off + t.slice + kAlign - 1) / kAlign * kAlign;
      const uint64_t need_end = off + t.slice;
      uint8_t* dst = arena_ + s * plan_.slot_bytes + region_off_[k];
      for (uint64_t c = start; c < end; c += kChunk) {
        Read r;
        r.fd = files_[t.shard]->fd();
        r.offset = c;
        r.len = std::min(kChunk, end - c);
        r.need = need_end > c ? std::min(r.len, need_end - c) : 0;
        r.dst = dst + (c - start);
        r.tag = s;
        rs.push_back(r);
      }
    }
    sl.pending.store(static_cast<uint32_t>(rs.size()), std::memory_order_release);
    reader_->submit(std::move(rs));
  }

  void issue_deferred() {
    while (dpos_ < deferred_.size()) {
      const Want w = deferred_[dpos_];
      if (where_[w.key] >= 0) {
        ++dpos_;
        continue;
      }
      const int64_t s = alloc(Tier::Predicted);
      if (s < 0) return;
      start_read(static_cast<uint32_t>(s), w.key);
      slots_[s].want_gen = gen_;
      slots_[s].want_pos = w.pos;
      ++dpos_;
    }
    issue_predictions();
  }

  void issue_predictions() {
    if (dpos_ < deferred_.size() || pred_layer_ < 0) return;
    while (ppos_ < pending_pred_.size()) {
      const int64_t key = pending_pred_[ppos_];
      if (where_[key] >= 0) {
        ++ppos_;
        continue;
      }
      const int64_t s = alloc(Tier::Idle);
      if (s < 0) return;
      start_read(static_cast<uint32_t>(s), key);
      slots_[s].pred_gen = pred_gen_;
      slots_[s].by_prediction = true;
      ++ppos_;
    }
  }

  model::ExpertWeights views(uint32_t layer, uint32_t s) const {
    const LayerExperts& le = plan_.layers[layer];
    const uint64_t e = static_cast<uint64_t>(slots_[s].key % X_);
    kernels::WeightView v[3];
    for (int k = 0; k < 3; ++k) {
      const ExpertTensor& t = le.t[k];
      const uint64_t off = t.offset + e * t.slice;
      v[k].type = t.type;
      v[k].cols = t.cols;
      v[k].rows = t.rows;
      v[k].row_stride = quant::row_bytes(t.type, t.cols);
      v[k].data = arena_ + s * plan_.slot_bytes + region_off_[k] + (off % kAlign);
    }
    return {v[0], v[1], v[2]};
  }

  void on_done(uint32_t tag, bool ok, const std::string& err) {
    Slot& sl = slots_[tag];
    if (!ok) {
      std::lock_guard<std::mutex> lk(done_mu_);
      if (error_.empty()) error_ = err;
      sl.failed = true;
    }
    sl.pending.fetch_sub(1, std::memory_order_acq_rel);
    reads_done_.fetch_add(1, std::memory_order_acq_rel);
    { std::lock_guard<std::mutex> lk(done_mu_); }  // a waiter is either waiting or sees the count
    done_cv_.notify_all();
  }

  const model::Model& m_;
  MemoryPlan plan_;
  MemoryOptions opt_;
  const int64_t X_;
  std::vector<std::unique_ptr<DirectFile>> files_;
  bool direct_ = false, trunk_locked_ = false;
  uint64_t n_slots_ = 0, arena_bytes_ = 0;
  uint64_t region_off_[3] = {0, 0, 0};
  uint8_t* arena_ = nullptr;
  double populate_s_ = 0;
  std::unique_ptr<Slot[]> slots_;
  std::vector<uint32_t> free_;
  std::vector<int64_t> where_;        // key → slot, -1: not cached
  std::vector<uint64_t> need_stamp_;  // key → gen_ of the last layer that asked for it
  std::unique_ptr<EvictionPolicy> policy_;
  std::unique_ptr<Reader> reader_;

  uint64_t gen_ = 0, pred_gen_ = 0, tick_ = 0;
  std::vector<Want> deferred_;
  size_t dpos_ = 0;
  int64_t pred_layer_ = -1;
  std::vector<int64_t> pred_keys_, pending_pred_;
  size_t ppos_ = 0;

  std::mutex done_mu_;
  std::condition_variable done_cv_;
  std::atomic<uint64_t> reads_done_{0};  // reads finished so far (alloc_blocking waits for one)
  std::string error_;

  std::atomic<uint64_t> needed_{0}, hits_{0}, prefetched_{0}, misses_{0}, predicted_{0}, predicted_used_{0},
      needed_pred_layers_{0}, io_wait_ns_{0}, predict_ns_{0}, wait_bytes_{0};
};

}  // namespace

std::unique_ptr<ExpertStore> make_expert_store(const model::Model& m, const MemoryPlan& plan,
                                               const MemoryOptions& opt) {
  return std::make_unique<StreamingStore>(m, plan, opt);
}

}  // namespace k3::store
