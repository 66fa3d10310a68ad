// server/scheduler: the one thread that owns the Engine and runs every request.
// Contract: the scheduler has n_slots slots, slot i using engine sequence i. Jobs wait in a
// bounded FIFO queue until a slot is free. Each step decodes ONE batch holding the next
// token of every generating slot plus prompt chunks of admitted slots (at most n_batch prompt
// tokens per step, so a long prompt does not stall the others), then samples for every slot
// that got logits. Cancelled jobs (client gone) and jobs past their deadline leave at the
// next step and their sequence is cleared for the next job. submit() never blocks: a full
// queue or a stopped scheduler is an ApiError 503. stop() fails what is left with 503 and
// joins the thread; the destructor stops.
// Prompt cache (opts.prompt_cache): K3's recurrent state cannot be rolled back, so the
// scheduler keeps n_slots snapshots (engine sequences n_slots + i), each the state after a
// prefix of an earlier prompt (job->snapshot_at). A new job takes any free slot; when its
// prompt starts with a snapshot's whole token list (same owner only) the slot is restored
// from it and decodes only the rest. Which entry a new snapshot replaces: pick_snapshot().
// Independently of the snapshots, a slot keeps the state its last job ended with (prompt and
// decoded answer; a job that failed or was cancelled leaves nothing): a job of the same owner
// whose prompt extends it takes that slot and decodes only what is new (choose_slot()).
// Disk tier (opts.disk_dir, server/disk_cache.h): every snapshot taken is also written to
// disk by the cache's writer thread (the snapshot is left alone until the write ends, so no
// token waits for it), and a job whose prompt extends a disk entry longer than anything in
// RAM waits, out of the batch, while the reader thread loads it, then decodes only the rest.
// A load that fails (corrupt, removed) falls back to a full prefill: the answer is the same.
// Slot files (the /slots API, k3 chat /save): slot_save / slot_restore / slot_erase act on a
// free slot's kept state; the file I/O runs on the caller's thread.
// Grammar masks are computed off this thread (server/generation.h): a slot whose mask is not
// ready sits out of the batch until its worker wakes the scheduler, so it delays only itself.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/answer_source.h"
#include "server/disk_cache.h"
#include "server/job.h"
#include "chat/vocab_roles.h"
#include "model/sequence_state.h"

namespace k3::grammar {
class TokenVocab;
}

namespace k3::model {
class Collective;
class Model;
}  // namespace k3::model
namespace k3::runtime {
class Engine;
struct EngineOptions;
}  // namespace k3::runtime
namespace k3::text {
class Tokenizer;
}

namespace k3::server {

struct SchedulerOptions {
  int n_slots = 1;
  int n_threads = 0;         // engine threads; 0: the machine's default
  int64_t n_ctx = 4096;      // per slot; 0: the model's
  int64_t n_batch = 512;     // prompt tokens per step, all slots together
  size_t queue_max = 64;     // waiting jobs beyond the slots
  bool prompt_cache = true;  // keep n_slots prompt snapshots for reuse
  int64_t n_ubatch = 0;      // forward micro-batch; 0: the engine's default
  model::CacheType cache_type = model::CacheType::F32;
  // The prompt cache's disk tier: its directory (empty: none) and the most bytes its files
  // may hold (0: no limit). Needs prompt_cache.
  std::string disk_dir;
  uint64_t disk_bytes = 0;
  // null: the model samples every answer. Tests (and `k3 serve --scripted-output`) install a
  // source of fixed answers here (server/answer_source.h); each job takes the next one when it
  // starts.
  std::shared_ptr<AnswerSource> answers;
  model::Collective* collective = nullptr;  // a distributed run (model/collective.h); null: one process
  // A constrained request's grammar matcher, per slot (server/mask_worker.h): what it may
  // hold, and the CPU time one token's mask may take on its worker thread.
  size_t grammar_bytes = 64u << 20;
  int64_t grammar_cpu_ms = 2000;
  // Engine sequences the scheduler holds: one per slot, and one more per slot for its
  // prompt-cache snapshot. A memory plan must count all of them.
  int n_sequences() const { return n_slots * (prompt_cache ? 2 : 1); }
  // The options the scheduler builds its engine with (n_sequences() sequences; micro-batches
  // no longer than a step's batch: every slot's next token plus n_batch prompt tokens, at most
  // the engine's default); a memory plan is made from these (store::shape_of).
  runtime::EngineOptions engine_options() const;
};

// Counters and gauges for /metrics (a consistent snapshot).
struct SchedulerStats {
  uint64_t requests_finished = 0, requests_failed = 0, requests_cancelled = 0;
  uint64_t prompt_tokens_total = 0, predicted_tokens_total = 0, n_decode_total = 0;
  uint64_t prompt_tokens_cached_total = 0;  // restored from a snapshot, not decoded
  double prompt_seconds_total = 0, predicted_seconds_total = 0;
  uint64_t batch_tokens_max = 0;
  double predicted_tokens_per_second = 0;  // over the last 10 s of generation
  size_t queued = 0;
  int slots_busy = 0, slots_total = 0;
  bool disk = false;  // a disk tier is configured; disk_stats is its counters
  DiskCacheStats disk_stats;
};

// A slot as the /slots listing shows it.
struct SlotInfo {
  int id = 0;
  bool busy = false;
  int64_t n_tokens = 0;  // tokens whose state the slot holds now
};

// What a slot save or restore moved.
struct SlotFileResult {
  int64_t n_tokens = 0;
  std::vector<int32_t> tokens;  // slot_restore: the tokens the slot now holds
  uint64_t n_bytes = 0;
  double ms = 0;
};

class Scheduler {
 public:
  Scheduler(std::shared_ptr<const model::Model> model, std::shared_ptr<const text::Tokenizer> tok,
            const SchedulerOptions& opts);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  void submit(std::shared_ptr<Job> job);
  void stop();
  SchedulerStats stats() const;
  int64_t n_ctx() const { return n_ctx_; }
  int n_slots() const { return opts_.n_slots; }
  int n_threads() const { return n_threads_; }
  // The slot-file API (llama-server's /slots/{id}?action=…). Each throws ApiError: 404 no such
  // slot, 409 the slot is busy, 400 a file that cannot be used (the message says why).
  std::vector<SlotInfo> slots_info();
  SlotFileResult slot_save(int id, const std::string& path);
  SlotFileResult slot_restore(int id, const std::string& path);
  int64_t slot_erase(int id);
  // What a saved state must match to be restored here (runtime/state_file.h).
  runtime::StateTarget state_target() const { return target_; }

