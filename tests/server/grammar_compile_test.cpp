// A request's grammar compile under attack: refused before its cost, bounded in time, stopped
// when its client leaves, and the compiled grammars requests hold are counted server-wide.
#include <chrono>

#include "grammar/gbnf.h"
#include "grammar/work_budget.h"
#include "server/api_error.h"
#include "chat/grammar_ledger.h"
#include "chat/constraint.h"
#include "server/server_test_util.h"

namespace k3::server::test {
namespace {

using Clock = std::chrono::steady_clock;
using chat::completion_constraint;
using chat::ConstraintOptions;
using chat::GrammarLedger;

Json completion(const std::string& grammar) {
  return {{"prompt", "hi"}, {"max_tokens", 2}, {"grammar", grammar}};
}

std::string chain(int n) {
  std::string text = "root ::= r1\n";
  for (int i = 1; i < n; ++i) text += "r" + std::to_string(i) + " ::= \"x\" r" + std::to_string(i + 1) + "\n";
  return text + "r" + std::to_string(n) + " ::= \"z\"\n";
}

// The review's first row: a 262,144-byte rule name repeated with {0,1000} (624 bytes gzipped)
// took 1 GiB. It is a 400 that names the limit, answered at once.
TEST(ServerGrammarCompile, HugeRuleNameIsA400BeforeAnyCost) {
  TestServer s;
  const std::string name(262144, 'A');
  const auto t0 = Clock::now();
  auto r = s.post("/v1/completions",
                  completion("root ::= " + name + "\n" + name + " ::= \"x\"{0,1000} \"x\"{0,1000}"));
  Json e = expect_error(r, 400, "invalid_request_error");
  EXPECT_NE(e["message"].get<std::string>().find("rule name of 262144 bytes"), std::string::npos) << e.dump();
  EXPECT_EQ(e["param"], "grammar");
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 2.0);
}

// A compile past the server's deadline is the client's grammar's cost: a 400 that says so.
TEST(ServerGrammarCompile, DeadlineIsA400) {
  ServerOptions o = default_options();
  o.limits.grammar_compile_limit = std::chrono::milliseconds(1);
  TestServer s(o);
  Json e = expect_error(s.post("/v1/completions", completion(chain(60000))), 400, "invalid_request_error");
  EXPECT_NE(e["message"].get<std::string>().find("longer than its limit of 1 ms"), std::string::npos)
      << e.dump();
}

// A client that leaves (or a draining server) stops the compile, schema or GBNF alike.
TEST(ServerGrammarCompile, CancelStopsTheCompile) {
  auto tok = shared_tokenizer();
  int polls = 0;
  grammar::WorkBudget budget("compiling the request's grammar", std::chrono::seconds(60),
                             [&] { return ++polls > 1; });
  ConstraintOptions opt;
  opt.budget = &budget;
  EXPECT_THROW(completion_constraint(completion(chain(20000)), *tok, opt), grammar::Cancelled);

  Json props = Json::object();
  for (int i = 0; i < 3000; ++i) props["k" + std::to_string(i)] = {{"type", "string"}, {"maxLength", 50}};
  Json schema = {{"type", "object"}, {"properties", props}};
  polls = 0;
  grammar::WorkBudget budget2("compiling the request's grammar", std::chrono::seconds(60),
                              [&] { return ++polls > 1; });
  opt.budget = &budget2;
  EXPECT_THROW(completion_constraint({{"prompt", "hi"}, {"json_schema", schema}}, *tok, opt),
               grammar::Cancelled);
}

// Requests hold their compiled grammars while they wait: the total is capped (503), and a
// grammar's bytes come back when its last holder drops it.
TEST(ServerGrammarCompile, LedgerCapsTheGrammarsRequestsHold) {
  auto tok = shared_tokenizer();
  GrammarLedger ledger(256 << 10);
  ConstraintOptions opt;
  opt.ledger = &ledger;
  std::string wide = "root ::= ";
  for (int i = 0; i < 400; ++i) wide += "(\"a" + std::to_string(i) + "\" | \"b\")? ";
  auto g1 = completion_constraint(completion(wide), *tok, opt);
  ASSERT_TRUE(g1);
  const size_t one = ledger.held_bytes();
  EXPECT_EQ(one, g1->bytes());
  EXPECT_GT(one, 60u << 10);
  std::vector<std::shared_ptr<const grammar::Grammar>> held{g1};
  int refused = 0;
  for (int i = 0; i < 8; ++i) {
    try {
      held.push_back(completion_constraint(completion(wide), *tok, opt));
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 503);
      ++refused;
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_LE(ledger.held_bytes(), ledger.max_bytes());
  held.clear();
  g1.reset();
  EXPECT_EQ(ledger.held_bytes(), 0u);
  EXPECT_TRUE(completion_constraint(completion(wide), *tok, opt));

  // Through the server: a cap below one grammar's size refuses it with 503.
  ServerOptions o = default_options();
  o.max_grammar_bytes = 16 << 10;
  TestServer s(o);
  expect_error(s.post("/v1/completions", completion(wide)), 503, "unavailable_error");
  EXPECT_EQ(s.post("/v1/completions", completion("root ::= \"a\"")).first, 200);
}

// Palindromes over the printable bytes: each first byte leads to its own state of ~190 parses,
// so the first mask alone needs about 1.5 MiB of parser memory, the start state 20 KiB.
std::string palindrome() {
  std::string alts;
  for (int c = 'a'; c <= 'z'; ++c) {
    const std::string l = std::string("\"") + static_cast<char>(c) + "\"";
    alts += (alts.empty() ? "" : " | ") + l + " r " + l + " | " + l;
  }
  for (int c = '0'; c <= '9'; ++c) {
    const std::string l = std::string("\"") + static_cast<char>(c) + "\"";
    alts += " | " + l + " r " + l + " | " + l;
  }
  return "root ::= r\nr ::= ( " + alts + " )?\n";
}

// A grammar too ambiguous to start (5000 parses where the matcher allows 4096) is a 400 from
// the compile, before the request takes a slot (b3e1fee: a 500 from the scheduler).
TEST(ServerGrammarMatcher, TooAmbiguousToStartIsA400) {
  TestServer s;
  std::string alts = "root ::= ";
  for (int i = 0; i < 5000; ++i) alts += (i ? " | \"" : "\"") + std::to_string(i) + "x\"";
  Json e = expect_error(s.post("/v1/completions", completion(alts)), 400, "invalid_request_error");
  EXPECT_NE(e["message"].get<std::string>().find("parses alive"), std::string::npos) << e.dump();
  EXPECT_EQ(e["param"], "grammar");
  EXPECT_EQ(s.post("/v1/completions", completion("root ::= \"a\"")).first, 200);
}

// A mask past the matcher's memory cap ends its request with a 400 that names the limit, and
// the server goes on (b3e1fee checked the cap only between tokens and let it grow).
TEST(ServerGrammarMatcher, MaskPastItsMemoryIsA400AndTheServerGoesOn) {
  ServerOptions o = default_options();
  o.sched.grammar_bytes = 256 << 10;
  TestServer s(o);
  Json req = completion(palindrome());
  req["max_tokens"] = 8;
  Json e = expect_error(s.post("/v1/completions", req), 400, "invalid_request_error");
  EXPECT_NE(e["message"].get<std::string>().find("256 KiB of parser memory"), std::string::npos) << e.dump();
  // Streamed, the same limit arrives as the stream's error event.
  req["stream"] = true;
  auto r = s.post_raw("/v1/completions", req);
  EXPECT_NE(r.second.find("256 KiB of parser memory"), std::string::npos) << r.second;
  auto ok = s.post("/v1/completions", completion("root ::= [a-z]+"));
  EXPECT_EQ(ok.first, 200) << ok.second.dump();
  o.sched.grammar_bytes = 64 << 20;  // with the default cap the same grammar decodes
  TestServer roomy(o);
  auto fine = roomy.post("/v1/completions", completion(palindrome()));
  EXPECT_EQ(fine.first, 200) << fine.second.dump();
}

}  // namespace
}  // namespace k3::server::test
