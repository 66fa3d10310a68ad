// server/scheduler: see scheduler.h.
#include "server/scheduler.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <future>
#include <utility>

#include "core/error.h"
#include "core/log.h"
#include "core/thread_pool.h"
#include "gguf/file.h"
#include "grammar/matcher.h"
#include "grammar/work_budget.h"
#include "grammar/token_vocab.h"
#include "model/identity.h"
#include "model/model.h"
#include "runtime/engine.h"
#include "server/api_error.h"
#include "server/generation.h"
#include "text/tokenizer.h"

namespace k3::server {

// One prompt-cache entry: the state of sequence `seq` after `tokens`. Entries are not tied
// to slots: a request restores from whichever entry holds its prefix, into whichever slot is
// free. With as many clients as slots, tying them made a one-off request evict a
// conversation's entry, whose next turn then evicted another's, and so on round the slots.
struct Scheduler::Snapshot {
  int32_t seq = -1;
  std::vector<int32_t> tokens;  // empty: unused
  std::string owner;            // the cache_owner of the job that left it (job.h)
  uint64_t last_used = 0;       // admission counter when it was last taken or reused
  bool proven = false;          // it (or the entry it extends) was reused at least once
  // True while the disk writer reads this entry's state: it must not be replaced until then.
  std::shared_ptr<std::atomic<bool>> writing = std::make_shared<std::atomic<bool>>(false);
};

struct Scheduler::Slot {
  int32_t seq = 0;
  // The tokens whose state `seq` holds. A job that ends normally leaves its state here (its
  // prompt and the answer's decoded tokens), so the same owner's next request, which repeats
  // them when the answer re-renders token for token, decodes only what is new.
  std::vector<int32_t> held;
  std::string held_owner;
  bool discard = false;  // the held state is not this job's prefix: clear seq before its decode
  int from = -1;         // the snapshot this job restores and extends; -1: none
  bool restore = false;  // copy snapshot `from` into seq before the next decode
  size_t snap_at = 0;    // this job's snapshot point (0: none)
  std::shared_ptr<Job> job;
  std::unique_ptr<Generation> gen;
  size_t n_fed = 0;      // prompt tokens decoded so far
  int32_t next = -1;     // generated token waiting to be decoded
  bool started = false;  // its prompt is decoded (Generation::prompt_done was called)
  bool waiting = false;  // its logits wait for the grammar's mask (Generation::kWaiting)
  std::shared_ptr<DiskCache::Load> disk_load;  // a disk entry being read for this job
  bool pinned = false;                         // a slot save reads its state: no job may take it
  Clock::time_point t_start;
  bool generating() const { return job && next >= 0; }
  bool loading() const { return disk_load && !disk_load->done.load(); }
  // Something for the next step to do: not a slot whose mask or disk state is still coming.
  bool runnable() const { return job && !loading() && !(waiting && gen && !gen->mask_ready()); }
};

namespace {

// Without a vocabulary, the end-of-sequence id the file names is the one special token.
chat::VocabRoles roles_of(const model::Model& m, const text::Tokenizer* tok) {
  if (tok) return chat::VocabRoles::of(*tok);
  const gguf::Value* eos = m.gguf().find("tokenizer.ggml.eos_token_id");
  return chat::VocabRoles::without_vocab(eos ? static_cast<int32_t>(eos->as_int()) : -1);
}

}  // namespace

runtime::EngineOptions SchedulerOptions::engine_options() const {
  runtime::EngineOptions eo;
  eo.cache_type = cache_type;
  eo.n_threads = n_threads;
  eo.n_seq_max = n_sequences();
  eo.n_ctx = n_ctx;
  eo.hooks.collective = collective;
  // A step's batch never exceeds n_slots + n_batch tokens, so this splits exactly where the
  // default would; it only keeps the plan's work buffers to the batches that occur.
  eo.n_ubatch = std::min(n_ubatch > 0 ? n_ubatch : eo.n_ubatch, std::max<int64_t>(n_batch, 1) + n_slots);
  return eo;
}

Scheduler::Scheduler(std::shared_ptr<const model::Model> model, std::shared_ptr<const text::Tokenizer> tok,
                     const SchedulerOptions& opts)
    : opts_(opts), tok_(std::move(tok)), roles_(roles_of(*model, tok_.get())) {
  if (opts_.n_slots < 1) fail("--parallel must be >= 1 (got {})", opts_.n_slots);
  if (opts_.n_batch < 1) opts_.n_batch = 1;
  engine_ = std::make_unique<runtime::Engine>(std::move(model), opts_.engine_options());
  n_ctx_ = engine_->n_ctx();
  n_threads_ = static_cast<int>(engine_->pool().size());
  stats_.slots_total = opts_.n_slots;
  target_ = {model::model_identity(engine_->model()), &engine_->model().hparams(), opts_.cache_type, n_ctx_};
  if (!opts_.disk_dir.empty()) {
    if (!opts_.prompt_cache) fail("--prompt-cache-dir needs the prompt cache (drop --no-prompt-cache)");
    disk_ = std::make_unique<DiskCache>(opts_.disk_dir, opts_.disk_bytes, target_, [this] { wake(); });
    stats_.disk = true;
  }
  thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() { stop(); }

void Scheduler::submit(std::shared_ptr<Job> job) {
  // A negative prompt token is an image's key token: it must have the image's row to be fed.
  const size_t E = engine_->model().hparams().n_embd;
  for (const JobImage& im : job->images)
    if (!im.rows || im.n_tokens < 1 || im.rows->size() != static_cast<size_t>(im.n_tokens) * E ||
        im.at + static_cast<size_t>(im.n_tokens) > job->prompt.size())
      throw ApiError(500, "server_error",
                     "an image of the prompt does not match the model's embedding width");
  for (size_t i = 0; i < job->prompt.size(); ++i) {
    int32_t t = 0;
    if (job->prompt[i] < 0 && !job->image_row(i, t))
      throw ApiError(500, "server_error", fmt::format("prompt position {} has no token and no image row", i));
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (stopping_) throw ApiError(503, "unavailable_error", "the server is shutting down");
    if (queue_.size() >= opts_.queue_max)
      throw ApiError(503, "unavailable_error",
                     fmt::format("the server is busy ({} requests waiting); retry later", queue_.size()));
    queue_.push_back(std::move(job));
    stats_.queued = queue_.size();
  }
  cv_.notify_one();
}

void Scheduler::stop() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

SchedulerStats Scheduler::stats() const {
  SchedulerStats st;
  {
    std::lock_guard<std::mutex> lk(mu_);
    st = stats_;
  }
  if (disk_) st.disk_stats = disk_->stats();
  return st;
}

void Scheduler::fail_job(Job& job, int status, const char* type, const std::string& msg) {
  Event e;
  e.kind = Event::Kind::Error;
  e.status = status;
  e.error_type = type;
  e.message = msg;
  job.channel.push(std::move(e));
}

void Scheduler::release(Slot& s, bool keep_state) {
  if (keep_state) {                     // costs nothing: the slot's sequence exists anyway
    s.held_owner = s.job->cache_owner;  // snapshots and this state stay for the next job
  } else {
    engine_->seq_clear(s.seq);
    s.held.clear();
  }
  s.job.reset();
  s.gen.reset();
  s.n_fed = 0;
  s.next = -1;
  s.started = false;
  s.waiting = false;
  s.from = -1;
  s.restore = false;
  s.discard = false;
  s.snap_at = 0;
  s.disk_load.reset();
}

// Where a job's snapshot goes: over the one it restored (its conversation's, now extended),
// else an unused entry, else one never reused, else the least recently used of those reused,
// but only one idle for 2 x (entries) admissions; otherwise nowhere (kNoSnapshot). So a
// one-off request, or a client that hangs up and never returns, evicts nothing while every
// entry serves a live conversation, and a new conversation gets in once one goes quiet.
size_t Scheduler::pick_snapshot(const Slot& s, const std::vector<Snapshot>& snaps, uint64_t n_admitted) {
  if (s.from >= 0)
    return snaps[static_cast<size_t>(s.from)].writing->load() ? kNoSnapshot : static_cast<size_t>(s.from);
  auto worth = [](const Snapshot& e) {
    return e.tokens.empty() ? std::pair<int, uint64_t>{0, 0}
                            : std::pair<int, uint64_t>{e.proven ? 2 : 1, e.last_used};
  };
  size_t best = kNoSnapshot;
  for (size_t k = 0; k < snaps.size(); ++k)
    if (!snaps[k].writing->load() && (best == kNoSnapshot || worth(snaps[k]) < worth(snaps[best]))) best = k;
  if (best == kNoSnapshot) return best;
  const Snapshot& e = snaps[best];
  const bool live = !e.tokens.empty() && e.proven && e.last_used + 2 * snaps.size() > n_admitted;
  return live ? kNoSnapshot : best;
}

namespace {

// Tokens of `prompt` a job can skip: its whole snapshot when that is a proper prefix.
size_t reusable(const std::vector<int32_t>& cached, const std::vector<int32_t>& prompt) {
  if (cached.empty() || cached.size() >= prompt.size()) return 0;
  return std::equal(cached.begin(), cached.end(), prompt.begin()) ? cached.size() : 0;
}

}  // namespace

// The free slot a job takes: the one whose kept state is the longest reusable prefix of its
// prompt (of its own owner only: cached_tokens must not tell one client about another's
// prompts), else the free slot that holds the least. `live`: the tokens it can skip there.
Scheduler::Slot* Scheduler::choose_slot(std::vector<Slot>& slots, const Job& job, size_t& live) {
  Slot* best = nullptr;
  live = 0;
  for (Slot& s : slots) {
    if (s.job || s.pinned) continue;
    const size_t r = s.held_owner == job.cache_owner ? reusable(s.held, job.prompt) : 0;
    if (!best || r > live || (r == live && s.held.size() < best->held.size())) best = &s, live = r;
  }
  return best;
}

// A job that just took slot `s` (under mu_): where its prompt resumes from. RAM first (the
// slot's own state, else the snapshot that saves the most), then the disk tier when it holds
// a longer prefix; a disk load leaves the slot out of the batch until it is read.
void Scheduler::admit(Slot& s, std::vector<Snapshot>& snaps, size_t live, Clock::time_point now) {
  const uint64_t admitted = ++n_admitted_;
  size_t best_reuse = live;
  s.from = -1;
  for (size_t k = 0; k < snaps.size(); ++k) {
    const size_t r = snaps[k].owner == s.job->cache_owner ? reusable(snaps[k].tokens, s.job->prompt) : 0;
    if (r > best_reuse) best_reuse = r, s.from = static_cast<int>(k);
  }
  DiskCache::Match disk;
  if (disk_) {
    disk = disk_->lookup(s.job->cache_owner, s.job->prompt);
    if (disk.n_tokens > best_reuse) {
      s.from = -1, best_reuse = 0, live = 0;  // the disk entry's state replaces the slot's
      s.disk_load = disk_->load(disk);
    } else if (best_reuse == 0) {
      disk_->note_miss();
    }
  }
  if (s.from >= 0) {
    snaps[static_cast<size_t>(s.from)].last_used = admitted;
    snaps[static_cast<size_t>(s.from)].proven = true;
  }
  if (best_reuse == live && live > 0) {
    s.held.resize(live);  // continues from its own state
  } else {
    s.discard = !s.held.empty();
    s.held.clear();
    if (s.from >= 0) s.held = snaps[static_cast<size_t>(s.from)].tokens;
  }
  s.t_start = now;
  s.n_fed = best_reuse;
  s.restore = s.from >= 0;
  s.job->n_cached = static_cast<int64_t>(best_reuse);
  stats_.prompt_tokens_cached_total += best_reuse;
  s.next = -1;
  const size_t n = s.job->prompt.size();
  size_t at = s.job->snapshot_at > 0 && s.job->snapshot_at < n ? s.job->snapshot_at : n - 1;
  // Nothing to gain from a snapshot that is already held, or from an empty one.
  const size_t held_after = std::max(best_reuse, disk.n_tokens > best_reuse ? disk.n_tokens : 0);
  s.snap_at = !snaps.empty() && at > held_after ? at : 0;
}

void Scheduler::loop() {
  std::vector<Slot> slots(static_cast<size_t>(opts_.n_slots));
  std::vector<Snapshot> snaps(opts_.prompt_cache ? slots.size() : 0);
  for (size_t i = 0; i < slots.size(); ++i) slots[i].seq = static_cast<int32_t>(i);
  for (size_t i = 0; i < snaps.size(); ++i) snaps[i].seq = static_cast<int32_t>(slots.size() + i);
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(mu_);
      auto n_busy = [&] {
        return static_cast<int>(
            std::count_if(slots.begin(), slots.end(), [](const Slot& s) { return s.job != nullptr; }));
      };
      // Counted before waiting, so /metrics and drain() see a slot freed by the last step.
      stats_.slots_busy = n_busy();
      stats_.queued = queue_.size();
      // A slot waiting for its mask is woken by its worker (wake()); the timeout still
      // checks such slots for cancellation and deadlines.
      auto work = [&] {
        return stopping_ || !queue_.empty() || !controls_.empty() ||
               std::any_of(slots.begin(), slots.end(), [](const Slot& s) { return s.runnable(); });
      };
      if (n_busy() > 0) cv_.wait_for(lk, std::chrono::milliseconds(50), work);
      else cv_.wait(lk, work);
      if (stopping_) break;
      if (!controls_.empty()) {
        lk.unlock();  // the controls' own I/O and the callers they wake need no lock
        run_controls(slots);
        lk.lock();
      }
      Clock::time_point now = Clock::now();
      // Expired or abandoned jobs leave the queue without taking a slot.
      for (auto it = queue_.begin(); it != queue_.end();) {
        Job& j = **it;
        if (j.cancelled.load()) {
          ++stats_.requests_cancelled;
          it = queue_.erase(it);
        } else if (now > j.deadline) {
          fail_job(j, 408, "timeout_error", "the request timed out waiting for a free slot");
          ++stats_.requests_failed;
          it = queue_.erase(it);
        } else {
          ++it;
        }
      }
      // Each waiting job (in order) takes a free slot and restores the snapshot that saves
      // it the most, of its own owner's only: cached_tokens must not tell one client about
      // another's prompts.
      while (!queue_.empty()) {
        size_t live = 0;
        Slot* free = choose_slot(slots, *queue_.front(), live);
        if (!free) break;
        free->job = std::move(queue_.front());
        queue_.pop_front();
        admit(*free, snaps, live, now);
      }
      stats_.queued = queue_.size();
      stats_.slots_busy = n_busy();
    }
    step(slots, snaps);
  }
  // Shutting down: nobody waits for an answer that will not come. Slots are released
  // without the lock: a mask worker's wake() takes it, and release() joins the worker.
  for (Slot& s : slots)
    if (s.job) {
      fail_job(*s.job, 503, "unavailable_error", "the server is shutting down");
      release(s);
    }
  std::lock_guard<std::mutex> lk(mu_);
  for (auto& j : queue_) fail_job(*j, 503, "unavailable_error", "the server is shutting down");
  queue_.clear();
  controls_.clear();  // their callers get a 503 (on_scheduler)
  stats_.queued = 0;
  stats_.slots_busy = 0;
}

