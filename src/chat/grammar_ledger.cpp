// chat/grammar_ledger: see grammar_ledger.h.
#include "chat/grammar_ledger.h"

#include <atomic>

#include "grammar/gbnf.h"
#include "chat/api_error.h"

namespace k3::chat {

struct GrammarLedger::Count {
  std::atomic<size_t> bytes{0};
};

GrammarLedger::GrammarLedger(size_t max_bytes) : max_bytes_(max_bytes), count_(std::make_shared<Count>()) {}

GrammarLedger::~GrammarLedger() = default;

std::shared_ptr<const grammar::Grammar> GrammarLedger::hold(grammar::Grammar&& g) {
  const size_t b = g.bytes();
  size_t now = count_->bytes.load();
  do {
    if (now + b > max_bytes_)
      throw ApiError(
          503, "unavailable_error",
          fmt::format("the server holds {} KiB of compiled grammars for other requests; this one needs {} "
                      "KiB more than the limit of {} KiB allows: retry later",
                      now >> 10, (now + b - max_bytes_ + 1023) >> 10, max_bytes_ >> 10));
  } while (!count_->bytes.compare_exchange_weak(now, now + b));
  // The deleter keeps the count alive, so a grammar may outlive the ledger.
  return std::shared_ptr<const grammar::Grammar>(new grammar::Grammar(std::move(g)),
                                                 [count = count_, b](const grammar::Grammar* p) {
                                                   delete p;
                                                   count->bytes.fetch_sub(b);
                                                 });
}

size_t GrammarLedger::held_bytes() const { return count_->bytes.load(); }

}  // namespace k3::chat