 private:
  struct Slot;
  struct Snapshot;
  struct StepCounts;
  struct Batch;
  void loop();
  // One step, in stages: drop cancelled and expired jobs, restore prompt-cache snapshots,
  // start new generations, resume slots whose mask arrived, build the batch, decode it (and
  // take the snapshots it reached), sample, then add the step's counts to the stats once.
  void step(std::vector<Slot>& slots, std::vector<Snapshot>& snaps);
  void drop_finished_jobs(std::vector<Slot>& slots, StepCounts& c);
  void restore_snapshots(std::vector<Slot>& slots, std::vector<Snapshot>& snaps, StepCounts& c);
  void start_generations(std::vector<Slot>& slots, StepCounts& c);
  void resume_waiting(std::vector<Slot>& slots, StepCounts& c);
  Batch build_batch(std::vector<Slot>& slots, StepCounts& c);
  bool decode(Batch& b, std::vector<Slot>& slots, std::vector<Snapshot>& snaps, StepCounts& c);
  void take_snapshot(Slot& s, std::vector<Snapshot>& snaps);
  void sample(Batch& b, StepCounts& c);
  void flush(const StepCounts& c);
  template <class F>
  void guarded(Slot& s, StepCounts& c, F&& f);
  static constexpr size_t kNoSnapshot = static_cast<size_t>(-1);
  static size_t pick_snapshot(const Slot& s, const std::vector<Snapshot>& snaps, uint64_t n_admitted);
  void release(Slot& s, bool keep_state = false);
  static Slot* choose_slot(std::vector<Slot>& slots, const Job& job, size_t& live);
  // Samples `t` into slot `s` (or finishes its request); true when the slot was released.
  bool take(Slot& s, int32_t t, uint64_t& n_done);
  void wake();
  // Runs `f` on the scheduler thread between steps and returns what it returned (or throws
  // what it threw): how the slot-file API reads and changes slots without a lock on them.
  template <class R>
  R on_scheduler(std::function<R(std::vector<Slot>&)> f);
  void run_controls(std::vector<Slot>& slots);
  static Slot& free_slot(std::vector<Slot>& slots, int id);
  void admit(Slot& s, std::vector<Snapshot>& snaps, size_t live, Clock::time_point now);
  void finish_disk_loads(std::vector<Slot>& slots, StepCounts& c);
  void store_on_disk(Snapshot& to);
  void fail_job(Job& job, int status, const char* type, const std::string& msg);

  SchedulerOptions opts_;
  std::shared_ptr<const text::Tokenizer> tok_;
  chat::VocabRoles roles_;
  std::shared_ptr<const grammar::TokenVocab> gvocab_;  // built at the first constrained request
  std::unique_ptr<runtime::Engine> engine_;
  int64_t n_ctx_ = 0;
  int n_threads_ = 0;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool stopping_ = false;
  SchedulerStats stats_;
  uint64_t n_admitted_ = 0;  // jobs given a slot so far (orders slots by recent use)
  std::deque<std::pair<Clock::time_point, int64_t>> rate_window_;
  std::deque<std::function<void(std::vector<Slot>&)>> controls_;  // on_scheduler's work
  runtime::StateTarget target_;
  std::thread thread_;
  // Last: destroyed first, so its writer stops reading engine states before the engine goes.
  std::unique_ptr<DiskCache> disk_;
};

}  // namespace k3::server