// What one step did, added to the stats once at its end (flush()).
struct Scheduler::StepCounts {
  uint64_t cancelled = 0, failed = 0, done = 0;
  int64_t accepted = 0;                       // tokens sampled or resumed
  uint64_t cached = 0;                        // prompt tokens restored from disk
  int64_t prompt_tokens = 0, gen_tokens = 0;  // in the decoded batch
  size_t batch = 0;                           // tokens decoded (0: no decode this step)
  double seconds = 0;                         // the decode's wall time
  Clock::time_point t1;                       // when it ended
};

// One decode: the tokens and, in logits-row order, the slots that get a row.
struct Scheduler::Batch {
  std::vector<runtime::BatchToken> tokens;
  std::vector<Slot*> with_logits;
  std::vector<float> logits;  // after decode(): one row per with_logits entry
};

void Scheduler::step(std::vector<Slot>& slots, std::vector<Snapshot>& snaps) {
  StepCounts c;
  drop_finished_jobs(slots, c);
  restore_snapshots(slots, snaps, c);
  finish_disk_loads(slots, c);
  start_generations(slots, c);
  resume_waiting(slots, c);
  Batch b = build_batch(slots, c);
  if (!b.tokens.empty() && decode(b, slots, snaps, c)) sample(b, c);
  flush(c);
}

