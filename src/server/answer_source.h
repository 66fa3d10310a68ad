// server/answer_source: where a job's answer tokens come from when the model does not sample
// them — the seam through which tests give the server fixed answers, so that what surrounds
// generation (parsing into reasoning/content/tool calls, streaming, stops, limits, cancelling)
// can be checked exactly. A production server has none (SchedulerOptions::answers is null).
// Contract: next_answer() is called once per job, on the scheduler's thread when the job starts (it
// must be thread-safe: several schedulers may share one source); the
// job's tokens are its ids in order, fed through the model and the output parser as if
// sampled, and the turn ends after the last one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace k3::text {
class Tokenizer;
}

namespace k3::server {

class AnswerSource {
 public:
  virtual ~AnswerSource() = default;
  virtual std::vector<int32_t> next_answer() = 0;
};

// Answers from texts (XTML markers written out, special tokens parsed), tokenized once with
// `tok`; job i gets texts[i % n]. What `k3 serve --scripted-output FILE` installs.
std::shared_ptr<AnswerSource> scripted_answers(const text::Tokenizer& tok,
                                               const std::vector<std::string>& texts);

}  // namespace k3::server
