// server/job: one generation request as the scheduler sees it, and the channel that carries
// its results back to the HTTP handler thread.
// Contract: an HTTP handler builds a Job (prompt tokens + validated parameters), submits it
// to the Scheduler and then only reads job->channel. The scheduler only writes the channel:
// zero or more Delta events after exactly one Started event, then exactly one Done or Error
// (an Error may also come first, e.g. a timeout while queued). Setting `cancelled` (client
// gone) makes the scheduler drop the job at its next step; no event follows a cancel.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/sampler.h"
#include "text/output_parser.h"

namespace k3::grammar {
struct Grammar;
}

namespace k3::server {

using Clock = std::chrono::steady_clock;

// Validated generation parameters (request fields after defaults and caps).
struct GenParams {
  runtime::SamplerParams sampler;
  int64_t max_tokens = -1;        // < 0: until end of turn or a full context
  std::vector<std::string> stop;  // stop strings (matched on generated text)
  int64_t reasoning_budget = -1;  // think tokens; < 0 unlimited
  std::string reasoning_budget_message;
  bool ignore_eos = false;    // end-of-generation tokens do not end it (the CLI's --ignore-eos)
  bool show_special = false;  // raw completions: control tokens appear as their text
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;  // of prompt_tokens, restored from the slot's prompt cache
  int64_t completion_tokens = 0;
  double prompt_ms = 0;     // prompt decode
  double predicted_ms = 0;  // from the first sampled token to the end
};

struct Event {
  enum class Kind { Started, Delta, Done, Error };
  Kind kind = Kind::Delta;
  text::ParseDelta delta;                         // chat: reasoning/content/tool-call deltas
  std::string text;                               // raw completion: new text
  std::vector<int32_t> tokens;                    // raw completion: the ids accepted since the last Delta
  std::string finish_reason;                      // Done: as the API reports it
  text::StopReason stop = text::StopReason::Eog;  // Done: why, in full
  Usage usage;                                    // Done
  int status = 0;                                 // Error: HTTP status, OpenAI type, message
  std::string error_type;
  std::string message;
};

// A single-producer single-consumer queue with a blocking, timed pop.
class Channel {
 public:
  void push(Event e) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      q_.push_back(std::move(e));
    }
    cv_.notify_one();
  }
  // Waits up to `timeout` for an event; false when none arrived.
  template <typename Rep, typename Period>
  bool pop(Event& out, std::chrono::duration<Rep, Period> timeout) {
    std::unique_lock<std::mutex> lk(mu_);
    if (!cv_.wait_for(lk, timeout, [&] { return !q_.empty(); })) return false;
    out = std::move(q_.front());
    q_.pop_front();
    return true;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> q_;
};

enum class JobKind { Chat, Completion };

// An image in a job's prompt: prompt positions [at, at + n_tokens) hold its key tokens
// (chat/image_tokens.h) and are fed its rows (n_tokens × the model's n_embd floats) instead of
// token embeddings, under the id `token` (<|media_pad|>, naming the position).
struct JobImage {
  size_t at = 0;
  int64_t n_tokens = 0;
  int32_t token = 0;
  std::shared_ptr<const std::vector<float>> rows;
};

struct Job {
  JobKind kind = JobKind::Chat;
  std::vector<int32_t> prompt;
  // Where the scheduler snapshots the state for the next request's prompt reuse: the end of
  // the conversation history (before the generation prompt), so the next turn, which repeats
  // the history, starts from it. 0: one token before the prompt's end.
  size_t snapshot_at = 0;
  int64_t n_cached = 0;  // set by the scheduler: prompt tokens reused
  // Whose prompt-cache snapshots this job may reuse and leaves behind: the request's
  // `cache_key`, else its `user`, else "" (clients that send neither share one pool).
  std::string cache_owner;
  std::vector<JobImage> images;  // in prompt order; the positions of each hold negative key tokens
  GenParams params;
  text::ParserOptions parser;  // chat only
  // Constrained decoding (response_format, strict tools, grammar, json_schema): the grammar
  // of the whole output; null: unconstrained.
  std::shared_ptr<const grammar::Grammar> grammar;
  Clock::time_point deadline = Clock::time_point::max();
  std::atomic<bool> cancelled{false};
  // Set by a caller that wants the answer so far (Ctrl-C in the CLI): the job ends at the
  // next step with a Done whose stop is Interrupted, and its slot keeps the state.
  std::atomic<bool> stop_requested{false};
  Channel channel;

  // The row fed at prompt position i (one of the images' positions), and its token id.
  const float* image_row(size_t i, int32_t& token) const {
    for (const JobImage& im : images)
      if (i >= im.at && i < im.at + static_cast<size_t>(im.n_tokens)) {
        token = im.token;
        return im.rows->data() + (i - im.at) * (im.rows->size() / static_cast<size_t>(im.n_tokens));
      }
    return nullptr;
  }
};

}  // namespace k3::server