// Cancelled jobs (client gone) and jobs past their deadline leave their slot.
void Scheduler::drop_finished_jobs(std::vector<Slot>& slots, StepCounts& c) {
  const Clock::time_point now = Clock::now();
  for (Slot& s : slots) {
    if (!s.job) continue;
    if (s.job->cancelled.load()) {
      ++c.cancelled;
      release(s);
    } else if (s.job->stop_requested.load() && s.gen) {
      // The answer so far is the answer; the slot holds exactly the tokens it decoded.
      s.gen->stop(text::StopReason::Interrupted);
      ++c.done;
      release(s, /*keep_state=*/true);
    } else if (now > s.job->deadline) {
      fail_job(*s.job, 408, "timeout_error", "the request exceeded the server's time limit (--timeout)");
      ++c.failed;
      release(s);
    }
  }
}

// A failure here is the request's own (its restore), never the scheduler thread's: an
// exception escaping loop() would end the process.
void Scheduler::restore_snapshots(std::vector<Slot>& slots, std::vector<Snapshot>& snaps, StepCounts& c) {
  for (Slot& s : slots) {
    if (s.job && s.discard) {
      engine_->seq_clear(s.seq);
      s.discard = false;
    }
    if (s.job && s.restore) {
      try {
        engine_->seq_copy(snaps[static_cast<size_t>(s.from)].seq, s.seq);
        s.restore = false;
      } catch (const std::exception& e) {
        log::error("prompt cache restore failed: {}", e.what());
        fail_job(*s.job, 500, "server_error", fmt::format("restoring the prompt cache failed: {}", e.what()));
        ++c.failed;
        snaps[static_cast<size_t>(s.from)].tokens.clear();
        release(s);
      }
    }
  }
}

