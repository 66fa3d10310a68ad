// server/answer_source: see answer_source.h.
#include "server/answer_source.h"

#include <atomic>

#include "core/error.h"
#include "text/tokenizer.h"

namespace k3::server {
namespace {

class ScriptedAnswers final : public AnswerSource {
 public:
  ScriptedAnswers(const text::Tokenizer& tok, const std::vector<std::string>& texts) {
    if (texts.empty()) fail("scripted answers: no texts");
    for (const std::string& t : texts) scripts_.push_back(tok.encode(t, true, false));
  }
  std::vector<int32_t> next_answer() override {
    return scripts_[next_.fetch_add(1, std::memory_order_relaxed) % scripts_.size()];
  }

 private:
  std::vector<std::vector<int32_t>> scripts_;
  std::atomic<uint64_t> next_{0};
};

}  // namespace

std::shared_ptr<AnswerSource> scripted_answers(const text::Tokenizer& tok,
                                               const std::vector<std::string>& texts) {
  return std::make_shared<ScriptedAnswers>(tok, texts);
}

}  // namespace k3::server