// Slots whose disk entry has been read take its state and skip its tokens. One that could
// not be used (the reader said why) decodes its whole prompt instead: the answer is the same.
void Scheduler::finish_disk_loads(std::vector<Slot>& slots, StepCounts& c) {
  for (Slot& s : slots) {
    if (!s.job || !s.disk_load || !s.disk_load->done.load()) continue;
    std::shared_ptr<DiskCache::Load> l = std::move(s.disk_load);
    runtime::SavedState& r = l->result;
    const std::vector<int32_t>& p = s.job->prompt;
    std::string why = l->error;
    if (why.empty() && (r.info.owner != s.job->cache_owner || r.tokens.size() >= p.size() ||
                        !std::equal(r.tokens.begin(), r.tokens.end(), p.begin())))
      why = "its tokens are not this prompt's prefix";
    if (why.empty()) {
      try {
        engine_->seq_set(s.seq, std::move(r.state));
      } catch (const std::exception& e) { why = e.what(); }
    }
    if (!why.empty()) {
      log::warn("prompt cache: disk entry not used, prefilling instead: {}", why);
      continue;
    }
    s.held = r.tokens;
    s.n_fed = r.tokens.size();
    s.job->n_cached = static_cast<int64_t>(s.n_fed);
    c.cached += s.n_fed;
    if (s.snap_at > 0 && s.snap_at <= s.n_fed) s.snap_at = 0;
  }
}

// A failure of one request's generation ends that request, never the scheduler thread.
template <class F>
void Scheduler::guarded(Slot& s, StepCounts& c, F&& f) {
  try {
    f();
  } catch (const ApiError& e) {  // the request's own limits (a grammar past its budget)
    fail_job(*s.job, e.status(), e.type().c_str(), e.what());
    ++c.failed;
    release(s);
  } catch (const grammar::Cancelled&) {  // it went away while its mask was computed
    ++c.cancelled;
    release(s);
  } catch (const std::exception& e) {
    log::error("generation failed: {}", e.what());
    fail_job(*s.job, 500, "server_error", fmt::format("generation failed: {}", e.what()));
    ++c.failed;
    release(s);
  }
}

// A new job's generation starts before its prompt is decoded, so its grammar's first mask
// is computed (on the mask worker) while the prompt is.
void Scheduler::start_generations(std::vector<Slot>& slots, StepCounts& c) {
  for (Slot& s : slots)
    if (s.job && !s.gen && !s.loading())  // after a disk load: its usage counts what the load restored
      guarded(s, c, [&] {
        if (s.job->grammar && !gvocab_)
          gvocab_ = grammar::TokenVocab::from_tokenizer(*tok_, {roles_.end_of_msg});
        grammar::MatcherLimits glim;
        glim.max_bytes = opts_.grammar_bytes;
        glim.max_cpu_per_token = std::chrono::milliseconds(opts_.grammar_cpu_ms);
        std::optional<std::vector<int32_t>> script;
        if (opts_.answers) script = opts_.answers->next_answer();
        s.gen = std::make_unique<Generation>(
            *s.job, tok_.get(), roles_, s.job->params.max_tokens, gvocab_, &glim, [this] { wake(); },
            std::move(script));
      });
}

// Slots whose mask has arrived choose from the logits they kept, and join this step's batch.
void Scheduler::resume_waiting(std::vector<Slot>& slots, StepCounts& c) {
  for (Slot& s : slots)
    if (s.job && s.waiting && s.gen->mask_ready())
      guarded(s, c, [&] {
        ++c.accepted;
        take(s, s.gen->resume(), c.done);
      });
}

// Every generating slot's next token, then prompt chunks within n_batch tokens.
Scheduler::Batch Scheduler::build_batch(std::vector<Slot>& slots, StepCounts& c) {
  Batch b;
  for (Slot& s : slots) {
    if (!s.generating()) continue;
    b.tokens.push_back({s.next, s.seq, -1, true});
    s.held.push_back(s.next);
    b.with_logits.push_back(&s);
    ++c.gen_tokens;
  }
  int64_t prompt_budget = opts_.n_batch;
  for (Slot& s : slots) {
    if (!s.job || s.started || s.loading() || prompt_budget <= 0) continue;
    const std::vector<int32_t>& p = s.job->prompt;
    // A chunk ends at the snapshot point, so the state there can be copied after the step.
    size_t end = s.snap_at > s.n_fed ? s.snap_at : p.size();
    size_t take = std::min<size_t>(end - s.n_fed, static_cast<size_t>(prompt_budget));
    for (size_t i = 0; i < take; ++i) {
      bool last = s.n_fed + i + 1 == p.size();
      int32_t token = p[s.n_fed + i];
      const float* row = token < 0 ? s.job->image_row(s.n_fed + i, token) : nullptr;
      b.tokens.push_back({token, s.seq, -1, last, row});
      s.held.push_back(p[s.n_fed + i]);  // the key token: the prompt cache compares images by content
    }
    s.n_fed += take;
    prompt_budget -= static_cast<int64_t>(take);
    c.prompt_tokens += static_cast<int64_t>(take);
    if (s.n_fed == p.size()) b.with_logits.push_back(&s);
  }
  return b;
}

// Decodes the batch and takes the snapshots it reached; false when the decode failed, which
// fails every request in it (a KDA state cannot be rolled back).
bool Scheduler::decode(Batch& b, std::vector<Slot>& slots, std::vector<Snapshot>& snaps, StepCounts& c) {
  const Clock::time_point t0 = Clock::now();
  try {
    b.logits = engine_->decode(b.tokens);
  } catch (const std::exception& e) {
    log::error("decode failed: {}", e.what());
    for (Slot& s : slots)
      if (s.job) {
        fail_job(*s.job, 500, "server_error", fmt::format("decode failed: {}", e.what()));
        ++c.failed;
        release(s);
      }
    return false;
  }
  for (Slot& s : slots)
    if (s.job && s.snap_at > 0 && s.n_fed == s.snap_at) take_snapshot(s, snaps);
  c.t1 = Clock::now();
  c.seconds = std::chrono::duration<double>(c.t1 - t0).count();
  c.batch = b.tokens.size();
  return true;
}

void Scheduler::take_snapshot(Slot& s, std::vector<Snapshot>& snaps) {
  const size_t k = pick_snapshot(s, snaps, n_admitted_);
  const size_t at = s.snap_at;
  s.snap_at = 0;
  if (k == kNoSnapshot) return;
  Snapshot& to = snaps[k];
  // A snapshot that cannot be taken costs only the next turn's reuse.
  to.tokens.clear();
  try {
    engine_->seq_copy(s.seq, to.seq);
    to.tokens.assign(s.job->prompt.begin(), s.job->prompt.begin() + static_cast<std::ptrdiff_t>(at));
    to.owner = s.job->cache_owner;
    to.proven =
        s.from >= 0;  // over the entry it extends (pick_snapshot); a new conversation's starts unproven
    to.last_used = n_admitted_;
  } catch (const std::exception& e) {
    log::warn("prompt cache snapshot failed (the next turn decodes in full): {}", e.what());
    return;
  }
  if (disk_) store_on_disk(to);
}

// Hands the snapshot to the disk writer, which reads the state while this thread decodes;
// pick_snapshot leaves the entry alone until the writer is done with it.
void Scheduler::store_on_disk(Snapshot& to) {
  const model::SequenceState* st = engine_->seq_state(to.seq);
  if (!st || to.tokens.empty()) return;
  to.writing->store(true);
  if (!disk_->store(st, to.tokens, to.owner, [w = to.writing] { w->store(false); })) to.writing->store(false);
}

// Logits rows come back in batch order: generating slots first, then finished prompts,
// which is the order of with_logits.
void Scheduler::sample(Batch& b, StepCounts& c) {
  const size_t n_vocab = static_cast<size_t>(engine_->n_vocab());
  for (size_t r = 0; r < b.with_logits.size(); ++r) {
    Slot& s = *b.with_logits[r];
    std::span<const float> row(b.logits.data() + r * n_vocab, n_vocab);
    guarded(s, c, [&] {
      if (!s.started) {
        s.started = true;
        s.gen->prompt_done(std::chrono::duration<double, std::milli>(c.t1 - s.t_start).count());
      }
      if (s.job->stop_requested.load()) {  // asked to stop while its prompt was decoded: no token
        s.gen->stop(text::StopReason::Interrupted);
        ++c.done;
        release(s, /*keep_state=*/true);
        return;
      }
      const int32_t t = s.gen->choose(row);
      if (t != Generation::kWaiting) ++c.accepted;
      take(s, t, c.done);
    });
  }
}

void Scheduler::flush(const StepCounts& c) {
  std::lock_guard<std::mutex> lk(mu_);
  stats_.requests_cancelled += c.cancelled;
  stats_.requests_failed += c.failed;
  stats_.requests_finished += c.done;
  stats_.predicted_tokens_total += static_cast<uint64_t>(c.accepted);
  stats_.prompt_tokens_cached_total += c.cached;
  if (c.batch == 0) return;  // nothing decoded: no timing to add
  stats_.n_decode_total += 1;
  stats_.prompt_tokens_total += static_cast<uint64_t>(c.prompt_tokens);
  stats_.batch_tokens_max = std::max<uint64_t>(stats_.batch_tokens_max, c.batch);
  // Split the step's time between prompt and generation by token share.
  const double total = static_cast<double>(c.prompt_tokens + c.gen_tokens);
  stats_.prompt_seconds_total += c.seconds * static_cast<double>(c.prompt_tokens) / total;
  stats_.predicted_seconds_total += c.seconds * static_cast<double>(c.gen_tokens) / total;
  rate_window_.emplace_back(c.t1, c.accepted);
  while (!rate_window_.empty() && c.t1 - rate_window_.front().first > std::chrono::seconds(10))
    rate_window_.pop_front();
  int64_t sum = 0;
  for (auto& [t, n] : rate_window_) sum += n;
  const double span = std::chrono::duration<double>(c.t1 - rate_window_.front().first).count() + c.seconds;
  stats_.predicted_tokens_per_second = span > 0 ? static_cast<double>(sum) / span : 0;
}

bool Scheduler::take(Slot& s, int32_t t, uint64_t& n_done) {
  s.next = -1;
  s.waiting = t == Generation::kWaiting;
  if (s.waiting) return false;
  const bool room = engine_->seq_pos(s.seq) < n_ctx_;
  if (s.gen->accept(t, room)) {
    ++n_done;
    release(s, /*keep_state=*/true);
    return true;
  }
  s.next = t;
  return false;
}

void Scheduler::wake() {
  { std::lock_guard<std::mutex> lk(mu_); }  // a waiter between its check and its sleep sees it
  cv_.notify_all();
}

template <class R>
R Scheduler::on_scheduler(std::function<R(std::vector<Slot>&)> f) {
  auto done = std::make_shared<std::promise<R>>();
  std::future<R> result = done->get_future();
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (stopping_) throw ApiError(503, "unavailable_error", "the server is shutting down");
    controls_.push_back([f = std::move(f), done](std::vector<Slot>& slots) {
      try {
        done->set_value(f(slots));
      } catch (...) { done->set_exception(std::current_exception()); }
    });
  }
  cv_.notify_all();
  try {
    return result.get();
  } catch (const std::future_error&) {  // dropped unrun: the scheduler stopped first
    throw ApiError(503, "unavailable_error", "the server is shutting down");
  }
}

void Scheduler::run_controls(std::vector<Slot>& slots) {
  std::deque<std::function<void(std::vector<Slot>&)>> todo;
  {
    std::lock_guard<std::mutex> lk(mu_);
    todo.swap(controls_);
  }
  for (auto& f : todo) f(slots);
}

std::vector<SlotInfo> Scheduler::slots_info() {
  return on_scheduler<std::vector<SlotInfo>>([](std::vector<Slot>& slots) {
    std::vector<SlotInfo> out;
    for (size_t i = 0; i < slots.size(); ++i)
      out.push_back(
          {static_cast<int>(i), slots[i].job != nullptr, static_cast<int64_t>(slots[i].held.size())});
    return out;
  });
}

// The slot's state is written on this (the caller's) thread while the slot is pinned: no job
// takes it, so its state stays as it is, and the scheduler decodes the others meanwhile.
SlotFileResult Scheduler::slot_save(int id, const std::string& path) {
  struct Held {
    const model::SequenceState* st = nullptr;
    std::vector<int32_t> tokens;
    std::string owner;
  };
  Held h = on_scheduler<Held>([this, id](std::vector<Slot>& slots) {
    Slot& s = free_slot(slots, id);
    const model::SequenceState* st = engine_->seq_state(s.seq);
    if (st && st->n_past() != static_cast<int64_t>(s.held.size()))
      throw ApiError(409, "invalid_request_error",
                     fmt::format("slot {} holds no complete state to save", id));
    s.pinned = true;
    return Held{st, s.held, s.held_owner};
  });
  const auto t0 = Clock::now();
  SlotFileResult r;
  std::string err;
  try {
    model::SequenceState empty(engine_->model().hparams(), opts_.cache_type);
    r.n_bytes = runtime::write_state_file(path, target_, h.st ? *h.st : empty, h.tokens, h.owner);
    r.n_tokens = static_cast<int64_t>(h.tokens.size());
  } catch (const std::exception& e) { err = e.what(); }
  on_scheduler<int>([id](std::vector<Slot>& slots) {
    slots[static_cast<size_t>(id)].pinned = false;
    return 0;
  });
  if (!err.empty()) throw ApiError(500, "server_error", fmt::format("saving slot {} failed: {}", id, err));
  r.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  return r;
}

SlotFileResult Scheduler::slot_restore(int id, const std::string& path) {
  const auto t0 = Clock::now();
  auto saved = std::make_shared<runtime::SavedState>();
  try {
    *saved = runtime::read_state_file(path, target_);
  } catch (const std::exception& e) {
    throw ApiError(400, "invalid_request_error", fmt::format("cannot restore slot {}: {}", id, e.what()));
  }
  SlotFileResult r;
  r.n_tokens = static_cast<int64_t>(saved->tokens.size());
  r.tokens = saved->tokens;
  r.n_bytes = saved->info.file_bytes;
  on_scheduler<int>([this, id, saved](std::vector<Slot>& slots) {
    Slot& s = free_slot(slots, id);
    engine_->seq_set(s.seq, std::move(saved->state));
    s.held = std::move(saved->tokens);
    s.held_owner = saved->info.owner;
    return 0;
  });
  r.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  return r;
}

int64_t Scheduler::slot_erase(int id) {
  return on_scheduler<int64_t>([this, id](std::vector<Slot>& slots) {
    Slot& s = free_slot(slots, id);
    const auto n = static_cast<int64_t>(s.held.size());
    engine_->seq_clear(s.seq);
    s.held.clear();
    return n;
  });
}

Scheduler::Slot& Scheduler::free_slot(std::vector<Slot>& slots, int id) {
  if (id < 0 || static_cast<size_t>(id) >= slots.size())
    throw ApiError(404, "not_found_error", fmt::format("no slot {} (slots 0..{})", id, slots.size() - 1));
  Scheduler::Slot& s = slots[static_cast<size_t>(id)];
  if (s.job || s.pinned) throw ApiError(409, "invalid_request_error", fmt::format("slot {} is busy", id));
  return s;
}

}  // namespace k3::server
